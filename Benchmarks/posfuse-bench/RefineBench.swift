import ArgumentParser
import Foundation
import Positioning
import Replay

/// Worker: refines one report file in this process (the `posfuse refine` loop: stream, refine,
/// serialise each Feature) and prints a `RunResult` JSON line (events = reports).
struct RefineOne: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "refine-one", abstract: "Refine one report file; print reports/s and peak RSS as JSON.")
    @Argument(help: "Reports (JSON Lines).") var path: String
    @Option(help: "Reference data.") var reference: String = "Traces/reports/reference.json"
    @Flag(help: "Delimit the evidence events in the record scan and scan each again in the decoder (the reading before session 22; A/B).")
    var delimitEvidence = false

    func run() throws {
        let refiner = try ReportRefiner(referenceURL: URL(fileURLWithPath: reference))
        refiner.readsEvidenceMembers = !delimitEvidence
        var n = 0, bytes = 0
        var out: [UInt8] = []
        out.reserveCapacity(1 << 17)
        let t0 = Measure.now()
        try ReportStream(url: URL(fileURLWithPath: path)).forEach { record in
            switch record {
            case .bytes(let b, let line): _ = refiner.refine(b, file: path, line: line, into: &out)
            case .malformed(let reason, let line): ReportRefiner.writeError(id: nil, reason: "\(path):\(line): \(reason)", into: &out)
            }
            out.append(0x0A)
            if out.count > 1 << 16 { bytes += out.count; out.removeAll(keepingCapacity: true) }
            n += 1
        }
        bytes += out.count
        let dt = Measure.now() - t0
        guard bytes > 0 else { throw BenchError("no output") }
        let r = RunResult(impl: "swift refine", events: n, seconds: dt, peak_rss_mib: Measure.peakRSSMiB())
        print(String(decoding: try JSONEncoder().encode(r), as: UTF8.self))
    }
}

/// `posfuse refine` throughput (issue 6: "a million reports in bounded memory"), one core, on two
/// generated files: the bundled sample reports repeated (IMU windows, scans, photo pairs,
/// acoustic arrivals: ≈ 51 kB per report) and reports without evidence spread over 1° × 1°
/// (one 0.05° reference tile each, the per-report pipeline cost). Side by side: Python's json
/// module parsing each report and writing a minimal Feature (`scripts/bench/refine_python.py`),
/// the I/O floor of any refiner written on it.
struct RefineSuite: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "refine",
                                                    abstract: "posfuse refine reports/s and peak memory vs Python's json I/O floor.")
    @Option(help: "Copies of Traces/reports/sample-reports.jsonl in the evidence file.") var copies = 200
    @Option(help: "Reports in the no-evidence file.") var plain = 20_000
    @Option(help: "Folder for generated files (reused when present).") var dir = ".build/bench-data"
    @Option(help: "Python interpreter ('' to skip).") var python = "python3"
    @Option(help: "The Python reference script.") var script = "scripts/bench/refine_python.py"

    func run() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let heavy = "\(dir)/reports-evidence-\(copies).jsonl", light = "\(dir)/reports-plain-\(plain).jsonl"
        if !FileManager.default.fileExists(atPath: heavy) {
            let sample = try String(contentsOfFile: "Traces/reports/sample-reports.jsonl", encoding: .utf8)
            let body = sample.hasSuffix("\n") ? sample : sample + "\n"
            guard FileManager.default.createFile(atPath: heavy, contents: nil) else { throw BenchError("cannot write \(heavy)") }
            let h = try FileHandle(forWritingTo: URL(fileURLWithPath: heavy))
            for _ in 0..<copies { h.write(Data(body.utf8)) }
            try h.close()
        }
        if !FileManager.default.fileExists(atPath: light) {
            var rng = SplitMix64(seed: 1)
            var text = ""
            for i in 0..<plain {
                text += String(format: "{\"id\":\"r%d\",\"lat\":%.7f,\"lon\":%.7f,\"accuracy_m\":%.1f,\"t\":0}\n",
                               i, 37 + rng.uniform(), 127 + rng.uniform(), 20 + 50 * rng.uniform())
            }
            try text.write(toFile: light, atomically: true, encoding: .utf8)
        }
        let me = Measure.executablePath
        let py = python.isEmpty ? nil : Measure.which(python)
        print("posfuse refine, one core (reports = events; Python: json parse + dump only)")
        print(RunResult.tableHeader)
        for (label, path) in [("with evidence", heavy), ("no evidence", light)] {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            let s = try JSONDecoder().decode(RunResult.self, from: Data(try Measure.run(me, ["refine-one", path]).utf8))
            var p: RunResult?
            if let py { p = try JSONDecoder().decode(RunResult.self, from: Data(try Measure.run(py, [script, path]).utf8)) }
            print("\(label): \(path) (\(size / 1_048_576) MiB, \(String(format: "%.1f", Double(size) / 1_048_576 / s.seconds)) MiB/s)")
            printComparisonRows(s, p)
            printSummary("refine, \(label)", String(format: "%.0f reports/s, %.1f MiB peak", s.eventsPerSecond, s.peak_rss_mib),
                         reference: p.map { String(format: "Python parse + dump %.0f reports/s", $0.eventsPerSecond) } ?? "–",
                         ratio: p.map { s.eventsPerSecond / $0.eventsPerSecond }, target: "≥ 3x")
        }
    }
}
