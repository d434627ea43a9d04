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
        let ns = lengths.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !ns.isEmpty else { throw ValidationError("--lengths must list event counts") }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let me = Measure.executablePath
        let py = Measure.which(python)
        print("read + replay (default pipeline) + score, one core; Python: json reader only")
        print("events      impl                 seconds   events/s     peak RSS MiB   speed-up")
        for n in ns {
            let path = "\(dir)/bench-\(n).jsonl"
            if !FileManager.default.fileExists(atPath: path) {
                _ = try Measure.run(me, ["generate", "--events", String(n), "--out", path])
            }
            let s = try JSONDecoder().decode(RunResult.self, from: Data(try Measure.run(me, ["replay-one", path, "--repeat", String(repeat_)]).utf8))
            var p: RunResult?
            if let py { p = try JSONDecoder().decode(RunResult.self, from: Data(try Measure.run(py, [script, path]).utf8)) }
            let speedup = p.map { String(format: "%.1fx", s.eventsPerSecond / $0.eventsPerSecond) } ?? "–"
            print(row(s) + "   " + speedup)
            if let p { print(row(p)) }
        }
    }

    private func row(_ r: RunResult) -> String {
        func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s : s + String(repeating: " ", count: w - s.count) }
        return pad(String(r.events), 12) + pad(r.impl, 21) + pad(String(format: "%.2f", r.seconds), 10)
            + pad(String(format: "%.0f", r.eventsPerSecond), 13) + pad(String(format: "%.1f", r.peak_rss_mib), 15)
    }
}
