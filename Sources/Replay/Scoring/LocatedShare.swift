import Foundation
import Positioning

/// How many of a run's epochs got a position, and why the others did not: the "share located"
/// of `posfuse replay` and `posfuse evaluate radio` (stderr below `warnBelow`, `--json`,
/// `--min-located` exits 1). A run that locates almost nothing must say so, not print a
/// one-sample median (docs/metrics.md, "Share located").
///
/// Replays (`add(_:)`): an *epoch* is an input event that at least one positioning estimator
/// answered, with a fix or a typed failure (fusion filters and the smoother follow their inputs
/// and do not count); it is *located* when at least one estimator answered it with a fix; a
/// not-located epoch counts under each distinct failure code it got. Per-estimate evaluations
/// (`record(_:)`, e.g. the cell coverage map) count one epoch per estimate attempt.
public struct LocatedShare: Codable, Sendable, Equatable {
    public var epochs = 0
    public var located = 0
    /// Epochs not located, per failure code (`EstimationFailure.code`).
    public var notLocated: [String: Int] = [:]
    public init() {}
    public init(epochs: Int, located: Int, notLocated: [String: Int] = [:]) {
        self.epochs = epochs; self.located = located; self.notLocated = notLocated
    }

    /// located / epochs; nil when there was no epoch.
    public var share: Double? { epochs > 0 ? Double(located) / Double(epochs) : nil }

    /// One estimate attempt.
    public mutating func record<T>(_ r: Result<T, EstimationFailure>) {
        epochs += 1
        switch r {
        case .success: located += 1
        case .failure(let f): notLocated[f.code, default: 0] += 1
        }
    }

    /// One event's pipeline results (replays).
    public mutating func add(_ results: [StageResult]) {
        var answered = false, fixed = false
        var codes: Set<String> = []
        for r in results {
            switch r {
            case .fix(let f) where !f.source.isFusion: answered = true; fixed = true
            case .failure(let s, _, _, let reason) where !s.isFusion: answered = true; codes.insert(reason.code)
            default: continue
            }
        }
        guard answered else { return }
        epochs += 1
        if fixed { located += 1 } else { for c in codes { notLocated[c, default: 0] += 1 } }
    }

    public mutating func merge(_ o: LocatedShare) {
        epochs += o.epochs; located += o.located
        for (k, v) in o.notLocated { notLocated[k, default: 0] += v }
    }

    public static func + (a: LocatedShare, b: LocatedShare) -> LocatedShare { var c = a; c.merge(b); return c }

    /// `located 1568 of 1734 (90.4 %); not located: unknown_anchor 120, missing_input 46`, or
    /// `no epoch to locate …` when no estimator answered anything.
    public var summary: String {
        guard epochs > 0 else { return "no epoch to locate (no estimator answered any event)" }
        var s = "located \(located) of \(epochs)" + (share.map { String(format: " (%.1f %%)", 100 * $0) } ?? "")
        if !notLocated.isEmpty {
            s += "; not located: " + notLocated.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
        return s
    }

    /// Below this share a run "locates almost nothing" and says so even without `--min-located`.
    public static let warnBelow = 0.5

    /// The JSON members of a trace or run: `epochs`, `epochs_located`, `share_located` (when
    /// defined) and `not_located`.
    public var jsonMembers: [String: Any] {
        var o: [String: Any] = ["epochs": epochs, "epochs_located": located, "not_located": notLocated]
        if let s = share { o["share_located"] = s }
        return o
    }

    enum CodingKeys: String, CodingKey { case epochs, located, share, notLocated = "not_located" }
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(epochs, forKey: .epochs); try c.encode(located, forKey: .located)
        try c.encodeIfPresent(share, forKey: .share); try c.encode(notLocated, forKey: .notLocated)
    }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        epochs = try c.decode(Int.self, forKey: .epochs); located = try c.decode(Int.self, forKey: .located)
        notLocated = try c.decode([String: Int].self, forKey: .notLocated)
    }
}
