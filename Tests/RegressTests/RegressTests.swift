import Testing
import Foundation
@testable import Replay
import Positioning
@testable import TraceIO
import TestSupport

/// Error magnitudes of an autocorrelated 2-D error with σ per axis and a reported r95.
func syntheticEpochs(seed: UInt64, n: Int = 600, sigma: Double = 2, bias: Double = 0, reportedSigma: Double? = nil, phi: Double = 0.9) -> [EpochSample] {
    var g = SplitMix64(seed: seed)
    let ex = g.ar1(n, phi: phi), ey = g.ar1(n, phi: phi)
    let rs = reportedSigma ?? sigma
    let r95 = rs * (-2 * log(0.05)).squareRoot()  // circular Gaussian: σ√(−2 ln 0.05)
    return (0..<n).map { k in
        let e = SIMD2(bias + sigma * ex[k], sigma * ey[k])
        let err = (e.x * e.x + e.y * e.y).squareRoot()
        return EpochSample(time: Double(k), error: err, radius95: r95,
                           nees: Covariance2(sigma: rs).mahalanobis2(e), estimate: e, truth: .zero)
    }
}

@Suite struct EpochMetricsTests {
    @Test func type7QuantilesMatchNumpy() {
        // numpy.percentile([1, 2, 3, 4], 75) = 3.25; of 1…10 at 95 → 9.55; at 50 → 5.5.
        #expect(abs(EpochMetrics.quantile(sorted: [1, 2, 3, 4], 0.75) - 3.25) < 1e-12)
        let x = (1...10).map(Double.init)
        #expect(abs(EpochMetrics.quantile(sorted: x, 0.95) - 9.55) < 1e-12)
        #expect(abs(EpochMetrics.quantile(sorted: x, 0.5) - 5.5) < 1e-12)
        #expect(EpochMetrics.quantile(sorted: [7], 0.3) == 7)
    }

    @Test func metricsOfKnownSeries() {
        let e = [3.0, 4, 0].map { EpochSample(time: 0, error: $0, radius95: 3.5, nees: $0) }
        let m = EpochMetrics.compute(e)
        #expect(abs(m["mean_m"]! - 7.0 / 3) < 1e-12)
        #expect(abs(m["rmse_m"]! - (25.0 / 3).squareRoot()) < 1e-12)
        #expect(m["max_m"] == 4 && m["median_m"] == 3)
        // inside95 uses the ellipse (NEES ≤ 5.991) when NEES is known: 3, 4, 0 are all inside.
        #expect(m["inside95"] == 1)
        // Without NEES it falls back to the circle e ≤ r95: 3 and 0 inside, 4 outside.
        let circle = EpochMetrics.compute([3.0, 4, 0].map { EpochSample(time: 0, error: $0, radius95: 3.5) })
        #expect(abs(circle["inside95"]! - 2.0 / 3) < 1e-12)
        #expect(EpochMetrics.isInside95(EpochSample(time: 0, error: 9, radius95: 1, nees: 6.0)) == false)
        #expect(abs(m["anees"]! - 7.0 / 3) < 1e-12)
        #expect(EpochMetrics.compute([]).isEmpty)
        #expect(EpochMetrics.compute([EpochSample(time: 0, error: 1)])["anees"] == nil)
    }
}

@Suite struct BlockBootstrapTests {
    @Test func blockLengthGrowsWithAutocorrelation() {
        var g = SplitMix64(seed: 7)
        let white = (0..<1000).map { _ in g.gaussian() }
        let red = g.ar1(1000, phi: 0.95)
        let lw = BlockBootstrap.blockLength(white), lr = BlockBootstrap.blockLength(red)
        #expect(lw <= 3)
        #expect(lr >= 10)
        #expect(lr <= 1000 / 3)
        #expect(BlockBootstrap.blockLength([1, 1, 1, 1, 1, 1, 1, 1]) >= 1)
        #expect(BlockBootstrap.blockLength([2]) == 1)
    }

    /// Coverage: over 20 pairs of seeds of the same autocorrelated process, the 95 %
    /// interval of the mean-error change should include 0 about 19 times; a bootstrap that
    /// ignored autocorrelation (ℓ = 1) would miss far more often (its intervals are ~4× narrower).
    @Test func sameProcessTwoSeedsIntervalsIncludeZero() {
        var covered = 0
        for k in 0..<20 {
            let a = syntheticEpochs(seed: UInt64(100 + 2 * k), n: 500, phi: 0.8)
            let b = syntheticEpochs(seed: UInt64(101 + 2 * k), n: 500, phi: 0.8)
            let iv = BlockBootstrap(resamples: 200, seed: 3).differenceIntervals(a, b)
            if iv["mean_m"]!.includesZero { covered += 1 }
            #expect(iv["mean_m"]!.blockLength >= 5)
        }
        #expect(covered >= 16, "covered \(covered) of 20")
    }

    @Test func unpairedWhenEpochsDiffer() {
        let a = syntheticEpochs(seed: 1, n: 500), b = syntheticEpochs(seed: 2, n: 450)
        let iv = BlockBootstrap(resamples: 300, seed: 3).differenceIntervals(a, b)
        #expect(iv["mean_m"]!.paired == false)
        #expect(iv["mean_m"]!.includesZero)
    }

    @Test func realShiftExcludesZero() {
        let a = syntheticEpochs(seed: 1), b = syntheticEpochs(seed: 2, bias: 3)
        let iv = BlockBootstrap(resamples: 500, seed: 3).differenceIntervals(a, b)
        #expect(iv["mean_m"]!.low > 0)
        #expect(iv["anees"]!.low > 0)
    }

    @Test func pairedWhenSameEpochsAndDeterministic() {
        let a = syntheticEpochs(seed: 1)
        let b = syntheticEpochs(seed: 1, reportedSigma: 1)  // same errors, overconfident covariance
        let bs = BlockBootstrap(resamples: 300, seed: 9)
        let iv = bs.differenceIntervals(a, b)
        #expect(iv["mean_m"]!.paired)
        #expect(iv["mean_m"]!.low == 0 && iv["mean_m"]!.high == 0)
        #expect(iv["anees"]!.low > 0)
        #expect(iv["inside95"]!.high < 0)
        #expect(bs.differenceIntervals(a, b) == iv)
        let fixed = BlockBootstrap(resamples: 100, seed: 9, blockLength: 50).differenceIntervals(a, b)
        #expect(fixed["anees"]!.blockLength == 50)
        #expect(bs.differenceIntervals([], b).isEmpty)
    }
}

@Suite struct BaselineTests {
    func run(_ values: [String: [String: Double]], trace: String = "walk") -> RunResults {
        RunResults(label: "r", traces: [TraceResult(trace: trace, sources: values.keys.sorted().map { SourceResult(source: $0, metrics: values[$0]!) })])
    }

    @Test func toleranceDirections() {
        let lower = Tolerance(abs: 0.1, rel: 0.1)
        #expect(lower.allowance(old: 5) == 0.5)
        #expect(lower.worsening(old: 5, new: 5.6) > lower.allowance(old: 5))
        #expect(Tolerance(better: .higher).worsening(old: 1, new: 0.9) > 0)
        let t = Tolerance(abs: 0.03, better: .target, target: 0.95)
        #expect(abs(t.worsening(old: 0.95, new: 0.99) - 0.04) < 1e-12)
        #expect(t.worsening(old: 0.80, new: 0.90) < 0)
    }

    @Test func yamlRoundTrip() throws {
        var b = Baseline()
        b = b.updated(with: run(["gnss": ["count": 120, "mean_m": 3.21456789, "p95_m": 7.5, "inside95": 0.95, "anees": 2.0000001e-5]]))
        b.traces["walk"]!["gnss"]!.tolerances["p95_m"] = Tolerance(abs: 1, better: .lower)
        b.traces["needs quoting: yes"] = ["cell-ta": .init(metrics: ["mean_m": 150])]
        let text = b.yaml()
        let back = try Baseline.parse(text, file: "b.yaml")
        #expect(back.tolerances == b.tolerances)
        #expect(back.traces["walk"]!["gnss"]!.tolerances == b.traces["walk"]!["gnss"]!.tolerances)
        #expect(abs(back.traces["walk"]!["gnss"]!.metrics["mean_m"]! - 3.21457) < 1e-9)
        #expect(abs(back.traces["walk"]!["gnss"]!.metrics["anees"]! - 2e-5) < 1e-12)
        #expect(back.traces["needs quoting: yes"]!["cell-ta"]!.metrics["mean_m"] == 150)
        #expect(back.yaml() == text)
    }

    @Test func badBaselinesAreDataErrors() {
        #expect(throws: ResultsDataError.self) { try Baseline.parse("format: other\n", file: "x") }
        #expect(throws: ResultsDataError.self) { try Baseline.parse("traces: {a: {gnss: {mean_m: fast}}}\n", file: "x") }
        #expect(throws: ResultsDataError.self) { try Baseline.parse("tolerances: {mean_m: {abs: -1}}\n", file: "x") }
        #expect(throws: ResultsDataError.self) { try Baseline.parse("tolerances: {x: {better: target}}\n", file: "x") }
        #expect(throws: ResultsDataError.self) { try Baseline.parse("[1, 2\n", file: "x") }
    }

    @Test func regressionsAreNamedAndJUnitHasOneFailingCasePerPair() throws {
        let base = Baseline().updated(with: run(["gnss": ["mean_m": 3, "p95_m": 6, "inside95": 0.95, "count": 100],
                                                 "wcl": ["mean_m": 4, "availability": 1]]))
        let same = RegressionReport.check(run(["gnss": ["mean_m": 3.01, "p95_m": 6, "inside95": 0.94, "count": 90],
                                               "wcl": ["mean_m": 4, "availability": 1]]), against: base)
        #expect(same.passed)
        let bad = RegressionReport.check(run(["gnss": ["mean_m": 3.5, "p95_m": 6, "inside95": 0.80],
                                              "wcl": ["mean_m": 2, "availability": 0.5]]), against: base)
        #expect(!bad.passed)
        let names = Set(bad.failures.map { "\($0.source).\($0.metric)" })
        #expect(names == ["gnss.mean_m", "gnss.inside95", "wcl.availability"])
        #expect(bad.findings.contains { $0.source == "wcl" && $0.metric == "mean_m" && $0.status == .improved })
        #expect(bad.summary().contains("REGRESSION walk gnss mean_m: regressed 3 → 3.5"))
        let junit = bad.junit()
        #expect(junit.components(separatedBy: "<testcase ").count - 1 == 2)
        #expect(junit.components(separatedBy: "<failure ").count - 1 == 2)
        #expect(junit.contains("tests=\"2\" failures=\"2\""))
        let missing = RegressionReport.check(run(["gnss": ["mean_m": 3, "p95_m": 6, "inside95": 0.95]]), against: base)
        #expect(missing.failures.map(\.metric).sorted() == ["availability", "mean_m"])
        #expect(missing.failures.allSatisfy { $0.status == .missing && $0.source == "wcl" })
        let added = RegressionReport.check(run(["gnss": ["mean_m": 3, "p95_m": 6, "inside95": 0.95], "wcl": ["mean_m": 4, "availability": 1],
                                                "ekf": ["mean_m": 1]]), against: base)
        #expect(added.passed && added.sourcesNotInBaseline == ["walk/ekf"] && added.summary().contains("walk/ekf is not in the baseline"))
        let other = RegressionReport.check(run(["gnss": ["mean_m": 3]], trace: "new"), against: base)
        #expect(other.passed && other.tracesNotInBaseline == ["new"])
    }
}

@Suite struct RunResultsTests {
    @Test func parsesReplayJSONWithEpochs() throws {
        let json = #"""
        {"traces":[{"trace":"walk","skipped":2,"scores":[
          {"source":"gnss","count":3,"mean_m":1.5,"anees":null,"label":"x",
           "epochs":{"t":[0,1,2],"e_m":[1,2,1.5],"r95_m":[3,null,3],"x_m":[1,2,3],"y_m":[0,0,0],"gt_x_m":[0,0,0],"gt_y_m":[0,0,0]}}]}]}
        """#
        let r = try RunResults.parseJSON(Data(json.utf8), file: "r.json")
        let s = try #require(r.trace("walk")?.source("gnss"))
        #expect(s.metrics == ["count": 3, "mean_m": 1.5])
        #expect(s.epochs?.count == 3)
        #expect(s.epochs?[1].radius95 == nil && s.epochs?[2].radius95 == 3)
        #expect(s.epochs?[2].estimate == SIMD2(3, 0))
        #expect(r.trace("walk")?.skipped == 2)
        let cols = EpochSample.jsonColumns(s.epochs!)
        let again = try RunResults.parseEpochs(cols, file: "x", at: "e")
        #expect(again == s.epochs!)
    }

    @Test func malformedRunsAreDataErrors() {
        #expect(throws: ResultsDataError.self) { try RunResults.parseJSON(Data("nope".utf8), file: "x") }
        #expect(throws: ResultsDataError.self) { try RunResults.parseJSON(Data(#"{"runs":[]}"#.utf8), file: "x") }
        #expect(throws: ResultsDataError.self) {
            try RunResults.parseJSON(Data(#"{"traces":[{"trace":"a","scores":[{"source":"gnss","epochs":{"t":[1,2],"e_m":[1]}}]}]}"#.utf8), file: "x")
        }
    }

    @Test func comparisonRowsAndJSON() throws {
        let a = RunResults(label: "A", traces: [TraceResult(trace: "w", sources: [SourceResult(source: "gnss", metrics: EpochMetrics.compute(syntheticEpochs(seed: 1)), epochs: syntheticEpochs(seed: 1))])])
        let b = RunResults(label: "B", traces: [TraceResult(trace: "w", sources: [SourceResult(source: "gnss", metrics: EpochMetrics.compute(syntheticEpochs(seed: 2, bias: 3)), epochs: syntheticEpochs(seed: 2, bias: 3))])])
        let c = RunComparison.compare(a, b, bootstrap: BlockBootstrap(resamples: 200, seed: 1))
        let mean = try #require(c.rows.first { $0.metric == "mean_m" })
        #expect(mean.difference! > 0 && mean.interval!.low > 0)
        #expect(c.table().contains("mean_m"))
        let twice = RunResults(label: "db", traces: a.traces + b.traces).withUniqueTraceNames()
        #expect(twice.traces.map(\.trace) == ["w", "w #2"])
        let obj = try JSONSerialization.jsonObject(with: c.json()) as? [String: Any]
        #expect((obj?["rows"] as? [[String: Any]])?.count == c.rows.count)
    }
}

@Suite struct ProgressTests {
    @Test func silentWhenNotATerminalAndTextIsStable() {
        let p = Progress(label: "replay", total: 200, fileDescriptor: -1)
        #expect(!p.isActive)
        p.update(completed: 50)
        #expect(p.text(width: 10) == "replay [##--------] 25%")
        p.finish()
        let q = Progress(label: "import", enabled: false)
        q.update(completed: 7)
        #expect(!q.isActive && q.text() == "import 7")
    }
}
