import Foundation

/// A located object with the quantities behind it.
public struct CamLocSolution: Sendable {
    /// Object position fix (source `camloc`, subject "object:<id>"), Σ = Σ_user + JΣ_θJᵀ.
    public var fix: Fix
    public var geometry: CamLocGeometry
    /// Horizontal range (m) and true bearing (rad) from the user at shot 2 to the object.
    public var range: Double
    public var bearing: Double
    /// First-order relative σ of the range (pixels + displacement).
    public var relativeRangeSigma: Double
    /// User position at shot 2 used, and the displacement between shots (ENU m).
    public var user: Fix
    public var displacement: SIMD3<Double>
}

/// CamLoc: locate a reported object from two photos taken while stepping towards it
/// (`docs/models.md` §5; CamDist/OPS-style geometry, derived in `CamLocGeometry`).
///
/// Steps: camera azimuths ψ_k = magnetic azimuth + declination; viewing direction u_v =
/// circular mean of the two; d = D_h·u_v (D_h: horizontal displacement); Z2 = d·h1/(h2 − h1);
/// bearing and range from shot 2; p_obj = p_user + ρ·u(ψ).
///
/// Typed failures: ‖D_h‖ < `minDisplacement` → `zeroDisplacement`; |d| < `minAxialFraction`·‖D_h‖
/// → `lateralOnlyMotion`; |r − 1| < `minRatioExcess` or |h2 − h1| < `minPixelChange` →
/// `scaleRatioNearOne`; Z2 ≤ 0 (image shrank while approaching) → `inconsistentMeasurements`;
/// no azimuth → `noHeading`.
public struct CamLocEstimator: Sendable {
    /// Pixel noise of the object height and centre, px.
    public var sigmaPixels: Double
    /// Compass (azimuth) noise, degrees.
    public var sigmaHeadingDegrees: Double
    public var minRatioExcess: Double
    public var minPixelChange: Double
    public var minDisplacement: Double
    public var minAxialFraction: Double
    /// Thin-lens focal length in metres (0 = pinhole).
    public var lensFocalMeters: Double

    public init(sigmaPixels: Double = 1, sigmaHeadingDegrees: Double = 5, minRatioExcess: Double = 0.01,
                minPixelChange: Double = 2, minDisplacement: Double = 0.1, minAxialFraction: Double = 0.5,
                lensFocalMeters: Double = 0) {
        self.sigmaPixels = sigmaPixels; self.sigmaHeadingDegrees = sigmaHeadingDegrees
        self.minRatioExcess = minRatioExcess; self.minPixelChange = minPixelChange
        self.minDisplacement = minDisplacement; self.minAxialFraction = minAxialFraction
        self.lensFocalMeters = lensFocalMeters
    }

    /// - Parameters:
    ///   - first, second: the two photos (time order).
    ///   - displacement: phone displacement between the shots, ENU m, with σ (m, along-axis).
    ///   - user: the user's position at the second shot.
    ///   - declination: degrees east (ψ_true = ψ_mag + declination).
    ///   - cameraAzimuths: true azimuths (rad) to use when the photos carry none (e.g. from attitude).
    public func estimate(first: PhotoObservation, second: PhotoObservation, displacement: SIMD3<Double>,
                         displacementSigma: Double, user: Fix, declination: Double,
                         cameraAzimuths: (Double, Double)? = nil, time: Double) -> Result<CamLocSolution, EstimationFailure> {
        let psi1: Double, psi2: Double
        if let a1 = first.cameraAzimuthMagnetic, let a2 = second.cameraAzimuthMagnetic {
            psi1 = Angle.radians(a1 + declination); psi2 = Angle.radians(a2 + declination)
        } else if let c = cameraAzimuths {
            (psi1, psi2) = c
        } else {
            return .failure(.noHeading)
        }
        guard [first.objectHeight, second.objectHeight, second.objectX, second.focalLength, psi1, psi2].allSatisfy({ $0.isFinite }),
              first.objectHeight > 0, second.objectHeight > 0, second.focalLength > 0 else {
            return .failure(.inconsistentMeasurements("non-finite or non-positive photo measurements"))
        }
        let dh = SIMD2(displacement.x, displacement.y)
        let dn = (dh * dh).sum().squareRoot()
        guard dn.isFinite else { return .failure(.inconsistentMeasurements("non-finite displacement")) }
        guard dn >= minDisplacement else { return .failure(.zeroDisplacement) }
        let axis = Angle.unit(atan2(sin(psi1) + sin(psi2), cos(psi1) + cos(psi2)))
        let d = (dh * axis).sum()
        guard abs(d) >= minAxialFraction * dn else { return .failure(.lateralOnlyMotion) }
        let h1 = first.objectHeight, h2 = second.objectHeight
        guard abs(h2 / h1 - 1) >= minRatioExcess, abs(h2 - h1) >= minPixelChange else { return .failure(.scaleRatioNearOne) }
        let g = CamLocGeometry(h1: h1, h2: h2, d: d, cameraAzimuth: psi2, x: second.objectX,
                               cx: second.cx ?? Double(second.width) / 2, focal: second.focalLength,
                               lensFocalMeters: lensFocalMeters)
        guard g.depth2 > 0, g.range.isFinite else {
            return .failure(.inconsistentMeasurements("image scale change contradicts the motion (Z2 = \(g.depth2) m)"))
        }
        let offCov = g.offsetCovariance(sigmaH: sigmaPixels, sigmaD: displacementSigma,
                                        sigmaAzimuth: Angle.radians(sigmaHeadingDegrees), sigmaX: sigmaPixels)
        let cov = user.covariance + offCov
        guard cov.isValid else { return .failure(.inconsistentMeasurements("non-finite covariance")) }
        let fix = Fix(time: time, position: user.position + g.offset, up: nil, covariance: cov, source: .camloc,
                      subject: Subject.object(second.object).id, usedCount: 2)
        return .success(CamLocSolution(fix: fix, geometry: g, range: g.range, bearing: g.bearing,
                                       relativeRangeSigma: g.relativeRangeSigma(sigmaH: sigmaPixels, sigmaD: displacementSigma),
                                       user: user, displacement: displacement))
    }
}
