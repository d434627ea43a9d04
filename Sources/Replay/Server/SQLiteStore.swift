import Foundation
import GRDB
import Positioning
import Replay

/// The embedded store: one SQLite file in WAL mode (GRDB `DatabasePool`: readers never wait
/// for the writer), `synchronous = FULL` so that a committed submission survives a power cut,
/// not only a killed process. The file holds the cell database (`celldb build`'s tables
/// `cells`, `cell_coverage`) and the radio map (`radiomap build`'s `aps`, `meta`), so a file
/// the CLI built is served as it is; `serve` adds `ap_samples`, `ble_samples` and `submissions`.
/// Bluetooth beacons live in the radio map's table `ble` (`radiomap build` writes it too).
public final class SQLiteStore: LocationStore {
    let pool: DatabasePool
    public let path: String

    /// `Learner.maxPointsPerArea` unless a test sets a smaller cap.
    let maxPointsPerArea: Int

    public init(path: String, maxPointsPerArea: Int = Learner.maxPointsPerArea) throws {
        self.path = path
        self.maxPointsPerArea = maxPointsPerArea
        // The CLI's schemas first (created when missing, migrated when old), then ours.
        _ = try CellDatabase(path: path)
        _ = try RadioMapDatabase(path: path)
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        pool = try DatabasePool(path: path, configuration: config)
        try pool.write { db in
            // The samples and pending marks of each kind of transmitter (`TransmitterTables`; the
            // maps `aps` and `ble` are the radio map's), one layout for both.
            for kind in TransmitterTables.kinds {
                let t = TransmitterTables.of(kind)
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS \(t.samples) (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, \(t.key) TEXT NOT NULL,
                        lat REAL NOT NULL, lon REAL NOT NULL, rss REAL NOT NULL);
                    CREATE INDEX IF NOT EXISTS \(t.samples)_\(t.key) ON \(t.samples)(\(t.key), seq);
                    CREATE TABLE IF NOT EXISTS \(t.pending) (\(t.key) TEXT PRIMARY KEY) WITHOUT ROWID;
                    """)
            }
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS coverage_sums (
                    rat TEXT NOT NULL, mcc INTEGER NOT NULL, mnc INTEGER NOT NULL, area INTEGER NOT NULL, cid INTEGER NOT NULL,
                    ta INTEGER NOT NULL, olat REAL NOT NULL, olon REAL NOT NULL, walks INTEGER NOT NULL, n INTEGER NOT NULL,
                    dof INTEGER NOT NULL, smx REAL NOT NULL, smy REAL NOT NULL, oee REAL NOT NULL, oen REAL NOT NULL, onn REAL NOT NULL,
                    wee REAL NOT NULL, wen REAL NOT NULL, wnn REAL NOT NULL, PRIMARY KEY (rat, mcc, mnc, area, cid, ta)) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS submissions (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, received REAL NOT NULL, items INTEGER NOT NULL, digest TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS submissions_digest ON submissions(digest);
                CREATE TABLE IF NOT EXISTS coverage_points (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT, rat TEXT NOT NULL, mcc INTEGER NOT NULL, mnc INTEGER NOT NULL,
                    area INTEGER NOT NULL, cid INTEGER NOT NULL, ta INTEGER NOT NULL, walk INTEGER NOT NULL, lat REAL NOT NULL, lon REAL NOT NULL);
                CREATE INDEX IF NOT EXISTS coverage_points_cell ON coverage_points(rat, mcc, mnc, area, cid, walk, seq);
                CREATE TABLE IF NOT EXISTS radio_changes (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT, cells TEXT NOT NULL, bssids TEXT NOT NULL, at REAL NOT NULL DEFAULT 0,
                    beacons TEXT NOT NULL DEFAULT '');
                CREATE TABLE IF NOT EXISTS radio_changes_pruned (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL);
                """)
            // A log written before rows had a time: its rows count as old (pruned first).
            try Self.addColumn(db, table: "radio_changes", column: "at", "REAL NOT NULL DEFAULT 0")
            // A log written before beacons were learned: its rows name none.
            try Self.addColumn(db, table: "radio_changes", column: "beacons", "TEXT NOT NULL DEFAULT ''")
        }
    }

    /// Adds `column` to `table` when an older schema lacks it (SQLite has no `ADD COLUMN IF NOT EXISTS`).
    static func addColumn(_ db: Database, table: String, column: String, _ definition: String) throws {
        if try !Row.fetchAll(db, sql: "PRAGMA table_info(\(table))").contains(where: { ($0["name"] as String?) == column }) {
            try db.execute(sql: "ALTER TABLE \(table) ADD COLUMN \(column) \(definition)")
        }
    }

    public func lookup(cells: Set<CellID>, bssids: Set<String>, beacons: Set<String>) async throws -> KnownRadios {
        // APs (beacons) with samples not yet in their estimate are re-fitted first (rare: the
        // refit service drains them within a fraction of a second), then read again, so an
        // answer never uses a stale AP. The common case is one read transaction, as before.
        let first = try await read(cells: cells, bssids: bssids, beacons: beacons)
        if first.pending.isEmpty && first.pendingBeacons.isEmpty { return first.known }
        try await pool.write { db in
            try Self.refit(db, names: first.pending.sorted(), kind: .wifi)
            try Self.refit(db, names: first.pendingBeacons.sorted(), kind: .ble)
        }
        return try await read(cells: cells, bssids: bssids, beacons: beacons).known
    }

    private func read(cells: Set<CellID>, bssids: Set<String>, beacons: Set<String>) async throws
        -> (known: KnownRadios, pending: [String], pendingBeacons: [String]) {
        try await pool.read { db in
            var out = KnownRadios()
            let cellKey = "rat = ? AND mcc = ? AND mnc = ? AND area = ? AND cid = ?"
            let ts = try db.cachedStatement(sql: "SELECT * FROM cells WHERE \(cellKey)")
            let cs = try db.cachedStatement(sql: "SELECT * FROM cell_coverage WHERE \(cellKey) ORDER BY ta")
            for c in cells.sorted(by: { $0.description < $1.description }) {
                let args: StatementArguments = [c.rat.rawValue, c.mcc, c.mnc, c.area, c.cid]
                out.towers += try Row.fetchAll(ts, arguments: args).compactMap(CellDatabase.tower)
                out.coverage += try Row.fetchAll(cs, arguments: args).compactMap(CellDatabase.coverageRecord)
            }
            let (aps, pending) = try Self.transmitters(db, bssids, kind: .wifi)
            out.aps = aps
            let (found, pendingBeacons) = beacons.isEmpty ? ([], []) : try Self.transmitters(db, beacons, kind: .ble)
            out.beacons = found
            return (out, pending, pendingBeacons)
        }
    }

    /// The learned transmitters of `kind` among `wanted` and which of them are pending, both in
    /// name order: two statements per batch of names for the whole request (one per AP each was
    /// 2 × 8 statements of the 18 a typical request made: 0.5 M instructions).
    private static func transmitters(_ db: Database, _ wanted: Set<String>, kind: Transmitters) throws -> (found: [LearnedAP], pending: [String]) {
        let t = TransmitterTables.of(kind)
        let names = wanted.sorted()
        var found: [String: LearnedAP] = [:], marked = Set<String>()
        var from = 0
        while from < names.count {
            let part = names[from..<min(from + Self.maxBatch, names.count)]
            from += part.count
            // The list is padded to a power of two with repeats of its last name (a repeat in
            // `IN` changes nothing), so a handful of cached statements serve every request.
            var arity = 1
            while arity < part.count { arity *= 2 }
            var list = Array(part)
            list += repeatElement(part.last!, count: arity - part.count)
            let marks = repeatElement("?", count: arity).joined(separator: ",")
            let args = StatementArguments(list)
            let sel = try db.cachedStatement(sql: "SELECT \(t.key), lat, lon, floor, p0, n_exp, samples, model_fitted FROM \(t.map) WHERE \(t.key) IN (\(marks))")
            let rows = try Row.fetchCursor(sel, arguments: args)
            while let r = try rows.next() { let a = Self.ap(r); found[a.bssid] = a }
            let ps = try db.cachedStatement(sql: "SELECT \(t.key) FROM \(t.pending) WHERE \(t.key) IN (\(marks))")
            marked.formUnion(try String.fetchAll(ps, arguments: args))
        }
        // In name order, as the per-AP statements gave them.
        var list: [LearnedAP] = [], pending: [String] = []
        for b in names {
            if let a = found[b] { list.append(a) }
            if marked.contains(b) { pending.append(b) }
        }
        return (list, pending)
    }

    /// Most names bound in one `IN (…)` list (SQLite allows 32,766 parameters).
    static let maxBatch = 512

    static func ap(_ r: Row) -> LearnedAP {
        // By position (the column list of the SELECTs above): a look-up by name searches the columns.
        LearnedAP(bssid: r[0], position: Geodetic(latitude: r[1], longitude: r[2]), floor: r[3], p0: r[4],
                  pathLossExponent: r[5], samples: r[6], modelFitted: r[7])
    }

    public func areaCoverage(of cells: Set<CellID>) async throws -> [CellCoverageRecord] {
        try await pool.read { db in
            var out: [CellCoverageRecord] = []
            let areas = Set(cells.map { CellID(rat: $0.rat, mcc: $0.mcc, mnc: $0.mnc, area: $0.area, cid: 0) })
            for a in areas.sorted(by: { $0.description < $1.description }) {
                out += try Row.fetchAll(db, sql: "SELECT * FROM cell_coverage WHERE rat = ? AND mcc = ? AND mnc = ? AND area = ? AND ta = -1",
                                        arguments: [a.rat.rawValue, a.mcc, a.mnc, a.area]).compactMap(CellDatabase.coverageRecord)
            }
            return out
        }
    }

    public func submit(_ items: [Submission], digest: String) async throws {
        let samples = Learner.samples(items, of: .wifi), beaconSamples = Learner.samples(items, of: .ble)
        let cells = RadioChanges.servingCells(items)
        try await pool.write { db in
            var seed: [CellCoverageRecord] = [], state: [Learner.CoverageState] = [], points: [Learner.CoveragePoint] = []
            let cs = try db.cachedStatement(sql: "SELECT * FROM cell_coverage WHERE rat = ? AND mcc = ? AND mnc = ? AND area = ? AND cid = ?")
            let ps = try db.cachedStatement(sql: """
                SELECT ta, walk, lat, lon FROM coverage_points WHERE rat = ? AND mcc = ? AND mnc = ? AND area = ? AND cid = ? ORDER BY walk, seq
                """)
            let ss = try db.cachedStatement(sql: "SELECT * FROM coverage_sums WHERE rat = ? AND mcc = ? AND mnc = ? AND area = ? AND cid = ?")
            for c in cells {
                let args: StatementArguments = [c.rat.rawValue, c.mcc, c.mnc, c.area, c.cid]
                seed += try Row.fetchAll(cs, arguments: args).compactMap(CellDatabase.coverageRecord)
                for r in try Row.fetchAll(ss, arguments: args) {
                    let ta: Int = r["ta"]
                    var w = CellCoverageMap.WalkSums()
                    w.walks = r["walks"]; w.count = r["n"]; w.dof = r["dof"]; w.sumMean = SIMD2(r["smx"], r["smy"])
                    w.sumOuter = Covariance2(ee: r["oee"], en: r["oen"], nn: r["onn"]); w.scatter = Covariance2(ee: r["wee"], en: r["wen"], nn: r["wnn"])
                    state.append(.init(key: .init(cell: c, timingAdvance: ta < 0 ? nil : ta), origin: Geodetic(latitude: r["olat"], longitude: r["olon"]), sums: w))
                }
                let rows = try Row.fetchCursor(ps, arguments: args)
                while let r = try rows.next() {
                    points.append(.init(key: .init(cell: c, timingAdvance: r[0]), walk: r[1], position: Geodetic(latitude: r[2], longitude: r[3])))
                }
            }
            let learned = Learner.coverage(items, state: state, seed: seed, points: points, maxPoints: self.maxPointsPerArea)
            let addPoint = try db.cachedStatement(sql: "INSERT INTO coverage_points (rat, mcc, mnc, area, cid, ta, walk, lat, lon) VALUES (?,?,?,?,?,?,?,?,?)")
            for p in learned.points {
                let c = p.key.cell
                try addPoint.execute(arguments: [c.rat.rawValue, c.mcc, c.mnc, c.area, c.cid, p.key.timingAdvance ?? -1, p.walk,
                                                 p.position.latitude, p.position.longitude])
            }
            // The cap (`Learner.maxPointsPerArea`): an area keeps its newest positions.
            let cap = try db.cachedStatement(sql: """
                DELETE FROM coverage_points WHERE seq IN (SELECT seq FROM coverage_points
                    WHERE rat = ? AND mcc = ? AND mnc = ? AND area = ? AND cid = ? AND ta = ? ORDER BY walk DESC, seq DESC LIMIT -1 OFFSET ?)
                """)
            for k in Learner.areas(of: learned.points) {
                let c = k.cell
                try cap.execute(arguments: [c.rat.rawValue, c.mcc, c.mnc, c.area, c.cid, k.timingAdvance ?? -1, maxPointsPerArea])
            }
            try CellDatabase.insert([], coverage: learned.records, db: db)
            let up = try db.cachedStatement(sql: "INSERT OR REPLACE INTO coverage_sums VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
            for x in learned.state {
                let c = x.key.cell, w = x.sums
                try up.execute(arguments: [c.rat.rawValue, c.mcc, c.mnc, c.area, c.cid, x.key.timingAdvance ?? -1, x.origin.latitude,
                                           x.origin.longitude, w.walks, w.count, w.dof, w.sumMean.x, w.sumMean.y, w.sumOuter.ee,
                                           w.sumOuter.en, w.sumOuter.nn, w.scatter.ee, w.scatter.en, w.scatter.nn])
            }

            // The samples and the names of the APs (beacons) they change are durable with the
            // submission; the estimates are re-fitted outside it (`refitPending`; reads re-fit first).
            for (kind, list) in [(Transmitters.wifi, samples), (.ble, beaconSamples)] where !list.isEmpty {
                let t = TransmitterTables.of(kind)
                let ins = try db.cachedStatement(sql: "INSERT INTO \(t.samples) (\(t.key), lat, lon, rss) VALUES (?, ?, ?, ?)")
                for s in list { try ins.execute(arguments: [s.bssid, s.position.latitude, s.position.longitude, s.rss]) }
                let mark = try db.cachedStatement(sql: "INSERT OR IGNORE INTO \(t.pending) (\(t.key)) VALUES (?)")
                for b in Set(list.map(\.bssid)).sorted() { try mark.execute(arguments: [b]) }
            }
            _ = try Self.mapOrigin(db, default: (samples.first ?? beaconSamples.first)?.position)
            let now = Date().timeIntervalSince1970
            try db.execute(sql: "INSERT INTO submissions (received, items, digest) VALUES (?, ?, ?)",
                           arguments: [now, items.count, digest])
            let changed = RadioChanges.of(cells: cells, samples: samples, beaconSamples: beaconSamples)
            if !changed.isEmpty {
                let row = RadioChanges.rowText(changed)
                try db.execute(sql: "INSERT INTO radio_changes (cells, bssids, beacons, at) VALUES (?, ?, ?, ?)",
                               arguments: [row.cells, row.bssids, row.beacons, now])
            }
        }
    }

    public func changes(after: Int64?) async throws -> RadioChanges {
        try await pool.read { db in
            // Cached statements: a replica reads the log every `--snapshot-refresh` (0.25 s), and
            // compiling the two statements each time was half of a read's instructions.
            // The log's end: its last row, or the pruned-through mark when every row is gone.
            let through = try Int64.fetchOne(db.cachedStatement(sql: "SELECT through FROM radio_changes_pruned WHERE id = 1")) ?? 0
            func end() throws -> Int64 {
                max(try Int64.fetchOne(db.cachedStatement(sql: "SELECT COALESCE(MAX(seq), 0) FROM radio_changes")) ?? 0, through)
            }
            guard let after else { return RadioChanges(last: try end()) }
            let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT seq, cells, bssids, beacons FROM radio_changes WHERE seq > ? ORDER BY seq LIMIT ?"),
                                        arguments: [after, RadioChanges.limit + 1])
            var out = RadioChanges(last: after)
            if rows.count > RadioChanges.limit || after < through {
                return RadioChanges(last: try end(), overflow: true)
            }
            for r in rows { out.add(seq: r[0], cells: r[1], bssids: r[2], beacons: r[3]) }
            return out
        }
    }

    public func pruneChanges(before cutoff: Double) async throws -> Int {
        try await pool.write { db in
            let keep = try Int64.fetchOne(db, sql: "SELECT seq FROM radio_changes WHERE at >= ? ORDER BY seq LIMIT 1", arguments: [cutoff])
            let last = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM radio_changes WHERE seq < ?", arguments: [keep ?? Int64.max])
            guard let last else { return 0 }
            try db.execute(sql: "DELETE FROM radio_changes WHERE seq <= ?", arguments: [last])
            let n = db.changesCount
            let old = try Int64.fetchOne(db, sql: "SELECT through FROM radio_changes_pruned WHERE id = 1") ?? 0
            try db.execute(sql: "INSERT OR REPLACE INTO radio_changes_pruned (id, through) VALUES (1, ?)", arguments: [max(old, last)])
            return n
        }
    }

    public func refitPending(limit: Int) async throws -> Int {
        var done = 0
        for kind in TransmitterTables.kinds where done < limit {
            let t = TransmitterTables.of(kind)
            done += try await pool.write { [done] db in
                let names = try String.fetchAll(db, sql: "SELECT \(t.key) FROM \(t.pending) ORDER BY \(t.key) LIMIT ?", arguments: [limit - done])
                try Self.refit(db, names: names, kind: kind)
                return names.count
            }
        }
        return done
    }

    /// Re-fits the APs (beacons) `names` from their newest samples (`Learner.estimate`, `radiomap
    /// build`'s estimator) and clears their pending marks, in the caller's transaction.
    static func refit(_ db: Database, names: [String], kind: Transmitters) throws {
        guard !names.isEmpty else { return }
        let t = TransmitterTables.of(kind)
        let origin = try mapOrigin(db, default: nil)
        let sel = try db.cachedStatement(sql: "SELECT lat, lon, rss FROM \(t.samples) WHERE \(t.key) = ? ORDER BY seq DESC LIMIT ?")
        let upAP = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO \(t.map) (\(t.key), e, n, u, lat, lon, floor, p0, n_exp, radio, samples, model_fitted)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)
            """)
        let done = try db.cachedStatement(sql: "DELETE FROM \(t.pending) WHERE \(t.key) = ?")
        for b in names {
            try done.execute(arguments: [b])
            let rows = try Row.fetchAll(sel, arguments: [b, Learner.maxSamplesPerAP]).reversed()
            let all = rows.map { APSample(bssid: b, position: Geodetic(latitude: $0["lat"], longitude: $0["lon"]), rss: $0["rss"]) }
            guard let ap = Learner.estimate(bssid: b, samples: all, kind: kind), let origin else { continue }
            let v = LocalFrame(origin: origin).enu(ap.position)
            try upAP.execute(arguments: [ap.bssid, v.x, v.y, v.z, ap.position.latitude, ap.position.longitude, ap.floor, ap.p0,
                                       ap.pathLossExponent, ap.samples, ap.modelFitted])
        }
    }

    /// The radio map's frame origin (`radiomap build` writes it; the first sample sets it otherwise).
    static func mapOrigin(_ db: Database, default d: Geodetic?) throws -> Geodetic? {
        if let s = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'origin'") {
            let v = s.split(separator: ",").compactMap { Double($0) }
            if v.count == 3 { return Geodetic(latitude: v[0], longitude: v[1], height: v[2]) }
        }
        guard let d else { return nil }
        try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('origin', ?)", arguments: ["\(d.latitude),\(d.longitude),0.0"])
        return Geodetic(latitude: d.latitude, longitude: d.longitude)
    }

    public func statistics() async throws -> StoreStatistics {
        while try await refitPending(limit: 256) > 0 {}          // the counts include every acknowledged AP and beacon
        return try await pool.read { db in
            StoreStatistics(cells: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM cell_coverage WHERE ta = -1") ?? 0,
                            coverageAreas: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM cell_coverage") ?? 0,
                            aps: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM aps") ?? 0,
                            submissions: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM submissions") ?? 0,
                            beacons: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ble") ?? 0)
        }
    }

    public func integrityCheck() async throws -> String {
        try await pool.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
    }

    public func close() async throws { try pool.close() }
}
