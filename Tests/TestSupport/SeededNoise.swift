import Positioning

/// The tests' one seeded generator is Positioning's `SplitMix64` (uniform, Box–Muller gaussian);
/// this adds the correlated series the scoring and gate tests draw.
extension SplitMix64 {
    /// Unit-variance AR(1) series x_k = φ x_{k−1} + √(1−φ²) w_k, w_k ~ N(0, 1), x_0 ~ N(0, 1).
    package mutating func ar1(_ n: Int, phi: Double) -> [Double] {
        var x = gaussian(), out: [Double] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(x); x = phi * x + (1 - phi * phi).squareRoot() * gaussian() }
        return out
    }
}
