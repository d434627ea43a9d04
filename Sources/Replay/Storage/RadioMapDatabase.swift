import Foundation
import GRDB
import Positioning

/// The radio map: estimated AP positions in SQLite (GRDB), table `aps` keyed by BSSID, plus
/// the ENU frame origin they are expressed in (table `meta`). Writes are transactional.
public final class RadioMapDatabase {
    public let queue: DatabaseQueue

    public init(path: String) throws { queue = try DatabaseQueue(path: path); try migrate() }
    public init() throws { queue = try DatabaseQueue(); try migrate() }

    private func migrate() throws {
        var m = DatabaseMigrator()
        m.registerMigration("radiomap-v1") { db in
            try db.create(table: "aps") { t in
                t.primaryKey("bssid", .text)
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
            try db.create(table: "meta") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
        }
        try m.migrate(queue)
    }

    /// Replaces the whole map with `estimates` in `frame`, in one transaction.
    public func replace(with estimates: [APMapEstimator.Estimate], frame: LocalFrame) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM aps")
            let st = try db.cachedStatement(sql: """
                INSERT INTO aps(bssid, e, n, u, lat, lon, floor, p0, n_exp, radio, samples, model_fitted)
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

    public var origin: Geodetic? {
        guard let s = try? queue.read({ db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'origin'") }) else { return nil }
        let v = s.split(separator: ",").compactMap { Double($0) }
        return v.count == 3 ? Geodetic(latitude: v[0], longitude: v[1], height: v[2]) : nil
    }

    /// The AP map in the map's own frame.
    public func accessPoints() throws -> [String: AccessPoint] {
        try queue.read { db in
            var out: [String: AccessPoint] = [:]
            for r in try Row.fetchAll(db, sql: "SELECT * FROM aps") {
                let b: String = r["bssid"]
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

    public static func referenceJSON(_ aps: [AccessPoint]) -> [[String: Any]] {
        aps.sorted { $0.bssid < $1.bssid }.map { a in
            var d: [String: Any] = ["bssid": a.bssid, "e": a.position.x, "n": a.position.y, "u": a.position.z]
            if let f = a.floor { d["floor"] = f }
            if let p = a.p0 { d["p0"] = p }
            if let n = a.pathLossExponent { d["n_exp"] = n }
            if let r = a.radio { d["radio"] = r }
            return d
        }
    }
}
