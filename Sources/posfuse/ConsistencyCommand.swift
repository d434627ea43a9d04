import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse evaluate consistency`: filter consistency over seeded Monte Carlo runs (docs/fusion.md).
struct EvaluateConsistency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consistency",
        abstract: "NEES consistency of every source over seeded simulator runs of a scenario.",
        discussion: """
        Simulates the scenario folder's scenario.yaml with seeds S, S+1, …, S+runs−1, replays each
        run through the pipeline (default pipeline plus the opt-in ukf and smoother stages) and reports per source: the mean over runs of the per-run ANEES
        (2-D position NEES averaged over epochs) with its 95 % χ² band (each run counts as one
        χ²₂ sample because epochs are autocorrelated: N = 50 → [1.48, 2.59]), the mean share of
        epochs inside the reported 95 % ellipse, and the mean error; and the tighter band for
        n_eff = N·K̄/τ independent samples, τ the integrated autocorrelation time of the NEES
        within a run (docs/consistency.md).

        Examples:
          posfuse evaluate consistency Traces/mall-sparse-ap --runs 50
          posfuse evaluate consistency Traces/open-street --runs 10 --duration 60 --json
        """.reflowed
    )

    @Argument(help: "Scenario folders (each with scenario.yaml).") var scenarios: [String]
    @Option(help: "Monte Carlo runs per scenario.") var runs: Int = 50
    @Option(name: .customLong("first-seed"), help: "Seed of the first run.") var firstSeed: UInt64 = 1
    @Option(help: "Override the scenario duration, s (shorter runs for quick checks).") var duration: Double?
    @Option(help: "Pipeline configuration (YAML, see docs/pipeline.yaml).") var pipeline: String?
    @Flag(help: "Machine-readable JSON on stdout.") var json = false
    @Flag(name: .customLong("no-progress"), help: "No progress line on stderr.") var noProgress = false

    func validate() throws {
        guard runs >= 1 else { throw ValidationError("--runs must be ≥ 1") }
        if let d = duration, !(d > 0) { throw ValidationError("--duration must be > 0") }
        try requireScenarioFolders(scenarios)
    }

    func run() throws {
        try withExitCodes {
            // The evaluation is about the filters: the opt-in ukf and smoother run too unless
            // the configuration says otherwise (pf stays opt-in: costly over 50 runs).
            var stages = try pipeline.map { try loadPipelineStages($0) } ?? [:]
            for name in ["ukf", "smoother"] where stages[name] == nil {
                stages[name] = StageOptions(name: name, values: ["enabled": .bool(true)])
            }
            var out: [[String: Any]] = []
            for s in scenarios {
                let name = URL(fileURLWithPath: s).lastPathComponent
                let bar = Progress(label: "\(name) runs", total: Int64(runs), enabled: !noProgress)
                let report = try ConsistencyEvaluation.run(scenarioFolder: URL(fileURLWithPath: s), runs: runs, firstSeed: firstSeed,
                                                           duration: duration, stages: stages) { bar.update(completed: Int64($0)) }
                bar.finish()
                let rows = report.sources
                if json {
                    let data = try JSONEncoder().encode(rows), pairs = try JSONEncoder().encode(report.fusedVsBestSingle)
                    out.append(["scenario": name, "runs": runs, "first_seed": firstSeed,
                                "sources": try JSONSerialization.jsonObject(with: data),
                                "fused_vs_best_single": try JSONSerialization.jsonObject(with: pairs)])
                } else {
                    print("\(name): \(runs) runs, seeds \(firstSeed)…\(firstSeed + UInt64(runs) - 1)")
                    print("  source      ANEES   95% band        in band  inside95  mean_m     τ   n_eff  n_eff band      in band")
                    for r in rows {
                        print("  " + r.source.padding(toLength: 10, withPad: " ", startingAt: 0)
                              + String(format: "%7.2f   [%4.2f, %4.2f]   %@  %8.3f  %7.2f  %5.1f  %6.0f  [%4.2f, %4.2f]  %@",
                                       r.anees, r.bandLow, r.bandHigh, r.insideBand ? "yes    " : "no     ", r.inside95, r.meanError,
                                       r.tau, r.effectiveCount, r.effectiveBandLow, r.effectiveBandHigh,
                                       r.insideEffectiveBand ? "yes" : "no"))
                    }
                    for p in report.fusedVsBestSingle {
                        print(String(format: "  %@ vs %@ on the same %d epochs: %.4g vs %.4g m (%.2f ×)", p.fused, p.single, p.epochs,
                                     p.fusedMean, p.singleMean, p.ratio))
                    }
                }
            }
            if json {
                let data = try JSONSerialization.data(withJSONObject: ["scenarios": out], options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            }
        }
    }
}
