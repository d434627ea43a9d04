import Foundation
import Positioning
import Replay

/// One fuzz target: a parser of the product, fed arbitrary bytes, with its oracle. A target
/// returns normally when the input was handled as the product promises (accepted with valid
/// output, or rejected with a data error); it calls `violation` (which stops the process, so
/// libFuzzer records the input as a crash) when an oracle fails. A Swift runtime trap (index
/// out of range, integer overflow, force unwrap) stops the process by itself.
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable (Data) throws -> Void
}

/// Stops the process: an oracle failed on this input.
func violation(_ target: String, _ what: String) -> Never {
    FileHandle.standardError.write(Data("ORACLE FAILURE [\(target)]: \(what)\n".utf8))
    abort()
}

/// A private scratch folder (tmpfs when there is one) for inputs the product reads by path.
let scratch: URL = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    let u = URL(fileURLWithPath: base).appendingPathComponent("posfuse-fuzz-\(getpid())")
    try? FileManager.default.createDirectory(at: u, withIntermediateDirectories: true)
    return u
}()

func scratchFile(_ name: String, _ data: Data) -> URL {
    let u = scratch.appendingPathComponent(name)
    try? FileManager.default.removeItem(at: u)
    FileManager.default.createFile(atPath: u.path, contents: data)
    return u
}

/// Inputs larger than this are skipped (the product bounds line lengths itself; the fuzzer's
/// `-max_len` keeps inputs far smaller anyway).
let maxInput = 1 << 20

// MARK: oracles

/// Every delivered event of a trace re-encodes to a line the strict decoder accepts
/// (numbers finite and inside `TraceDomain`), in non-decreasing time.
func checkTrace(_ target: String, _ url: URL, mode: TraceReadMode, expectEvents: Int? = nil) throws {
    let r: TraceReader
    do { r = try TraceReader(url: url, mode: mode) } catch is TraceDataError { return }
    let checker = TraceLineChecker()
    if let reason = checker.check(r.header) { violation(target, "header accepted but invalid: \(reason)") }
    var last = -Double.infinity
    var n = 0
    while true {
        let e: TraceEvent?
        do { e = try r.next() } catch let err as TraceDataError {
            if mode == .strict { return }
            violation(target, "lenient reader threw \(err)")
        }
        guard let e else { break }
        n += 1
        if e.time < last { violation(target, "events out of order: \(e.time) after \(last)") }
        last = e.time
        if let reason = checker.check(e) { violation(target, "delivered an event outside the format: \(reason)") }
    }
    let s = r.stats
    if s.events != n { violation(target, "stats.events \(s.events) != delivered \(n)") }
    if s.events + s.skippedTotal + s.unknownTotal > s.lines { violation(target, "more records than lines: \(s)") }
    if let k = expectEvents, k != n { violation(target, "trace written with \(k) events reads back \(n)") }
}

/// An imported trace as the CLI writes it must pass the strict validator, all events kept.
func checkImported(_ target: String, _ t: ImportedTrace) throws {
    let out = scratch.appendingPathComponent("imported.jsonl")
    _ = try writeImportedTrace(t, to: out)
    let r: TraceReader
    do { r = try TraceReader(url: out, mode: .strict) } catch { violation(target, "imported trace has a bad header: \(error)") }
    var n = 0
    do { while try r.next() != nil { n += 1 } } catch { violation(target, "imported trace fails validate: \(error)") }
    if n != t.events.count { violation(target, "wrote \(t.events.count) events, validate read \(n)") }
}

func finite(_ v: Double) -> Bool { v.isFinite }

/// All numbers of a JSON value are finite (JSONSerialization never produces NaN, but a
/// refined record might carry one through Double arithmetic).
func allFinite(_ v: Any) -> Bool {
    switch v {
    case let d as Double: return d.isFinite
    case let a as [Any]: return a.allSatisfy(allFinite)
    case let o as [String: Any]: return o.values.allSatisfy(allFinite)
    default: return true
    }
}

// MARK: targets

let origin = Geodetic(latitude: 48.15, longitude: 11.58, height: 500)

let importerTargets: [FuzzTarget] = ImportFormat.allCases.map { fmt in
    FuzzTarget(name: "import-\(fmt.rawValue)") { data in
        let ext = fmt.extensions.sorted().first ?? "txt"
        let u = scratchFile("input.\(ext)", data)
        if fmt.isReference {
            let out = scratch.appendingPathComponent("reference.json")
            try? FileManager.default.removeItem(at: out)
            do { _ = try importReference(format: fmt, urls: [u], output: out, options: ImportOptions()) } catch is TraceDataError { return }
            // What the importer wrote must load (every position inside the domain).
            do { _ = try ReferenceLoader.load(url: out, frame: LocalFrame(origin: origin)) } catch {
                violation("import-\(fmt.rawValue)", "written reference.json does not load: \(error)")
            }
            return
        }
        for strict in [false, true] {
            let t: ImportedTrace
            do { t = try importTrace(format: fmt, urls: [u], options: ImportOptions(strict: strict)) } catch is TraceDataError {
                if strict { continue }
                return   // lenient may still reject a whole file (e.g. not XML), with file:line
            }
            try checkImported("import-\(fmt.rawValue)", t)
        }
    }
}

let allTargets: [FuzzTarget] = [
    FuzzTarget(name: "trace") { data in
        let u = scratchFile("trace.jsonl", data)
        try checkTrace("trace", u, mode: .lenient)
        try checkTrace("trace", u, mode: .strict)
    },
    FuzzTarget(name: "reference") { data in
        let json: Any
        do { json = try JSONSerialization.jsonObject(with: data) } catch { return }
        let ref: ReferenceData
        do { ref = try ReferenceLoader.load(json: json, url: scratch.appendingPathComponent("reference.json"), frame: LocalFrame(origin: origin)) }
        catch is TraceDataError { return }
        let L = TraceDomain.localMetres
        func ok(_ p: SIMD3<Double>) -> Bool { L.contains(p.x) && L.contains(p.y) && L.contains(p.z) }
        for a in ref.accessPoints.values where !ok(a.position) { violation("reference", "AP outside the domain: \(a)") }
        for c in ref.cells.values where !ok(c.position) { violation("reference", "cell outside the domain: \(c)") }
        for b in ref.beacons.values where !ok(b.position) { violation("reference", "beacon outside the domain") }
        for w in ref.walls where !(w.a.x.isFinite && w.a.y.isFinite && w.b.x.isFinite && w.b.y.isFinite) {
            violation("reference", "wall not finite")
        }
        // What loads also builds a pipeline context and locates (CellLookup used to trap here).
        let header = TraceHeader(origin: origin)
        _ = PipelineContext(header: header, reference: ref)
    },
    FuzzTarget(name: "pipeline-yaml") { data in
        let text: String
        do { text = try InputFile.decode(data, file: "p.yaml") } catch { return }
        do {
            let stages = try PipelineConfigLoader.parse(yaml: text, file: "p.yaml")
            _ = try StageRegistry.pipeline(options: stages)
        } catch is ConfigurationError { return }
    },
    FuzzTarget(name: "scenario-yaml") { data in
        let text: String
        do { text = try InputFile.decode(data, file: "s.yaml") } catch { return }
        let sc: Scenario
        do { sc = try Scenario.parse(yaml: text, file: "s.yaml") } catch is ScenarioError { return }
        // An accepted scenario simulates (2 s at most, to keep executions fast) into a trace and
        // a reference.json that the strict reader and the loader accept.
        let dir = scratch.appendingPathComponent("sim")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let trace = dir.appendingPathComponent("trace.jsonl"), ref = dir.appendingPathComponent("reference.json")
        let summary: SimulationSummary
        do {
            summary = try Simulator.run(scenario: sc, options: SimulationOptions(duration: min(sc.duration ?? 2, 2)), trace: trace, reference: ref)
        } catch is ScenarioError { return }
        try checkTrace("scenario-yaml", trace, mode: .strict, expectEvents: summary.events)
        do { _ = try ReferenceLoader.load(url: ref, frame: LocalFrame(origin: sc.origin)) } catch {
            violation("scenario-yaml", "simulated reference.json does not load: \(error)")
        }
    },
    FuzzTarget(name: "estimates-csv") { data in
        let text: String
        do { text = try InputFile.decode(data, file: "e.csv") } catch { return }
        let fixes: [Fix]
        do { fixes = try EstimatesFile.parse(csv: text, file: "e.csv", frame: LocalFrame(origin: origin)) } catch is TraceDataError { return }
        for f in fixes where !(f.time.isFinite && f.position.x.isFinite && f.position.y.isFinite
                               && f.covariance.ee.isFinite && f.covariance.en.isFinite && f.covariance.nn.isFinite) {
            violation("estimates-csv", "accepted a non-finite estimate \(f)")
        }
    },
    FuzzTarget(name: "refine") { data in
        // Records out = records in: one output per non-blank line of a JSON Lines file (a
        // FeatureCollection document: one per feature), each with its required fields and
        // only finite numbers.
        let u = scratchFile("reports.jsonl", data)
        var n = 0
        do {
            try ReportStream(url: u).forEach { record in
                n += 1
                var out: [UInt8] = []
                let outcome: ReportRefiner.Outcome
                switch record {
                case .bytes(let bytes, let line): outcome = refiner.refine(bytes, file: "r", line: line, into: &out)
                case .malformed(let reason, let line): outcome = ReportRefiner.writeError(id: nil, reason: "r:\(line): \(reason)", into: &out)
                }
                guard let f = (try? JSONSerialization.jsonObject(with: Data(out))) as? [String: Any] else {
                    violation("refine", "output record is not a JSON object: \(String(decoding: out, as: UTF8.self))")
                }
                guard f["type"] as? String == "Feature", let p = f["properties"] as? [String: Any], let st = p["status"] as? String,
                      st == outcome.status.rawValue else {
                    violation("refine", "output record without type/properties/status: \(f)")
                }
                if outcome.ok {
                    guard let g = f["geometry"] as? [String: Any], let c = g["coordinates"] as? [Double], c.count >= 2,
                          TraceDomain.latLonViolation(c[1], c[0]) == nil else {
                        violation("refine", "refined record without a valid position: \(f)")
                    }
                } else if p["error"] as? String == nil {
                    violation("refine", "error record without a reason: \(f)")
                }
                if !allFinite(f) { violation("refine", "non-finite number in \(f)") }
            }
        } catch is TraceDataError { return } catch let e as CocoaError { _ = e; return }
        let lines = data.split(separator: 0x0A, omittingEmptySubsequences: true)
            .filter { !$0.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }.count
        let isDocument = data.prefix(4096).contains(UInt8(ascii: "{")) && String(decoding: data.prefix(4096), as: UTF8.self).contains("FeatureCollection")
        if !isDocument && n != lines { violation("refine", "\(lines) records in, \(n) out") }
    },
] + importerTargets

/// The refiner (default pipeline, no reference data), built once.
nonisolated(unsafe) let refiner: ReportRefiner = try! ReportRefiner()

func target(named name: String) -> FuzzTarget? { allTargets.first { $0.name == name } }
