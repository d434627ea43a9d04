import Testing
import Foundation
@testable import Replay
import Positioning
@testable import Scoring
import TestSupport

/// Percentiles: Hyndman–Fan type 7 (R. J. Hyndman and Y. Fan, "Sample quantiles in
/// statistical packages", The American Statistician 50(4), 1996), numpy's default.
@Suite struct QuantileTests {
    /// Hand-worked: h = (n − 1)p, Q = x₍⌊h⌋₎ + (h − ⌊h⌋)(x₍⌊h⌋₊₁₎ − x₍⌊h⌋₎).
    @Test(arguments: [
        ([1.0, 2, 3, 4, 5], 0.5, 3.0),      // h = 2
        ([1.0, 2, 3, 4, 5], 0.25, 2.0),     // h = 1
        ([1.0, 2, 3, 4], 0.75, 3.25),       // h = 2.25 → 3 + 0.25·1
        ([1.0, 2, 3, 4], 0.9, 3.7),         // h = 2.7 → 3 + 0.7·1
        ([0.0, 10], 0.95, 9.5),             // h = 0.95 → 0 + 0.95·10
        ([7.0], 0.95, 7.0),                 // one value: every quantile is it
        ([1.0, 2, 3, 4, 5], 1.0, 5.0),
        ([1.0, 2, 3, 4, 5], 0.0, 1.0),
    ])
    func handWorked(data: [Double], p: Double, expected: Double) {
        let q = Quantile.type7(sorted: data, p)
        #expect(q != nil && abs(q! - expected) < 1e-12)
    }

    /// numpy documentation of `numpy.percentile` / `numpy.quantile` (default method
    /// "linear"): a = [[10, 7, 4], [3, 2, 1]]; np.percentile(a, 50) → 3.5.
    @Test func numpyDocumentedExample() {
        let a = Quantile.sorted([10, 7, 4, 3, 2, 1])
        #expect(a == [1, 2, 3, 4, 7, 10])
        #expect(Quantile.type7(sorted: a, 0.5) == 3.5)
    }

    @Test func emptyHasNoQuantile() {
        #expect(Quantile.type7(sorted: [], 0.5) == nil)
    }
}

@Suite struct ErrorStatisticsTests {
    /// Errors (3, 0) and (0, 4): e = 3, 4. mean 3.5, sample std √0.5, RMSE √12.5,
    /// bias (1.5, 2), median 3.5, P95 = 3 + 0.95 = 3.95.
    @Test func handWorkedSummary() throws {
        let s = try #require(ErrorStatistics(errorE: [3, 0], errorN: [0, 4], nees: []))
        #expect(s.count == 2)
        #expect(abs(s.mean - 3.5) < 1e-12)
        #expect(abs(s.std! - 0.5.squareRoot()) < 1e-12)
        #expect(abs(s.rmse - 12.5.squareRoot()) < 1e-12)
        #expect(abs(s.biasE - 1.5) < 1e-12 && abs(s.biasN - 2) < 1e-12)
        #expect(abs(s.median - 3.5) < 1e-12)
        #expect(abs(s.p95 - 3.95) < 1e-12)
        #expect(s.max == 4)
        #expect(s.inside95 == nil && s.anees == nil)
        #expect(s.cdf.count == 21 && s.cdf.first!.error == 3 && s.cdf.last!.error == 4)
    }

    @Test func singleEpochHasNoStd() throws {
        let s = try #require(ErrorStatistics(errorE: [1], errorN: [0], nees: [1]))
        #expect(s.std == nil)
        #expect(s.inside95 == 1 && s.anees == 1)
    }

    @Test func noEpochsNoStatistics() {
        #expect(ErrorStatistics(errorE: [], errorN: [], nees: []) == nil)
    }

    @Test func chiSquare95() {
        #expect(abs(ErrorStatistics.chi2Two95 - 5.991464547107979) < 1e-12)
    }
}

@Suite struct ScorerTests {
    let frame = LocalFrame(origin: Geodetic(latitude: 48, longitude: 11))

    func gt(_ t: Double, _ e: Double, _ n: Double, device: String = "phone") -> TraceEvent {
        TraceEvent(time: t, device: device, payload: .groundTruth(GroundTruth(position: .local(SIMD3(e, n, 0)))))
    }
    func fix(_ t: Double, _ e: Double, _ n: Double, sigma: Double = 1, source: Source = .gnss, subject: String = "phone") -> StageResult {
        .fix(Fix(time: t, position: SIMD2(e, n), covariance: Covariance2(sigma: sigma), source: source, subject: subject))
    }

    @Test func interpolatesBetweenBracketingTruth() throws {
        let s = Scorer(frame: frame)
        var seen: [ScoredEstimate] = []
        s.onEstimate = { seen.append($0) }
        try s.add(event: gt(0, 0, 0))
        try s.add(event: gt(2, 2, 0))
        try s.add([fix(1, 1, 1)])          // truth (1, 0) → error 1
        try s.add([fix(0.5, 0.5, -2)])     // truth (0.5, 0) → error 2
        let r = try s.finish()
        let g = try #require(r.score("gnss"))
        #expect(g.count == 2 && g.fixes == 2)
        #expect(abs(g.statistics!.mean - 1.5) < 1e-12)
        #expect(seen.count == 2 && seen[0].truth == SIMD2(1, 0))
    }

    /// A filter's output at one time is scored once, as its last state at that time (two events at
    /// one time, e.g. a dual-SIM phone's two cells); a stand-alone estimator's two fixes at one
    /// time are two estimates.
    @Test func oneFusionEstimatePerSubjectAndTime() throws {
        let s = Scorer(frame: frame)
        try s.add(event: gt(0, 0, 0))
        try s.add(event: gt(4, 0, 0))
        try s.add([fix(1, 3, 0, source: .ekf), fix(1, 1, 0, source: .cell)])   // intermediate state: error 3
        try s.add([fix(1, 1, 0, source: .ekf), fix(1, 2, 0, source: .cell)])   // after both cells: error 1
        try s.add([fix(2, 2, 0, source: .ekf)])
        let r = try s.finish()
        let e = try #require(r.score("ekf")), c = try #require(r.score("cell"))
        #expect(e.fixes == 2 && e.count == 2 && abs(e.statistics!.mean - 1.5) < 1e-12)
        #expect(c.fixes == 2 && abs(c.statistics!.mean - 1.5) < 1e-12)
    }

    @Test func estimateBeforeItsTruthWaitsForIt() throws {
        let s = Scorer(frame: frame)
        try s.add(event: gt(0, 0, 0))
        try s.add([fix(1, 5, 0)])          // truth at 1 not yet known
        try s.add(event: gt(2, 10, 0))     // now truth(1) = (5, 0)
        let g = try #require(try s.finish().score("gnss"))
        #expect(g.count == 1 && g.statistics!.max < 1e-12)
    }

    @Test func neverExtrapolates() throws {
        let s = Scorer(frame: frame)
        try s.add([fix(-1, 0, 0)])
        try s.add(event: gt(0, 0, 0))
        try s.add(event: gt(1, 1, 0))
        try s.add([fix(1.5, 0, 0)])
        let g = try #require(try s.finish().score("gnss"))
        #expect(g.count == 0 && g.statistics == nil)
        #expect(g.unscored == ["before_truth": 1, "after_truth": 1])
    }

    @Test func truthGapLongerThanLimitIsNotScored() throws {
        for (limit, scored) in [(5.0, 0), (20.0, 1)] {
            let s = Scorer(frame: frame, options: ScoringOptions(maxTruthGap: limit))
            try s.add(event: gt(0, 0, 0))
            try s.add(event: gt(10, 10, 0))
            try s.add([fix(5, 5, 0)])
            try s.add([fix(10, 10, 0)])    // exactly on a sample: always scored
            let g = try #require(try s.finish().score("gnss"))
            #expect(g.count == scored + 1)
            #expect(g.unscored["truth_gap"] == (scored == 0 ? 1 : nil))
        }
    }

    @Test func noTruthForSubject() throws {
        let s = Scorer(frame: frame)
        try s.add(event: gt(0, 0, 0))
        try s.add(event: gt(1, 0, 0))
        try s.add([fix(0.5, 0, 0, subject: "peer9")])
        let g = try #require(try s.finish().score("gnss"))
        #expect(g.unscored == ["no_truth": 1])
    }

    @Test func geodeticTruthUsesHeaderFrame() throws {
        let s = Scorer(frame: frame)
        let north = frame.geodetic(east: 0, north: 100)
        try s.add(event: TraceEvent(time: 0, payload: .groundTruth(GroundTruth(position: .geodetic(frame.origin)))))
        try s.add(event: TraceEvent(time: 2, payload: .groundTruth(GroundTruth(position: .geodetic(north)))))
        try s.add([fix(1, 0, 50)])
        let g = try #require(try s.finish().score("gnss"))
        #expect(g.statistics!.max < 1e-6)
    }

    /// σ = 1 m isotropic: error (1, 0) → NEES 1 (inside the 95 % ellipse), (3, 0) → 9
    /// (outside). inside95 = 1/2, ANEES = 5.
    @Test func calibrationByHand() throws {
        let s = Scorer(frame: frame)
        try s.add(event: gt(0, 0, 0)); try s.add(event: gt(5, 0, 0))
        try s.add([fix(1, 1, 0), fix(2, 3, 0)])
        let g = try #require(try s.finish().score("gnss")?.statistics)
        #expect(g.inside95 == 0.5)
        #expect(abs(g.anees! - 5) < 1e-12)
    }

    /// Seeded Monte Carlo: errors drawn from the reported covariance give
    /// inside95 ≈ 0.95 and ANEES ≈ 2 (N = 20,000; 5σ bounds ≈ ±0.008 and ±0.07).
    @Test func consistentEstimatorIsCalibrated() throws {
        var rng = SplitMix64(seed: 42)
        let s = Scorer(frame: frame, options: ScoringOptions(maxTruthGap: 1e9))
        let cov = Covariance2(ee: 4, en: 1.5, nn: 2)     // Cholesky L = [[2, 0], [0.75, √1.4375]]
        let l21 = 0.75, l22 = 1.4375.squareRoot()
        let n = 20_000
        try s.add(event: gt(0, 0, 0)); try s.add(event: gt(Double(n), 0, 0))
        for k in 0..<n {
            let z1 = rng.gaussian(), z2 = rng.gaussian()
            let d = SIMD2(2 * z1, l21 * z1 + l22 * z2)
            try s.add([.fix(Fix(time: Double(k), position: d, covariance: cov, source: .wcl))])
        }
        let g = try #require(try s.finish().score("wcl")?.statistics)
        #expect(abs(g.inside95! - 0.95) < 0.01)
        #expect(abs(g.anees! - 2) < 0.1)
        #expect(abs(g.biasE) < 0.1 && abs(g.biasN) < 0.1)
    }

    /// Truth 0…10 s (1 Hz); estimates at 0, 1, 2 s, each valid 2 s → [0, 4] covered: 0.4.
    @Test func availabilityIsShareOfTruthTime() throws {
        let s = Scorer(frame: frame, options: ScoringOptions(fixValidity: 2))
        for t in 0...10 { try s.add(event: gt(Double(t), 0, 0)) }
        try s.add([fix(0, 0, 0), fix(1, 0, 0), fix(2, 0, 0)])
        let r = try s.finish()
        #expect(abs(r.truthSeconds - 10) < 1e-12)
        #expect(abs(r.score("gnss")!.availability! - 0.4) < 1e-12)
    }

    /// Gaps longer than the limit are not truth time: truth 0–4 s and 20–24 s → 8 s.
    @Test func availabilityExcludesTruthGaps() throws {
        let s = Scorer(frame: frame, options: ScoringOptions(maxTruthGap: 5, fixValidity: 2))
        for t in [0.0, 2, 4, 20, 22, 24] { try s.add(event: gt(t, 0, 0)) }
        try s.add([fix(20, 0, 0), fix(21, 0, 0), fix(22, 0, 0), fix(23, 0, 0)])   // covers 20–24
        let r = try s.finish()
        #expect(abs(r.truthSeconds - 8) < 1e-12)
        #expect(abs(r.score("gnss")!.availability! - 0.5) < 1e-12)
    }

    @Test func objectsAreStaticAndGroupedSeparately() throws {
        let s = Scorer(frame: frame)
        try s.add(event: gt(0, 0, 0)); try s.add(event: gt(5, 0, 0)); try s.add(event: gt(10, 0, 0))
        try s.add(event: gt(5, 100, 50, device: "object:tower"))
        try s.add(event: gt(5, -10, 0, device: "object:barn"))
        try s.add([fix(8, 103, 54, source: .camloc, subject: "object:tower"),   // after its only sample: static
                   fix(3, 1, 0, source: .camloc)])
        let r = try s.finish()
        let obj = try #require(r.score("camloc:object"))
        #expect(obj.group == .objects && obj.count == 1 && abs(obj.statistics!.mean - 5) < 1e-12)
        #expect(obj.availability == 0.5)      // one of two objects located
        let phone = try #require(r.score("camloc"))
        #expect(phone.count == 1 && abs(phone.statistics!.mean - 1) < 1e-12)
        #expect(r.sources.map(\.key) == ["camloc", "camloc:object"])
    }

    @Test func failuresAreCountedBySourceAndReason() throws {
        let s = Scorer(frame: frame)
        try s.add([.failure(source: .wcl, time: 1, subject: "phone", reason: .tooFewAnchors(needed: 3, got: 1)),
                   .failure(source: .wcl, time: 2, subject: "phone", reason: .tooFewAnchors(needed: 3, got: 2)),
                   .failure(source: .tdoa, time: 2, subject: "phone", reason: .notConverged)])
        let r = try s.finish()
        #expect(r.failures == ["wcl": ["too_few_anchors": 2], "tdoa": ["not_converged": 1]])
        #expect(r.sources.isEmpty)
    }

    /// Memory stays flat without truth: estimates no future truth can bracket are settled
    /// as the stream moves on (subject without truth → no_truth; truth stopped for longer
    /// than the gap → truth_gap), not kept until the end.
    @Test func hopelessEstimatesDoNotAccumulate() throws {
        let s = Scorer(frame: frame)
        try s.add(event: gt(0, 0, 0)); try s.add(event: gt(1, 0, 0))
        let imu = TraceEvent(time: 0, payload: .imu(IMUSample(kind: .accelerometer, x: 0)))
        var maxPending = 0
        for k in 0..<20_000 {
            let t = 2 + Double(k) * 0.01
            var e = imu; e.time = t
            try s.add(event: e)
            if k % 100 == 0 { try s.add([fix(t, 0, 0), fix(t, 0, 0, subject: "ghost")]) }
            maxPending = max(maxPending, s.pendingCount)
        }
        #expect(maxPending < 20)
        let g = try #require(try s.finish().score("gnss"))
        #expect(g.fixes == 400 && g.count == 0)
        #expect(g.unscored["no_truth"] == 200)
        #expect((g.unscored["truth_gap"] ?? 0) + (g.unscored["after_truth"] ?? 0) == 200)
    }

    @Test func keepsEpochsOnRequest() throws {
        let s = Scorer(frame: frame, options: ScoringOptions(keepEpochs: true))
        try s.add(event: gt(0, 0, 0)); try s.add(event: gt(2, 0, 0))
        try s.add([fix(1, 3, 4, sigma: 2)])
        let e = try #require(try s.finish().score("gnss")?.epochs?.first)
        #expect(e.error == 5 && e.truth == SIMD2(0, 0))
        #expect(abs(e.radius95! - 2 * 2.4477468306808) < 1e-3)   // circular: σ√(−2 ln 0.05)
        #expect(abs(e.nees! - 25.0 / 4) < 1e-12)
    }
}
