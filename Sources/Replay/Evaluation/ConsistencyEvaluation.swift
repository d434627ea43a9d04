import Foundation
import Positioning

/// Filter consistency over seeded Monte Carlo runs of a simulator scenario
/// (`design/estimators.md` §7.6; `posfuse evaluate consistency`).
///
/// Each run simulates the scenario with seed `firstSeed + k` (same venue, new noise), replays it
/// through the pipeline and scores every source. Per source and run: ANEESᵣ = mean over epochs of
/// eᵀP⁻¹e (2-D position, n = 2), the share inside the reported 95 % ellipse, the mean error.
///
/// **Band.** Under consistency E[ANEESᵣ] = n. Epochs of one run are strongly autocorrelated
/// (a filter's error changes slowly), so they are *not* treated as independent samples: each run
/// counts as one χ²ₙ sample, and the two-sided 95 % band of the mean over N runs is
/// [χ²_{Nn}(0.025), χ²_{Nn}(0.975)] / N (N = 50, n = 2: [1.48, 2.59]). This is the conservative
/// (widest) choice; with independent epochs the band would be far narrower.
public enum ConsistencyEvaluation {
    public struct SourceRow: Sendable, Codable, Equatable {
        public var source: String
        public var runs: Int
        /// Mean over runs of the per-run ANEES.
        public var anees: Double
        public var bandLow: Double
        public var bandHigh: Double
        public var insideBand: Bool
        /// Mean over runs of the share of epochs inside the reported 95 % ellipse.
        public var inside95: Double
        /// Mean over runs of the mean error, m.
        public var meanError: Double
        enum CodingKeys: String, CodingKey {
            case source, runs, anees, bandLow = "band_low", bandHigh = "band_high", insideBand = "inside_band"
            case inside95, meanError = "mean_m"
        }
    }

    /// The 95 % band of the mean of `runs` χ²ₙ values.
    public static func band(runs: Int, dimension n: Int = 2) -> ClosedRange<Double> {
        let dof = runs * n
        return ChiSquare.quantile(0.025, dof: dof) / Double(runs)...ChiSquare.quantile(0.975, dof: dof) / Double(runs)
    }

    /// Runs the Monte Carlo evaluation of one scenario folder (`scenario.yaml` inside).
    public static func run(scenarioFolder: URL, runs: Int, firstSeed: UInt64 = 1, duration: Double? = nil,
                           stages: [String: StageOptions] = [:], progress: ((Int) -> Void)? = nil) throws -> [SourceRow] {
        let scenario = try Scenario.load(url: scenarioFolder.appendingPathComponent("scenario.yaml"))
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-consistency-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var perSource: [String: (anees: [Double], inside: [Double], mean: [Double])] = [:]
        var order: [String] = []
        for k in 0..<runs {
            let trace = work.appendingPathComponent("trace.jsonl"), ref = work.appendingPathComponent("reference.json")
            _ = try Simulator.run(scenario: scenario, options: SimulationOptions(seed: firstSeed + UInt64(k), duration: duration),
                                  trace: trace, reference: ref)
            let r = try Replayer(options: ReplayOptions(stages: stages)).run(try TraceLocation.resolve(work.path))
            for s in r.scores.sources {
                guard let st = s.statistics, let a = st.anees, let i = st.inside95 else { continue }
                if perSource[s.key] == nil { order.append(s.key) }
                perSource[s.key, default: ([], [], [])].anees.append(a)
                perSource[s.key]!.inside.append(i)
                perSource[s.key]!.mean.append(st.mean)
            }
            progress?(k + 1)
        }
        return order.map { key in
            let v = perSource[key]!
            let n = v.anees.count
            let b = band(runs: n)
            let anees = v.anees.reduce(0, +) / Double(n)
            return SourceRow(source: key, runs: n, anees: anees, bandLow: b.lowerBound, bandHigh: b.upperBound,
                             insideBand: b.contains(anees), inside95: v.inside.reduce(0, +) / Double(n),
                             meanError: v.mean.reduce(0, +) / Double(n))
        }
    }
}
