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
    struct CellEntry: Sendable { var towers: [CellTower]; var coverage: [CellCoverageRecord] }

    let store: any LocationStore
    let refresh: Double
    /// Past this many entries the snapshot starts over (a bound on memory, not a tuning knob:
    /// about 0.5 KB per entry).
    static let maxEntries = 1 << 20

    private let lock = NSLock()
    private var cells: [CellID: CellEntry] = [:]
    private var aps: [String: LearnedAP?] = [:]
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
    func lookup(cells wanted: Set<CellID>, distinctBSSIDs bssids: [String]) async throws -> KnownRadios {
        try await followChanges()
        let sorted = bssids.sorted()
        if let hit = lock.withLock({ assembleCached(wanted, sorted) }) { return hit }
        return try await read(wanted, Set(bssids))
    }

    /// `lookup` after the change log was followed.
    private func read(_ wanted: Set<CellID>, _ bssids: Set<String>) async throws -> KnownRadios {
        let (hit, gen, missingCells, missingAPs) = cached(wanted, bssids)
        if let hit { return hit }
        let got = try await store.lookup(cells: missingCells, bssids: missingAPs)
        var fc: [CellID: CellEntry] = [:], fa: [String: LearnedAP?] = [:]
        for c in missingCells { fc[c] = CellEntry(towers: [], coverage: []) }
        for t in got.towers { fc[t.cell]?.towers.append(t) }
        for r in got.coverage { fc[r.cell]?.coverage.append(r) }
        for b in missingAPs { fa[b] = .some(nil) }
        for a in got.aps where fa[a.bssid] != nil { fa[a.bssid] = .some(a) }
        return keep(wanted, bssids, cells: fc, aps: fa, generation: gen)
    }

    /// The answer when every radio is in the snapshot; else the generation and what is missing.
    private func cached(_ wanted: Set<CellID>, _ bssids: Set<String>)
        -> (KnownRadios?, UInt64, Set<CellID>, Set<String>) {
        lock.withLock {
            // A hit is `assemble`'s answer, assembled while the radios are found (one look-up of
            // each instead of one to test and one to assemble); the first radio missing ends it.
            if let hit = assembleCached(wanted, bssids.sorted()) { return (hit, generation, [], []) }
            var missingCells = Set<CellID>(), missingAPs = Set<String>()
            for c in wanted where cells[c] == nil { missingCells.insert(c) }
            for b in bssids where aps[b] == nil { missingAPs.insert(b) }
            return (nil, generation, missingCells, missingAPs)
        }
    }

    /// Keeps what a read fetched unless a change arrived since it started (`generation`), and
    /// answers.
    private func keep(_ wanted: Set<CellID>, _ bssids: Set<String>, cells fc: [CellID: CellEntry], aps fa: [String: LearnedAP?],
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
    private func assembleCached(_ wanted: Set<CellID>, _ sortedBSSIDs: [String]) -> KnownRadios? {
        var out = KnownRadios()
        for c in Self.order(wanted) {
            guard let e = cells[c] else { return nil }
            // The first cell's lists are shared, not copied (a request names one cell as a rule).
            if out.towers.isEmpty { out.towers = e.towers } else { out.towers += e.towers }
            if out.coverage.isEmpty { out.coverage = e.coverage } else { out.coverage += e.coverage }
        }
        out.aps.reserveCapacity(sortedBSSIDs.count)
        for b in sortedBSSIDs {
            guard let a = aps[b] else { return nil }
            if let a { out.aps.append(a) }
        }
        return out
    }

    /// The cells in the order of the answer (by description).
    private static func order(_ wanted: Set<CellID>) -> [CellID] {
        wanted.count < 2 ? Array(wanted) : wanted.sorted { $0.description < $1.description }
    }

    /// Under the lock.
    private func assemble(_ wanted: Set<CellID>, _ bssids: Set<String>, fetchedCells: [CellID: CellEntry],
                          fetchedAPs: [String: LearnedAP?]) -> KnownRadios {
        var out = KnownRadios()
        for c in Self.order(wanted) {
            guard let e = fetchedCells[c] ?? cells[c] else { continue }
            out.towers += e.towers
            out.coverage += e.coverage
        }
        for b in bssids.sorted() {
            if let a = fetchedAPs[b] ?? aps[b], let a { out.aps.append(a) }
        }
        return out
    }

    /// Forgets `cells` and `bssids` (a submission this server committed).
    func forget(cells c: [CellID], bssids b: [String]) {
        lock.withLock {
            generation &+= 1
            for x in c { cells[x] = nil }
            for x in b { aps[x] = nil }
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
                for x in changes.bssids { aps[x] = nil }
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
