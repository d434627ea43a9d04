import Foundation

/// Calibration of the WCL covariance Σ̂ = κ·S + σ0²·I (S the weighted anchor spread) on
/// ground truth, so that the normalised error e = p̂ − p_true is χ²₂-consistent
/// (`docs/models.md` §2.2, §7.6).
///
/// For a consistent 2-D Gaussian, NIS = eᵀΣ⁻¹e ~ χ²₂: median 2 ln 2 = 1.386 and
/// P(NIS ≤ 5.991) = 0.95. Two parameters, two conditions: the fit minimises
///   L(κ, σ0) = (ln(median NIS / 1.386))² + 4·(F(5.991) − 0.95)²
/// by a deterministic grid search (κ log-spaced in [0.01, 100], σ0 in [0.25, 60] m), then a
/// finer grid around the best cell. Use training walks only — never the trace under test.
public enum WCLCalibration {
    public struct Sample: Sendable {
        public var estimate: SIMD2<Double>
        public var spread: Covariance2
        public var anchorCount: Int
        public var truth: SIMD2<Double>
        public init(estimate: SIMD2<Double>, spread: Covariance2, anchorCount: Int, truth: SIMD2<Double>) {
            self.estimate = estimate; self.spread = spread; self.anchorCount = anchorCount; self.truth = truth
        }
    }

    public struct Result: Sendable, Equatable {
        public var kappa: Double
        public var sigma0: Double
        /// Median NIS and fraction inside the 95 % ellipse at the fitted values.
        public var medianNIS: Double
        public var inside95: Double
        public var count: Int
    }

    /// NIS values of samples under an estimator's covariance settings.
    public static func nis(_ samples: [Sample], estimator e: WCLEstimator) -> [Double] {
        samples.compactMap { s in
            e.covariance(spread: s.spread, anchorCount: s.anchorCount).mahalanobis2(s.estimate - s.truth)
        }
    }

    static func loss(_ nis: [Double]) -> Double {
        guard let med = RadioStats.median(nis), med > 0 else { return .infinity }
        let inside = RadioStats.inside95(nis)!   // nis is not empty: it has a median
        let a = log(med / (2 * log(2.0)))
        return a * a + 4 * (inside - 0.95) * (inside - 0.95)
    }

    /// Fits κ and σ0 (other estimator settings unchanged). nil for fewer than 10 samples.
    public static func calibrate(_ samples: [Sample], estimator: WCLEstimator) -> Result? {
        guard samples.count >= 10 else { return nil }
        var e = estimator
        func eval(_ k: Double, _ s: Double) -> Double { e.kappa = k; e.sigma0 = s; return loss(nis(samples, estimator: e)) }
        var best = (k: estimator.kappa, s: estimator.sigma0, l: Double.infinity)
        for i in 0...24 {
            let k = pow(10, -2 + 4 * Double(i) / 24)
            for j in 0...29 {
                let s = 0.25 * pow(240, Double(j) / 29)
                let l = eval(k, s)
                if l < best.l { best = (k, s, l) }
            }
        }
        // Refine around the best cell.
        let k0 = best.k, s0 = best.s
        for i in -6...6 {
            let k = k0 * pow(10, Double(i) / 72)
            for j in -6...6 {
                let s = s0 * pow(240, Double(j) / 174)
                let l = eval(k, s)
                if l < best.l { best = (k, s, l) }
            }
        }
        e.kappa = best.k; e.sigma0 = best.s
        let n = nis(samples, estimator: e)
        return Result(kappa: best.k, sigma0: best.s, medianNIS: RadioStats.median(n) ?? .nan,
                      inside95: RadioStats.inside95(n) ?? 0, count: n.count)
    }
}
