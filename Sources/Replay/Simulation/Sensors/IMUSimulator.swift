import Foundation
import Positioning

/// A compact IMU sample (the long-trace mode holds millions of them).
struct IMURecord {
    var t: Double
    var kind: IMUKind
    var x: Double, y: Double, z: Double
}

/// Earth magnetic field plus a spatially correlated disturbance field, in ENU µT.
///
/// B_earth = F·[cos I·sin D, cos I·cos D, −sin I] (I inclination, positive down; D declination).
/// Disturbance: one `CorrelatedField` per ENU axis (σ_dist, d_c), shared by every phone —
/// steel, wiring and reinforced concrete indoors; vehicles and facades downtown.
struct MagneticEnvironment {
    let earth: SIMD3<Double>
    let fx, fy, fz: CorrelatedField
    let resample: Double

    init(spec: MagneticSpec, declination: Double, seed: UInt64) {
        let i = spec.inclination * .pi / 180, d = declination * .pi / 180
        earth = SIMD3(spec.field * cos(i) * sin(d), spec.field * cos(i) * cos(d), -spec.field * sin(i))
        func f(_ a: String) -> CorrelatedField {
            CorrelatedField(sigma: spec.disturbanceSigma, correlationDistance: spec.disturbanceCorrelation,
                            rng: SimRNG(seed: seed, stream: "magnetic/\(a)"), components: 64)
        }
        fx = f("e"); fy = f("n"); fz = f("u")
        resample = max(0.01, spec.disturbanceCorrelation / 20)
    }
    func disturbance(_ e: Double, _ n: Double) -> SIMD3<Double> { SIMD3(fx.value(e, n), fy.value(e, n), fz.value(e, n)) }

    /// Compass error (rad, clockwise) of a phone at (e, n): bearing of the disturbed horizontal
    /// field minus that of the Earth field.
    func compassError(_ e: Double, _ n: Double) -> Double {
        let b = earth + disturbance(e, n)
        return Angle.wrap(atan2(b.x, b.y) - atan2(earth.x, earth.y))
    }
}

/// Accelerometer, gyroscope and magnetometer of a phone held flat, screen up, its y axis along
/// the walking direction (docs/simulator.md §IMU).
///
/// Specific force in the device frame (x right, y forward, z up), m/s²:
///   f_x = v·ψ̇ + I·0.25A·sin(φ/2)       (centripetal + lateral sway at half the cadence)
///   f_y = dv/dt + I·0.4A·cos φ          (longitudinal acceleration + forward surge)
///   f_z = g + I·A·sin φ                 (gravity + vertical bounce at the step frequency)
/// φ = step phase, I = step intensity (0…1), A = bounce amplitude; by default A is the inverse
/// of the Weinberg step-length model (estimators.md §6): L = K·(a_max − a_min)^{1/4} with
/// a_max − a_min = 2A ⇒ A = (L/K)⁴/2, L = v₀/f_step, K = 0.52.
/// Gyroscope z = −ψ̇ (counter-clockwise positive about up). Magnetometer = R(ψ)·(B_earth + B_dist).
/// Each axis adds: turn-on bias N(0, σ_b²) + Gauss–Markov bias instability (σ_bi, τ) + white
/// noise N(0, (N·√f_s)²) with N the noise density; outputs are quantised to the resolution.
struct IMUSimulator {
    let spec: IMUSpec
    static let g = 9.80665

    func records(trajectory tr: Trajectory, path: PathSpec, device: String, magnetic: MagneticEnvironment,
                 seed: UInt64, until end: Double) -> (imu: [IMURecord], steps: [TraceEvent]) {
        let rng = SimRNG(seed: seed, stream: "imu/\(device)")
        let dt = 1 / spec.rate
        let L = path.speed / path.stepFrequency
        let A = spec.bounceAmplitude ?? pow(L / spec.weinbergK, 4) / 2
        let accW = spec.accNoiseDensity * spec.rate.squareRoot(), gyrW = spec.gyroNoiseDensity * spec.rate.squareRoot()
        let acc0 = SIMD3(rng.gaussian(spec.accBiasSigma), rng.gaussian(spec.accBiasSigma), rng.gaussian(spec.accBiasSigma))
        let gyr0 = SIMD3(rng.gaussian(spec.gyroBiasSigma), rng.gaussian(spec.gyroBiasSigma), rng.gaussian(spec.gyroBiasSigma))
        let hard = SIMD3(rng.gaussian(spec.magHardIron), rng.gaussian(spec.magHardIron), rng.gaussian(spec.magHardIron))
        var ab = (0..<3).map { _ in GaussMarkov(sigma: spec.accBiasInstability, tau: spec.accBiasTau, rng: rng) }
        var gb = (0..<3).map { _ in GaussMarkov(sigma: spec.gyroBiasInstability, tau: spec.gyroBiasTau, rng: rng) }
        let magEvery = spec.magRate > 0 ? max(1, Int((spec.rate / spec.magRate).rounded())) : 0
        let magW = spec.magNoise
        var out: [IMURecord] = []
        let n = Int((end / dt + 1e-9).rounded(.down))
        out.reserveCapacity((n + 1) * (magEvery > 0 ? 3 : 2))
        var dist = SIMD3<Double>(0, 0, 0)
        var distAt = -Double.infinity
        for k in 0...n {
            let t = Double(k) / spec.rate
            let s = tr.state(at: t)
            let I = s.stepIntensity, ph = s.stepPhase
            let fx = s.speed * s.yawRate + I * 0.25 * A * sin(ph / 2)
            let fy = s.accel + I * 0.4 * A * cos(ph)
            let fz = IMUSimulator.g + I * A * sin(ph)
            let b0 = ab[0].step(dt, rng: rng), b1 = ab[1].step(dt, rng: rng), b2 = ab[2].step(dt, rng: rng)
            out.append(IMURecord(t: t, kind: .accelerometer,
                                 x: quantise(fx + acc0.x + b0 + rng.gaussian(accW), spec.accResolution),
                                 y: quantise(fy + acc0.y + b1 + rng.gaussian(accW), spec.accResolution),
                                 z: quantise(fz + acc0.z + b2 + rng.gaussian(accW), spec.accResolution)))
            let g0 = gb[0].step(dt, rng: rng), g1 = gb[1].step(dt, rng: rng), g2 = gb[2].step(dt, rng: rng)
            out.append(IMURecord(t: t, kind: .gyroscope,
                                 x: quantise(gyr0.x + g0 + rng.gaussian(gyrW), spec.gyroResolution),
                                 y: quantise(gyr0.y + g1 + rng.gaussian(gyrW), spec.gyroResolution),
                                 z: quantise(-s.yawRate + gyr0.z + g2 + rng.gaussian(gyrW), spec.gyroResolution)))
            if magEvery > 0 && k % magEvery == 0 {
                if abs(s.odometer - distAt) >= magnetic.resample { dist = magnetic.disturbance(s.e, s.n); distAt = s.odometer }
                let w = magnetic.earth + dist
                let c = cos(s.heading), sn = sin(s.heading)
                out.append(IMURecord(t: t, kind: .magnetometer,
                                     x: quantise(w.x * c - w.y * sn + hard.x + rng.gaussian(magW), spec.magResolution),
                                     y: quantise(w.x * sn + w.y * c + hard.y + rng.gaussian(magW), spec.magResolution),
                                     z: quantise(w.z + hard.z + rng.gaussian(magW), spec.magResolution)))
            }
        }
        var steps: [TraceEvent] = []
        if spec.emitSteps {
            for t in tr.stepTimes where t <= end {
                steps.append(TraceEvent(time: quantise(t, 1e-3), device: device, payload: .step(StepEvent(length: quantise(L, 0.01)))))
            }
        }
        return (out, steps)
    }
}
