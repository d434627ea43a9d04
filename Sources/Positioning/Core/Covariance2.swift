import CFastExp
import Foundation

/// A symmetric 2×2 covariance of a horizontal position in local ENU, in m².
///
/// Stored as the three distinct entries `[[ee, en], [en, nn]]`. Provides the
/// quantities the scorer and exporters need: Mahalanobis distance, the
/// confidence ellipse and the radius of a circle holding a given probability.
public struct Covariance2: Sendable, Equatable, Hashable, Codable {
    public var ee: Double
    public var en: Double
    public var nn: Double

    public init(ee: Double, en: Double, nn: Double) {
        self.ee = ee; self.en = en; self.nn = nn
    }

    /// Isotropic covariance σ²·I.
    public init(sigma: Double) { self.init(ee: sigma * sigma, en: 0, nn: sigma * sigma) }

    public static let zero = Covariance2(ee: 0, en: 0, nn: 0)

    public var determinant: Double { ee * nn - en * en }
    public var trace: Double { ee + nn }

    /// The inverse, or nil when the matrix is singular or not positive definite.
    public var inverse: Covariance2? {
        let d = determinant
        guard d > 0, d.isFinite, ee > 0 else { return nil }
        return Covariance2(ee: nn / d, en: -en / d, nn: ee / d)
    }

    /// Squared Mahalanobis distance eᵀ Σ⁻¹ e (the NEES/NIS of a 2-D error). nil if singular.
    public func mahalanobis2(_ e: SIMD2<Double>) -> Double? {
        guard let inv = inverse else { return nil }
        return e.x * e.x * inv.ee + 2 * e.x * e.y * inv.en + e.y * e.y * inv.nn
    }

    /// Eigen-decomposition: semi-axes standard deviations (major ≥ minor, m) and the
    /// orientation of the major axis as an azimuth (radians clockwise from north).
    public var principalAxes: (major: Double, minor: Double, azimuth: Double) {
        let (l1, l2) = eigenvalues
        // Eigenvector of l1 in (E, N): (en, l1 - ee) or (l1 - nn, en)
        var vx = l1 - nn, vy = en
        if abs(vx) + abs(vy) < 1e-300 { vx = ee >= nn ? 1 : 0; vy = ee >= nn ? 0 : 1 }
        let az = atan2(vx, vy)  // azimuth of (E, N) vector
        return (sqrt(l1), sqrt(l2), az)
    }

    /// The eigenvalues λ₁ ≥ λ₂ ≥ 0 (m²): m ± d, m = (ee + nn)/2, d = √((ee − nn)²/4 + en²).
    @inline(__always) var eigenvalues: (Double, Double) {
        let m = 0.5 * (ee + nn)
        let d = sqrt(max(0, 0.25 * (ee - nn) * (ee - nn) + en * en))
        return (m + d, max(0, m - d))
    }

    /// `principalAxes`' semi-axes (the same doubles) without its azimuth: `circularRadius`
    /// does not read the orientation, whose atan2 cost ≈ 100 instructions per call (docs/refine.md).
    public var principalSigmas: (major: Double, minor: Double) {
        let (l1, l2) = eigenvalues
        return (sqrt(l1), sqrt(l2))
    }

    /// Scale k such that the ellipse eᵀ Σ⁻¹ e ≤ k² holds probability `p` for a
    /// Gaussian: k = √(−2 ln(1 − p)) (χ² with 2 degrees of freedom). p = 0.95 → 2.4477.
    public static func ellipseScale(probability p: Double) -> Double { sqrt(-2 * log(1 - p)) }

    /// Radius (m) of the circle centred on the estimate that holds probability `p`
    /// under this Gaussian: the root of the exact circular-probability integral (midpoint rule
    /// over the whitened angle, safeguarded Newton; circular Σ gives σ·√(−2 ln(1−p))).
    public func circularRadius(probability p: Double = 0.95) -> Double {
        let ax = principalSigmas
        let s1 = ax.major, s2 = ax.minor
        if s1 <= 0 { return 0 }
        if s2 <= 1e-6 * s1 {
            // Degenerate: 1-D Gaussian; radius r with P(|x| < r) = p.
            return s1 * sqrt(2) * inverseErf(p)
        }
        // In whitened polar coordinates (x = s1 ρ cos φ, y = s2 ρ sin φ; ρ² ~ χ²₂):
        // P(‖x‖ ≤ r) = (2/π) ∫₀^{π/2} (1 − exp(−r² / (2 h(φ)))) dφ, h(φ) = s1² cos²φ + s2² sin²φ,
        // dP/dr = (2/π) ∫₀^{π/2} (r / h) exp(−r² / (2 h)) dφ. The integrand is periodic and smooth
        // for any eccentricity (as s2 → 0 it flattens to 1 near φ = π/2 instead of peaking), so
        // the midpoint rule converges geometrically. (Polar coordinates in the unwhitened frame
        // peak within s2/s1 of the major axis: 64 nodes failed there for s2/s1 < 1e-3.)
        let n = Self.quadratureNodes
        // h(φᵢ) on the stack (no allocation per call); cos φᵢ, sin φᵢ from a table computed once
        // with the same expressions, so the result is bit-identical to computing them here.
        //
        // Equal nodes, one exp. A near-circular Σ (every report whose only evidence is its own
        // position) gives h(φᵢ) that differ only by rounding: a handful of distinct values over
        // the 128 nodes. `slot[i]` numbers the distinct values of h (at most `maxDistinct`, else
        // every node is its own); the residual evaluates exp once per distinct value and sums the
        // nodes in their own order, so each term, and the sum, are bit-identical to one exp per node.
        return withUnsafeTemporaryAllocation(of: Double.self, capacity: 2 * n) { buffer in
        let h = UnsafeMutableBufferPointer(rebasing: buffer[0..<n])
        let distinct = UnsafeMutableBufferPointer(rebasing: buffer[n..<(2 * n)])
        return withUnsafeTemporaryAllocation(of: SIMD2<Double>.self, capacity: Self.maxDistinct) { terms in   // (1 − e, r/h·e) per distinct value
        Self.quadratureTrig.withUnsafeBufferPointer { t in
            for i in 0..<n {
                let c = t[2 * i], sn = t[2 * i + 1]
                h[i] = s1 * s1 * c * c + s2 * s2 * sn * sn
            }
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: n) { slot in
        var k = 0
        for i in 0..<n {
            var j = 0
            while j < k && distinct[j].bitPattern != h[i].bitPattern { j += 1 }
            if j == k {
                if k == Self.maxDistinct { k = -1; break }
                distinct[k] = h[i]; k += 1
            }
            slot[i] = UInt8(j)
        }
        /// P(r) − p and dP/dr.
        func residual(_ r: Double) -> (f: Double, df: Double) {
            var acc = 0.0, dacc = 0.0
            if k > 0 {
                for j in 0..<k {
                    let e = exp(-r * r / (2 * distinct[j]))
                    terms[j] = SIMD2(1 - e, e > 0 ? r / distinct[j] * e : 0)
                }
                // Both sums in one lane-wise addition per node (each lane is the scalar sum in node
                // order, the same doubles); + 0 where e = 0: dacc ≥ +0, so the sum is unchanged.
                var sum = SIMD2<Double>()
                for i in 0..<n { sum += terms[Int(slot[i])] }
                return (sum[0] / Double(n) - p, sum[1] / Double(n))
            }
            // Per node e = exp(−r²/(2h)), acc += 1 − e, and dacc += r/h·e where e > 0, in node
            // order: `posfuse_radius_sums` (C) computes the exponents, exp (the C library's, bit
            // for bit) and the products four at a time and the sums in order, so both are the
            // doubles of that loop written here (`distinctNodeExpIsBitIdentical`).
            posfuse_radius_sums(h.baseAddress!, n, r, &acc, &dacc)
            return (acc / Double(n) - p, dacc / Double(n))
        }
        // Safeguarded Newton (bisection whenever a step leaves the bracket), from the radius of
        // the circle with the same determinant; P is increasing in r, so the bracket is valid.
        var lo = 0.0, hi = 4 * s1
        var doublings = 0
        // At r = 4·s1 every node's term is 1 − exp(−r²/(2h)) ≥ 1 − exp(−8) > 0.9996 (h ≤ s1²), so
        // for p ≤ 0.999 the computed P(hi) − p is positive and the doubling loop would not run:
        // skipping that residual evaluation (one of the three to five per call) changes no result.
        if p > 0.999 {
            while residual(hi).f < 0 && doublings < 64 { hi *= 2; doublings += 1 }   // bounded: rounding can keep P just below p
        }
        var r = min(max((s1 * s2).squareRoot() * Self.ellipseScale(probability: p), lo), hi)
        for _ in 0..<100 {
            let (f, df) = residual(r)
            if f < 0 { lo = r } else { hi = r }
            var next = df > 0 ? r - f / df : .nan
            if !(next > lo && next < hi) { next = 0.5 * (lo + hi) }
            if abs(next - r) <= 1e-14 * r || hi - lo <= 1e-14 * hi { return next }
            r = next
        }
        return r
        }
        }
        }
    }

    /// Distinct h(φᵢ) values up to which `circularRadius` evaluates exp once per value.
    static let maxDistinct = 8

    /// Midpoint nodes of `circularRadius`'s angular integral over [0, π/2].
    static let quadratureNodes = 128
    /// cos φᵢ, sin φᵢ interleaved at the nodes φᵢ = (i + ½)·(π/2)/n.
    static let quadratureTrig: [Double] = (0..<quadratureNodes).flatMap { i -> [Double] in
        let phi = (Double(i) + 0.5) * 0.5 * Double.pi / Double(quadratureNodes)
        return [cos(phi), sin(phi)]
    }

    /// (Σ + Σᵀ)/2 is a no-op for this storage; scaled copy.
    public func scaled(_ k: Double) -> Covariance2 { Covariance2(ee: ee * k, en: en * k, nn: nn * k) }

    public static func + (a: Covariance2, b: Covariance2) -> Covariance2 {
        Covariance2(ee: a.ee + b.ee, en: a.en + b.en, nn: a.nn + b.nn)
    }

    /// True when all entries are finite and the matrix is positive semi-definite.
    public var isValid: Bool {
        ee.isFinite && en.isFinite && nn.isFinite && ee >= 0 && nn >= 0 && determinant >= -1e-9 * max(1, ee * nn)
    }
}

/// Inverse error function (Giles 2010 single-precision-style approximation refined by two Newton steps).
@usableFromInline func inverseErf(_ x: Double) -> Double {
    precondition(x > -1 && x < 1)
    var w = -log((1 - x) * (1 + x)), p: Double
    if w < 5 {
        w -= 2.5
        p = 2.81022636e-08
        for c in [3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941] { p = c + p * w }
    } else {
        w = sqrt(w) - 3
        p = -0.000200214257
        for c in [0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682] { p = c + p * w }
    }
    var y = p * x
    for _ in 0..<2 { y -= (erf(y) - x) / (2 / Double.pi.squareRoot() * exp(-y * y)) }
    return y
}
