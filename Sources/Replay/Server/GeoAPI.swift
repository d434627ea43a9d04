import Foundation
import Positioning
import Replay
import TraceIO

/// The Mozilla Location Service (ichnaea) / Google Geolocation API request and response shapes
/// (docs/serve.md): parsing, the privacy rules, and the answer from the estimator stages.
public enum GeoAPI {
    /// An error in the Google error body shape: {"error": {"errors": [{"domain", "reason",
    /// "message"}], "code", "message"}}.
    public struct APIError: Error, Sendable {
        /// `error.errors[0].domain`: the wire strings of Google's error bodies.
        public enum Domain: String, CaseIterable, Sendable {
            case global, geolocation, usageLimits
        }
        /// `error.errors[0].reason`: the wire strings of Google's error bodies (docs/serve.md
        /// lists them; `ErrorCodeTests` pins them).
        public enum Reason: String, CaseIterable, Sendable {
            case parseError, notFound, keyInvalid, userRateLimitExceeded, requestTooLarge, requestTimeout,
                 backendError, methodNotAllowed, badRequest
        }
        public var status: Int
        public var domain: Domain
        public var reason: Reason
        public var message: String
        /// What exactly was wrong (an extra member `error.detail`; the documented members keep
        /// the documented texts).
        public var detail: String? = nil
        public var body: [String: Any] {
            var e: [String: Any] = ["errors": [["domain": domain.rawValue, "reason": reason.rawValue, "message": message]],
                                    "code": status, "message": message]
            if let detail { e["detail"] = detail }
            return ["error": e]
        }
        public static func parse(_ detail: String) -> APIError {
            APIError(status: 400, domain: .global, reason: .parseError, message: "Parse Error", detail: detail)
        }
        public static let notFound = APIError(status: 404, domain: .geolocation, reason: .notFound, message: "Not found")
        public static let keyInvalid = APIError(status: 400, domain: .usageLimits, reason: .keyInvalid, message: "Missing or invalid API key.")
        public static let rateLimited = APIError(status: 403, domain: .usageLimits, reason: .userRateLimitExceeded,
                                                 message: "You have exceeded the requests per second limit of your API key.")
        public static func tooLarge(_ limit: Int) -> APIError {
            APIError(status: 413, domain: .global, reason: .requestTooLarge, message: "The request body is larger than \(limit) bytes.")
        }
        public static let timeout = APIError(status: 408, domain: .global, reason: .requestTimeout, message: "The request body did not arrive in time.")
        public static func server(_ m: String) -> APIError { APIError(status: 500, domain: .global, reason: .backendError, message: m) }
        public static func unavailable(_ m: String) -> APIError { APIError(status: 503, domain: .global, reason: .backendError, message: m) }
    }

    /// A geolocate request: what the stages can use, and what was dropped.
    public struct Query: Sendable {
        public var cells: [CellObservation] = []
        public var wifi: [WiFiObservation] = []
        /// WiFi entries dropped by the privacy rules (`_nomap`, hidden SSID) or as invalid.
        public var droppedWiFi = 0
        public var droppedCells = 0
        /// The Bluetooth beacons (`bluetoothBeacons`), distinct by MAC.
        public var beacons: [BLEObservation] = []
        /// Beacon entries dropped as invalid (no valid MAC) or repeated.
        public var droppedBeacons = 0
        /// ichnaea `fallbacks.lacf` (default true): answer from the location area when no cell or AP is known.
        public var lacf = true
        /// `GeoAPI.macValue` of each of `wifi`'s BSSIDs: `query` reads them from the body's bytes
        /// as it checks each name (a Query built otherwise leaves this empty: `locate` computes them).
        var wifiValues: [UInt64?] = []
        /// `GeoAPI.macValue` of each of `beacons`' ids, as `wifiValues`.
        var beaconValues: [UInt64?] = []
    }

    /// Signal strength assumed when a WiFi entry (or a Bluetooth beacon) gives none, dBm (a
    /// mid-range value: every such AP gets the same weight).
    public static let defaultWiFiSignal = -80.0

    /// The JSON object of a body (JSONSerialization), or a parseError: refine's FeatureCollection
    /// path. geolocate and geosubmit read their bodies with `Body` instead.
    public static func object(_ body: [UInt8]) throws -> [String: Any] {
        guard !body.isEmpty else { return [:] }      // Google: no body = "locate by IP"; here: nothing to locate
        guard let any = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) else { throw APIError.parse("the body is not JSON") }
        guard let o = any as? [String: Any] else { throw APIError.parse("the body must be a JSON object") }
        return o
    }

    /// A request body scanned in place by the trace reader's `JSONLineScanner` (no Foundation
    /// objects, no bridging; 0.6 M of geolocate's 2.5 M instructions went to JSONSerialization
    /// and casts). It reads JSON as JSONSerialization did before it (ServerTests compare the two on
    /// seeded bodies): RFC 8259 with nesting up to 512, UTF-8 required, the last of duplicate keys
    /// wins, a member whose value is `null` is present (so `radioType: null` does not fall back
    /// to `radio`), a boolean is never a number, a number 0 or 1 also reads as a boolean (as
    /// Foundation's NSNumber does on Linux), and the integer literal -0 is +0.
    struct Body {
        let s: JSONLineScanner
        /// The top-level arrays read once by `read(deferring:also:)`: their offsets and ranges of
        /// `deferredBounds`, their elements' members.
        var readArrays: [JSONLineScanner.ReadArray] = []
        var deferredMembers: [JField] = []
        var deferredBounds: [(start: Int, end: Int)] = []

        /// One scanned object: its members.
        struct Object {
            /// Its members (a slice: the elements of one array share one list).
            var fields: ArraySlice<JField>
            subscript(_ key: StaticString, in b: Body) -> JField? {
                fields.last { $0.keyLength == key.utf8CodeUnitCount && memcmp(b.s.p + $0.keyStart, key.utf8Start, $0.keyLength) == 0 }
            }
        }

        /// Runs `parse` on the top-level object of `body` (an empty body is an empty object).
        /// A body the caller gives up (`consuming`) gets the scanner's terminator appended in
        /// place, without a copy when its storage has a spare byte.
        /// `deferring`, `also`: top-level array members (geolocate's `wifiAccessPoints`, most of a
        /// body, and `cellTowers`) whose elements the whole-body scan reads as it validates them
        /// (`array` then takes their members) instead of validating them and leaving them to be
        /// scanned again. The same answers and errors: the body is validated whole before `parse`
        /// runs; an array with an element that is not an object is read by `array` as before.
        static func read<R>(_ body: consuming [UInt8], deferring key: StaticString? = nil, also key2: StaticString? = nil,
                            _ parse: (Body, Object) throws -> R) throws -> R {
            var bytes = consume body
            let n = bytes.count
            bytes.append(0)                                  // the scanner's terminator
            return try bytes.withUnsafeBufferPointer { buf in
                var s = JSONLineScanner(p: buf.baseAddress!, count: n)
                s.maxDepth = 512
                var top: [JField] = []
                top.reserveCapacity(8)                       // a body's handful of members, sized once
                var b = Body(s: s)
                if n > 0 {
                    do throws(LineIssue) {
                        if let key { try b.readDeferring(key, also: key2, into: &top) } else { try s.line(into: &top) }
                    } catch {
                        if s.isSingleValue(), ReportRecordParser.validUTF8(s.p, 0, n) { throw APIError.parse("the body must be a JSON object") }
                        throw APIError.parse("the body is not JSON")
                    }
                    guard ReportRecordParser.validUTF8(s.p, 0, n) else { throw APIError.parse("the body is not JSON") }
                }
                return try parse(b, Object(fields: top[...]))
            }
        }

        /// The whole-body scan of `read(deferring:also:)`: validates the body and reads the
        /// elements of the top-level arrays `key` and `key2` in the same pass
        /// (`JSONLineScanner.line(into:reading:also:…)`); `array` takes an array's elements when it
        /// is one of these (found by its offset: a key named twice has read both, the last one is
        /// the member).
        private mutating func readDeferring(_ key: StaticString, also key2: StaticString?, into top: inout [JField]) throws(LineIssue) {
            readArrays.reserveCapacity(2)
            deferredMembers.reserveCapacity(40)
            deferredBounds.reserveCapacity(16)
            try s.line(into: &top, reading: key, also: key2, elements: &deferredMembers, bounds: &deferredBounds, readStarts: &readArrays)
        }

        func object(_ f: JField?) -> Object? {
            guard let f, f.kind == .object else { return nil }
            var fields: [JField] = []
            _ = try? s.object(at: f.start, into: &fields)     // validated by the scan
            return Object(fields: fields[...])
        }
        /// The objects of the array `key` of `o`: none when absent or null; a parseError when it
        /// is not an array or an element is not an object.
        func array(_ o: Object, _ key: StaticString) throws -> [Object] {
            guard let f = o[key, in: self], f.kind != .null else { return [] }
            guard f.kind == .array else { throw APIError.parse("'\(key)' must be an array") }
            if let r = readArrays.first(where: { $0.start == f.start }) {
                return deferredBounds[r.bounds].map { Object(fields: deferredMembers[$0.start..<$0.end]) }
            }
            // The whole body was validated by `read`'s scan, so the array is well formed: each
            // element is scanned once, by the object scan that also finds where it ends (before, a
            // pass validated the elements again and another delimited them: a third of the parse),
            // and all elements' members go into one list.
            var members: [JField] = []
            var bounds: [(start: Int, end: Int)] = []
            var i = skipWS(f.start + 1)
            if s.p[i] != UInt8(ascii: "]") {
                while true {
                    let first = members.count
                    guard s.p[i] == UInt8(ascii: "{"), let e = try? s.object(at: i, into: &members) else {
                        throw APIError.parse("\(key)[\(bounds.count)] must be an object")
                    }
                    bounds.append((first, members.count))
                    i = skipWS(e)
                    guard s.p[i] == UInt8(ascii: ",") else { break }           // "]"
                    i = skipWS(i + 1)
                }
            }
            return bounds.map { Object(fields: members[$0.start..<$0.end]) }
        }
        /// The offset of the first byte at or after `i` that is not JSON whitespace.
        private func skipWS(_ i: Int) -> Int {
            var i = i
            while i < s.count, s.p[i] == 0x20 || s.p[i] == 0x09 || s.p[i] == 0x0A || s.p[i] == 0x0D { i += 1 }
            return i
        }
        func number(_ f: JField?) -> Double? {
            guard let f, f.kind == .number else { return nil }
            // JSONSerialization reads an integer literal "-0" as the integer 0 (+0.0 as a Double).
            if f.number == 0, f.number.sign == .minus,
               !UnsafeBufferPointer(start: s.p + f.start, count: f.end - f.start).contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }) {
                return 0
            }
            return f.number
        }
        func integer(_ f: JField?) -> Int? {
            guard let d = number(f), d.isFinite, d == d.rounded(), abs(d) < 1e15 else { return nil }
            return Int(d)
        }
        func string(_ f: JField?) -> String? {
            guard let f, f.kind == .string else { return nil }
            return try? s.string(start: f.start, end: f.end, escaped: f.escaped)
        }
        /// `GeoAPI.mac(string(f))`: an unescaped member is read on its bytes in place (the
        /// body is valid UTF-8, so they are the bytes of `string(f)`). `value`: the result's
        /// `GeoAPI.macValue`.
        func mac(_ f: JField?, value: inout UInt64?) -> String? {
            value = nil
            guard let f, f.kind == .string else { return nil }
            if !f.escaped {
                let u = UnsafeBufferPointer(start: s.p + f.start, count: f.end - f.start)
                // Already the normalized spelling (most clients'): its bytes are `asciiMAC`'s result.
                if let v = GeoAPI.macValue(utf8: u) {
                    if v == 0 || v == 0xFFFF_FFFF_FFFF { return nil }
                    value = v
                    return String(decoding: u, as: UTF8.self)
                }
                if let m = GeoAPI.asciiMAC(utf8: u) { value = GeoAPI.macValue(m); return m.isEmpty ? nil : m }
            }
            let m = GeoAPI.mac(string(f))
            value = m.flatMap(GeoAPI.macValue)
            return m
        }
        func bool(_ f: JField?) -> Bool? {
            guard let f else { return nil }
            if f.kind == .bool || (f.kind == .number && (f.number == 0 || f.number == 1)) { return f.number == 1 }
            return nil
        }
    }

    /// "aa:bb:cc:dd:ee:ff" from any of the usual spellings (colons, dashes, none), or nil.
    public static func mac(_ s: String?) -> String? {
        guard let s else { return nil }
        if let m = asciiMAC(s) { return m.isEmpty ? nil : m }
        return unicodeMAC(s)
    }

    /// `mac` of any spelling (the general path; `asciiMAC` gives the same on ASCII input).
    static func unicodeMAC(_ s: String) -> String? {
        let hex = s.lowercased().filter { $0 != ":" && $0 != "-" && $0 != "." }
        guard hex.count == 12, hex.allSatisfy(\.isHexDigit), hex != "000000000000", hex != "ffffffffffff" else { return nil }
        var out = ""
        for (i, c) in hex.enumerated() { if i > 0 && i % 2 == 0 { out.append(":") }; out.append(c) }
        return out
    }

    /// `mac` of an all-ASCII spelling on its bytes (no Unicode lowercasing, no Character
    /// walk): the result, "" when such a spelling is not a valid MAC, nil when `s` has a
    /// non-ASCII byte (then `mac` takes the general path, which also knows fullwidth digits).
    static func asciiMAC(_ s: String) -> String? { asciiMAC(utf8: s.utf8) }

    /// `asciiMAC` of the UTF-8 bytes of a spelling (the parser hands over a string member's
    /// bytes in place: no String of the spelling is made).
    @inline(__always) static func asciiMAC(utf8: some Sequence<UInt8>) -> String? {
        var v: UInt64 = 0                                  // the first 12 hex digits, 4 bits each
        var n = 0, invalid = false
        for b in utf8 {
            let d: UInt8
            switch b {
            case UInt8(ascii: ":"), UInt8(ascii: "-"), UInt8(ascii: "."): continue
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b &- UInt8(ascii: "A") &+ 10
            case 0x80...: return nil
            default: invalid = true; continue
            }
            if n < 12 { v = v << 4 | UInt64(d) }
            n += 1
        }
        // Twelve digits, not all 0 and not all f (the digits' value, not their spelling).
        guard !invalid, n == 12, v != 0, v != 0xFFFF_FFFF_FFFF else { return "" }
        return String(unsafeUninitializedCapacity: 17) { out in
            for i in 0..<6 {
                let octet = UInt8(truncatingIfNeeded: v >> UInt64(40 - 8 * i))
                out[3 * i] = hexDigit(octet >> 4)
                out[3 * i + 1] = hexDigit(octet & 15)
                if i < 5 { out[3 * i + 2] = UInt8(ascii: ":") }
            }
            return 17
        }
    }
    /// The 48-bit value of a MAC in `mac`'s normalized spelling ("aa:bb:cc:dd:ee:ff", lowercase),
    /// nil for any other string. Two normalized spellings are equal exactly when their values
    /// are, and order as their values do (fixed width, lowercase hex digits in ASCII order), so
    /// names are compared as one integer (a String comparison or hash of 17 bytes costs a few
    /// hundred instructions; geolocate makes dozens per request).
    @inline(__always) static func macValue(_ s: String) -> UInt64? {
        s.utf8.withContiguousStorageIfAvailable { macValue(utf8: $0) } ?? nil
    }
    /// `macValue` of a spelling's UTF-8 bytes.
    @inline(__always) static func macValue(utf8 u: UnsafeBufferPointer<UInt8>) -> UInt64? {
        // Six octets "hh" at 3k, 3k+1, a colon at 3k+2: no loop over the 17 bytes, one test at the end.
        guard u.count == 17 else { return nil }
        var v: UInt64 = 0, bad: UInt8 = 0
        for k in 0..<6 {
            let hi = hexNibble(u[3 * k]), lo = hexNibble(u[3 * k + 1])
            if k < 5 { bad |= u[3 * k + 2] ^ UInt8(ascii: ":") }
            bad |= (hi | lo) & 0xF0
            v = v << 8 | UInt64(hi << 4 | lo)
        }
        return bad == 0 ? v : nil
    }
    /// The value of a lowercase hex digit, 0xFF for any other byte.
    @inline(__always) private static func hexNibble(_ b: UInt8) -> UInt8 {
        let d = b &- UInt8(ascii: "0")
        if d < 10 { return d }
        let a = b &- UInt8(ascii: "a")
        return a < 6 ? a &+ 10 : 0xFF
    }
    /// Whether two names are the same: by `macValue` when both are normalized MACs, else as strings.
    @inline(__always) static func sameName(_ a: String, _ av: UInt64?, _ b: String, _ bv: UInt64?) -> Bool {
        if let av, let bv { return av == bv }
        return a == b
    }

    /// The lowercase hex digit of 0...15.
    @inline(__always) private static func hexDigit(_ x: UInt8) -> UInt8 { x < 10 ? UInt8(ascii: "0") + x : UInt8(ascii: "a") + x - 10 }

    /// The ichnaea privacy rules for one WiFi entry: an SSID ending in "_nomap" (the owner's
    /// opt-out) or a hidden network (an SSID given but empty or all NULs) is never used nor
    /// stored. An entry without an `ssid` member (or a non-string one) is kept (most clients omit it).
    public static func privacyAllows(ssid: String?) -> Bool {
        guard let s = ssid else { return true }
        if s.isEmpty || s.unicodeScalars.allSatisfy({ $0 == "\0" }) { return false }
        return !s.hasSuffix("_nomap")
    }

    /// The radio of `s` (a member's value); `d` when it is not a string, nil for radios not used.
    static func rat(_ s: String?, default d: RAT) -> RAT? {
        guard let s else { return d }
        switch s.lowercased() {
        case "gsm": return .gsm
        case "wcdma", "umts": return .umts
        case "lte": return .lte
        case "nr": return .nr
        default: return nil                 // cdma and unknown radios are not used
        }
    }

    /// A cell tower entry (geolocate or geosubmit), or nil when it is not a usable cell.
    static func cell(_ d: Body.Object, _ b: Body, defaultRAT: RAT) -> CellObservation? {
        guard let rat = rat(b.string(d["radioType", in: b] ?? d["radio", in: b]), default: defaultRAT),
              let mcc = b.integer(d["mobileCountryCode", in: b]), (1...999).contains(mcc),
              let mnc = b.integer(d["mobileNetworkCode", in: b]), (0...999).contains(mnc),
              let lac = b.integer(d["locationAreaCode", in: b]), lac >= 0, lac <= 16_777_215,
              let cid = b.integer(d["cellId", in: b]), cid >= 0, cid <= 68_719_476_735 else { return nil }
        var ta = b.integer(d["timingAdvance", in: b])
        if let t = ta, t < 0 { ta = nil }
        return CellObservation(cell: CellID(rat: rat, mcc: mcc, mnc: mnc, area: lac, cid: cid),
                               pci: b.integer(d["psc", in: b] ?? d["primaryScramblingCode", in: b]), serving: false, timingAdvance: ta,
                               rsrp: b.number(d["signalStrength", in: b]))
    }

    /// Channel → centre frequency, MHz (2.4 GHz channels 1–14, else 5 GHz).
    static func frequency(channel: Int) -> Double {
        if channel == 14 { return 2484 }
        if (1...13).contains(channel) { return 2407 + 5 * Double(channel) }
        return 5000 + 5 * Double(channel)
    }

    /// A WiFi entry: nil when invalid or refused by the privacy rules. `age` (ms before the
    /// observation time) becomes `lastSeen` = −age/1000 s on a clock whose 0 is that time.
    static func wifi(_ d: Body.Object, _ b: Body) -> WiFiObservation? {
        var value: UInt64?
        return wifi(d, b, value: &value)
    }
    /// `wifi`, with the `macValue` of its BSSID in `value`.
    static func wifi(_ d: Body.Object, _ b: Body, value: inout UInt64?) -> WiFiObservation? {
        let ssid = b.string(d["ssid", in: b])
        guard privacyAllows(ssid: ssid), let mac = b.mac(d["macAddress", in: b], value: &value) else { return nil }
        let f = b.number(d["frequency", in: b]) ?? b.integer(d["channel", in: b]).map(frequency(channel:)) ?? 2437
        return WiFiObservation(bssid: mac, ssid: ssid ?? "", frequency: f, rss: signal(d, b), lastSeen: lastSeen(d, b))
    }

    /// An entry's `signalStrength` (dBm, in (−150, 0)), else `defaultWiFiSignal`.
    static func signal(_ d: Body.Object, _ b: Body) -> Double {
        b.number(d["signalStrength", in: b]).flatMap { $0 < 0 && $0 > -150 ? $0 : nil } ?? defaultWiFiSignal
    }
    /// An entry's `age` (ms before the observation time, ≥ 0) as `lastSeen` = −age/1000 s.
    static func lastSeen(_ d: Body.Object, _ b: Body) -> Double? {
        b.number(d["age", in: b]).flatMap { $0 >= 0 ? -$0 / 1000 : nil }
    }

    /// A Bluetooth beacon entry (`macAddress`, `signalStrength`, `age`, `name`): nil when its MAC
    /// is not valid. Read as a WiFi entry is (the same MAC rules, default level and age), its id
    /// the normalized MAC (`BLEObservation.id`, the beacon map's key). `name` is accepted and not
    /// used (no privacy rule reads it: ichnaea's `_nomap` opt-out is a WiFi SSID's).
    static func beacon(_ d: Body.Object, _ b: Body) -> BLEObservation? {
        var value: UInt64?
        return beacon(d, b, value: &value)
    }
    /// `beacon`, with the `macValue` of its id in `value`.
    static func beacon(_ d: Body.Object, _ b: Body, value: inout UInt64?) -> BLEObservation? {
        guard let mac = b.mac(d["macAddress", in: b], value: &value) else { return nil }
        return BLEObservation(id: mac, rss: signal(d, b), lastSeen: lastSeen(d, b))
    }

    /// The entries of `list` that `parse` reads, repeats of a name dropped (the first kept):
    /// among a handful compared with the ones kept by `macValue` (cheaper than hashing each
    /// name), in a set past 16. Returns them, each one's `macValue` (as `parse` gave it) and how
    /// many entries were dropped (unreadable or repeated). geolocate's WiFi APs and beacons.
    @inline(__always)
    static func distinct<T>(_ list: [Body.Object], _ b: Body, name: (T) -> String,
                            _ parse: (Body.Object, Body, inout UInt64?) -> T?) -> (kept: [T], values: [UInt64?], dropped: Int) {
        // Sized once: grown from empty, the set rehashed every name three times for 8 APs
        // (callgrind: 12.7k instructions per request went to these inserts).
        var seen = list.count > 16 ? Set<String>(minimumCapacity: list.count) : nil
        var kept: [T] = [], values: [UInt64?] = [], dropped = 0
        kept.reserveCapacity(list.count)
        values.reserveCapacity(list.count)
        var v: UInt64?
        for d in list {
            guard let w = parse(d, b, &v) else { dropped += 1; continue }
            let n = name(w)
            let repeated: Bool
            if seen != nil { repeated = !seen!.insert(n).inserted } else {
                repeated = kept.indices.contains { sameName(name(kept[$0]), values[$0], n, v) }
            }
            if repeated { dropped += 1; continue }
            kept.append(w)
            values.append(v)
        }
        return (kept, values, dropped)
    }

    /// The entries of `list` not older than `maxAge` s, repeats of a name dropped (geosubmit's
    /// WiFi entries and beacons: `radiomap build` drops stale scan entries the same way).
    static func recent<T>(_ list: [T], maxAge: Double, name: (T) -> String, lastSeen: (T) -> Double?) -> [T] {
        var seen = Set<String>(minimumCapacity: list.count)
        return list.filter { (lastSeen($0) ?? 0) >= -maxAge && seen.insert(name($0)).inserted }
    }

    /// Cells of one request/item: the entry marked `serving` (1/true) is the serving cell; when
    /// none is marked, the first one is (the ichnaea/Google convention: the first entry is the
    /// cell the phone is camped on).
    static func cells(_ list: [Body.Object], _ b: Body, defaultRAT: RAT) -> (cells: [CellObservation], dropped: Int) {
        var out: [CellObservation] = [], dropped = 0
        let marked = list.contains { $0["serving", in: b] != nil }
        for (i, d) in list.enumerated() {
            guard var c = cell(d, b, defaultRAT: defaultRAT) else { dropped += 1; continue }
            if marked { c.serving = b.bool(d["serving", in: b]) ?? (b.integer(d["serving", in: b]) == 1) } else { c.serving = i == 0 }
            out.append(c)
        }
        return (out, dropped)
    }

    /// Parses a geolocate body.
    public static func query(_ body: consuming [UInt8]) throws -> Query {
        try Body.read(consume body, deferring: "wifiAccessPoints", also: "cellTowers") { b, o in
            var q = Query()
            let defaultRAT = rat(b.string(o["radioType", in: b]), default: .gsm) ?? .gsm
            let (cells, droppedCells) = cells(try b.array(o, "cellTowers"), b, defaultRAT: defaultRAT)
            q.cells = cells; q.droppedCells = droppedCells
            let wifi = distinct(try b.array(o, "wifiAccessPoints"), b, name: { (w: WiFiObservation) in w.bssid }) { GeoAPI.wifi($0, $1, value: &$2) }
            q.wifi = wifi.kept; q.wifiValues = wifi.values; q.droppedWiFi = wifi.dropped
            let beacons = distinct(try b.array(o, "bluetoothBeacons"), b, name: { (x: BLEObservation) in x.id }) { GeoAPI.beacon($0, $1, value: &$2) }
            q.beacons = beacons.kept; q.beaconValues = beacons.values; q.droppedBeacons = beacons.dropped
            if let f = o["fallbacks", in: b], f.kind != .null {
                guard let fd = b.object(f) else { throw APIError.parse("'fallbacks' must be an object") }
                if let l = b.bool(fd["lacf", in: b]) { q.lacf = l }
            }
            return q
        }
    }

    /// Parses a geosubmit (v2) body: the items with a valid position (others teach nothing).
    /// WiFi entries and Bluetooth beacons older than `maxAge` s at the position's time are
    /// dropped, as `radiomap build` drops stale scan entries.
    public static func submission(_ body: consuming [UInt8], maxAge: Double = RadioMapBuilder.defaultMaxAge) throws -> (items: [Submission], received: Int) {
        try Body.read(consume body) { b, o in
            guard o["items", in: b] != nil else { throw APIError.parse("'items' is missing") }
            let list = try b.array(o, "items")
            var out: [Submission] = []
            for item in list {
                guard let p = b.object(item["position", in: b]), let lat = b.number(p["latitude", in: b]), let lon = b.number(p["longitude", in: b]),
                      (-90...90).contains(lat), (-180...180).contains(lon), !(lat == 0 && lon == 0) else { continue }
                let acc = b.number(p["accuracy", in: b]).flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
                if let a = acc, a > maxSubmitAccuracy { continue }
                let defaultRAT = rat(b.string(item["radioType", in: b]), default: .gsm) ?? .gsm
                let cells = self.cells((try? b.array(item, "cellTowers")) ?? [], b, defaultRAT: defaultRAT).cells
                let wifi = recent(((try? b.array(item, "wifiAccessPoints")) ?? []).compactMap { GeoAPI.wifi($0, b) }, maxAge: maxAge,
                                  name: \.bssid, lastSeen: \.lastSeen)
                let beacons = recent(((try? b.array(item, "bluetoothBeacons")) ?? []).compactMap { GeoAPI.beacon($0, b) }, maxAge: maxAge,
                                     name: \.id, lastSeen: \.lastSeen)
                out.append(Submission(position: Geodetic(latitude: lat, longitude: lon), accuracy: acc, cells: cells, wifi: wifi, beacons: beacons))
            }
            return (out, list.count)
        }
    }

    /// Positions less accurate than this (m) teach nothing: a coverage area or an AP learned
    /// from them would be wider than the radio's reach.
    public static let maxSubmitAccuracy = 100.0

    /// A geolocate answer: WGS84 position, `accuracy` = radius of the 95 % region, and what
    /// the estimate rests on.
    public struct Answer: Sendable {
        public var latitude: Double, longitude: Double
        public var accuracy: Double
        public var covariance: Covariance2
        public var fallback: String?
        public var sourcesUsed: [String]
        public var notes: [String]
        public var knownAPs: Int, knownCells: Int
        /// The request's Bluetooth beacons the answer used (known, at least two).
        public var knownBeacons: Int = 0

        public var json: [String: Any] {
            let k = ChiSquare.quantile(0.95, dof: 2).squareRoot()
            let ax = covariance.principalAxes
            var deg = Angle.degrees(ax.azimuth).truncatingRemainder(dividingBy: 180)
            if deg < 0 { deg += 180 }
            var o: [String: Any] = [
                "location": ["lat": latitude, "lng": longitude],
                "accuracy": accuracy,
                "posfuse": [
                    "accuracy_probability": 0.95,
                    "covariance_m2": ["ee": covariance.ee, "en": covariance.en, "nn": covariance.nn],
                    "ellipse95": ["semi_major_m": k * ax.major, "semi_minor_m": k * ax.minor, "orientation_deg": deg],
                    "sources_used": sourcesUsed,
                    "known": ["wifi": knownAPs, "cells": knownCells, "bluetooth": knownBeacons],
                    "notes": notes,
                ] as [String: Any],
            ]
            if let f = fallback { o["fallback"] = f }
            return o
        }

        /// `json` as JSON text, written straight into bytes (no dictionary, no
        /// JSONSerialization): keys sorted at every level, numbers and strings exactly as
        /// `JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])` writes them
        /// (GeoAPITests compares the two).
        /// √χ²₂(0.95), as `json` computes it, once (per answer it cost 3k instructions).
        static let k95 = ChiSquare.quantile(0.95, dof: 2).squareRoot()

        public var jsonBytes: [UInt8] {
            let k = Self.k95
            let ax = covariance.principalAxes
            var deg = Angle.degrees(ax.azimuth).truncatingRemainder(dividingBy: 180)
            if deg < 0 { deg += 180 }
            var o: [UInt8] = []
            o.reserveCapacity(512)
            o.append(literal: "{\"accuracy\":"); o.append(number: accuracy)
            if let f = fallback { o.append(literal: ",\"fallback\":"); GeoAPI.appendString(f, to: &o) }
            o.append(literal: ",\"location\":{\"lat\":"); o.append(number: latitude)
            o.append(literal: ",\"lng\":"); o.append(number: longitude)
            o.append(literal: "},\"posfuse\":{\"accuracy_probability\":0.95,\"covariance_m2\":{\"ee\":"); o.append(number: covariance.ee)
            o.append(literal: ",\"en\":"); o.append(number: covariance.en)
            o.append(literal: ",\"nn\":"); o.append(number: covariance.nn)
            o.append(literal: "},\"ellipse95\":{\"orientation_deg\":"); o.append(number: deg)
            o.append(literal: ",\"semi_major_m\":"); o.append(number: k * ax.major)
            o.append(literal: ",\"semi_minor_m\":"); o.append(number: k * ax.minor)
            o.append(literal: "},\"known\":{\"bluetooth\":"); o.appendInteger(Int64(knownBeacons))
            o.append(literal: ",\"cells\":"); o.appendInteger(Int64(knownCells))
            o.append(literal: ",\"wifi\":"); o.appendInteger(Int64(knownAPs))
            o.append(literal: "},\"notes\":[")
            for (i, n) in notes.enumerated() { if i > 0 { o.append(UInt8(ascii: ",")) }; GeoAPI.appendString(n, to: &o) }
            o.append(literal: "],\"sources_used\":[")
            for (i, n) in sourcesUsed.enumerated() { if i > 0 { o.append(UInt8(ascii: ",")) }; GeoAPI.appendString(n, to: &o) }
            o.append(literal: "]}}")
            return o
        }
    }

    /// A JSON string as Foundation's JSONSerialization writes it on Linux: `"`, `\\` and `/`
    /// escaped with a backslash, \b \f \n \r \t by name, other control characters as \u00XX,
    /// everything else (UTF-8) as is.
    static func appendString(_ s: String, to o: inout [UInt8]) {
        o.append(UInt8(ascii: "\""))
        // A string with nothing to escape (every note and source name so far) in one copy.
        var s = s
        let plain = s.withUTF8 { u -> Bool in
            for b in u where b < 0x20 || b == 0x22 || b == 0x5C || b == 0x2F { return false }
            o.append(contentsOf: u)
            return true
        }
        if plain { o.append(UInt8(ascii: "\"")); return }
        for b in s.utf8 {
            switch b {
            case 0x22, 0x5C, 0x2F: o.append(0x5C); o.append(b)
            case 0x08: o.append(literal: "\\b")
            case 0x0C: o.append(literal: "\\f")
            case 0x0A: o.append(literal: "\\n")
            case 0x0D: o.append(literal: "\\r")
            case 0x09: o.append(literal: "\\t")
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                o.append(literal: "\\u00"); o.append(hex[Int(b >> 4)]); o.append(hex[Int(b & 15)])
            default: o.append(b)
            }
        }
        o.append(UInt8(ascii: "\""))
    }

    /// The pipeline of geolocate, parsed once per server: refine's options
    /// (`ReportRefiner.reportOptions`) without the estimator stages whose fixes the ekf takes in
    /// no form (not in its `inputs`, `tight` or combined scan sources) unless the configuration
    /// sets their `enabled` itself. An answer is the ekf's estimate, so such a stage cannot change
    /// the position, the covariance or `sources_used`; it only added a note ("rss: not fused (not
    /// an ekf input)"). With the defaults that is `rss` (a likelihood grid of about 6,500 nodes ×
    /// APs log10 terms: more than half of a request's instructions) and `camloc` (photos only);
    /// and `peer` and `tdoa`, whose own evidence a geolocate request never carries (below).
    public static func prototype(stages: [String: StageOptions]) throws -> PipelinePrototype {
        var options = ReportRefiner.reportOptions(stages)
        let full = try StageRegistry.prototype(options: options)
        guard let ekf = full.configuredStages.compactMap({ $0 as? FusionStage }).first(where: { $0.source == .ekf }) else { return full }
        let taken = ekf.settings.inputs.union(ekf.settings.tight).union(ekf.settings.scanCombined)
        // Left out as well (`noEvidence`): stages that work from evidence a geolocate request never has
        // (`ReportRefiner.ownInput`: peer ranges, photos, acoustic arrivals; geolocate builds cell,
        // WiFi and Bluetooth events only): without it they emit nothing but "missing input" failures,
        // which `fuse` leaves out of the notes. `peer` looked at every upstream fix for that
        // (callgrind: 10k instructions per request).
        let built: EventKinds = [.cell, .wifi, .ble]
        var pruned = false
        for e in StageRegistry.entries where stages[e.name]?.values["enabled"] == nil {
            let notTaken = !e.sources.contains(where: \.isFusion) && taken.isDisjoint(with: e.sources)
            let noEvidence = !e.sources.isEmpty
                && e.sources.allSatisfy({ ReportRefiner.ownInput[$0].map { $0.isDisjoint(with: built) } ?? false })
            guard notTaken || noEvidence else { continue }
            var o = options[e.name] ?? StageOptions(name: e.name)
            o.values["enabled"] = .bool(false)
            options[e.name] = o
            pruned = true
        }
        return pruned ? try StageRegistry.prototype(options: options) : full
    }

    /// Locates `q` from what `store` knows, through the estimator stages and the ekf
    /// (`ReportRefiner.fuse`, the one fusion path of refine). WiFi is used only when at least
    /// two of the request's APs are known (ichnaea's rule: one AP would reveal its owner's
    /// position to anyone who knows its MAC); Bluetooth beacons likewise, by the same rule
    /// (a `ble` scan of the known beacons for the `ble` stage). `pipeline`: the prototype of
    /// `ReportRefiner.reportOptions` of the configuration, parsed once per server; this request
    /// gets a fresh pipeline from it. Nil = not found.
    public static func locate(_ q: Query, store: any RadioLookup, pipeline: PipelinePrototype) async throws -> Answer? {
        try await locate(q, store: store, pipelines: PipelinePool(pipeline, keep: 0))
    }

    /// `locate` with a pipeline from `pipelines` (the server's: one prototype, pipelines kept and
    /// reset between requests instead of built per request).
    public static func locate(_ q: Query, store: any RadioLookup, pipelines: PipelinePool) async throws -> Answer? {
        // The query's BSSIDs are distinct (`query` drops repeats): no set of them is built.
        // The names as integers (compared and found as such): the parser's, or computed.
        let qv = q.wifiValues.count == q.wifi.count ? q.wifiValues : q.wifi.map { macValue($0.bssid) }
        let bv = q.beaconValues.count == q.beacons.count ? q.beaconValues : q.beacons.map { macValue($0.id) }
        let known = try await store.lookup(cells: Set(q.cells.map(\.cell)), distinctBSSIDs: q.wifi.map(\.bssid), values: qv,
                                           distinctBeacons: q.beacons.map(\.id), beaconValues: bv)
        var notes: [String] = []
        var wifi = knownOnes(q.wifi, name: { $0.bssid }, values: qv, known: known.aps, knownValues: known.apValues)
        var beacons = knownOnes(q.beacons, name: { $0.id }, values: bv, known: known.beacons, knownValues: known.beaconValues)
        if wifi.count == 1 { notes.append("wifi: 1 known access point; at least 2 are needed (privacy rule), not used"); wifi = [] }
        if beacons.count == 1 { notes.append("ble: 1 known beacon; at least 2 are needed (privacy rule), not used"); beacons = [] }
        var usable = known
        if wifi.isEmpty { usable.aps = []; usable.apECEF = [] }
        if beacons.isEmpty { usable.beacons = []; usable.beaconECEF = [] }
        // The distinct cells among the known towers and coverage areas (a handful: a list).
        var cellsKnown: [CellID] = []
        for c in known.coverage.lazy.map(\.cell) where !cellsKnown.contains(c) { cellsKnown.append(c) }
        for c in known.towers.lazy.map(\.cell) where !cellsKnown.contains(c) { cellsKnown.append(c) }
        if let anchor = usable.anchor {
            let frame = LocalFrame(origin: Geodetic(latitude: anchor.latitude, longitude: anchor.longitude))
            var events = q.cells.map { TraceEvent(time: 0, payload: .cell($0)) }
            if !wifi.isEmpty { events.append(TraceEvent(time: 0, payload: .wifi(WiFiScan(accessPoints: wifi)))) }
            if !beacons.isEmpty { events.append(TraceEvent(time: 0, payload: .ble(BLEScan(beacons: beacons)))) }
            let context = PipelineContext(header: TraceHeader(origin: frame.origin), reference: usable.reference(in: frame))
            var rejected: [ReportRefiner.Rejection] = []
            let pipeline = pipelines.take()
            defer { pipelines.give(pipeline) }
            let fused = try ReportRefiner.fuse(events, rejected: &rejected, context: context, pipeline: pipeline)
            for r in rejected { notes.append("\(r.input): \(r.reason)") }
            if let f = fused.best {
                let g = frame.geodetic(east: f.position.x, north: f.position.y, up: 0)
                return Answer(latitude: g.latitude, longitude: g.longitude, accuracy: f.covariance.circularRadius(probability: 0.95),
                              covariance: f.covariance, fallback: nil, sourcesUsed: fused.used, notes: notes,
                              knownAPs: wifi.count, knownCells: cellsKnown.count, knownBeacons: beacons.count)
            }
        }
        // ichnaea's lacf: the location area of the request's cells, from every learned cell in it.
        guard q.lacf, !q.cells.isEmpty else { return nil }
        let areas = try await store.areaCoverage(of: Set(q.cells.map(\.cell)))
        guard let first = areas.first else { return nil }
        let frame = LocalFrame(origin: Geodetic(latitude: first.position.latitude, longitude: first.position.longitude))
        let map = CellCoverageRecord.map(areas, frame: frame)
        let sorted = map.areas.sorted { $0.key.cell.description < $1.key.cell.description }.map(\.value)
        // The cells of the area pooled as walks of one area (`CellCoverageMap.WalkSums`), and
        // its fix covariance as a cell's (`CellCoverageMap.predictiveCovariance`).
        guard let all = sorted.reduce(CellCoverageMap.WalkSums(), { $0 + CellCoverageMap.WalkSums(walk: $1) }).area else { return nil }
        let c = CellCoverageMap.predictiveCovariance(all, rat: q.cells[0].cell.rat)
        let p = frame.geodetic(east: all.mean.x, north: all.mean.y, up: 0)
        notes.append("lacf: \(sorted.count) learned cell(s) of the location area")
        return Answer(latitude: p.latitude, longitude: p.longitude, accuracy: c.circularRadius(probability: 0.95), covariance: c,
                      fallback: "lacf", sourcesUsed: [], notes: notes, knownAPs: 0, knownCells: 0)
    }

    /// The entries of a request (`name` of each, `values` their `macValue`s) that `known` lists
    /// (the store's transmitters, `knownValues` their values when the snapshot gave them), in
    /// the request's order.
    @inline(__always)
    static func knownOnes<T>(_ entries: [T], name: (T) -> String, values qv: [UInt64?], known: [LearnedAP], knownValues: [UInt64?]?) -> [T] {
        if known.isEmpty { return [] }
        if known.count <= 16 {
            // A handful of known ones: compared by name (cheaper than hashing every name twice),
            // as integers (`macValue`).
            let kv = knownValues.flatMap { $0.count == known.count ? $0 : nil } ?? known.map { macValue($0.bssid) }
            var out: [T] = []
            for (i, w) in entries.enumerated() where known.indices.contains(where: { sameName(known[$0].bssid, kv[$0], name(w), qv[i]) }) {
                out.append(w)
            }
            return out
        }
        var names = Set<String>(minimumCapacity: known.count)
        for a in known { names.insert(a.bssid) }
        return entries.filter { names.contains(name($0)) }
    }
}
