import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse score`: scores without replaying — a stored run, or estimates from a file.
struct ScoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "score",
        abstract: "Show the scores of stored runs, or score an estimates file against a trace's ground truth.",
        discussion: """
        Two forms:
        1. --db FILE: print the scores stored by `posfuse replay --db FILE` (the latest run of
           every trace by default; --run ID for given runs; --list to list the runs).
        2. --estimates FILE TRACE: score estimates made elsewhere (CSV in the layout of
           `posfuse export csv`: t, source, subject, lat/lon or e/n, cov_ee/cov_en/cov_nn)
           against the ground truth of TRACE, with the metrics of replay (docs/metrics.md).

        Examples:
          posfuse score --db results.sqlite
          posfuse score --db results.sqlite --run 3 --json
          posfuse score --estimates ekf.csv Traces/open-street --json

        Exit codes: 0 success, 64 usage error, 65 bad data (malformed estimates file or trace).
        """.reflowed
    )

    @Option(help: "Results database written by `posfuse replay --db`.")
    var db: String?

    @Option(name: .customLong("run"), help: "Run id(s) to show (default: the latest run of every trace).")
    var runIDs: [Int64] = []

    @Flag(help: "List the stored runs.")
    var list = false

    @Option(help: "Estimates file (CSV) to score against TRACE.")
    var estimates: String?

    @Argument(help: "Trace file or scenario folder whose ground truth scores --estimates.")
    var trace: String?

    @Flag(help: "Print one JSON object.")
    var json = false

    @Flag(help: "Read TRACE strictly (exit 65 at the first bad line).")
    var strict = false

    @Option(name: .customLong("max-truth-gap"), help: "Longest truth gap (s) across which truth is interpolated.")
    var maxTruthGap: Double = ScoringOptions.defaultMaxTruthGap

    func validate() throws {
        if (db == nil) == (estimates == nil) { throw ValidationError("give either --db FILE or --estimates FILE TRACE") }
        if estimates != nil && trace == nil { throw ValidationError("--estimates needs the TRACE to score against") }
        if db != nil && trace != nil { throw ValidationError("TRACE is only used with --estimates") }
        if !(maxTruthGap > 0 && maxTruthGap.isFinite) { throw ValidationError("--max-truth-gap must be a positive number of seconds") }
    }

    func run() throws {
        try withExitCodes {
            if let db { try showStored(db) } else if let estimates, let trace { try scoreFile(estimates, trace) }
        }
    }

    private func showStored(_ path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { throw ValidationError("no such results database: \(path)") }
        let store = try ResultStore(path: path)
        let all = try store.runs()
        if list {
            if json {
                let o: [String: Any] = ["runs": all.map { ["id": $0.id, "started": $0.started, "trace": $0.traceName, "path": $0.trace,
                                                             "version": $0.version, "events": $0.events, "skipped": $0.skipped] as [String: Any] }]
                FileHandle.standardOutput.write(try ScoreReport.jsonData(o)); print("")
            } else {
                for r in all { print("\(r.id)  \(r.started)  \(r.traceName)  events \(r.events)  skipped \(r.skipped)  posfuse \(r.version)") }
            }
            return
        }
        var chosen: [ResultStore.StoredRun]
        if runIDs.isEmpty {
            var latest: [String: ResultStore.StoredRun] = [:]
            for r in all { latest[r.trace] = r }
            chosen = latest.values.sorted { $0.id < $1.id }
        } else {
            chosen = try runIDs.map { id in
                guard let r = all.first(where: { $0.id == id }) else { throw ValidationError("no run \(id) in \(path)") }
                return r
            }
        }
        var traces: [[String: Any]] = []
        for r in chosen {
            let sc = try store.scores(run: r.id)
            if json {
                let scores: [[String: Any]] = sc.keys.sorted().map { key in
                    var o: [String: Any] = ["source": key]
                    var failures: [String: Int] = [:]
                    for (m, v) in sc[key]! {
                        if m.hasPrefix("failure:") { failures[String(m.dropFirst(8))] = Int(v) } else { o[m] = v }
                    }
                    if !failures.isEmpty { o["failures"] = failures }
                    return o
                }
                traces.append(["run": r.id, "trace": r.traceName, "path": r.trace, "started": r.started, "skipped": r.skipped, "scores": scores])
            } else {
                print("run \(r.id)  \(r.traceName)  (\(r.started), \(r.events) events, \(r.skipped) skipped)")
                let cols = ["count", "availability", "mean_m", "median_m", "p75_m", "p95_m", "rmse_m", "max_m", "inside95", "anees"]
                print("  " + (["source"] + cols).map { $0.padding(toLength: max($0.count, 12), withPad: " ", startingAt: 0) }.joined(separator: " "))
                for key in sc.keys.sorted() {
                    let m = sc[key]!
                    guard m["count"] != nil else { continue }
                    let cells = cols.map { c in m[c].map { String(format: c == "count" ? "%.0f" : "%.3f", $0) } ?? "-" }
                    print("  " + ([key] + cells).enumerated().map { i, v in
                        v.padding(toLength: max(i == 0 ? 6 : cols[i - 1].count, 12), withPad: " ", startingAt: 0)
                    }.joined(separator: " "))
                }
            }
        }
        if json {
            let o: [String: Any] = ["traces": traces, "skipped": chosen.reduce(0) { $0 + $1.skipped }]
            FileHandle.standardOutput.write(try ScoreReport.jsonData(o)); print("")
        }
    }

    private func scoreFile(_ estimatesPath: String, _ tracePath: String) throws {
        let loc = try TraceLocation.resolve(tracePath)
        guard FileManager.default.fileExists(atPath: estimatesPath) else { throw ValidationError("no such estimates file: \(estimatesPath)") }
        let frame = try TraceReader(url: loc.trace, mode: .lenient).header.frame
        let fixes = try EstimatesFile.load(url: URL(fileURLWithPath: estimatesPath), frame: frame)
        let options = ReplayOptions(mode: strict ? .strict : .lenient, scoring: ScoringOptions(maxTruthGap: maxTruthGap))
        let r = try Replayer.score(estimates: fixes, location: loc, options: options)
        if json {
            FileHandle.standardOutput.write(try ScoreReport.jsonData(ScoreReport.json([r], extra: ["estimates": estimatesPath])))
            print("")
        } else {
            print(ScoreReport.table(r))
        }
    }
}
