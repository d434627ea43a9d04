import Foundation

/// An area-uniform annular sector around a cell site: ranges r ∈ [r_lo, r_hi] (horizontal,
/// m) and azimuths within ±W/2 of the boresight α (clockwise from north). Its first two
/// moments give the Cell-ID and Cell-ID + TA fixes (`docs/models.md` §1.2).
///
/// Derivation [D] (density ∝ r on the sector):
/// 1. E[r^k] = 2(r_hi^{k+2} − r_lo^{k+2}) / ((k+2)(r_hi² − r_lo²)).
/// 2. Along-boresight a = r cos φ, across b = r sin φ, φ ~ U(−W/2, W/2) independent of r:
///    E[a] = E[r]·sin(W/2)/(W/2); E[a²] = E[r²]·½(1 + sin W/W); E[b²] = E[r²]·½(1 − sin W/W);
///    E[b] = E[ab] = 0.
/// 3. p̂ = site + E[a]·u(α); Σ = Var[a]·u uᵀ + E[b²]·u⊥ u⊥ᵀ, u = [sin α, cos α],
///    u⊥ = [cos α, −sin α]. Omni (W = 2π): p̂ = site, Σ = E[r²]/2·I.
///
/// Golden values (GSM TA = 2, β = 0, W = 120°, r ∈ [830.19, 1383.66] m): E[a] = 934.49 m,
/// σ_a = 216.37 m, σ_b = 617.88 m. GSM TA = 0 omni (r ∈ [0, 276.73] m): E[r] = 184.49 m,
/// σ = 138.37 m per axis.
///
/// Degenerate cases: r_hi = r_lo (a circle) uses the limit E[r^k] = r^k; r_hi = 0 is a point
/// with zero covariance (callers add a floor).
public struct AnnulusSector: Sendable, Equatable {
    public var innerRadius: Double
    public var outerRadius: Double
    /// Sector width W, radians (2π for omni).
    public var width: Double
    /// Boresight azimuth α, radians clockwise from north.
    public var boresight: Double

    public init(innerRadius: Double, outerRadius: Double, width: Double = 2 * .pi, boresight: Double = 0) {
        self.innerRadius = max(0, min(innerRadius, outerRadius))
        self.outerRadius = max(0, outerRadius)
        self.width = min(max(width, 0), 2 * .pi)
        self.boresight = boresight
    }

    public var isOmni: Bool { width >= 2 * .pi - 1e-12 }

    /// E[r^k] for the area-uniform density.
    public func radialMoment(_ k: Int) -> Double {
        let lo = innerRadius, hi = outerRadius
        let den = hi * hi - lo * lo
        if den <= 1e-12 * max(1, hi * hi) { return pow(hi, Double(k)) }
        let kk = Double(k + 2)
        return 2 * (pow(hi, kk) - pow(lo, kk)) / (kk * den)
    }

    /// sin(x)/x with the x → 0 limit.
    @inlinable static func sinc(_ x: Double) -> Double { abs(x) < 1e-8 ? 1 - x * x / 6 : sin(x) / x }

    /// E[a], the mean offset along the boresight, m.
    public var meanAlong: Double { radialMoment(1) * Self.sinc(width / 2) }
    /// Var[a] = E[a²] − E[a]², m².
    public var varianceAlong: Double {
        max(0, radialMoment(2) * 0.5 * (1 + Self.sinc(width)) - meanAlong * meanAlong)
    }
    /// E[b²], the across-boresight variance, m².
    public var varianceAcross: Double { max(0, radialMoment(2) * 0.5 * (1 - Self.sinc(width))) }

    /// Mean position relative to the site (E, N), m.
    public var meanOffset: SIMD2<Double> { isOmni ? .zero : meanAlong * Angle.unit(boresight) }

    /// Covariance of the position, m².
    public var covariance: Covariance2 {
        if isOmni { return Covariance2(sigma: (radialMoment(2) / 2).squareRoot()) }
        let u = Angle.unit(boresight), v = Angle.perpendicular(boresight)
        let va = varianceAlong, vb = varianceAcross
        return Covariance2(ee: va * u.x * u.x + vb * v.x * v.x,
                           en: va * u.x * u.y + vb * v.x * v.y,
                           nn: va * u.y * u.y + vb * v.y * v.y)
    }
}
