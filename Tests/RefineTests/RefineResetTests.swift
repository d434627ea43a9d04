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

    /// `appendShortDecimal` (the ≤ 15-digit path of `append(number:)`, session 23) against
    /// `description`, the routine it stands in for: where it answers, its bytes are
    /// `description`'s; it answers for every non-integer in [10⁻³, 10¹⁵) whose `description` has
    /// at most 15 significant digits, and for nothing else. On 1,000,000 seeded decimals of 1 to 15
    /// digits over that range (read by `Double(String)`, a correct reader), 1,000,000 seeded
    /// doubles of every exponent, 1,000,000 in [−400, 400], their neighbours one ulp away, and
    /// edge values (powers of ten and their neighbours, the range's ends, subnormals, ±0, the
    /// extremes, 1e15, 1e16, 0.1 + 0.2, values with 15, 16 and 17 digits).
    @Test func shortDecimalsAreDescriptionBytes() throws {
        var state: UInt64 = 23
        func next() -> UInt64 {
            state &+= 0x9E3779B97F4A7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
            return z ^ (z >> 31)
        }
        var values: [Double] = [0, -0.0, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.0 / 3, 2.0 / 3, 0.001, -0.001, 0.0009999999999999998,
                                1e15, -1e15, 1e16, 999999999999999.9, 99999999999999.99, 123456789012345.6, 12345678901234.56,
                                1e15.nextDown, 5e-324, -5e-324, 2.2250738585072014e-308, .leastNormalMagnitude, .leastNonzeroMagnitude,
                                .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 37.5665616, 127.7457818, 68.6, 1.5096, 0.30000000000000004,
                                123.456789012345, 123.4567890123456, 123.45678901234567, 4503599627370495.5, 0.0015, 0.00015]
        for e in -24...24 {
            let p = Double("1e\(e)")!
            values += [p, p.nextUp, p.nextDown, -p, 1.5 * p, 9.5 * p, 0.5 * p, p / 3]
        }
        for _ in 0..<1_000_000 {
            let digits = Int(next() % 15) + 1
            var m = next() % 1_000_000_000_000_000
            var p: UInt64 = 1
            for _ in 0..<digits { p *= 10 }
            m %= p
            let e = Int(next() % 19) - 3 - digits                    // m·10^e from ≈ 10⁻¹⁸ to 10¹⁵
            let v = Double("\(next() & 1 == 0 ? "" : "-")\(m)e\(e)")!
            values.append(v)
        }
        for _ in 0..<1_000_000 { values.append(Double(bitPattern: next())) }
        for _ in 0..<1_000_000 { values.append((Double(next() >> 11) / Double(1 << 53) - 0.5) * 800) }
        for i in 0..<200_000 { let v = values[values.count - 1 - i]; values += [v.nextUp, v.nextDown] }
        var answered = 0, checked = 0
        for v in values {
            var out: [UInt8] = []
            let took = out.appendShortDecimal(v)
            let d = v.description
            // What the path claims: a finite non-integer in range whose description has ≤ 15 significant digits.
            let significant = d.drop { $0 == "-" || $0 == "0" || $0 == "." }.filter { $0 != "." }.count
            let eligible = v.isFinite && v != v.rounded() && v.magnitude >= 1e-3 && v.magnitude < 1e15 && !d.contains("e") && significant <= 15
            #expect(took == eligible, "\(d): answered \(took), expected \(eligible)")
            if took {
                answered += 1
                #expect(String(decoding: out, as: UTF8.self) == d, "\(d)")
            } else {
                #expect(out.isEmpty)
            }
            var whole: [UInt8] = []
            whole.append(number: v)
            if String(decoding: whole, as: UTF8.self) != Self.reference(v) { #expect(Bool(false), "append(number:) \(d)") }
            checked += 1
        }
        #expect(checked > 3_000_000 && answered > 400_000)
    }
}
