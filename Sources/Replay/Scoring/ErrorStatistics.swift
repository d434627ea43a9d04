import CGSL
import Positioning
import Foundation

/// Summary statistics of the horizontal errors of one source (`docs/metrics.md`).
///
/// Inputs per scored epoch k: the error vector d_k = p̂_k − p_k (East, North, m), its
/// magnitude e_k = ‖d_k‖₂, and, when the estimate reports a usable covariance P_k, the
/// NEES ε_k = d_kᵀ P_k⁻¹ d_k.
///
/// * `mean` = (1/N) Σ e_k; `std` = √(Σ (e_k − mean)² / (N − 1)) (sample standard
///   deviation, GSL `gsl_stats_sd`; absent for N = 1); `rmse` = √((1/N) Σ e_k²);
///   `max` = max e_k.
/// * `median`, `p75`, `p90`, `p95`: type-7 quantiles of e (see `Quantile`).
/// * `biasE`, `biasN`: the mean error vector (1/N) Σ d_k (ISO/IEC 18305 "bias").
/// * `inside95`: share of epochs with a covariance whose truth lies inside the reported
///   95 % ellipse, ε_k ≤ χ²₂(0.95) = 5.991; ideal 0.95.
/// * `anees`: average NEES (1/M) Σ ε_k over the M epochs with a covariance; ideal 2
///   (the dimension) for a consistent estimator.
/// * `cdf`: the error CDF as a quantile table: Q(p) at p = 0, 0.05, …, 1.
///
/// No epochs → no statistics (the initializer returns nil); nothing is ever NaN.
public struct ErrorStatistics: Sendable, Equatable {
    public var count: Int
    public var mean: Double
    public var std: Double?
    public var rmse: Double
    public var median: Double
    public var p75: Double
    public var p90: Double
    public var p95: Double
    public var max: Double
    public var biasE: Double
    public var biasN: Double
    /// Number of epochs with a usable covariance (the denominator of `inside95`, `anees`).
    public var covarianceCount: Int
    public var inside95: Double?
    public var anees: Double?
    /// (p, Q(p)) for p = 0, 0.05, …, 1.
    public var cdf: [CDFPoint]

    public struct CDFPoint: Sendable, Equatable {
        public var p: Double
        public var error: Double
    }

    /// χ²₂ 95 % quantile (`RadioStats.chi2Two95`).
    public static let chi2Two95 = RadioStats.chi2Two95
    /// Probability levels of the CDF table.
    public static let cdfLevels: [Double] = (0...20).map { Double($0) / 20 }

    /// - Parameters:
    ///   - errorE, errorN: error vector components d_k (m), equal length.
    ///   - nees: ε_k for the epochs with a usable covariance (any subset).
    public init?(errorE: [Double], errorN: [Double], nees: [Double]) {
        precondition(errorE.count == errorN.count)
        let n = errorE.count
        guard n > 0 else { return nil }
        var e = [Double](repeating: 0, count: n)
        var sumE = 0.0, sumN = 0.0, sum2 = 0.0
        for k in 0..<n {
            let dx = errorE[k], dy = errorN[k]
            let m = (dx * dx + dy * dy).squareRoot()
            e[k] = m; sumE += dx; sumN += dy; sum2 += m * m
        }
        let nd = Double(n)
        count = n
        mean = e.withUnsafeBufferPointer { gsl_stats_mean($0.baseAddress, 1, n) }
        std = n > 1 ? e.withUnsafeBufferPointer { gsl_stats_sd($0.baseAddress, 1, n) } : nil
        rmse = (sum2 / nd).squareRoot()
        biasE = sumE / nd; biasN = sumN / nd
        let s = Quantile.sorted(e)
        max = s[n - 1]
        median = Quantile.type7(sorted: s, 0.5)!
        p75 = Quantile.type7(sorted: s, 0.75)!
        p90 = Quantile.type7(sorted: s, 0.90)!
        p95 = Quantile.type7(sorted: s, 0.95)!
        cdf = Self.cdfLevels.map { CDFPoint(p: $0, error: Quantile.type7(sorted: s, $0)!) }
        let finite = nees.filter { $0.isFinite && $0 >= 0 }
        covarianceCount = finite.count
        if finite.isEmpty {
            inside95 = nil; anees = nil
        } else {
            inside95 = RadioStats.inside95(finite); anees = RadioStats.mean(finite)
        }
    }
}
