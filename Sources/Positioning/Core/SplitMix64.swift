import Foundation

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): a tiny, fast, seedable 64-bit generator. posfuse uses it wherever a
/// reproducible stream is needed outside GSL: seeded tests and Monte Carlo checks, benchmark
/// inputs, seeding other generators (xoshiro), and hashing an index into a reproducible draw
/// (train/test splits). Not cryptographic.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The golden-ratio increment γ = ⌊2⁶⁴/φ⌋.
    public static let increment: UInt64 = 0x9E37_79B9_7F4A_7C15
    public var state: UInt64
    public init(seed: UInt64) { state = seed }

    /// The output function (a variant of MurmurHash3's fmix64): a bijective mix of `z`.
    @inlinable public static func finalize(_ z: UInt64) -> UInt64 {
        var z = z
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    @inlinable public mutating func next() -> UInt64 {
        state &+= Self.increment
        return Self.finalize(state)
    }
    /// U[0, 1) with 53 random bits.
    @inlinable public mutating func uniform() -> Double { Double(next() >> 11) * 0x1p-53 }
    /// U[lo, hi).
    @inlinable public mutating func uniform(_ lo: Double, _ hi: Double) -> Double { lo + (hi - lo) * uniform() }
    /// N(0, 1) by Box–Muller (one variate per two uniforms; simple, exact in distribution).
    @inlinable public mutating func gaussian() -> Double {
        let u1 = max(uniform(), 1e-300), u2 = uniform()
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }
}
