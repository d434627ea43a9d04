import Foundation
import Testing
@testable import Positioning

/// Synthetic IMU of a walking pedestrian holding a tilted phone (`estimators.md` §6).
///
/// World ENU; heading ψ clockwise from true north; the device +y axis points along the walking
/// direction, pitched up by θ about the device x axis. The accelerometer measures the specific
/// force f = a − g (gravity reaction +9.80665 m/s² up plus a vertical walking bounce of
/// amplitude A at the step frequency), the gyroscope ω = −ψ̇ about world up, the magnetometer
/// the Earth field B = (B_h sin D, B_h cos D, −B_v) (D = declination: ψ_true = ψ_mag + D) plus an
/// optional world-frame disturbance. All three are rotated into the device frame; seeded white
/// noise and a constant gyro bias (device z) are added.
private struct SyntheticWalk {
    var rate = 100.0                 // Hz, accelerometer and gyroscope
    var magEvery = 4                 // magnetometer at rate / magEvery
    var pitch = Angle.radians(30)    // rad
    var stepFrequency = 2.0          // Hz
    var bounce = 2.0                 // m/s²
    var walkStart = 1.0, walkEnd = 61.0   // s
    var declination = Angle.radians(-8)
    var field = 48.0, inclination = Angle.radians(60)   // µT, rad
    var accNoise = 0.0, gyroNoise = 0.0, magNoise = 0.0   // per-sample σ: m/s², rad/s, µT
    var gyroBias = 0.0               // rad/s about the device z axis
    var disturbance: (Double) -> SIMD3<Double> = { _ in .zero }   // world-frame µT at time t
    /// Heading at time t, rad (clockwise from true north).
    var heading: (Double) -> Double = { t in Angle.radians(30) + (t > 20 && t < 30 ? Angle.radians(9) * (t - 20) : t >= 30 ? Angle.radians(90) : 0) }

    func axes(_ psi: Double) -> (x: SIMD3<Double>, y: SIMD3<Double>, z: SIMD3<Double>) {
        let fwd = SIMD3(sin(psi), cos(psi), 0), right = SIMD3(cos(psi), -sin(psi), 0), up = SIMD3<Double>(0, 0, 1)
        return (right, cos(pitch) * fwd + sin(pitch) * up, -sin(pitch) * fwd + cos(pitch) * up)
    }

    /// Runs the PDR over `duration` s; returns the heading error (rad) at every sample while
    /// walking after `settle` s, and the tracker.
    func run(_ pdr: inout PedestrianDeadReckoning, seed: UInt64, duration: Double = 62, settle: Double = 5) -> [Double] {
        var rng = SplitMix64(seed: seed)
        var errors: [Double] = []
        let n = Int(duration * rate)
        for k in 0..<n {
            let t = Double(k) / rate
            let psi = heading(t), a = axes(psi)
            func dev(_ v: SIMD3<Double>) -> SIMD3<Double> { SIMD3((v * a.x).sum(), (v * a.y).sum(), (v * a.z).sum()) }
            func noisy(_ v: SIMD3<Double>, _ s: Double) -> SIMD3<Double> { s > 0 ? v + s * SIMD3(rng.gaussian(), rng.gaussian(), rng.gaussian()) : v }
            let walking = t >= walkStart && t < walkEnd
            let f = SIMD3<Double>(0, 0, 9.80665 + (walking ? bounce * sin(2 * .pi * stepFrequency * (t - walkStart)) : 0))
            let fa = noisy(dev(f), accNoise)
            pdr.update(IMUSample(kind: .accelerometer, x: fa.x, y: fa.y, z: fa.z), time: t)
            let psiDot = (heading(t + 1e-3) - heading(t - 1e-3)) / 2e-3
            var w = noisy(dev(SIMD3(0, 0, -psiDot)), gyroNoise)
            w.z += gyroBias
            pdr.update(IMUSample(kind: .gyroscope, x: w.x, y: w.y, z: w.z), time: t)
            if k % magEvery == 0 {
                let bh = field * cos(inclination)
                let b = SIMD3(bh * sin(declination), bh * cos(declination), -field * sin(inclination)) + disturbance(t)
                let m = noisy(dev(b), magNoise)
                pdr.update(IMUSample(kind: .magnetometer, x: m.x, y: m.y, z: m.z), time: t)
            }
            if walking, t >= settle, let h = pdr.heading { errors.append(Angle.wrap(h - psi)) }
        }
        return errors
    }
}

private func rms(_ e: [Double]) -> Double { (e.reduce(0) { $0 + $1 * $1 } / Double(max(1, e.count))).squareRoot() }
private func maxAbs(_ e: [Double]) -> Double { e.map(abs).max() ?? .infinity }

@Suite struct PDRNoiseTests {
    /// Noise-free tilted phone (30° pitch), 60 s at 2 steps/s with a 90° turn: exactly 120
    /// steps, heading exact to 0.5°, Δψ of the steps summing to the turn.
    @Test func noiseFreeTiltedWalk() throws {
        let walk = SyntheticWalk()
        var pdr = PedestrianDeadReckoning(declinationDegrees: Angle.degrees(walk.declination))
        let errors = walk.run(&pdr, seed: 1)
        let steps = pdr.takeSteps()
        #expect(steps.count == 120, "\(steps.count) steps")
        #expect(maxAbs(errors) < Angle.radians(0.5), "max heading error \(Angle.degrees(maxAbs(errors)))°")
        let turn = steps.dropFirst().reduce(0) { $0 + $1.headingChange }
        let expected = walk.heading(steps.last!.time) - walk.heading(steps.first!.time)
        #expect(abs(turn - expected) < Angle.radians(0.5), "turn \(Angle.degrees(turn))° vs \(Angle.degrees(expected))°")
    }

    /// Seeded sensor noise (acc 0.05 m/s², gyro 0.01 rad/s per sample, magnetometer 0.5 µT)
    /// and a 0.5 °/s gyro bias: step count still exact, heading RMS error < 1.5°, max < 3.5° (measured ≈ 0.5° and 1.4°), and
    /// the bias state converges to the true bias within 0.2 °/s (over several seeds).
    @Test(arguments: [UInt64(3), 17, 42]) func seededNoiseHeadingBounds(seed: UInt64) {
        var walk = SyntheticWalk()
        walk.accNoise = 0.05; walk.gyroNoise = 0.01; walk.magNoise = 0.5; walk.gyroBias = Angle.radians(0.5)
        var pdr = PedestrianDeadReckoning(declinationDegrees: Angle.degrees(walk.declination))
        let errors = walk.run(&pdr, seed: seed)
        #expect(pdr.stepCount == 120, "\(pdr.stepCount) steps")
        #expect(rms(errors) < Angle.radians(1.5), "RMS \(Angle.degrees(rms(errors)))°")
        #expect(maxAbs(errors) < Angle.radians(3.5), "max \(Angle.degrees(maxAbs(errors)))°")
        // Gyro-z bias of a pitched phone projects on the vertical by cos θ.
        let trueBias = walk.gyroBias * cos(walk.pitch)
        #expect(abs(pdr.gyroBias - trueBias) < Angle.radians(0.2), "bias \(Angle.degrees(pdr.gyroBias))°/s vs \(Angle.degrees(trueBias))°/s")
        let sigma = pdr.headingSigma ?? .infinity
        #expect(sigma > 0 && sigma < Angle.radians(5))
    }

    /// A 25 µT anomaly along east for 10 s (steel structure) turns the compass by ≈ 50° but
    /// changes |B| by only ≈ 4.6 µT: the magnitude gate alone misses it, the dip gate (7.7° dip
    /// change > 5°) rejects it. With the dip gate the heading stays within 3°; without any
    /// gate the error is at least twice as large.
    @Test func dipGateRejectsAnomaly() {
        var walk = SyntheticWalk()
        walk.magNoise = 0.5; walk.gyroNoise = 0.005
        walk.heading = { _ in Angle.radians(30) }
        walk.disturbance = { t in t > 30 && t < 40 ? SIMD3(25, 0, 0) : .zero }
        var gated = PedestrianDeadReckoning(declinationDegrees: Angle.degrees(walk.declination))
        let eGated = walk.run(&gated, seed: 9)
        var open = PedestrianDeadReckoning(declinationDegrees: Angle.degrees(walk.declination))
        open.magnitudeGate = .infinity; open.dipGate = .infinity
        let eOpen = walk.run(&open, seed: 9)
        #expect(maxAbs(eGated) < Angle.radians(3), "gated max \(Angle.degrees(maxAbs(eGated)))°")
        #expect(maxAbs(eOpen) > 2 * maxAbs(eGated), "ungated max \(Angle.degrees(maxAbs(eOpen)))° vs gated \(Angle.degrees(maxAbs(eGated)))°")
    }

    /// The absolute heading handed to the filters carries σ_ψ² = atan(σ_d / |m_h|)² from the
    /// measured disturbance level (`heading_sigma_from_field`): isotropic 6 µT per axis in a
    /// 24 µT horizontal field (48 µT, inclination 60°) is atan(0.25) = 14.0°; the running
    /// estimate averages ≈ 100 samples (relative σ of the variance ≈ 14 %), so within
    /// [0.6, 1.5] of it; a clean field gives the 1 µT floor, atan(1/24) = 2.4°, to 5 %.
    @Test func headingVarianceFollowsTheDisturbance() throws {
        var walk = SyntheticWalk()
        walk.heading = { _ in Angle.radians(30) }
        walk.magNoise = 6
        var disturbed = PedestrianDeadReckoning(declinationDegrees: Angle.degrees(walk.declination))
        disturbed.magnitudeGate = .infinity; disturbed.dipGate = .infinity
        _ = walk.run(&disturbed, seed: 4)
        let takenD = disturbed.takeHeading()
        let hd = try #require(takenD)
        let v = try #require(hd.variance)
        let expected = pow(atan(6.0 / 24), 2)
        #expect(v / expected > 0.6 && v / expected < 1.5, "σ_ψ \(Angle.degrees(v.squareRoot()))° vs \(Angle.degrees(expected.squareRoot()))°")
        walk.magNoise = 0.2
        var clean = PedestrianDeadReckoning(declinationDegrees: Angle.degrees(walk.declination))
        _ = walk.run(&clean, seed: 4)
        let takenC = clean.takeHeading()
        let hc = try #require(takenC)
        let c = try #require(hc.variance)
        #expect(abs(c / pow(atan(1.0 / 24), 2) - 1) < 0.05, "clean σ_ψ \(Angle.degrees(c.squareRoot()))°")
        let again = clean.takeHeading()
        #expect(again == nil)   // taken once
    }

    /// Magnetometer only (no gyroscope), phone still: the heading is the tilt-compensated
    /// compass plus the declination, whatever the pitch.
    @Test(arguments: [0.0, 20, 45]) func tiltCompensatedCompass(pitchDegrees: Double) throws {
        var walk = SyntheticWalk()
        walk.pitch = Angle.radians(pitchDegrees); walk.walkStart = 100; walk.walkEnd = 100
        walk.heading = { _ in Angle.radians(-120) }
        var pdr = PedestrianDeadReckoning(declinationDegrees: Angle.degrees(walk.declination))
        _ = walk.run(&pdr, seed: 2, duration: 5)
        let h = try #require(pdr.heading)
        #expect(abs(Angle.wrap(h - Angle.radians(-120))) < Angle.radians(0.5), "heading \(Angle.degrees(h))°")
        #expect(pdr.stepCount == 0)
    }
}

/// Regularised particle filter: a likelihood far narrower than the particle spacing (1 mm
/// fixes against a 1 m cloud) leaves one particle with all the weight. Without the kernel the
/// reported covariance collapses (NEES of the truth ≫ 10⁶); with c = 0.5 (the stage default)
/// it stays finite and on the conservative side: measured 19 of 20 epochs inside the 95 %
/// ellipse (NEES ≤ 5.991), the worst 18.
@Suite struct RegularisedParticleFilterTests {
    func nees(regularization: Double) -> [Double] {
        let cv = MotionConfiguration(layout: .constantVelocity, constantVelocity: ConstantVelocityModel(q: 0.3))
        let pf = ParticleFilter(motion: cv, count: 2000, seed: 7)
        pf.regularization = regularization
        pf.initialize(mean: SIMD4(0, 0, 0, 0), covariance: .diagonal(SIMD4(1, 1, 0.25, 0.25)), time: 0)
        var rng = SplitMix64(seed: 4)
        var out: [Double] = []
        for k in 1...20 {
            let t = Double(k) * 0.2, truth = SIMD2(0.3 * t, -0.2 * t)
            pf.predict(to: t)
            let z = truth + 0.001 * SIMD2(rng.gaussian(), rng.gaussian())
            _ = pf.update(PositionMeasurement(fix: Fix(time: t, position: z, covariance: Covariance2(sigma: 0.001), source: .tdoa)), gate: nil)
            let (mu, p) = pf.estimate()
            let c = Covariance2(ee: p[0, 0], en: p[0, 1], nn: p[1, 1])
            out.append(c.mahalanobis2(SIMD2(mu[0], mu[1]) - truth) ?? .infinity)
        }
        return out
    }

    @Test func kernelKeepsTheCovarianceHonest() {
        let plain = nees(regularization: 0), regular = nees(regularization: 0.5)
        #expect(plain.max()! > 1e6, "unregularised worst NEES \(plain.max()!)")
        #expect(regular.max()! < 100, "regularised worst NEES \(regular.max()!)")
        let inside = Double(regular.filter { $0 <= 5.991 }.count) / Double(regular.count)
        #expect(inside >= 0.9, "inside95 \(inside)")
    }
}
