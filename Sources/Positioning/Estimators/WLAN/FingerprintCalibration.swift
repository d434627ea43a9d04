import Foundation

/// Calibration of the fingerprint likelihood's σ (`FingerprintEstimator.sigma`) on ground
/// truth: the σ at which the fixes' average NEES is 2, the χ²₂ mean that the filters' ANEES
/// test expects of their inputs (docs/radio.md).
///
/// Without tempering every point's log-likelihood is ℓ_i = −q_i/2σ², with q_i independent of
/// σ, so one pass over the training scans collects q per scan and every σ is then scored from
/// those. ANEES(σ) falls as σ grows (a wider likelihood, a wider posterior); the fit bisects
/// ln σ in [0.25, 40] dB. Use training data only — never the recordings under test.
public enum FingerprintCalibration {
    /// One training scan: q_i over the map's points and the truth.
    public struct Sample: Sendable {
        public var q: [Double]
        public var truth: SIMD2<Double>
        public var map: FingerprintMap
        public init(q: [Double], truth: SIMD2<Double>, map: FingerprintMap) { self.q = q; self.truth = truth; self.map = map }

        /// The scan's q under `estimator` (its σ is irrelevant; tempering is ignored), or nil
        /// when it gives no fix.
        public init?(scan: WiFiScan, time: Double, truth: SIMD2<Double>, map: FingerprintMap, estimator: FingerprintEstimator) {
            var e = estimator
            e.sigma = 1; e.temper = false
            guard case .success(let ll) = e.logLikelihoods(scan, time: time, map: map) else { return nil }
            self.init(q: ll.map { -2 * $0 }, truth: truth, map: map)
        }

        /// NEES of the posterior fix under σ (nil when its covariance is singular).
        public func nees(sigma: Double) -> Double? {
            let k = 1 / (2 * sigma * sigma)
            let (m, c, _) = FingerprintEstimator.posterior(q.map { -k * $0 }, map: map)
            return c.mahalanobis2(m - truth)
        }
    }

    public struct Result: Sendable, Equatable {
        /// Fitted σ, dB.
        public var sigma: Double
        /// At the fitted σ: mean NEES, share inside the 95 % ellipse, samples scored.
        public var anees: Double
        public var inside95: Double
        public var count: Int
    }

    /// Mean NEES and share inside the 95 % ellipse under σ.
    public static func score(_ samples: [Sample], sigma: Double) -> (anees: Double, inside95: Double, count: Int) {
        let n = samples.compactMap { $0.nees(sigma: sigma) }.filter(\.isFinite)
        return (RadioStats.mean(n) ?? .nan, RadioStats.inside95(n) ?? .nan, n.count)
    }

    /// σ with ANEES = `target` (2), clamped to [0.25, 40] dB; nil without samples.
    public static func fit(_ samples: [Sample], target: Double = 2) -> Result? {
        guard !samples.isEmpty else { return nil }
        var lo = log(0.25), hi = log(40.0)
        if score(samples, sigma: exp(lo)).anees <= target { hi = lo }
        else if score(samples, sigma: exp(hi)).anees >= target { lo = hi }
        while hi - lo > 1e-4 {
            let mid = (lo + hi) / 2
            if score(samples, sigma: exp(mid)).anees > target { lo = mid } else { hi = mid }
        }
        let sigma = exp((lo + hi) / 2)
        let s = score(samples, sigma: sigma)
        return Result(sigma: sigma, anees: s.anees, inside95: s.inside95, count: s.count)
    }
}
