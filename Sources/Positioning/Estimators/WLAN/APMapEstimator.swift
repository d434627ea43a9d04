import Foundation

/// Access-point positions (and log-distance parameters where the data allows) from walks
/// with ground truth (`posfuse radiomap build`, `docs/models.md` §2.4).
///
/// Per BSSID, from the survey samples (truth position p_k at the scan, RSS_k):
/// 1. Position: weighted centroid of the sample positions with linear-mW weights
///    w_k = 10^(RSS_k/10) (the TUT/Tampere approach: the strongest samples dominate).
/// 2. With ≥ `minModelSamples` samples spanning ≥ `minSpan` m: joint robust fit of
///    x = (E, N, P0, n) minimising Σ ρ_Huber((RSS_k − P0 + 10 n log10 d_k)/σ), d_k = max(1, ‖p_k − a‖),
///    by LM + IRLS from the centroid and P0 = −40, n = 2.5. Accepted if n ∈ [1.2, 6] and the
///    position moved less than `maxShift` m from the centroid; otherwise only P0 is fitted with
///    n fixed (`defaultExponent`) by the median of RSS_k + 10 n log10 d_k.
/// Degenerate cases: fewer than `minSamples` samples → no entry (unreliable).
public struct APMapEstimator: Sendable {
    public var minSamples: Int
    public var minModelSamples: Int
    public var minSpan: Double
    public var maxShift: Double
    public var defaultExponent: Double
    public var shadowingSigma: Double
    public var excludeLocallyAdministered: Bool

    public init(minSamples: Int = 3, minModelSamples: Int = 20, minSpan: Double = 10, maxShift: Double = 15,
                defaultExponent: Double = 2.5, shadowingSigma: Double = 4, excludeLocallyAdministered: Bool = true) {
        self.minSamples = minSamples; self.minModelSamples = minModelSamples; self.minSpan = minSpan
        self.maxShift = maxShift; self.defaultExponent = defaultExponent; self.shadowingSigma = shadowingSigma
        self.excludeLocallyAdministered = excludeLocallyAdministered
    }

    public struct Sample: Sendable {
        public var position: SIMD2<Double>
        public var rss: Double
        public var floor: Int?
        public init(position: SIMD2<Double>, rss: Double, floor: Int? = nil) { self.position = position; self.rss = rss; self.floor = floor }
    }

    /// Estimated AP with the number of samples and whether the model was fitted jointly.
    public struct Estimate: Sendable {
        public var ap: AccessPoint
        public var samples: Int
        public var modelFitted: Bool
    }

    public func estimate(bssid: String, samples: [Sample]) -> Estimate? {
        guard samples.count >= minSamples else { return nil }
        if excludeLocallyAdministered && MACAddress.isLocallyAdministered(bssid) { return nil }
        let mx = samples.map(\.rss).max()!
        var c = SIMD2<Double>(0, 0), ws = 0.0
        for s in samples { let w = pow(10, (s.rss - mx) / 10); c += w * s.position; ws += w }
        c /= ws
        // Floor: most frequent among samples.
        var fc: [Int: Int] = [:]
        for s in samples { if let f = s.floor { fc[f, default: 0] += 1 } }
        let floor = fc.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key
        var pos = c, p0: Double? = nil, n: Double? = nil, fitted = false
        let span = spanOf(samples.map(\.position))
        if samples.count >= minModelSamples, span >= minSpan, let f = jointFit(samples, start: c),
           f.n >= 1.2, f.n <= 6, ((f.pos - c) * (f.pos - c)).sum().squareRoot() <= maxShift {
            pos = f.pos; p0 = f.p0; n = f.n; fitted = true
        } else if samples.count >= minSamples {
            let ne = defaultExponent
            p0 = RadioStats.median(samples.map { s in
                let d = max(1, ((s.position - c) * (s.position - c)).sum().squareRoot())
                return s.rss + 10 * ne * log10(d)
            })
            n = ne
        }
        let ap = AccessPoint(bssid: MACAddress.normalize(bssid), position: SIMD3(pos.x, pos.y, 0), floor: floor,
                             p0: p0, pathLossExponent: n)
        return Estimate(ap: ap, samples: samples.count, modelFitted: fitted)
    }

    func spanOf(_ p: [SIMD2<Double>]) -> Double {
        guard let f = p.first else { return 0 }
        var lo = f, hi = f
        for q in p { lo = pointwiseMin(lo, q); hi = pointwiseMax(hi, q) }
        let d = hi - lo
        return (d * d).sum().squareRoot()
    }

    func jointFit(_ samples: [Sample], start: SIMD2<Double>) -> (pos: SIMD2<Double>, p0: Double, n: Double)? {
        let m = samples.count, sig = shadowingSigma
        let ln10 = log(10.0)
        let prob = RobustLeastSquares.Problem(
            residualCount: m, parameterCount: 4,
            residuals: { x in
                samples.map { s in
                    let dx = s.position.x - x[0], dy = s.position.y - x[1]
                    let d = max(1, (dx * dx + dy * dy).squareRoot())
                    return (s.rss - (x[2] - 10 * x[3] * log10(d))) / sig
                }
            },
            jacobian: { x in
                var j = [Double](repeating: 0, count: 4 * m)
                for (k, s) in samples.enumerated() {
                    let ax = x[0] - s.position.x, ay = x[1] - s.position.y
                    let d2 = ax * ax + ay * ay
                    let d = d2.squareRoot()
                    if d > 1 {
                        j[4 * k] = 10 * x[3] * ax / (ln10 * d2 * sig)
                        j[4 * k + 1] = 10 * x[3] * ay / (ln10 * d2 * sig)
                    }
                    j[4 * k + 2] = -1 / sig
                    j[4 * k + 3] = 10 * log10(max(1, d)) / sig
                }
                return j
            })
        guard let s = RobustLeastSquares.solve(prob, starts: [[start.x, start.y, -40, 2.5]], passes: 5) else { return nil }
        return (SIMD2(s.x[0], s.x[1]), s.x[2], s.x[3])
    }
}
