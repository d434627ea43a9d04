import ArgumentParser
import Foundation
import Replay

struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write a self-contained offline HTML report of a run: error CDF, trajectory, error and NEES over time, metrics.",
        discussion: """
        RUN is a trace file or scenario folder (replayed with --pipeline), a folder of traces such as \
        Traces/, or a finished run: a `posfuse replay --json --epochs` output or a results database \
        (`posfuse replay --db`). With a finished run, --traces DIR finds each trace's floor plan and \
        ground truth in DIR/NAME/. The HTML has inline SVG and CSS only (no scripts, fonts or \
        network requests) and prints on A4. Plots: docs/regress.md.

        Examples:
          posfuse report Traces/urban-canyon -o report.html
          posfuse replay Traces --db runs.sqlite
          posfuse report runs.sqlite -o report.html

        Exit codes: 0 ok, 64 usage, 65 bad data.
        """.reflowed
    )

    @Argument(help: ArgumentHelp("Trace, scenario folder, folder of traces, replay --json output or results database.", valueName: "run")) var input: String
    @Option(name: .shortAndLong, help: "Output HTML file.") var output: String = "report.html"
    @Option(help: "Pipeline configuration (YAML) when RUN is replayed.") var pipeline: String?
    @Option(help: "Where the traces of a JSON run live (scenario folders by trace name).") var traces: String = "Traces"
    @Option(help: "Report title.") var title: String?
    @Flag(help: "Stop at the first malformed trace line (exit 65).") var strict = false

    func run() throws {
        try withExitCodes {
            do {
                var reportTraces: [ReportTrace] = []
                if input.hasSuffix(".json") || SQLiteFile.isDatabase(path: input) {
                    // A finished run: JSON output of replay, or a results database.
                    let r = try loadOrReplay(input, pipeline: nil)
                    for t in r.traces {
                        let folder = URL(fileURLWithPath: traces).appendingPathComponent(t.trace)
                        if let loc = try? TraceLocation.resolve(folder.path) {
                            reportTraces.append(try ReportTrace.load(result: t, location: loc))
                        } else {
                            reportTraces.append(ReportTrace(name: t.trace, sources: t.sources, skipped: t.skipped))
                        }
                    }
                } else {
                    let show = Progress.shouldShow(json: false)
                    let locations = try TraceLocation.resolveAll(input)
                    let r = try replaySuite([input], pipeline: pipeline, strict: strict, progress: show)
                    for (t, loc) in zip(r.traces, locations) {
                        reportTraces.append(try ReportTrace.load(result: t, location: loc))
                    }
                }
                let name = title ?? "posfuse report: \(URL(fileURLWithPath: input).lastPathComponent)"
                let html = HTMLReport(title: name, traces: reportTraces, generator: "posfuse \(Posfuse.configuration.version)").render()
                try html.write(to: URL(fileURLWithPath: output), atomically: true, encoding: .utf8)
                printError("wrote \(output) (\(reportTraces.count) trace\(reportTraces.count == 1 ? "" : "s"), \(html.utf8.count / 1024) KiB)")
            } catch let e as ResultsDataError {
                printError("error: \(e.description)")
                throw ExitCode(ExitStatus.dataError)
            }
        }
    }
}

