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
}
