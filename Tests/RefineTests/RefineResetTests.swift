import Foundation
import Positioning
import Refine
import Testing

/// `refine` builds its pipeline once and resets it per report (`Pipeline.reset()`): the output
/// bytes are those of a new pipeline per report, record by record, whatever came before.
///
/// Records: the bundled sample reports (WiFi scans and 12 s IMU windows through wcl, rss,
/// hapel, fingerprint and the ekf); the same reports moved 2.9 km south, into another 0.05°
/// tile (another frame and reference conversion); the sample reports cut off at 30 % and 70 %
/// of their bytes (records that fail midway, after part of their evidence was scanned), and
/// with one evidence event broken midway (a rejection, the rest refined); and reports without
/// evidence spread over 1° × 1° (the benchmark's generator). In file order, then in three seeded
/// orders, so every kind of record follows every other.
@Suite struct RefineResetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func records() throws -> [[UInt8]] {
        let lines = try String(contentsOf: root.appendingPathComponent("Traces/reports/sample-reports.jsonl"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        var out = lines
        for l in lines {
            // The top-level "lat" is the record's first "lat" key (the evidence has none).
            guard let r = l.range(of: #""lat":"#), let end = l[r.upperBound...].firstIndex(of: ",") else { continue }
            let lat = try #require(Double(l[r.upperBound..<end].trimmingCharacters(in: .whitespaces)))
            out.append(l.replacingCharacters(in: r.upperBound..<end, with: "\(lat - 0.026)"))
            out.append(String(l.prefix(l.count * 3 / 10)))
            out.append(String(l.prefix(l.count * 7 / 10)))
            if let e = l.range(of: #""type":"gyro""#, range: l.index(l.startIndex, offsetBy: l.count / 2)..<l.endIndex) {
                out.append(l.replacingCharacters(in: e, with: #""type":"gyro","x":"bad""#))
            }
        }
        var state: UInt64 = 22
        func next() -> Double {
            state &+= 0x9E3779B97F4A7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
            return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
        }
        for i in 0..<40 {
            out.append(String(format: #"{"id":"p%d","lat":%.7f,"lon":%.7f,"accuracy_m":%.1f,"t":0}"#, i, 37 + next(), 127 + next(), 20 + 50 * next()))
        }
        var all = out
        for _ in 0..<3 {
            var shuffled = out.map { ($0, next()) }
            shuffled.sort { $0.1 < $1.1 }
            all += shuffled.map(\.0)
        }
        return all.map { Array($0.utf8) }
    }

    @Test func resetGivesTheBytesOfAFreshPipelinePerReport() throws {
        let reference = Self.root.appendingPathComponent("Traces/reports/reference.json")
        let reused = try ReportRefiner(referenceURL: reference), fresh = try ReportRefiner(referenceURL: reference)
        fresh.freshPipelinePerReport = true
        var statuses: [ReportRefiner.Outcome.Status: Int] = [:]
        for (i, r) in try Self.records().enumerated() {
            var a: [UInt8] = [], b: [UInt8] = []
            let outcome = reused.refine(json: r, file: "r.jsonl", line: i + 1, into: &a)
            _ = fresh.refine(json: r, file: "r.jsonl", line: i + 1, into: &b)
            #expect(a == b, "record \(i + 1):\n\(String(decoding: a, as: UTF8.self))\n\(String(decoding: b, as: UTF8.self))")
            statuses[outcome.status, default: 0] += 1
        }
        // Every kind of outcome follows every other.
        #expect(statuses[.refined, default: 0] > 50 && statuses[.reported, default: 0] > 100 && statuses[.error, default: 0] > 50)
    }
}

/// `append(number:)` writes `Double.description`'s digits (through `Double.write(to:)`, without
/// a String), integers without a fraction and non-finite values as null: compared with the
/// rule written with `description` on seeded values of every magnitude and on edge values.
@Suite struct NumberFormattingTests {
    static func reference(_ v: Double) -> String {
        guard v.isFinite else { return "null" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return v.description
    }

    @Test func bytesEqualDescription() {
        var state: UInt64 = 7
        func next() -> UInt64 {
            state &+= 0x9E3779B97F4A7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
            return z ^ (z >> 31)
        }
        var values: [Double] = [0, -0.0, 1, -1, 0.1, 1e15, -1e15, 1e15 + 2, 123456789012345.6, 5e-324, .leastNormalMagnitude,
                                .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .infinity, -.infinity, .nan, 1e-7, 1e16, 37.49977756184993]
        for _ in 0..<100_000 { values.append(Double(bitPattern: next())) }                 // every exponent
        for _ in 0..<100_000 { values.append((Double(next() >> 11) / Double(1 << 53) - 0.5) * 400) }   // coordinates, metres
        var out: [UInt8] = [], want = ""
        for (i, v) in values.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")); want += "," }
            out.append(number: v); want += Self.reference(v)
        }
        #expect(String(decoding: out, as: UTF8.self) == want)
    }
}
