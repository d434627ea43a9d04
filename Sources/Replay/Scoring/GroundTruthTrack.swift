import Foundation
import Positioning

/// Why an estimate was not scored (`docs/metrics.md`, "Interpolation").
public enum UnscoredReason: String, Error, Sendable, CaseIterable, Codable {
    /// The trace has no ground truth for the estimate's subject (none at all, or — decided
    /// while replaying, to keep memory flat — none up to the estimate's time).
    case noTruth = "no_truth"
    /// The estimate is earlier than the subject's first truth sample (never extrapolated).
    case beforeTruth = "before_truth"
    /// The estimate is later than the subject's last truth sample (never extrapolated).
    case afterTruth = "after_truth"
    /// The bracketing truth samples are more than `maxTruthGap` apart (also: truth paused
    /// for longer than that after the estimate while the replay went on, whether or not it
    /// resumes later).
    case truthGap = "truth_gap"
}

/// The ground truth of one subject: time-ordered samples in local ENU (m).
///
/// Truth at time t is the linear interpolation between the bracketing samples
/// t_i ≤ t ≤ t_{i+1}:  p(t) = p_i + (t − t_i)/(t_{i+1} − t_i) · (p_{i+1} − p_i),
/// provided t_{i+1} − t_i ≤ `maxGap`; a time equal to a sample time uses that sample
/// (whatever the gaps around it). Times outside [t_first, t_last] have no truth: never
/// extrapolated. Static subjects (`object:<id>`, landmarks reported by CamLoc) do not
/// move: outside their samples they take the nearest sample.
public struct GroundTruthTrack: Sendable {
    public let subject: String
    public let isStatic: Bool
    public private(set) var times: [Double] = []
    public private(set) var east: [Double] = []
    public private(set) var north: [Double] = []

    public init(subject: String) {
        self.subject = subject
        isStatic = Subject.isObject(subject)
    }

    public var isEmpty: Bool { times.isEmpty }
    public var lastTime: Double? { times.last }

    /// Appends a sample. Samples arrive in time order (the reader guarantees it); a sample
    /// at the same time as the last one replaces it, an earlier one is inserted in place.
    public mutating func append(time: Double, position: SIMD2<Double>) {
        guard time.isFinite, position.x.isFinite, position.y.isFinite else { return }
        if let last = times.last, time <= last {
            if time == last {
                east[east.count - 1] = position.x; north[north.count - 1] = position.y
                return
            }
            let i = upperBound(time)
            times.insert(time, at: i); east.insert(position.x, at: i); north.insert(position.y, at: i)
            return
        }
        times.append(time); east.append(position.x); north.append(position.y)
    }

    /// Index of the first sample with time > t.
    private func upperBound(_ t: Double) -> Int {
        var lo = 0, hi = times.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if times[mid] <= t { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// Truth at time `t`, or why there is none.
    public func position(at t: Double, maxGap: Double) -> Result<SIMD2<Double>, UnscoredReason> {
        guard !times.isEmpty else { return .failure(.noTruth) }
        let u = upperBound(t)          // times[u-1] ≤ t < times[u]
        if u == 0 {
            return isStatic ? .success(SIMD2(east[0], north[0])) : .failure(.beforeTruth)
        }
        let i = u - 1
        if times[i] == t { return .success(SIMD2(east[i], north[i])) }
        if u == times.count {
            return isStatic ? .success(SIMD2(east[i], north[i])) : .failure(.afterTruth)
        }
        let dt = times[u] - times[i]
        if dt > maxGap {
            guard isStatic else { return .failure(.truthGap) }
            let j = t - times[i] <= times[u] - t ? i : u
            return .success(SIMD2(east[j], north[j]))
        }
        let w = (t - times[i]) / dt
        return .success(SIMD2(east[i] + w * (east[u] - east[i]), north[i] + w * (north[u] - north[i])))
    }

    /// The scorable truth time: the union of the intervals [t_i, t_{i+1}] no longer than
    /// `maxGap`, merged and in order.
    public func scorableIntervals(maxGap: Double) -> [ClosedRange<Double>] {
        var out: [ClosedRange<Double>] = []
        guard times.count > 1 else { return out }
        for i in 0..<(times.count - 1) where times[i + 1] - times[i] <= maxGap && times[i + 1] > times[i] {
            if let last = out.last, last.upperBound >= times[i] {
                out[out.count - 1] = last.lowerBound...times[i + 1]
            } else {
                out.append(times[i]...times[i + 1])
            }
        }
        return out
    }
}

/// Length of ∪ᵢ [s_i, s_i + w] ∩ ∪ⱼ intervals_j, for start times `starts` (any order)
/// and disjoint, ordered `intervals`.
func coveredLength(starts: [Double], width w: Double, within intervals: [ClosedRange<Double>]) -> Double {
    guard !starts.isEmpty, !intervals.isEmpty, w > 0 else { return 0 }
    let s = Quantile.sorted(starts)
    // Merge [s_i, s_i + w] into disjoint covers.
    var covers: [ClosedRange<Double>] = []
    for x in s {
        if let last = covers.last, x <= last.upperBound {
            covers[covers.count - 1] = last.lowerBound...max(last.upperBound, x + w)
        } else {
            covers.append(x...(x + w))
        }
    }
    // Two-pointer intersection of two ordered disjoint interval lists.
    var i = 0, j = 0, total = 0.0
    while i < covers.count && j < intervals.count {
        let lo = max(covers[i].lowerBound, intervals[j].lowerBound)
        let hi = min(covers[i].upperBound, intervals[j].upperBound)
        if hi > lo { total += hi - lo }
        if covers[i].upperBound < intervals[j].upperBound { i += 1 } else { j += 1 }
    }
    return total
}
