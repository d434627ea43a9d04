import Foundation
import Testing
import TestSupport

/// `posfuse refine` writes the bytes it wrote before its reader and writer were rewritten
/// (issue 22): the expected outputs in `Fixtures/refine/*.expected` were written by the
/// JSONSerialization-based refiner of 060c66d (debug build) and are compared byte for byte.
///
/// Inputs: the bundled sample reports (`Traces/reports`), once (`--lines`) and twice over (the
/// heavy file of `posfuse-bench refine` is that file repeated; FeatureCollection output);
/// `plain-300.jsonl`, the first 300 reports of the benchmark's no-evidence file (same generator:
/// `posfuse-bench refine --plain 300` writes these bytes); `edge.jsonl`, odd but deterministic
/// records (ids of every JSON type, repeated keys, CRLF, blank lines, escapes, non-objects, broken
/// JSON, Feature variants, evidence variants, a last line without newline); two FeatureCollection
/// documents (one line; pretty-printed over many lines).
///
/// One deliberate difference (docs/refine.md, "Reading"): Foundation's parser did not round
/// numbers of more than 15 significant digits correctly (127.03080274026478 came out 3 units in
/// the last place high); the scanner does. So the sample reports are compared with their numbers
/// cut to 15 significant digits (`fifteenDigits`, where both parsers agree), and the unmodified
/// file is compared value by value (same records, keys, strings; numbers within 1e-9 relative).
/// Since then robust (issue 25) bounds `accuracy_m` (≤ 2e7 m): its error message says so and
/// the `big-acc` record (1e300 m) is an error; the expected files carry that announced change.
@Suite struct RefineGoldenTests {
    static let fixtures = "Tests/CLITests/Fixtures/refine"
    static let reference = CLI.root.appendingPathComponent("Traces/reports/reference.json").path

    func expected(_ name: String) throws -> String {
        String(decoding: try Data(contentsOf: CLI.root.appendingPathComponent("\(Self.fixtures)/\(name)")), as: UTF8.self)
    }

    func check(_ args: [String], expected name: String, cwd: URL? = nil) throws {
        let want = try expected(name)
        let r = try CLI.run(args + ["--reference", Self.reference, "--no-progress"], cwd: cwd)
        #expect(r.status == 0, "\(r.stderr)")
        if r.stdout != want {
            // Name the first differing record, not just "not equal".
            let a = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let b = want.split(separator: "\n", omittingEmptySubsequences: false)
            let i = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
            Issue.record("\(name): output differs at line \(i + 1) (got \(a.count) lines, want \(b.count)):\n got: \(i < a.count ? String(a[i].prefix(300)) : "<none>")\nwant: \(i < b.count ? String(b[i].prefix(300)) : "<none>")")
        }
    }

    /// Every number of more than 15 significant digits re-printed with 15 (`%.15g`).
    static func fifteenDigits(_ text: String) throws -> String {
        let re = try NSRegularExpression(pattern: #"(?<=[:\[,\s])-?\d+(\.\d+)?([eE][+-]?\d+)?(?=[,\]\}\s])"#)
        let ns = text as NSString
        var out = "", last = 0
        for m in re.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
            let token = ns.substring(with: m.range)
            out += ns.substring(with: NSRange(location: last, length: m.range.location - last))
            let mantissa = token.split(whereSeparator: { $0 == "e" || $0 == "E" })[0]
            let digits = mantissa.filter(\.isNumber).drop(while: { $0 == "0" })
            out += token.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) && digits.count > 15
                ? String(format: "%.15g", Double(token)!) : token
            last = m.range.location + m.range.length
        }
        return out + ns.substring(from: last)
    }

    /// The bundled sample reports (numbers cut to 15 digits) in a temporary folder, once and twice.
    func sampleFolder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("refine-golden-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let text = try Self.fifteenDigits(try String(contentsOf: CLI.root.appendingPathComponent("Traces/reports/sample-reports.jsonl"), encoding: .utf8))
        try text.write(to: dir.appendingPathComponent("sample-reports.jsonl"), atomically: true, encoding: .utf8)
        let line = text.hasSuffix("\n") ? text : text + "\n"
        try (line + line).write(to: dir.appendingPathComponent("sample-twice.jsonl"), atomically: true, encoding: .utf8)
        return dir
    }

    @Test func sampleReports() throws {
        let dir = try sampleFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        try check(["refine", "sample-reports.jsonl", "--lines"], expected: "sample.expected", cwd: dir)
        // Twice over (line numbers go on), as the default FeatureCollection output.
        try check(["refine", "sample-twice.jsonl"], expected: "sample-twice.expected", cwd: dir)
    }

    @Test func generatedPlainReports() throws {
        try check(["refine", "\(Self.fixtures)/plain-300.jsonl", "--lines"], expected: "plain-300.expected")
    }

    @Test func edgeRecords() throws {
        try check(["refine", "\(Self.fixtures)/edge.jsonl", "--lines"], expected: "edge.expected")
    }

    @Test func featureCollectionInput() throws {
        try check(["refine", "\(Self.fixtures)/fc-compact.geojson", "--lines"], expected: "fc-compact.expected")
        try check(["refine", "\(Self.fixtures)/fc-pretty.geojson", "--lines"], expected: "fc-pretty.expected")
    }

    /// The unmodified sample file: the same records, keys and strings as before; numbers differ only
    /// by what the old parser's misrounded 17-digit coordinates moved (≤ 1e-9 relative).
    @Test func unroundedSampleReportsAgreeValueByValue() throws {
        let r = try CLI.run(["refine", "Traces/reports/sample-reports.jsonl", "--lines", "--reference", Self.reference, "--no-progress"])
        #expect(r.status == 0)
        let got = r.stdout.split(separator: "\n"), want = try expected("sample-unrounded.expected").split(separator: "\n")
        #expect(got.count == want.count)
        var worst = 0.0
        func compare(_ a: Any, _ b: Any, _ path: String) {
            switch (a, b) {
            case let (x as [String: Any], y as [String: Any]):
                #expect(Set(x.keys) == Set(y.keys), "\(path)")
                for (k, v) in x { if let w = y[k] { compare(v, w, path + "." + k) } }
            case let (x as [Any], y as [Any]):
                #expect(x.count == y.count, "\(path)")
                for (i, (v, w)) in zip(x, y).enumerated() { compare(v, w, "\(path)[\(i)]") }
            case let (x as String, y as String): #expect(x == y, "\(path)")
            case let (x as NSNumber, y as NSNumber):
                let d = abs(x.doubleValue - y.doubleValue) / max(abs(x.doubleValue), abs(y.doubleValue), 1e-300)
                worst = max(worst, d)
                #expect(d <= 1e-9, "\(path): \(x) vs \(y)")
            default: #expect(a is NSNull && b is NSNull, "\(path)")
            }
        }
        for (i, (g, w)) in zip(got, want).enumerated() {
            compare(try JSONSerialization.jsonObject(with: Data(g.utf8)), try JSONSerialization.jsonObject(with: Data(w.utf8)), "record \(i + 1)")
        }
        print("refine on the unrounded sample reports: largest relative difference to the old output \(worst)")
    }
}
