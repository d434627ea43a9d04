import ArgumentParser
import Foundation
import Replay

struct Regress: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "regress",
        abstract: "Replay a trace suite and fail when accuracy regressed against a committed baseline.",
        discussion: """
        Replays every trace (default: the folders of Traces/) with the pipeline configuration and \
        checks each trace × source × metric against the baseline file, under the per-metric \
        tolerances written in it. Regressions are named: trace, source, metric, old → new. \
        --update-baseline rewrites the baseline from this run (tolerances are kept); --junit FILE \
        writes JUnit XML, one test case per trace × source. Format and CI use: docs/regress.md.

        --runs N gates seeded Monte Carlo runs instead of the bundled realisations: every scenario \
        folder (default: the folders of Traces/ with a scenario.yaml) is simulated with seeds S…S+N−1, \
        replayed and scored, and each metric is averaged over the runs before the check (a baseline \
        of its own, e.g. Traces/baseline-montecarlo.yaml).

        Examples:
          posfuse regress --baseline Traces/baseline.yaml --junit regress.xml
          posfuse regress --baseline Traces/baseline-montecarlo.yaml --runs 10
          posfuse regress --baseline Traces/baseline.yaml --update-baseline
          posfuse regress --baseline Traces/baseline.yaml --pipeline my.yaml \\
            Traces/urban-canyon

        Exit codes: 0 within tolerance, 1 regression, 64 usage, 65 bad data.
        """.reflowed
    )

    @Option(help: "Baseline file (YAML).") var baseline: String
    @Option(help: "Pipeline configuration (YAML).") var pipeline: String?
    @Flag(name: .customLong("update-baseline"), help: "Rewrite the baseline from this run instead of checking.")
    var updateBaseline = false
    @Option(help: "Write JUnit XML here.") var junit: String?
    @Option(help: "Check an existing `posfuse replay --json` output instead of replaying.") var results: String?
    @Flag(help: "Stop at the first malformed trace line (exit 65).") var strict = false
    @Flag(help: "Print the findings as JSON.") var json = false
    @Option(help: "Gate the mean over this many seeded simulator runs of each scenario folder instead of its bundled trace.")
    var runs: Int?
    @Option(name: .customLong("first-seed"), help: "With --runs: the seed of the first run.") var firstSeed: UInt64 = 1
    @Argument(help: "Traces or scenario folders (default: Traces/).") var traces: [String] = []

    func validate() throws {
        if results != nil && (!traces.isEmpty || pipeline != nil || runs != nil) {
            throw ValidationError("--results checks a finished run: give no traces, no --pipeline and no --runs")
        }
        if let r = runs, r < 1 { throw ValidationError("--runs must be ≥ 1") }
    }

    /// With --runs: the scenario folders given, or every folder of Traces/ with a scenario.yaml.
    func scenarioFolders() throws -> [URL] {
        if !traces.isEmpty {
            try requireScenarioFolders(traces, note: " (needed with --runs)")
            return traces.map { URL(fileURLWithPath: $0) }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "Traces")) ?? []
        return names.sorted().map { "Traces/" + $0 }.filter(isScenarioFolder).map { URL(fileURLWithPath: $0) }
    }

    func run() throws {
        try withExitCodes {
            do {
                let url = URL(fileURLWithPath: baseline)
                let exists = FileManager.default.fileExists(atPath: url.path)
                if !exists && !updateBaseline {
                    throw ResultsDataError(file: baseline, reason: "no such baseline (create it with --update-baseline)")
                }
                let base = exists ? try Baseline.load(url: url) : Baseline()
                let run: RunResults
                if let results {
                    run = try RunResults.load(url: URL(fileURLWithPath: results))
                } else if let runs {
                    let folders = try scenarioFolders()
                    let stages = try pipeline.map { try loadPipelineStages($0) } ?? [:]
                    let bar = Progress(label: "regress runs", total: Int64(folders.count * runs), enabled: Progress.shouldShow(json: json))
                    run = try MonteCarloSuite.runResults(scenarioFolders: folders, runs: runs, firstSeed: firstSeed, stages: stages) { i, k in
                        bar.update(completed: Int64(i * runs + k))
                    }
                    bar.finish()
                } else {
                    run = try replaySuite(traces.isEmpty ? ["Traces"] : traces, pipeline: pipeline, strict: strict,
                                          progress: Progress.shouldShow(json: json))
                }
                if updateBaseline {
                    let b = base.updated(with: run)
                    try b.yaml().write(to: url, atomically: true, encoding: .utf8)
                    if !json { print("baseline \(baseline): \(run.traces.count) trace(s) updated") }
                    return
                }
                let report = RegressionReport.check(run, against: base)
                if let junit { try report.junit().write(to: URL(fileURLWithPath: junit), atomically: true, encoding: .utf8) }
                if json {
                    FileHandle.standardOutput.write(report.json())
                    print("")
                } else {
                    print(report.summary(), terminator: "")
                }
                if !report.passed { throw ExitCode(ExitStatus.regression) }
            } catch let e as ResultsDataError {
                printError("error: \(e.description)")
                throw ExitCode(ExitStatus.dataError)
            }
        }
    }
}
