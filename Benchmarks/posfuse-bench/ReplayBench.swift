import ArgumentParser
import Foundation
import Positioning
import Replay

/// Worker: replays one trace in this process — TraceReader → default pipeline
/// (`StageRegistry.pipeline()`) → Scorer, exactly `posfuse replay` without output — and
/// prints a `RunResult` JSON line (events/s of the whole chain, peak RSS).
struct ReplayOne: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "replay-one",
                                                    abstract: "Read + replay + score a trace; print events/s and peak RSS as JSON.")
    @Argument(help: "Trace path.") var path: String
    @Option(name: .customLong("repeat"), help: "Repetitions (best time is reported).") var repeat_: Int = 1

    func run() throws {
        var best = Double.infinity, events = 0
        let loc = try TraceLocation.resolve(path)
        for _ in 0..<max(1, repeat_) {
            let t0 = Measure.now()
            let r = try Replayer().run(loc)
            let dt = Measure.now() - t0
            guard r.stats.skippedTotal == 0 else { throw BenchError("reader skipped \(r.stats.skippedTotal) lines") }
            guard let g = r.scores.score("gnss"), g.count > 0 else { throw BenchError("no scored gnss estimates") }
            best = min(best, dt); events = r.stats.events
        }
        let r = RunResult(impl: "swift replay+score", events: events, seconds: best, peak_rss_mib: Measure.peakRSSMiB())
        print(String(decoding: try JSONEncoder().encode(r), as: UTF8.self))
    }
}

/// The issue-2 end-to-end benchmark: for each trace length, read + replay + score with
/// posfuse (separate process per run, so peak RSS is per run) next to the plain Python
/// reader of the same file (`scripts/bench/reader_python.py`, json module).
struct ReplaySuite: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "replay",
                                                    abstract: "Read + replay + score throughput and peak memory vs Python's json reader.")
    @Option(help: "Trace lengths in events, comma separated.") var lengths = "1000000,3000000"
    @Option(help: "Folder for generated traces (reused when present).") var dir = ".build/bench-data"
    @Option(help: "Python interpreter.") var python = "python3"
    @Option(help: "The Python reader script.") var script = "scripts/bench/reader_python.py"
    @Option(name: .customLong("repeat"), help: "Swift repetitions per length (best time is reported).") var repeat_: Int = 1

    func run() throws {
        print("read + replay (default pipeline) + score, one core; Python: json reader only")
        print(RunResult.tableHeader)
        let me = Measure.executablePath
        var readers: [Int: RunResult] = [:]
        let rows = try compareWithPython(lengths: lengths, dir: dir, python: python, script: script, worker: "replay-one",
                                         repeat: repeat_, eachRow: printComparisonRows) { path, s in
            // The reader alone on the same file, in the same run: the pipeline's share (issue 22: within 2x).
            let r = try JSONDecoder().decode(RunResult.self, from: Data(try Measure.run(me, ["read", path, "--repeat", String(repeat_)]).utf8))
            print(r.row)
            print(String(format: "replay + score takes %.2fx the reader's own time on this file", s.seconds / r.seconds))
            readers[s.events] = r
        }
        for (s, p) in rows {
            printSummary("replay + default pipeline + score, \(s.events / 1000)k events", String(format: "%.2f M events/s", s.eventsPerSecond / 1e6),
                         reference: p.map { String(format: "Python json reader %.2f M events/s", $0.eventsPerSecond / 1e6) } ?? "–",
                         ratio: p.map { s.eventsPerSecond / $0.eventsPerSecond }, target: "≥ 1.2 M events/s and ≥ 5x")
            if let r = readers[s.events] {
                printSummary("replay time / reader time, \(s.events / 1000)k events", String(format: "%.2f", s.seconds / r.seconds),
                             reference: String(format: "reader %.2f M events/s", r.eventsPerSecond / 1e6), ratio: nil, target: "≤ 2")
            }
        }
    }
}
