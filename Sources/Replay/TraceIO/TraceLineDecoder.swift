import Positioning

/// What one trace line decodes to.
public enum DecodedLine {
    case event(TraceEvent)
    /// A syntactically valid event whose `type` this version does not know.
    case unknown(type: String, time: Double)
}

/// Turns one JSON Lines line into a `TraceHeader` or `TraceEvent` (trace format v1,
/// `docs/trace-format.md`). Keys not in the format are ignored (forward compatibility);
/// `null` counts as absent for optional keys. Reuses its field buffers across lines.
public struct TraceLineDecoder {
    private var fields: [JField] = []
    private var nested: [JField] = []
    private var elements: [JField] = []
    /// Whether the last `event` call's line was valid JSON (its error, if any, was about the event).
    package private(set) var lastLineValid = false

    public init() {
        fields.reserveCapacity(32); nested.reserveCapacity(16); elements.reserveCapacity(64)
    }

    // MARK: events

    public mutating func event(_ p: UnsafePointer<UInt8>, count: Int) throws(LineIssue) -> DecodedLine {
        let s = JSONLineScanner(p: p, count: count)
        fields.removeAll(keepingCapacity: true)
        lastLineValid = false
        try s.line(into: &fields)
        lastLineValid = true
        return try decodeFields(s)
    }

    /// `event(_:count:)` of the event object `span` (a field of kind `.object`) of the record
    /// `record[0..<count]`, whose members an earlier scan of the record has already read and
    /// validated (`JSONLineScanner.line(into:reading:…objects:elementDepth:)`, offsets from
    /// `record`). The same result as scanning the event's bytes `record[span.start..<span.end]`
    /// again: everything after the scan is the same code, reading strings and nested arrays
    /// through a scanner of the record (a decoded event holds no offsets). An error message may
    /// name a column, counted from the event's first byte: on any error the event is decoded again
    /// from its own bytes, which gives that scan's message exactly (errors are rare; no members are
    /// copied or moved for the usual case). The members must be those of a successful scan with
    /// the nesting limit of `event(_:count:)` (`JSONLineScanner.traceLineDepth`).
    package mutating func event(members: UnsafeBufferPointer<JField>, record: UnsafePointer<UInt8>, count: Int,
                                span: JField) throws(LineIssue) -> DecodedLine {
        lastLineValid = true
        do {
            return try decode(JSONLineScanner(p: record, count: count), members)
        } catch {
            return try event(record + span.start, count: span.end - span.start)
        }
    }

    /// The event of the scanned line in `fields` (scanner `s`).
    private mutating func decodeFields(_ s: JSONLineScanner) throws(LineIssue) -> DecodedLine {
        let f = fields
        return try f.withUnsafeBufferPointer { (buf) throws(LineIssue) -> DecodedLine in try decode(s, buf) }
    }

    /// The event whose members are `buf` (offsets from `s.p`).
    private mutating func decode(_ s: JSONLineScanner, _ buf: UnsafeBufferPointer<JField>) throws(LineIssue) -> DecodedLine {
        let o = Obj(s: s, f: buf)
        try o.checkDuplicates()
        guard let ti = o.index("type") else { throw .missing("type") }
        guard buf[ti].kind == .string else { throw .wrongType("type", expected: "a string", got: o.kindName(ti)) }
        let time = try o.requiredNumber("t", in: TraceDomain.time, "s")
        let type = buf[ti]
        let device = try o.optionalString("device") ?? Fix.defaultSubject
        let payload: TraceEvent.Payload
        switch (s.p + type.start, type.end - type.start) {
        case let (t, n) where eq(t, n, "gnss"):
            let lat = try o.requiredNumber("lat"), lon = try o.requiredNumber("lon")
            try checkLatLon(lat, lon)
            let acc = try o.requiredNumber("acc")
            guard acc >= 0 else { throw .value("acc must be ≥ 0 m, got \(acc)") }
            try o.check("acc", acc, TraceDomain.accuracy, "m")
            payload = .gnss(GNSSFix(latitude: lat, longitude: lon, altitude: try o.optionalNumber("alt", in: TraceDomain.height, "m"),
                                    accuracy: acc, verticalAccuracy: try o.optionalNumber("vacc", in: TraceDomain.accuracy, "m"),
                                    speed: try o.optionalNumber("spd", in: TraceDomain.speed, "m/s"),
                                    bearing: try o.optionalNumber("brg", in: TraceDomain.degrees, "deg")))
        case let (t, n) where eq(t, n, "acc"): payload = .imu(try xyz(o, .accelerometer))
        case let (t, n) where eq(t, n, "gyro"): payload = .imu(try xyz(o, .gyroscope))
        case let (t, n) where eq(t, n, "mag"): payload = .imu(try xyz(o, .magnetometer))
        case let (t, n) where eq(t, n, "rotvec"):
            payload = .imu(IMUSample(kind: .rotationVector, x: try o.requiredNumber("x", in: TraceDomain.imu, ""),
                                     y: try o.requiredNumber("y", in: TraceDomain.imu, ""),
                                     z: try o.requiredNumber("z", in: TraceDomain.imu, ""), w: try o.requiredNumber("w", in: TraceDomain.imu, "")))
        case let (t, n) where eq(t, n, "baro"):
            payload = .imu(IMUSample(kind: .barometer, x: try o.requiredNumber("p", in: TraceDomain.imu, "hPa")))
        case let (t, n) where eq(t, n, "wifi"): payload = .wifi(try wifi(o))
        case let (t, n) where eq(t, n, "ble"): payload = .ble(try ble(o))
        case let (t, n) where eq(t, n, "cell"): payload = .cell(try cell(o))
        case let (t, n) where eq(t, n, "step"): payload = .step(StepEvent(length: try o.optionalNumber("len", in: TraceDomain.stepLength, "m")))
        case let (t, n) where eq(t, n, "acoustic"):
            payload = .acoustic(AcousticArrival(beacon: try o.requiredString("beacon"), arrivalTime: try o.requiredNumber("toa", in: TraceDomain.time, "s"),
                                                emission: try o.optionalInt("k"), snr: try o.optionalNumber("snr", in: TraceDomain.power, "dB")))
        case let (t, n) where eq(t, n, "peer_range"): payload = .peerRange(try peer(o))
        case let (t, n) where eq(t, n, "photo"): payload = .photo(try photo(o))
        case let (t, n) where eq(t, n, "gt"): payload = .groundTruth(try groundTruth(o))
        default:
            let name = try s.string(start: type.start, end: type.end, escaped: type.escaped)
            if name == "header" { throw .value("a second header line (headers belong on line 1 only)") }
            return .unknown(type: name, time: time)
        }
        return .event(TraceEvent(time: time, device: device, payload: payload))
    }

    private func xyz(_ o: Obj, _ kind: IMUKind) throws(LineIssue) -> IMUSample {
        IMUSample(kind: kind, x: try o.requiredNumber("x", in: TraceDomain.imu, ""), y: try o.requiredNumber("y", in: TraceDomain.imu, ""),
                  z: try o.requiredNumber("z", in: TraceDomain.imu, ""))
    }

    private func checkLatLon(_ lat: Double, _ lon: Double) throws(LineIssue) {
        if let m = TraceDomain.latLonViolation(lat, lon) { throw .value(m) }
    }

    private mutating func wifi(_ o: Obj) throws(LineIssue) -> WiFiScan {
        let aps = try objects(o, "aps") { (n) throws(LineIssue) -> WiFiObservation in
            WiFiObservation(bssid: try n.requiredLowercasedString("bssid"), ssid: try n.optionalString("ssid") ?? "",
                            frequency: try n.requiredNumber("freq", in: TraceDomain.frequencyMHz, "MHz"),
                            rss: try n.requiredNumber("rss", in: TraceDomain.power, "dBm"),
                            lastSeen: try n.optionalNumber("t_seen", in: TraceDomain.time, "s"))
        }
        return WiFiScan(start: try o.optionalNumber("t_start", in: TraceDomain.time, "s"), accessPoints: aps)
    }

    /// A `ble` scan: `beacons`: [{`id`, `uuid`/`major`/`minor` (optional, together), `rss`, `tx`, `t_seen`}].
    private mutating func ble(_ o: Obj) throws(LineIssue) -> BLEScan {
        BLEScan(beacons: try objects(o, "beacons") { (n) throws(LineIssue) -> BLEObservation in
            let id = try n.requiredLowercasedString("id")
            guard !id.isEmpty else { throw .value("\(n.path)id must not be empty") }
            var ib: IBeaconID?
            if let uuid = try n.optionalString("uuid") {
                let major = try n.requiredInt("major"), minor = try n.requiredInt("minor")
                for (k, v) in [("major", major), ("minor", minor)] {
                    if let m = TraceDomain.violation(n.path + k, v, TraceDomain.iBeaconNumber) { throw .value(m) }
                }
                ib = IBeaconID(uuid: uuid, major: major, minor: minor)
            }
            return BLEObservation(id: id, iBeacon: ib, rss: try n.requiredNumber("rss", in: TraceDomain.power, "dBm"),
                                  txPower: try n.optionalNumber("tx", in: TraceDomain.power, "dBm"),
                                  lastSeen: try n.optionalNumber("t_seen", in: TraceDomain.time, "s"))
        })
    }

    /// The array of objects under `key` (required), each decoded by `body` with its path
    /// (`key[k].`) for messages: the one loop of `wifi`'s access points and `ble`'s beacons.
    private mutating func objects<T>(_ o: Obj, _ key: StaticString,
                                     _ body: (Obj) throws(LineIssue) -> T) throws(LineIssue) -> [T] {
        guard let ai = o.index(key) else { throw .missing(key.description) }
        let a = o.f[ai]
        guard a.kind == .array else { throw .wrongType(key.description, expected: "an array", got: o.kindName(ai)) }
        elements.removeAll(keepingCapacity: true)
        try o.s.arrayElements(start: a.start, end: a.end, into: &elements)
        var out: [T] = []
        out.reserveCapacity(elements.count)
        for k in elements.indices {
            let el = elements[k]
            guard el.kind == .object else {
                throw .wrongType("\(key)[\(k)]", expected: "an object", got: Obj.kindName(el.kind))
            }
            nested.removeAll(keepingCapacity: true)
            _ = try o.s.object(at: el.start, into: &nested)
            let v = try nested.withUnsafeBufferPointer { (nb) throws(LineIssue) -> T in
                let n = Obj(s: o.s, f: nb, path: "\(key)[\(k)].")
                try n.checkDuplicates()
                return try body(n)
            }
            out.append(v)
        }
        return out
    }

    private func cell(_ o: Obj) throws(LineIssue) -> CellObservation {
        let ratName = try o.requiredString("rat")
        guard let rat = RAT(rawValue: ratName) else {
            throw .value("unknown rat '\(ratName)' (expected gsm, umts, lte or nr)")
        }
        var unit: TimingAdvanceUnit?
        if let u = try o.optionalString("ta_unit") {
            guard let tu = TimingAdvanceUnit(rawValue: u) else {
                throw .value("unknown ta_unit '\(u)' (expected \(TimingAdvanceUnit.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            unit = tu
        }
        let id = CellID(rat: rat, mcc: try o.requiredInt("mcc"), mnc: try o.requiredInt("mnc"),
                        area: try o.requiredInt("area"), cid: try o.requiredInt("cid"))
        let ta = try o.optionalInt("ta")
        if let ta, ta < 0 { throw .value("ta must be ≥ 0, got \(ta)") }
        if let ta, let m = TraceDomain.violation("ta", ta, TraceDomain.timingAdvance) { throw .value(m) }
        return CellObservation(cell: id, pci: try o.optionalInt("pci"), arfcn: try o.optionalInt("arfcn"),
                               serving: try o.requiredBool("serving"), timingAdvance: ta, timingAdvanceUnit: unit,
                               rsrp: try o.optionalNumber("rsrp", in: TraceDomain.power, "dBm"),
                               rsrq: try o.optionalNumber("rsrq", in: TraceDomain.power, "dB"))
    }

    private func peer(_ o: Obj) throws(LineIssue) -> PeerRange {
        let S = TraceDomain.samples, L = TraceDomain.localMetres
        let r = PeerRange(peer: try o.requiredString("peer"),
                          nAA: try o.optionalNumber("n_aa", in: S, ""), nAB: try o.optionalNumber("n_ab", in: S, ""),
                          nBA: try o.optionalNumber("n_ba", in: S, ""), nBB: try o.optionalNumber("n_bb", in: S, ""),
                          sampleRate: try o.optionalNumber("fs", in: 1e-3...1e9, "Hz"),
                          speakerMicA: try o.optionalNumber("k_a", in: L, "m"), speakerMicB: try o.optionalNumber("k_b", in: L, "m"),
                          distance: try o.optionalNumber("d", in: 0...L.upperBound, "m"),
                          sigma: try o.optionalNumber("sigma", in: 0...L.upperBound, "m"))
        let counters = r.nAA != nil && r.nAB != nil && r.nBA != nil && r.nBB != nil && r.sampleRate != nil
        guard counters || r.distance != nil else {
            throw .value("peer_range needs either 'd' or all of 'n_aa', 'n_ab', 'n_ba', 'n_bb', 'fs'")
        }
        return r
    }

    private func photo(_ o: Obj) throws(LineIssue) -> PhotoObservation {
        let P = TraceDomain.pixelCoordinate
        let w = try o.requiredInt("w"), h = try o.requiredInt("h")
        if let m = TraceDomain.violation("w", w, TraceDomain.pixels, "px") ?? TraceDomain.violation("h", h, TraceDomain.pixels, "px") {
            throw .value(m)
        }
        return PhotoObservation(id: try o.requiredString("id"), pair: try o.optionalString("pair"),
                         width: w, height: h,
                         focalLength: try o.requiredNumber("f_px", in: 1e-6...P.upperBound, "px"),
                         cx: try o.optionalNumber("cx", in: P, "px"), cy: try o.optionalNumber("cy", in: P, "px"),
                         exposureTime: try o.optionalNumber("exposure_t", in: TraceDomain.time, "s"), object: try o.requiredString("object"),
                         objectX: try o.requiredNumber("x_px", in: P, "px"), objectY: try o.requiredNumber("y_px", in: P, "px"),
                         objectHeight: try o.requiredNumber("h_px", in: P, "px"),
                         cameraAzimuthMagnetic: try o.optionalNumber("azimuth_mag_deg", in: TraceDomain.degrees, "deg"))
    }

    private func groundTruth(_ o: Obj) throws(LineIssue) -> GroundTruth {
        let pos: GroundTruthPosition
        if o.index("lat") != nil || o.index("lon") != nil {
            let lat = try o.requiredNumber("lat"), lon = try o.requiredNumber("lon")
            try checkLatLon(lat, lon)
            pos = .geodetic(Geodetic(latitude: lat, longitude: lon, height: try o.optionalNumber("h", in: TraceDomain.height, "m") ?? 0))
        } else if o.index("e") != nil || o.index("n") != nil {
            let L = TraceDomain.localMetres
            pos = .local(SIMD3(try o.requiredNumber("e", in: L, "m"), try o.requiredNumber("n", in: L, "m"),
                               try o.optionalNumber("u", in: L, "m") ?? 0))
        } else {
            throw .missing("lat")
        }
        var kind = GroundTruth.Kind.continuous
        if let k = try o.optionalString("kind") {
            guard let kk = GroundTruth.Kind(rawValue: k) else { throw .value("unknown gt kind '\(k)' (expected checkpoint or continuous)") }
            kind = kk
        }
        let floor = try o.optionalInt("floor")
        if let floor, let m = TraceDomain.violation("floor", floor, TraceDomain.floor) { throw .value(m) }
        return GroundTruth(position: pos, floor: floor, kind: kind)
    }

    // MARK: header

    mutating func header(_ p: UnsafePointer<UInt8>, count: Int) throws(LineIssue) -> TraceHeader {
        let s = JSONLineScanner(p: p, count: count)
        fields.removeAll(keepingCapacity: true)
        try s.line(into: &fields)
        let f = fields
        return try f.withUnsafeBufferPointer { (buf) throws(LineIssue) -> TraceHeader in
            let o = Obj(s: s, f: buf)
            try o.checkDuplicates()
            let type = try o.optionalString("type")
            guard type == "header" else {
                throw .value(type.map { "line 1 must be the header, found an event of type '\($0)'" } ?? "line 1 must be the header (missing key 'type')")
            }
            let format = try o.requiredString("format")
            guard format == TraceHeader.formatName else { throw .value("format '\(format)' is not '\(TraceHeader.formatName)'") }
            let version = try o.requiredInt("version")
            guard version == TraceHeader.currentVersion else {
                throw .value("unsupported trace format version \(version) (this reader reads version \(TraceHeader.currentVersion))")
            }
            guard let oi = o.index("origin") else { throw .missing("origin") }
            guard buf[oi].kind == .object else { throw .wrongType("origin", expected: "an object", got: o.kindName(oi)) }
            nested.removeAll(keepingCapacity: true)
            _ = try s.object(at: buf[oi].start, into: &nested)
            let origin = try nested.withUnsafeBufferPointer { (nb) throws(LineIssue) -> Geodetic in
                let n = Obj(s: s, f: nb, path: "origin.")
                try n.checkDuplicates()
                let lat = try n.requiredNumber("lat"), lon = try n.requiredNumber("lon")
                try checkLatLon(lat, lon)
                return Geodetic(latitude: lat, longitude: lon, height: try n.optionalNumber("h", in: TraceDomain.height, "m") ?? 0)
            }
            var floors: [Double] = []
            if let fi = o.index("floor_heights_m"), buf[fi].kind != .null {
                guard buf[fi].kind == .array else { throw .wrongType("floor_heights_m", expected: "an array", got: o.kindName(fi)) }
                elements.removeAll(keepingCapacity: true)
                try s.arrayElements(start: buf[fi].start, end: buf[fi].end, into: &elements)
                for (k, e) in elements.enumerated() {
                    guard e.kind == .number else {
                        throw .wrongType("floor_heights_m[\(k)]", expected: "a number", got: Obj.kindName(e.kind))
                    }
                    if let m = TraceDomain.violation("floor_heights_m[\(k)]", e.number, TraceDomain.localMetres, "m") { throw .value(m) }
                    floors.append(e.number)
                }
            }
            return TraceHeader(version: version, origin: origin, device: try o.optionalString("device"),
                               declination: try o.optionalNumber("declination_deg", in: TraceDomain.degrees, "deg") ?? 0,
                               temperature: try o.optionalNumber("temperature_c", in: TraceDomain.temperature, "°C"), floorHeights: floors,
                               name: try o.optionalString("name"), rssThreshold: try o.optionalNumber("rss_threshold_dbm", in: TraceDomain.power, "dBm"),
                               phoneHeight: try o.optionalNumber("phone_height_m", in: TraceDomain.localMetres, "m"))
        }
    }
}

/// Byte equality of `p[0..<n]` with an ASCII literal.
@inline(__always) private func eq(_ p: UnsafePointer<UInt8>, _ n: Int, _ lit: StaticString) -> Bool {
    n == lit.utf8CodeUnitCount && memcmp(p, lit.utf8Start, n) == 0
}

/// A scanned object: typed accessors with format-level error messages.
private struct Obj {
    let s: JSONLineScanner
    let f: UnsafeBufferPointer<JField>
    var path: String = ""

    @inline(__always) func index(_ key: StaticString) -> Int? {
        let n = key.utf8CodeUnitCount
        let first = key.utf8Start[0]
        for i in 0..<f.count where f[i].keyLength == n && s.p[f[i].keyStart] == first && memcmp(s.p + f[i].keyStart, key.utf8Start, n) == 0 {
            return i
        }
        return nil
    }

    func checkDuplicates() throws(LineIssue) {
        guard f.count > 1 else { return }
        // Equal keys have equal (length, first byte): when no two keys share a bit of that pair's
        // 64-bit signature, no two are equal and the pairwise test below would find nothing (an
        // event's keys `t`, `type`, `x`, `y`, `z` take five bits). Otherwise it decides.
        var seen: UInt64 = 0, clash = false
        for i in 0..<f.count {
            let first = f[i].keyLength == 0 ? 0 : Int(s.p[f[i].keyStart])
            let bit: UInt64 = 1 << UInt64((f[i].keyLength &* 31 &+ first) & 63)
            if seen & bit != 0 { clash = true; break }
            seen |= bit
        }
        guard clash else { return }
        for i in 1..<f.count {
            // Length and first byte before memcmp: most keys of an event differ in one of them.
            for j in 0..<i where f[i].keyLength == f[j].keyLength && (f[i].keyLength == 0 || s.p[f[i].keyStart] == s.p[f[j].keyStart])
                && memcmp(s.p + f[i].keyStart, s.p + f[j].keyStart, f[i].keyLength) == 0 {
                let k = String(decoding: UnsafeBufferPointer(start: s.p + f[i].keyStart, count: f[i].keyLength), as: UTF8.self)
                throw .json("duplicate key '\(path)\(k)' at column \(f[i].keyStart)")
            }
        }
    }

    static func kindName(_ k: JKind) -> String {
        switch k {
        case .number: return "a number"
        case .string: return "a string"
        case .bool: return "a boolean"
        case .null: return "null"
        case .object: return "an object"
        case .array: return "an array"
        }
    }
    func kindName(_ i: Int) -> String { Self.kindName(f[i].kind) }

    @inline(__always) func requiredNumber(_ key: StaticString) throws(LineIssue) -> Double {
        guard let i = index(key) else { throw .missing(path + key.description) }
        guard f[i].kind == .number else { throw .wrongType(path + key.description, expected: "a number", got: kindName(i)) }
        return f[i].number
    }

    @inline(__always) func optionalNumber(_ key: StaticString) throws(LineIssue) -> Double? {
        guard let i = index(key), f[i].kind != .null else { return nil }
        guard f[i].kind == .number else { throw .wrongType(path + key.description, expected: "a number", got: kindName(i)) }
        return f[i].number
    }

    /// A required number inside its domain (`TraceDomain`).
    @inline(__always) func requiredNumber(_ key: StaticString, in r: ClosedRange<Double>, _ unit: String) throws(LineIssue) -> Double {
        let v = try requiredNumber(key)
        if !r.contains(v) { try check(key, v, r, unit) }
        return v
    }

    /// An optional number inside its domain (`TraceDomain`).
    @inline(__always) func optionalNumber(_ key: StaticString, in r: ClosedRange<Double>, _ unit: String) throws(LineIssue) -> Double? {
        guard let v = try optionalNumber(key) else { return nil }
        if !r.contains(v) { try check(key, v, r, unit) }
        return v
    }

    func check(_ key: StaticString, _ v: Double, _ r: ClosedRange<Double>, _ unit: String) throws(LineIssue) {
        if let m = TraceDomain.violation(path + key.description, v, r, unit) { throw .value(m) }
    }

    func requiredInt(_ key: StaticString) throws(LineIssue) -> Int {
        guard let v = try optionalInt(key) else {
            if let i = index(key) { throw .wrongType(path + key.description, expected: "an integer", got: kindName(i)) }
            throw .missing(path + key.description)
        }
        return v
    }

    func optionalInt(_ key: StaticString) throws(LineIssue) -> Int? {
        guard let v = try optionalNumber(key) else { return nil }
        guard v == v.rounded(), abs(v) <= Double(TraceDomain.exactInteger.upperBound) else {
            throw .wrongType(path + key.description, expected: "an integer", got: "\(v)")
        }
        return Int(v)
    }

    func requiredBool(_ key: StaticString) throws(LineIssue) -> Bool {
        guard let i = index(key) else { throw .missing(path + key.description) }
        guard f[i].kind == .bool else { throw .wrongType(path + key.description, expected: "true or false", got: kindName(i)) }
        return f[i].number != 0
    }

    func requiredString(_ key: StaticString) throws(LineIssue) -> String {
        guard let v = try optionalString(key) else {
            if let i = index(key) { throw .wrongType(path + key.description, expected: "a string", got: kindName(i)) }
            throw .missing(path + key.description)
        }
        return v
    }

    /// A required string, lower-cased (MAC addresses and beacon ids; a string without capitals is kept as is).
    func requiredLowercasedString(_ key: StaticString) throws(LineIssue) -> String {
        let v = try requiredString(key)
        return v.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? v.lowercased() : v
    }

    func optionalString(_ key: StaticString) throws(LineIssue) -> String? {
        guard let i = index(key), f[i].kind != .null else { return nil }
        guard f[i].kind == .string else { throw .wrongType(path + key.description, expected: "a string", got: kindName(i)) }
        return try s.string(start: f[i].start, end: f[i].end, escaped: f[i].escaped)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks events and headers by the reader's own rules: encodes them as the writer would
/// (`TraceLineEncoder`) and decodes the line with `TraceLineDecoder`. Importers and the
/// simulator use it so that what they write is what `posfuse validate` accepts.
public final class TraceLineChecker {
    private var decoder = TraceLineDecoder()
    private let encoder = TraceLineEncoder()
    public init() {}

    /// nil when the event's line would decode; otherwise the decoder's reason.
    public func check(_ e: TraceEvent) -> String? {
        let line = encoder.encode(e)
        let n = line.utf8.count
        // The scanner reads up to a NUL terminator (as `TraceReader` provides): withCString.
        return line.withCString { c -> String? in
            c.withMemoryRebound(to: UInt8.self, capacity: n + 1) { p -> String? in
                do { _ = try decoder.event(p, count: n); return nil } catch let e as LineIssue { return e.message } catch { return "\(error)" }
            }
        }
    }

    /// nil when the header line would decode; otherwise the decoder's reason.
    public func check(_ h: TraceHeader) -> String? {
        let line = encoder.encode(h)
        let n = line.utf8.count
        // The scanner reads up to a NUL terminator (as `TraceReader` provides): withCString.
        return line.withCString { c -> String? in
            c.withMemoryRebound(to: UInt8.self, capacity: n + 1) { p -> String? in
                do { _ = try decoder.header(p, count: n); return nil } catch let e as LineIssue { return e.message } catch { return "\(error)" }
            }
        }
    }

    /// A reason without its numbers (for counting drops by kind): the leading key name, e.g.
    /// `t 1e+300 outside …` → `t out of domain`.
    public static func generic(_ reason: String) -> String {
        let first = reason.split(separator: " ").first.map(String.init) ?? reason
        if reason.contains("outside") || reason.contains("not a finite") { return "\(first) out of domain" }
        if reason.hasPrefix("key ") || reason.hasPrefix("missing key") { return reason.split(separator: ",").first.map(String.init) ?? reason }
        return String(reason.prefix(60))
    }
}
