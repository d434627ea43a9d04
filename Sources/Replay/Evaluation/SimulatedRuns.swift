import Foundation
import Positioning

/// Seeded Monte Carlo runs of a simulator scenario, each written to a temporary trace folder
/// (trace.jsonl + reference.json, removed afterwards) and handed to `body` for replay: run k
/// (0-based) uses seed `firstSeed + k`, the same trace as `posfuse simulate … --seed`.
enum SimulatedRuns {
    static func forEach(scenarioFolder: URL, runs: Int, firstSeed: UInt64, duration: Double? = nil,
                        _ body: (_ run: Int, _ trace: TraceLocation) throws -> Void) throws {
        let scenario = try Scenario.load(url: scenarioFolder.appendingPathComponent("scenario.yaml"))
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-runs-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        for k in 0..<runs {
            let trace = work.appendingPathComponent("trace.jsonl"), ref = work.appendingPathComponent("reference.json")
            _ = try Simulator.run(scenario: scenario, options: SimulationOptions(seed: firstSeed + UInt64(k), duration: duration),
                                  trace: trace, reference: ref)
            try body(k, try TraceLocation.resolve(work.path))
        }
    }
}
