import ArgumentParser
import Foundation
import Replay

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare two runs side by side per trace, source and metric, with bootstrap intervals of the change.",
        discussion: """
        A and B are runs: `posfuse replay --json --epochs` outputs, results databases (--db), or \
        traces / scenario folders / folders of traces replayed with --pipeline-a / --pipeline-b. \
        For every trace × source × metric it prints A, B, the difference B − A and, when both runs \
        carry per-epoch errors, a moving-block bootstrap confidence interval of the difference \
        (block length from the errors' autocorrelation; seeded). An interval that excludes 0 (*) \
        marks a change larger than the run's own noise. Method: docs/regress.md.

        Examples:
          posfuse compare Traces/open-street seed2/
          posfuse compare Traces/mall-sparse-ap Traces/mall-sparse-ap \\
          --pipeline-b b.yaml
          posfuse compare before.json after.json --json

        Exit codes: 0 ok, 64 usage, 65 unreadable run.
        """.reflowed
    )

    @Argument(help: "Run A (the reference): a replay --json output, or a trace/scenario folder/folder of traces to replay.") var a: String
    @Argument(help: "Run B (the candidate), likewise.") var b: String
    @Option(name: .customLong("pipeline-a"), help: "Pipeline configuration (YAML) when A is replayed.") var pipelineA: String?
    @Option(name: .customLong("pipeline-b"), help: "Pipeline configuration (YAML) when B is replayed.") var pipelineB: String?
    @Flag(help: "Machine-readable JSON output.") var json = false
    @Option(help: "Bootstrap resamples.") var resamples: Int = 2000
    @Option(help: "Seed of the bootstrap's random numbers.") var seed: UInt64 = 1
    @Option(help: "Confidence level of the intervals.") var confidence: Double = 0.95
    @Option(name: .customLong("block-length"), help: "Bootstrap block length in epochs (default: automatic, from the autocorrelation).")
    var blockLength: Int?

    func validate() throws {
        if resamples < 10 { throw ValidationError("--resamples must be at least 10") }
        if !(confidence > 0.5 && confidence < 1) { throw ValidationError("--confidence must be in (0.5, 1)") }
        if let b = blockLength, b < 1 { throw ValidationError("--block-length must be at least 1") }
    }

    func run() throws {
        try withExitCodes { try compare() }
    }

    func compare() throws {
        do {
            let show = Progress.shouldShow(json: json)
            let ra = try loadOrReplay(a, pipeline: pipelineA, progress: show)
            var rb = try loadOrReplay(b, pipeline: pipelineB, progress: show)
            // Two single-trace runs (e.g. two seeds of a scenario in two folders) compare with each other.
            if ra.traces.count == 1, rb.traces.count == 1, ra.traces[0].trace != rb.traces[0].trace {
                rb.traces[0].trace = ra.traces[0].trace
            }
            let c = RunComparison.compare(ra, rb, bootstrap: BlockBootstrap(resamples: resamples, seed: seed, confidence: confidence, blockLength: blockLength))
            if json {
                FileHandle.standardOutput.write(c.json())
                print("")
            } else {
                print(c.table(), terminator: "")
            }
        } catch let e as ResultsDataError {
            FileHandle.standardError.write(Data("error: \(e.description)\n".utf8))
            throw ExitCode(65)
        }
    }
}

