import Foundation
import GRDB
import Positioning
import TraceIO

/// A cell tower (site) record of the cell database, in WGS84.
public struct CellTower: Sendable, Equatable {
    public var cell: CellID
    /// Antenna (or crowd-sourced centroid) position: deg, deg, m (h = 0 when unknown).
    public var position: Geodetic
    /// Nominal coverage radius, m (OpenCellID `range`: spread of the measurements).
    public var range: Double?
    /// Number of measurements behind a crowd-sourced position.
    public var samples: Int?
    /// PCI / PSC / BSIC (OpenCellID `unit`).
    public var pci: Int?
    /// Sector boresight azimuth and width, degrees (nil = unknown/omni).
    public var azimuth: Double?
    public var beamwidth: Double?
    /// "antenna" (surveyed), "centroid" (crowd-sourced), "estimated" (posfuse celldb build).
    public var provenance: String
    /// Last update, Unix s.
    public var updated: Int?

    public init(cell: CellID, position: Geodetic, range: Double? = nil, samples: Int? = nil, pci: Int? = nil,
                azimuth: Double? = nil, beamwidth: Double? = nil, provenance: String = "centroid", updated: Int? = nil) {
        self.cell = cell; self.position = position; self.range = range; self.samples = samples; self.pci = pci
        self.azimuth = azimuth; self.beamwidth = beamwidth; self.provenance = provenance; self.updated = updated
    }

    /// The site in a trace's local frame (`ReferenceData.cells`).
    public func site(frame: LocalFrame) -> CellSite { site(frame: frame, ecef: ECEF(position)) }
    /// `site(frame:)` with the ECEF of `position` already computed.
    public func site(frame: LocalFrame, ecef: ECEF) -> CellSite {
        CellSite(cell: cell, position: frame.enu(ecef), azimuth: azimuth, beamwidth: beamwidth, range: range,
                 provenance: provenance)
    }
}

/// A coverage area of the cell database (`CellCoverageMap.Area`) in WGS84: where phones were
/// when they reported `cell` (and TA index `ta`; nil = the cell's whole area).
public struct CellCoverageRecord: Sendable, Equatable {
    public var cell: CellID
    public var ta: Int?
    /// Mean position (h = the frame origin's height).
    public var position: Geodetic
    /// Sample covariance of the positions, local east/north m².
    public var covariance: Covariance2
    public var count: Int
    /// Recordings that contributed (`CellCoverageMap.Area.walks`).
    public var walks: Int
    /// The area's calibration factor on its predictive covariance (`CellCoverageMap.Area.scale`, `CoverageScale`; 1 = none).
    public var scale: Double
    public init(cell: CellID, ta: Int?, position: Geodetic, covariance: Covariance2, count: Int, walks: Int = 1, scale: Double = 1) {
        self.cell = cell; self.ta = ta; self.position = position; self.covariance = covariance; self.count = count
        self.walks = walks; self.scale = scale
    }

    /// The areas of `map` (positions in `frame`), sorted by cell and TA; a mean is a point on
    /// the ground (`LocalFrame.groundGeodetic`).
    public static func records(_ map: CellCoverageMap, frame: LocalFrame) -> [CellCoverageRecord] {
        map.areas.map { k, a in
            CellCoverageRecord(cell: k.cell, ta: k.timingAdvance, position: frame.groundGeodetic(east: a.mean.x, north: a.mean.y),
                               covariance: a.covariance, count: a.count, walks: a.walks, scale: a.scale)
        }.sorted { ($0.cell.description, $0.ta ?? -1) < ($1.cell.description, $1.ta ?? -1) }
    }

    /// The records as a coverage map in `frame`.
    public static func map(_ records: [CellCoverageRecord], frame: LocalFrame) -> CellCoverageMap {
        map(records, ecef: records.map { ECEF($0.position) }, frame: frame)
    }
    /// `map(_:frame:)` with the ECEF of each record's position already computed (`ecef[i]` of `records[i]`).
    public static func map(_ records: [CellCoverageRecord], ecef: [ECEF], frame: LocalFrame) -> CellCoverageMap {
        var areas = [CellCoverageMap.Key: CellCoverageMap.Area](minimumCapacity: records.count)
        for (r, e) in zip(records, ecef) {
            let p = frame.enu(e)
            areas[.init(cell: r.cell, timingAdvance: r.ta)] = .init(mean: SIMD2(p.x, p.y), covariance: r.covariance, count: r.count,
                                                                   walks: r.walks, scale: r.scale)
        }
        return CellCoverageMap(areas: areas)
    }

    /// reference.json `cell_coverage` entries (docs/trace-format.md), WGS84.
    public static func referenceJSON(_ records: [CellCoverageRecord]) -> [[String: Any]] {
        records.map { r in
            var d = r.cell.referenceJSON
            d["lat"] = r.position.latitude; d["lon"] = r.position.longitude; d["h"] = r.position.height
            d["cov_m2"] = [r.covariance.ee, r.covariance.en, r.covariance.nn]; d["count"] = r.count; d["walks"] = r.walks
            if r.scale != 1 { d["scale"] = r.scale }
            if let t = r.ta { d["ta"] = t }
            return d
        }
    }
}

extension CellID {
    /// The identity keys of a reference.json `cells` / `cell_coverage` entry.
    var referenceJSON: [String: Any] { ["rat": rat.rawValue, "mcc": mcc, "mnc": mnc, "area": area, "cid": cid] }
}

extension CellTower {
    /// reference.json `cells` entries (docs/trace-format.md), WGS84.
    public static func referenceJSON(_ towers: [CellTower]) -> [[String: Any]] {
        towers.map { t in
            var d = t.cell.referenceJSON
            d["lat"] = t.position.latitude; d["lon"] = t.position.longitude; d["h"] = t.position.height; d["provenance"] = t.provenance
            if let r = t.range { d["range"] = r }
            if let a = t.azimuth { d["azimuth"] = a }
            if let b = t.beamwidth { d["beamwidth"] = b }
            return d
        }
    }
}

/// The cell database: an SQLite file (GRDB) of cell towers keyed by (rat, mcc, mnc, area, cid),
/// and of the coverage areas learned from walks.
///
/// Schema `cells(rat, mcc, mnc, area, cid, lat, lon, h, range_m, samples, pci, azimuth_deg,
/// beamwidth_deg, provenance, updated)` with the primary key on the cell identity and an
/// index on (lat, lon) for area queries; `cell_coverage(rat, mcc, mnc, area, cid, ta, lat, lon, h,
/// cov_ee, cov_en, cov_nn, n, walks, scale)` keyed by cell and TA (−1 = the cell's whole area; `scale` the
/// map's coverage scale, `CoverageScale`, 1 in a table written before it). Inserts
/// replace rows with the same key.
public final class CellDatabase {
    public let queue: DatabaseQueue

    /// Opens (creating if needed) the database at `path` (":memory:" for an in-memory one).
    /// The file (":memory:" for an in-memory database), named in read errors.
    public let path: String

    /// False for a read-only database written before the coverage table existed.
    private var hasCoverage = true

    public init(path: String) throws {
        self.path = path
        queue = path == ":memory:" ? try DatabaseQueue() : try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS cells (
                    rat TEXT NOT NULL, mcc INTEGER NOT NULL, mnc INTEGER NOT NULL,
                    area INTEGER NOT NULL, cid INTEGER NOT NULL,
                    lat REAL NOT NULL, lon REAL NOT NULL, h REAL NOT NULL DEFAULT 0,
                    range_m REAL, samples INTEGER, pci INTEGER, azimuth_deg REAL, beamwidth_deg REAL,
                    provenance TEXT NOT NULL, updated INTEGER,
                    PRIMARY KEY (rat, mcc, mnc, area, cid)
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS cells_latlon ON cells(lat, lon);
                CREATE TABLE IF NOT EXISTS cell_coverage (
                    rat TEXT NOT NULL, mcc INTEGER NOT NULL, mnc INTEGER NOT NULL,
                    area INTEGER NOT NULL, cid INTEGER NOT NULL, ta INTEGER NOT NULL,
                    lat REAL NOT NULL, lon REAL NOT NULL, h REAL NOT NULL DEFAULT 0,
                    cov_ee REAL NOT NULL, cov_en REAL NOT NULL, cov_nn REAL NOT NULL, n INTEGER NOT NULL,
                    PRIMARY KEY (rat, mcc, mnc, area, cid, ta)
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS cell_coverage_latlon ON cell_coverage(lat, lon);
                """)
            // A coverage table written before its height column (24 Nov 2026) gets one.
            if try !db.columns(in: "cell_coverage").contains(where: { $0.name == "h" }) {
                try db.execute(sql: "ALTER TABLE cell_coverage ADD COLUMN h REAL NOT NULL DEFAULT 0")
            }
            // ... and before its walk count (24 Nov 2026): 1, the conservative reading.
            if try !db.columns(in: "cell_coverage").contains(where: { $0.name == "walks" }) {
                try db.execute(sql: "ALTER TABLE cell_coverage ADD COLUMN walks INTEGER NOT NULL DEFAULT 1")
            }
            // ... and before its coverage scale (25 Nov 2026): 1, the model alone.
            if try !db.columns(in: "cell_coverage").contains(where: { $0.name == "scale" }) {
                try db.execute(sql: "ALTER TABLE cell_coverage ADD COLUMN scale REAL NOT NULL DEFAULT 1")
            }
        }
    }

    /// Inserts or replaces `towers` and `coverage` in one transaction; returns the number of towers written.
    @discardableResult
    public func insert(_ towers: [CellTower], coverage: [CellCoverageRecord] = []) throws -> Int {
        try queue.write { db in try Self.insert(towers, coverage: coverage, db: db) }
    }

    /// The same inside a caller's transaction (`posfuse serve` learns into this schema).
    @discardableResult
    public static func insert(_ towers: [CellTower], coverage: [CellCoverageRecord], db: Database) throws -> Int {
        let cs = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO cell_coverage (rat, mcc, mnc, area, cid, ta, lat, lon, h, cov_ee, cov_en, cov_nn, n, walks, scale)
            VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
            """)
        for r in coverage {
            try cs.execute(arguments: [r.cell.rat.rawValue, r.cell.mcc, r.cell.mnc, r.cell.area, r.cell.cid, r.ta ?? -1,
                                       r.position.latitude, r.position.longitude, r.position.height, r.covariance.ee, r.covariance.en,
                                       r.covariance.nn, r.count, r.walks, r.scale])
        }
        let st = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO cells (rat, mcc, mnc, area, cid, lat, lon, h, range_m, samples, pci,
                azimuth_deg, beamwidth_deg, provenance, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
            """)
        for t in towers {
            try st.execute(arguments: [t.cell.rat.rawValue, t.cell.mcc, t.cell.mnc, t.cell.area, t.cell.cid,
                                       t.position.latitude, t.position.longitude, t.position.height, t.range, t.samples,
                                       t.pci, t.azimuth, t.beamwidth, t.provenance, t.updated])
        }
        return towers.count
    }

    /// Every coverage area, sorted by cell and TA.
    public func coverage() throws -> [CellCoverageRecord] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM cell_coverage ORDER BY rat, mcc, mnc, area, cid, ta").compactMap(Self.coverageRecord)
        }
    }

    /// Coverage areas whose mean lies within `radius` m of `center`.
    public func coverage(near center: Geodetic, radius: Double) throws -> [CellCoverageRecord] {
        guard hasCoverage else { return [] }
        let b = Self.box(center, radius)
        let rows = try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM cell_coverage WHERE lat BETWEEN ? AND ? AND lon BETWEEN ? AND ?", arguments: b)
        }
        return rows.compactMap(Self.coverageRecord).filter { Self.distance($0.position, center) <= radius }
    }

    /// Radius of `merge(into:frame:)`: 50 km, beyond the reach of a GSM cell (TA 63 ≈ 35 km).
    public static let nearbyRadius = 50_000.0

    /// Opens the database at `path` as reference data (`replay`/`refine --cell-db`): a file that
    /// is not a cell database is a `TraceDataError` naming it.
    public static func forReading(path: String) throws -> CellDatabase {
        do { return try CellDatabase(readOnly: path) } catch let e as TraceDataError { throw e } catch { throw readError(path, error) }
    }

    /// Opens an existing cell database read-only (`--cell-db`): the file is never written (no
    /// table created, no migration; an old coverage table without `h` reads as h = 0). A file
    /// that is not an SQLite database (empty, text, another format) or has no `cells` table is
    /// a data error naming it.
    init(readOnly path: String) throws {
        self.path = path
        let head = try InputFile.prefix(URL(fileURLWithPath: path), count: 16)
        guard head == SQLiteFile.magic else {
            throw TraceDataError(file: path, line: 0, reason: head.isEmpty ? "empty file, not a cell database" : "not an SQLite database",
                                 code: .invalidCellDB)
        }
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(ResultStore.busyTimeout)
        queue = try DatabaseQueue(path: path, configuration: config)
        let tables = try queue.read { db in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") }
        guard tables.contains("cells") else {
            throw TraceDataError(file: path, line: 0, reason: "not a cell database (no table 'cells'; build one with posfuse celldb build)",
                                 code: .invalidCellDB)
        }
        hasCoverage = tables.contains("cell_coverage")
    }

    static func readError(_ path: String, _ error: any Error) -> TraceDataError {
        TraceDataError(file: path, line: 0, reason: "cannot read the cell database: \(error)", code: .invalidCellDB)
    }

    /// Adds the towers and coverage areas within `radius` m of `frame`'s origin to `reference`,
    /// in that frame; entries the reference already has (its own side file) are kept. A read
    /// failure is a `TraceDataError` naming the file.
    public func merge(into reference: inout ReferenceData, frame: LocalFrame, radius: Double = CellDatabase.nearbyRadius) throws {
        let towers: [CellTower], areas: [CellCoverageRecord]
        do {
            towers = try self.towers(near: frame.origin, radius: radius)
            areas = try coverage(near: frame.origin, radius: radius)
        } catch { throw Self.readError(path, error) }
        for t in towers where reference.cells[t.cell] == nil { reference.cells[t.cell] = t.site(frame: frame) }
        guard !areas.isEmpty else { return }
        var merged = reference.cellCoverage?.areas ?? [:]
        for (k, a) in CellCoverageRecord.map(areas, frame: frame).areas where merged[k] == nil { merged[k] = a }
        reference.cellCoverage = CellCoverageMap(areas: merged)
    }

    public static func coverageRecord(_ r: Row) -> CellCoverageRecord? {
        guard let rat = (r.text("rat")).flatMap(RAT.init(rawValue:)), let mcc = r.int("mcc"), let mnc = r.int("mnc"),
              let area = r.int("area"), let cid = r.int("cid"), let ta = r.int("ta"), let lat = r.double("lat"), let lon = r.double("lon"),
              TraceDomain.latLonViolation(lat, lon) == nil, let ee = r.double("cov_ee"), let en = r.double("cov_en"), let nn = r.double("cov_nn"),
              let n = r.int("n") else { return nil }
        let h = r.double("h") ?? 0
        guard TraceDomain.height.contains(h), ee >= 0, nn >= 0, abs(ee) <= 1e14, abs(nn) <= 1e14, abs(en) <= 1e14 else { return nil }
        return CellCoverageRecord(cell: CellID(rat: rat, mcc: mcc, mnc: mnc, area: area, cid: cid),
                                  ta: ta < 0 ? nil : ta, position: Geodetic(latitude: lat, longitude: lon, height: h),
                                  covariance: Covariance2(ee: ee, en: en, nn: nn), count: n,
                                  walks: max(1, min(r.int("walks") ?? 1, n)), scale: r.double("scale").flatMap { $0 > 0 ? $0 : nil } ?? 1)
    }

    /// The latitude/longitude box around `center` that holds every point within `radius` m.
    static func box(_ center: Geodetic, _ radius: Double) -> StatementArguments {
        let dLat = radius / 110_574.0   // degrees of latitude (shortest degree, at the equator)
        let dLon = dLat / max(0.01, cos(center.latitude * .pi / 180))
        return [center.latitude - dLat, center.latitude + dLat, center.longitude - dLon, center.longitude + dLon]
    }

    public func count() throws -> Int { try queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM cells") ?? 0 } }

    public func tower(_ id: CellID) throws -> CellTower? {
        try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM cells WHERE rat = ? AND mcc = ? AND mnc = ? AND area = ? AND cid = ?",
                             arguments: [id.rat.rawValue, id.mcc, id.mnc, id.area, id.cid]).flatMap(Self.tower)
        }
    }

    /// Towers within `radius` m of `center` (bounding-box query, then exact distance on the sphere).
    public func towers(near center: Geodetic, radius: Double) throws -> [CellTower] {
        let b = Self.box(center, radius)
        let rows = try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM cells WHERE lat BETWEEN ? AND ? AND lon BETWEEN ? AND ?", arguments: b)
        }
        return rows.compactMap(Self.tower).filter { Self.distance($0.position, center) <= radius }
    }

    public func all() throws -> [CellTower] {
        try queue.read { db in try Row.fetchAll(db, sql: "SELECT * FROM cells ORDER BY rat, mcc, mnc, area, cid").compactMap(Self.tower) }
    }

    /// The towers as `ReferenceData.cells` in `frame` (optionally only those within `radius` m of the origin).
    public func cellSites(frame: LocalFrame, radius: Double? = nil) throws -> [CellID: CellSite] {
        let list = try radius.map { try towers(near: frame.origin, radius: $0) } ?? all()
        var out: [CellID: CellSite] = [:]
        for t in list { out[t.cell] = t.site(frame: frame) }
        return out
    }

    /// A row of `cells`, or nil when a value is missing, of the wrong type or outside its domain
    /// (a damaged or foreign database is skipped row by row, never a crash).
    public static func tower(_ r: Row) -> CellTower? {
        guard let rat = (r.text("rat")).flatMap(RAT.init(rawValue:)), let mcc = r.int("mcc"), let mnc = r.int("mnc"),
              let area = r.int("area"), let cid = r.int("cid"), let lat = r.double("lat"), let lon = r.double("lon"),
              TraceDomain.latLonViolation(lat, lon) == nil else { return nil }
        let h = r.double("h") ?? 0
        guard TraceDomain.height.contains(h) else { return nil }
        let range = r.double("range_m").flatMap { (0...TraceDomain.localMetres.upperBound).contains($0) ? $0 : nil }
        let az = r.double("azimuth_deg").flatMap { TraceDomain.degrees.contains($0) ? $0 : nil }
        let bw = r.double("beamwidth_deg").flatMap { (0...360).contains($0) ? $0 : nil }
        return CellTower(cell: CellID(rat: rat, mcc: mcc, mnc: mnc, area: area, cid: cid),
                         position: Geodetic(latitude: lat, longitude: lon, height: h),
                         range: range, samples: r.int("samples"), pci: r.int("pci"), azimuth: az,
                         beamwidth: bw, provenance: r.text("provenance") ?? "centroid", updated: r.int("updated"))
    }

    /// Great-circle distance (haversine, mean radius 6 371 008.8 m), m.
    static func distance(_ a: Geodetic, _ b: Geodetic) -> Double {
        let p1 = a.latitude * .pi / 180, p2 = b.latitude * .pi / 180
        let dp = p2 - p1, dl = (b.longitude - a.longitude) * .pi / 180
        let h = sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2)
        return 2 * 6_371_008.8 * asin(min(1, h.squareRoot()))
    }
}

/// Type-checked column access: nil for NULL, a missing column or a value of another type
/// (GRDB's subscripts stop the process on a failed conversion).
extension Row {
    func double(_ c: String) -> Double? {
        guard hasColumn(c) else { return nil }
        let v: DatabaseValue = self[c]
        switch v.storage {
        case .double(let d): return d.isFinite ? d : nil
        case .int64(let i): return Double(i)
        default: return nil
        }
    }
    func int(_ c: String) -> Int? {
        guard hasColumn(c) else { return nil }
        let v: DatabaseValue = self[c]
        switch v.storage {
        case .int64(let i): return Int(i)
        case .double(let d): return d == d.rounded() && abs(d) <= 9e15 ? Int(d) : nil
        default: return nil
        }
    }
    func text(_ c: String) -> String? {
        guard hasColumn(c) else { return nil }
        let v: DatabaseValue = self[c]
        if case .string(let s) = v.storage { return s }
        return nil
    }
}
