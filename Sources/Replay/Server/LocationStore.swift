import Foundation
import Positioning
import Replay

/// One geosubmit item that carries a position: the radio observations a phone made there.
public struct Submission: Sendable {
    public var position: Geodetic
    /// Reported accuracy, m (68 % radius), when given.
    public var accuracy: Double?
    /// Cells (the serving one marked `serving`).
    public var cells: [CellObservation]
    /// WiFi observations already filtered by the privacy rules (`GeoAPI.usableWiFi`).
    public var wifi: [WiFiObservation]
    /// Bluetooth beacons heard there (`GeoAPI.beacon`: valid MACs, not older than the age limit).
    public var beacons: [BLEObservation]
    public init(position: Geodetic, accuracy: Double? = nil, cells: [CellObservation] = [], wifi: [WiFiObservation] = [],
                beacons: [BLEObservation] = []) {
        self.position = position; self.accuracy = accuracy; self.cells = cells; self.wifi = wifi; self.beacons = beacons
    }

    /// The transmitters of `kind` heard here, as the AP learner reads them: the WiFi entries, or
    /// the beacons as `BLEScan.transmitters` gives them (id as the name, RSS, last seen).
    public func transmitters(_ kind: Transmitters) -> [WiFiObservation] {
        switch kind {
        case .wifi: return wifi
        case .ble: return BLEScan(beacons: beacons).transmitters.accessPoints
        }
    }
}

/// The kinds of learned transmitter a store keeps: WiFi access points and Bluetooth LE beacons,
/// learned and read the same way (a beacon is a transmitter with a learned position, like an
/// AP: docs/radio.md "Bluetooth beacons"), each in tables of its own.
public typealias Transmitters = RadioMapBuilder.TransmitterKind

/// Where a store keeps one kind of transmitter: the map (`radiomap build`'s `aps`, or its
/// Bluetooth table `ble`), the samples behind each entry and the entries awaiting a re-fit.
/// The one place of these names: both stores build their statements from them.
struct TransmitterTables: Sendable {
    /// The learned map, its key column, the samples (key column `key` as well) and the pending marks.
    let map: String, key: String, samples: String, pending: String
    static func of(_ kind: Transmitters) -> TransmitterTables {
        switch kind {
        case .wifi: return TransmitterTables(map: "aps", key: "bssid", samples: "ap_samples", pending: "ap_pending")
        case .ble: return TransmitterTables(map: "ble", key: "id", samples: "ble_samples", pending: "ble_pending")
        }
    }
    /// Every kind, in the order stores work through them.
    static let kinds: [Transmitters] = [.wifi, .ble]
}

/// A learned access point, in WGS84 (the radio map's `aps` row), or a learned Bluetooth beacon
/// (its `ble` row: `bssid` is the beacon's id).
public struct LearnedAP: Sendable, Equatable {
    public var bssid: String
    public var position: Geodetic
    public var floor: Int?
    public var p0: Double?
    public var pathLossExponent: Double?
    public var samples: Int
    public var modelFitted: Bool
}

/// One WiFi sample of a submission: where the phone was and what it heard.
public struct APSample: Sendable, Equatable {
    public var bssid: String
    public var position: Geodetic
    public var rss: Double
}

/// What a store knows of the radios a request names.
public struct KnownRadios: Sendable {
    public var towers: [CellTower] = []
    public var coverage: [CellCoverageRecord] = []
    public var aps: [LearnedAP] = []
    /// The learned Bluetooth beacons (by id, in id order).
    public var beacons: [LearnedAP] = []
    /// The ECEF positions of `towers`, `coverage`, `aps` and `beacons` (`ecef(of:)`, one per
    /// element, in their order) when the server's snapshot keeps them (computed once per radio,
    /// not per request); nil, or a list whose count differs from its radios', = computed by `reference`.
    public var towerECEF: [ECEF]?, coverageECEF: [ECEF]?, apECEF: [ECEF]?, beaconECEF: [ECEF]?
    /// `GeoAPI.macValue` of each of `aps` (`beacons`) when the snapshot assembled them (it keys them by these).
    var apValues: [UInt64?]?, beaconValues: [UInt64?]?
    public init(towers: [CellTower] = [], coverage: [CellCoverageRecord] = [], aps: [LearnedAP] = [], beacons: [LearnedAP] = []) {
        self.towers = towers; self.coverage = coverage; self.aps = aps; self.beacons = beacons
    }

    /// The learned transmitters of `kind`.
    public subscript(_ kind: Transmitters) -> [LearnedAP] {
        get { kind == .wifi ? aps : beacons }
        set { if kind == .wifi { aps = newValue } else { beacons = newValue } }
    }

    /// The ECEF position `reference` converts to the frame: the one place of each radio's
    /// (the snapshot precomputes these; the same doubles either way).
    public static func ecef(of t: CellTower) -> ECEF { ECEF(t.position) }
    public static func ecef(of r: CellCoverageRecord) -> ECEF { ECEF(r.position) }
    public static func ecef(of a: LearnedAP) -> ECEF { ECEF(Geodetic(latitude: a.position.latitude, longitude: a.position.longitude)) }

    /// The known radios as reference data in `frame` (towers as cell sites, coverage areas as
    /// the coverage map, APs as the AP map, beacons as the beacon map): what the estimator stages read.
    public func reference(in frame: LocalFrame) -> ReferenceData {
        var ref = ReferenceData()
        let te = towerECEF.flatMap { $0.count == towers.count ? $0 : nil }
        for (i, t) in towers.enumerated() { ref.cells[t.cell] = t.site(frame: frame, ecef: te?[i] ?? Self.ecef(of: t)) }
        if !coverage.isEmpty {
            let ce = coverageECEF.flatMap { $0.count == coverage.count ? $0 : nil } ?? coverage.map(Self.ecef(of:))
            ref.cellCoverage = CellCoverageRecord.map(coverage, ecef: ce, frame: frame)
        }
        ref.accessPoints = Self.map(aps, ecef: apECEF, frame: frame)
        if !beacons.isEmpty { ref.bleBeacons = Self.map(beacons, ecef: beaconECEF, frame: frame) }
        return ref
    }

    /// Learned transmitters as the estimators' map (`AccessPoint` by name) in `frame`, from
    /// their ECEF positions when given (one per transmitter), else computed.
    static func map(_ list: [LearnedAP], ecef: [ECEF]?, frame: LocalFrame) -> [String: AccessPoint] {
        let e = ecef.flatMap { $0.count == list.count ? $0 : nil }
        var out: [String: AccessPoint] = [:]
        out.reserveCapacity(list.count)                    // sized once: grown, it rehashed every name
        for (i, a) in list.enumerated() {
            out[a.bssid] = AccessPoint(bssid: a.bssid, position: frame.enu(e?[i] ?? Self.ecef(of: a)),
                                       floor: a.floor, p0: a.p0, pathLossExponent: a.pathLossExponent)
        }
        return out
    }

    /// A position to centre a local frame on: the first AP, beacon, coverage area or tower.
    public var anchor: Geodetic? { aps.first?.position ?? beacons.first?.position ?? coverage.first?.position ?? towers.first?.position }
}

/// The radios committed submissions changed, after a point of the store's change log
/// (`LocationStore.changes`): what a replica's in-memory snapshot (`RadioSnapshot`) must forget.
public struct RadioChanges: Sendable, Equatable {
    /// The log position these changes reach (pass it as `after` next time).
    public var last: Int64
    public var cells: [CellID]
    public var bssids: [String]
    /// The ids of the Bluetooth beacons re-fitted.
    public var beacons: [String]
    /// True when more than `limit` submissions were skipped over: forget everything.
    public var overflow: Bool
    public init(last: Int64, cells: [CellID] = [], bssids: [String] = [], beacons: [String] = [], overflow: Bool = false) {
        self.last = last; self.cells = cells; self.bssids = bssids; self.beacons = beacons; self.overflow = overflow
    }

    /// True when these changes name no radio.
    public var isEmpty: Bool { cells.isEmpty && bssids.isEmpty && beacons.isEmpty }

    /// One log row's text: its cells ("rat,mcc,mnc,area,cid" per line), its BSSIDs and its beacon
    /// ids (one per line). The one place of the row format: both stores write `rowText` and read with `add`.
    static func rowText(_ c: RadioChanges) -> (cells: String, bssids: String, beacons: String) {
        (c.cells.map { "\($0.rat.rawValue),\($0.mcc),\($0.mnc),\($0.area),\($0.cid)" }.joined(separator: "\n"),
         c.bssids.joined(separator: "\n"), c.beacons.joined(separator: "\n"))
    }
    /// Adds one log row (position `seq`, its `rowText`) to these changes.
    mutating func add(seq: Int64, cells: String, bssids: String, beacons: String) {
        last = seq
        self.cells += cells.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",")
            guard f.count == 5, let rat = RAT(rawValue: String(f[0])), let mcc = Int(f[1]), let mnc = Int(f[2]),
                  let area = Int(f[3]), let cid = Int(f[4]) else { return nil }
            return CellID(rat: rat, mcc: mcc, mnc: mnc, area: area, cid: cid)
        }
        self.bssids += bssids.split(separator: "\n").map(String.init)
        self.beacons += beacons.split(separator: "\n").map(String.init)
    }
    /// The serving cells of a submission's items: the cells whose coverage areas it changes.
    static func servingCells(_ items: [Submission]) -> Set<CellID> {
        Set(items.flatMap { $0.cells.filter(\.serving).map(\.cell) })
    }
    /// The radios of one submission a snapshot must forget once it commits: its serving cells
    /// (their coverage areas change), the BSSIDs of its WiFi samples and the ids of its beacon
    /// samples (their APs and beacons are re-fitted). `last` 0: not a log position.
    static func of(_ items: [Submission]) -> RadioChanges {
        of(cells: servingCells(items), samples: Learner.samples(items, of: .wifi), beaconSamples: Learner.samples(items, of: .ble))
    }
    /// `of` from the serving cells and samples a store has already derived for the submission.
    static func of(cells: Set<CellID>, samples: [APSample], beaconSamples: [APSample]) -> RadioChanges {
        RadioChanges(last: 0, cells: cells.sorted { $0.description < $1.description }, bssids: Set(samples.map(\.bssid)).sorted(),
                     beacons: Set(beaconSamples.map(\.bssid)).sorted())
    }
    /// Most log rows one `changes` call reads; beyond, `overflow`.
    public static let limit = 10_000
    /// How long change-log rows are kept, s (`--change-retention`, docs/serve.md "Snapshot"):
    /// a replica reads the log every `--snapshot-refresh` (0.25 s), so ten minutes is thousands
    /// of reads of slack. A replica that falls further behind (stopped, or a read failing for
    /// that long) loses nothing: the store answers `overflow` for a position below what was
    /// pruned, and the replica starts its snapshot over.
    public static let defaultRetention = 600.0
}

extension RadioLookup {
    public func lookup(cells: Set<CellID>, distinctBSSIDs bssids: [String], values: [UInt64?],
                       distinctBeacons beacons: [String] = [], beaconValues: [UInt64?] = []) async throws -> KnownRadios {
        try await lookup(cells: cells, bssids: Set(bssids), beacons: Set(beacons))
    }
    /// `lookup` of cells and APs only.
    public func lookup(cells: Set<CellID>, bssids: Set<String>) async throws -> KnownRadios {
        try await lookup(cells: cells, bssids: bssids, beacons: [])
    }
}

/// Counts for /metrics and /health.
public struct StoreStatistics: Sendable, Equatable {
    public var cells: Int, coverageAreas: Int, aps: Int, submissions: Int
    public var beacons: Int = 0
}

/// What geolocate reads: a store, or the server's snapshot of one (`RadioSnapshot`).
public protocol RadioLookup: Sendable {
    /// The known towers, coverage areas (cells in description order, areas by TA), APs and
    /// Bluetooth beacons (each by name) of the request's radios.
    func lookup(cells: Set<CellID>, bssids: Set<String>, beacons: Set<String>) async throws -> KnownRadios
    /// `lookup` of radios given as lists: `bssids` (`beacons`) distinct (geolocate's parser drops
    /// repeats), in any order, with each name's `GeoAPI.macValue` (`values[i]` of `bssids[i]`,
    /// `beaconValues[i]` of `beacons[i]`, as the parser computed them). The same answer; the
    /// snapshot answers it without building a set of names, and finds the radios by those values.
    func lookup(cells: Set<CellID>, distinctBSSIDs bssids: [String], values: [UInt64?],
                distinctBeacons beacons: [String], beaconValues: [UInt64?]) async throws -> KnownRadios
    /// Whole-cell coverage areas (TA −1) of the location areas (rat, mcc, mnc, area) of `cells`,
    /// for the ichnaea `lacf` fallback.
    func areaCoverage(of cells: Set<CellID>) async throws -> [CellCoverageRecord]
}

/// Where `posfuse serve` keeps what it knows and learns: the cell database (towers + coverage
/// areas, the schema `celldb build` writes), the radio map (APs and Bluetooth beacons) with the
/// WiFi and beacon samples behind each, and a log of acknowledged submissions. SQLite (one process) or PostgreSQL (several
/// replicas). `submit` returns only after its transaction has committed.
public protocol LocationStore: RadioLookup {
    /// Learns from `items` in one transaction and records the submission (`digest` of its body):
    /// coverage areas are updated, the WiFi and beacon samples stored and their APs and beacons
    /// marked pending; the estimates are re-fitted outside the transaction (`refitPending`).
    /// `lookup` and `statistics` re-fit the pending ones they read first, so no answer uses a
    /// stale AP or beacon.
    func submit(_ items: [Submission], digest: String) async throws
    /// Re-fits up to `limit` pending APs and beacons (APs first) from their stored samples, each
    /// kind in one transaction (the pending marks are durable: a crash before it loses nothing);
    /// returns how many.
    func refitPending(limit: Int) async throws -> Int
    func statistics() async throws -> StoreStatistics
    /// The change log (`radio_changes`, one row per committed submission, written in its
    /// transaction, in commit order): the radios changed after position `after` (nil: none,
    /// only the current position). Submissions commit one at a time (SQLite's one writer,
    /// PostgreSQL's advisory lock), so positions grow in commit order and a reader that has
    /// seen position p has seen every change committed before it.
    /// A position below the log's pruned-through mark (`pruneChanges`) answers `overflow`:
    /// rows the caller has not seen may be gone.
    func changes(after: Int64?) async throws -> RadioChanges
    /// Deletes the change-log rows committed before `cutoff` (Unix time, s) and raises the
    /// log's pruned-through mark to the last deleted position, in one transaction; returns
    /// how many rows went. Rows are taken in log order up to the first one at or after the
    /// cutoff, so the work is the number of rows deleted.
    func pruneChanges(before cutoff: Double) async throws -> Int
    /// "ok" or the database's own complaint.
    func integrityCheck() async throws -> String
    func close() async throws
}

/// The learning of geosubmit, shared by both stores: the same models as `celldb build`'s
/// coverage map (`CellCoverageMap.Builder`, areas merged batch by batch with
/// `CellCoverageMap.Area.merged`) and `radiomap build`'s AP map (`APMapEstimator` over every
/// stored sample of an AP, at most `maxSamplesPerAP` of the newest).
public enum Learner {
    /// Samples of one AP the estimate uses (the newest): bounds the work of one submission.
    public static let maxSamplesPerAP = 500
    /// Positions kept per (cell, TA) area in `coverage_points` (the newest, by walk then
    /// arrival): bounds the work of a submission to a busy cell (it reads its cell's positions
    /// and re-places each TA area it reports from them). Past it, an area's position is the
    /// walk-weighted spatial median of its newest `maxPointsPerArea` positions, while its
    /// count, walks and spread (`coverage_sums`) still cover every position; below it, the
    /// placement is `celldb build`'s. (The spatial median of n Gaussian positions has a
    /// standard error of about 1.13 σ/√n: 2.5 % of the area's σ at 2,000.)
    public static let maxPointsPerArea = 2_000

    /// The learning state of one coverage area: `CellCoverageMap.WalkSums` in the ENU frame at
    /// `origin` (one origin per cell, shared by its TA areas).
    public struct CoverageState: Sendable, Equatable {
        public var key: CellCoverageMap.Key
        public var origin: Geodetic
        public var sums: CellCoverageMap.WalkSums
    }

    /// One stored position of a (cell, TA) area: the positions the spatial median needs
    /// (`coverage_points`). `walk` numbers the area's walks in arrival order from 0 (a
    /// submission is one walk).
    public struct CoveragePoint: Sendable, Equatable {
        public var key: CellCoverageMap.Key
        public var walk: Int
        public var position: Geodetic
        public init(key: CellCoverageMap.Key, walk: Int, position: Geodetic) { self.key = key; self.walk = walk; self.position = position }
    }

    /// The serving-cell reports of `items` — one submission, one walk (`CellCoverageMap.Builder`,
    /// walk 0) — added to the stored `state` of their areas; an area known only as a row of the
    /// cell database (`seed`, e.g. from `celldb build`) starts from that row taken as its
    /// `walks` walks at its position with its covariance within them. A cell's whole area is
    /// placed at the mean of the walk means (sums merge); a (cell, TA) area, like `celldb build`'s
    /// (`CellCoverageMap.Builder.map`), at the walk-weighted spatial median of all its stored
    /// `points` and this submission's (`CellCoverageMap.Builder.placed`), the spread taken about
    /// it; the walks of a row without stored positions (a seed, or an area learned before
    /// positions were stored) enter the median as one position each at the row's position.
    /// Only the newest `maxPoints` positions of an area (`maxPointsPerArea`) enter the median
    /// and are returned to store; the store deletes the older ones.
    /// Returns the rows to write in `cell_coverage`, the new states, and the positions to store.
    public static func coverage(_ items: [Submission], state: [CoverageState], seed: [CellCoverageRecord], points: [CoveragePoint] = [],
                                maxPoints: Int = maxPointsPerArea)
        -> (records: [CellCoverageRecord], state: [CoverageState], points: [CoveragePoint]) {
        var byCell: [CellID: [(CellObservation, Geodetic)]] = [:]
        var order: [CellID] = []
        for s in items {
            for o in s.cells where o.serving {
                if byCell[o.cell] == nil { order.append(o.cell) }
                byCell[o.cell, default: []].append((o, s.position))
            }
        }
        var old: [CellCoverageMap.Key: CoverageState] = [:]
        for x in state { old[x.key] = x }
        var rows: [CellCoverageMap.Key: CellCoverageRecord] = [:]
        for r in seed { rows[.init(cell: r.cell, timingAdvance: r.ta)] = r }
        var stored: [CellCoverageMap.Key: [CoveragePoint]] = [:]
        for p in points { stored[p.key, default: []].append(p) }
        var records: [CellCoverageRecord] = [], states: [CoverageState] = [], added: [CoveragePoint] = []
        for cell in order {
            let obs = byCell[cell]!
            let whole = CellCoverageMap.Key(cell: cell, timingAdvance: nil)
            let o = old[whole]?.origin ?? rows[whole]?.position ?? obs[0].1
            let origin = Geodetic(latitude: o.latitude, longitude: o.longitude)
            let frame = LocalFrame(origin: origin)
            var b = CellCoverageMap.Builder()
            for (x, p) in obs { b.add(cell: x.cell, timingAdvance: x.timingAdvance, at: frame.en(latitude: p.latitude, longitude: p.longitude)) }
            for (k, a) in b.momentMap.areas.sorted(by: { ($0.key.timingAdvance ?? -1) < ($1.key.timingAdvance ?? -1) }) {
                var prior = old[k]?.sums ?? CellCoverageMap.WalkSums()
                var seedPoints: [CoveragePoint] = []
                if old[k] == nil, let r = rows[k], let s = CellCoverageRecord.map([r], frame: frame).areas[k], s.count >= s.walks {
                    let m = Double(s.walks)
                    prior.walks = s.walks; prior.count = s.count; prior.dof = s.count - s.walks
                    prior.sumMean = s.mean * m
                    prior.sumOuter = Covariance2(ee: m * s.mean.x * s.mean.x, en: m * s.mean.x * s.mean.y, nn: m * s.mean.y * s.mean.y)
                    let d = Double(s.count - s.walks)
                    prior.scatter = Covariance2(ee: s.covariance.ee * d, en: s.covariance.en * d, nn: s.covariance.nn * d)
                }
                // A row without stored positions (a seed, or an area learned before positions
                // were stored): its walks as one position each at the row's position.
                if k.timingAdvance != nil, stored[k] == nil, prior.walks > 0, let r = rows[k] {
                    seedPoints = (0..<prior.walks).map { CoveragePoint(key: k, walk: $0, position: r.position) }
                }
                let total = prior + CellCoverageMap.WalkSums(walk: a)
                guard var area = total.area else { continue }
                // The stored row's coverage scale (`CoverageScale`, fitted by `celldb build`) stays with the area.
                area.scale = rows[k]?.scale ?? 1
                if k.timingAdvance != nil {
                    // This submission's positions of the area: walk number = the walks before it.
                    let mine = obs.filter { $0.0.timingAdvance == k.timingAdvance }.map {
                        CoveragePoint(key: k, walk: prior.walks, position: Geodetic(latitude: $0.1.latitude, longitude: $0.1.longitude))
                    }
                    // The newest `maxPoints` of them (stored ones come in walk, then arrival order).
                    let fresh = seedPoints + mine
                    var perWalk: [Int: [SIMD2<Double>]] = [:]
                    for p in ((stored[k] ?? []) + fresh).suffix(maxPoints) {
                        perWalk[p.walk, default: []].append(frame.en(latitude: p.position.latitude, longitude: p.position.longitude))
                    }
                    if let placed = CellCoverageMap.Builder.placed(area, perWalk: perWalk) { area = placed }
                    added += fresh.suffix(maxPoints)
                }
                states.append(CoverageState(key: k, origin: origin, sums: total))
                records += CellCoverageRecord.records(CellCoverageMap(areas: [k: area]), frame: frame)
            }
        }
        return (records, states, added)
    }

    /// The (cell, TA) areas `points` belong to, each once, in order of first appearance.
    public static func areas(of points: [CoveragePoint]) -> [CellCoverageMap.Key] {
        var seen = Set<CellCoverageMap.Key>(), out: [CellCoverageMap.Key] = []
        for p in points where seen.insert(p.key).inserted { out.append(p.key) }
        return out
    }

    /// The WiFi (or beacon) samples of `items` (names normalised; the privacy filter ran at parsing).
    public static func samples(_ items: [Submission], of kind: Transmitters = .wifi) -> [APSample] {
        items.flatMap { s in
            s.transmitters(kind).filter { $0.rss.isFinite }.map { APSample(bssid: MACAddress.normalize($0.bssid), position: s.position, rss: $0.rss) }
        }
    }

    /// The AP (or beacon) of `samples` (one name) by `radiomap build`'s estimator for `kind`
    /// (`RadioMapBuilder.mapEstimator(of:)`: beacons skip the locally-administered rule), or nil
    /// when it has too few.
    public static func estimate(bssid: String, samples: [APSample], kind: Transmitters) -> LearnedAP? {
        estimate(bssid: bssid, samples: samples, estimator: RadioMapBuilder().mapEstimator(of: kind))
    }

    /// The AP of `samples` (one BSSID) by `radiomap build`'s estimator, or nil when it has too few.
    public static func estimate(bssid: String, samples: [APSample], estimator: APMapEstimator = RadioMapBuilder().estimator) -> LearnedAP? {
        guard let first = samples.first else { return nil }
        let frame = LocalFrame(origin: Geodetic(latitude: first.position.latitude, longitude: first.position.longitude))
        let s = samples.map { APMapEstimator.Sample(position: frame.en(latitude: $0.position.latitude, longitude: $0.position.longitude), rss: $0.rss) }
        guard let e = estimator.estimate(bssid: bssid, samples: s) else { return nil }
        return LearnedAP(bssid: e.ap.bssid, position: frame.groundGeodetic(east: e.ap.position.x, north: e.ap.position.y),
                         floor: e.ap.floor, p0: e.ap.p0, pathLossExponent: e.ap.pathLossExponent, samples: e.samples,
                         modelFitted: e.modelFitted)
    }

    /// FNV-1a (64 bit) of a request body, hex: the submission log's key (the kill test looks
    /// every acknowledged body up by it). Not a security hash.
    public static func digest<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        let s = String(h, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}
