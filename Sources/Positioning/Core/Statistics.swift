import CGSL
import Foundation

// The statistics of posfuse in one place: one quantile definition, the order statistics the
// estimators' calibrations use, and the scorer's summaries built on them (Scoring's
// `ErrorStatistics` and `EpochMetrics` call these; nothing else computes a percentile).

/// Hyndman–Fan type-7 quantiles (numpy's default `linear`, R's default `type = 7`),
/// the one percentile definition of posfuse (`docs/metrics.md`, docs/models.md §8).
///
/// With sorted data x₍₀₎ ≤ … ≤ x₍ₙ₋₁₎ and h = (n − 1)·p,
/// Q(p) = x₍⌊h⌋₎ + (h − ⌊h⌋)·(x₍⌊h⌋₊₁₎ − x₍⌊h⌋₎).
/// Reference values: numpy.quantile / R quantile(type = 7) (`ScoringTests`).
public enum Quantile {
    /// Q(p) of already sorted data; `p` is clamped to [0, 1]. nil when empty or p is not finite.
    @inlinable public static func type7(sorted x: [Double], _ p: Double) -> Double? {
        guard !x.isEmpty, p.isFinite else { return nil }
        let h = Double(x.count - 1) * min(max(p, 0), 1)
        let lo = Int(h.rounded(.down)), hi = min(lo + 1, x.count - 1)
        return x[lo] + (h - Double(lo)) * (x[hi] - x[lo])
    }

    /// Sorts `x` ascending with GSL (C sort: fast in debug builds too).
    public static func sorted(_ x: [Double]) -> [Double] {
        var s = x
        s.withUnsafeMutableBufferPointer { if let b = $0.baseAddress { gsl_sort(b, 1, $0.count) } }
        return s
    }
}

/// Small order statistics of unsorted samples (estimator calibrations, evaluations). Quantiles
/// are `Quantile.type7`; non-finite values are ignored by `median`/`quantile`.
public enum RadioStats {
    /// Median (mean of the two central values for even counts); nil for an empty input.
    public static func median(_ x: [Double]) -> Double? { quantile(x, 0.5) }

    /// Hyndman–Fan type 7 quantile (numpy "linear"); nil for an empty input.
    public static func quantile(_ x: [Double], _ q: Double) -> Double? {
        Quantile.type7(sorted: x.filter(\.isFinite).sorted(), q)
    }

    public static func mean(_ x: [Double]) -> Double? { x.isEmpty ? nil : x.reduce(0, +) / Double(x.count) }

    /// χ²₂ 95 % quantile: −2 ln 0.05 = 5.99146… (the 95 % ellipse of a 2-D Gaussian).
    public static let chi2Two95 = -2 * log(0.05)

    /// Share of 2-D NEES / NIS values inside the 95 % ellipse (≤ `chi2Two95`); nil for none.
    public static func inside95(_ x: [Double]) -> Double? {
        x.isEmpty ? nil : Double(x.filter { $0 <= chi2Two95 }.count) / Double(x.count)
    }

    /// Sample standard deviation (n − 1); nil for fewer than two values.
    public static func standardDeviation(_ x: [Double]) -> Double? {
        guard x.count > 1, let m = mean(x) else { return nil }
        return (x.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(x.count - 1)).squareRoot()
    }
}
