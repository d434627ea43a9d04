import Foundation

/// Two-photo object localisation geometry (`docs/models.md` §5.1–5.2).
///
/// Pinhole: h = f·H/Z. Shot 1 at depth Z1, the phone moves d (m, signed, + towards the
/// object) along the optical axis, shot 2 at Z2 = Z1 − d; with r = h2/h1 = Z1/Z2:
///
///     Z1 = d·r/(r − 1) = d·h2/(h2 − h1),   Z2 = d/(r − 1) = d·h1/(h2 − h1).
///
/// f and H cancel. Thin lens (object distance u, 1/f = 1/u + 1/v): u2 = f + d·h1/(h2 − h1)
/// (the correction is the focal length f in metres, 4–7 mm on phones).
///
/// Bearing and position from the **second** (closer) shot, camera level:
/// α = (x − c_x)/f_px, ψ = ψ_cam + atan α (ψ_cam = magnetic azimuth + declination, true),
/// horizontal range ρ = Z2·√(1 + α²) (the ray's horizontal length at depth Z2),
/// p_obj = p_user + ρ·u(ψ), u(ψ) = [sin ψ, cos ψ].
///
/// Covariance: Σ_obj = Σ_user + J Σ_θ Jᵀ with θ = [h1, h2, d, ψ_cam, x] and
/// ∂Z2/∂h1 = d·h2/Δh², ∂Z2/∂h2 = −d·h1/Δh², ∂Z2/∂d = h1/Δh (Δh = h2 − h1),
/// ∂ρ/∂x = Z2·α/(√(1+α²)·f), ∂ψ/∂x = 1/(f(1 + α²)), ∂ψ/∂ψ_cam = 1,
/// ∂p/∂ρ = u(ψ), ∂p/∂ψ = ρ·u⊥(ψ) = ρ·[cos ψ, −sin ψ].
/// Relative depth error (§5.2): σ_Z/Z ≈ √((σ_d/d)² + (σ_r/(r − 1))²), growing like Z³ for a
/// fixed object: keep d/Z ≳ 5–10 % and h ≳ 100 px.
public struct CamLocGeometry: Sendable, Equatable {
    /// Image heights of the object in shots 1 and 2, px.
    public var h1: Double, h2: Double
    /// Displacement along the optical axis between the shots, m (+ towards the object).
    public var d: Double
    /// Camera optical-axis azimuth at shot 2, radians clockwise from true north.
    public var cameraAzimuth: Double
    /// Object centre column in shot 2 and the principal point column, px; focal length, px.
    public var x: Double, cx: Double, focal: Double
    /// Thin-lens focal length in metres (0 = pinhole).
    public var lensFocalMeters: Double

    public init(h1: Double, h2: Double, d: Double, cameraAzimuth: Double, x: Double, cx: Double, focal: Double,
                lensFocalMeters: Double = 0) {
        self.h1 = h1; self.h2 = h2; self.d = d; self.cameraAzimuth = cameraAzimuth
        self.x = x; self.cx = cx; self.focal = focal; self.lensFocalMeters = lensFocalMeters
    }

    public var ratio: Double { h2 / h1 }
    /// Depth at shot 1 and shot 2 along the optical axis, m.
    public var depth1: Double { d * h2 / (h2 - h1) + lensFocalMeters }
    public var depth2: Double { d * h1 / (h2 - h1) + lensFocalMeters }
    /// Pixel offset ratio α = (x − c_x)/f.
    public var alpha: Double { (x - cx) / focal }
    /// Horizontal range from the second shot to the object, m.
    public var range: Double { depth2 * (1 + alpha * alpha).squareRoot() }
    /// Object azimuth from the second shot, radians (true north, clockwise), wrapped.
    public var bearing: Double { Angle.wrap(cameraAzimuth + atan(alpha)) }

    /// Offset of the object from the user at shot 2 (E, N), m.
    public var offset: SIMD2<Double> { range * Angle.unit(bearing) }

    /// ∂offset/∂θ, θ = [h1, h2, d, ψ_cam, x] (2×5).
    public var jacobian: Matrix {
        let dh = h2 - h1, a = alpha, k = (1 + a * a).squareRoot()
        let z2 = depth2, rho = range, psi = bearing
        let u = Angle.unit(psi), up = Angle.perpendicular(psi)
        let dRho = [d * h2 / (dh * dh) * k, -d * h1 / (dh * dh) * k, h1 / dh * k, 0, z2 * a / (k * focal)]
        let dPsi = [0, 0, 0, 1, 1 / (focal * (1 + a * a))]
        var j = Matrix(rows: 2, cols: 5)
        for c in 0..<5 {
            j[0, c] = u.x * dRho[c] + rho * up.x * dPsi[c]
            j[1, c] = u.y * dRho[c] + rho * up.y * dPsi[c]
        }
        return j
    }

    /// J Σ_θ Jᵀ for independent θ with the given σ's (px, px, m, rad, px).
    public func offsetCovariance(sigmaH: Double, sigmaD: Double, sigmaAzimuth: Double, sigmaX: Double) -> Covariance2 {
        let j = jacobian
        let v = [sigmaH * sigmaH, sigmaH * sigmaH, sigmaD * sigmaD, sigmaAzimuth * sigmaAzimuth, sigmaX * sigmaX]
        var ee = 0.0, en = 0.0, nn = 0.0
        for c in 0..<5 { ee += j[0, c] * j[0, c] * v[c]; en += j[0, c] * j[1, c] * v[c]; nn += j[1, c] * j[1, c] * v[c] }
        return Covariance2(ee: ee, en: en, nn: nn)
    }

    /// Relative σ of the horizontal range (first-order), for reports.
    public func relativeRangeSigma(sigmaH: Double, sigmaD: Double) -> Double {
        let dh = h2 - h1, k = (1 + alpha * alpha).squareRoot()
        let g = [d * h2 / (dh * dh) * k, -d * h1 / (dh * dh) * k, h1 / dh * k]
        let v = g[0] * g[0] * sigmaH * sigmaH + g[1] * g[1] * sigmaH * sigmaH + g[2] * g[2] * sigmaD * sigmaD
        return v.squareRoot() / abs(range)
    }
}
