import Foundation
import Positioning

/// Writes trace format v1 (`docs/trace-format.md`) deterministically: keys in a fixed
/// order, numbers as Swift's shortest round-trip decimal (`Double.description`), so the
/// same events always give the same bytes.
public struct TraceLineEncoder: Sendable {
    public init() {}

    public func encode(_ h: TraceHeader) -> String {
        var o = JSONLine()
        o.string("type", "header"); o.string("format", TraceHeader.formatName); o.int("version", h.version)
        if let n = h.name { o.string("name", n) }
        o.raw("origin", "{\"lat\":\(num(h.origin.latitude)),\"lon\":\(num(h.origin.longitude)),\"h\":\(num(h.origin.height))}")
        if let d = h.device { o.string("device", d) }
        o.number("declination_deg", h.declination)
        if let t = h.temperature { o.number("temperature_c", t) }
        if !h.floorHeights.isEmpty { o.raw("floor_heights_m", "[" + h.floorHeights.map(num).joined(separator: ",") + "]") }
        if let r = h.rssThreshold { o.number("rss_threshold_dbm", r) }
        if let p = h.phoneHeight { o.number("phone_height_m", p) }
        return o.finish()
    }

    public func encode(_ e: TraceEvent) -> String {
        var o = JSONLine()
        o.number("t", e.time)
        o.string("type", e.typeName)
        if e.device != Fix.defaultSubject { o.string("device", e.device) }
        switch e.payload {
        case .gnss(let g):
            o.number("lat", g.latitude); o.number("lon", g.longitude)
            if let a = g.altitude { o.number("alt", a) }
            o.number("acc", g.accuracy)
            if let v = g.verticalAccuracy { o.number("vacc", v) }
            if let v = g.speed { o.number("spd", v) }
            if let v = g.bearing { o.number("brg", v) }
        case .wifi(let s):
            if let t0 = s.start { o.number("t_start", t0) }
            let aps = s.accessPoints.map { ap -> String in
                var a = JSONLine()
                a.string("bssid", ap.bssid); a.string("ssid", ap.ssid); a.number("freq", ap.frequency); a.number("rss", ap.rss)
                if let ts = ap.lastSeen { a.number("t_seen", ts) }
                return a.finish()
            }
            o.raw("aps", "[" + aps.joined(separator: ",") + "]")
        case .ble(let s):
            let beacons = s.beacons.map { b -> String in
                var a = JSONLine()
                a.string("id", b.id)
                if let ib = b.iBeacon { a.string("uuid", ib.uuid); a.int("major", ib.major); a.int("minor", ib.minor) }
                a.number("rss", b.rss)
                if let tx = b.txPower { a.number("tx", tx) }
                if let ts = b.lastSeen { a.number("t_seen", ts) }
                return a.finish()
            }
            o.raw("beacons", "[" + beacons.joined(separator: ",") + "]")
        case .cell(let c):
            o.string("rat", c.cell.rat.rawValue); o.int("mcc", c.cell.mcc); o.int("mnc", c.cell.mnc)
            o.int("area", c.cell.area); o.int("cid", c.cell.cid)
            if let p = c.pci { o.int("pci", p) }
            if let a = c.arfcn { o.int("arfcn", a) }
            o.raw("serving", c.serving ? "true" : "false")
            if let ta = c.timingAdvance { o.int("ta", ta) }
            if let u = c.timingAdvanceUnit { o.string("ta_unit", u.rawValue) }
            if let r = c.rsrp { o.number("rsrp", r) }
            if let r = c.rsrq { o.number("rsrq", r) }
        case .imu(let s):
            switch s.kind {
            case .barometer: o.number("p", s.x)
            case .rotationVector: o.number("x", s.x); o.number("y", s.y); o.number("z", s.z); o.number("w", s.w)
            default: o.number("x", s.x); o.number("y", s.y); o.number("z", s.z)
            }
        case .step(let s):
            if let l = s.length { o.number("len", l) }
        case .acoustic(let a):
            o.string("beacon", a.beacon); o.number("toa", a.arrivalTime)
            if let k = a.emission { o.int("k", k) }
            if let s = a.snr { o.number("snr", s) }
        case .peerRange(let p):
            o.string("peer", p.peer)
            if let v = p.nAA { o.number("n_aa", v) }
            if let v = p.nAB { o.number("n_ab", v) }
            if let v = p.nBA { o.number("n_ba", v) }
            if let v = p.nBB { o.number("n_bb", v) }
            if let v = p.sampleRate { o.number("fs", v) }
            if let v = p.speakerMicA { o.number("k_a", v) }
            if let v = p.speakerMicB { o.number("k_b", v) }
            if let v = p.distance { o.number("d", v) }
            if let v = p.sigma { o.number("sigma", v) }
        case .photo(let p):
            o.string("id", p.id)
            if let pr = p.pair { o.string("pair", pr) }
            o.int("w", p.width); o.int("h", p.height); o.number("f_px", p.focalLength)
            if let v = p.cx { o.number("cx", v) }
            if let v = p.cy { o.number("cy", v) }
            if let v = p.exposureTime { o.number("exposure_t", v) }
            o.string("object", p.object); o.number("x_px", p.objectX); o.number("y_px", p.objectY)
            o.number("h_px", p.objectHeight)
            if let v = p.cameraAzimuthMagnetic { o.number("azimuth_mag_deg", v) }
        case .groundTruth(let g):
            switch g.position {
            case .geodetic(let p): o.number("lat", p.latitude); o.number("lon", p.longitude); o.number("h", p.height)
            case .local(let v): o.number("e", v.x); o.number("n", v.y); o.number("u", v.z)
            }
            if let f = g.floor { o.int("floor", f) }
            o.string("kind", g.kind.rawValue)
        }
        return o.finish()
    }
}

/// Streams a trace to a file with buffered writes. The file appears complete at `close()`
/// (`OutputFile`: written beside the target and renamed; write errors such as a full disk
/// are thrown there). A writer released without `close()` leaves no file.
public final class TraceWriter {
    private let file: OutputFile
    private var buffer: [UInt8] = []
    private let encoder = TraceLineEncoder()

    /// Creates `url` (replacing it at `close()`) and writes the header line.
    public init(url: URL, header: TraceHeader) throws {
        file = try OutputFile(path: url.path)
        buffer.reserveCapacity(1 << 20)
        write(line: encoder.encode(header))
    }

    public func write(_ e: TraceEvent) { write(line: encoder.encode(e)) }

    public func write(line: String) {
        buffer.append(contentsOf: line.utf8); buffer.append(0x0A)
        if buffer.count >= 1 << 20 { flush() }
    }

    public func flush() {
        if !buffer.isEmpty { file.write(buffer); buffer.removeAll(keepingCapacity: true) }
    }

    /// Writes what is buffered and puts the file in place; throws the first write error.
    public func close() throws { flush(); try file.commit() }
}

/// Formats a Double for the trace: shortest round-trip decimal; integers without ".0";
/// non-finite values are not representable in JSON and are written as null.
@inline(__always) public func num(_ v: Double) -> String {
    guard v.isFinite else { return "null" }
    if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
    return v.description
}

/// Builds one JSON object line with keys in insertion order.
public struct JSONLine {
    private var s = "{"
    private var first = true
    public init() {}
    private mutating func key(_ k: String) {
        if !first { s += "," }
        first = false
        // Keys are escaped like values: some come from files (a BSSID as an `rss` key).
        s += jsonEscaped(k); s += ":"
    }
    public mutating func number(_ k: String, _ v: Double) { key(k); s += num(v) }
    public mutating func int(_ k: String, _ v: Int) { key(k); s += String(v) }
    public mutating func string(_ k: String, _ v: String) { key(k); s += jsonEscaped(v) }
    public mutating func raw(_ k: String, _ v: String) { key(k); s += v }
    public func finish() -> String { s + "}" }
}

/// JSON string literal with escaping per RFC 8259.
public func jsonEscaped(_ v: String) -> String {
    if !v.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) { return "\"" + v + "\"" }   // nothing to escape
    var out = "\""
    for u in v.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
        }
    }
    return out + "\""
}
