import Foundation
import Testing
@testable import Positioning

/// The online widening of the GNSS bias block (`GNSSBias.excessCovariance`, option
/// `gnss_bias_adaptive_window`): the reported region widens when the bias estimate is larger
/// than the bias model explains, and stays as it was when the model holds (the widening where the
/// bias is larger: `FusionScenarioTests.urbanScenariosWiden`). Seeded: a walker at
/// constant velocity (1.2, −0.5) m/s, constant-velocity layout with a small q (0.01 m²/s³: a
/// motion model that is right and informative, as the PDR is in a walk; with q 0.5 the track
/// follows a 30 s bias and nothing can separate it), GNSS at 1 Hz whose error is a
/// first-order Gauss–Markov bias (τ 30 s) plus white noise; the phone reports σ = 3 m per axis.
@Suite struct BiasDisagreementTests {
    /// Time-averaged NEES and share inside the 95 % region over epochs 60–300 s of `runs` seeded
    /// runs; `biasSigma`/`whiteSigma` per axis, m.
    static func consistency(biasSigma: Double, whiteSigma: Double, widening: Bool, runs: Int = 40) -> (anees: Double, inside95: Double, meanError: Double) {
        var nees = 0.0, inside = 0, n = 0, error = 0.0
        let tau = 30.0, reported = 3.0
        let r95 = ChiSquare.quantile(0.95, dof: 2)
        for r in 0..<runs {
            var s = FusionStage.Settings(kind: .ekf)
            s.layout = .cv
            s.motion.constantVelocity.q = 0.01     // the motion model is right and informative (PDR's role in a walk)
            s.gnssBias = GNSSBias(correlationTime: tau, biasFraction: 0.75, adaptiveWindow: widening ? 30 : nil)
            let stage = FusionStage(settings: s)
            var rng = TestRNG(seed: 9_000 + UInt64(r))
            let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
            var bias = biasSigma * SIMD2(rng.gaussian(), rng.gaussian())
            let phi = exp(-1 / tau)
            for k in 0...300 {
                let t = Double(k)
                if k > 0 { bias = phi * bias + biasSigma * (1 - phi * phi).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian()) }
                let truth = SIMD2(1.2 * t, -0.5 * t)
                let z = truth + bias + whiteSigma * SIMD2(rng.gaussian(), rng.gaussian())
                let f = Fix(time: t, position: z, covariance: Covariance2(sigma: reported), source: .gnss)
                var last: Fix?
                for case .fix(let x) in stage.process(TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: reported))),
                                                      upstream: [.fix(f)], context: context) { last = x }
                guard k >= 60, let x = last, let d2 = x.covariance.mahalanobis2(x.position - truth) else { continue }
                nees += d2; n += 1; error += ((x.position - truth) * (x.position - truth)).sum().squareRoot()
                if d2 <= r95 { inside += 1 }
            }
        }
        return (nees / Double(n), Double(inside) / Double(n), error / Double(n))
    }

    /// The model holds (bias share β = 0.75 of the reported variance, 25 % white): μ stays near 1
    /// and the region is nearly what it was; the estimate itself is never changed by the widening.
    @Test func modelHoldsRegionBarelyMoves() {
        let sb = (0.75 * 9).squareRoot(), sw = (0.25 * 9).squareRoot()
        let off = Self.consistency(biasSigma: sb, whiteSigma: sw, widening: false)
        let on = Self.consistency(biasSigma: sb, whiteSigma: sw, widening: true)
        #expect(on.anees <= off.anees + 1e-12, "widening never narrows: \(on.anees) vs \(off.anees)")
        #expect(on.anees >= 0.8 * off.anees, "ANEES \(off.anees) → \(on.anees): widened where the model holds")
        #expect(on.inside95 <= 0.995, "inside95 \(on.inside95): over-cautious")
        #expect(on.meanError == off.meanError, "the estimate moved: \(off.meanError) → \(on.meanError) m")
    }

    /// μ and U are state of the block: a copy restored after more fixes gives the same excess
    /// (rewinds), and `adapting: false` (radio-map fixes) leaves μ at 1.
    @Test func scaleIsBlockStateAndRadioFixesDoNotFeedIt() throws {
        var block = GNSSBias(correlationTime: 30, biasFraction: 0.75, adaptiveWindow: 5)
        var radio = block
        var x = SIMD4<Double>(0, 0, 0, 0)
        var p = Mat4.identity
        var xr = x, pr = p
        for k in 0..<40 {
            let z = SIMD2<Double>(12, -9)          // a fix 15 m off a track that does not move
            let r1 = block.updateFix(z, covariance: Covariance2(sigma: 3), mean: x, prior: p, gate: nil, angleIndex: nil)
            let out = try #require(r1)
            x = out.mean; p = out.covariance
            let r2 = radio.updateFix(z, covariance: Covariance2(sigma: 3), mean: xr, prior: pr, gate: nil, angleIndex: nil, adapting: false)
            let o2 = try #require(r2)
            xr = o2.mean; pr = o2.covariance
            block.predict(transition: .identity, to: Double(k + 1)); radio.predict(transition: .identity, to: Double(k + 1))
        }
        #expect((block.disagreement?.value ?? 1) > 1.5, "μ \(block.disagreement?.value ?? 1)")
        #expect(radio.disagreement?.value == 1 && radio.excessCovariance == nil)
        let w = try #require(block.excessCovariance)
        #expect(w.ee > 0 && w.nn > 0 && w.determinant >= 0)
        let saved = block
        _ = block.updateFix(SIMD2(12, -9), covariance: Covariance2(sigma: 3), mean: x, prior: p, gate: nil, angleIndex: nil)
        block = saved
        #expect(block.excessCovariance == w)
    }
}
