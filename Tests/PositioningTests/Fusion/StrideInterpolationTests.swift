import Foundation
import Testing
@testable import Positioning

/// `StrideInterpolation`: the step-driven state walks on between heel strikes.
@Suite struct StrideInterpolationTests {
    /// Steps of 0.7 m every 0.5 s: half-way through a stride the walker is advanced 0.35 m, the
    /// step then adds the other 0.35 m; once the IMU shows no motion the advance stops; after a
    /// stop (gap > 1.5 s) the next step is taken whole.
    @Test func regularStridesAndAStop() throws {
        var s = StrideInterpolation()
        let first = s.step(StepInput(time: 0, length: 0.7, headingChange: 0))
        #expect(first.length == 0.7)
        let early = s.advance(to: 0.3, lastMotion: 0.3)
        #expect(early == nil, "no stride period known yet")
        let second = s.step(StepInput(time: 0.5, length: 0.7, headingChange: 0.1))
        #expect(second.length == 0.7)
        let halfway = s.advance(to: 0.75, lastMotion: 0.75)
        let half = try #require(halfway)
        #expect(abs(half.length - 0.35) < 1e-12 && half.isPartial && half.headingChange == 0 && half.time == 0.75)
        let rest = s.step(StepInput(time: 1.0, length: 0.7, headingChange: 0.2))
        #expect(abs(rest.length - 0.35) < 1e-12 && rest.headingChange == 0.2 && !rest.isPartial)
        // Motion evidence ends at 1.1 s: advance 0.7 × 0.1/0.5 = 0.14 m, and no more after it.
        let stopping = s.advance(to: 1.4, lastMotion: 1.1)
        let last = try #require(stopping)
        #expect(abs(last.length - 0.14) < 1e-12)
        let stopped = s.advance(to: 3.0, lastMotion: 1.1)
        #expect(stopped == nil)
        let restart = s.step(StepInput(time: 5.0, length: 0.7, headingChange: 0))
        #expect(restart.length == 0.7, "a start after a stop is whole")
    }

    /// Walking at 2 steps/s past 1 cm fixes every 0.35 s: with the interpolation the emitted track
    /// (fix times and step outputs) is at least twice as accurate as with steps only; a late fix
    /// rewinds to the in-order result exactly (the stride state is part of the history).
    @Test func walkerBetweenHeelStrikes() throws {
        let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
        let speed = 2 * 0.52 * pow(3.0, 0.25)          // Weinberg L̂ for a ±1.5 m/s² bounce, 2 steps/s
        func run(interpolate: Bool, swapLate: Bool = false) -> [Fix] {
            var settings = FusionStage.Settings(kind: .ekf)
            settings.strideInterpolation = interpolate
            let stage = FusionStage(settings: settings)
            var rng = TestRNG(seed: 4)
            var events = StationaryDiffusionTests.imu(until: 30, walkFrom: 2, seed: 5).map { ($0, StageResult?.none) }
            var k = 0
            for t in stride(from: 0.35, through: 30, by: 0.35) {
                k += 1
                let truth = SIMD2(0.0, speed * max(0, t - 2))
                let z = truth + 0.01 * SIMD2(rng.gaussian(), rng.gaussian())
                let f = Fix(time: t, position: z, covariance: Covariance2(sigma: 0.01), source: .tdoa)
                // Late: the fix of t ≈ 20.3 s is delivered 0.2 s after its time (a slow audio result).
                let deliver = swapLate && k == 58 ? t + 0.2 : t
                events.append((TraceEvent(time: deliver, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 1))), .fix(f)))
            }
            let out = StationaryDiffusionTests.replay(events, through: stage, context: context)
            if swapLate { #expect(stage.rewinds > 0) }
            return out
        }
        func meanError(_ fixes: [Fix]) -> Double {
            let walking = fixes.filter { $0.time > 4 }
            return walking.map { f in abs(f.position.y - speed * (f.time - 2)) + abs(f.position.x) }.reduce(0, +) / Double(walking.count)
        }
        let on = run(interpolate: true), off = run(interpolate: false)
        #expect(meanError(on) < 0.5 * meanError(off), "interpolated \(meanError(on)) m vs steps only \(meanError(off)) m")
        let late = run(interpolate: true, swapLate: true)
        let a = try #require(on.last), b = try #require(late.last)
        #expect(abs(a.position.x - b.position.x) < 1e-9 && abs(a.position.y - b.position.y) < 1e-9)
    }
}
