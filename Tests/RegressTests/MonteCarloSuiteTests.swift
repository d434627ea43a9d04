import Foundation
import Testing
@testable import Replay
import Positioning
import TestSupport

/// `MonteCarloSuite` (`posfuse regress --runs`): each metric is the average over the seeded runs,
/// equal to simulating and replaying the same seeds by hand; the seeds are in the trace name.
@Suite struct MonteCarloSuiteTests {
    @Test func averagesEqualRunsSimulatedByHand() throws {
        let folder = PackagePaths.root.appendingPathComponent("Traces/open-street")
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("scenario.yaml").path) else { return }
        let run = try MonteCarloSuite.runResults(scenarioFolders: [folder], runs: 2, firstSeed: 7, duration: 30)
        let t = try #require(run.traces.first)
        #expect(run.traces.count == 1 && t.trace == "open-street (2 runs, seeds 7…8)")
        let scenario = try Scenario.load(url: folder.appendingPathComponent("scenario.yaml"))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var ekfMeans: [Double] = [], gnssInside: [Double] = []
        for seed: UInt64 in [7, 8] {
            let sub = dir.appendingPathComponent("s\(seed)")
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            _ = try Simulator.run(scenario: scenario, options: SimulationOptions(seed: seed, duration: 30),
                                  trace: sub.appendingPathComponent("trace.jsonl"), reference: sub.appendingPathComponent("reference.json"))
            let r = try Replayer().run(try TraceLocation.resolve(sub.path))
            ekfMeans.append(try #require(r.scores.score("ekf")?.statistics?.mean))
            gnssInside.append(try #require(r.scores.score("gnss")?.statistics?.inside95))
        }
        #expect(ekfMeans[0] != ekfMeans[1])   // two different realisations
        #expect(abs(try #require(t.source("ekf")?.metrics["mean_m"]) - (ekfMeans[0] + ekfMeans[1]) / 2) < 1e-12)
        #expect(abs(try #require(t.source("gnss")?.metrics["inside95"]) - (gnssInside[0] + gnssInside[1]) / 2) < 1e-12)
    }
}
