import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse replay`: reader → pipeline → scorer for every trace given (docs/cli.md).
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay traces through the positioning pipeline and score every source against ground truth.",
        discussion: """
        Each argument is a trace file (*.jsonl), a scenario folder (Traces/NAME/ with trace.jsonl
        and reference.json) or a folder of those (Traces/), which replays each. Events go in time
        order through the pipeline (default: every stage enabled by default; --pipeline FILE to
        configure) and every estimate is scored against the ground truth interpolated at its time
        (docs/metrics.md). Reading is lenient: bad lines are skipped and counted (`skipped`);
        --strict stops at the first bad line with exit 65.

        Examples:
          posfuse replay Traces/                    # table for every bundled trace
          posfuse replay Traces/open-street --json  # one JSON object (docs/cli.md)
          posfuse replay my.jsonl --strict --pipeline docs/pipeline.yaml \\
            --db results.sqlite

        Recorded walks: `--radio-map` adds a map learned by posfuse radiomap build, `--reference`
        replaces the traces' own reference file. Walks whose truth is waypoints (checkpoint truth,
        e.g. an imported ms-indoor walk) are also scored at each waypoint (docs/metrics.md):
          posfuse import ms-indoor walk.txt -o walk/trace.jsonl
          posfuse replay walk/ --radio-map site.sqlite

        A trace that locates less than half of its epochs says so on stderr; `--min-located S`
        fails the run (exit 1) below S; `share_located` is in --json.

        Exit codes: 0 success, 1 a trace below --min-located, 64 usage error (bad option, missing path or --pipeline file),
        65 bad data (strict mode bad line, bad header or reference file, invalid --pipeline content).
        """.reflowed
    )

    @Argument(help: "Trace files, scenario folders or folders of scenario folders.")
    var paths: [String]

    @Flag(help: "Print one JSON object instead of tables.")
    var json = false

    @Flag(help: "With --json: add the per-epoch errors of every source (for compare/report).")
    var epochs = false

    @Flag(help: "Stop at the first bad line (exit 65) instead of skipping it.")
    var strict = false

    @Option(help: "Pipeline configuration (YAML, see docs/pipeline.yaml).")
    var pipeline: String?

    @Option(help: "Store runs, estimates and scores in this SQLite file (one transaction per trace).")
    var db: String?

    @Option(name: .customLong("max-truth-gap"), help: "Longest truth gap (s) across which truth is interpolated.")
    var maxTruthGap: Double = ScoringOptions.defaultMaxTruthGap

    @Option(name: .customLong("fix-validity"), help: "Seconds an estimate counts as available (availability).")
    var fixValidity: Double = ScoringOptions.defaultFixValidity

    @Option(name: .customLong("reorder-window"), help: "Seconds of timestamp disorder the reader repairs.")
    var reorderWindow: Double = TraceReader.defaultReorderWindow

    @Option(name: .customLong("cell-db"), help: "Cell database (SQLite: posfuse celldb build, posfuse import opencellid): its towers and coverage areas within 50 km of each trace's origin join the trace's reference data.")
    var cellDB: String?

    @Option(help: "Reference data file (reference.json format) used instead of each trace's own.")
    var reference: String?

    @Option(name: .customLong("radio-map"), help: "Radio map (SQLite: posfuse radiomap build): its APs, fingerprint survey and uncertainty model join each trace's reference data.")
    var radioMap: String?

    @Option(name: .customLong("min-located"), help: "Exit 1 when a trace locates less than this share (0-1) of its epochs (events an estimator answered with a fix or a typed failure).")
    var minLocated: Double?

    func validate() throws {
        if let r = reference, !FileManager.default.fileExists(atPath: r) { throw ValidationError("no such file: \(r)") }
        if let m = radioMap, !FileManager.default.fileExists(atPath: m) { throw ValidationError("no such file: \(m)") }
        if let m = minLocated, !(m >= 0 && m <= 1) { throw ValidationError("--min-located must be a share in [0, 1]") }
        if paths.isEmpty { throw ValidationError("give at least one trace, scenario folder or folder of them") }
        if !(maxTruthGap > 0 && maxTruthGap.isFinite) { throw ValidationError("--max-truth-gap must be a positive number of seconds") }
        if !(fixValidity > 0 && fixValidity.isFinite) { throw ValidationError("--fix-validity must be a positive number of seconds") }
        if let c = cellDB, !FileManager.default.fileExists(atPath: c) { throw ValidationError("no such file: \(c)") }
        if !(reorderWindow >= 0 && reorderWindow.isFinite) { throw ValidationError("--reorder-window must be ≥ 0 s") }
        if epochs && !json { throw ValidationError("--epochs needs --json") }
    }

    func run() throws {
        do { try replay() } catch let e as ResultsDataError {
            printError("error: \(e.description)")
            throw ExitCode(ExitStatus.dataError)
        }
    }

    private func replay() throws {
        try withExitCodes {
            let job = try ReplayJob(paths: paths, pipeline: pipeline, strict: strict, epochs: epochs, db: db,
                                    maxTruthGap: maxTruthGap, fixValidity: fixValidity, reorderWindow: reorderWindow, cellDatabase: cellDB,
                                    reference: reference, radioMap: radioMap)
            let results = try job.run(progress: Progress.shouldShow(json: json)) { r in
                if !json { print(ReplayCommand.tableText(r)) }
            }
            if json {
                var extra: [String: Any] = [:]
                if let db { extra["db"] = db; extra["runs"] = job.storedRuns }
                FileHandle.standardOutput.write(try ScoreReport.jsonData(ScoreReport.json(results, extra: extra)))
                print("")
            } else {
                let skipped = results.reduce(0) { $0 + $1.stats.skippedTotal }
                var tail = "\(results.count) trace\(results.count == 1 ? "" : "s") replayed, \(skipped) skipped line\(skipped == 1 ? "" : "s")"
                if let db { tail += "; runs \(job.storedRuns.map(String.init).joined(separator: ", ")) stored in \(db)" }
                print(tail)
            }
            // A run that locates little says so (stderr), and --min-located fails it.
            var failed = false
            for r in results {
                let s = r.located.share
                if let m = minLocated, (s ?? 0) < m {
                    printError("error: \(r.location.name): \(r.located.summary), below --min-located \(m)")
                    failed = true
                } else if (s ?? 0) < LocatedShare.warnBelow {
                    printError("warning: \(r.location.name): \(r.located.summary)")
                }
            }
            if failed { throw ExitCode(ExitStatus.regression) }
        }
    }

    static func tableText(_ r: ReplayResult) -> String { ScoreReport.table(r) }
}

/// A replay of several traces with one configuration: shared by `replay`, `regress` and `report`.
final class ReplayJob {
    let locations: [TraceLocation]
    let options: ReplayOptions
    let pipelineText: String
    let pipelinePath: String?
    let store: ResultStore?
    private(set) var storedRuns: [Int64] = []

    /// Resolves paths (exit 64 when missing), loads the pipeline file (`loadPipelineFile`: exit 64
    /// when it cannot be read, 65 when its content is bad) and opens the results database.
    init(paths: [String], pipeline: String?, strict: Bool, epochs: Bool, db: String?,
         maxTruthGap: Double = ScoringOptions.defaultMaxTruthGap, fixValidity: Double = ScoringOptions.defaultFixValidity,
         reorderWindow: Double = TraceReader.defaultReorderWindow, cellDatabase: String? = nil,
         reference: String? = nil, radioMap: String? = nil) throws {
        locations = try paths.flatMap { try TraceLocation.resolveAll($0) }
        var stages: [String: StageOptions] = [:]
        var text = ""
        if let pipeline { (text, stages) = try loadPipelineFile(pipeline) }
        pipelineText = text
        pipelinePath = pipeline
        options = ReplayOptions(mode: strict ? .strict : .lenient, reorderWindow: reorderWindow, stages: stages,
                                scoring: ScoringOptions(maxTruthGap: maxTruthGap, fixValidity: fixValidity, keepEpochs: epochs),
                                cellDatabase: cellDatabase, reference: reference.map { URL(fileURLWithPath: $0) }, radioMap: radioMap)
        if let db {
            do { store = try ResultStore(path: db) } catch {
                throw SystemError(error, file: db)   // exit 74 (I/O) or 65 (not a database)
            }
        } else {
            store = nil
        }
    }

    /// The JSON text of the run parameters stored with each run.
    var parametersJSON: String {
        let o: [String: Any] = [
            "mode": options.mode.rawValue, "max_truth_gap_s": options.scoring.maxTruthGap,
            "fix_validity_s": options.scoring.fixValidity, "reorder_window_s": options.reorderWindow,
            "pipeline_file": pipelinePath ?? NSNull(),
        ]
        let d = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: d, as: UTF8.self)
    }

    /// Replays every location in order; `each` sees every result as soon as it is ready.
    func run(progress: Bool, each: (ReplayResult) -> Void = { _ in }) throws -> [ReplayResult] {
        var out: [ReplayResult] = []
        for loc in locations {
            let replayer = Replayer(options: options)
            let bar = Progress(label: "replay \(loc.name)", enabled: progress)
            replayer.progress = bar.callback
            defer { bar.finish() }
            let result: ReplayResult
            if let store {
                let info = ResultStore.RunInfo(pipeline: pipelineText, trace: loc.trace.path, traceName: loc.name,
                                               version: Posfuse.configuration.version, parameters: parametersJSON)
                let (run, r) = try store.record(info) { w in
                    replayer.onEstimate = { try w.insert($0) }
                    return try replayer.run(loc)
                }
                storedRuns.append(run)
                result = r
            } else {
                result = try replayer.run(loc)
            }
            bar.finish()
            each(result)
            out.append(result)
        }
        return out
    }
}
