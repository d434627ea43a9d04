import Foundation
import Testing
@testable import Positioning

/// The motion detector and the stationary diffusion of the step layout: a phone held still
/// averages its position fixes; the start of walking is not mistaken for an outlier.
@Suite struct StationaryDiffusionTests {
    let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
    static let g = 9.80665

    /// 100 Hz accelerometer + gyroscope: still (gravity + 0.02 m/s² noise, as the simulator's
    /// phone) before `walkFrom`, walking after (2 Hz vertical bounce of 1.5 m/s² amplitude).
    static func imu(until end: Double, walkFrom: Double, seed: UInt64) -> [TraceEvent] {
        var rng = TestRNG(seed: seed)
        var out: [TraceEvent] = []
        for k in 0...Int(end * 100) {
            let t = Double(k) / 100
            let bounce = t >= walkFrom ? 1.5 * sin(2 * .pi * 2 * (t - walkFrom)) : 0
            out.append(TraceEvent(time: t, payload: .imu(IMUSample(kind: .accelerometer, x: 0.02 * rng.gaussian(), y: 0.02 * rng.gaussian(),
                                                                      z: g + bounce + 0.02 * rng.gaussian()))))
            out.append(TraceEvent(time: t, payload: .imu(IMUSample(kind: .gyroscope, x: 0.002 * rng.gaussian(), y: 0.002 * rng.gaussian(),
                                                                      z: 0.002 * rng.gaussian()))))
            if k % 2 == 0 { out.append(TraceEvent(time: t, payload: .imu(IMUSample(kind: .magnetometer, x: 0, y: 30, z: -40)))) }
        }
        return out
    }

    /// Feeds events (each with its upstream fix, if any) in time order; returns the stage's fixes.
    static func replay(_ events: [(TraceEvent, StageResult?)], through stage: FusionStage, context: PipelineContext) -> [Fix] {
        var out: [Fix] = []
        for (e, f) in events.sorted(by: { $0.0.time < $1.0.time }) {
            for r in stage.process(e, upstream: f.map { [$0] } ?? [], context: context) { if case .fix(let x) = r { out.append(x) } }
        }
        return out
    }

    @Test func detectorSeparatesStillFromWalking() {
        var d = MotionDetector()
        #expect(!d.isStill(from: 0, to: 1), "no samples: never still")
        for e in Self.imu(until: 20, walkFrom: 10, seed: 1) {
            guard case .imu(let s) = e.payload else { continue }
            switch s.kind {
            case .accelerometer: d.accelerometer(magnitude: (s.vector * s.vector).sum().squareRoot(), time: e.time)
            case .gyroscope: d.gyroscope(s.vector, time: e.time)
            default: break
            }
            if e.time == 9.5, s.kind == .gyroscope { #expect(d.isStill(from: 8, to: 9.5)) }
        }
        #expect(d.isStill(from: 2, to: 9.9), "the past still interval stays still")
        #expect(!d.isStill(from: 9, to: 10.5), "walking starts at 10 s")
        #expect(!d.isStill(from: 15, to: 16))
        #expect(!d.isStill(from: 19, to: 25), "samples must cover the interval")
        var turning = MotionDetector()
        for k in 0...100 { turning.gyroscope(SIMD3(0, 0, 1.0), time: Double(k) / 100) }
        #expect(!turning.isStill(from: 0.2, to: 0.8), "turning on the spot at 57°/s is motion")
    }

    /// 1 Hz fixes with σ = 1 cm. Standing still for 20 s the filter averages them: its
    /// covariance reaches the steady state of the stationary random walk (with the walking
    /// diffusion, 0.05 m²/s ≫ R/Δt, it would stay at one fix's). When walking starts at 20 s (0.8 m/s) the first fixes, under
    /// the still hypothesis more than 10 σ off, pass the re-test under the walking diffusion:
    /// nothing is gated and the filter follows.
    @Test(arguments: [FusionStage.Kind.ekf, .ukf]) func stillPhoneAveragesAndWalkingStartIsFollowed(kind: FusionStage.Kind) throws {
        let stage = FusionStage(settings: .init(kind: kind))
        var rng = TestRNG(seed: 7)
        let sigma = 0.01
        var events = Self.imu(until: 24, walkFrom: 20, seed: 2).map { ($0, StageResult?.none) }
        for k in 1...24 {
            let t = Double(k) + 0.005
            let truth = SIMD2(5.0, 5.0) + SIMD2(0, max(0, 0.8 * (t - 20)))
            let z = truth + sigma * SIMD2(rng.gaussian(), rng.gaussian())
            let f = Fix(time: t, position: z, covariance: Covariance2(sigma: sigma), source: .tdoa)
            events.append((TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 1))), .fix(f)))
        }
        let out = Self.replay(events, through: stage, context: context)
        // Steady state of a random walk q = 1e-4 m²/s × 1 s observed with r = σ²:
        // P⁻ = (q + √(q² + 4qr))/2, P⁺ = P⁻r/(P⁻ + r) = 6.18e-5 m² (the walking diffusion gives 0.998 r).
        let q = StepMotionModel().stationaryPositionDiffusion, r = sigma * sigma
        let prior = (q + (q * q + 4 * q * r).squareRoot()) / 2, steady = prior * r / (prior + r)
        let atRest = try #require(out.last { $0.time < 20 })
        #expect(abs(atRest.covariance.ee - steady) < 1e-3 * steady, "P_EE at rest \(atRest.covariance.ee) vs \(steady) m²")
        #expect(norm(atRest.position - SIMD2(5, 5)) < 3 * steady.squareRoot())
        let counters = try #require(stage.counters[.tdoa])
        #expect(counters.gated == 0, "\(counters)")
        let last = try #require(out.last)
        #expect(norm(last.position - SIMD2(5, 5 + 0.8 * (last.time - 20))) < 0.05, "\(last.position)")
    }

    /// A movement below the detector's thresholds (the phone slid 8 cm in one second with no IMU
    /// signal): the fix after it, 5 σ off under the stationary diffusion, is re-tested under the
    /// walking diffusion and accepted (without the re-test it is gated).
    @Test func undetectedMovementIsRetested() throws {
        let stage = FusionStage(settings: .init(kind: .ekf))
        var rng = TestRNG(seed: 9)
        var events = Self.imu(until: 25, walkFrom: .infinity, seed: 3).map { ($0, StageResult?.none) }
        for k in 1...25 {
            let t = Double(k) + 0.005
            let z = SIMD2(5.0, t > 20 ? 5.08 : 5.0) + 0.01 * SIMD2(rng.gaussian(), rng.gaussian())
            let f = Fix(time: t, position: z, covariance: Covariance2(sigma: 0.01), source: .tdoa)
            events.append((TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 1))), .fix(f)))
        }
        let out = Self.replay(events, through: stage, context: context)
        #expect(stage.counters[.tdoa]?.gated == 0, "\(String(describing: stage.counters[.tdoa]))")
        let last = try #require(out.last)
        #expect(norm(last.position - SIMD2(5, 5.08)) < 0.02, "\(last.position)")
    }
}

private func norm(_ v: SIMD2<Double>) -> Double { (v * v).sum().squareRoot() }
