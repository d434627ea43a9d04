import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

/// Seeded generator for property tests in this target.
typealias SeededRNG = SplitMix64

/// Temporary trace files for reader tests.
enum TempTrace {
    static func url(_ name: String = "t") -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-\(name)-\(UUID().uuidString).jsonl")
    }
    static let headerLine = #"{"type":"header","format":"posfuse-trace","version":1,"origin":{"lat":48.1,"lon":11.5,"h":500}}"#
    /// Writes `lines` after a default header (unless `header` is false).
    static func write(_ lines: [String], header: Bool = true, terminator: String = "\n") throws -> URL {
        let u = url()
        let all = (header ? [headerLine] : []) + lines
        try Data((all.joined(separator: terminator) + terminator).utf8).write(to: u)
        return u
    }
}

/// Random events covering every payload type and optional field of trace format v1.
struct EventGenerator {
    var rng: SeededRNG
    init(seed: UInt64) { rng = SeededRNG(seed: seed) }

    mutating func bool() -> Bool { Bool.random(using: &rng) }
    mutating func double(_ r: ClosedRange<Double> = -1e4...1e4) -> Double {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: return Double(Int.random(in: -1000...1000, using: &rng))          // integral
        case 1: return Double(Int.random(in: -100_000...100_000, using: &rng)) / 100  // short decimal
        case 2: return [0, 1e-300, .leastNonzeroMagnitude, 1.7976931348623157e308, -2.2250738585072014e-308, 1e22, 1e23, 123456789012345680]
            .randomElement(using: &rng)!
        default: return Double.random(in: r, using: &rng)
        }
    }
    mutating func opt<T>(_ make: (inout EventGenerator) -> T) -> T? { bool() ? make(&self) : nil }
    mutating func int(_ r: ClosedRange<Int> = -1_000_000...1_000_000) -> Int { Int.random(in: r, using: &rng) }
    mutating func string() -> String {
        let pool: [String] = ["", "a", "Café", "日本語", "😀", "quote\"d", "back\\slash", "tab\tnl\nret\r", "\u{01}\u{1F}",
                              "/slash", "eduroam", "x y z", "\u{7F}", "\u{2028}"]
        return (0..<Int.random(in: 0...3, using: &rng)).map { _ in pool.randomElement(using: &rng)! }.joined()
    }
    mutating func bssid() -> String {
        (0..<6).map { _ in String(format: "%02x", Int.random(in: 0...255, using: &rng)) }.joined(separator: ":")
    }

    mutating func payload() -> TraceEvent.Payload {
        switch int(0...13) {
        case 0:
            return .gnss(GNSSFix(latitude: double(-90...90).clamped(-90, 90), longitude: double(-180...180).clamped(-180, 180),
                                 altitude: opt { $0.double() }, accuracy: abs(double()), verticalAccuracy: opt { abs($0.double()) },
                                 speed: opt { abs($0.double()) }, bearing: opt { $0.double(-360...360) }))
        case 1:
            let aps = (0..<int(0...5)).map { _ in
                WiFiObservation(bssid: bssid(), ssid: string(), frequency: double(), rss: double(), lastSeen: opt { $0.double() })
            }
            return .wifi(WiFiScan(start: opt { $0.double() }, accessPoints: aps))
        case 2:
            return .cell(CellObservation(cell: CellID(rat: RAT.allCases.randomElement(using: &rng)!, mcc: int(0...999), mnc: int(0...999),
                                                      area: int(0...65535), cid: int(0...(1 << 36))),
                                         pci: opt { $0.int(0...1007) }, arfcn: opt { $0.int(0...3_279_165) }, serving: bool(),
                                         timingAdvance: opt { $0.int(0...3846) },
                                         timingAdvanceUnit: opt { g in TimingAdvanceUnit.allCases.randomElement(using: &g.rng)! },
                                         rsrp: opt { $0.double() }, rsrq: opt { $0.double() }))
        case 3, 4, 5:
            let k: IMUKind = [.accelerometer, .gyroscope, .magnetometer][int(0...2)]
            return .imu(IMUSample(kind: k, x: double(), y: double(), z: double()))
        case 6: return .imu(IMUSample(kind: .rotationVector, x: double(), y: double(), z: double(), w: double()))
        case 7: return .imu(IMUSample(kind: .barometer, x: double()))
        case 8: return .step(StepEvent(length: opt { $0.double() }))
        case 9: return .acoustic(AcousticArrival(beacon: string(), arrivalTime: double(), emission: opt { $0.int() }, snr: opt { $0.double() }))
        case 10:
            if bool() {
                return .peerRange(PeerRange(peer: string(), nAA: double(), nAB: double(), nBA: double(), nBB: double(), sampleRate: double(),
                                            speakerMicA: opt { $0.double() }, speakerMicB: opt { $0.double() },
                                            distance: opt { $0.double() }, sigma: opt { $0.double() }))
            }
            return .peerRange(PeerRange(peer: string(), distance: double(), sigma: opt { $0.double() }))
        case 11:
            return .photo(PhotoObservation(id: string(), pair: opt { $0.string() }, width: int(1...8000), height: int(1...8000),
                                           focalLength: double(), cx: opt { $0.double() }, cy: opt { $0.double() },
                                           exposureTime: opt { $0.double() }, object: string(), objectX: double(), objectY: double(),
                                           objectHeight: double(), cameraAzimuthMagnetic: opt { $0.double() }))
        case 12:
            let beacons = (0..<int(0...4)).map { _ in
                BLEObservation(id: bssid(), iBeacon: opt { g in IBeaconID(uuid: g.string(), major: g.int(0...65535), minor: g.int(0...65535)) },
                               rss: double(), txPower: opt { $0.double() }, lastSeen: opt { $0.double() })
            }
            return .ble(BLEScan(beacons: beacons))
        default:
            let pos: GroundTruthPosition = bool()
                ? .geodetic(Geodetic(latitude: double(-90...90).clamped(-90, 90), longitude: double(-180...180).clamped(-180, 180), height: double()))
                : .local(SIMD3(double(), double(), double()))
            return .groundTruth(GroundTruth(position: pos, floor: opt { $0.int(-5...100) }, kind: bool() ? .checkpoint : .continuous))
        }
    }
}

extension Double {
    func clamped(_ lo: Double, _ hi: Double) -> Double { Swift.min(Swift.max(self, lo), hi) }
}

@Suite struct TraceReaderRoundTripTests {
    @Test func randomEventsRoundTripThroughWriterAndReader() throws {
        var g = EventGenerator(seed: 20261122)
        let checker = TraceLineChecker()
        var events: [TraceEvent] = []
        var t = 0.0
        for _ in 0..<20_000 {
            t += Double(g.int(0...1000)) / 997
            let device = g.int(0...4) == 0 ? "phone-\(g.int(0...3))" : Fix.defaultSubject
            let e = TraceEvent(time: t, device: device, payload: g.payload())
            // The generator also draws values outside the format's domains (1.8e308, a negative
            // focal length); those lines are rejected by the reader (`TraceDomain`), so only
            // events inside the domains can round-trip.
            if checker.check(e) == nil { events.append(e) }
        }
        #expect(events.count > 10_000)
        let header = TraceHeader(origin: Geodetic(latitude: 47.3769, longitude: 8.5417, height: 408.25), device: "Pixel \"7\"",
                                 declination: 3.1, temperature: -4.5, floorHeights: [0, 3.5, 7.25], name: "round trip ✓",
                                 rssThreshold: -95, phoneHeight: 1.3)
        let u = TempTrace.url("roundtrip")
        defer { try? FileManager.default.removeItem(at: u) }
        let w = try TraceWriter(url: u, header: header)
        for e in events { w.write(e) }
        try w.close()

        let r = try TraceReader(url: u, mode: .strict)
        #expect(r.header == header)
        let back = try r.readAll()
        #expect(back.count == events.count)
        for (a, b) in zip(events, back) where a != b {
            Issue.record("mismatch:\n  wrote \(a)\n  read  \(b)\n  line  \(TraceLineEncoder().encode(a))")
            break
        }
        #expect(r.stats.events == events.count)
        #expect(r.stats.lines == events.count + 1)
        #expect(r.stats.skippedTotal == 0 && r.stats.outOfOrder == 0 && r.stats.unknownTotal == 0)
    }

    @Test func minimalHeaderDefaults() throws {
        let u = try TempTrace.write([])
        defer { try? FileManager.default.removeItem(at: u) }
        let r = try TraceReader(url: u, mode: .strict)
        #expect(r.header == TraceHeader(origin: Geodetic(latitude: 48.1, longitude: 11.5, height: 500)))
        #expect(try r.next() == nil)
    }
}

@Suite struct TraceReaderSyntaxTests {
    private func read(_ lines: [String], mode: TraceReadMode = .strict, terminator: String = "\n") throws -> ([TraceEvent], TraceReaderStats) {
        let u = try TempTrace.write(lines, terminator: terminator)
        defer { try? FileManager.default.removeItem(at: u) }
        let r = try TraceReader(url: u, mode: mode)
        return (try r.readAll(), r.stats)
    }

    private func strictError(_ line: String) -> TraceDataError? {
        do { _ = try read([#"{"t":0,"type":"step"}"#, line]); return nil } catch let e as TraceDataError { return e } catch { return nil }
    }

    @Test func stringsWithEscapesAndUnicode() throws {
        let (ev, _) = try read([
            #"{"t":1,"type":"wifi","aps":[{"bssid":"02:00:00:00:00:01","ssid":"","freq":2412,"rss":-50},"#
                + #"{"bssid":"AA:BB:CC:DD:EE:FF","ssid":"Caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t","freq":5180,"rss":-70.5,"t_seen":0.5}]}"#,
            #"{"t":2,"type":"acoustic","beacon":"日本","toa":2.000001}"#,
        ])
        guard case .wifi(let s) = ev[0].payload else { Issue.record("not wifi"); return }
        #expect(s.accessPoints[0].ssid == "")
        #expect(s.accessPoints[1].ssid == "Café 😀 \"q\" \\ / \u{08}\u{0C}\n\r\t")
        #expect(s.accessPoints[1].bssid == "aa:bb:cc:dd:ee:ff")  // BSSIDs are lower-cased
        #expect(s.accessPoints[1].lastSeen == 0.5)
        guard case .acoustic(let a) = ev[1].payload else { Issue.record("not acoustic"); return }
        #expect(a.beacon == "日本" && a.arrivalTime == 2.000001)
    }

    @Test func numbersAreCorrectlyRounded() throws {
        // Hard cases for decimal → binary conversion; Swift's Double(String) is the reference.
        let cases = ["0", "-0", "0.1", "1e22", "1e23", "9007199254740993", "9007199254740992", "2.2250738585072011e-308",
                     "4.9e-324", "1.7976931348623157e308", "0.30000000000000004", "123456789012345678901234567890",
                     "3.141592653589793238462643383279", "1E-7",
                     // Eight-digit chunks (the scanner's SWAR path) ending at the exponent, the delimiter or past 19 digits:
                     "0.12345678e5", "1.2345678901234567", "0.000012345678901234567", "12345678.87654321", "-0.99999999999999999999",
                     "1.00000000e-3", "5.1234567", "-12.5e+2", "0.000000000000000000000000001",
                     "179769313486231570000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"]
        var rng = SeededRNG(seed: 7)
        var all = cases
        for _ in 0..<5000 {
            let v = Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF)
            all.append(v.description)
            all.append(String(Double.random(in: -1000...1000, using: &rng)))
            all.append("\(Int.random(in: -99999...99999, using: &rng)).\(Int.random(in: 0...99999, using: &rng))e\(Int.random(in: -30...30, using: &rng))")
        }
        // `n_aa` (a sample counter) has the widest domain of the format, |v| ≤ 1e15; larger
        // values are rejected as outside it (docs/trace-format.md, "Domains").
        let inDomain = all.filter { abs(Double($0)!) <= 1e15 }, outside = all.filter { abs(Double($0)!) > 1e15 }
        #expect(inDomain.count > 10_000 && outside.count > 10)
        func line(_ v: String) -> String { #"{"t":0,"type":"peer_range","peer":"p","n_aa":"# + v + #","n_ab":0,"n_ba":0,"n_bb":0,"fs":48000}"# }
        let (ev, _) = try read(inDomain.map(line))
        #expect(ev.count == inDomain.count)
        for (s, e) in zip(inDomain, ev) {
            guard case .peerRange(let b) = e.payload else { continue }
            let expected = Double(s)!
            if b.nAA!.bitPattern != expected.bitPattern { Issue.record("\(s) → \(b.nAA!), expected \(expected)") }
        }
        let (none, stats) = try read(outside.map(line), mode: .lenient)
        #expect(none.isEmpty && stats.skipped["invalid_value"] == outside.count)
    }

    /// The scanner reads runs of up to eight digits from one load (`JSONLineScanner.leadingDigits`),
    /// falling back to one digit at a time near the 19 kept digits and within eight bytes of the
    /// line's end. Seeded decimals of every shape those branches see — integer parts of 0–22
    /// digits, fractions of 1–30 digits with 0–12 leading zeros, with and without an exponent —
    /// each read in the middle of a line and as its last member (so its last digits lie within
    /// eight bytes of the end), against `Double(String)`'s bits.
    @Test func digitRunsOfEveryLengthAreCorrectlyRounded() throws {
        var rng = SeededRNG(seed: 11)
        func digits(_ n: Int, leadingNonZero: Bool) -> String {
            var s = ""
            for k in 0..<n { s.append(Character(String(Int.random(in: (k == 0 && leadingNonZero ? 1 : 0)...9, using: &rng)))) }
            return s
        }
        var all: [String] = []
        for _ in 0..<20_000 {
            let intDigits = Int.random(in: 0...22, using: &rng)
            var s = Bool.random(using: &rng) ? "-" : ""
            s += intDigits == 0 ? "0" : digits(intDigits, leadingNonZero: true)
            if Int.random(in: 0..<4, using: &rng) > 0 {
                s += "." + String(repeating: "0", count: Int.random(in: 0...12, using: &rng)) + digits(Int.random(in: 1...30, using: &rng), leadingNonZero: false)
            }
            if Int.random(in: 0..<5, using: &rng) == 0 { s += "e\(Int.random(in: -40...10, using: &rng))" }
            all.append(s)
        }
        let inDomain = all.filter { abs(Double($0)!) <= 1e15 }
        #expect(inDomain.count > 10_000)
        let middle = inDomain.map { #"{"t":0,"type":"peer_range","peer":"p","n_aa":"# + $0 + #","n_ab":0,"n_ba":0,"n_bb":0,"fs":48000}"# }
        let last = inDomain.map { #"{"t":0,"type":"peer_range","peer":"p","n_ab":0,"n_ba":0,"n_bb":0,"fs":48000,"n_aa":"# + $0 + "}" }
        for lines in [middle, last] {
            let (ev, _) = try read(lines)
            #expect(ev.count == inDomain.count)
            for (s, e) in zip(inDomain, ev) {
                guard case .peerRange(let b) = e.payload else { Issue.record("not a peer range: \(s)"); continue }
                if b.nAA!.bitPattern != Double(s)!.bitPattern { Issue.record("\(s) → \(b.nAA!), expected \(Double(s)!)") }
            }
        }
    }

    @Test func strictErrorsNameFileLineAndReason() throws {
        #expect(strictError(#"{"t":1,"type":"gnss","lon":11,"acc":3}"#)?.reason == "missing key 'lat'")
        #expect(strictError(#"{"t":1,"type":"gnss","lat":48,"lon":11,"acc":3,}"#)?.reason
                == "invalid JSON: unexpected '}' at column 48, expected a key string")
        #expect(strictError(#"{"t":1,"type":"gnss","lat":48,,"lon":11}"#)?.reason
                == "invalid JSON: unexpected ',' at column 31, expected a key string")
        #expect(strictError(#"{"t":1,"type":"cell","rat":"lte","mcc":262,"mnc":1,"area":1,"cid":2,"serving":true,"ta_unit":"foo"}"#)?
                    .reason.hasPrefix("unknown ta_unit 'foo'") == true)
        #expect(strictError(#"{"t":1,"type":"gnss","lat":"48","lon":11,"acc":3}"#)?.reason == "key 'lat' must be a number, got a string")
        #expect(strictError(#"{"t":1,"type":"cell","rat":"lte","mcc":262.5,"mnc":1,"area":1,"cid":2,"serving":true}"#)?.reason
                == "key 'mcc' must be an integer, got 262.5")
        #expect(strictError(#"{"t":1,"type":"wifi","aps":[{"bssid":"x","rss":-50}]}"#)?.reason == "missing key 'aps[0].freq'")
        #expect(strictError(#"{"t":1,"type":"gnss","lat":95,"lon":11,"acc":3}"#)?.reason == "lat 95.0 outside [-90, 90] deg")
        #expect(strictError(#"{"t":1,"type":"step","len":1,"len":2}"#)?.reason.hasPrefix("invalid JSON: duplicate key 'len'") == true)
        #expect(strictError(#"{"t":1,"type":"step"} x"#)?.reason == "invalid JSON: unexpected 'x' at column 23, expected end of line")
        #expect(strictError(#"{"t":1,"type":"step","s":"abc}"#)?.reason == "invalid JSON: unterminated string starting at column 26")
        #expect(strictError(#"{"t":01,"type":"step"}"#)?.reason == "invalid JSON: unexpected '1' at column 7, expected ',' or the end of the number")
        #expect(strictError(#"{"t":1e999,"type":"step"}"#)?.reason == "number out of range at column 6")
        #expect(strictError(#"{"type":"step"}"#)?.reason == "missing key 't'")
        #expect(strictError(#"[1,2]"#)?.reason == "invalid JSON: unexpected '[' at column 1, expected '{'")
        #expect(strictError(#"{"t":1,"type":"peer_range","peer":"B","n_aa":1}"#)?.reason.hasPrefix("peer_range needs") == true)

        let e = strictError(#"{"t":1,"type":"gnss","lon":11,"acc":3}"#)!
        #expect(e.line == 3 && e.code == .missingKey)
        #expect(e.description.hasSuffix(".jsonl:3: missing key 'lat'"))
    }

    @Test func lenientSkipsAndCountsByReason() throws {
        let (ev, st) = try read([
            #"{"t":0,"type":"gnss","lat":48,"lon":11,"acc":3}"#,
            #"{"t":1,"type":"gnss","lat":48,"lon":11"#,                 // invalid_json
            #"{"t":2,"type":"gnss","lon":11,"acc":3}"#,                   // missing_key
            #"{"t":3,"type":"gnss","lat":true,"lon":11,"acc":3}"#,        // wrong_type
            #"{"t":4,"type":"future_sensor","foo":1}"#,                   // unknown type
            #"{"t":5,"type":"future_sensor"}"#,
            "",
            #"{"t":6,"type":"gnss","lat":48,"lon":11,"acc":-1}"#,         // invalid_value
            #"{"t":7,"type":"gnss","lat":48,"lon":11,"acc":3,"extra_key":[1,{"a":null}]}"#,
        ], mode: .lenient)
        #expect(ev.map(\.time) == [0, 7])
        #expect(st.skipped == ["invalid_json": 1, "missing_key": 1, "wrong_type": 1, "invalid_value": 1])
        #expect(st.unknownTypes == ["future_sensor": 2])
        #expect(st.lines == 10 && st.events == 2 && st.eventsByType == ["gnss": 2])
        #expect(st.examples.map(\.line) == [3, 4, 5, 9])
    }

    @Test func unknownTypesAreNeverFatalEvenInStrictMode() throws {
        let (ev, st) = try read([#"{"t":1,"type":"uwb","range":3}"#, #"{"t":2,"type":"step"}"#])
        #expect(ev.count == 1 && st.unknownTypes == ["uwb": 1])
    }

    @Test func crlfBlankLinesAndMissingFinalNewline() throws {
        let u = TempTrace.url()
        defer { try? FileManager.default.removeItem(at: u) }
        let text = "\u{FEFF}" + TempTrace.headerLine + "\r\n\r\n" + #"{"t":1,"type":"step"}"# + "\r\n   \n" + #"{"t":2,"type":"baro","p":1013.25}"#
        try Data(text.utf8).write(to: u)
        let r = try TraceReader(url: u, mode: .strict)
        let ev = try r.readAll()
        #expect(ev.map(\.time) == [1, 2])
        #expect(r.stats.lines == 5)
    }

    @Test func badOrMissingHeaderIsFatalInBothModes() throws {
        for mode in TraceReadMode.allCases {
            let u = try TempTrace.write([#"{"t":1,"type":"step"}"#], header: false)
            defer { try? FileManager.default.removeItem(at: u) }
            #expect(throws: TraceDataError.self) { _ = try TraceReader(url: u, mode: mode) }
            let v = try TempTrace.write([#"{"type":"header","format":"posfuse-trace","version":2,"origin":{"lat":0,"lon":0}}"#], header: false)
            defer { try? FileManager.default.removeItem(at: v) }
            do { _ = try TraceReader(url: v, mode: mode); Issue.record("version 2 accepted") } catch let e as TraceDataError {
                #expect(e.line == 1 && e.reason.contains("unsupported trace format version 2"))
            }
        }
        let empty = TempTrace.url()
        try Data().write(to: empty)
        defer { try? FileManager.default.removeItem(at: empty) }
        #expect(throws: TraceDataError.self) { _ = try TraceReader(url: empty) }
        #expect(throws: TraceDataError.self) { _ = try TraceReader(url: URL(fileURLWithPath: "/nonexistent/trace.jsonl")) }
    }

    @Test func linesLongerThanTheChunkAndManyChunks() throws {
        // One WiFi scan line of ~3 MiB (buffer growth) between many short lines (chunk boundaries).
        let ap = #"{"bssid":"02:00:00:00:00:01","ssid":"a long ssid to fill the line","freq":2412,"rss":-50}"#
        let big = #"{"t":5,"type":"wifi","aps":["# + Array(repeating: ap, count: 35_000).joined(separator: ",") + "]}"
        var lines = (0..<30_000).map { #"{"t":\#(Double($0) * 0.0001),"type":"acc","x":0.1,"y":-9.81,"z":0.25}"# }
        lines.insert(big, at: 15_000)
        lines[15_000] = big.replacingOccurrences(of: #""t":5"#, with: #""t":1.5"#)
        let (ev, st) = try read(lines)
        #expect(ev.count == 30_001 && st.skippedTotal == 0)
        guard case .wifi(let s) = ev[15_000].payload else { Issue.record("wifi not in place"); return }
        #expect(s.accessPoints.count == 35_000)
    }
}

@Suite struct TraceReaderOrderingTests {
    private func times(_ ts: [Double], mode: TraceReadMode, window: Double = 2) throws -> ([Double], TraceReaderStats) {
        let u = try TempTrace.write(ts.enumerated().map { #"{"t":\#($0.element),"type":"baro","p":\#($0.offset)}"# })
        defer { try? FileManager.default.removeItem(at: u) }
        let r = try TraceReader(url: u, mode: mode, reorderWindow: window)
        return (try r.readAll().map(\.time), r.stats)
    }

    @Test func disorderWithinTheWindowIsRepairedAndCounted() throws {
        let (t, st) = try times([0, 1, 3, 2, 2.5, 4, 3.9, 10, 8.5], mode: .strict)
        #expect(t == [0, 1, 2, 2.5, 3, 3.9, 4, 8.5, 10])
        #expect(st.outOfOrder == 4 && st.skippedTotal == 0)
    }

    @Test func tiesKeepFileOrder() throws {
        let u = try TempTrace.write([#"{"t":1,"type":"baro","p":1}"#, #"{"t":2,"type":"baro","p":2}"#,
                                     #"{"t":1,"type":"baro","p":3}"#, #"{"t":1,"type":"baro","p":4}"#])
        defer { try? FileManager.default.removeItem(at: u) }
        let ev = try TraceReader(url: u, mode: .strict).readAll()
        #expect(ev.map { e -> Double in if case .imu(let s) = e.payload { return s.x } else { return -1 } } == [1, 3, 4, 2])
    }

    @Test func disorderBeyondTheWindowFailsStrictAndIsSkippedLenient() throws {
        do {
            _ = try times([0, 5, 2.9, 6], mode: .strict)
            Issue.record("no error")
        } catch let e as TraceDataError {
            #expect(e.line == 4 && e.code == .outOfOrder)
            #expect(e.reason == "t=2.9 s is 2.1 s earlier than t=5.0 s on line 3 (beyond the 2.0 s reorder window)")
        }
        let (t, st) = try times([0, 5, 2.9, 3.5, 6], mode: .lenient)
        #expect(t == [0, 3.5, 5, 6])
        #expect(st.skipped == ["out_of_order": 1] && st.outOfOrder == 2)
    }

    @Test func zeroWindowRejectsAnyDecrease() throws {
        let (t, st) = try times([0, 1, 1, 0.5, 2], mode: .lenient, window: 0)
        #expect(t == [0, 1, 1, 2] && st.skipped == ["out_of_order": 1])
    }
}
