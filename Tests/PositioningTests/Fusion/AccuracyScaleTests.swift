import Foundation
import Testing
@testable import Positioning

/// The NIS-driven accuracy scale (`AccuracyScale`): calibrated sources stay near 1, optimistic
/// ones are scaled up to consistency, outliers count only up to the gate.
@Suite struct AccuracyScaleTests {
    /// NIS of 2-D innovations ν ~ N(0, c I) normalised by the scaled covariance λ I.
    static func stream(c: Double, fixes: Int, seed: UInt64) -> [Double] {
        var rng = TestRNG(seed: seed)
        var scale = AccuracyScale()
        var values: [Double] = []
        for _ in 0..<fixes {
            let nu = c.squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
            scale.observe(nis: (nu * nu).sum() / scale.value)
            values.append(scale.value)
        }
        return values
    }

    @Test func calibratedSourceStaysNearOne() {
        let v = Self.stream(c: 1, fixes: 5000, seed: 1)
        let mean = v.reduce(0, +) / Double(v.count)
        // The scale never goes below 1 (a bias the innovations cannot show may hide behind small
        // NIS), so on a calibrated source it wanders a little above 1.
        #expect(v.allSatisfy { $0 >= 1 })
        #expect(mean < 1.15, "mean scale \(mean)")
    }

    /// A source whose σ is 2× its reported value (variance × 4): the scale settles where the
    /// clipped NIS averages its expectation, λ ≈ 4, within about 3 windows.
    @Test func optimisticSourceIsScaledToConsistency() {
        let v = Self.stream(c: 4, fixes: 3000, seed: 2)
        let tail = v[300...]
        let mean = tail.reduce(0, +) / Double(tail.count)
        #expect(abs(mean - 4) < 0.5, "mean scale \(mean) for a variance 4× the reported")
        #expect(v[99] > 3, "after 100 fixes: \(v[99])")
    }

    /// A gated outlier counts as a NIS at the gate: one raises the scale by at most
    /// (g/ē − 1)/window ≈ 12 %, however far off it is.
    @Test func outliersCountOnlyUpToTheGate() {
        var a = AccuracyScale(), b = AccuracyScale()
        a.observe(nis: 10); b.observe(nis: 1e9)
        #expect(a.value == b.value)
        #expect(abs(b.value - (1 + (AccuracyScale.clip / AccuracyScale.expectedClipped - 1) / 30)) < 1e-12 && b.value < 1.13)
    }

    /// End to end: GNSS fixes with white errors of σ = 6 m reported as 3 m, a walker at constant
    /// velocity (no bias states, to isolate the scale). Without the scale the filter is
    /// over-confident by about the factor 4; with it the NEES at epoch 80 over 200 runs is near 2.
    @Test func filterWithScaleIsConsistentOnOptimisticFixes() {
        func anees(adaptive: Bool) -> Double {
            var total = 0.0
            let runs = 200
            for r in 0..<runs {
                var s = FusionStage.Settings(kind: .ekf)
                s.gnssBias = nil; s.inflation = [:]; s.layout = .cv
                s.adaptiveAccuracy = adaptive ? [.gnss] : []
                let stage = FusionStage(settings: s)
                var rng = TestRNG(seed: 500 + UInt64(r))
                let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
                var last: Fix?
                var truth = SIMD2<Double>.zero
                for k in 0...80 {
                    let t = Double(k)
                    truth = SIMD2(1.2 * t, -0.5 * t)
                    let z = truth + 6 * SIMD2(rng.gaussian(), rng.gaussian())
                    let f = Fix(time: t, position: z, covariance: Covariance2(sigma: 3), source: .gnss)
                    for out in stage.process(TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 3))),
                                             upstream: [.fix(f)], context: context) {
                        if case .fix(let x) = out { last = x }
                    }
                }
                total += last.flatMap { $0.covariance.mahalanobis2($0.position - truth) } ?? .infinity
            }
            return total / Double(runs)
        }
        let without = anees(adaptive: false), with = anees(adaptive: true)
        #expect(without > 5, "without the scale: ANEES \(without)")
        #expect((1.6...2.6).contains(with), "with the scale: ANEES \(with)")
    }
}
