import Foundation

/// Range and bearing from the user to a known landmark (CamLoc "user from landmark",
/// `docs/models.md` §5.1), for tight coupling.
///
/// z = [ρ, ψ] (m, rad clockwise from true north, the bearing **from the user to the
/// landmark**), h(p) = [‖l − p‖, atan2(l_E − E, l_N − N)],
/// H = [[−(l_E − E)/ρ, −(l_N − N)/ρ], [−(l_N − N)/ρ², (l_E − E)/ρ²]],
/// R = diag(σ_ρ², σ_ψ²) (+ the landmark's own covariance projected: Σ_l enters as
/// H_l Σ_l H_lᵀ with H_l = −H). The bearing innovation is wrapped to (−π, π].
/// Degenerate: at the landmark (ρ → 0) the bearing is undefined; H is clamped at ρ = 1 mm.
public struct RangeBearingMeasurement: MeasurementModel {
    public let source: Source
    public let time: Double
    public let z: [Double]
    public let noise: Matrix
    public let landmark: SIMD2<Double>

    public init(time: Double, landmark: SIMD2<Double>, range: Double, bearing: Double, sigmaRange: Double,
                sigmaBearing: Double, landmarkCovariance: Covariance2 = .zero, source: Source = .camloc) {
        self.source = source; self.time = time; self.landmark = landmark
        z = [range, Angle.wrap(bearing)]
        var r = Matrix.diagonal([sigmaRange * sigmaRange, sigmaBearing * sigmaBearing])
        if landmarkCovariance != .zero {
            // Landmark uncertainty through H_l = ∂h/∂l = −∂h/∂p at the measured geometry.
            let p = landmark - range * Angle.unit(bearing)
            let h = Self.jac(p, landmark)
            let s = Matrix([[landmarkCovariance.ee, landmarkCovariance.en], [landmarkCovariance.en, landmarkCovariance.nn]])
            r = r + (h * s * h.transposed)
        }
        noise = r.symmetrized
    }

    public func predict(_ p: SIMD2<Double>) -> [Double] {
        let d = landmark - p
        return [(d * d).sum().squareRoot(), atan2(d.x, d.y)]
    }

    public func jacobian(_ p: SIMD2<Double>) -> Matrix { Self.jac(p, landmark) }

    static func jac(_ p: SIMD2<Double>, _ l: SIMD2<Double>) -> Matrix {
        let d = l - p
        let r2 = max((d * d).sum(), 1e-6), r = r2.squareRoot()
        return Matrix([[-d.x / r, -d.y / r], [-d.y / r2, d.x / r2]])
    }

    public func innovation(_ h: [Double]) -> [Double] { [z[0] - h[0], Angle.wrap(z[1] - h[1])] }
    public func isAngleComponent(_ i: Int) -> Bool { i == 1 }
}
