import Foundation
import Positioning
@testable import PosfuseServer
import Replay
import Testing

/// The request parser before session 13 (JSONSerialization and casts), kept here as the
/// oracle of `GeoAPI.Body`: the scanned parser must read every body as it did.
enum FoundationGeoParser {
    /// A JSON number as Double; nil for anything else, booleans included (on Linux,
    /// JSONSerialization's NSNumber 0 and 1 also answer `is Bool`: only a real Bool or a
    /// `__NSCFBoolean` is a boolean).
    static func number(_ v: Any?) -> Double? {
        guard let v, !(type(of: v) == Bool.self), String(describing: type(of: v)) != "__NSCFBoolean" else { return nil }
        if let d = v as? Double { return d }
        if let i = v as? Int { return Double(i) }
        return (v as? NSNumber)?.doubleValue
    }
    static func integer(_ v: Any?) -> Int? {
        guard let d = number(v), d.isFinite, d == d.rounded(), abs(d) < 1e15 else { return nil }
        return Int(d)
    }

    /// The JSON object of a body, or a parseError.
    static func object(_ body: [UInt8]) throws -> [String: Any] {
        guard !body.isEmpty else { return [:] }      // Google: no body = "locate by IP"; here: nothing to locate
        guard let any = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) else { throw GeoAPI.APIError.parse("the body is not JSON") }
        guard let o = any as? [String: Any] else { throw GeoAPI.APIError.parse("the body must be a JSON object") }
        return o
    }

    static func array(_ o: [String: Any], _ key: String) throws -> [[String: Any]] {
        guard let v = o[key], !(v is NSNull) else { return [] }
        guard let a = v as? [Any] else { throw GeoAPI.APIError.parse("'\(key)' must be an array") }
        return try a.enumerated().map { i, e in
            guard let d = e as? [String: Any] else { throw GeoAPI.APIError.parse("\(key)[\(i)] must be an object") }
            return d
        }
    }

    /// The radio names are not what is under test: `GeoAPI.rat` of the member when it is a string.
    static func rat(_ s: Any?, default d: RAT) -> RAT? { GeoAPI.rat(s as? String, default: d) }

    /// A cell tower entry (geolocate or geosubmit), or nil when it is not a usable cell.
    static func cell(_ d: [String: Any], defaultRAT: RAT) -> CellObservation? {
        guard let rat = rat(d["radioType"] ?? d["radio"], default: defaultRAT),
              let mcc = integer(d["mobileCountryCode"]), (1...999).contains(mcc),
              let mnc = integer(d["mobileNetworkCode"]), (0...999).contains(mnc),
              let lac = integer(d["locationAreaCode"]), lac >= 0, lac <= 16_777_215,
              let cid = integer(d["cellId"]), cid >= 0, cid <= 68_719_476_735 else { return nil }
        var ta = integer(d["timingAdvance"])
        if let t = ta, t < 0 { ta = nil }
        return CellObservation(cell: CellID(rat: rat, mcc: mcc, mnc: mnc, area: lac, cid: cid),
                               pci: integer(d["psc"] ?? d["primaryScramblingCode"]), serving: false, timingAdvance: ta,
                               rsrp: number(d["signalStrength"]))
    }

    /// A WiFi entry: nil when invalid or refused by the privacy rules. `age` (ms before the
    /// observation time) becomes `lastSeen` = −age/1000 s on a clock whose 0 is that time.
    static func wifi(_ d: [String: Any]) -> WiFiObservation? {
        guard GeoAPI.privacyAllows(ssid: d["ssid"] as? String), let mac = GeoAPI.mac(d["macAddress"] as? String) else { return nil }
        let rss = number(d["signalStrength"]).flatMap { $0 < 0 && $0 > -150 ? $0 : nil } ?? GeoAPI.defaultWiFiSignal
        let f = number(d["frequency"]) ?? integer(d["channel"]).map(GeoAPI.frequency(channel:)) ?? 2437
        let age = number(d["age"]).flatMap { $0 >= 0 ? $0 : nil }
        return WiFiObservation(bssid: mac, ssid: d["ssid"] as? String ?? "", frequency: f, rss: rss, lastSeen: age.map { -$0 / 1000 })
    }

    /// A Bluetooth beacon entry: nil without a valid MAC; level and age read as WiFi's.
    static func beacon(_ d: [String: Any]) -> BLEObservation? {
        guard let mac = GeoAPI.mac(d["macAddress"] as? String) else { return nil }
        let rss = number(d["signalStrength"]).flatMap { $0 < 0 && $0 > -150 ? $0 : nil } ?? GeoAPI.defaultWiFiSignal
        let age = number(d["age"]).flatMap { $0 >= 0 ? $0 : nil }
        return BLEObservation(id: mac, rss: rss, lastSeen: age.map { -$0 / 1000 })
    }

    /// Cells of one request/item: the entry marked `serving` (1/true) is the serving cell; when
    /// none is marked, the first one is (the ichnaea/Google convention: the first entry is the
    /// cell the phone is camped on).
    static func cells(_ list: [[String: Any]], defaultRAT: RAT) -> (cells: [CellObservation], dropped: Int) {
        var out: [CellObservation] = [], dropped = 0
        let marked = list.contains { $0["serving"] != nil }
        for (i, d) in list.enumerated() {
            guard var c = cell(d, defaultRAT: defaultRAT) else { dropped += 1; continue }
            if marked { c.serving = (d["serving"] as? Bool) ?? (integer(d["serving"]) == 1) } else { c.serving = i == 0 }
            out.append(c)
        }
        return (out, dropped)
    }

    /// Parses a geolocate body.
    static func query(_ body: [UInt8]) throws -> GeoAPI.Query {
        let o = try object(body)
        var q = GeoAPI.Query()
        let defaultRAT = rat(o["radioType"], default: .gsm) ?? .gsm
        let (cells, droppedCells) = cells(try array(o, "cellTowers"), defaultRAT: defaultRAT)
        q.cells = cells; q.droppedCells = droppedCells
        var seen = Set<String>()
        for d in try array(o, "wifiAccessPoints") {
            guard let w = wifi(d), seen.insert(w.bssid).inserted else { q.droppedWiFi += 1; continue }
            q.wifi.append(w)
        }
        q.wifiValues = q.wifi.map { GeoAPI.macValue($0.bssid) }     // what the parser reads with each name
        var seenBeacons = Set<String>()
        for d in try array(o, "bluetoothBeacons") {
            guard let x = beacon(d), seenBeacons.insert(x.id).inserted else { q.droppedBeacons += 1; continue }
            q.beacons.append(x)
        }
        q.beaconValues = q.beacons.map { GeoAPI.macValue($0.id) }
        if let f = o["fallbacks"], !(f is NSNull) {
            guard let fd = f as? [String: Any] else { throw GeoAPI.APIError.parse("'fallbacks' must be an object") }
            if let l = fd["lacf"] as? Bool { q.lacf = l }
        }
        return q
    }

    /// Parses a geosubmit (v2) body: the items with a valid position (others teach nothing).
    /// WiFi entries older than `maxAge` s at the position's time are dropped, as
    /// `radiomap build` drops stale scan entries.
    static func submission(_ body: [UInt8], maxAge: Double = RadioMapBuilder().maxAge) throws -> (items: [Submission], received: Int) {
        let o = try object(body)
        guard o["items"] != nil else { throw GeoAPI.APIError.parse("'items' is missing") }
        let list = try array(o, "items")
        var out: [Submission] = []
        for item in list {
            guard let p = item["position"] as? [String: Any], let lat = number(p["latitude"]), let lon = number(p["longitude"]),
                  (-90...90).contains(lat), (-180...180).contains(lon), !(lat == 0 && lon == 0) else { continue }
            let acc = number(p["accuracy"]).flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
            if let a = acc, a > GeoAPI.maxSubmitAccuracy { continue }
            let defaultRAT = rat(item["radioType"], default: .gsm) ?? .gsm
            let cells = self.cells((try? array(item, "cellTowers")) ?? [], defaultRAT: defaultRAT).cells
            var seen = Set<String>()
            let wifi = ((try? array(item, "wifiAccessPoints")) ?? []).compactMap(wifi).filter {
                ($0.lastSeen ?? 0) >= -maxAge && seen.insert($0.bssid).inserted
            }
            var seenBeacons = Set<String>()
            let beacons = ((try? array(item, "bluetoothBeacons")) ?? []).compactMap(beacon).filter {
                ($0.lastSeen ?? 0) >= -maxAge && seenBeacons.insert($0.id).inserted
            }
            out.append(Submission(position: Geodetic(latitude: lat, longitude: lon), accuracy: acc, cells: cells, wifi: wifi, beacons: beacons))
        }
        return (out, list.count)
    }

}

/// geolocate and geosubmit bodies are read in place (`GeoAPI.Body`, the trace reader's scanner)
/// instead of through JSONSerialization; on seeded random bodies — members of every JSON kind
/// where numbers, strings, booleans and objects are expected, duplicate keys, nulls, MAC
/// spellings, privacy SSIDs, escapes, non-object bodies and truncated text — both give the same
/// query or submission, or the same parseError.
@Suite struct RequestParserTests {
    struct Gen {
        var rng: Xoshiro256
        mutating func pick<T>(_ a: [T]) -> T { a[Int(rng.next() % UInt64(a.count))] }
        mutating func chance(_ p: Double) -> Bool { Double(rng.next() >> 11) / Double(1 << 53) < p }
        mutating func scalar() -> String {
            pick(["0", "1", "2", "-1", "228", "1000", "5001", "68719476735", "68719476736", "3.0", "2.5", "-80", "-55.5", "1e3", "1E-2",
                  "0.0", "-0", "-0.0", "-0e0", "-0E+1", "12345678901234567", "true", "false", "null", "\"lte\"", "\"LTE\"", "\"gsm\"", "\"wcdma\"", "\"cdma\"",
                  "\"nr\"", "\"umts\"", "\"x\"", "\"\"", "\"1\"", "\"a\\u0041\\n\"", "\"caf\u{e9}\"", "[]", "{}", "[1,2]"])
        }
        mutating func mac() -> String {
            pick(["\"00:1b:cc:00:00:01\"", "\"00-1B-CC-00-00-02\"", "\"001bcc000003\"", "\"00:00:00:00:00:00\"", "\"ff:ff:ff:ff:ff:ff\"",
                  "\"00:1b:cc:00:00\"", "\"zz:1b:cc:00:00:01\"", "\"00:1b:cc:00:00:01\"", "12", "null", "\"0011.2233.4455\""])
        }
        mutating func member(_ key: String, _ value: String) -> String { "\"\(key)\":\(value)" }
        mutating func object(_ members: [String]) -> String {
            var m = members
            if chance(0.2), let x = m.first { m.append(x) }                        // a duplicate key
            m.shuffle(using: &rng)
            return "{" + m.joined(separator: pick([",", ", ", " ,\n "])) + "}"
        }
        mutating func value(_ typical: String) -> String { chance(0.8) ? typical : scalar() }
        mutating func cell() -> String {
            var m: [String] = []
            for (k, v) in [("radioType", pick(["\"lte\"", "\"gsm\"", "\"wcdma\"", "\"nr\""])), ("radio", "\"lte\""),
                           ("mobileCountryCode", pick(["228", "310", "0", "1000"])), ("mobileNetworkCode", pick(["1", "0", "999", "1000"])),
                           ("locationAreaCode", pick(["1000", "0", "16777216"])), ("cellId", pick(["5001", "123456", "-1"])),
                           ("timingAdvance", pick(["2", "0", "-3", "2.5"])), ("psc", "17"), ("primaryScramblingCode", "18"),
                           ("signalStrength", pick(["-90", "-60.5"])), ("serving", pick(["1", "0", "true", "false", "2", "null"]))]
                where chance(k == "radio" || k == "psc" || k == "primaryScramblingCode" || k == "serving" ? 0.3 : 0.9) {
                m.append(member(k, value(v)))
            }
            return object(m)
        }
        mutating func wifi() -> String {
            var m: [String] = []
            for (k, v) in [("macAddress", mac()), ("signalStrength", pick(["-55", "-80.5", "0", "-151", "12", "-0"])), ("age", pick(["0", "1500", "-1", "400000"])),
                           ("channel", pick(["6", "14", "36", "0"])), ("frequency", pick(["2437", "5180"])),
                           ("ssid", pick(["\"home\"", "\"\"", "\"x_nomap\"", "\"\\u0000\\u0000\"", "\"caf\u{e9}\"", "5"]))]
                where chance(k == "macAddress" ? 0.95 : 0.5) {
                m.append(member(k, value(v)))
            }
            return object(m)
        }
        mutating func beacon() -> String {
            var m: [String] = []
            for (k, v) in [("macAddress", mac()), ("signalStrength", pick(["-75", "-92.5", "0", "-151", "12"])), ("age", pick(["0", "1500", "-1", "400000"])),
                           ("name", pick(["\"tag\"", "\"\"", "\"x_nomap\"", "5"]))]
                where chance(k == "macAddress" ? 0.95 : 0.5) {
                m.append(member(k, value(v)))
            }
            return object(m)
        }
        mutating func list(_ element: (inout Gen) -> String) -> String {
            if chance(0.1) { return scalar() }
            let n = Int(rng.next() % 6)
            return "[" + (0..<n).map { _ in chance(0.05) ? scalar() : element(&self) }.joined(separator: ",") + "]"
        }
        mutating func query() -> String {
            var m: [String] = []
            if chance(0.8) { m.append(member("cellTowers", list { $0.cell() })) }
            if chance(0.9) { m.append(member("wifiAccessPoints", list { $0.wifi() })) }
            if chance(0.3) { m.append(member("bluetoothBeacons", list { $0.beacon() })) }
            if chance(0.3) { m.append(member("radioType", value("\"lte\""))) }
            if chance(0.3) { m.append(member("considerIp", pick(["false", "true"]))) }
            if chance(0.3) { m.append(member("fallbacks", value(object([member("lacf", pick(["false", "true", "0", "1", "2", "null"]))])))) }
            return object(m)
        }
        mutating func submission() -> String {
            var m: [String] = []
            if chance(0.95) {
                m.append(member("items", list { g in
                    var item: [String] = []
                    if g.chance(0.9) {
                        item.append(g.member("position", g.value(g.object([g.member("latitude", g.pick(["47.37", "0", "91", "-33.5"])),
                                                                           g.member("longitude", g.pick(["8.54", "0", "181"])),
                                                                           g.member("accuracy", g.pick(["5", "0", "150", "-2", "null"]))]))))
                    }
                    if g.chance(0.7) { item.append(g.member("cellTowers", g.list { $0.cell() })) }
                    if g.chance(0.8) { item.append(g.member("wifiAccessPoints", g.list { $0.wifi() })) }
                    if g.chance(0.4) { item.append(g.member("bluetoothBeacons", g.list { $0.beacon() })) }
                    if g.chance(0.3) { item.append(g.member("radioType", g.value("\"gsm\""))) }
                    return g.object(item)
                }))
            }
            return object(m)
        }
        /// Damage: not an object, truncated, trailing text, invalid UTF-8, deep nesting, empty.
        mutating func damage(_ s: String) -> [UInt8] {
            var b = Array(s.utf8)
            switch rng.next() % 12 {
            case 0: if !b.isEmpty { b.removeLast(Int(rng.next() % UInt64(b.count))) }
            case 1: b = Array(pick(["[]", "1", "\"x\"", "null", "true", "", " ", "[{}]", "{} {}", "{}x"]).utf8)
            case 2: b.insert(0xFF, at: Int(rng.next() % UInt64(b.count + 1)))
            case 3: b = Array(("{\"x\":" + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}").utf8)
            case 4: b = Array(("{\"x\":" + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}").utf8)
            default: break
            }
            return b
        }
    }

    static func outcome<T>(_ f: () throws -> T) -> String {
        do { return String(describing: try f()) } catch let e as GeoAPI.APIError { return "error \(e.status) \(e.detail ?? "")" } catch { return "error \(error)" }
    }

    @Test func scannedParserReadsAsJSONSerializationDid() {
        var g = Gen(rng: Xoshiro256(seed: 2302))
        var errors = 0, answers = 0
        for i in 0..<6_000 {
            let body = g.damage(i % 2 == 0 ? g.query() : g.submission())
            let q = Self.outcome { try GeoAPI.query(body) }, qf = Self.outcome { try FoundationGeoParser.query(body) }
            #expect(q == qf, "\(String(decoding: body, as: UTF8.self))")
            let s = Self.outcome { try GeoAPI.submission(body) }, sf = Self.outcome { try FoundationGeoParser.submission(body) }
            #expect(s == sf, "\(String(decoding: body, as: UTF8.self))")
            if q.hasPrefix("error") { errors += 1 } else { answers += 1 }
        }
        #expect(errors > 500 && answers > 2_000, "\(errors) errors, \(answers) parsed")
    }
}
