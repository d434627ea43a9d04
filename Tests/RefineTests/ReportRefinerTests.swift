import Foundation
import Positioning
import Refine
import Testing

/// `ReportRefiner` as a library (the CLI's stream, golden bytes and evidence cases are in
/// CLITests/Refine*Tests): one record in, one GeoJSON Feature out.
@Suite struct ReportRefinerTests {
    static func refine(_ json: String, line: Int = 1) throws -> (ReportRefiner.Outcome, [String: Any]) {
        let refiner = try ReportRefiner()
        var out: [UInt8] = []
        let outcome = refiner.refine(json: Array(json.utf8), file: "r.jsonl", line: line, into: &out)
        let feature = try #require(try JSONSerialization.jsonObject(with: Data(out)) as? [String: Any])
        return (outcome, feature)
    }

    @Test func aReportWithoutEvidenceKeepsItsPositionAndItsAccuracy() throws {
        let (outcome, f) = try Self.refine(#"{"id":"a","lat":48.1,"lon":11.5,"accuracy_m":10}"#)
        #expect(outcome.status == .reported)
        let p = try #require(f["properties"] as? [String: Any])
        let c = try #require((f["geometry"] as? [String: Any])?["coordinates"] as? [Double])
        #expect(abs(c[0] - 11.5) < 1e-9 && abs(c[1] - 48.1) < 1e-9)
        // The 68 % radius r gives σ = r / √(−2 ln 0.32) per axis; the 95 % radius of a circular
        // 2-D normal is σ·√(−2 ln 0.05) (χ²₂ quantile), whatever the filter's frame.
        let sigma = 10 / (-2 * log(0.32)).squareRoot()
        let r95 = try #require(p["radius95_m"] as? Double)
        #expect(abs(r95 - sigma * (-2 * log(0.05)).squareRoot()) < 1e-6)
        #expect(p["sources_used"] as? [String] == ["gnss"] && p["status"] as? String == "reported")
    }

    @Test func aBadRecordIsOneErrorFeatureNamingFileAndLine() throws {
        let (outcome, f) = try Self.refine(#"{"id":"b","lat":"x"}"#, line: 2)
        #expect(outcome.status == .error)
        let p = try #require(f["properties"] as? [String: Any])
        #expect(p["status"] as? String == "error" && p["id"] as? String == "b")
        #expect((p["error"] as? String)?.hasPrefix("r.jsonl:2: ") == true)
        #expect(f["geometry"] is NSNull)
    }

    @Test func reportsOfOneTileShareItsFrame() {
        // Tiles are 0.05° squares centred on multiples of 0.05°.
        let a = ReportRefiner.frame(latitude: 48.1001, longitude: 11.5001).origin
        let b = ReportRefiner.frame(latitude: 48.12, longitude: 11.49).origin
        let c = ReportRefiner.frame(latitude: 48.13, longitude: 11.5).origin
        #expect(a.latitude == b.latitude && a.longitude == b.longitude)
        #expect(abs(a.latitude - 48.1) < 1e-12 && abs(a.longitude - 11.5) < 1e-12)
        #expect(abs(c.latitude - 48.15) < 1e-12)
    }
}

/// Evidence validated once (the record scan delimits `evidence`, the trace decoder validates each
/// event) gives the same bytes as validating it in the record scan too, on damaged records:
/// seeded byte edits inside and around the evidence of the bundled sample reports (deleted,
/// doubled or replaced bytes; brackets, quotes, commas, digits, letters), repeated `evidence`
/// keys, a Feature with a top-level `evidence`, deep nesting and out-of-range numbers.
@Suite struct DeferredEvidenceTests {
    /// The bundled reference and sample report lines.
    static func samples() throws -> (reference: URL, lines: [[UInt8]]) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let lines = try String(contentsOf: root.appendingPathComponent("Traces/reports/sample-reports.jsonl"), encoding: .utf8)
            .split(separator: "\n").map { Array($0.utf8) }
        return (root.appendingPathComponent("Traces/reports/reference.json"), lines)
    }

    static func bytes(_ refiner: ReportRefiner, _ record: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        _ = refiner.refine(json: record, file: "r.jsonl", line: 7, into: &out)
        return out
    }

    /// The bundled sample reports, whole: the events read by the record scan (session 22), only
    /// delimited there (before), and validated there too give the same bytes.
    @Test func bundledRecordsGiveTheSameBytesEachWay() throws {
        let (reference, lines) = try Self.samples()
        let read = try ReportRefiner(referenceURL: reference), delimiting = try ReportRefiner(referenceURL: reference)
        let validating = try ReportRefiner(referenceURL: reference)
        delimiting.readsEvidenceMembers = false
        validating.deferEvidence = false
        var refined = 0
        for r in lines {
            let a = Self.bytes(read, r), b = Self.bytes(delimiting, r), c = Self.bytes(validating, r)
            #expect(a == b && a == c, "\(String(decoding: a, as: UTF8.self))")
            if String(decoding: a, as: UTF8.self).contains("\"status\":\"refined\"") { refined += 1 }
        }
        #expect(refined >= 10)
    }

    @Test func damagedRecordsGiveTheSameBytes() throws {
        let (reference, lines) = try Self.samples()
        let once = try ReportRefiner(referenceURL: reference), twice = try ReportRefiner(referenceURL: reference)
        twice.deferEvidence = false
        // The reading before session 22: the record scan delimits the events, the decoder scans each.
        let delimiting = try ReportRefiner(referenceURL: reference)
        delimiting.readsEvidenceMembers = false
        var state: UInt64 = 22
        func next(_ n: Int) -> Int {
            state &+= 0x9E3779B97F4A7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
        let edits: [UInt8] = Array("{}[]\",:0-.e9 aZ\\".utf8) + [0x00, 0xC3, 0xFF]
        var records: [[UInt8]] = []
        for _ in 0..<600 {
            var r = lines[next(lines.count)]
            // Short records keep the test fast: cut the evidence after a few events, closing it.
            if let e = r.firstIndex(of: UInt8(ascii: "[")), r.count > 3_000 {
                var cut = e + 1_500
                while cut < r.count && r[cut] != UInt8(ascii: "}") { cut += 1 }
                if cut < r.count { r = Array(r[...cut]) + Array("]}".utf8) }
            }
            for _ in 0...next(3) {
                let i = next(r.count)
                switch next(3) {
                case 0: r.remove(at: i)
                case 1: r.insert(edits[next(edits.count)], at: i)
                default: r[i] = edits[next(edits.count)]
                }
            }
            records.append(r)
        }
        records += [
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8}],"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8}}]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8]],"evidence":5}"#,
            #"{"type":"Feature","geometry":{"type":"Point","coordinates":[11.5,48.1]},"properties":{"accuracy_m":10},"evidence":[{"t":1,}]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":1e999,"y":0,"z":9.8}]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8,"deep":"#
                + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}]}",
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8,"deep":"#
                + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}]}",
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8},"x"]}"#,
            #"{"lat":95,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8},{"t":2 "type":"acc"}]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":"1","type":"acc","x":0,"y":0,"z":9.8},{"t":2,"type":"warp"}]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8}  ,  ]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","s":"}]\"{[","x":0,"y":0,"z":9.8}]}"#,
            // Read by the record scan (session 22): errors whose column or text depends on the
            // event's own offsets, the nesting limit of a trace line at and beyond its edge,
            // whitespace, escapes, an empty evidence list, a Feature's evidence in `properties`.
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8},{"t":2,"type":"acc","x":0,"x":1,"y":0,"z":9.8}]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8,"device":"\ud800"}]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[ {"t":1, "type":"ac\u0063","x":0,"y":0,"z":9.8} , {"t":2,"type":"photo","id":"a","w":true}]}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[]}"#,
            #"{"type":"Feature","geometry":{"type":"Point","coordinates":[11.5,48.1]},"properties":{"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"x":1,"y":0,"z":9.8}]}}"#,
            #"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"wifi","aps":[{"bssid":"AA:BB:CC:00:00:01","freq":2412,"rss":-60},{"bssid":"aa","rss":-1}]}]}"#,
        ].map { Array($0.utf8) }
        for depth in [62, 63, 64, 65, 66, 67] {
            records.append(Array((#"{"lat":48.1,"lon":11.5,"accuracy_m":10,"evidence":[{"t":1,"type":"acc","x":0,"y":0,"z":9.8,"deep":"#
                + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}]}").utf8))
        }
        var malformed = 0
        for r in records {
            let a = Self.bytes(once, r), b = Self.bytes(twice, r), c = Self.bytes(delimiting, r)
            #expect(a == b, "\(String(decoding: r, as: UTF8.self))\n\(String(decoding: a, as: UTF8.self))\n\(String(decoding: b, as: UTF8.self))")
            #expect(c == b, "\(String(decoding: r, as: UTF8.self))\n\(String(decoding: c, as: UTF8.self))\n\(String(decoding: b, as: UTF8.self))")
            if String(decoding: b, as: UTF8.self).contains("invalid JSON") { malformed += 1 }
        }
        #expect(malformed > 10)
    }
}
