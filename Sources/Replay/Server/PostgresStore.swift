import Foundation
import Logging
import Positioning
import PostgresNIO
import Replay

/// The shared store of several `serve` replicas: PostgreSQL through postgres-nio
/// (`PostgresClient`, a connection pool). The tables are those of the SQLite store (the cell
/// database's `cells` and `cell_coverage`, the radio map's `aps` and `ble`, and `ap_samples`,
/// `ble_samples`, `submissions`). A submission is one transaction that first takes a transaction-scoped
/// advisory lock, so the read–merge–write of coverage areas and AP estimates is serialised
/// across replicas (no lost update; the price: submissions are learned one at a time, lookups
/// are not blocked). The client's `run()` must be running (`Server` adds it to its services).
public final class PostgresStore: LocationStore {
    public let client: PostgresClient
    let logger: Logger
    /// The advisory lock key of submissions (an arbitrary constant: "posfuse" in ASCII).
    static let lockKey: Int64 = 0x706f_7366_7573_65

    /// The schema of the tables (`?schema=NAME` in the URL; default: the server's search path).
    public let schema: String?

    /// `url`: postgres://user:password@host:port/database[?schema=NAME] (TLS off: a replica and
    /// its database share a private network; put TLS in front otherwise).
    /// `Learner.maxPointsPerArea` unless a test sets a smaller cap.
    let maxPointsPerArea: Int

    public init(url: String, logger: Logger, maxPointsPerArea: Int = Learner.maxPointsPerArea) throws {
        self.maxPointsPerArea = maxPointsPerArea
        guard let u = URLComponents(string: url), u.scheme == "postgres" || u.scheme == "postgresql", let host = u.host else {
            throw ServeError.configuration("--db: expected postgres://user:password@host:port/database, got a malformed URL")
        }
        let db = u.path.hasPrefix("/") ? String(u.path.dropFirst()) : u.path
        var config = PostgresClient.Configuration(host: host, port: u.port ?? 5432, username: u.user ?? "postgres",
                                                  password: u.password, database: db.isEmpty ? nil : db, tls: .disable)
        config.options.connectTimeout = .seconds(5)
        schema = u.queryItems?.first { $0.name == "schema" }?.value
        if let sc = schema {
            guard !sc.isEmpty, sc.count <= 63, sc.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }) else {
                throw ServeError.configuration("--db: ?schema= must be 1-63 characters a-z, 0-9, _")
            }
            config.options.additionalStartupParameters = [("search_path", sc)]
        }
        client = PostgresClient(configuration: config, backgroundLogger: logger)
        self.logger = logger
    }

    /// Creates the tables (idempotent; concurrent replicas serialise on the advisory lock).
    public func migrate() async throws {
        try await client.withTransaction(logger: logger) { c in
            _ = try await c.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
            if let sc = self.schema { _ = try await c.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(sc)"), logger: logger) }
            for sql in Self.tables { _ = try await c.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
        }
    }

    static let tables = [
        """
        CREATE TABLE IF NOT EXISTS cells (
            rat TEXT NOT NULL, mcc BIGINT NOT NULL, mnc BIGINT NOT NULL, area BIGINT NOT NULL, cid BIGINT NOT NULL,
            lat DOUBLE PRECISION NOT NULL, lon DOUBLE PRECISION NOT NULL, h DOUBLE PRECISION NOT NULL DEFAULT 0,
            range_m DOUBLE PRECISION, samples BIGINT, pci BIGINT, azimuth_deg DOUBLE PRECISION, beamwidth_deg DOUBLE PRECISION,
            provenance TEXT NOT NULL, updated BIGINT, PRIMARY KEY (rat, mcc, mnc, area, cid))
        """,
        """
        CREATE TABLE IF NOT EXISTS cell_coverage (
            rat TEXT NOT NULL, mcc BIGINT NOT NULL, mnc BIGINT NOT NULL, area BIGINT NOT NULL, cid BIGINT NOT NULL, ta BIGINT NOT NULL,
            lat DOUBLE PRECISION NOT NULL, lon DOUBLE PRECISION NOT NULL, h DOUBLE PRECISION NOT NULL DEFAULT 0,
            cov_ee DOUBLE PRECISION NOT NULL, cov_en DOUBLE PRECISION NOT NULL, cov_nn DOUBLE PRECISION NOT NULL, n BIGINT NOT NULL,
            walks BIGINT NOT NULL DEFAULT 1, scale DOUBLE PRECISION NOT NULL DEFAULT 1, PRIMARY KEY (rat, mcc, mnc, area, cid, ta))
        """,
        // A table created before the coverage scale (25 Nov 2026): 1, the model alone.
        "ALTER TABLE cell_coverage ADD COLUMN IF NOT EXISTS scale DOUBLE PRECISION NOT NULL DEFAULT 1",
        """
        CREATE TABLE IF NOT EXISTS coverage_sums (
            rat TEXT NOT NULL, mcc BIGINT NOT NULL, mnc BIGINT NOT NULL, area BIGINT NOT NULL, cid BIGINT NOT NULL, ta BIGINT NOT NULL,
            olat DOUBLE PRECISION NOT NULL, olon DOUBLE PRECISION NOT NULL, walks BIGINT NOT NULL, n BIGINT NOT NULL, dof BIGINT NOT NULL,
            smx DOUBLE PRECISION NOT NULL, smy DOUBLE PRECISION NOT NULL, oee DOUBLE PRECISION NOT NULL, oen DOUBLE PRECISION NOT NULL,
            onn DOUBLE PRECISION NOT NULL, wee DOUBLE PRECISION NOT NULL, wen DOUBLE PRECISION NOT NULL, wnn DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (rat, mcc, mnc, area, cid, ta))
        """,
        """
        CREATE TABLE IF NOT EXISTS submissions (
            id BIGSERIAL PRIMARY KEY, received DOUBLE PRECISION NOT NULL, items BIGINT NOT NULL, digest TEXT NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS submissions_digest ON submissions(digest)",
        """
        CREATE TABLE IF NOT EXISTS coverage_points (
            seq BIGSERIAL PRIMARY KEY, rat TEXT NOT NULL, mcc BIGINT NOT NULL, mnc BIGINT NOT NULL, area BIGINT NOT NULL, cid BIGINT NOT NULL,
            ta BIGINT NOT NULL, walk BIGINT NOT NULL, lat DOUBLE PRECISION NOT NULL, lon DOUBLE PRECISION NOT NULL)
        """,
        "CREATE INDEX IF NOT EXISTS coverage_points_cell ON coverage_points(rat, mcc, mnc, area, cid, walk, seq)",
        "CREATE TABLE IF NOT EXISTS radio_changes (seq BIGSERIAL PRIMARY KEY, cells TEXT NOT NULL, bssids TEXT NOT NULL)",
        // A log written before rows had a time: its rows count as old (pruned first).
        "ALTER TABLE radio_changes ADD COLUMN IF NOT EXISTS at DOUBLE PRECISION NOT NULL DEFAULT 0",
        "CREATE TABLE IF NOT EXISTS radio_changes_pruned (id INT PRIMARY KEY CHECK (id = 1), through BIGINT NOT NULL)",
        // A log written before beacons were learned (2 Dec 2026) names no beacon.
        "ALTER TABLE radio_changes ADD COLUMN IF NOT EXISTS beacons TEXT NOT NULL DEFAULT ''",
    ] + TransmitterTables.kinds.flatMap { transmitterTables(.of($0)) }

    /// The tables of one kind of transmitter (`TransmitterTables`: `aps`, `ap_samples`,
    /// `ap_pending` keyed by `bssid`; `ble`, `ble_samples`, `ble_pending` keyed by the beacon's `id`):
    /// one layout for both.
    static func transmitterTables(_ t: TransmitterTables) -> [String] {
        ["""
         CREATE TABLE IF NOT EXISTS \(t.map) (
             \(t.key) TEXT PRIMARY KEY, lat DOUBLE PRECISION NOT NULL, lon DOUBLE PRECISION NOT NULL, floor BIGINT,
             p0 DOUBLE PRECISION, n_exp DOUBLE PRECISION, samples BIGINT NOT NULL, model_fitted BOOLEAN NOT NULL)
         """,
         """
         CREATE TABLE IF NOT EXISTS \(t.samples) (
             seq BIGSERIAL PRIMARY KEY, \(t.key) TEXT NOT NULL, lat DOUBLE PRECISION NOT NULL, lon DOUBLE PRECISION NOT NULL,
             rss DOUBLE PRECISION NOT NULL)
         """,
         "CREATE INDEX IF NOT EXISTS \(t.samples)_\(t.key) ON \(t.samples)(\(t.key), seq)",
         "CREATE TABLE IF NOT EXISTS \(t.pending) (\(t.key) TEXT PRIMARY KEY)"]
    }

    typealias CoverageRow = (String, Int, Int, Int, Int, Int, Double, Double, Double, Double, Double, Double, Int, Int, Double)
    static let coverageColumns = "rat, mcc, mnc, area, cid, ta, lat, lon, h, cov_ee, cov_en, cov_nn, n, walks, scale"

    static func coverage(_ r: CoverageRow) -> CellCoverageRecord? {
        guard let rat = RAT(rawValue: r.0) else { return nil }
        return CellCoverageRecord(cell: CellID(rat: rat, mcc: r.1, mnc: r.2, area: r.3, cid: r.4), ta: r.5 < 0 ? nil : r.5,
                                  position: Geodetic(latitude: r.6, longitude: r.7, height: r.8),
                                  covariance: Covariance2(ee: r.9, en: r.10, nn: r.11), count: r.12, walks: r.13,
                                  scale: r.14 > 0 && r.14.isFinite ? r.14 : 1)
    }

    static func coverageRows(_ c: PostgresConnection, cell: CellID, logger: Logger) async throws -> [CellCoverageRecord] {
        let rows = try await c.query("""
            SELECT \(unescaped: Self.coverageColumns) FROM cell_coverage
            WHERE rat = \(cell.rat.rawValue) AND mcc = \(cell.mcc) AND mnc = \(cell.mnc) AND area = \(cell.area) AND cid = \(cell.cid)
            ORDER BY ta
            """, logger: logger)
        var out: [CellCoverageRecord] = []
        for try await r in rows.decode(CoverageRow.self) { if let x = coverage(r) { out.append(x) } }
        return out
    }

    public func lookup(cells: Set<CellID>, bssids: Set<String>, beacons: Set<String>) async throws -> KnownRadios {
        let logger = self.logger
        // APs (beacons) with samples not yet in their estimate are re-fitted first (see
        // `LocationStore.submit`). One statement for all the request's APs (`= ANY` of a text
        // array), one for its beacons, in name order.
        let wanted: [(Transmitters, [String])] = [(.wifi, bssids.sorted()), (.ble, beacons.sorted())]
        for (kind, names) in wanted where !names.isEmpty {
            let t = TransmitterTables.of(kind)
            let pending: [String] = try await client.withConnection { c in
                var marked = Set<String>()
                for try await b in try await c.query("SELECT \(unescaped: t.key) FROM \(unescaped: t.pending) WHERE \(unescaped: t.key) = ANY(\(names))",
                                                     logger: logger).decode(String.self) {
                    marked.insert(b)
                }
                return names.filter(marked.contains)
            }
            if !pending.isEmpty { try await refit(pending, kind: kind) }
        }
        return try await client.withConnection { c in
            var out = KnownRadios()
            for cell in cells.sorted(by: { $0.description < $1.description }) {
                let rows = try await c.query("""
                    SELECT lat, lon, h, range_m, samples, pci, azimuth_deg, beamwidth_deg, provenance, updated FROM cells
                    WHERE rat = \(cell.rat.rawValue) AND mcc = \(cell.mcc) AND mnc = \(cell.mnc) AND area = \(cell.area) AND cid = \(cell.cid)
                    """, logger: logger)
                for try await r in rows.decode((Double, Double, Double, Double?, Int?, Int?, Double?, Double?, String, Int?).self) {
                    out.towers.append(CellTower(cell: cell, position: Geodetic(latitude: r.0, longitude: r.1, height: r.2), range: r.3,
                                                samples: r.4, pci: r.5, azimuth: r.6, beamwidth: r.7, provenance: r.8, updated: r.9))
                }
                out.coverage += try await Self.coverageRows(c, cell: cell, logger: logger)
            }
            for (kind, names) in wanted where !names.isEmpty {
                let t = TransmitterTables.of(kind)
                var found: [String: LearnedAP] = [:]
                let rows = try await c.query("""
                    SELECT \(unescaped: t.key), lat, lon, floor, p0, n_exp, samples, model_fitted FROM \(unescaped: t.map)
                    WHERE \(unescaped: t.key) = ANY(\(names))
                    """, logger: logger)
                for try await r in rows.decode((String, Double, Double, Int?, Double?, Double?, Int, Bool).self) {
                    found[r.0] = LearnedAP(bssid: r.0, position: Geodetic(latitude: r.1, longitude: r.2), floor: r.3, p0: r.4,
                                           pathLossExponent: r.5, samples: r.6, modelFitted: r.7)
                }
                for b in names { if let a = found[b] { out[kind].append(a) } }
            }
            return out
        }
    }

    public func areaCoverage(of cells: Set<CellID>) async throws -> [CellCoverageRecord] {
        let logger = self.logger
        let areas = Set(cells.map { CellID(rat: $0.rat, mcc: $0.mcc, mnc: $0.mnc, area: $0.area, cid: 0) })
        return try await client.withConnection { c in
            var out: [CellCoverageRecord] = []
            for a in areas.sorted(by: { $0.description < $1.description }) {
                let rows = try await c.query("""
                    SELECT \(unescaped: Self.coverageColumns) FROM cell_coverage
                    WHERE rat = \(a.rat.rawValue) AND mcc = \(a.mcc) AND mnc = \(a.mnc) AND area = \(a.area) AND ta = -1
                    """, logger: logger)
                for try await r in rows.decode(CoverageRow.self) { if let x = Self.coverage(r) { out.append(x) } }
            }
            return out
        }
    }

    public func submit(_ items: [Submission], digest: String) async throws {
        let logger = self.logger
        let samples = Learner.samples(items, of: .wifi), beaconSamples = Learner.samples(items, of: .ble)
        let cells = RadioChanges.servingCells(items)
        try await client.withTransaction(logger: logger) { c in
            _ = try await c.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
            var seed: [CellCoverageRecord] = [], state: [Learner.CoverageState] = [], points: [Learner.CoveragePoint] = []
            for cell in cells {
                let prows = try await c.query("""
                    SELECT ta, walk, lat, lon FROM coverage_points
                    WHERE rat = \(cell.rat.rawValue) AND mcc = \(cell.mcc) AND mnc = \(cell.mnc) AND area = \(cell.area) AND cid = \(cell.cid)
                    ORDER BY walk, seq
                    """, logger: logger)
                for try await r in prows.decode((Int, Int, Double, Double).self) {
                    points.append(.init(key: .init(cell: cell, timingAdvance: r.0), walk: r.1, position: Geodetic(latitude: r.2, longitude: r.3)))
                }
                seed += try await Self.coverageRows(c, cell: cell, logger: logger)
                let rows = try await c.query("""
                    SELECT ta, olat, olon, walks, n, dof, smx, smy, oee, oen, onn, wee, wen, wnn FROM coverage_sums
                    WHERE rat = \(cell.rat.rawValue) AND mcc = \(cell.mcc) AND mnc = \(cell.mnc) AND area = \(cell.area) AND cid = \(cell.cid)
                    """, logger: logger)
                for try await r in rows.decode((Int, Double, Double, Int, Int, Int, Double, Double, Double, Double, Double, Double, Double, Double).self) {
                    var w = CellCoverageMap.WalkSums()
                    w.walks = r.3; w.count = r.4; w.dof = r.5; w.sumMean = SIMD2(r.6, r.7)
                    w.sumOuter = Covariance2(ee: r.8, en: r.9, nn: r.10); w.scatter = Covariance2(ee: r.11, en: r.12, nn: r.13)
                    state.append(.init(key: .init(cell: cell, timingAdvance: r.0 < 0 ? nil : r.0), origin: Geodetic(latitude: r.1, longitude: r.2), sums: w))
                }
            }
            let learned = Learner.coverage(items, state: state, seed: seed, points: points, maxPoints: self.maxPointsPerArea)
            for p in learned.points {
                let k = p.key.cell
                _ = try await c.query("""
                    INSERT INTO coverage_points (rat, mcc, mnc, area, cid, ta, walk, lat, lon) VALUES (\(k.rat.rawValue), \(k.mcc), \(k.mnc),
                        \(k.area), \(k.cid), \(p.key.timingAdvance ?? -1), \(p.walk), \(p.position.latitude), \(p.position.longitude))
                    """, logger: logger)
            }
            // The cap (`Learner.maxPointsPerArea`): an area keeps its newest positions.
            for key in Learner.areas(of: learned.points) {
                let k = key.cell
                _ = try await c.query("""
                    DELETE FROM coverage_points WHERE seq IN (SELECT seq FROM coverage_points
                        WHERE rat = \(k.rat.rawValue) AND mcc = \(k.mcc) AND mnc = \(k.mnc) AND area = \(k.area) AND cid = \(k.cid)
                        AND ta = \(key.timingAdvance ?? -1) ORDER BY walk DESC, seq DESC OFFSET \(self.maxPointsPerArea))
                    """, logger: logger)
            }
            for r in learned.records {
                _ = try await c.query("""
                    INSERT INTO cell_coverage (\(unescaped: Self.coverageColumns)) VALUES (\(r.cell.rat.rawValue), \(r.cell.mcc), \(r.cell.mnc),
                        \(r.cell.area), \(r.cell.cid), \(r.ta ?? -1), \(r.position.latitude), \(r.position.longitude), \(r.position.height),
                        \(r.covariance.ee), \(r.covariance.en), \(r.covariance.nn), \(r.count), \(r.walks), \(r.scale))
                    ON CONFLICT (rat, mcc, mnc, area, cid, ta) DO UPDATE SET lat = EXCLUDED.lat, lon = EXCLUDED.lon, h = EXCLUDED.h,
                        cov_ee = EXCLUDED.cov_ee, cov_en = EXCLUDED.cov_en, cov_nn = EXCLUDED.cov_nn, n = EXCLUDED.n, walks = EXCLUDED.walks,
                        scale = EXCLUDED.scale
                    """, logger: logger)
            }
            for x in learned.state {
                let k = x.key.cell, w = x.sums
                _ = try await c.query("""
                    INSERT INTO coverage_sums VALUES (\(k.rat.rawValue), \(k.mcc), \(k.mnc), \(k.area), \(k.cid), \(x.key.timingAdvance ?? -1),
                        \(x.origin.latitude), \(x.origin.longitude), \(w.walks), \(w.count), \(w.dof), \(w.sumMean.x), \(w.sumMean.y),
                        \(w.sumOuter.ee), \(w.sumOuter.en), \(w.sumOuter.nn), \(w.scatter.ee), \(w.scatter.en), \(w.scatter.nn))
                    ON CONFLICT (rat, mcc, mnc, area, cid, ta) DO UPDATE SET walks = EXCLUDED.walks, n = EXCLUDED.n, dof = EXCLUDED.dof,
                        smx = EXCLUDED.smx, smy = EXCLUDED.smy, oee = EXCLUDED.oee, oen = EXCLUDED.oen, onn = EXCLUDED.onn,
                        wee = EXCLUDED.wee, wen = EXCLUDED.wen, wnn = EXCLUDED.wnn
                    """, logger: logger)
            }
            for (kind, list) in [(Transmitters.wifi, samples), (.ble, beaconSamples)] where !list.isEmpty {
                let t = TransmitterTables.of(kind)
                for s in list {
                    _ = try await c.query("""
                        INSERT INTO \(unescaped: t.samples) (\(unescaped: t.key), lat, lon, rss)
                        VALUES (\(s.bssid), \(s.position.latitude), \(s.position.longitude), \(s.rss))
                        """, logger: logger)
                }
                // The APs (beacons) these samples change are marked pending, durably with the
                // submission; their estimates are re-fitted outside it (`refitPending`; reads re-fit first).
                for b in Set(list.map(\.bssid)).sorted() {
                    _ = try await c.query("INSERT INTO \(unescaped: t.pending) (\(unescaped: t.key)) VALUES (\(b)) ON CONFLICT DO NOTHING", logger: logger)
                }
            }
            let now = Date().timeIntervalSince1970
            _ = try await c.query("INSERT INTO submissions (received, items, digest) VALUES (\(now), \(items.count), \(digest))",
                                  logger: logger)
            // The change log row (`LocationStore.changes`): its sequence value is taken under the
            // advisory lock, so the log's order is the commit order.
            let changed = RadioChanges.of(cells: cells, samples: samples, beaconSamples: beaconSamples)
            if !changed.isEmpty {
                let row = RadioChanges.rowText(changed)
                _ = try await c.query("INSERT INTO radio_changes (cells, bssids, beacons, at) VALUES (\(row.cells), \(row.bssids), \(row.beacons), \(now))",
                                      logger: logger)
            }
        }
    }

    public func changes(after: Int64?) async throws -> RadioChanges {
        let logger = self.logger
        return try await client.withConnection { c in
            func one(_ q: PostgresQuery) async throws -> Int64 {
                var m: Int64 = 0
                for try await v in try await c.query(q, logger: logger).decode(Int64.self) { m = v }
                return m
            }
            // The pruned-through mark is read after the rows: a prune that removed rows before
            // they were read has raised it by then (it commits rows and mark together).
            func through() async throws -> Int64 {
                try await one("SELECT COALESCE(MAX(through), 0)::BIGINT FROM radio_changes_pruned")
            }
            // The log's end: its last row, or the pruned-through mark when every row is gone.
            func end() async throws -> Int64 {
                max(try await one("SELECT COALESCE(MAX(seq), 0)::BIGINT FROM radio_changes"), try await through())
            }
            guard let after else { return RadioChanges(last: try await end()) }
            var out = RadioChanges(last: after)
            var n = 0
            let rows = try await c.query("SELECT seq, cells, bssids, beacons FROM radio_changes WHERE seq > \(after) ORDER BY seq LIMIT \(RadioChanges.limit + 1)",
                                         logger: logger)
            for try await r in rows.decode((Int64, String, String, String).self) {
                n += 1
                out.add(seq: r.0, cells: r.1, bssids: r.2, beacons: r.3)
            }
            let pruned = try await through()
            if n > RadioChanges.limit || after < pruned { return RadioChanges(last: try await end(), overflow: true) }
            return out
        }
    }

    public func pruneChanges(before cutoff: Double) async throws -> Int {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { c in
            _ = try await c.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
            var keep = Int64.max
            for try await v in try await c.query("SELECT seq FROM radio_changes WHERE at >= \(cutoff) ORDER BY seq LIMIT 1", logger: logger)
                .decode(Int64.self) { keep = v }
            var last: Int64?
            for try await v in try await c.query("SELECT MAX(seq) FROM radio_changes WHERE seq < \(keep)", logger: logger)
                .decode(Int64?.self) { last = v }
            guard let last else { return 0 }
            var n = 0
            for try await _ in try await c.query("DELETE FROM radio_changes WHERE seq <= \(last) RETURNING 1", logger: logger).decode(Int.self) { n += 1 }
            _ = try await c.query("""
                INSERT INTO radio_changes_pruned (id, through) VALUES (1, \(last))
                ON CONFLICT (id) DO UPDATE SET through = GREATEST(radio_changes_pruned.through, EXCLUDED.through)
                """, logger: logger)
            return n
        }
    }

    public func refitPending(limit: Int) async throws -> Int {
        let logger = self.logger
        var done = 0
        for kind in TransmitterTables.kinds where done < limit {
            let t = TransmitterTables.of(kind), left = limit - done
            let names = try await client.withConnection { c in
                var p: [String] = []
                for try await b in try await c.query("SELECT \(unescaped: t.key) FROM \(unescaped: t.pending) ORDER BY \(unescaped: t.key) LIMIT \(left)",
                                                     logger: logger).decode(String.self) {
                    p.append(b)
                }
                return p
            }
            if !names.isEmpty { try await refit(names, kind: kind) }
            done += names.count
        }
        return done
    }

    /// Re-fits the APs (beacons) `names` from their newest samples (`Learner.estimate`) and
    /// clears their pending marks, in one transaction under the submissions' advisory lock (no
    /// lost update between replicas).
    func refit(_ names: [String], kind: Transmitters) async throws {
        let logger = self.logger
        let t = TransmitterTables.of(kind)
        try await client.withTransaction(logger: logger) { c in
            _ = try await c.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
            for b in names {
                var marked = false
                for try await _ in try await c.query("DELETE FROM \(unescaped: t.pending) WHERE \(unescaped: t.key) = \(b) RETURNING 1",
                                                     logger: logger).decode(Int.self) { marked = true }
                guard marked else { continue }                   // another replica re-fitted it meanwhile
                let rows = try await c.query("""
                    SELECT lat, lon, rss FROM \(unescaped: t.samples) WHERE \(unescaped: t.key) = \(b) ORDER BY seq DESC LIMIT \(Learner.maxSamplesPerAP)
                    """, logger: logger)
                var all: [APSample] = []
                for try await r in rows.decode((Double, Double, Double).self) {
                    all.append(APSample(bssid: b, position: Geodetic(latitude: r.0, longitude: r.1), rss: r.2))
                }
                guard let ap = Learner.estimate(bssid: b, samples: all.reversed(), kind: kind) else { continue }
                _ = try await c.query("""
                    INSERT INTO \(unescaped: t.map) (\(unescaped: t.key), lat, lon, floor, p0, n_exp, samples, model_fitted)
                    VALUES (\(ap.bssid), \(ap.position.latitude), \(ap.position.longitude), \(ap.floor), \(ap.p0), \(ap.pathLossExponent),
                        \(ap.samples), \(ap.modelFitted))
                    ON CONFLICT (\(unescaped: t.key)) DO UPDATE SET lat = EXCLUDED.lat, lon = EXCLUDED.lon, floor = EXCLUDED.floor, p0 = EXCLUDED.p0,
                        n_exp = EXCLUDED.n_exp, samples = EXCLUDED.samples, model_fitted = EXCLUDED.model_fitted
                    """, logger: logger)
            }
        }
    }

    public func statistics() async throws -> StoreStatistics {
        while try await refitPending(limit: 256) > 0 {}          // the counts include every acknowledged AP and beacon
        let rows = try await client.query("""
            SELECT (SELECT COUNT(*) FROM cell_coverage WHERE ta = -1), (SELECT COUNT(*) FROM cell_coverage),
                   (SELECT COUNT(*) FROM aps), (SELECT COUNT(*) FROM submissions), (SELECT COUNT(*) FROM ble)
            """, logger: logger)
        for try await r in rows.decode((Int, Int, Int, Int, Int).self) {
            return StoreStatistics(cells: r.0, coverageAreas: r.1, aps: r.2, submissions: r.3, beacons: r.4)
        }
        return StoreStatistics(cells: 0, coverageAreas: 0, aps: 0, submissions: 0)
    }

    /// PostgreSQL checks pages as it reads them; this reads every table through (a full scan)
    /// and checks the invariants the service relies on (coverage counts > 0, finite positions).
    public func integrityCheck() async throws -> String {
        let rows = try await client.query("""
            SELECT (SELECT COUNT(*) FROM cell_coverage WHERE n <= 0 OR lat <> lat OR lon <> lon),
                   (SELECT COUNT(*) FROM aps WHERE lat <> lat OR lon <> lon),
                   (SELECT COUNT(*) FROM ap_samples), (SELECT COUNT(*) FROM submissions),
                   (SELECT COUNT(*) FROM ble WHERE lat <> lat OR lon <> lon), (SELECT COUNT(*) FROM ble_samples)
            """, logger: logger)
        for try await r in rows.decode((Int, Int, Int, Int, Int, Int).self) {
            return r.0 == 0 && r.1 == 0 && r.4 == 0 ? "ok" : "\(r.0) bad coverage row(s), \(r.1) bad AP row(s), \(r.4) bad beacon row(s)"
        }
        return "no answer"
    }

    public func close() async throws {}
}

/// Errors of the service's configuration (exit 64 from the CLI).
public enum ServeError: Error, CustomStringConvertible {
    case configuration(String)
    public var description: String {
        switch self { case .configuration(let s): return s }
    }
}
