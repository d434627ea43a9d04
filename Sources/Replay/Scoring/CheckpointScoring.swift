import Foundation
import Positioning

/// Scoring at checkpoints: ground truth that is a surveyed waypoint every 5–20 s (ms-indoor
/// `TYPE_WAYPOINT`, `gt` events with `kind: checkpoint`) instead of a continuous track.
///
/// Between two waypoints minutes of walking are not known, so the per-estimate scores (truth
/// interpolated at the estimate's time, `Scorer`) leave most estimates unscored (`truth_gap`).
/// The indoor competitions score the track *at the checkpoints* instead (IPIN competition,
/// Potortì et al. 2017; ISO/IEC 18305:2016 test points). At each checkpoint time t of a phone
/// subject whose truth is checkpoints only, each source's estimate there is:
///
/// * **interpolated**: linear in time between the latest estimate at or before t and the next
///   one after it, when both exist and are at most H apart (covariance interpolated with the
///   same weights, floor of the nearer one);
/// * else **last held**: the latest estimate at or before t when it is at most H old;
/// * else the checkpoint is **missed** by that source (counted, not scored).
///
/// H is `ScoringOptions.checkpointHold` (10 s by default: WiFi scans on the ms-indoor walks
/// come every 2–10 s, so a 5 s hold would drop most WiFi-only checkpoints). Offline sources (the
/// smoother) are scored the same way.
///
/// Per source: the error statistics over the scored checkpoints (`ErrorStatistics`, with NEES
/// from the estimate's covariance), the **floor hit rate** (ISO/IEC 18305 floor detection: the
/// share of scored checkpoints with a known truth floor and an estimated floor where the two
/// agree; nil when no estimate carries a floor) and the **IPIN metric**: the 75th percentile of
/// e_k + 15 m · |floor_k − floor̂_k| over the scored checkpoints (the floor term only where both
/// floors are known).
public struct CheckpointSample: Sendable, Equatable {
    public var subject: String
    public var time: Double
    /// Error vector p̂ − p (East, North), m.
    public var errorE: Double
    public var errorN: Double
    /// NEES with the (interpolated) covariance, when usable.
    public var nees: Double?
    /// Estimated minus true floor, when both are known.
    public var floorError: Int?
    public var interpolated: Bool

    public init(subject: String, time: Double, errorE: Double, errorN: Double, nees: Double?, floorError: Int?, interpolated: Bool) {
        self.subject = subject; self.time = time; self.errorE = errorE; self.errorN = errorN
        self.nees = nees; self.floorError = floorError; self.interpolated = interpolated
    }

    public var error: Double { (errorE * errorE + errorN * errorN).squareRoot() }
    /// e + 15 m per floor missed (IPIN competition metric's summand).
    public var ipinError: Double { error + CheckpointScore.floorPenalty * Double(abs(floorError ?? 0)) }
}

/// One source's scores at the checkpoints of one trace (or pooled over several).
public struct CheckpointScore: Sendable, Equatable {
    public var source: Source
    /// Checkpoints of the scored subjects (the denominator of `located`).
    public var checkpoints: Int
    public var samples: [CheckpointSample]
    public var statistics: ErrorStatistics?
    public var floorHitRate: Double?
    /// P75 of e + 15 m · |Δfloor|, m.
    public var ipin: Double?

    /// IPIN competition floor penalty, m per floor.
    public static let floorPenalty = 15.0

    public var scored: Int { samples.count }
    public var missed: Int { checkpoints - samples.count }

    public init(source: Source, checkpoints: Int, samples: [CheckpointSample]) {
        self.source = source; self.checkpoints = checkpoints; self.samples = samples
        statistics = ErrorStatistics(errorE: samples.map(\.errorE), errorN: samples.map(\.errorN), nees: samples.compactMap(\.nees))
        let floors = samples.compactMap(\.floorError)
        floorHitRate = floors.isEmpty ? nil : Double(floors.filter { $0 == 0 }.count) / Double(floors.count)
        ipin = Quantile.type7(sorted: Quantile.sorted(samples.map(\.ipinError)), 0.75)
    }

    /// Pools the scores of several traces per source (checkpoints and samples added up).
    public static func pooled(_ parts: [[CheckpointScore]]) -> [CheckpointScore] {
        var n: [Source: Int] = [:], s: [Source: [CheckpointSample]] = [:]
        for p in parts { for c in p { n[c.source, default: 0] += c.checkpoints; s[c.source, default: []] += c.samples } }
        return n.keys.sorted().map { CheckpointScore(source: $0, checkpoints: n[$0]!, samples: s[$0] ?? []) }
    }

    /// JSON entry (`checkpoints` array of `posfuse replay --json`, docs/metrics.md).
    public func json() -> [String: Any] {
        var o: [String: Any] = ["source": source.rawValue, "checkpoints": checkpoints, "scored": scored, "missed": missed,
                                "interpolated": samples.filter(\.interpolated).count]
        if let st = statistics {
            o["mean_m"] = st.mean; o["median_m"] = st.median; o["p75_m"] = st.p75; o["p95_m"] = st.p95
            o["rmse_m"] = st.rmse; o["max_m"] = st.max
            if let i = st.inside95 { o["inside95"] = i }
            if let a = st.anees { o["anees"] = a }
        }
        if let f = floorHitRate { o["floor_hit_rate"] = f }
        if let i = ipin { o["ipin_m"] = i }
        return o
    }
}

/// Collects checkpoint truth and the phone estimates for `CheckpointScore` (used by `Scorer`).
struct CheckpointTracker {
    struct Truth { var time: Double; var position: SIMD2<Double>; var floor: Int? }
    struct Held { var time: Double; var position: SIMD2<Double>; var covariance: Covariance2; var floor: Int? }
    private var truth: [String: [Truth]] = [:]
    /// Subjects with any continuous truth sample: scored per estimate only.
    private var continuous: Set<String> = []
    private var fixes: [String: [Source: [Held]]] = [:]

    mutating func add(truth g: GroundTruth, subject: String, time: Double, position: SIMD2<Double>) {
        guard !Subject.isObject(subject) else { return }
        if g.kind == .checkpoint { truth[subject, default: []].append(Truth(time: time, position: position, floor: g.floor)) } else { continuous.insert(subject) }
    }

    mutating func add(_ f: Fix) {
        guard !Subject.isObject(f.subject), f.time.isFinite, f.position.x.isFinite, f.position.y.isFinite else { return }
        fixes[f.subject, default: [:]][f.source, default: []].append(Held(time: f.time, position: f.position, covariance: f.covariance, floor: f.floor))
    }

    /// Scores per source (sources that emitted anything for a checkpoint subject), in `Source` order.
    func scores(hold: Double) -> [CheckpointScore] {
        var out: [Source: (Int, [CheckpointSample])] = [:]
        for (subject, cps) in truth where !continuous.contains(subject) {
            let checkpoints = cps.sorted { $0.time < $1.time }
            for (source, raw) in fixes[subject] ?? [:] {
                // Stable sort by time; of several estimates at one time the last one counts.
                var fx: [Held] = []
                for h in raw.enumerated().sorted(by: { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }).map(\.element) {
                    if let l = fx.last, l.time == h.time { fx[fx.count - 1] = h } else { fx.append(h) }
                }
                var samples: [CheckpointSample] = []
                for c in checkpoints {
                    guard let s = Self.sample(c, fx, hold: hold, subject: subject) else { continue }
                    samples.append(s)
                }
                var acc = out[source] ?? (0, [])
                acc.0 += checkpoints.count; acc.1 += samples
                out[source] = acc
            }
        }
        return out.keys.sorted().map { CheckpointScore(source: $0, checkpoints: out[$0]!.0, samples: out[$0]!.1) }
    }

    static func sample(_ c: Truth, _ fx: [Held], hold: Double, subject: String) -> CheckpointSample? {
        // Index of the first estimate after c.time.
        var lo = 0, hi = fx.count
        while lo < hi { let m = (lo + hi) / 2; if fx[m].time <= c.time { lo = m + 1 } else { hi = m } }
        let before = lo > 0 ? fx[lo - 1] : nil
        let after = lo < fx.count ? fx[lo] : nil
        var p: SIMD2<Double>, cov: Covariance2, floor: Int?, interpolated = false
        if let b = before, let a = after, a.time - b.time <= hold {
            let w = (c.time - b.time) / (a.time - b.time)
            p = b.position + w * (a.position - b.position)
            cov = Covariance2(ee: (1 - w) * b.covariance.ee + w * a.covariance.ee, en: (1 - w) * b.covariance.en + w * a.covariance.en,
                              nn: (1 - w) * b.covariance.nn + w * a.covariance.nn)
            floor = w <= 0.5 ? b.floor : a.floor
            interpolated = true
        } else if let b = before, c.time - b.time <= hold {
            p = b.position; cov = b.covariance; floor = b.floor
        } else {
            return nil
        }
        let d = p - c.position
        let nees = cov.isValid ? cov.mahalanobis2(d) : nil
        return CheckpointSample(subject: subject, time: c.time, errorE: d.x, errorN: d.y, nees: nees.flatMap { $0.isFinite ? $0 : nil },
                                floorError: (floor != nil && c.floor != nil) ? floor! - c.floor! : nil, interpolated: interpolated)
    }
}
