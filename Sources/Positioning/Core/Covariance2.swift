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
        let m = 0.5 * (ee + nn)
        let d = sqrt(max(0, 0.25 * (ee - nn) * (ee - nn) + en * en))
        let l1 = m + d, l2 = max(0, m - d)
        // Eigenvector of l1 in (E, N): (en, l1 - ee) or (l1 - nn, en)
        var vx = l1 - nn, vy = en
        if abs(vx) + abs(vy) < 1e-300 { vx = ee >= nn ? 1 : 0; vy = ee >= nn ? 0 : 1 }
        let az = atan2(vx, vy)  // azimuth of (E, N) vector
        return (sqrt(l1), sqrt(l2), az)
    }

    /// Scale k such that the ellipse eᵀ Σ⁻¹ e ≤ k² holds probability `p` for a
    /// Gaussian: k = √(−2 ln(1 − p)) (χ² with 2 degrees of freedom). p = 0.95 → 2.4477.
    public static func ellipseScale(probability p: Double) -> Double { sqrt(-2 * log(1 - p)) }

    /// Radius (m) of the circle centred on the estimate that holds probability `p`
    /// under this Gaussian, by bisection on the exact circular-probability integral
    /// (numerical integration over the angle; exact for circular Σ: σ·√(−2 ln(1−p))).
    public func circularRadius(probability p: Double = 0.95) -> Double {
        let ax = principalAxes
        let s1 = ax.major, s2 = ax.minor
        if s1 <= 0 { return 0 }
        if s2 <= 1e-6 * s1 {
            // Degenerate: 1-D Gaussian; radius r with P(|x| < r) = p.
            return s1 * sqrt(2) * inverseErf(p)
        }
        func prob(_ r: Double) -> Double {
            // P(x²/s1²... ) : integrate over angle θ of the radial CDF of a 2-D Gaussian.
            // P(‖x‖ ≤ r) = (1/2π)∫₀^{2π} (1 − exp(−r² q(θ)/2)) dθ · s1 s2-normalised form:
            // in polar coordinates, density in whitened space; use the formula
            // P = (1/2π) ∫ (1 − exp(−r² g(θ)/2)) / (s1 s2 g(θ)) dθ with g(θ) = cos²θ/s1² + sin²θ/s2².
            let n = 256
            var acc = 0.0
            for i in 0..<n {
                let th = (Double(i) + 0.5) * 2 * Double.pi / Double(n)
                let g = cos(th) * cos(th) / (s1 * s1) + sin(th) * sin(th) / (s2 * s2)
                acc += (1 - exp(-r * r * g / 2)) / (s1 * s2 * g)
            }
            return acc / Double(n)
        }
        var lo = 0.0, hi = 4 * s1
        var doublings = 0
        while prob(hi) < p && doublings < 64 { hi *= 2; doublings += 1 }   // bounded: rounding can keep prob just below p
        for _ in 0..<60 {
            let mid = 0.5 * (lo + hi)
            if prob(mid) < p { lo = mid } else { hi = mid }
        }
        return 0.5 * (lo + hi)
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
