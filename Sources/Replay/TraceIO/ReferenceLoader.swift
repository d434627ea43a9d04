import Foundation
import Positioning

/// Loads the reference side file `reference.json` (AP map, Bluetooth LE beacon map, cell database, acoustic
/// beacons, landmarks, floor plan, WiFi fingerprint survey) into `ReferenceData` in the
/// trace's ENU frame.
///
/// Format (`docs/trace-format.md`, "Reference data side file"): every position is either
/// `e`, `n`, `u` (m, ENU of the trace; `u` defaults to 0) or `lat`, `lon`, `h` (deg, deg,
/// m WGS84 ellipsoidal; `h` defaults to the origin height, i.e. `u` ≈ 0), converted
/// exactly with `LocalFrame.enu`. `floorplan` is a GeoJSON file name relative to the
/// folder, or an inline GeoJSON object; its `LineString`, `MultiLineString`, `Polygon`
/// and `MultiPolygon` geometries become wall segments (polygon rings are closed). GeoJSON
/// coordinates are `[lon, lat]` degrees (RFC 7946) unless the top-level object has
/// `"frame": "enu"`, in which case they are `[e, n]` metres. A feature's
/// `properties.floor` (int) sets the walls' floor.
public enum ReferenceLoader {
    /// Reads `folder/reference.json`; a folder without one gives `ReferenceData.empty`.
    public static func load(folder: URL, frame: LocalFrame) throws -> ReferenceData {
        let u = folder.appendingPathComponent("reference.json")
        guard FileManager.default.fileExists(atPath: u.path) else { return .empty }
        return try load(url: u, frame: frame)
    }

    /// Reads one reference file. Throws `TraceDataError` (line 0; the reason names the
    /// offending entry, e.g. `aps[3]: missing key 'bssid'`).
    public static func load(url: URL, frame: LocalFrame) throws -> ReferenceData {
        try load(json: try json(url: url), url: url, frame: frame)
    }

    /// The parsed JSON of one reference file (for callers that convert it into many frames).
    public static func json(url: URL) throws -> Any {
        let data = try InputFile.data(url)
        do { return try JSONSerialization.jsonObject(with: data) } catch {
            throw TraceDataError(file: url.path, line: 0, reason: "invalid JSON: \(error.localizedDescription)", code: .invalidJSON)
        }
    }

    /// Converts a reference file's parsed JSON (`json(url:)`) into `frame`; `url` names the file
    /// in errors and locates a floor plan given by file name.
    public static func load(json any: Any, url: URL, frame: LocalFrame) throws -> ReferenceData {
        try prepare(json: any, url: url, frame: frame).template
    }

    /// A reference file's parsed JSON (`json(url:)`) checked and read once, for conversion into
    /// many frames with `PreparedReference.data(in:)` (`refine`'s 0.05° tiles). Throws what
    /// `load(json:url:frame:)` throws; `frame` is the frame of the checks (no check depends on it
    /// but a position's default height, the frame origin's).
    public static func prepare(json any: Any, url: URL, frame: LocalFrame) throws -> PreparedReference {
        var p = Parser(file: url.path, frame: frame)
        guard let root = any as? [String: Any] else { throw p.fail("", "the top level must be an object") }
        var ref = ReferenceData()
        var prepared = PreparedReference(template: ReferenceData())
        // WiFi access points (`aps`, keyed by `bssid`) and Bluetooth LE beacons (`ble`, keyed by
        // `id`) are the same kind of transmitter: one entry form, read by one loop.
        func transmitters(_ member: String, key: String, into map: inout [String: AccessPoint],
                          specs: inout [String: PreparedReference.Spec]) throws {
            for (i, o) in try p.array(root, member).enumerated() {
                let at = "\(member)[\(i)]"
                let id = try p.string(o, key, at).lowercased()
                specs[id] = try p.spec(o, at)
                map[id] = AccessPoint(bssid: id, position: try p.position(o, at), floor: try p.optInt(o, "floor", at),
                                      p0: try p.optNumber(o, "p0", at, in: TraceDomain.power, "dBm"),
                                      pathLossExponent: try p.optNumber(o, "n_exp", at, in: 0...100, ""),
                                      radio: try p.optString(o, "radio", at))
            }
        }
        try transmitters("aps", key: "bssid", into: &ref.accessPoints, specs: &prepared.aps)
        try transmitters("ble", key: "id", into: &ref.bleBeacons, specs: &prepared.bleBeacons)
        for (i, o) in try p.array(root, "cells").enumerated() {
            let at = "cells[\(i)]"
            let id = try p.cellID(o, at)
            prepared.cells[id] = try p.spec(o, at)
            ref.cells[id] = CellSite(cell: id, position: try p.position(o, at), azimuth: try p.optNumber(o, "azimuth", at, in: TraceDomain.degrees, "deg"),
                                     beamwidth: try p.optNumber(o, "beamwidth", at, in: 0...360, "deg"),
                                     range: try p.optNumber(o, "range", at, in: 0...TraceDomain.localMetres.upperBound, "m"),
                                     provenance: try p.optString(o, "provenance", at) ?? "antenna")
        }
        for (i, o) in try p.array(root, "beacons").enumerated() {
            let at = "beacons[\(i)]"
            let id = try p.string(o, "id", at)
            let period = try p.number(o, "period", at)
            guard period > 0 else { throw p.fail(at, "period must be > 0 s, got \(period)") }
            if let m = TraceDomain.violation("period", period, 0...1e6, "s") { throw p.fail(at, m) }
            prepared.beacons[id] = try p.spec(o, at)
            ref.beacons[id] = AcousticBeacon(id: id, position: try p.position(o, at),
                                             offset: try p.optNumber(o, "offset", at, in: TraceDomain.time, "s") ?? 0, period: period)
        }
        for (i, o) in try p.array(root, "landmarks").enumerated() {
            let at = "landmarks[\(i)]"
            let id = try p.string(o, "id", at)
            prepared.landmarks[id] = try p.spec(o, at)
            ref.landmarks[id] = Landmark(id: id, position: try p.position(o, at), height: try p.optNumber(o, "height", at, in: TraceDomain.localMetres, "m"))
        }
        if let fpm = root["fingerprints"], !isNull(fpm) { (ref.fingerprints, prepared.fingerprints) = try p.fingerprints(fpm) }
        if root["cell_coverage"] != nil { (ref.cellCoverage, prepared.coverage) = try p.cellCoverage(p.array(root, "cell_coverage")) }
        if let fp = root["floorplan"], !isNull(fp) {
            if let name = fp as? String {
                let fu = url.deletingLastPathComponent().appendingPathComponent(name)
                let fd = try InputFile.data(fu)
                let g: Any
                do { g = try JSONSerialization.jsonObject(with: fd) } catch {
                    throw TraceDataError(file: fu.path, line: 0, reason: "invalid JSON: \(error.localizedDescription)", code: .invalidJSON)
                }
                var fpParser = Parser(file: fu.path, frame: frame)
                prepared.polylines = try fpParser.polylines(geoJSON: g)
            } else {
                prepared.polylines = try p.polylines(geoJSON: fp)
            }
            ref.walls = prepared.polylines.flatMap { $0.walls(in: frame) }
        }
        prepared.template = ref
        return prepared
    }

    /// Wall segments of a GeoJSON object (see the type's documentation for the frames).
    public static func walls(geoJSON: Any, frame: LocalFrame, file: String = "floorplan") throws -> [Wall] {
        var p = Parser(file: file, frame: frame)
        return try p.polylines(geoJSON: geoJSON).flatMap { $0.walls(in: frame) }
    }
}

/// A reference file read and checked once (`ReferenceLoader.prepare`), its positions kept as
/// the file gives them: `data(in:)` converts them into a frame with the same expressions as
/// `ReferenceLoader.load` (the result is identical to loading the file in that frame), without
/// parsing the JSON again. `refine` converts the reference into each new 0.05° tile this way.
public struct PreparedReference: Sendable {
    /// A position as the file gives it: `lat`, `lon` (deg) and `h` (m; nil = the frame origin's
    /// height), or `e`, `n`, `u` (m, already in the trace's frame).
    enum Spec: Sendable {
        case geodetic(latitude: Double, longitude: Double, height: Double?)
        case local(SIMD3<Double>)
        func enu(_ frame: LocalFrame) -> SIMD3<Double> {
            switch self {
            case .geodetic(let lat, let lon, let h): return frame.enu(Geodetic(latitude: lat, longitude: lon, height: h ?? frame.origin.height))
            case .local(let v): return v
            }
        }
    }
    /// A floor-plan line as the file gives it (`[lon, lat]` deg, or `[e, n]` m when `enu`).
    struct Polyline: Sendable {
        var points: [SIMD2<Double>]
        var closed: Bool
        var floor: Int?
        var enu: Bool
        /// Its wall segments in `frame` (repeated points skipped, a closed ring closed).
        func walls(in frame: LocalFrame) -> [Wall] {
            let xy = enu ? points : points.map { frame.en(latitude: $0.y, longitude: $0.x, height: frame.origin.height) }
            guard xy.count >= 2 else { return [] }
            var out: [Wall] = []
            for k in 1..<xy.count where xy[k] != xy[k - 1] { out.append(Wall(a: xy[k - 1], b: xy[k], floor: floor, bounds: closed)) }
            if closed, let f = xy.first, let l = xy.last, f != l { out.append(Wall(a: l, b: f, floor: floor, bounds: true)) }
            return out
        }
    }
    /// The data in the frame of the checks; `data(in:)` replaces every position.
    var template: ReferenceData
    var aps: [String: Spec] = [:]
    var bleBeacons: [String: Spec] = [:]
    var cells: [CellID: Spec] = [:]
    var beacons: [String: Spec] = [:]
    var landmarks: [String: Spec] = [:]
    /// Per fingerprint point, in the map's order.
    var fingerprints: [Spec] = []
    var coverage: [CellCoverageMap.Key: Spec] = [:]
    var polylines: [Polyline] = []

    /// The reference data in `frame`: what `ReferenceLoader.load(json:url:frame:)` gives.
    public func data(in frame: LocalFrame) -> ReferenceData {
        var r = template
        for (k, s) in aps { r.accessPoints[k]?.position = s.enu(frame) }
        for (k, s) in bleBeacons { r.bleBeacons[k]?.position = s.enu(frame) }
        for (k, s) in cells { r.cells[k]?.position = s.enu(frame) }
        for (k, s) in beacons { r.beacons[k]?.position = s.enu(frame) }
        for (k, s) in landmarks { r.landmarks[k]?.position = s.enu(frame) }
        if let m = template.fingerprints {
            var points = m.points
            for (i, s) in fingerprints.enumerated() { let v = s.enu(frame); points[i].position = SIMD2(v.x, v.y) }
            r.fingerprints = FingerprintMap(points: points, threshold: m.threshold, spacing: m.spacing)
        }
        if let c = template.cellCoverage {
            var areas = c.areas
            for (k, s) in coverage { let v = s.enu(frame); areas[k]?.mean = SIMD2(v.x, v.y) }
            r.cellCoverage = CellCoverageMap(areas: areas)
        }
        if !polylines.isEmpty { r.walls = polylines.flatMap { $0.walls(in: frame) } }
        return r
    }
}

/// Whether a parsed JSON value is `null` (NSNull), decided on its dynamic type. `v is NSNull`
/// on an array or object value bridged the whole value to NSArray/NSDictionary first (every
/// element boxed): measured 60 % of `refine`'s time on reports without evidence, where each new
/// 0.05° tile converts the reference again (callgrind, 3,000 − 300 reports).
@inline(__always) func isNull(_ v: Any) -> Bool { type(of: v) is NSNull.Type }

/// JSONSerialization value accessors with located error messages.
private struct Parser {
    let file: String
    let frame: LocalFrame
    var enuFloorplan = false

    init(file: String, frame: LocalFrame) { self.file = file; self.frame = frame }

    /// `fingerprints`: `{"threshold_dbm": T, "spacing_m": s?, "points": [{position, "floor"?, "scans"?,
    /// "rss": {bssid: dBm, …}}, …]}` (docs/trace-format.md).
    func fingerprints(_ any: Any) throws -> (FingerprintMap, [PreparedReference.Spec]) {
        guard let o = any as? [String: Any] else { throw fail("fingerprints", "expected an object") }
        let threshold = try number(o, "threshold_dbm", "fingerprints")
        if let m = TraceDomain.violation("threshold_dbm", threshold, TraceDomain.power, "dBm") { throw fail("fingerprints", m) }
        let spacing = try optNumber(o, "spacing_m", "fingerprints")
        if let s = spacing, !(s > 0) || s > TraceDomain.localMetres.upperBound { throw fail("fingerprints", "spacing_m must be in (0, 2e7] m, got \(s)") }
        var points: [FingerprintMap.Point] = []
        var specs: [PreparedReference.Spec] = []
        for (i, q) in try array(o, "points").enumerated() {
            let at = "fingerprints.points[\(i)]"
            guard let r = q["rss"] as? [String: Any] else { throw fail(at, "missing object 'rss' (bssid → dBm)") }
            var rss: [String: Double] = [:]
            for (b, v) in r {
                guard let n = v as? NSNumber, !isBool(n), TraceDomain.power.contains(n.doubleValue) else {
                    throw fail(at, "rss['\(b)'] must be a number in [-300, 100] dBm")
                }
                rss[b.lowercased()] = n.doubleValue
            }
            let spec = try self.spec(q, at)
            let pos = spec.enu(frame)
            points.append(.init(position: SIMD2(pos.x, pos.y), floor: try optInt(q, "floor", at), rss: rss, scans: try optInt(q, "scans", at) ?? 0))
            specs.append(spec)
        }
        return (FingerprintMap(points: points, threshold: threshold, spacing: spacing), specs)
    }

    /// A cell identity: `rat`, `mcc`, `mnc`, `area`, `cid`.
    func cellID(_ o: [String: Any], _ at: String) throws -> CellID {
        let ratName = try string(o, "rat", at)
        guard let rat = RAT(rawValue: ratName) else { throw fail(at, "unknown rat '\(ratName)'") }
        return CellID(rat: rat, mcc: try int(o, "mcc", at), mnc: try int(o, "mnc", at), area: try int(o, "area", at), cid: try int(o, "cid", at))
    }

    /// `cell_coverage`: `[{cell identity, "ta"?, position, "cov_m2": [ee, en, nn], "count", "walks"?, "scale"?}, …]` — one
    /// area per cell (no `ta`) and per (cell, TA index) (docs/trace-format.md).
    func cellCoverage(_ list: [[String: Any]]) throws -> (CellCoverageMap, [CellCoverageMap.Key: PreparedReference.Spec]) {
        var areas: [CellCoverageMap.Key: CellCoverageMap.Area] = [:]
        var specs: [CellCoverageMap.Key: PreparedReference.Spec] = [:]
        for (i, o) in list.enumerated() {
            let at = "cell_coverage[\(i)]"
            let key = CellCoverageMap.Key(cell: try cellID(o, at), timingAdvance: try optInt(o, "ta", at))
            let raw = o["cov_m2"] as? [Any] ?? []
            let v = raw.compactMap { x -> Double? in
                guard let n = x as? NSNumber, !isBool(n), abs(n.doubleValue) <= 1e14 else { return nil }
                return n.doubleValue
            }
            guard raw.count == 3, v.count == 3 else { throw fail(at, "cov_m2 must be [ee, en, nn] in m², each within ±1e14") }
            guard v[0] >= 0, v[2] >= 0, v[0] * v[2] - v[1] * v[1] >= -1e-9 * max(1, v[0] * v[2]) else {
                throw fail(at, "cov_m2 is not a covariance (needs ee ≥ 0, nn ≥ 0, ee·nn ≥ en²)")
            }
            let n = try int(o, "count", at)
            guard n >= 1 else { throw fail(at, "count must be ≥ 1, got \(n)") }
            guard areas[key] == nil else { throw fail(at, "duplicate area for \(key.cell) ta \(key.timingAdvance.map(String.init) ?? "none")") }
            let walks = try optInt(o, "walks", at) ?? 1
            guard walks >= 1, walks <= n else { throw fail(at, "walks must be in 1…count (\(n)), got \(walks)") }
            let scale = try optNumber(o, "scale", at) ?? 1
            guard scale > 0, scale <= 1e6 else { throw fail(at, "scale must be in (0, 1e6], got \(scale)") }
            let spec = try self.spec(o, at)
            let pos = spec.enu(frame)
            areas[key] = .init(mean: SIMD2(pos.x, pos.y), covariance: Covariance2(ee: v[0], en: v[1], nn: v[2]), count: n, walks: walks,
                               scale: scale)
            specs[key] = spec
        }
        return (CellCoverageMap(areas: areas), specs)
    }

    func fail(_ at: String, _ reason: String, code: DataErrorCode = .invalidValue) -> TraceDataError {
        TraceDataError(file: file, line: 0, reason: at.isEmpty ? reason : "\(at): \(reason)", code: code)
    }

    func array(_ o: [String: Any], _ key: String) throws -> [[String: Any]] {
        guard let v = o[key], !isNull(v) else { return [] }
        guard let a = v as? [Any] else { throw fail(key, "must be an array", code: .wrongType) }
        return try a.enumerated().map { i, e in
            guard let d = e as? [String: Any] else { throw fail("\(key)[\(i)]", "must be an object", code: .wrongType) }
            return d
        }
    }

    /// A JSON number (JSONSerialization gives NSNumber; booleans are rejected).
    func optNumber(_ o: [String: Any], _ key: String, _ at: String) throws -> Double? {
        guard let v = o[key], !isNull(v) else { return nil }
        guard let n = v as? NSNumber, !isBool(n) else { throw fail(at, "key '\(key)' must be a number", code: .wrongType) }
        let d = n.doubleValue
        guard d.isFinite else { throw fail(at, "key '\(key)' is not finite") }
        return d
    }

    /// An optional number inside its domain (`TraceDomain`).
    func optNumber(_ o: [String: Any], _ key: String, _ at: String, in r: ClosedRange<Double>, _ unit: String) throws -> Double? {
        guard let v = try optNumber(o, key, at) else { return nil }
        if let m = TraceDomain.violation(key, v, r, unit) { throw fail(at, m) }
        return v
    }

    func number(_ o: [String: Any], _ key: String, _ at: String) throws -> Double {
        guard let v = try optNumber(o, key, at) else { throw fail(at, "missing key '\(key)'", code: .missingKey) }
        return v
    }

    func optInt(_ o: [String: Any], _ key: String, _ at: String) throws -> Int? {
        guard let d = try optNumber(o, key, at) else { return nil }
        guard d == d.rounded(), abs(d) <= Double(TraceDomain.exactInteger.upperBound) else {
            throw fail(at, "key '\(key)' must be an integer, got \(d)", code: .wrongType)
        }
        return Int(d)
    }

    func int(_ o: [String: Any], _ key: String, _ at: String) throws -> Int {
        guard let v = try optInt(o, key, at) else { throw fail(at, "missing key '\(key)'", code: .missingKey) }
        return v
    }

    func optString(_ o: [String: Any], _ key: String, _ at: String) throws -> String? {
        guard let v = o[key], !isNull(v) else { return nil }
        guard let s = v as? String else { throw fail(at, "key '\(key)' must be a string", code: .wrongType) }
        return s
    }

    func string(_ o: [String: Any], _ key: String, _ at: String) throws -> String {
        guard let v = try optString(o, key, at) else { throw fail(at, "missing key '\(key)'", code: .missingKey) }
        return v
    }

    /// `e`,`n`,`u` (m) or `lat`,`lon`,`h` (deg, deg, m) → ENU m.
    func position(_ o: [String: Any], _ at: String) throws -> SIMD3<Double> { try spec(o, at).enu(frame) }

    /// A position as given, checked (`position` converts it into the frame).
    func spec(_ o: [String: Any], _ at: String) throws -> PreparedReference.Spec {
        if o["lat"] != nil || o["lon"] != nil {
            let lat = try number(o, "lat", at), lon = try number(o, "lon", at)
            if let m = TraceDomain.latLonViolation(lat, lon) { throw fail(at, m) }
            let given = try optNumber(o, "h", at)
            let h = given ?? frame.origin.height
            if let m = TraceDomain.violation("h", h, TraceDomain.height, "m") { throw fail(at, m) }
            return .geodetic(latitude: lat, longitude: lon, height: given)
        }
        if o["e"] != nil || o["n"] != nil {
            let L = TraceDomain.localMetres
            let v = SIMD3(try number(o, "e", at), try number(o, "n", at), try optNumber(o, "u", at) ?? 0)
            for (k, x) in zip(["e", "n", "u"], [v.x, v.y, v.z]) {
                if let m = TraceDomain.violation(k, x, L, "m") { throw fail(at, m) }
            }
            return .local(v)
        }
        throw fail(at, "missing position: give e, n (, u) or lat, lon (, h)", code: .missingKey)
    }

    /// JSONSerialization boxes `true`/`false` as NSNumber with objCType "c"; numbers are "q" or "d".
    /// (Compared in place: `String(cString:)` allocated a string per number.)
    private func isBool(_ n: NSNumber) -> Bool { let t = n.objCType; return t[0] == CChar(UInt8(ascii: "c")) && t[1] == 0 }

    // MARK: GeoJSON floor plan

    mutating func polylines(geoJSON g: Any) throws -> [PreparedReference.Polyline] {
        guard let root = g as? [String: Any] else { throw fail("floorplan", "must be a GeoJSON object") }
        if let f = root["frame"] as? String {
            guard f == "enu" || f == "wgs84" else { throw fail("floorplan", "frame must be 'enu' or 'wgs84', got '\(f)'") }
            enuFloorplan = f == "enu"
        }
        var out: [PreparedReference.Polyline] = []
        try collect(root, floor: nil, at: "floorplan", into: &out)
        // A ring drawn twice (ms-indoor site2 F3 repeats 130 of its 145 shop outlines) is one
        // wall: kept once, so the even–odd rule of the walkable area (`WalkableArea`) holds.
        var seen = Set<[Double]>()
        return out.filter { p in !p.closed || seen.insert(p.points.flatMap { [$0.x, $0.y] } + [p.floor.map(Double.init) ?? -.infinity]).inserted }
    }

    private func collect(_ o: [String: Any], floor: Int?, at: String, into out: inout [PreparedReference.Polyline]) throws {
        guard let type = o["type"] as? String else { throw fail(at, "missing GeoJSON 'type'", code: .missingKey) }
        switch type {
        case "FeatureCollection":
            guard let fs = o["features"] as? [Any] else { throw fail(at, "missing 'features'", code: .missingKey) }
            for (i, f) in fs.enumerated() {
                guard let d = f as? [String: Any] else { throw fail("\(at).features[\(i)]", "must be an object") }
                try collect(d, floor: floor, at: "\(at).features[\(i)]", into: &out)
            }
        case "Feature":
            let props = o["properties"] as? [String: Any] ?? [:]
            let fl = try optInt(props, "floor", at) ?? floor
            if let geom = o["geometry"] as? [String: Any] { try collect(geom, floor: fl, at: at + ".geometry", into: &out) }
        case "GeometryCollection":
            for (i, g) in (o["geometries"] as? [Any] ?? []).enumerated() {
                if let d = g as? [String: Any] { try collect(d, floor: floor, at: "\(at).geometries[\(i)]", into: &out) }
            }
        case "LineString":
            try polyline(o["coordinates"], closed: false, floor: floor, at: at, into: &out)
        case "MultiLineString", "Polygon":
            guard let lines = o["coordinates"] as? [Any] else { throw fail(at, "missing 'coordinates'", code: .missingKey) }
            for l in lines { try polyline(l, closed: type == "Polygon", floor: floor, at: at, into: &out) }
        case "MultiPolygon":
            guard let polys = o["coordinates"] as? [Any] else { throw fail(at, "missing 'coordinates'", code: .missingKey) }
            for p in polys {
                for ring in p as? [Any] ?? [] { try polyline(ring, closed: true, floor: floor, at: at, into: &out) }
            }
        case "Point", "MultiPoint":
            break  // not walls
        default:
            throw fail(at, "unsupported GeoJSON type '\(type)'")
        }
    }

    private func polyline(_ c: Any?, closed: Bool, floor: Int?, at: String, into out: inout [PreparedReference.Polyline]) throws {
        guard let pts = c as? [Any] else { throw fail(at, "missing 'coordinates'", code: .missingKey) }
        var xy: [SIMD2<Double>] = []
        for p in pts {
            guard let a = p as? [Any], a.count >= 2, let x = (a[0] as? NSNumber)?.doubleValue, let y = (a[1] as? NSNumber)?.doubleValue,
                  x.isFinite, y.isFinite else {
                throw fail(at, "a coordinate must be [x, y] numbers")
            }
            if enuFloorplan {
                guard TraceDomain.localMetres.contains(x), TraceDomain.localMetres.contains(y) else {
                    throw fail(at, "coordinate [\(x), \(y)] outside [-2e7, 2e7] m")
                }
                xy.append(SIMD2(x, y))
            } else {
                guard (-90...90).contains(y), (-180...180).contains(x) else {
                    throw fail(at, "coordinate [\(x), \(y)] is not [lon, lat] degrees (set \"frame\": \"enu\" for metres)")
                }
                xy.append(SIMD2(x, y))                 // [lon, lat]: converted per frame (`Polyline.walls(in:)`)
            }
        }
        out.append(PreparedReference.Polyline(points: xy, closed: closed, floor: floor, enu: enuFloorplan))
    }
}
