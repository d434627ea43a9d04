import Foundation
import Positioning
import Replay

/// The server's in-memory read snapshot of the store's learned radios (docs/serve.md,
/// "Snapshot"): geolocate and refine read known cells and APs here, so a request whose radios
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
    /// A known AP with its ECEF position.
    struct APEntry: Sendable {
        var ap: LearnedAP; var ecef: ECEF
        init(_ ap: LearnedAP) { self.ap = ap; ecef = KnownRadios.ecef(of: ap) }
    }
    /// An AP's key: the 48-bit value of its MAC when its name is a normalized MAC (what the
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
    private var generation: UInt64 = 0
    /// The change-log position the snapshot reflects (nil before the first read of it).
    private var position: Int64?
    private var lastRead = -Double.infinity
    private var reading = false

    init(store: any LocationStore, refresh: Double) {
        self.store = store; self.refresh = refresh
    }

    /// What `store.lookup` would answer, in the same order (cells by description: towers,
    /// then coverage by TA; APs by name).
    func lookup(cells wanted: Set<CellID>, bssids: Set<String>) async throws -> KnownRadios {
        try await followChanges()
        return try await read(wanted, bssids)
    }

    /// `lookup` with the names as a list: a hit (every radio in the snapshot) needs no set of them.
    func lookup(cells wanted: Set<CellID>, distinctBSSIDs bssids: [String], values: [UInt64?]) async throws -> KnownRadios {
        try await followChanges()
        let sorted = APKey.sorted(bssids, values: values.count == bssids.count ? values : bssids.map(GeoAPI.macValue))
        if let hit = lock.withLock({ assembleCached(wanted, sorted) }) { return hit }
        return try await read(wanted, Set(bssids))
    }

    /// `lookup` after the change log was followed.
    private func read(_ wanted: Set<CellID>, _ bssids: Set<String>) async throws -> KnownRadios {
        let (hit, gen, missingCells, missingAPs) = cached(wanted, bssids)
        if let hit { return hit }
        let got = try await store.lookup(cells: missingCells, bssids: missingAPs)
        var fc: [CellID: CellEntry] = [:], fa: [APKey: APEntry?] = [:]
        for c in missingCells { fc[c] = CellEntry(towers: [], coverage: []) }
        for t in got.towers { fc[t.cell]?.towers.append(t) }
        for r in got.coverage { fc[r.cell]?.coverage.append(r) }
        for c in missingCells { fc[c]?.computeECEF() }
        for b in missingAPs { fa[APKey(b)] = .some(nil) }
        for a in got.aps where fa[APKey(a.bssid)] != nil { fa[APKey(a.bssid)] = .some(APEntry(a)) }
        return keep(wanted, bssids, cells: fc, aps: fa, generation: gen)
    }

    /// The answer when every radio is in the snapshot; else the generation and what is missing.
    private func cached(_ wanted: Set<CellID>, _ bssids: Set<String>)
        -> (KnownRadios?, UInt64, Set<CellID>, Set<String>) {
        lock.withLock {
            // A hit is `assemble`'s answer, assembled while the radios are found (one look-up of
            // each instead of one to test and one to assemble); the first radio missing ends it.
            if let hit = assembleCached(wanted, APKey.sorted(Array(bssids))) { return (hit, generation, [], []) }
            var missingCells = Set<CellID>(), missingAPs = Set<String>()
            for c in wanted where cells[c] == nil { missingCells.insert(c) }
            for b in bssids where aps[APKey(b)] == nil { missingAPs.insert(b) }
            return (nil, generation, missingCells, missingAPs)
        }
    }

    /// Keeps what a read fetched unless a change arrived since it started (`generation`), and
    /// answers.
    private func keep(_ wanted: Set<CellID>, _ bssids: Set<String>, cells fc: [CellID: CellEntry], aps fa: [APKey: APEntry?],
                      generation gen: UInt64) -> KnownRadios {
        lock.withLock {
            if generation == gen {
                if cells.count + aps.count + fc.count + fa.count > Self.maxEntries { cells = [:]; aps = [:] }
                cells.merge(fc) { $1 }
                aps.merge(fa) { $1 }
            }
            return assemble(wanted, bssids, fetchedCells: fc, fetchedAPs: fa)
        }
    }

    /// `assemble` with nothing fetched when every radio is in the snapshot, else nil. Under the lock.
    private func assembleCached(_ wanted: Set<CellID>, _ sortedKeys: [APKey]) -> KnownRadios? {
        gather(wanted, sortedKeys, complete: true, cell: { self.cells[$0] }, ap: { self.aps[$0] })
    }

    /// The known radios of the `wanted` cells and of the APs `sortedKeys` (in the answer's order),
    /// found by `cell` and `ap` (an AP known to be absent: `.some(nil)`), with their ECEF positions
    /// and MAC values. A radio neither look-up has (nil) makes the answer nil when `complete`, else
    /// is left out. The first cell's lists are shared, not copied (a request names one cell as a
    /// rule). The one assembly of `assembleCached` (a hit) and `assemble` (after a read).
    @inline(__always)
    private func gather(_ wanted: Set<CellID>, _ sortedKeys: [APKey], complete: Bool,
                        cell: (CellID) -> CellEntry?, ap: (APKey) -> APEntry??) -> KnownRadios? {
        var out = KnownRadios()
        var towerECEF: [ECEF] = [], coverageECEF: [ECEF] = [], apECEF: [ECEF] = []
        for c in Self.order(wanted) {
            guard let e = cell(c) else { if complete { return nil }; continue }
            if out.towers.isEmpty { out.towers = e.towers; towerECEF = e.towerECEF } else { out.towers += e.towers; towerECEF += e.towerECEF }
            if out.coverage.isEmpty { out.coverage = e.coverage; coverageECEF = e.coverageECEF } else {
                out.coverage += e.coverage; coverageECEF += e.coverageECEF
            }
        }
        var apValues: [UInt64?] = []
        out.aps.reserveCapacity(sortedKeys.count)
        apECEF.reserveCapacity(sortedKeys.count)
        apValues.reserveCapacity(sortedKeys.count)
        for k in sortedKeys {
            guard let a = ap(k) else { if complete { return nil }; continue }
            if let a {
                out.aps.append(a.ap); apECEF.append(a.ecef)
                if case .mac(let v) = k { apValues.append(v) } else { apValues.append(nil) }
            }
        }
        out.towerECEF = towerECEF; out.coverageECEF = coverageECEF; out.apECEF = apECEF; out.apValues = apValues
        return out
    }

    /// The cells in the order of the answer (by description).
    private static func order(_ wanted: Set<CellID>) -> [CellID] {
        wanted.count < 2 ? Array(wanted) : wanted.sorted { $0.description < $1.description }
    }

    /// The answer after a read: the fetched radios, else the snapshot's; radios neither has are
    /// left out. Under the lock.
    private func assemble(_ wanted: Set<CellID>, _ bssids: Set<String>, fetchedCells: [CellID: CellEntry],
                          fetchedAPs: [APKey: APEntry?]) -> KnownRadios {
        gather(wanted, APKey.sorted(Array(bssids)), complete: false,
               cell: { fetchedCells[$0] ?? self.cells[$0] }, ap: { fetchedAPs[$0] ?? self.aps[$0] })!
    }

    /// Forgets `cells` and `bssids` (a submission this server committed).
    func forget(cells c: [CellID], bssids b: [String]) {
        lock.withLock {
            generation &+= 1
            for x in c { cells[x] = nil }
            for x in b { aps[APKey(x)] = nil }
        }
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
                cells = [:]; aps = [:]
            } else if !changes.cells.isEmpty || !changes.bssids.isEmpty {
                generation &+= 1
                for x in changes.cells { cells[x] = nil }
                for x in changes.bssids { aps[APKey(x)] = nil }
            }
            position = changes.last
        }
    }

    /// The lacf fallback (rare: no known cell or AP) reads the store.
    func areaCoverage(of cells: Set<CellID>) async throws -> [CellCoverageRecord] {
        try await store.areaCoverage(of: cells)
    }

    var count: Int { lock.withLock { cells.count + aps.count } }
}
