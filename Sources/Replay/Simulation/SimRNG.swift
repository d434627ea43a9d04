import CGSL
import Positioning

/// Seeded pseudo-random stream for the simulator: GSL's MT19937 with ziggurat Gaussians.
///
/// Every noise process draws from its own stream, keyed by (scenario seed, stream name), so
/// adding a sensor to a scenario never changes the numbers another sensor draws. The stream
/// seed is SplitMix64(seed ⊕ FNV-1a(name)) truncated to 32 bits (MT19937 takes 32-bit seeds;
/// 0 is mapped to GSL's default 4357).
///
/// Determinism: GSL's MT19937 output and the ziggurat transform are bit-exact across
/// platforms; the simulator's use of libm (`sin`, `log`, `exp`) is exact on one machine and
/// libm and written values are rounded to the sensor resolution, so traces are byte-identical
/// for the same seed on one platform (and almost always across platforms).
public final class SimRNG {
    private let r: UnsafeMutablePointer<gsl_rng>

    /// A stream for `name` under scenario `seed`.
    public init(seed: UInt64, stream name: String) {
        r = gsl_rng_alloc(cgsl_rng_mt19937())
        var s = SimRNG.mix(seed ^ SimRNG.fnv1a(name))
        s &= 0xffff_ffff
        gsl_rng_set(r, UInt(s == 0 ? 4357 : s))
    }
    deinit { gsl_rng_free(r) }

    /// FNV-1a 64-bit hash of a UTF-8 string.
    static func fnv1a(_ s: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in s.utf8 { h ^= UInt64(b); h = h &* 0x100_0000_01b3 }
        return h
    }
    /// SplitMix64 finaliser.
    static func mix(_ x: UInt64) -> UInt64 { SplitMix64.finalize(x &+ SplitMix64.increment) }

    /// N(0, σ²) by the ziggurat method.
    @inline(__always) public func gaussian(_ sigma: Double = 1) -> Double {
        sigma == 0 ? 0 : gsl_ran_gaussian_ziggurat(r, sigma)
    }
    /// U[0, 1).
    @inline(__always) public func uniform() -> Double { gsl_rng_uniform(r) }
    /// U[a, b).
    @inline(__always) public func uniform(_ a: Double, _ b: Double) -> Double { a + (b - a) * gsl_rng_uniform(r) }
    /// Exponential with the given mean.
    @inline(__always) public func exponential(mean: Double) -> Double { mean <= 0 ? 0 : gsl_ran_exponential(r, mean) }
    /// True with probability p.
    @inline(__always) public func bernoulli(_ p: Double) -> Bool { p > 0 && gsl_rng_uniform(r) < p }
}

/// First-order Gauss–Markov process (exponentially correlated noise) in time or distance:
/// x_k = ρ x_{k−1} + σ √(1 − ρ²) w_k, ρ = exp(−Δ/τ), w_k ~ N(0, 1), x_0 ~ N(0, σ²).
/// Stationary variance σ², autocorrelation exp(−|Δ|/τ). τ = ∞ gives a constant; τ = 0 white noise.
public struct GaussMarkov {
    public let sigma: Double, tau: Double
    public private(set) var value: Double
    public init(sigma: Double, tau: Double, rng: SimRNG) {
        self.sigma = sigma; self.tau = tau; value = rng.gaussian(sigma)
    }
    /// Advances by Δ (s or m) and returns the new value.
    public mutating func step(_ delta: Double, rng: SimRNG) -> Double {
        guard sigma > 0 else { return 0 }
        if tau.isInfinite { return value }
        let rho = tau > 0 ? exp(-max(0, delta) / tau) : 0
        value = rho * value + sigma * (1 - rho * rho).squareRoot() * rng.gaussian()
        return value
    }
}

/// A stationary 2-D Gaussian random field with exponential autocorrelation
/// C(r) = σ² exp(−r/d_c) (Gudmundson 1991 shadowing model), synthesised by the spectral
/// (random-phase sum-of-cosines) method:
///
///   X(p) = σ √(2/M) Σ_m cos(k_m·p + θ_m),  θ_m ~ U[0, 2π),  k_m = κ_m (cos α_m, sin α_m), α_m ~ U[0, 2π).
///
/// The 2-D spectral density of exp(−r/d) is ∝ (1 + κ²d²)^(−3/2), so the wavenumber magnitude
/// has the radial CDF F(κ) = 1 − 1/√(1 + κ²d²), sampled by inversion:
/// κ = √((1 − U)^(−2) − 1)/d. For M → ∞ the field is Gaussian with exactly that covariance;
/// M = 256 gives a spatial variance of σ² and near-Gaussian marginals. Unlike an AR(1)
/// along the path, it is a field: revisiting a place, or two phones at one place, see the same
/// shadowing.
public struct CorrelatedField: Sendable {
    let sigma: Double
    let kx: [Double], ky: [Double], phase: [Double]
    let amp: Double
    public init(sigma: Double, correlationDistance d: Double, rng: SimRNG, components m: Int = 256) {
        self.sigma = sigma
        var kx = [Double](), ky = [Double](), ph = [Double]()
        kx.reserveCapacity(m); ky.reserveCapacity(m); ph.reserveCapacity(m)
        for _ in 0..<m {
            let u = min(rng.uniform(), 0.999_999)
            let kappa = d > 0 ? ((1 / ((1 - u) * (1 - u))) - 1).squareRoot() / d : 0
            let a = rng.uniform(0, 2 * .pi)
            kx.append(kappa * cos(a)); ky.append(kappa * sin(a)); ph.append(rng.uniform(0, 2 * .pi))
        }
        self.kx = kx; self.ky = ky; self.phase = ph
        amp = sigma * (2 / Double(m)).squareRoot()
    }
    /// Field value at horizontal position p (m).
    public func value(_ e: Double, _ n: Double) -> Double {
        guard sigma > 0 else { return 0 }
        var s = 0.0
        for i in 0..<kx.count { s += cos(kx[i] * e + ky[i] * n + phase[i]) }
        return amp * s
    }
}

/// Rounds to a multiple of `step` so that the written decimal is short and exact
/// (n/10^k is the nearest double to the decimal, so `description` prints it as typed).
@inline(__always) func quantise(_ v: Double, _ step: Double) -> Double {
    guard step > 0 else { return v }
    if step >= 1 { return (v / step).rounded() * step }
    let inv = (1 / step).rounded()
    return (v * inv).rounded() / inv
}
