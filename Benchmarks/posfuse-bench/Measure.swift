import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Measurement helpers shared by the benchmarks.
enum Measure {
    /// Peak resident set size of this process so far, MiB (getrusage ru_maxrss:
    /// KiB on Linux, bytes on Darwin).
    static func peakRSSMiB() -> Double {
        var u = rusage()
        #if os(Linux)
        getrusage(Int32(RUSAGE_SELF.rawValue), &u)
        #else
        getrusage(RUSAGE_SELF, &u)
        #endif
        #if canImport(Darwin)
        return Double(u.ru_maxrss) / 1_048_576
        #else
        return Double(u.ru_maxrss) / 1024
        #endif
    }

    /// Monotonic clock, seconds.
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }

    /// Path of the running executable (to spawn ourselves for isolated measurements).
    static var executablePath: String {
        #if os(Linux)
        if let p = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return p }
        #endif
        return CommandLine.arguments[0]
    }

    /// Runs a command, returns its standard output (stderr passes through); throws on failure.
    static func run(_ exe: String, _ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let d = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw BenchError("\(exe) \(args.joined(separator: " ")) exited with \(p.terminationStatus)")
        }
        return String(decoding: d, as: UTF8.self)
    }

    /// Looks a program up on PATH.
    static func which(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let p = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// One measured run, printed by worker subcommands as a JSON line.
struct RunResult: Codable {
    var impl: String
    var events: Int
    var seconds: Double
    var peak_rss_mib: Double
    var eventsPerSecond: Double { Double(events) / seconds }

    static let tableHeader = "events      impl                 seconds   events/s     peak RSS MiB   speed-up"
    /// One row of the throughput table (columns of `tableHeader`).
    var row: String {
        func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s : s + String(repeating: " ", count: w - s.count) }
        return pad(String(events), 12) + pad(impl, 21) + pad(String(format: "%.2f", seconds), 10)
            + pad(String(format: "%.0f", eventsPerSecond), 13) + pad(String(format: "%.1f", peak_rss_mib), 15)
    }
}

/// Runs the Swift side and the Python reader on generated traces of each length (comma
/// separated event counts in `lengths`), each in its own process so peak RSS is per run.
/// The trace of each length is generated once into `dir` and reused. `worker` is the
/// posfuse-bench subcommand that measures one file (`read`, `replay-one`); a missing
/// Python interpreter leaves the Python column empty.
func compareWithPython(lengths: String, dir: String, python: String, script: String, worker: String,
                       repeat count: Int, eachRow: (RunResult, RunResult?) -> Void,
                       floor: ((String, RunResult) throws -> Void)? = nil) throws -> [(swift: RunResult, python: RunResult?)] {
    let ns = lengths.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    guard !ns.isEmpty else { throw ValidationError("--lengths must list event counts") }
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let me = Measure.executablePath
    let py = Measure.which(python)
    if py == nil { FileHandle.standardError.write(Data("\(python) not found: Python column skipped\n".utf8)) }
    var rows: [(swift: RunResult, python: RunResult?)] = []
    for n in ns {
        let path = "\(dir)/bench-\(n).jsonl"
        if !FileManager.default.fileExists(atPath: path) {
            _ = try Measure.run(me, ["generate", "--events", String(n), "--out", path])
        }
        let s = try JSONDecoder().decode(RunResult.self, from: Data(try Measure.run(me, [worker, path, "--repeat", String(count)]).utf8))
        var p: RunResult?
        if let py { p = try JSONDecoder().decode(RunResult.self, from: Data(try Measure.run(py, [script, path]).utf8)) }
        eachRow(s, p)
        try floor?(path, s)
        rows.append((s, p))
    }
    return rows
}

/// Prints a Swift row with its speed-up over Python, then the Python row.
/// One line of the run's summary (`scripts/bench/run-all.sh` collects the `SUMMARY|` lines and
/// prints them as one table at the end, the figures the README quotes): the figure, posfuse's
/// value, the reference measured in the same run, their ratio, and the target.
func printSummary(_ figure: String, _ value: String, reference: String, ratio: Double?, target: String) {
    print("SUMMARY|\(figure)|\(value)|\(reference)|\(ratio.map { String(format: "%.2fx", $0) } ?? "–")|\(target)")
}

func printComparisonRows(_ s: RunResult, _ p: RunResult?) {
    let speedup = p.map { String(format: "%.1fx", s.eventsPerSecond / $0.eventsPerSecond) } ?? "–"
    print(s.row + "   " + speedup)
    if let p { print(p.row) }
}
