import ArgumentParser
import Foundation
import Positioning
import Replay


/// The benchmark trace: a pedestrian walking a 60 m × 40 m loop for as long as needed,
/// with 1 Hz GNSS fixes and 1 Hz continuous ground truth, and 100 Hz accelerometer,
/// gyroscope and magnetometer samples (full-precision noisy doubles, the worst case for
/// number parsing): 302 events per second of trace.
enum BenchTrace {
    static let origin = Geodetic(latitude: 48.137, longitude: 11.575, height: 520)

    static func write(events target: Int, to url: URL, seed: UInt64 = 42) throws -> Int {
        var rng = SplitMix64(seed: seed)
        let header = TraceHeader(origin: origin, device: "bench-phone", declination: 3.2, name: "bench-\(target)")
        let w = try TraceWriter(url: url, header: header)
        let frame = LocalFrame(origin: origin)
        var n = 0
        var k = 0
        while n < target {
            let t = Double(k) / 100
            if k % 100 == 0 {
                let s = Double(k / 100)
                let p = loop(s)
                let truth = frame.geodetic(east: p.x, north: p.y, up: 0)
                w.write(TraceEvent(time: t, payload: .groundTruth(GroundTruth(position: .geodetic(truth), kind: .continuous))))
                let fix = frame.geodetic(east: p.x + 3 * rng.gaussian(), north: p.y + 3 * rng.gaussian(), up: 0)
                w.write(TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: fix.latitude, longitude: fix.longitude,
                                                                    altitude: fix.height + 5 * rng.gaussian(),
                                                                    accuracy: (3 + abs(rng.gaussian())).rounded() ))))
                n += 2
            }
            w.write(TraceEvent(time: t, payload: .imu(IMUSample(kind: .accelerometer, x: 0.3 * rng.gaussian(),
                                                                y: 0.3 * rng.gaussian(), z: 9.81 + 0.3 * rng.gaussian()))))
            w.write(TraceEvent(time: t, payload: .imu(IMUSample(kind: .gyroscope, x: 0.01 * rng.gaussian(),
                                                                y: 0.01 * rng.gaussian(), z: 0.1 + 0.01 * rng.gaussian()))))
            w.write(TraceEvent(time: t, payload: .imu(IMUSample(kind: .magnetometer, x: 20 + rng.gaussian(),
                                                                y: 5 + rng.gaussian(), z: -42 + rng.gaussian()))))
            n += 3
            k += 1
        }
        try w.close()
        return n
    }

    /// Position on the loop after `s` seconds at 1.2 m/s, ENU m.
    static func loop(_ s: Double) -> SIMD2<Double> {
        let perimeter = 200.0
        var d = (1.2 * s).truncatingRemainder(dividingBy: perimeter)
        if d < 60 { return SIMD2(d, 0) }
        d -= 60
        if d < 40 { return SIMD2(60, d) }
        d -= 40
        if d < 60 { return SIMD2(60 - d, 40) }
        return SIMD2(0, 40 - (d - 60))
    }
}

struct GenerateTrace: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "generate",
                                                    abstract: "Write the benchmark trace (1 Hz GNSS + truth, 100 Hz acc/gyro/mag).")
    @Option(help: "Number of events (at least).") var events = 1_000_000
    @Option(help: "Output trace path.") var out: String
    @Option(help: "Random seed.") var seed: UInt64 = 42

    func run() throws {
        let t0 = Measure.now()
        let n = try BenchTrace.write(events: events, to: URL(fileURLWithPath: out), seed: seed)
        let dt = Measure.now() - t0
        FileHandle.standardError.write(Data(String(format: "wrote %d events to %@ in %.1f s\n", n, out, dt).utf8))
    }
}

/// Worker: reads one trace in this process and prints a `RunResult` JSON line.
struct ReadTrace: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "read", abstract: "Read a trace with TraceReader; print events/s and peak RSS as JSON.")
    @Argument(help: "Trace path.") var path: String
    @Option(name: .customLong("repeat"), help: "Repetitions (best time is reported).") var repeat_: Int = 1

    static func readOnce(_ url: URL) throws -> (Int, Double, Double) {
        let t0 = Measure.now()
        let r = try TraceReader(url: url, mode: .lenient)
        var n = 0
        var checksum = 0.0
        while let e = try r.next() {
            n += 1
            checksum += e.time
        }
        let dt = Measure.now() - t0
        guard r.stats.skippedTotal == 0 else { throw BenchError("reader skipped \(r.stats.skippedTotal) lines") }
        return (n, dt, checksum)
    }

    func run() throws {
        var best = Double.infinity, events = 0
        for _ in 0..<max(1, repeat_) {
            let (n, dt, _) = try Self.readOnce(URL(fileURLWithPath: path))
            best = min(best, dt); events = n
        }
        let r = RunResult(impl: "swift TraceReader", events: events, seconds: best, peak_rss_mib: Measure.peakRSSMiB())
        print(String(decoding: try JSONEncoder().encode(r), as: UTF8.self))
    }
}

/// Worker: the floor of any line reader, the same file read with read(2) in 1 MiB chunks and its
/// newlines counted with memchr (what `wc -l` does), in this process; prints a `RunResult`
/// (events = lines after the header, so rows compare per event).
struct FloorPass: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "floor", abstract: "read(2) + memchr newline count over a file; print lines/s as JSON.")
    @Argument(help: "File path.") var path: String
    @Option(name: .customLong("repeat"), help: "Repetitions (best time is reported).") var repeat_: Int = 1

    static func countLines(_ path: String) throws -> Int {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw BenchError("cannot open \(path)") }
        defer { close(fd) }
        let size = 1 << 20
        let buf = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer { buf.deallocate() }
        var lines = 0
        while true {
            let n = read(fd, buf, size)
            guard n > 0 else { break }
            var p = UnsafeRawPointer(buf), left = n
            while left > 0, let q = memchr(p, 0x0A, left) {
                lines += 1
                let k = p.distance(to: UnsafeRawPointer(q)) + 1
                p += k; left -= k
            }
        }
        return lines
    }

    func run() throws {
        var best = Double.infinity, lines = 0
        for _ in 0..<max(1, repeat_) {
            let t0 = Measure.now()
            lines = try Self.countLines(path)
            best = min(best, Measure.now() - t0)
        }
        let r = RunResult(impl: "memchr floor", events: lines - 1, seconds: best, peak_rss_mib: Measure.peakRSSMiB())
        print(String(decoding: try JSONEncoder().encode(r), as: UTF8.self))
    }
}

/// The issue-2 acceptance benchmark: generates traces at two lengths, then for each runs
/// the Swift reader, the floor (read(2) + memchr over the same file, in process, and `wc -l` as
/// a separate program) and the plain Python reader (`scripts/bench/reader_python.py`), each as
/// its own process (so peak RSS is per run), and prints a table with MB/s: how close the reader
/// is to the speed of merely finding the lines (issue 22).
struct ReaderSuite: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reader",
                                                    abstract: "Reader throughput and peak memory vs the memchr floor and Python's json module, at two trace lengths.")
    @Option(help: "Trace lengths in events, comma separated.") var lengths = "1000000,3000000"
    @Option(help: "Folder for generated traces (reused when present).") var dir = ".build/bench-data"
    @Option(help: "Python interpreter.") var python = "python3"
    @Option(help: "The Python reader script.") var script = "scripts/bench/reader_python.py"
    @Option(name: .customLong("repeat"), help: "Swift repetitions per length (best time is reported).") var repeat_: Int = 3

    func run() throws {
        print("read trace (1 Hz GNSS + truth, 100 Hz acc/gyro/mag), one core, best of \(repeat_) for Swift and the floor")
        print(RunResult.tableHeader + "   MB/s")
        let me = Measure.executablePath
        let rows = try compareWithPython(lengths: lengths, dir: dir, python: python, script: script, worker: "read",
                                         repeat: repeat_, eachRow: printComparisonRows) { path, s in
            let size = Double((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
            let f = try JSONDecoder().decode(RunResult.self, from: Data(try Measure.run(me, ["floor", path, "--repeat", String(repeat_)]).utf8))
            var wc: RunResult?
            if let w = Measure.which("wc") {
                var best = Double.infinity
                for _ in 0..<max(1, repeat_) {
                    let t0 = Measure.now(); _ = try Measure.run(w, ["-l", path]); best = min(best, Measure.now() - t0)
                }
                wc = RunResult(impl: "wc -l (process)", events: f.events, seconds: best, peak_rss_mib: 0)
            }
            let mb = { (r: RunResult) in String(format: "%.0f", size / 1e6 / r.seconds) }
            print(String(format: "file %.0f MB: reader %@ MB/s, memchr floor %@ MB/s%@ → reader at %.0f %% of the floor",
                         size / 1e6, mb(s), mb(f), wc.map { ", wc -l \(mb($0)) MB/s" } ?? "", 100 * f.seconds / s.seconds))
            print(f.row)
            if let wc { print(wc.row) }
            printSummary("reader, \(s.events / 1000)k events", String(format: "%.2f M events/s (%@ MB/s)", s.eventsPerSecond / 1e6, mb(s)),
                         reference: "memchr floor \(mb(f)) MB/s", ratio: f.seconds / s.seconds, target: "≥ 2.5 M events/s")
        }
        for (s, p) in rows {
            if let p {
                printSummary("reader vs Python json reader, \(s.events / 1000)k events", String(format: "%.2f M events/s", s.eventsPerSecond / 1e6),
                             reference: String(format: "Python %.2f M events/s", p.eventsPerSecond / 1e6),
                             ratio: s.eventsPerSecond / p.eventsPerSecond, target: "–")
            }
        }
        if rows.count >= 2 {
            let a = rows.first!.swift, b = rows.last!.swift
            print(String(format: "memory vs length: Swift %.1f → %.1f MiB for %.1fx the events", a.peak_rss_mib, b.peak_rss_mib,
                         Double(b.events) / Double(a.events)))
        }
    }
}
