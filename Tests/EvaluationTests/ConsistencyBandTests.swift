import Foundation
import Testing
@testable import Replay
import Positioning
import TestSupport

/// The effective-sample band of `ConsistencyEvaluation`: τ of known processes and the band.
@Suite struct ConsistencyBandTests {
    /// AR(1) with coefficient φ has τ = (1 + φ)/(1 − φ): 9 for φ = 0.8, 1 for white noise.
    @Test func integratedAutocorrelationOfAR1() {
        var rng = SplitMix64(seed: 17)
        func ar1(_ phi: Double, _ n: Int) -> [Double] {
            var x = 0.0, out: [Double] = []
            for _ in 0..<n { x = phi * x + (1 - phi * phi).squareRoot() * rng.gaussian(); out.append(x) }
            return out
        }
        let runs = (0..<40).map { _ in ar1(0.8, 2000) }
        let tau = ConsistencyEvaluation.integratedAutocorrelation(runs)
        #expect(abs(tau - 9) < 1.0, "τ = \(tau), expected 9")
        let white = ConsistencyEvaluation.integratedAutocorrelation((0..<40).map { _ in ar1(0, 2000) })
        #expect(white >= 1 && white < 1.2, "white-noise τ = \(white)")
        #expect(ConsistencyEvaluation.integratedAutocorrelation([[3, 3, 3]]) == 1)
        #expect(ConsistencyEvaluation.integratedAutocorrelation([]) == 1)
    }

    /// band(count:) with an integer count equals band(runs:); it narrows as n_eff grows.
    @Test func effectiveBand() {
        let a = ConsistencyEvaluation.band(count: 50), b = ConsistencyEvaluation.band(runs: 50)
        #expect(abs(a.lowerBound - b.lowerBound) < 1e-12 && abs(a.upperBound - b.upperBound) < 1e-12)
        let wide = ConsistencyEvaluation.band(count: 160.5), narrow = ConsistencyEvaluation.band(count: 1600)
        #expect(wide.lowerBound < narrow.lowerBound && narrow.upperBound < wide.upperBound)
        #expect(narrow.contains(2) && !narrow.contains(2.2))
        // Very large n_eff (dense TDoA epochs): no crash, a band that shrinks around 2.
        let huge = ConsistencyEvaluation.band(count: 5e6)
        #expect(huge.lowerBound < 2 && huge.upperBound > 2 && huge.upperBound - huge.lowerBound < 0.01, "\(huge)")
        let mid = ConsistencyEvaluation.band(count: 9000), wh = ConsistencyEvaluation.band(count: 11000)
        #expect(mid.lowerBound < wh.lowerBound && wh.upperBound < mid.upperBound)
    }

    /// A model-matched AR(1) NEES-like sequence: χ²₂ values built from an AR(1) Gaussian pair are
    /// still χ²₂ marginally; their mean lies in the effective band far more often than the naive
    /// N·K band would allow (seeded: one fixed draw).
    @Test func correlatedChiSquareMeanFallsInEffectiveBand() {
        var rng = SplitMix64(seed: 23)
        let phi = 0.95, runs = 50, k = 120
        var seqs: [[Double]] = []
        for _ in 0..<runs {
            var e = SIMD2<Double>(rng.gaussian(), rng.gaussian()), s: [Double] = []
            for _ in 0..<k {
                e = phi * e + (1 - phi * phi).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
                s.append((e * e).sum())
            }
            seqs.append(s)
        }
        let mean = seqs.joined().reduce(0, +) / Double(runs * k)
        let tau = ConsistencyEvaluation.integratedAutocorrelation(seqs)
        let band = ConsistencyEvaluation.band(count: Double(runs * k) / tau)
        #expect(band.contains(mean), "mean \(mean) τ \(tau) band \(band)")
        #expect(tau > 5, "χ² of an AR(0.95) pair is correlated: τ \(tau)")
    }
}
