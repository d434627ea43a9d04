import Foundation
import Testing
@testable import Positioning

/// `StepLengthCalibration`: the Weinberg K fitted on walks with truth, and its use by the filters.
@Suite struct StepLengthCalibrationTests {
    /// Flat phone walking north at `frequency` steps/s: |a| = g + A sin(2π f (t − 1)) from t = 1 s
    /// to `end`, so every step's (a_max − a_min)^¼ over 0.7 s is (2A)^¼; the walker covers
    /// `stepLength` m per step. A constant field keeps the magnetometer heading north.
    static func imu(amplitude a: Double = 2, frequency f: Double = 2, end: Double = 41, rate: Double = 50) -> [(time: Double, sample: IMUSample)] {
        var out: [(time: Double, sample: IMUSample)] = []
        for k in 0..<Int((end + 1) * rate) {
            let t = Double(k) / rate
            let walking = t >= 1 && t < end
            out.append((t, IMUSample(kind: .accelerometer, x: 0, y: 0, z: 9.80665 + (walking ? a * sin(2 * .pi * f * (t - 1)) : 0))))
            out.append((t, IMUSample(kind: .gyroscope, x: 0, y: 0, z: 0)))
            if k % 2 == 0 { out.append((t, IMUSample(kind: .magnetometer, x: 0, y: 30, z: -40))) }
        }
        return out
    }

    /// Noise-free: truth checkpoints every 5 s along a walk of 0.65 m steps at 2 steps/s and 2 m/s²
    /// bounce give K̂ = 0.65 / 4^¼ (the step length over the step's Weinberg root) to 2 %, the
    /// segments hold the walk's 80 steps, and a second walk with 10 % longer steps gives the pooled
    /// ratio Σd / Σr and the distance-weighted spread by hand.
    @Test func fitOnSyntheticWalks() throws {
        let truth = stride(from: 1.0, through: 41, by: 5).map { t in (time: t, position: SIMD2(0, 1.3 * (t - 1))) }
        let segs = StepLengthCalibration.segments(imu: Self.imu(), truth: truth)
        #expect(segs.count == 8)
        let steps = segs.reduce(0) { $0 + $1.steps }
        #expect(abs(steps - 80) <= 1, "\(steps) steps")
        let longer = segs.map { StepLengthCalibration.Segment(distance: 1.1 * $0.distance, rootSum: $0.rootSum, steps: $0.steps) }
        let one = try #require(StepLengthCalibration.fit([segs, segs]))
        let expected = 0.65 / pow(4.0, 0.25)
        #expect(abs(one.weinbergK / expected - 1) < 0.02, "K \(one.weinbergK) vs \(expected)")
        #expect(one.scaleSigma == StepLengthCalibration.minimumScaleSigma)   // identical walks: no spread, the floor
        let two = try #require(StepLengthCalibration.fit([segs, longer]))
        let d = segs.reduce(0) { $0 + $1.distance }, r = segs.reduce(0) { $0 + $1.rootSum }
        let k = 2.1 * d / (2 * r)
        #expect(abs(two.weinbergK - k) < 1e-12)
        // Per-walk K_w / K̂ − 1 = 1/1.05 − 1 and 1.1/1.05 − 1, weighted by d and 1.1 d.
        let e1 = 1 / 1.05 - 1, e2 = 1.1 / 1.05 - 1
        let sigma = ((d * e1 * e1 + 1.1 * d * e2 * e2) / (2.1 * d)).squareRoot()
        #expect(abs(two.scaleSigma - sigma) < 1e-12)
        #expect(two.walks == 2 && two.segments == 16)
        // Too little: one walk, or fewer than five segments.
        #expect(StepLengthCalibration.fit([segs]) == nil)
        #expect(StepLengthCalibration.fit([Array(segs.prefix(2)), Array(segs.prefix(2))]) == nil)
    }

    /// The filters' PDR walks the calibration's K when the reference data carries one and the
    /// pipeline does not set `weinberg_k`: the same 20 steps move the ekf's state by K × Σ root.
    @Test func filterUsesTheReferenceStepLength() throws {
        func walked(_ options: [String: ConfigValue], calibration: StepLengthCalibration?) throws -> Double {
            let stage = try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: options.merging(["stride_interpolation": .bool(false)]) { a, _ in a }))
            var reference = ReferenceData()
            reference.stepLength = calibration
            let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)), reference: reference)
            var first: Fix?, last: Fix?
            for (t, s) in Self.imu(end: 11) {
                var upstream: [StageResult] = []
                if t == 0.5 { upstream = [.fix(Fix(time: t, position: SIMD2(0, 0), covariance: Covariance2(sigma: 0.01), source: .wcl))] }
                for r in stage.process(TraceEvent(time: t, payload: .imu(s)), upstream: upstream, context: context) {
                    if case .fix(let f) = r { if first == nil { first = f }; last = f }
                }
            }
            let a = try #require(first), b = try #require(last)
            return b.position.y - a.position.y
        }
        let cal = StepLengthCalibration(weinbergK: 0.26, scaleSigma: 0.05, walks: 2, segments: 10, distance: 100)
        let plain = try walked([:], calibration: nil)
        let calibrated = try walked([:], calibration: cal)
        let explicit = try walked(["weinberg_k": .number(0.52)], calibration: cal)
        #expect(plain > 5, "walked \(plain) m")
        #expect(abs(calibrated / plain - 0.5) < 0.01, "\(calibrated) vs \(plain) m")
        #expect(explicit == plain)
    }
}
