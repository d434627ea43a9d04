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
    static func bytes(_ refiner: ReportRefiner, _ record: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        _ = refiner.refine(json: record, file: "r.jsonl", line: 7, into: &out)
        return out
    }

    @Test func damagedRecordsGiveTheSameBytes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let reference = root.appendingPathComponent("Traces/reports/reference.json")
        let lines = try String(contentsOf: root.appendingPathComponent("Traces/reports/sample-reports.jsonl"), encoding: .utf8)
            .split(separator: "\n").map { Array($0.utf8) }
        let once = try ReportRefiner(referenceURL: reference), twice = try ReportRefiner(referenceURL: reference)
        twice.deferEvidence = false
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
        ].map { Array($0.utf8) }
        var malformed = 0
        for r in records {
            let a = Self.bytes(once, r), b = Self.bytes(twice, r)
            #expect(a == b, "\(String(decoding: r, as: UTF8.self))\n\(String(decoding: a, as: UTF8.self))\n\(String(decoding: b, as: UTF8.self))")
            if String(decoding: b, as: UTF8.self).contains("invalid JSON") { malformed += 1 }
        }
        #expect(malformed > 10)
    }
}
