import Foundation
import Logging
import Positioning
@testable import PosfuseServer
import Replay
import Testing
import TestSupport

/// A store that counts the calls the server makes (forwarding to a real store).
final class CountingStore: LocationStore, @unchecked Sendable {
    let inner: any LocationStore
    private let lock = NSLock()
    private var _lookups = 0, _changes = 0
    var lookups: Int { lock.lock(); defer { lock.unlock() }; return _lookups }
    var changeReads: Int { lock.lock(); defer { lock.unlock() }; return _changes }
    init(_ inner: any LocationStore) { self.inner = inner }
    func lookup(cells: Set<CellID>, bssids: Set<String>, beacons: Set<String>) async throws -> KnownRadios {
        lock.withLock { _lookups += 1 }
        return try await inner.lookup(cells: cells, bssids: bssids, beacons: beacons)
    }
    func areaCoverage(of cells: Set<CellID>) async throws -> [CellCoverageRecord] { try await inner.areaCoverage(of: cells) }
    func submit(_ items: [Submission], digest: String) async throws { try await inner.submit(items, digest: digest) }
    func refitPending(limit: Int) async throws -> Int { try await inner.refitPending(limit: limit) }
    func statistics() async throws -> StoreStatistics { try await inner.statistics() }
    func changes(after: Int64?) async throws -> RadioChanges {
        lock.withLock { _changes += 1 }
        return try await inner.changes(after: after)
    }
    func pruneChanges(before cutoff: Double) async throws -> Int { try await inner.pruneChanges(before: cutoff) }
    func integrityCheck() async throws -> String { try await inner.integrityCheck() }
    func close() async throws { try await inner.close() }
}

@Suite(.serialized) struct SnapshotTests {
    /// A world of 12 APs and two LTE cells with TA, learned from 120 items, and 40 seeded
    /// requests (1–10 APs, with or without a cell).
    static func world(_ store: any LocationStore) async throws -> [GeoAPI.Query] {
        try await Fixture.learnedGrid(store)
        let aps = Fixture.gridAPs
        var rng = Xoshiro256(seed: 2325)
        var out: [GeoAPI.Query] = []
        for r in 0..<40 {
            let m = 1 + Int(rng.next() % 10)
            // Some unknown APs too (the snapshot keeps "unknown" as well).
            var chosen = Array(aps.shuffled(using: &rng).prefix(m))
            if r % 4 == 0 { chosen.append(String(format: "02:00:00:00:00:%02x", r)) }
            var q: [String: Any] = ["wifiAccessPoints": chosen.map { ["macAddress": $0, "signalStrength": -45 - Double(rng.next() % 40)] }]
            if r % 3 != 0 {
                q["cellTowers"] = [["radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1, "locationAreaCode": 1000,
                                    "cellId": 7000 + r % 5, "timingAdvance": Int(rng.next() % 4)]]
            }
            out.append(try GeoAPI.query(Array(try JSONSerialization.data(withJSONObject: q))))
        }
        return out
    }

    /// Answers through the snapshot are bit for bit the answers read from the store, both when
    /// the snapshot fills (first pass) and from memory (second pass), and the second pass runs
    /// no store look-up at all.
    @Test func snapshotAnswersAsTheStore() async throws {
        try await Stores.each { store, kind in
            let queries = try await Self.world(store)
            let pipeline = try GeoAPI.prototype(stages: [:])
            let counting = CountingStore(store)
            let snapshot = RadioSnapshot(store: counting, refresh: 3600)
            var located = 0
            for pass in 0..<2 {
                let before = counting.lookups
                for q in queries {
                    let a = try await GeoAPI.locate(q, store: store, pipeline: pipeline)
                    let b = try await GeoAPI.locate(q, store: snapshot, pipeline: pipeline)
                    #expect((a == nil) == (b == nil), "\(kind)")
                    guard let a, let b else { continue }
                    if pass == 0 { located += 1 }
                    #expect(a.latitude.bitPattern == b.latitude.bitPattern && a.longitude.bitPattern == b.longitude.bitPattern, "\(kind)")
                    #expect(a.accuracy.bitPattern == b.accuracy.bitPattern && a.covariance == b.covariance, "\(kind)")
                    #expect(a.sourcesUsed == b.sourcesUsed && a.notes == b.notes && a.knownAPs == b.knownAPs
                            && a.knownCells == b.knownCells && a.fallback == b.fallback, "\(kind)")
                    #expect(a.jsonBytes == b.jsonBytes, "\(kind)")
                }
                if pass == 1 { #expect(counting.lookups == before, "\(kind): \(counting.lookups - before) store look-ups from a warm snapshot") }
            }
            #expect(located >= 25, "\(kind): \(located)")
            #expect(counting.changeReads == 1, "\(kind)")      // the first request reads the change log; none is due after
        }
    }

    /// Through the server: a submission this server commits is used by its next request; one
    /// committed by another process on the same SQLite file (a second store, as a second
    /// replica) only once the snapshot has read the change log (`snapshotRefresh`), and then
    /// it is.
    @Test func submissionsReachTheSnapshot() async throws {
        let path = Fixture.temporarySQLite()
        defer { Fixture.remove(path) }
        let a = try SQLiteStore(path: path), other = try SQLiteStore(path: path)
        let refresh = 0.3
        let t = try TestServer(store: a) { $0.snapshotRefresh = refresh }
        let slow = try TestServer(store: a) { $0.snapshotRefresh = 3600 }
        // Without lacf (that fallback reads the store's location areas, not the snapshot).
        let body = Fixture.geolocateBody(aps: [], lacf: false)
        #expect(try await t.one(.post, "/v1/geolocate", body).status == 404)
        #expect(try await slow.one(.post, "/v1/geolocate", body).status == 404)
        // Committed by the other store: a snapshot says "unknown" until its next read of the
        // change log (the slow one's is an hour away).
        let sub = Fixture.submission(Fixture.square)
        try await other.submit(try GeoAPI.submission(sub).items, digest: Learner.digest(sub))
        #expect(try await slow.one(.post, "/v1/geolocate", body).status == 404)
        try await Task.sleep(for: .seconds(refresh))
        let after = try await t.one(.post, "/v1/geolocate", body)
        #expect(after.status == 200, "\(after.body)")
        // A submission through this server changes its own next answer at once (3 more
        // positions at one corner move the cell's area).
        let moved = Fixture.submission(Array(repeating: Fixture.square[0], count: 3))
        let r = try await t.run([(.post, "/v2/geosubmit", moved), (.post, "/v1/geolocate", body)])
        #expect(r[0].status == 200 && r[1].status == 200)
        #expect(r[1].body != after.body, "the answer did not change after a local submission")
        let direct = try await GeoAPI.locate(try GeoAPI.query(body), store: a, pipeline: try GeoAPI.prototype(stages: [:]))
        #expect(String(decoding: try #require(direct).jsonBytes, as: UTF8.self) == r[1].body)
        try await other.close(); try await a.close()
    }
}

/// The snapshot keys APs by their MAC's value and sorts the values (`RadioSnapshot.APKey`), and
/// geolocate compares names by value (`GeoAPI.macValue`, `sameName`): on seeded names (normalized
/// MACs, and other spellings a store might hold) the order is the names' order and equality the
/// names' equality.
@Suite struct MACValueTests {
    @Test func valuesOrderAndCompareAsNames() {
        var rng = Xoshiro256(seed: 23)
        let hex = Array("0123456789abcdef")
        for _ in 0..<2_000 {
            var names: [String] = []
            for _ in 0..<(1 + Int(rng.next() % 12)) {
                var s = (0..<6).map { _ in String([hex[Int(rng.next() % 16)], hex[Int(rng.next() % 16)]]) }.joined(separator: ":")
                switch rng.next() % 10 {
                case 0: s = s.uppercased()                               // not normalized: compared as a name
                case 1: s = String(s.dropLast())
                case 2: s = "radio-" + s
                default: break
                }
                if !names.contains(s) { names.append(s) }
            }
            if rng.next() % 3 == 0 { names = names.map { $0.lowercased() }.filter { $0.count == 17 } }   // all normalized
            #expect(RadioSnapshot.APKey.sorted(names) == names.sorted().map(RadioSnapshot.APKey.init))
            for a in names {
                #expect((GeoAPI.macValue(a) != nil) == (a.count == 17 && a == a.lowercased() && !a.hasPrefix("radio")))
                for b in names {
                    #expect(GeoAPI.sameName(a, GeoAPI.macValue(a), b, GeoAPI.macValue(b)) == (a == b))
                }
            }
        }
    }
}
