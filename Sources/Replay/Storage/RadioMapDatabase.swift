import Foundation
import GRDB
import TraceIO
import Positioning

/// The radio map: estimated AP positions in SQLite (GRDB), table `aps` keyed by BSSID, Bluetooth
/// LE beacon positions in table `ble` (same columns, keyed by beacon id), plus
/// the ENU frame origin they are expressed in (table `meta`). Writes are transactional.
public final class RadioMapDatabase {
    public let queue: DatabaseQueue

    public init(path: String) throws { queue = try DatabaseQueue(path: path); try migrate() }
    public init() throws { queue = try DatabaseQueue(); try migrate() }

    private func migrate() throws {
        var m = DatabaseMigrator()
        m.registerMigration("radiomap-v1") { db in
            try Self.createTransmitterTable(db, "aps", key: "bssid")
            try db.create(table: "meta") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
        }
        m.registerMigration("radiomap-v2-fingerprints") { db in
            try db.create(table: "fingerprints") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("e", .double).notNull()
                t.column("n", .double).notNull()
                t.column("floor", .integer)
                t.column("scans", .integer).notNull()
                t.column("rss", .text).notNull()      // JSON object BSSID → mean RSS dBm
            }
        }
        m.registerMigration("radiomap-v3-ble") { db in try Self.createTransmitterTable(db, "ble", key: "id") }
        try m.migrate(queue)
    }

    /// A transmitter table: `aps` (WiFi, key `bssid`) or `ble` (Bluetooth LE beacons, key `id`),
    /// one layout for both (a beacon is a transmitter with a learned position like an AP).
    private static func createTransmitterTable(_ db: Database, _ name: String, key: String) throws {
        try db.create(table: name) { t in
            t.primaryKey(key, .text)
            t.column("e", .double).notNull()
            t.column("n", .double).notNull()
            t.column("u", .double).notNull()
            t.column("lat", .double).notNull()
            t.column("lon", .double).notNull()
            t.column("floor", .integer)
            t.column("p0", .double)
            t.column("n_exp", .double)
            t.column("radio", .text)
            t.column("samples", .integer).notNull()
            t.column("model_fitted", .boolean).notNull()
        }
    }

    /// Replaces the whole map with `estimates` in `frame`, in one transaction.
    public func replace(with estimates: [APMapEstimator.Estimate], frame: LocalFrame) throws {
        try queue.write { db in try Self.writeAPs(db, estimates, frame: frame) }
    }

    private static func writeAPs(_ db: Database, _ estimates: [APMapEstimator.Estimate], frame: LocalFrame,
                                 table: String = "aps", key: String = "bssid") throws {
        do {
            try db.execute(sql: "DELETE FROM \(table)")
            let st = try db.cachedStatement(sql: """
                INSERT INTO \(table)(\(key), e, n, u, lat, lon, floor, p0, n_exp, radio, samples, model_fitted)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for x in estimates {
                let a = x.ap
                let g = frame.geodetic(a.position)
                try st.execute(arguments: [a.bssid, a.position.x, a.position.y, a.position.z, g.latitude, g.longitude,
                                           a.floor, a.p0, a.pathLossExponent, a.radio, x.samples, x.modelFitted])
            }
            let o = frame.origin
            try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES ('origin', ?)",
                           arguments: ["\(o.latitude),\(o.longitude),\(o.height)"])
        }
    }

    /// Replaces the whole map (APs and, when given, the fingerprint survey) in one transaction:
    /// what `posfuse radiomap build` writes.
    public func replace(with estimates: [APMapEstimator.Estimate], bleBeacons: [APMapEstimator.Estimate] = [], fingerprints: FingerprintMap?,
                        uncertainty: RadioUncertaintyModel? = nil, stepLength: StepLengthCalibration? = nil, frame: LocalFrame) throws {
        // One transaction: a reader never sees the APs of one build with the survey of another.
        try queue.write { db in
            try Self.writeAPs(db, estimates, frame: frame)
            try Self.writeAPs(db, bleBeacons, frame: frame, table: "ble", key: "id")
            try db.execute(sql: "DELETE FROM fingerprints")
            try db.execute(sql: "DELETE FROM meta WHERE key IN ('fp_threshold_dbm', 'fp_spacing_m', 'uncertainty', 'pdr_step_length')")
            if let uncertainty {
                let text = String(decoding: try JSONEncoder.sorted.encode(uncertainty), as: UTF8.self)
                try db.execute(sql: "INSERT INTO meta(key, value) VALUES ('uncertainty', ?)", arguments: [text])
            }
            if let stepLength {
                let text = String(decoding: try JSONEncoder.sorted.encode(stepLength), as: UTF8.self)
                try db.execute(sql: "INSERT INTO meta(key, value) VALUES ('pdr_step_length', ?)", arguments: [text])
            }
            guard let fingerprints else { return }
            let st = try db.cachedStatement(sql: "INSERT INTO fingerprints(e, n, floor, scans, rss) VALUES (?, ?, ?, ?, ?)")
            for p in fingerprints.points {
                let rss = String(decoding: try JSONSerialization.data(withJSONObject: p.rss, options: [.sortedKeys]), as: UTF8.self)
                try st.execute(arguments: [p.position.x, p.position.y, p.floor, p.scans, rss])
            }
            try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES ('fp_threshold_dbm', ?)", arguments: ["\(fingerprints.threshold)"])
            if let sp = fingerprints.spacing {
                try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES ('fp_spacing_m', ?)", arguments: ["\(sp)"])
            }
        }
    }

    /// The fingerprint survey in the map's own frame; nil when the map has none.
    public func fingerprints() throws -> FingerprintMap? {
        try queue.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT e, n, floor, scans, rss FROM fingerprints ORDER BY id")
            guard !rows.isEmpty else { return nil }
            let threshold = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'fp_threshold_dbm'").flatMap(Double.init) ?? -100
            let spacing = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'fp_spacing_m'").flatMap(Double.init)
            let points = try rows.map { r -> FingerprintMap.Point in
                let text: String = r["rss"]
                guard let rss = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Double] else {
                    throw DatabaseError(message: "fingerprints.rss is not an object of numbers")
                }
                return FingerprintMap.Point(position: SIMD2(r["e"], r["n"]), floor: r["floor"], rss: rss, scans: r["scans"])
            }
            return FingerprintMap(points: points, threshold: threshold, spacing: spacing)
        }
    }

    /// The uncertainty model (`RadioUncertaintyModel`, JSON in `meta`); nil when the map has none.
    public func uncertainty() throws -> RadioUncertaintyModel? {
        guard let text = try queue.read({ try String.fetchOne($0, sql: "SELECT value FROM meta WHERE key = 'uncertainty'") }) else { return nil }
        return try JSONDecoder().decode(RadioUncertaintyModel.self, from: Data(text.utf8))
    }

    /// The PDR step length fitted on the map's walks (`StepLengthCalibration`, JSON in `meta`); nil when the map has none.
    public func stepLength() throws -> StepLengthCalibration? {
        guard let text = try queue.read({ try String.fetchOne($0, sql: "SELECT value FROM meta WHERE key = 'pdr_step_length'") }) else { return nil }
        return try JSONDecoder().decode(StepLengthCalibration.self, from: Data(text.utf8))
    }

    /// Opens the radio map at `path` as reference data (`replay --radio-map`): a missing file or
    /// one that is not a radio map is a `TraceDataError` naming it.
    public static func forReading(path: String) throws -> RadioMapDatabase {
        guard FileManager.default.fileExists(atPath: path) else {
            throw TraceDataError(file: path, line: 0, reason: "no such radio map", code: .io)
        }
        do {
            let q = try DatabaseQueue(path: path)
            let ok = try q.read { try $0.tableExists("aps") }
            guard ok else { throw TraceDataError(file: path, line: 0, reason: "not a radio map (no table aps; build one with posfuse radiomap build)", code: .invalidRadioMap) }
            return try RadioMapDatabase(path: path)
        } catch let e as TraceDataError { throw e } catch {
            throw TraceDataError(file: path, line: 0, reason: "cannot read the radio map: \(error)", code: .invalidRadioMap)
        }
    }

    /// Adds the map's APs, fingerprint survey, uncertainty model and step length to `reference`, converted from the map's frame
    /// to `frame` (exactly, through WGS84, when the origins differ); entries the reference
    /// already has (its own side file) are kept, and its own survey wins over the map's.
    public func merge(into reference: inout ReferenceData, frame: LocalFrame) throws {
        let aps: [String: AccessPoint], ble: [String: AccessPoint], fps: FingerprintMap?, mapOrigin: Geodetic?, model: RadioUncertaintyModel?, steps: StepLengthCalibration?
        do { aps = try accessPoints(); ble = try bleBeacons(); fps = try fingerprints(); mapOrigin = origin; model = try uncertainty(); steps = try stepLength() } catch {
            throw TraceDataError(file: queue.path, line: 0, reason: "cannot read the radio map: \(error)", code: .invalidRadioMap)
        }
        let same = mapOrigin == nil || mapOrigin == frame.origin
        let mapFrame = mapOrigin.map(LocalFrame.init(origin:))
        func convert(_ v: SIMD3<Double>) -> SIMD3<Double> { same ? v : frame.enu(mapFrame!.geodetic(v)) }
        for (b, a) in aps where reference.accessPoints[b] == nil {
            var c = a
            c.position = convert(a.position)
            reference.accessPoints[b] = c
        }
        for (b, a) in ble where reference.bleBeacons[b] == nil {
            var c = a
            c.position = convert(a.position)
            reference.bleBeacons[b] = c
        }
        if reference.radioUncertainty == nil { reference.radioUncertainty = model }
        if reference.stepLength == nil { reference.stepLength = steps }
        if reference.fingerprints == nil, let fps {
            let pts = fps.points.map { p -> FingerprintMap.Point in
                var q = p
                let v = convert(SIMD3(p.position.x, p.position.y, 0))
                q.position = SIMD2(v.x, v.y)
                return q
            }
            reference.fingerprints = FingerprintMap(points: pts, threshold: fps.threshold, spacing: fps.spacing)
        }
    }

    public var origin: Geodetic? {
        guard let s = try? queue.read({ db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'origin'") }) else { return nil }
        let v = s.split(separator: ",").compactMap { Double($0) }
        return v.count == 3 ? Geodetic(latitude: v[0], longitude: v[1], height: v[2]) : nil
    }

    /// The AP map in the map's own frame.
    public func accessPoints() throws -> [String: AccessPoint] { try transmitters("aps", key: "bssid") }

    /// The Bluetooth LE beacon map in the map's own frame (`ble` table; empty in maps built before it).
    public func bleBeacons() throws -> [String: AccessPoint] { try transmitters("ble", key: "id") }

    private func transmitters(_ table: String, key: String) throws -> [String: AccessPoint] {
        try queue.read { db in
            var out: [String: AccessPoint] = [:]
            for r in try Row.fetchAll(db, sql: "SELECT * FROM \(table)") {
                let b: String = r[key]
                out[b] = AccessPoint(bssid: b, position: SIMD3(r["e"], r["n"], r["u"]), floor: r["floor"],
                                     p0: r["p0"], pathLossExponent: r["n_exp"], radio: r["radio"])
            }
            return out
        }
    }

    /// The `aps` section of a `reference.json` (positions as ENU `e`, `n`, `u`).
    /// The `fingerprints` section of reference.json (docs/trace-format.md) for a map.
    public static func referenceJSON(_ map: FingerprintMap) -> [String: Any] {
        var d: [String: Any] = ["threshold_dbm": map.threshold]
        if let s = map.spacing { d["spacing_m"] = s }
        d["points"] = map.points.map { p -> [String: Any] in
            var o: [String: Any] = ["e": p.position.x, "n": p.position.y, "scans": p.scans, "rss": p.rss]
            if let f = p.floor { o["floor"] = f }
            return o
        }
        return d
    }

    /// The `aps` section (or with `key: "id"` the `ble` section) of a `reference.json`.
    public static func referenceJSON(_ aps: [AccessPoint], key: String = "bssid") -> [[String: Any]] {
        aps.sorted { $0.bssid < $1.bssid }.map { a in
            var d: [String: Any] = [key: a.bssid, "e": a.position.x, "n": a.position.y, "u": a.position.z]
            if let f = a.floor { d["floor"] = f }
            if let p = a.p0 { d["p0"] = p }
            if let n = a.pathLossExponent { d["n_exp"] = n }
            if let r = a.radio { d["radio"] = r }
            return d
        }
    }
}

extension JSONEncoder {
    /// Sorted keys (stable text in the database).
    static var sorted: JSONEncoder { let e = JSONEncoder(); e.outputFormatting = [.sortedKeys]; return e }
}
