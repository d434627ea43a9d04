import Foundation
import Positioning
import Replay

/// The server's in-memory read snapshot of the store's learned radios (docs/serve.md,
/// "Snapshot"): geolocate and refine read known cells, APs and Bluetooth beacons here, so a request whose radios
/// have been read before runs no SQL. It is filled on demand (a miss reads the store — which
/// re-fits a pending AP first — and keeps the answer, "unknown" included) and forgets a radio
/// when a committed submission changes it:
/// - at once for submissions this server committed (after the commit, before the 200);
/// - for submissions other replicas (or other processes on the same SQLite file) committed,
///   from the store's change log (`LocationStore.changes`), read at most once per `refresh`
///   seconds, by the first request after that interval (no SQL otherwise). A submission
///   committed elsewhere is therefore used by every request that starts more than `refresh`
///   seconds plus one change-log read after its commit.
/// A read that was in flight when a radio was forgotten does not put its (possibly older) rows
/// back: each read notes the snapshot's generation before it starts and keeps its rows only if
/// no change arrived meanwhile. `refresh` 0 reads the change log before every request.
/// Rows written into the store by something other than geosubmit (e.g. `celldb build` into the
/// served SQLite file) write no change log row: restart the server to see them.
final class RadioSnapshot: RadioLookup, @unchecked Sendable {
    /// A cell's towers and coverage areas, with their ECEF positions (`KnownRadios.ecef(of:)`,
    /// computed once when the entry is kept, not per request).
    struct CellEntry: Sendable {
        var towers: [CellTower]; var coverage: [CellCoverageRecord]
        var towerECEF: [ECEF] = [], coverageECEF: [ECEF] = []
        init(towers: [CellTower], coverage: [CellCoverageRecord]) { self.towers = towers; self.coverage = coverage }
        mutating func computeECEF() {
            towerECEF = towers.map(KnownRadios.ecef(of:)); coverageECEF = coverage.map(KnownRadios.ecef(of:))
        }
    }
    /// A known AP (or beacon) with its ECEF position.
    struct APEntry: Sendable {
        var ap: LearnedAP; var ecef: ECEF
        init(_ ap: LearnedAP) { self.ap = ap; ecef = KnownRadios.ecef(of: ap) }
    }
    /// An AP's (a beacon's) key: the 48-bit value of its MAC when its name is a normalized MAC (what the
    /// parser and the stores hand over; hashed as one integer instead of 17 bytes), else its name.
    /// Distinct names have distinct keys (a normalized MAC's spelling and value determine each other).
    enum APKey: Hashable {
        case mac(UInt64), name(String)
        init(_ s: String) { if let v = GeoAPI.macValue(s) { self = .mac(v) } else { self = .name(s) } }
        /// The keys of `names` in name order (the answer's order of APs): a normalized MAC's
        /// value orders as its spelling does (fixed width, lowercase hex), so integers are sorted.
        static func sorted(_ names: [String]) -> [APKey] { sorted(names, values: names.map(GeoAPI.macValue)) }
        /// `sorted(names)` with each name's `GeoAPI.macValue` already computed (`values[i]` of `names[i]`).
        static func sorted(_ names: [String], values: [UInt64?]) -> [APKey] {
            var macs: [UInt64] = []
            macs.reserveCapacity(names.count)
            for v in values { guard let v else { return names.sorted().map(APKey.init) }; macs.append(v) }
            macs.sort()
            return macs.map { .mac($0) }
        }
    }

    let store: any LocationStore
    let refresh: Double
    /// Past this many entries the snapshot starts over (a bound on memory, not a tuning knob:
    /// about 0.5 KB per entry).
    static let maxEntries = 1 << 20

    private let lock = NSLock()
    private var cells: [CellID: CellEntry] = [:]
    private var aps: [APKey: APEntry?] = [:]
    private var beacons: [APKey: APEntry?] = [:]
    private var generation: UInt64 = 0
    /// The change-log position the snapshot reflects (nil before the first read of it).
    private var position: Int64?
    private var lastRead = -Double.infinity
    private var reading = false

    init(store: any LocationStore, refresh: Double) {
        self.store = store; self.refresh = refresh
    }

    /// What `store.lookup` would answer, in the same order (cells by description: towers,
    /// then coverage by TA; APs and beacons by name).
    func lookup(cells wanted: Set<CellID>, bssids: Set<String>, beacons: Set<String>) async throws -> KnownRadios {
        try await followChanges()
        return try await read(wanted, bssids, beacons)
    }

    /// `lookup` with the names as lists: a hit (every radio in the snapshot) needs no set of them.
    func lookup(cells wanted: Set<CellID>, distinctBSSIDs bssids: [String], values: [UInt64?],
                distinctBeacons beacons: [String], beaconValues: [UInt64?]) async throws -> KnownRadios {
        try await followChanges()
        let sorted = APKey.sorted(bssids, values: values.count == bssids.count ? values : bssids.map(GeoAPI.macValue))
        let sortedBeacons = beacons.isEmpty ? [] : APKey.sorted(beacons, values: beaconValues.count == beacons.count ? beaconValues : beacons.map(GeoAPI.macValue))
        if let hit = lock.withLock({ assembleCached(wanted, sorted, sortedBeacons) }) { return hit }
        return try await read(wanted, Set(bssids), Set(beacons))
    }

    /// `lookup` after the change log was followed.
    private func read(_ wanted: Set<CellID>, _ bssids: Set<String>, _ beaconIDs: Set<String>) async throws -> KnownRadios {
        let (hit, gen, missingCells, missingAPs, missingBeacons) = cached(wanted, bssids, beaconIDs)
        if let hit { return hit }
        let got = try await store.lookup(cells: missingCells, bssids: missingAPs, beacons: missingBeacons)
        var fc: [CellID: CellEntry] = [:]
        for c in missingCells { fc[c] = CellEntry(towers: [], coverage: []) }
        for t in got.towers { fc[t.cell]?.towers.append(t) }
        for r in got.coverage { fc[r.cell]?.coverage.append(r) }
        for c in missingCells { fc[c]?.computeECEF() }
        return keep(wanted, bssids, beaconIDs, cells: fc, aps: Self.entries(missingAPs, got.aps),
                    beacons: Self.entries(missingBeacons, got.beacons), generation: gen)
    }

    /// The snapshot entries of a read of the names `missing`: the transmitters `found`, and
    /// "unknown" (`.some(nil)`) for the others.
    private static func entries(_ missing: Set<String>, _ found: [LearnedAP]) -> [APKey: APEntry?] {
        var out: [APKey: APEntry?] = [:]
        for b in missing { out[APKey(b)] = .some(nil) }
        for a in found where out[APKey(a.bssid)] != nil { out[APKey(a.bssid)] = .some(APEntry(a)) }
        return out
    }

    /// The answer when every radio is in the snapshot; else the generation and what is missing.
    private func cached(_ wanted: Set<CellID>, _ bssids: Set<String>, _ beaconIDs: Set<String>)
        -> (KnownRadios?, UInt64, Set<CellID>, Set<String>, Set<String>) {
        lock.withLock {
            // A hit is `assemble`'s answer, assembled while the radios are found (one look-up of
            // each instead of one to test and one to assemble); the first radio missing ends it.
            let beaconKeys = beaconIDs.isEmpty ? [] : APKey.sorted(Array(beaconIDs))
            if let hit = assembleCached(wanted, APKey.sorted(Array(bssids)), beaconKeys) { return (hit, generation, [], [], []) }
            var missingCells = Set<CellID>(), missingAPs = Set<String>(), missingBeacons = Set<String>()
            for c in wanted where cells[c] == nil { missingCells.insert(c) }
            for b in bssids where aps[APKey(b)] == nil { missingAPs.insert(b) }
            for b in beaconIDs where beacons[APKey(b)] == nil { missingBeacons.insert(b) }
            return (nil, generation, missingCells, missingAPs, missingBeacons)
        }
    }

    /// Keeps what a read fetched unless a change arrived since it started (`generation`), and
    /// answers.
    private func keep(_ wanted: Set<CellID>, _ bssids: Set<String>, _ beaconIDs: Set<String>, cells fc: [CellID: CellEntry],
                      aps fa: [APKey: APEntry?], beacons fb: [APKey: APEntry?], generation gen: UInt64) -> KnownRadios {
        lock.withLock {
            if generation == gen {
                if stored + fc.count + fa.count + fb.count > Self.maxEntries { cells = [:]; aps = [:]; beacons = [:] }
                cells.merge(fc) { $1 }
                aps.merge(fa) { $1 }
                beacons.merge(fb) { $1 }
            }
            return gather(wanted, APKey.sorted(Array(bssids)), beaconIDs.isEmpty ? [] : APKey.sorted(Array(beaconIDs)), complete: false,
                          cell: { fc[$0] ?? self.cells[$0] }, ap: { fa[$0] ?? self.aps[$0] }, beacon: { fb[$0] ?? self.beacons[$0] })!
        }
    }

    /// `gather` with nothing fetched when every radio is in the snapshot, else nil. Under the lock.
    private func assembleCached(_ wanted: Set<CellID>, _ sortedKeys: [APKey], _ beaconKeys: [APKey]) -> KnownRadios? {
        gather(wanted, sortedKeys, beaconKeys, complete: true, cell: { self.cells[$0] }, ap: { self.aps[$0] }, beacon: { self.beacons[$0] })
    }

    /// The known radios of the `wanted` cells, of the APs `sortedKeys` and of the beacons
    /// `beaconKeys` (in the answer's order), found by `cell`, `ap` and `beacon` (a transmitter
    /// known to be absent: `.some(nil)`), with their ECEF positions and MAC values. A radio no
    /// look-up has (nil) makes the answer nil when `complete`, else is left out. The first cell's
    /// lists are shared, not copied (a request names one cell as a rule). The one assembly of a
    /// hit (`assembleCached`) and of the answer after a read (`keep`); under the lock.
    @inline(__always)
    private func gather(_ wanted: Set<CellID>, _ sortedKeys: [APKey], _ beaconKeys: [APKey], complete: Bool,
                        cell: (CellID) -> CellEntry?, ap: (APKey) -> APEntry??, beacon: (APKey) -> APEntry??) -> KnownRadios? {
        var out = KnownRadios()
        var towerECEF: [ECEF] = [], coverageECEF: [ECEF] = []
        for c in Self.order(wanted) {
            guard let e = cell(c) else { if complete { return nil }; continue }
            if out.towers.isEmpty { out.towers = e.towers; towerECEF = e.towerECEF } else { out.towers += e.towers; towerECEF += e.towerECEF }
            if out.coverage.isEmpty { out.coverage = e.coverage; coverageECEF = e.coverageECEF } else {
                out.coverage += e.coverage; coverageECEF += e.coverageECEF
            }
        }
        guard Self.transmitters(sortedKeys, complete: complete, find: ap, into: &out.aps, ecef: &out.apECEF, values: &out.apValues) else { return nil }
        if !beaconKeys.isEmpty {
            guard Self.transmitters(beaconKeys, complete: complete, find: beacon, into: &out.beacons, ecef: &out.beaconECEF,
                                    values: &out.beaconValues) else { return nil }
        }
        out.towerECEF = towerECEF; out.coverageECEF = coverageECEF
        return out
    }

    /// `gather`'s part for one kind of transmitter: the known ones of `keys` found by `find`,
    /// their ECEF positions and MAC values; false when one is missing and the answer must be `complete`.
    @inline(__always)
    private static func transmitters(_ keys: [APKey], complete: Bool, find: (APKey) -> APEntry??, into list: inout [LearnedAP],
                                     ecef: inout [ECEF]?, values: inout [UInt64?]?) -> Bool {
        var e: [ECEF] = [], v: [UInt64?] = []
        list.reserveCapacity(keys.count)
        e.reserveCapacity(keys.count)
        v.reserveCapacity(keys.count)
        for k in keys {
            guard let a = find(k) else { if complete { return false }; continue }
            if let a {
                list.append(a.ap); e.append(a.ecef)
                if case .mac(let x) = k { v.append(x) } else { v.append(nil) }
            }
        }
        ecef = e; values = v
        return true
    }

    /// The cells in the order of the answer (by description).
    private static func order(_ wanted: Set<CellID>) -> [CellID] {
        wanted.count < 2 ? Array(wanted) : wanted.sorted { $0.description < $1.description }
    }

    /// Forgets the radios of `changed` (a submission this server committed).
    func forget(_ changed: RadioChanges) {
        lock.withLock {
            generation &+= 1
            forgetLocked(changed)
        }
    }

    /// Forgets the cells, APs and beacons `c` names. Under the lock.
    private func forgetLocked(_ c: RadioChanges) {
        for x in c.cells { cells[x] = nil }
        for x in c.bssids { aps[APKey(x)] = nil }
        for x in c.beacons { beacons[APKey(x)] = nil }
    }

    /// Reads the change log when `refresh` seconds have passed since the last read (one
    /// request does; the others go on with the snapshot as it is).
    func followChanges(now: Double = ProcessInfo.processInfo.systemUptime) async throws {
        guard let after = due(now) else { return }
        let changes: RadioChanges
        do { changes = try await store.changes(after: after) } catch {
            lock.withLock { reading = false }
            throw error
        }
        apply(changes, first: after == nil)
    }

    /// Nil when no read is due (or one is under way); else the position to read after.
    private func due(_ now: Double) -> Int64?? {
        lock.withLock {
            guard !reading, now - lastRead >= refresh else { return nil }
            reading = true; lastRead = now
            return .some(position)
        }
    }

    private func apply(_ changes: RadioChanges, first: Bool) {
        lock.withLock {
            reading = false
            if first || changes.overflow {
                // The first read (what was read before it may predate a change it does not list)
                // or more changes than one read takes: start over.
                generation &+= 1
                cells = [:]; aps = [:]; beacons = [:]
            } else if !changes.isEmpty {
                generation &+= 1
                forgetLocked(changes)
            }
            position = changes.last
        }
    }

    /// The lacf fallback (rare: no known cell, AP or beacon) reads the store.
    func areaCoverage(of cells: Set<CellID>) async throws -> [CellCoverageRecord] {
        try await store.areaCoverage(of: cells)
    }

    /// Entries kept (under the lock).
    private var stored: Int { cells.count + aps.count + beacons.count }
    var count: Int { lock.withLock { stored } }
}
