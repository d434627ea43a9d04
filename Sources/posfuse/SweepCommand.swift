import ArgumentParser
import Foundation
import Replay

/// `posfuse sweep`: parameter sweeps and Monte Carlo studies (docs/sweep.md).
struct Sweep: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep",
        abstract: "Run a study: every grid point of pipeline options × trace × seed, in parallel, resumable, with a summary.",
        discussion: """
        `posfuse sweep STUDY.yaml` runs the study (the `run` subcommand is the default); \
        `posfuse sweep merge` combines shard databases; `posfuse sweep diff` checks that two \
        databases hold the same runs. Study format, summary statistics and the Slurm set-up: \
        docs/sweep.md.

        Examples:
          posfuse sweep docs/examples/wcl-weight-law.yaml --db wcl.sqlite
          posfuse sweep study.yaml --db s.sqlite --html s.html --csv s.csv
          posfuse sweep study.yaml --db s.sqlite --slurm --submit
          posfuse sweep merge --db s.sqlite s.slurm/shard-*.sqlite
          posfuse sweep diff local.sqlite cluster.sqlite
        """.reflowed,
        subcommands: [SweepRun.self, SweepMerge.self, SweepDiff.self],
        defaultSubcommand: SweepRun.self
    )
}

struct SweepRun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run (or resume) a study and print its summary.",
        discussion: """
        The study file names the inputs (recordings, or scenario folders simulated with N seeds), \
        a base pipeline, a grid of pipeline options (lists or ranges of values) and the metrics \
        (docs/sweep.md). Every grid point × input × seed is replayed once through the pipeline \
        (as `posfuse replay` would) on --jobs worker threads and stored in the results database \
        (the `replay --db` schema plus the table sweep_runs), one transaction per run. A study \
        that was killed resumes where it stopped: runs already stored are not run again.

        The summary gives, per input × source × grid point, each metric's mean with a confidence \
        interval (t over seeds; block bootstrap on a recording), the difference from the baseline \
        point with its interval (* when it excludes 0) and the best point per metric; as a table, \
        --json, --csv FILE and --html FILE (a plot of each metric over each swept option).

        Slurm: --shard I/N runs the I-th of N deterministic shares (run k of the canonical order \
        belongs to shard k mod N + 1); --slurm writes an `sbatch --array` script for --shards \
        shards and a merge + summary job that depends on it into --slurm-dir; --submit also \
        submits both with sbatch. The runs are identical whether they ran on one core, all \
        cores or the cluster.

        Examples:
          posfuse sweep docs/examples/wcl-weight-law.yaml --db wcl.sqlite
          posfuse sweep study.yaml --db s.sqlite --jobs 1 --json
          posfuse sweep study.yaml --db s.sqlite --no-run --html s.html --csv s.csv
          posfuse sweep study.yaml --db s.sqlite --slurm --shards 8 --submit
          posfuse sweep merge --db s.sqlite shard-1.sqlite shard-2.sqlite

        Exit codes: 0 ok, 64 usage, 65 bad study file (names the line and key) or a run that \
        failed on bad data (the others are stored), 74 results database or file not writable.
        """.reflowed
    )

    @Argument(help: "The study file (YAML, docs/sweep.md).") var study: String
    @Option(help: "Results database (SQLite; default: STUDY's name with .sqlite, in the current directory).") var db: String?
    @Option(help: "Worker threads (default: all cores).") var jobs: Int?
    @Option(help: "Run only shard I of N (e.g. 2/8): runs whose canonical index k has k mod N = I − 1.") var shard: String?
    @Flag(name: .customLong("no-run"), help: "Do not run anything: summarise what the database holds.") var noRun = false
    @Flag(help: "Print the summary as one JSON object.") var json = false
    @Option(help: "Also write the summary as CSV to this file.") var csv: String?
    @Option(help: "Also write an HTML page with the summary and plots to this file.") var html: String?
    @Option(help: "Bootstrap resamples for intervals on recordings.") var resamples: Int = 1000
    @Flag(help: "Write Slurm batch scripts (an array job of --shards shards and a dependent merge + summary job) instead of running.") var slurm = false
    @Option(help: "With --slurm: number of shards (array tasks).") var shards: Int = 4
    @Option(name: .customLong("cpus-per-task"), help: "With --slurm: cores per array task (--jobs of each shard).") var cpusPerTask: Int = 1
    @Option(name: .customLong("slurm-dir"), help: "With --slurm: folder for the scripts, shard databases, logs and summary (default: DB's name with .slurm).") var slurmDir: String?
    @Option(name: .customLong("sbatch-option"), help: "With --slurm: an extra #SBATCH line, e.g. --sbatch-option=--partition=short (repeatable).") var sbatchOptions: [String] = []
    @Flag(help: "With --slurm: submit the scripts with sbatch (the merge job waits for the array job).") var submit = false

    func validate() throws {
        if let j = jobs, j < 1 { throw ValidationError("--jobs must be at least 1") }
        if let s = shard, parseShard(s) == nil { throw ValidationError("--shard must be I/N with 1 ≤ I ≤ N, e.g. 2/8") }
        if resamples < 10 { throw ValidationError("--resamples must be at least 10") }
        if shards < 1 { throw ValidationError("--shards must be at least 1") }
        if cpusPerTask < 1 { throw ValidationError("--cpus-per-task must be at least 1") }
        if submit && !slurm { throw ValidationError("--submit needs --slurm") }
        if slurm && (shard != nil || noRun) { throw ValidationError("--slurm writes the shard jobs itself: drop --shard/--no-run") }
        if shard != nil && (json || csv != nil || html != nil || noRun) {
            throw ValidationError("a shard holds part of the study: merge the shards (posfuse sweep merge), then summarise")
        }
    }

    func parseShard(_ s: String) -> (Int, Int)? {
        let p = s.split(separator: "/")
        guard p.count == 2, let i = Int(p[0]), let n = Int(p[1]), n >= 1, i >= 1, i <= n else { return nil }
        return (i, n)
    }

    var databasePath: String {
        db ?? URL(fileURLWithPath: study).deletingPathExtension().lastPathComponent + ".sqlite"
    }

    func run() throws {
        let study: Study
        do { study = try Study.load(path: self.study) } catch let e as StudyError {
            printError("error: \(e.description)")
            // A missing file is a usage error, an unreadable one an I/O error, a bad one bad data.
            throw ExitCode(!e.isIO ? ExitStatus.dataError : FileManager.default.fileExists(atPath: self.study) ? 74 : ExitStatus.usage)
        }
        let plan = SweepPlan(study: study)
        if slurm { return try writeSlurm(plan) }
        let store: SweepStore
        do { store = try SweepStore(path: databasePath) } catch {
            printError("error: cannot open results database \(databasePath): \(error)")
            throw ExitCode(74)
        }
        var failed = 0
        if !noRun {
            var share = plan.runs
            if let s = shard, let (i, n) = parseShard(s) { share = plan.shard(i, of: n) }
            let jobs = self.jobs ?? ProcessInfo.processInfo.activeProcessorCount
            let bar = ProgressBox(Progress(label: "sweep \(study.name)", total: Int64(share.count), enabled: Progress.shouldShow(json: json)))
            let start = Date()
            let runner = SweepRunner(plan: plan, store: store, jobs: jobs, version: Posfuse.configuration.version)
            let report = try runner.run(share) { done, total in bar.update(done, total) }
            bar.finish()
            let wall = Date().timeIntervalSince(start)
            failed = report.failed.count
            for f in report.failed { printError("error: run \(plan.traceName(f.run)) at \(plan.pointLabel(f.run.point)): \(f.error)") }
            printError("sweep \(study.name)\(shard.map { " shard \($0)" } ?? ""): \(report.ran) run\(report.ran == 1 ? "" : "s") done, \(report.alreadyStored) already stored, \(failed) failed, of \(share.count) in \(String(format: "%.1f", wall)) s with \(jobs) job\(jobs == 1 ? "" : "s"); results in \(databasePath)")
            if shard != nil {
                if failed > 0 { throw ExitCode(ExitStatus.dataError) }
                return
            }
        }
        let summary = try SweepSummary.compute(plan: plan, store: store, resamples: resamples)
        for source in study.sources where !summary.cells.contains(where: { $0.source == source }) {
            printError("warning: no stored run scored source \(source) (is its stage enabled in `stages:`?)")
        }
        if json {
            var o = summary.json()
            o["db"] = databasePath
            FileHandle.standardOutput.write(try JSONSerialization.data(withJSONObject: o, options: [.prettyPrinted, .sortedKeys]))
            print("")
        } else {
            print(summary.table(), terminator: "")
        }
        do {
            if let csv { try writeAtomically(summary.csv(), to: csv) }
            if let html { try writeAtomically(SweepReport(summary: summary).render(), to: html) }
        } catch {
            printError("error: \(error)")
            throw ExitCode(74)
        }
        if failed > 0 { throw ExitCode(ExitStatus.dataError) }
    }

    func writeAtomically(_ text: String, to path: String) throws {
        do { try OutputFile.write(Data(text.utf8), to: URL(fileURLWithPath: path)) } catch {
            throw ResultsDataError(file: path, reason: "cannot write: \(error)")
        }
    }

    func writeSlurm(_ plan: SweepPlan) throws {
        let cwd = FileManager.default.currentDirectoryPath
        func absolute(_ p: String) -> String { p.hasPrefix("/") ? p : (cwd as NSString).appendingPathComponent(p) }
        let dbPath = absolute(databasePath)
        let folder = absolute(slurmDir ?? (URL(fileURLWithPath: dbPath).deletingPathExtension().path + ".slurm"))
        let exe = URL(fileURLWithPath: CommandLine.arguments[0].contains("/") ? absolute(CommandLine.arguments[0])
                      : (Bundle.main.executablePath ?? CommandLine.arguments[0])).standardizedFileURL.path
        let scripts = SlurmScripts(posfuse: exe, study: absolute(study), database: dbPath, folder: folder,
                                   shards: min(shards, max(1, plan.runs.count)), cpusPerTask: cpusPerTask, name: plan.study.name,
                                   workingDirectory: cwd, sbatchOptions: sbatchOptions)
        let paths: (array: String, merge: String)
        do { paths = try scripts.write() } catch {
            printError("error: cannot write the Slurm scripts into \(folder): \(error.localizedDescription)")
            throw ExitCode(74)
        }
        print("wrote \(paths.array) (\(scripts.shards) shards of \(plan.runs.count) runs) and \(paths.merge)")
        guard submit else {
            print("submit with: jid=$(sbatch --parsable \(paths.array)) && sbatch --dependency=afterok:${jid%%;*} \(paths.merge)")
            return
        }
        let array = try sbatch(["--parsable", paths.array])
        let merge = try sbatch(["--parsable", "--dependency=afterok:\(array)", paths.merge])
        print("submitted array job \(array) and merge job \(merge); summary in \((folder as NSString).appendingPathComponent("summary.txt"))")
    }

    /// Runs sbatch and returns the job id (`--parsable` prints "id" or "id;cluster").
    func sbatch(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["sbatch"] + args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out; p.standardError = err
        do { try p.run() } catch {
            printError("error: cannot run sbatch: \(error.localizedDescription)")
            throw ExitCode(74)
        }
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: o, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard p.terminationStatus == 0, let id = text.split(separator: ";").first, !id.isEmpty else {
            printError("error: sbatch \(args.joined(separator: " ")) failed (\(p.terminationStatus)): \(String(decoding: e, as: UTF8.self))")
            throw ExitCode(74)
        }
        return String(id)
    }
}

/// A progress line shared by worker threads (updates are serialised by the runner).
final class ProgressBox: @unchecked Sendable {
    let progress: Replay.Progress
    let lock = NSLock()
    init(_ p: Replay.Progress) { progress = p }
    func update(_ done: Int, _ total: Int) { lock.withLock { progress.update(completed: Int64(done), total: Int64(total)) } }
    func finish() { lock.withLock { progress.finish() } }
}

struct SweepMerge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge sweep shard databases into one results database.",
        discussion: """
        Copies every run of each shard database (with its estimates and scores) into --db, \
        one transaction per shard. A run already in --db (same key: input, seed and options) \
        is not copied twice, so merging again, or merging overlapping shards, is safe.

        Example:
          posfuse sweep merge --db study.sqlite study.slurm/shard-*.sqlite

        Exit codes: 0 ok, 64 usage, 65 a file that is not a sweep database, 74 --db not writable.
        """.reflowed
    )
    @Option(help: "The database to merge into (created when absent).") var db: String
    @Argument(help: "Shard databases (from posfuse sweep --shard).") var shards: [String]
    @Flag(help: "Print the counts as JSON.") var json = false

    func validate() throws {
        if shards.isEmpty { throw ValidationError("give at least one shard database") }
        for s in shards where !FileManager.default.fileExists(atPath: s) { throw ValidationError("no such file: \(s)") }
    }

    func run() throws {
        let store: SweepStore
        do { store = try SweepStore(path: db) } catch {
            printError("error: cannot open results database \(db): \(error)")
            throw ExitCode(74)
        }
        var copied = 0, duplicates = 0
        for s in shards {
            do {
                let r = try store.merge(from: s)
                copied += r.copied; duplicates += r.duplicates
            } catch let e as ResultsDataError {
                printError("error: \(e.description)")
                throw ExitCode(ExitStatus.dataError)
            }
        }
        if json {
            print("{\"copied\": \(copied), \"duplicates\": \(duplicates), \"shards\": \(shards.count), \"db\": \(jsonEscaped(db))}")
        } else {
            print("merged \(shards.count) shard database\(shards.count == 1 ? "" : "s") into \(db): \(copied) run\(copied == 1 ? "" : "s") copied, \(duplicates) already there")
        }
    }
}

struct SweepDiff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Check that two sweep databases hold the same runs with the same results.",
        discussion: """
        Runs are matched by key (input, seed, options); a run matches when its scores and its \
        estimates (every column, bit for bit) are equal. Run ids, start times and the order of \
        storage are ignored: a study run on one core, on several or on a cluster compares equal.

        Example:
          posfuse sweep diff local.sqlite cluster.sqlite

        Exit codes: 0 same runs, 1 they differ, 64 usage, 65 not a sweep database.
        """.reflowed
    )
    @Argument(help: "First database.") var a: String
    @Argument(help: "Second database.") var b: String

    func run() throws {
        for p in [a, b] where !FileManager.default.fileExists(atPath: p) {
            throw ValidationError("no such file: \(p)")
        }
        let ca: [String: (scores: [String: [String: Double]], estimates: [String])]
        let cb: [String: (scores: [String: [String: Double]], estimates: [String])]
        do {
            ca = try SweepStore(path: a).contents()
            cb = try SweepStore(path: b).contents()
        } catch {
            printError("error: \(error)")
            throw ExitCode(ExitStatus.dataError)
        }
        let onlyA = Set(ca.keys).subtracting(cb.keys).count, onlyB = Set(cb.keys).subtracting(ca.keys).count
        var differ = 0
        for (k, x) in ca { if let y = cb[k], x.scores != y.scores || x.estimates != y.estimates { differ += 1 } }
        let common = Set(ca.keys).intersection(cb.keys).count
        print("\(common) runs in both (\(common - differ) identical, \(differ) differ); \(onlyA) only in \(a); \(onlyB) only in \(b)")
        if differ > 0 || onlyA > 0 || onlyB > 0 { throw ExitCode(1) }
    }
}
