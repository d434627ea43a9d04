import Foundation
import Testing
@testable import Positioning

/// `GNSSAccuracyCalibration`: the per-bin median-NEES fit is exact on constructed samples,
/// recovers a known optimism from seeded Gaussian errors within its sampling error, never
/// splits equal reported accuracies, and is applied by `GNSSEstimator` and the `gnss` stage.
@Suite struct GNSSAccuracyCalibrationTests {
    typealias Sample = GNSSAccuracyCalibration.Sample

    /// Two groups whose NEES all equal 2 ln 2 · α²: the median is that value, so α is exact;
    /// the edge is the geometric mean of the last r of the first bin and the first of the second.
    @Test func exactOnConstructedSamples() throws {
        let m = GNSSAccuracyCalibration.chiSquare2Median
        let a = (0..<300).map { Sample(reportedAccuracy: 2 + Double($0) / 300, nees: m * 1.0) }    // r 2.000…2.997, α 1
        let b = (0..<300).map { Sample(reportedAccuracy: 8 + Double($0) / 300, nees: m * 2.25) }   // r 8…, α 1.5
        var g = TestRNG(seed: 3)
        let (c, bins) = try #require(GNSSAccuracyCalibration.fit((b + a).shuffled(using: &g), minPerBin: 300, maxBins: 8))
        #expect(bins.count == 2 && bins.map(\.count) == [300, 300])
        #expect(abs(c.factors[0] - 1) < 1e-12 && abs(c.factors[1] - 1.5) < 1e-12)
        #expect(abs(c.edges[0] - (2.99666666666666667 * 8).squareRoot()) < 1e-12)
        #expect(c.factor(forAccuracy: 1) == 1 && c.factor(forAccuracy: 4.89) == 1 && c.factor(forAccuracy: 4.9) == 1.5
                && c.factor(forAccuracy: 100) == 1.5)
    }

    /// Reported accuracies quantised to 1 m (many ties): no value lands in two bins; all equal → one bin.
    @Test func tiesAreNeverSplit() throws {
        var rng = TestRNG(seed: 7)
        let s = (0..<2000).map { _ in Sample(reportedAccuracy: Double(Int(rng.uniform() * 4) + 2), nees: 1) }
        let (c, bins) = try #require(GNSSAccuracyCalibration.fit(s, minPerBin: 200, maxBins: 8))
        #expect(bins.count <= 4)
        for (x, y) in zip(bins, bins.dropFirst()) { #expect(x.upperAccuracy < y.lowerAccuracy) }
        #expect(zip(c.edges, c.edges.dropFirst()).allSatisfy { $0 < $1 })
        let same = (0..<500).map { _ in Sample(reportedAccuracy: 5, nees: 1) }
        #expect(try #require(GNSSAccuracyCalibration.fit(same, minPerBin: 100)).calibration.edges.isEmpty)
        #expect(GNSSAccuracyCalibration.fit(Array(same.prefix(99)), minPerBin: 100) == nil)
    }

    /// Seeded phone: r log-normal around 5 m; the true σ is the reported one below r = 5 m and
    /// 1.6× it above (optimistic when it reports worse), plus 5 % outliers of 30 m. 20,000 fixes
    /// in 8 bins of 2,500: the median's relative standard error on α² is ≈ 1.25/√2500 = 2.5 %,
    /// 1.25 % on α; bins entirely on one side must give 1 or 1.6 within 5 % (4σ), despite the
    /// outliers (which would inflate a mean-based α² by 5 % × 900/σ² ≫ 1).
    @Test func recoversKnownOptimism() throws {
        var rng = TestRNG(seed: 11)
        var s: [Sample] = []
        for _ in 0..<20_000 {
            let r = 5 * exp(0.4 * rng.gaussian())
            let sigmaReported = r / 1.5096, sigmaTrue = sigmaReported * (r < 5 ? 1 : 1.6)
            var e = sigmaTrue * SIMD2(rng.gaussian(), rng.gaussian())
            if rng.uniform() < 0.05 { let a = 2 * Double.pi * rng.uniform(); e += 30 * SIMD2(cos(a), sin(a)) }
            s.append(Sample(reportedAccuracy: r, nees: (e * e).sum() / (sigmaReported * sigmaReported)))
        }
        let (_, bins) = try #require(GNSSAccuracyCalibration.fit(s, minPerBin: 2500, maxBins: 8))
        #expect(bins.count == 8)
        for b in bins where b.upperAccuracy < 5 || b.lowerAccuracy >= 5 {
            let truth = b.upperAccuracy < 5 ? 1.0 : 1.6
            // The 5 % outliers shift a bin's median by ≈ 5 % of a quantile (≈ +0.1 on 2 ln 2 for α = 1): 5 % on α.
            #expect(abs(b.factor / truth - 1) < 0.08, "r \(b.lowerAccuracy)–\(b.upperAccuracy): α \(b.factor) vs \(truth)")
        }
    }

    @Test func appliedByTheEstimatorAndTheStage() throws {
        let c = try #require(GNSSAccuracyCalibration(edges: [4], factors: [1, 2]))
        let est = GNSSEstimator(calibration: c)
        #expect(abs(est.sigma(forAccuracy: 3) - 3 / (-2 * log(0.32)).squareRoot()) < 1e-12)
        #expect(abs(est.sigma(forAccuracy: 6) - 12 / (-2 * log(0.32)).squareRoot()) < 1e-12)
        #expect(GNSSAccuracyCalibration(edges: [4, 3], factors: [1, 1, 1]) == nil)
        #expect(GNSSAccuracyCalibration(edges: [4], factors: [1]) == nil)
        #expect(GNSSAccuracyCalibration(edges: [4], factors: [1, 0]) == nil)
        let good = StageOptions(name: "gnss", values: ["calibration_edges_m": .list([.number(4)]),
                                                        "calibration_factors": .list([.number(1), .number(2)])])
        let stage = try #require(try StageRegistry.entries.first { $0.name == "gnss" }!.make(good) as? GNSSStage)
        #expect(stage.estimator.calibration == c)
        let bad = StageOptions(name: "gnss", values: ["calibration_factors": .list([.number(1), .number(2)])])
        #expect(throws: ConfigurationError.self) { _ = try StageRegistry.entries.first { $0.name == "gnss" }!.make(bad) }
    }
}
