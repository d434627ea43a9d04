import Foundation
import Positioning

/// Importer for the Microsoft Indoor Location Competition 2.0 path files
/// (`unix_ms<TAB>TYPE<TAB>values…`, `#` header lines).
///
/// Mapping (see `docs/formats.md`):
/// - time: `t = unix_ms / 1000` (trace clock = Unix time, s).
/// - `TYPE_ACCELEROMETER` → `acc` (m/s²), `TYPE_GYROSCOPE` → `gyro` (rad/s),
///   `TYPE_MAGNETIC_FIELD` → `mag` (µT): the trailing accuracy integer is dropped.
/// - `TYPE_ROTATION_VECTOR x y z` → `rotvec` with `w = √max(0, 1 − x² − y² − z²)`
///   (Android's rotation vector is the vector part of the unit quaternion device → ENU).
/// - `TYPE_*_UNCALIBRATED` → dropped and counted: the calibrated stream of the same sensor is
///   kept; the raw-minus-bias values carry no extra position information.
/// - `TYPE_WIFI ssid bssid rssi freq last_seen_ms`: consecutive rows with the same `unix_ms`
///   form one `wifi` scan at that time (scan delivery); every AP keeps its own sample time
///   `t_seen = last_seen_ms / 1000` (stale cached results are visible there). Empty SSIDs are kept.
/// - `TYPE_WAYPOINT x y` → `gt` `checkpoint` at `e = x`, `n = y`, `u = 0` in the floor-plan
///   frame (metres, x east, y north = up in the floor image), `floor` from the header's
///   `FloorName` (`F1` = 0, `F3` = 2, `B1` = −1, `1F` = 0).
/// - `TYPE_BEACON uuid major minor txPower rssi distance mac unix_ms` (iBeacon; columns as the
///   competition's README describes them: txPower is the advertisement's calibrated power byte,
///   the RSS expected at 1 m): consecutive rows with the same `unix_ms` form one `ble` scan at that
///   time (as WiFi rows do); each beacon gets `id` = the MAC lower-cased (the iBeacon key
///   `uuid:major:minor` when the MAC is empty), `uuid`/`major`/`minor`, `rss` = rssi and
///   `tx` = txPower. Not kept: `distance` (the app's range from txPower and rssi by a fixed
///   formula: a function of the two levels kept) and the last column, which the README calls a
///   copy of the row's time stamp ("padding"), so no `t_seen` is written.
/// - Undocumented `TYPE_BLUE`, `TYPE_BLU4`, `TYPE_DIST1`, `TYPE_DIST2`,
///   `TYPE_SENSOR_MAGNETIC_FIELD_ACCURACY_CHANGED` → dropped and counted, never fatal.
/// - Any other `TYPE_*` → unknown type (counted; fatal only with `--strict`).
///
/// Origin convention: the floor-plan frame's (0, 0) is the south-west corner of the
/// bounding box of the site's `geojson_map.json` (searched beside the file and in its
/// parent folder); its width and height match `floor_info.json` `map_info` to millimetres
/// on the sample site, so floor-plan metres are ENU metres about that corner (h = 0).
/// Without a map the origin is (0°, 0°, 0 m) unless `--origin` is given.
public enum MSIndoorImporter {
    static let undocumented: Set<String> = ["TYPE_BLUE", "TYPE_BLU4", "TYPE_DIST1", "TYPE_DIST2",
                                            "TYPE_SENSOR_MAGNETIC_FIELD_ACCURACY_CHANGED"]

    public struct Metadata: Sendable {
        public var startTime: Double?
        public var site: String?
        public var floorName: String?
        public var device: String?
    }

    /// Parses one path file. `file` names it in diagnostics.
    public static func parse(_ buf: ByteBuffer, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, meta: Metadata) {
        var ctx = ImportContext(options: options, file: file)
        var meta = Metadata()
        var events: [TraceEvent] = []
        events.reserveCapacity(buf.count / 40)
        var fields: [Range<Int>] = []
        fields.reserveCapacity(12)
        var floor: Int? = nil
        let device = options.device

        var scanTime: Int? = nil
        var scanAPs: [WiFiObservation] = []
        func flushScan() {
            if let ts = scanTime, !scanAPs.isEmpty {
                events.append(TraceEvent(time: Double(ts) / 1000, device: device,
                                         payload: .wifi(WiFiScan(accessPoints: scanAPs))))
            }
            scanTime = nil; scanAPs.removeAll(keepingCapacity: true)
        }

        var bleTime: Int? = nil
        var bleBeacons: [BLEObservation] = []
        func flushBLE() {
            if let ts = bleTime, !bleBeacons.isEmpty {
                events.append(TraceEvent(time: Double(ts) / 1000, device: device, payload: .ble(BLEScan(beacons: bleBeacons))))
            }
            bleTime = nil; bleBeacons.removeAll(keepingCapacity: true)
        }

        func record(_ fields: [Range<Int>]) throws {
            guard fields.count >= 2, let ms = buf.int(fields[0]) else {
                try ctx.malformed("expected unix_ms<TAB>TYPE")
                return
            }
            let type = fields[1]
            let t = Double(ms) / 1000
            @inline(__always) func vals(_ k: Int) -> [Double]? {
                guard fields.count >= 2 + k else { return nil }
                var out = [Double](); out.reserveCapacity(k)
                for i in 0..<k { guard let v = buf.double(fields[2 + i]) else { return nil }; out.append(v) }
                return out
            }
            if buf.equals(type, "TYPE_WIFI") {
                guard fields.count >= 7, let rss = buf.double(fields[4]), let freq = buf.double(fields[5]),
                      let seen = buf.int(fields[6]) else {
                    try ctx.malformed("TYPE_WIFI needs ssid bssid rssi freq last_seen_ms"); return
                }
                let bssid = buf.string(buf.trimmed(fields[3])).lowercased()
                guard !bssid.isEmpty else { try ctx.malformed("TYPE_WIFI with empty BSSID"); return }
                if scanTime != ms { flushScan(); scanTime = ms }
                scanAPs.append(WiFiObservation(bssid: bssid, ssid: buf.string(fields[2]), frequency: freq, rss: rss,
                                               lastSeen: Double(seen) / 1000))
                return
            }
            if buf.equals(type, "TYPE_ACCELEROMETER") || buf.equals(type, "TYPE_GYROSCOPE")
                || buf.equals(type, "TYPE_MAGNETIC_FIELD") {
                guard let v = vals(3) else { try ctx.malformed("\(buf.string(type)) needs x y z"); return }
                let kind: IMUKind = buf.equals(type, "TYPE_ACCELEROMETER") ? .accelerometer
                    : buf.equals(type, "TYPE_GYROSCOPE") ? .gyroscope : .magnetometer
                events.append(TraceEvent(time: t, device: device, payload: .imu(IMUSample(kind: kind, x: v[0], y: v[1], z: v[2]))))
                return
            }
            if buf.equals(type, "TYPE_ROTATION_VECTOR") {
                guard let v = vals(3) else { try ctx.malformed("TYPE_ROTATION_VECTOR needs x y z"); return }
                let w = (max(0, 1 - v[0] * v[0] - v[1] * v[1] - v[2] * v[2])).squareRoot()
                events.append(TraceEvent(time: t, device: device,
                                         payload: .imu(IMUSample(kind: .rotationVector, x: v[0], y: v[1], z: v[2], w: w))))
                return
            }
            if buf.equals(type, "TYPE_WAYPOINT") {
                guard let v = vals(2) else { try ctx.malformed("TYPE_WAYPOINT needs x y"); return }
                events.append(TraceEvent(time: t, device: device, payload: .groundTruth(
                    GroundTruth(position: .local(SIMD3(v[0], v[1], 0)), floor: floor, kind: .checkpoint))))
                return
            }
            if buf.equals(type, "TYPE_BEACON") {
                guard fields.count >= 10, let major = buf.int(fields[3]), let minor = buf.int(fields[4]),
                      let tx = buf.double(fields[5]), let rss = buf.double(fields[6]),
                      (0...65_535).contains(major), (0...65_535).contains(minor) else {
                    try ctx.malformed("TYPE_BEACON needs uuid major minor txPower rssi distance mac timestamp"); return
                }
                let uuid = buf.string(buf.trimmed(fields[2]))
                let ib = uuid.isEmpty ? nil : IBeaconID(uuid: uuid, major: major, minor: minor)
                let mac = buf.string(buf.trimmed(fields[8])).lowercased()
                guard let id = mac.isEmpty ? ib?.key : mac else {
                    try ctx.malformed("TYPE_BEACON with neither a MAC nor a UUID"); return
                }
                if bleTime != ms { flushBLE(); bleTime = ms }
                bleBeacons.append(BLEObservation(id: id, iBeacon: ib, rss: rss, txPower: tx))
                return
            }
            let name = buf.string(type)
            if name.hasSuffix("_UNCALIBRATED") { ctx.drop("\(name) (calibrated stream kept)"); return }
            if undocumented.contains(name) { ctx.drop("\(name) (undocumented)"); return }
            try ctx.unknown(name)
        }

        try buf.forEachLine { line, n in
            ctx.line = n
            ctx.report.lines += 1
            if line.isEmpty { return }
            if buf.bytes[line.lowerBound] == UInt8(ascii: "#") {
                buf.split(line, separator: 0x09, into: &fields)
                for f in fields.dropFirst() {
                    let s = buf.string(f)
                    guard let c = s.firstIndex(of: ":") else { continue }
                    let k = String(s[..<c]), v = String(s[s.index(after: c)...])
                    switch k {
                    case "startTime": meta.startTime = Double(v).map { $0 / 1000 }
                    case "SiteName": meta.site = v
                    case "FloorName": meta.floorName = v; floor = floorNumber(v)
                    case "Brand": meta.device = v + (meta.device.map { " " + $0 } ?? "")
                    case "Model": meta.device = (meta.device.map { $0 + " " } ?? "") + v
                    default: break
                    }
                }
                return
            }
            buf.split(line, separator: 0x09, into: &fields)
            // Repair glued records (a missing newline: "…<last value><unix_ms><TAB>TYPE_…"):
            // the 13-digit time stamp at the end of the field before a TYPE_ field starts a new record.
            var rest = fields
            while rest.count > 3, let k = rest.indices.dropFirst(2).first(where: { buf.hasPrefix(rest[$0], "TYPE_") }),
                  rest[k - 1].count > 13, buf.int((rest[k - 1].upperBound - 13)..<rest[k - 1].upperBound) != nil {
                let prev = rest[k - 1]
                try record(Array(rest[0..<(k - 1)]) + [prev.lowerBound..<(prev.upperBound - 13)])
                rest = [(prev.upperBound - 13)..<prev.upperBound] + Array(rest[k...])
                ctx.report.dropped["glued records split (missing newline repaired)", default: 0] += 1
            }
            try record(rest)
        }
        flushScan()
        flushBLE()
        ctx.report.files = 1
        return (events, ctx.report, meta)
    }

    /// Floor index from a competition floor name: `F1`/`1F`/`L1` = 0, `F3` = 2, `B1`/`1B` = −1, `G` = 0.
    public static func floorNumber(_ name: String) -> Int? {
        let u = name.uppercased()
        if u == "G" || u == "GF" { return 0 }
        let digits = u.filter(\.isNumber)
        guard let n = Int(digits), n > 0 else { return nil }
        return u.contains("B") ? -n : n - 1
    }

    /// The parsed site map (`geojson_map.json` beside `file` or one folder up): its origin
    /// (south-west corner) and the floor plan for `reference.json`, parsed once per folder.
    struct SiteMap: Sendable { var origin: Geodetic?; var floorPlan: Data? }
    final class SiteMapCache: @unchecked Sendable {
        private var maps: [String: SiteMap] = [:]
        private let lock = NSLock()
        func map(near file: URL) -> SiteMap {
            let key = file.deletingLastPathComponent().standardizedFileURL.path
            lock.lock(); defer { lock.unlock() }
            if let m = maps[key] { return m }
            let m = SiteMap(origin: MSIndoorImporter.parseOrigin(near: file), floorPlan: MSIndoorImporter.parseFloorPlan(near: file))
            maps[key] = m
            return m
        }
    }
    static let siteMaps = SiteMapCache()

    /// South-west corner of the bounding box of `geojson_map.json` beside `file` or one folder up.
    public static func floorPlanOrigin(near file: URL) -> Geodetic? { siteMaps.map(near: file).origin }

    /// The site's floor plan as GeoJSON (see `parseFloorPlan`).
    public static func floorPlan(near file: URL) -> Data? { siteMaps.map(near: file).floorPlan }

    static func parseOrigin(near file: URL) -> Geodetic? {
        let dir = file.deletingLastPathComponent()
        for d in [dir, dir.deletingLastPathComponent()] {
            let u = d.appendingPathComponent("geojson_map.json")
            guard let data = try? Data(contentsOf: u),
                  let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let features = obj["features"] as? [[String: Any]] else { continue }
            var minLon = Double.infinity, minLat = Double.infinity
            func walk(_ c: Any) {
                if let a = c as? [Any] {
                    if a.count >= 2, let lon = (a[0] as? NSNumber)?.doubleValue, let lat = (a[1] as? NSNumber)?.doubleValue,
                       !(a[0] is [Any]) {
                        minLon = min(minLon, lon); minLat = min(minLat, lat)
                    } else { for e in a { walk(e) } }
                }
            }
            for f in features { if let g = f["geometry"] as? [String: Any], let c = g["coordinates"] { walk(c) } }
            if minLon.isFinite && minLat.isFinite { return Geodetic(latitude: minLat, longitude: minLon, height: 0) }
        }
        return nil
    }

    /// The site's floor plan as GeoJSON for `ReferenceLoader`: the geometries of
    /// `geojson_map.json` (lon/lat) with only an integer `floor` property (from the feature's
    /// `floor` name, e.g. "F3" → 2); shop names and styles are not kept.
    static func parseFloorPlan(near file: URL) -> Data? {
        let dir = file.deletingLastPathComponent()
        for d in [dir, dir.deletingLastPathComponent()] {
            guard let data = try? Data(contentsOf: d.appendingPathComponent("geojson_map.json")),
                  let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let features = obj["features"] as? [[String: Any]] else { continue }
            let out: [[String: Any]] = features.compactMap { f in
                guard let g = f["geometry"] as? [String: Any] else { return nil }
                var props: [String: Any] = [:]
                if let fl = (f["properties"] as? [String: Any])?["floor"] as? String, let n = floorNumber(fl) { props["floor"] = n }
                return ["type": "Feature", "geometry": g, "properties": props]
            }
            return try? JSONSerialization.data(withJSONObject: ["type": "FeatureCollection", "features": out], options: [.sortedKeys])
        }
        return nil
    }

    /// Imports path files into one trace (events of all files merged and sorted by time).
    public static func importFiles(_ urls: [URL], options: ImportOptions) throws -> ImportedTrace {
        var events: [TraceEvent] = []
        var report = ImportReport()
        var meta: Metadata? = nil
        for u in urls {
            let r = try parse(ByteBuffer(url: u), file: u.path, options: options)
            events += r.events; report.merge(r.report)
            if meta == nil { meta = r.meta }
        }
        var notes: [String] = []
        var origin = Geodetic(latitude: 0, longitude: 0, height: 0)
        if options.origin == nil {
            if let first = urls.first, let o = floorPlanOrigin(near: first) {
                origin = o
                notes.append("origin = south-west corner of geojson_map.json (floor-plan (0,0))")
            } else {
                notes.append("no geojson_map.json found: origin (0,0,0); floor-plan metres are ENU about it")
            }
        }
        let name = urls.count == 1 ? urls[0].deletingPathExtension().lastPathComponent : meta?.site
        var t = try assembleTrace(events: events, defaultOrigin: origin, options: options, name: name,
                                  device: meta?.device, report: report, extraNotes: notes, file: urls.first?.path ?? "import")
        // The floor plan is written only when its frame is the trace's (default origin).
        if options.origin == nil, let first = urls.first { t.floorplanGeoJSON = floorPlan(near: first) }
        return t
    }
}
