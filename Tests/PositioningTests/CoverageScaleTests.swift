import Testing
import Foundation
@testable import Positioning

/// The coverage map's calibration (`CoverageScale`): its pieces exactly, and on seeded maps
/// that the fitted calibration narrows an over-cautious predictive to a 95 %
/// region that holds on new walks of other days.
@Suite struct CoverageScaleTests {
    let id = CellID(rat: .lte, mcc: 302, mnc: 720, area: 29100, cid: 9_751_830)

    /// The pieces exactly: g(ν₀, m) is the predictive's factor (`predictiveCovariance` of an
    /// area with Σ̂ = I, floor aside); the fitted ν₀ is the largest that keeps 95 % inside
    /// (residuals built so that it is ν* = 4 on m = 3 walks); the order statistic is the
    /// ⌈0.95(k + 1)⌉-th most cautious of k fold values (the most cautious while k < 19).
    @Test func exactPieces() throws {
        let a = CellCoverageMap.Area(mean: .zero, covariance: Covariance2(ee: 1, en: 0, nn: 1), count: 9, walks: 3)
        let f = CellCoverageMap.floorSigma(.lte)
        let c = CellCoverageMap.predictiveCovariance(a, rat: .lte)
        #expect(abs(c.ee - (1 + f * f) * CoverageScale.inflation(priorDegrees: 1, walks: 3)) < 1e-9)
        let target = RadioStats.chi2Two95 * CoverageScale.inflation(priorDegrees: 4, walks: 3)
        let x = (0..<95).map { _ in CoverageScale.Residual(q: target, walks: 3) } + (0..<5).map { _ in CoverageScale.Residual(q: 1e9, walks: 3) }
        #expect(abs(CoverageScale.priorDegrees(x) - 4) < 1e-6)
        #expect(CoverageScale.priorDegrees(x.map { CoverageScale.Residual(q: $0.q / 1e6, walks: 3) }) == CoverageScale.priorRange.upperBound)
        #expect(abs(CoverageScale.priorDegrees(x.map { CoverageScale.Residual(q: $0.q * 1e6, walks: 3) }) - CoverageScale.priorRange.lowerBound) < 1e-9)
        #expect(CoverageScale.cautious([0.5, 0.25, 0.75, 0.4], ascendingIsCautious: true) == 0.75)
        #expect(CoverageScale.cautious([0.5, 0.25, 0.75, 0.4], ascendingIsCautious: false) == 0.25)
        let twenty = (1...20).map { Double($0) }, thirtyNine = (1...39).map { Double($0) }
        #expect(CoverageScale.cautious(twenty, ascendingIsCautious: true) == 20)
        #expect(CoverageScale.cautious(thirtyNine, ascendingIsCautious: true) == 38)
        #expect(CoverageScale.cautious([1, 2], ascendingIsCautious: true) == nil)
        // scaled(): the area's factor s·g(ν₀, m)/g(1, m).
        var fit = CoverageScale.Fit(); fit.cell = 0.8; fit.cellPriorDegrees = 4
        let m = CellCoverageMap(areas: [.init(cell: id, timingAdvance: nil): a]).scaled(fit)
        let want = 0.8 * CoverageScale.inflation(priorDegrees: 4, walks: 3) / CoverageScale.inflation(priorDegrees: 1, walks: 3)
        #expect(abs(try #require(m.areas.values.first).scale - want) < 1e-12)
    }

    /// Walks of one day follow one route (the between-walk spread is zero): the predictive of m
    /// walks, built for walks that differ, is over-cautious (inside95 > 0.99 on new walks). The
    /// calibration fitted by inner leave-one-day-out on 6 days narrows it: inside95 on new walks of
    /// other days in [0.90, 0.99], ANEES ≤ 3; both kinds (whole cell, cell + TA) alike.
    @Test func scaleNarrowsAnOverCautiousMap() throws {
        var rng = TestRNG(seed: 2111)
        var reports: [CoverageScale.Report] = []
        let cells = (0..<40).map { CellID(rat: .lte, mcc: 302, mnc: 720, area: 1, cid: $0) }
        let centre = cells.map { _ in SIMD2(2000 * rng.uniform() - 1000, 2000 * rng.uniform() - 1000) }
        func report(_ c: Int) -> SIMD2<Double> { centre[c] + SIMD2(60 * rng.gaussian(), 60 * rng.gaussian()) }
        for day in 0..<6 {
            for c in cells.indices { for _ in 0..<8 { reports.append(.init(cell: cells[c], timingAdvance: 1, position: report(c), walk: day, fold: day)) } }
        }
        let (map, fit) = CoverageScale.map(reports)
        let plain = CoverageScale.map(reports, calibrate: false).map
        #expect(fit.cellResiduals == 40 * 8 * 6 && map.areas.values.allSatisfy { $0.scale < 1 }, "\(fit)")
        var scaled: [Double] = [], unscaled: [Double] = [], ta: [Double] = []
        for c in cells.indices {
            for _ in 0..<50 {
                let x = report(c), o = CellObservation(cell: cells[c], serving: true, timingAdvance: 1)
                let f = try map.fix(o, useTA: false, time: 0, source: .cell).get()
                let g = try plain.fix(o, useTA: false, time: 0, source: .cell).get()
                let t = try map.fix(o, useTA: true, time: 0, source: .cellTA).get()
                scaled.append(try #require(f.covariance.mahalanobis2(x - f.position)))
                unscaled.append(try #require(g.covariance.mahalanobis2(x - g.position)))
                ta.append(try #require(t.covariance.mahalanobis2(x - t.position)))
            }
        }
        let inS = try #require(RadioStats.inside95(scaled)), inU = try #require(RadioStats.inside95(unscaled))
        let inT = try #require(RadioStats.inside95(ta))
        print("coverage calibration \(fit): inside95 \(inU) -> \(inS) (cell-ta \(inT)), ANEES \(RadioStats.mean(scaled)!)")
        #expect(inU > 0.99, "unscaled inside95 \(inU)")
        #expect(inS >= 0.90 && inS <= 0.99 && RadioStats.mean(scaled)! <= 3, "scaled inside95 \(inS)")
        #expect(inT >= 0.90 && inT <= 0.99 && RadioStats.mean(ta)! <= 3, "cell-ta inside95 \(inT)")
    }

    /// Fewer than 3 folds: no calibration (scale 1), whatever the residuals say.
    @Test func tooFewDaysKeepTheModel() {
        let reports = (0..<200).map { i in
            CoverageScale.Report(cell: id, timingAdvance: 2, position: SIMD2(Double(i % 7), Double(i % 5)), walk: i % 4, fold: i % 2)
        }
        let fit = CoverageScale.fit(reports)
        #expect(fit == CoverageScale.Fit())
        #expect(CoverageScale.day(walkStart: 1_604_759_729.318) == 18_573 && CoverageScale.day(walkStart: 12.5) == nil)
    }
}
