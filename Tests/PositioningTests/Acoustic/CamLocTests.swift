import Foundation
import Testing
@testable import Positioning

/// Synthetic photo of an object of height H at horizontal position `obj` seen from `cam`
/// with the camera axis at true azimuth ψ (level camera, pinhole, f px, 4000×3000 image).
func photo(id: String, pair: String, obj: SIMD2<Double>, cam: SIMD2<Double>, psi: Double, H: Double = 2,
           f: Double = 3000, t: Double, declination: Double = 0) -> PhotoObservation {
    let v = obj - cam
    let along = (v * Angle.unit(psi)).sum(), across = (v * Angle.perpendicular(psi)).sum()
    return PhotoObservation(id: id, pair: pair, width: 4000, height: 3000, focalLength: f, cx: 2000, cy: 1500,
                            exposureTime: t, object: "pothole", objectX: 2000 + f * across / along, objectY: 1500,
                            objectHeight: f * H / along, cameraAzimuthMagnetic: Angle.degrees(psi) - declination)
}

@Suite struct CamLocGeometryTests {
    @Test func depthsFromScaleRatio() {
        // Z1 = 21 m, d = 1 m ⇒ Z2 = 20 m (design note check), pinhole and thin lens.
        let f = 3000.0, H = 2.0
        let g = CamLocGeometry(h1: f * H / 21, h2: f * H / 20, d: 1, cameraAzimuth: 0, x: 2000, cx: 2000, focal: f)
        #expect(abs(g.depth1 - 21) < 1e-9 && abs(g.depth2 - 20) < 1e-9 && abs(g.ratio - 1.05) < 1e-12)
        #expect(abs(g.range - 20) < 1e-9 && abs(g.offset.y - 20) < 1e-9 && abs(g.offset.x) < 1e-9)
        var t = g; t.lensFocalMeters = 0.0045
        #expect(abs(t.depth2 - 20.0045) < 1e-9)
    }

    @Test func offsetJacobianMatchesFiniteDifferences() {
        let g = CamLocGeometry(h1: 180, h2: 200, d: 1.3, cameraAzimuth: 2.9, x: 2600, cx: 2000, focal: 3000)
        let j = g.jacobian
        let steps = [1e-4, 1e-4, 1e-6, 1e-7, 1e-4]
        for c in 0..<5 {
            func f(_ s: Double) -> SIMD2<Double> {
                var h = g
                switch c { case 0: h.h1 += s; case 1: h.h2 += s; case 2: h.d += s; case 3: h.cameraAzimuth += s; default: h.x += s }
                return h.offset
            }
            let n = (f(steps[c]) - f(-steps[c])) / (2 * steps[c])
            #expect(abs(n.x - j[0, c]) < 1e-5 * max(1, abs(n.x)) && abs(n.y - j[1, c]) < 1e-5 * max(1, abs(n.y)), "column \(c)")
        }
    }

    /// §5.2 budget: Z2 = 20 m, d = 1 m, h1 ≈ 200 px, σ_h = 1 px, σ_d = 0.1 m → ≈ 17.6 % relative σ;
    /// a seeded Monte Carlo of the estimator agrees with the first-order value within 25 %.
    @Test func relativeErrorBudgetMatchesMonteCarlo() {
        let f = 4000.0, H = 1.0   // h1 = 4000/21 ≈ 190 px, h2 = 200 px
        let g = CamLocGeometry(h1: f * H / 21, h2: f * H / 20, d: 1, cameraAzimuth: 0, x: 2000, cx: 2000, focal: f)
        let predicted = g.relativeRangeSigma(sigmaH: 1, sigmaD: 0.1)
        #expect(abs(predicted - 0.176) < 0.02, "predicted \(predicted)")
        let noise = SeededNoise(seed: 55)
        var errs: [Double] = []
        for _ in 0..<2000 {
            var h = g
            h.h1 += noise.gaussian(1); h.h2 += noise.gaussian(1); h.d += noise.gaussian(0.1)
            if h.h2 - h.h1 > 1 { errs.append((h.range - 20) / 20) }
        }
        errs.sort()
        // Robust σ from the interquartile range (the ratio estimator has heavy tails).
        let iqr = errs[errs.count * 3 / 4] - errs[errs.count / 4]
        let sigmaMC = iqr / 1.349
        #expect(abs(sigmaMC / predicted - 1) < 0.25, "MC \(sigmaMC) vs first order \(predicted)")
    }
}

@Suite struct CamLocEstimatorTests {
    let obj = SIMD2(30.0, 52.0)

    func shots(declination: Double = 3) -> (PhotoObservation, PhotoObservation, SIMD2<Double>, SIMD3<Double>) {
        let cam1 = SIMD2(10.0, 20.0)
        let v = obj - cam1
        let psi = atan2(v.x, v.y) + 0.05   // camera a little off the object: pixel offset matters
        let step = 1.2 * Angle.unit(psi)
        let cam2 = cam1 + step
        return (photo(id: "a", pair: "r1", obj: obj, cam: cam1, psi: psi, t: 1, declination: declination),
                photo(id: "b", pair: "r1", obj: obj, cam: cam2, psi: psi, t: 3, declination: declination),
                cam2, SIMD3(step.x, step.y, 0))
    }

    @Test func exactObjectPosition() throws {
        let (p1, p2, cam2, d) = shots()
        let user = Fix(time: 3, position: cam2, covariance: Covariance2(sigma: 3), source: .gnss)
        let s = try CamLocEstimator().estimate(first: p1, second: p2, displacement: d, displacementSigma: 0.06,
                                               user: user, declination: 3, time: 3).get()
        #expect(((s.fix.position - obj) * (s.fix.position - obj)).sum().squareRoot() < 1e-6)
        #expect(s.fix.subject == "object:pothole" && s.fix.source == .camloc)
        #expect(s.fix.covariance.trace > user.covariance.trace && s.fix.covariance.isValid)
        let trueRange = ((obj - cam2) * (obj - cam2)).sum().squareRoot()
        #expect(abs(s.range - trueRange) < 1e-6)
    }

    @Test func degenerateMotionAndScaleAreTypedFailures() {
        let (p1, p2, cam2, d) = shots()
        let user = Fix(time: 3, position: cam2, covariance: Covariance2(sigma: 3), source: .gnss)
        let e = CamLocEstimator()
        #expect(failure(e.estimate(first: p1, second: p2, displacement: SIMD3(0.01, 0.02, 0), displacementSigma: 0.05,
                                   user: user, declination: 3, time: 3)) == .zeroDisplacement)
        let lateral = SIMD3(d.y, -d.x, 0)
        #expect(failure(e.estimate(first: p1, second: p2, displacement: lateral, displacementSigma: 0.05,
                                   user: user, declination: 3, time: 3)) == .lateralOnlyMotion)
        var same = p2; same.objectHeight = p1.objectHeight + 0.5
        #expect(failure(e.estimate(first: p1, second: same, displacement: d, displacementSigma: 0.05,
                                   user: user, declination: 3, time: 3)) == .scaleRatioNearOne)
        // Moving away while the object grows: contradiction, not a negative distance.
        if case .inconsistentMeasurements = failure(e.estimate(first: p1, second: p2, displacement: -d, displacementSigma: 0.05,
                                                               user: user, declination: 3, time: 3)) {} else { Issue.record("expected inconsistentMeasurements") }
        var noAz1 = p1, noAz2 = p2
        noAz1.cameraAzimuthMagnetic = nil; noAz2.cameraAzimuthMagnetic = nil
        #expect(failure(e.estimate(first: noAz1, second: noAz2, displacement: d, displacementSigma: 0.05,
                                   user: user, declination: 3, time: 3)) == .noHeading)
    }
}

@Suite struct IMUDisplacementTests {
    /// Minimum-jerk move of 1.5 m along azimuth 40° in 2 s, phone yawed by 25°, with a
    /// constant accelerometer bias (device frame): the zero-velocity correction removes the
    /// bias exactly; the remaining error is the trapezoid discretisation.
    @Test func zeroVelocityCorrectionCancelsConstantBias() throws {
        let total = 1.5, dur = 2.0, az = Angle.radians(40), yaw = Angle.radians(25)
        let dirE = sin(az), dirN = cos(az)
        // Yaw about the up axis: q = (0, 0, sin(−yaw/2), cos(−yaw/2)) rotates device→ENU.
        let q = SIMD4(0, 0, sin(-yaw / 2), cos(-yaw / 2))
        let qInv = SIMD4(0, 0, sin(yaw / 2), cos(yaw / 2))
        let bias = SIMD3(0.05, -0.03, 0.02)
        var acc: [(Double, SIMD3<Double>)] = []
        for i in 0...400 {
            let t = Double(i) / 200, s = t / dur
            let a = total / (dur * dur) * (60 * s - 180 * s * s + 120 * s * s * s)   // d²/dt² of minimum jerk
            let world = SIMD3(a * dirE, a * dirN, IMUDisplacement.gravity)
            acc.append((t, IMUDisplacement.rotate(world, by: qInv) + bias))
        }
        let d = try #require(IMUDisplacement.displacement(accelerometer: acc, attitude: [(0, q)], from: 0, to: dur))
        #expect(abs(d.x - total * dirE) < 2e-3 && abs(d.y - total * dirN) < 2e-3 && abs(d.z) < 2e-3, "\(d)")
        // Without attitude coverage: nil.
        #expect(IMUDisplacement.displacement(accelerometer: acc, attitude: [], from: 0, to: 2) == nil)
        #expect(IMUDisplacement.displacement(accelerometer: [], attitude: [(0, q)], from: 0, to: 2) == nil)
    }

    /// Strapdown without an attitude sensor: a level phone (y forward) yawed to the walking
    /// azimuth, magnetometer with inclination 60° and declination 4°, gyro bias; TRIAD at shot 1
    /// plus gyro propagation recovers the true-north displacement.
    @Test func strapdownFromGyroAndMagnetometer() throws {
        let total = 2.0, dur = 2.5, az = Angle.radians(130), decl = 4.0
        // Device y axis along the walking azimuth: device→ENU is a yaw of −az about up.
        let qInv = SIMD4(0, 0, sin(az / 2), cos(az / 2))   // ENU → device
        let inc = Angle.radians(60), dRad = Angle.radians(decl)
        let bWorld = 48 * SIMD3(cos(inc) * sin(dRad), cos(inc) * cos(dRad), -sin(inc))   // true ENU
        var acc: [(Double, SIMD3<Double>)] = [], gyro: [(Double, SIMD3<Double>)] = [], mag: [(Double, SIMD3<Double>)] = []
        for i in -100...Int(dur * 100) {
            let t = Double(i) / 100
            var a = 0.0
            if t > 0 && t < dur { let s = t / dur; a = total / (dur * dur) * (60 * s - 180 * s * s + 120 * s * s * s) }
            let world = SIMD3(a * sin(az), a * cos(az), IMUDisplacement.gravity)
            acc.append((t, IMUDisplacement.rotate(world, by: qInv) + SIMD3(0.02, -0.01, 0.03)))
            gyro.append((t, SIMD3(0.001, -0.002, 0.0015)))
            mag.append((t, IMUDisplacement.rotate(bWorld, by: qInv)))
        }
        let d = try #require(IMUDisplacement.displacement(accelerometer: acc, gyroscope: gyro, magnetometer: mag,
                                                          declinationDegrees: decl, from: 0, to: dur))
        #expect(abs(d.x - total * sin(az)) < 0.01 && abs(d.y - total * cos(az)) < 0.01, "\(d)")
    }

    @Test func stageLocatesObjectFromIMUAndGNSS() throws {
        let stage = try CamLocStage(options: StageOptions(name: "camloc"))
        let header = TraceHeader(origin: Geodetic(latitude: 48, longitude: 11), declination: 2)
        let ctx = PipelineContext(header: header, reference: ReferenceData(landmarks: ["pothole": Landmark(id: "pothole", position: SIMD3(30, 52, 0))]))
        let obj = SIMD2(30.0, 52.0), cam1 = SIMD2(10.0, 20.0)
        let psi = atan2(obj.x - cam1.x, obj.y - cam1.y)
        let total = 1.2, dur = 2.0
        let cam2 = cam1 + total * Angle.unit(psi)
        var out: [StageResult] = []
        // Identity attitude (device axes = ENU) is enough for the stage plumbing.
        out += stage.process(TraceEvent(time: 0, payload: .imu(IMUSample(kind: .rotationVector, x: 0, y: 0, z: 0, w: 1))), upstream: [], context: ctx)
        let gfix = Fix(time: 0.5, position: cam1, covariance: Covariance2(sigma: 2), source: .gnss)
        out += stage.process(TraceEvent(time: 0.5, payload: .step(StepEvent())), upstream: [.fix(gfix)], context: ctx)
        for i in 0...400 {
            let t = 1 + Double(i) / 200, s = (t - 1) / dur
            let a = total / (dur * dur) * (60 * s - 180 * s * s + 120 * s * s * s)
            let u = Angle.unit(psi)
            out += stage.process(TraceEvent(time: t, payload: .imu(IMUSample(kind: .accelerometer, x: a * u.x, y: a * u.y, z: IMUDisplacement.gravity))),
                                 upstream: [], context: ctx)
        }
        out += stage.process(TraceEvent(time: 1, payload: .photo(photo(id: "a", pair: "r", obj: obj, cam: cam1, psi: psi, t: 1, declination: 2))), upstream: [], context: ctx)
        out += stage.process(TraceEvent(time: 3, payload: .photo(photo(id: "b", pair: "r", obj: obj, cam: cam2, psi: psi, t: 3, declination: 2))), upstream: [], context: ctx)
        let fixes = out.compactMap { r -> Fix? in if case .fix(let f) = r { return f }; return nil }
        let f = try #require(fixes.first)
        #expect(f.subject == "object:pothole")
        #expect(((f.position - obj) * (f.position - obj)).sum().squareRoot() < 0.1, "\(f.position)")
        #expect(out.contains { if case .measurement(let m, _) = $0 { return m is RangeBearingMeasurement }; return false })
        #expect(StageRegistry.entries.contains { $0.name == "camloc" })
    }
}

@Suite struct RangeBearingMeasurementTests {
    @Test func jacobianWithAngleWrapping() {
        // Landmark due south of the points: the bearing sits at ±π where wrapping matters.
        let m = RangeBearingMeasurement(time: 0, landmark: SIMD2(0, -10), range: 10, bearing: .pi, sigmaRange: 0.5, sigmaBearing: 0.05)
        for p in [SIMD2(0.0, 0.0), SIMD2(1e-7, 0.0), SIMD2(-3.0, 4.0), SIMD2(7.0, -2.0)] {
            let a = m.jacobian(p), n = m.numericalJacobian(p, step: 1e-6)
            for i in 0..<4 { #expect(abs(a.data[i] - n.data[i]) < 1e-6 * max(1, abs(n.data[i])), "at \(p)") }
        }
        // Innovation across the ±π cut is small, not 2π.
        let nu = m.innovation([10, -.pi + 0.01])
        #expect(abs(nu[1] + 0.01) < 1e-12 || abs(nu[1] - (-0.01)) < 1e-12)
        #expect(m.isAngleComponent(1) && !m.isAngleComponent(0))
        // Landmark covariance inflates R.
        let m2 = RangeBearingMeasurement(time: 0, landmark: SIMD2(0, -10), range: 10, bearing: .pi, sigmaRange: 0.5,
                                         sigmaBearing: 0.05, landmarkCovariance: Covariance2(sigma: 1))
        #expect(m2.noise[0, 0] > m.noise[0, 0] && m2.noise[1, 1] > m.noise[1, 1])
    }
}
