import Foundation

/// Standard normal CDF Φ and numerically safe logarithms of it and of differences of it,
/// for the non-Gaussian likelihoods of the radio models (TA annulus, hidden APs).
///
/// Φ(x) = ½ erfc(−x/√2). For x < −35 erfc underflows; there the asymptotic series
/// log Φ(x) ≈ −x²/2 − log(−x√(2π)) + log(1 − 1/x² + 3/x⁴) is used (relative error < 1e-6).
/// Results are finite for every finite input (a likelihood of a far particle is very small,
/// never −∞ or NaN).
public enum NormalCDF {
    public static func phi(_ x: Double) -> Double { 0.5 * erfc(-x / 2.0.squareRoot()) }

    /// log Φ(x).
    public static func logPhi(_ x: Double) -> Double {
        if x > -35 { return log(0.5 * erfc(-x / 2.0.squareRoot())) }
        let x2 = x * x
        return -0.5 * x2 - log(-x * (2 * Double.pi).squareRoot()) + log1p(-1 / x2 + 3 / (x2 * x2))
    }

    /// log(Φ(a) − Φ(b)) for a > b, without cancellation in either tail.
    public static func logDifference(_ a: Double, _ b: Double) -> Double {
        guard a > b else { return -.infinity }
        if b > 0 {
            // Upper tail: Q(b) − Q(a), Q(x) = Φ(−x).
            let lb = logPhi(-b), la = logPhi(-a)
            return lb + log1p(-exp(la - lb))
        }
        if a < 0 {
            let la = logPhi(a), lb = logPhi(b)
            return la + log1p(-exp(lb - la))
        }
        return log(phi(a) - phi(b))
    }
}
