import Foundation
import Replay
import Positioning

/// The bundled scenario traces (Traces/NAME) replayed once per test process with the default
/// pipeline plus the opt-in `ukf`, `pf` and `smoother` stages: statistics per source key (`gnss`, `ekf`, `camloc:object`, …). Suites that check
/// figures of the same trace share one replay.
package enum BundledTraces {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: [String: ErrorStatistics]] = [:]

    /// nil when the trace is absent (the test then skips).
    package static func scores(_ name: String) throws -> [String: ErrorStatistics]? {
        let p = PackagePaths.root.appendingPathComponent("Traces/\(name)").path
        guard FileManager.default.fileExists(atPath: p + "/trace.jsonl") else { return nil }
        lock.lock(); defer { lock.unlock() }
        if let c = cache[name] { return c }
        let all = ["ukf", "pf", "smoother"].reduce(into: [String: StageOptions]()) { $0[$1] = StageOptions(name: $1, values: ["enabled": .bool(true)]) }
        let r = try Replayer(options: ReplayOptions(stages: all)).run(try TraceLocation.resolve(p))
        var out: [String: ErrorStatistics] = [:]
        for s in r.scores.sources { if let st = s.statistics { out[s.key] = st } }
        cache[name] = out
        return out
    }
}
