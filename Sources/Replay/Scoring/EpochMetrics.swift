import Foundation
import Positioning
import CGSL
import TraceIO

/// Summary metrics recomputed from per-epoch samples, with the definitions of
/// `docs/models.md` §8, so that a bootstrap replicate is scored exactly like a run.
///
/// * `mean_m` = (1/N) Σ e_k; `rmse_m` = √((1/N) Σ e_k²); `max_m` = max e_k.
/// * `median_m`, `p75_m`, `p90_m`, `p95_m`: Hyndman–Fan type 7 quantiles of the errors
///   (numpy's default "linear"): with sorted e_(0) ≤ … ≤ e_(N−1) and h = (N − 1)p,
///   Q(p) = e_(⌊h⌋) + (h − ⌊h⌋)(e_(⌊h⌋+1) − e_(⌊h⌋)).
/// * `inside95` = fraction of epochs whose NEES ≤ 5.991 (truth inside the reported 95 %
///   ellipse, as `posfuse replay`), or e_k ≤ r95_k (95 % circle) for epochs with a radius
///   but no NEES; ideal 0.95.
/// * `anees` = mean of the per-epoch NEES eᵀP⁻¹e over epochs that have one; ideal 2 (χ²₂).
///
/// Degenerate cases: no epochs → no metrics (empty dictionary); no radius or NEES → that
/// metric is absent. Nothing returns NaN.
public enum EpochMetrics {
    /// Metrics that can be recomputed from epochs (and hence bootstrapped).
    public static let names = ["mean_m", "median_m", "p75_m", "p90_m", "p95_m", "rmse_m", "max_m", "inside95", "anees"]

    /// Type-7 quantile of an already sorted, non-empty array; p in [0, 1] (`Quantile.type7`).
    public static func quantile(sorted x: [Double], _ p: Double) -> Double {
        precondition(!x.isEmpty)
        return Quantile.type7(sorted: x, p)!
    }

    /// All metrics of `names` that the samples support.
    public static func compute(_ epochs: [EpochSample]) -> [String: Double] {
        // inside95 as `posfuse replay` defines it (docs/metrics.md): truth inside the reported
        // 95 % ellipse, NEES ≤ χ²₂(0.95) = 5.991; the 95 % circle only when no NEES is known.
        compute(errors: epochs.map(\.error), inside: epochs.compactMap(isInside95), nees: epochs.compactMap(\.nees))
    }

    /// Whether an epoch's truth lies inside its reported 95 % region: NEES ≤ χ²₂(0.95) =
    /// −2 ln 0.05 = 5.991 (the ellipse), else e ≤ r95 (the circle); nil when neither is known.
    public static func isInside95(_ e: EpochSample) -> Bool? {
        e.nees.map { $0 <= -2 * log(0.05) } ?? e.radius95.map { e.error <= $0 }
    }

    /// Metrics from error magnitudes, inside-95 flags and NEES values (independent lists:
    /// a bootstrap replicate resamples the epochs and passes the resampled columns).
    public static func compute(errors: [Double], inside: [Bool], nees: [Double]) -> [String: Double] {
        var m: [String: Double] = [:]
        guard !errors.isEmpty else { return m }
        let n = Double(errors.count)
        var s = errors
        s.withUnsafeMutableBufferPointer { gsl_sort($0.baseAddress, 1, $0.count) }  // C sort: fast in debug builds too
        m["mean_m"] = errors.reduce(0, +) / n
        m["rmse_m"] = (errors.reduce(0) { $0 + $1 * $1 } / n).squareRoot()
        m["max_m"] = s[s.count - 1]
        m["median_m"] = quantile(sorted: s, 0.5)
        m["p75_m"] = quantile(sorted: s, 0.75)
        m["p90_m"] = quantile(sorted: s, 0.90)
        m["p95_m"] = quantile(sorted: s, 0.95)
        if !inside.isEmpty { m["inside95"] = Double(inside.filter { $0 }.count) / Double(inside.count) }
        if !nees.isEmpty { m["anees"] = nees.reduce(0, +) / Double(nees.count) }
        return m
    }
}
