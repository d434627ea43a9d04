import Foundation

/// An ellipsoid of revolution: semi-major axis `a` (m) and flattening `f`.
public struct Ellipsoid: Sendable, Equatable {
    public var a: Double
    public var f: Double
    public init(a: Double, f: Double) { self.a = a; self.f = f }
    public static let wgs84 = Ellipsoid(a: WGS84.a, f: WGS84.f)
    /// Semi-minor axis b = a(1 − f), m.
    public var b: Double { a * (1 - f) }
}

/// Result of the inverse geodesic problem.
public struct GeodesicInverse: Sendable, Equatable {
    /// Length of the shortest geodesic, m (on the ellipsoid surface; heights are ignored).
    public var distance: Double
    /// Forward azimuth at the first point, degrees clockwise from true north, (−180, 180].
    public var azimuth1: Double
    /// Forward azimuth at the second point (direction of travel there), degrees, (−180, 180].
    public var azimuth2: Double
}

/// Result of the direct geodesic problem.
public struct GeodesicDirect: Sendable, Equatable {
    /// End point (height copied from the start point), longitude in [−180, 180).
    public var destination: Geodetic
    /// Forward azimuth at the end point, degrees, (−180, 180].
    public var azimuth2: Double
}

/// Geodesics on an ellipsoid of revolution (WGS84 by default): distance and azimuths
/// between two points (inverse problem) and the end point of a geodesic (direct problem).
///
/// **Method.** Vincenty (1975), "Direct and inverse solutions of geodesics on the ellipsoid
/// with application of nested equations", Survey Review 23(176), on the auxiliary sphere
/// with reduced latitude tan β = (1 − f) tan φ:
///
/// 1. Direct: σ from s = bA(σ − Δσ) by fixed-point iteration, then φ₂, λ₂, α₂ from the
///    spherical triangle, λ = ω − (1 − C) f sin α₀ [σ + C sin σ (cos 2σₘ + C cos σ (−1 + 2 cos² 2σₘ))]
///    with u² = e′² cos² α₀, A = 1 + u²/16384 (4096 + u²(−768 + u²(320 − 175u²))),
///    B = u²/1024 (256 + u²(−128 + u²(74 − 47u²))), C = f/16 cos² α₀ (4 + f(4 − 3 cos² α₀)),
///    Δσ = B sin σ (cos 2σₘ + B/4 (cos σ (−1 + 2 cos² 2σₘ) − B/6 cos 2σₘ (−3 + 4 sin² σ)(−3 + 4 cos² 2σₘ))).
/// 2. Inverse: Vincenty's iteration on the auxiliary-sphere longitude ω (his λ) until
///    |Δω| < 10⁻¹³ rad.
/// 3. **Antipodal fallback.** Vincenty's iteration does not converge for nearly antipodal
///    points (and has no equatorial solution when |λ₁₂| > (1 − f)π). Then, following the
///    formulation of Karney (2013), "Algorithms for geodesics", J. Geodesy 87, §4: the
///    problem is normalised to β₁ ≤ 0, |β₂| ≤ |β₁|, 0 ≤ λ₁₂ ≤ π; for a trial azimuth α₁ the
///    geodesic is followed to the first northward crossing of β₂ (cos α₂ =
///    +√(cos²α₁ cos²β₁ + cos²β₂ − cos²β₁) / cos β₂), which gives σ₁, σ₂, ω₁₂ and, with the
///    same series as step 1, λ₁₂(α₁). λ₁₂ increases monotonically from 0 to π on
///    α₁ ∈ [0, π], so bisection to machine precision finds α₁; s follows from step 1.
///
/// **Error bounds.** The series are Vincenty's, truncated at O(f³) with small
/// coefficients: distance errors ≲ 0.1 mm for any pair of points on WGS84, azimuth errors
/// ≲ 10⁻¹⁰ rad. Tests check GeographicLib's published reference geodesics (GeodTest)
/// to 0.1 mm, and Karney (2013) tables 2–6 including the nearly antipodal example.
///
/// **Degenerate cases.** Coincident points give distance 0 and azimuth 0 (north). A pole as
/// an end point or λ₁₂ ∈ {0, π} gives a meridian. Non-finite input or |φ| > 90° gives nil.
public struct Geodesic: Sendable, Equatable {
    public let ellipsoid: Ellipsoid
    private let f: Double, b: Double, ep2: Double

    public init(_ ellipsoid: Ellipsoid = .wgs84) {
        self.ellipsoid = ellipsoid
        f = ellipsoid.f
        b = ellipsoid.b
        ep2 = (ellipsoid.a * ellipsoid.a - b * b) / (b * b)
    }

    public static let wgs84 = Geodesic(.wgs84)

    // MARK: series (Vincenty 1975)

    @inline(__always) private func seriesA(_ u2: Double) -> Double { 1 + u2 / 16384 * (4096 + u2 * (-768 + u2 * (320 - 175 * u2))) }
    @inline(__always) private func seriesB(_ u2: Double) -> Double { u2 / 1024 * (256 + u2 * (-128 + u2 * (74 - 47 * u2))) }
    @inline(__always) private func seriesC(_ cos2a0: Double) -> Double { f / 16 * cos2a0 * (4 + f * (4 - 3 * cos2a0)) }

    /// Δσ for arc σ with midpoint 2σₘ.
    @inline(__always) private func deltaSigma(_ bB: Double, _ sigma: Double, _ cos2sm: Double) -> Double {
        let s = sin(sigma), c = cos(sigma)
        return bB * s * (cos2sm + bB / 4 * (c * (-1 + 2 * cos2sm * cos2sm)
                                          - bB / 6 * cos2sm * (-3 + 4 * s * s) * (-3 + 4 * cos2sm * cos2sm)))
    }

    /// λ − ω: the ellipsoidal longitude correction for arc σ with midpoint 2σₘ.
    @inline(__always) private func lambdaCorrection(_ sinA0: Double, _ cos2a0: Double, _ sigma: Double, _ cos2sm: Double) -> Double {
        let c = seriesC(cos2a0)
        return (1 - c) * f * sinA0 * (sigma + c * sin(sigma) * (cos2sm + c * cos(sigma) * (-1 + 2 * cos2sm * cos2sm)))
    }

    /// Reduced latitude as (sin β, cos β), normalised.
    @inline(__always) private func reduced(_ phiDeg: Double) -> (Double, Double) {
        let phi = phiDeg * .pi / 180
        var s = (1 - f) * sin(phi), c = cos(phi)
        if abs(phiDeg) == 90 { c = 0 }
        let h = (s * s + c * c).squareRoot()
        s /= h; c /= h
        return (s, c)
    }

    // MARK: inverse

    /// Distance and azimuths between two points (heights ignored). Nil for invalid input.
    public func inverse(_ p1: Geodetic, _ p2: Geodetic) -> GeodesicInverse? {
        let lat1 = p1.latitude, lat2 = p2.latitude
        guard lat1.isFinite, lat2.isFinite, p1.longitude.isFinite, p2.longitude.isFinite,
              abs(lat1) <= 90, abs(lat2) <= 90 else { return nil }
        let lon12 = remainder(p2.longitude - p1.longitude, 360)  // [−180, 180]
        if lat1 == lat2 && (lon12 == 0 || abs(lat1) == 90) { return GeodesicInverse(distance: 0, azimuth1: 0, azimuth2: 0) }
        if abs(lat1) == 90 || abs(lat2) == 90 || lon12 == 0 || abs(lon12) == 180 {
            return meridian(lat1, lat2, lon12)
        }
        if let r = vincentyInverse(lat1, lat2, lon12 * .pi / 180) { return r }
        return antipodalInverse(lat1, lat2, lon12)
    }

    /// Distance only, m (nil for invalid input).
    public func distance(_ p1: Geodetic, _ p2: Geodetic) -> Double? { inverse(p1, p2)?.distance }

    /// Vincenty's iteration; nil when it does not converge (nearly antipodal points).
    func vincentyInverse(_ lat1: Double, _ lat2: Double, _ bigL: Double) -> GeodesicInverse? {
        let (sU1, cU1) = reduced(lat1), (sU2, cU2) = reduced(lat2)
        var lambda = bigL
        var sinSigma = 0.0, cosSigma = 0.0, sigma = 0.0, cos2a0 = 0.0, cos2sm = 0.0, sinA0 = 0.0
        var converged = false
        for _ in 0..<200 {
            let sl = sin(lambda), cl = cos(lambda)
            let t1 = cU2 * sl, t2 = cU1 * sU2 - sU1 * cU2 * cl
            sinSigma = (t1 * t1 + t2 * t2).squareRoot()
            guard sinSigma > 0 else { return nil }
            cosSigma = sU1 * sU2 + cU1 * cU2 * cl
            sigma = atan2(sinSigma, cosSigma)
            sinA0 = cU1 * cU2 * sl / sinSigma
            cos2a0 = 1 - sinA0 * sinA0
            cos2sm = cos2a0 != 0 ? cosSigma - 2 * sU1 * sU2 / cos2a0 : 0  // equatorial line: cos2a0 = 0
            let next = bigL + lambdaCorrection(sinA0, cos2a0, sigma, cos2sm)
            if abs(next) > .pi { return nil }
            if abs(next - lambda) < 1e-13 { lambda = next; converged = true; break }
            lambda = next
        }
        guard converged else { return nil }
        // Equatorial points farther apart than (1 − f)π: the equator is not the shortest line.
        if cos2a0 == 0 && abs(bigL) > (1 - f) * .pi { return nil }
        let u2 = cos2a0 * ep2
        let s = b * seriesA(u2) * (sigma - deltaSigma(seriesB(u2), sigma, cos2sm))
        let sl = sin(lambda), cl = cos(lambda)
        let a1 = atan2(cU2 * sl, cU1 * sU2 - sU1 * cU2 * cl)
        let a2 = atan2(cU1 * sl, -sU1 * cU2 + cU1 * sU2 * cl)
        return GeodesicInverse(distance: s, azimuth1: degrees(a1), azimuth2: degrees(a2))
    }

    /// Meridional geodesic (λ₁₂ ∈ {0, ±180°} or a pole): distance by the meridian arc.
    private func meridian(_ lat1: Double, _ lat2: Double, _ lon12: Double) -> GeodesicInverse {
        let (sU1, cU1) = reduced(lat1), (sU2, cU2) = reduced(lat2)
        if abs(lon12) == 180 && abs(lat1) != 90 && abs(lat2) != 90 {
            // Over the nearer pole: σ from β₁ up to the pole and down to β₂ on the other side.
            let north = lat1 + lat2 >= 0
            let beta1 = atan2(sU1, cU1), beta2 = atan2(sU2, cU2)
            let pole = north ? Double.pi / 2 : -Double.pi / 2
            let sigma = abs(pole - beta1) + abs(pole - beta2)
            let s = meridianArc(from: beta1, by: north ? sigma : -sigma)
            let a1 = north ? 0.0 : 180.0
            return GeodesicInverse(distance: abs(s), azimuth1: a1, azimuth2: north ? 180 : 0)
        }
        // Same meridian (or through a pole with an arbitrary longitude difference).
        let beta1 = atan2(sU1, cU1), beta2 = atan2(sU2, cU2)
        let s = meridianArc(from: beta1, by: beta2 - beta1)
        let northward = lat2 > lat1
        var a1 = northward ? 0.0 : 180.0
        var a2 = a1
        if abs(lat1) == 90 { a1 = lat1 > 0 ? 180 - lon12 : lon12 }   // leaving a pole along longitude lon2
        if abs(lat2) == 90 { a2 = lat2 > 0 ? 0 : 180 }
        return GeodesicInverse(distance: abs(s), azimuth1: normalize(a1), azimuth2: normalize(a2))
    }

    /// Meridian arc length for reduced latitude going from β₁ by Δσ (α₀ = 0: u² = e′²).
    private func meridianArc(from beta1: Double, by dSigma: Double) -> Double {
        let u2 = ep2
        let sigma = abs(dSigma)
        let s1 = dSigma >= 0 ? beta1 : -beta1  // arc from the equator along the direction of travel
        let cos2sm = cos(2 * s1 + sigma)
        return b * seriesA(u2) * (sigma - deltaSigma(seriesB(u2), sigma, cos2sm)) * (dSigma >= 0 ? 1 : -1)
    }

    /// Karney-normalised bisection on α₁ (see the type's documentation, step 3).
    func antipodalInverse(_ lat1in: Double, _ lat2in: Double, _ lon12in: Double) -> GeodesicInverse? {
        // Normalise: swap so |φ₁| ≥ |φ₂|, reflect so φ₁ ≤ 0 and λ₁₂ ≥ 0.
        var lat1 = lat1in, lat2 = lat2in, lon12 = lon12in
        let swapped = abs(lat1) < abs(lat2)
        if swapped { swap(&lat1, &lat2); lon12 = -lon12 }
        let flipLat = lat1 > 0
        if flipLat { lat1 = -lat1; lat2 = -lat2 }
        let flipLon = lon12 < 0
        if flipLon { lon12 = -lon12 }
        let bigL = lon12 * .pi / 180

        var (sb1, cb1) = reduced(lat1)
        let (sb2, cb2) = reduced(lat2)
        sb1 = -abs(sb1)  // −0 on the equator: σ₁ = −π when heading south
        cb1 = abs(cb1)

        struct Trial { var lambda: Double; var sigma1: Double; var sigma2: Double; var sinA0: Double; var cos2a0: Double; var sa2: Double; var ca2: Double }
        func trial(_ alpha1: Double) -> Trial {
            let sa1 = sin(alpha1), ca1 = cos(alpha1)
            let sinA0 = sa1 * cb1
            let cosA0 = (ca1 * ca1 + sa1 * sa1 * sb1 * sb1).squareRoot()
            let sigma1 = atan2(sb1, ca1 * cb1)
            let omega1 = atan2(sinA0 * sb1, ca1 * cb1)
            let ca2cb2 = max(0, ca1 * ca1 * cb1 * cb1 + (cb2 * cb2 - cb1 * cb1)).squareRoot()  // cos α₂ cos β₂ ≥ 0
            let sigma2 = atan2(sb2, ca2cb2)
            let omega2 = atan2(sinA0 * sb2, ca2cb2)
            var sigma12 = sigma2 - sigma1
            var omega12 = omega2 - omega1
            if sigma12 < 0 { sigma12 += 2 * .pi }
            if omega12 < 0 { omega12 += 2 * .pi }
            let cos2a0 = cosA0 * cosA0
            let lambda = omega12 - lambdaCorrection(sinA0, cos2a0, sigma12, cos(sigma1 + sigma2))
            let sa2 = cb2 > 0 ? sinA0 / cb2 : 0, ca2 = cb2 > 0 ? ca2cb2 / cb2 : 1
            return Trial(lambda: lambda, sigma1: sigma1, sigma2: sigma1 + sigma12, sinA0: sinA0, cos2a0: cos2a0, sa2: sa2, ca2: ca2)
        }
        var lo = 0.0, hi = Double.pi
        for _ in 0..<200 {
            let mid = 0.5 * (lo + hi)
            if mid <= lo || mid >= hi { break }
            if trial(mid).lambda < bigL { lo = mid } else { hi = mid }
        }
        let alpha1 = 0.5 * (lo + hi)
        let t = trial(alpha1)
        let sigma = t.sigma2 - t.sigma1
        let u2 = t.cos2a0 * ep2
        let s = b * seriesA(u2) * (sigma - deltaSigma(seriesB(u2), sigma, cos(t.sigma1 + t.sigma2)))
        guard s.isFinite else { return nil }
        var a1 = alpha1, a2 = atan2(t.sa2, t.ca2)
        // Undo the normalisation: reflections first, then the swap (reverse direction).
        if flipLon { a1 = -a1; a2 = -a2 }
        if flipLat { a1 = .pi - a1; a2 = .pi - a2 }
        if swapped { let t1 = a1; a1 = a2 + .pi; a2 = t1 + .pi }
        return GeodesicInverse(distance: s, azimuth1: degrees(a1), azimuth2: degrees(a2))
    }

    // MARK: direct

    /// End point after `distance` m from `start` with initial azimuth `azimuth` (degrees
    /// clockwise from north). Nil for invalid input.
    public func direct(from start: Geodetic, azimuth: Double, distance s: Double) -> GeodesicDirect? {
        guard start.latitude.isFinite, start.longitude.isFinite, azimuth.isFinite, s.isFinite, abs(start.latitude) <= 90 else { return nil }
        let alpha1 = azimuth * .pi / 180
        let sa1 = sin(alpha1), ca1 = cos(alpha1)
        let (sU1, cU1) = reduced(start.latitude)
        let sigma1 = atan2(sU1, cU1 * ca1)  // tan σ₁ = tan U₁ / cos α₁
        let sinA0 = cU1 * sa1
        let cos2a0 = 1 - sinA0 * sinA0
        let u2 = cos2a0 * ep2
        let bigA = seriesA(u2), bigB = seriesB(u2)
        var sigma = s / (b * bigA)
        var cos2sm = 0.0
        for _ in 0..<100 {
            cos2sm = cos(2 * sigma1 + sigma)
            let next = s / (b * bigA) + deltaSigma(bigB, sigma, cos2sm)
            if abs(next - sigma) < 1e-14 { sigma = next; break }
            sigma = next
        }
        cos2sm = cos(2 * sigma1 + sigma)
        let ss = sin(sigma), cs = cos(sigma)
        let tmp = sU1 * ss - cU1 * cs * ca1
        let lat2 = atan2(sU1 * cs + cU1 * ss * ca1, (1 - f) * (sinA0 * sinA0 + tmp * tmp).squareRoot())
        let omega = atan2(ss * sa1, cU1 * cs - sU1 * ss * ca1)
        let lambda = omega - lambdaCorrection(sinA0, cos2a0, sigma, cos2sm)
        let a2 = atan2(sinA0, -tmp)
        var lon2 = remainder(start.longitude + lambda * 180 / .pi, 360)
        if lon2 == 180 { lon2 = -180 }
        return GeodesicDirect(destination: Geodetic(latitude: lat2 * 180 / .pi, longitude: lon2, height: start.height),
                              azimuth2: degrees(a2))
    }

    // MARK: helpers

    private func degrees(_ r: Double) -> Double { normalize(r * 180 / .pi) }

    /// Angle in (−180, 180].
    private func normalize(_ d: Double) -> Double {
        var x = remainder(d, 360)
        if x == -180 { x = 180 }
        return x
    }
}
