import Foundation
import Testing
@testable import Replay
import Positioning
import TestSupport

@Suite struct ConsistencyEvaluationTests {
    static let root = PackagePaths.root

    /// The band of the mean of N χ²₂ values; reference values from docs/models.md §7.6
    /// (generated with scipy.stats.chi2.ppf): N = 50 → [1.48, 2.59], N = 100 → [1.63, 2.41].
    @Test func bandMatchesReference() {
        let b50 = ConsistencyEvaluation.band(runs: 50), b100 = ConsistencyEvaluation.band(runs: 100)
        #expect(abs(b50.lowerBound - 1.48) < 0.005 && abs(b50.upperBound - 2.59) < 0.005, "\(b50)")
        #expect(abs(b100.lowerBound - 1.63) < 0.005 && abs(b100.upperBound - 2.41) < 0.005, "\(b100)")
        let b1 = ConsistencyEvaluation.band(runs: 1)                      // single epoch n = 2: [0.051, 7.38]
        #expect(abs(b1.lowerBound - 0.0506) < 0.001 && abs(b1.upperBound - 7.38) < 0.01)
    }

    /// A short seeded Monte Carlo of open-street: deterministic, and the filters are consistent.
    @Test func shortOpenStreetRunIsDeterministicAndConsistent() throws {
        let folder = Self.root.appendingPathComponent("Traces/open-street")
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("scenario.yaml").path) else { return }
        let smoother = ["smoother": StageOptions(name: "smoother", values: ["enabled": .bool(true)])]
        let report = try ConsistencyEvaluation.run(scenarioFolder: folder, runs: 3, firstSeed: 7, duration: 40, stages: smoother)
        let b = try ConsistencyEvaluation.run(scenarioFolder: folder, runs: 3, firstSeed: 7, duration: 40, stages: smoother)
        #expect(report == b)
        let a = report.sources
        let ekf = try #require(a.first { $0.source == "ekf" })
        #expect(ekf.runs == 3 && ekf.anees.isFinite)
        #expect(ekf.insideBand, "ekf ANEES \(ekf.anees) outside [\(ekf.bandLow), \(ekf.bandHigh)]")
        #expect(a.contains { $0.source == "gnss" } && a.contains { $0.source == "smoother" })
        // Fused vs the best stand-alone source (gnss here) on common epochs: the GNSS epochs are
        // the filter's output epochs too, so the paired means are close to the unpaired ones.
        let pair = try #require(report.fusedVsBestSingle.first { $0.fused == "smoother" })
        let gnss = try #require(a.first { $0.source == "gnss" })
        #expect(pair.single == "gnss" && pair.epochs > 0 && abs(pair.singleMean - gnss.meanError) < 0.1 * gnss.meanError)
        #expect(abs(pair.ratio - pair.fusedMean / pair.singleMean) < 1e-12 && pair.ratio < 1)
    }
}
