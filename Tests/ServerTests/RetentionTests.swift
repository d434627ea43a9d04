import Foundation
import GRDB
import Hummingbird
import HummingbirdTesting
import Logging
import Positioning
@testable import PosfuseServer
import PostgresNIO
import Replay
import Testing

/// What the store keeps bounded: the change log (`radio_changes`, pruned by age) and the
/// positions behind each TA area (`coverage_points`, capped per area).
@Suite(.serialized) struct RetentionTests {
    static func submit(_ store: any LocationStore, _ positions: [Geodetic]) async throws {
        let body = Fixture.submission(positions)
        try await store.submit(try GeoAPI.submission(body).items, digest: Learner.digest(body))
    }

    /// The log loses the rows committed before the cutoff and nothing else; a reader that had
    /// seen every pruned row reads on as before, one that had not is told to start over
    /// (`overflow`) at the log's end, and the end stays put when every row is gone.
    @Test func changeLogIsPrunedByAge() async throws {
        try await Stores.each { store, kind in
            let start = try await store.changes(after: nil).last
            try await Self.submit(store, [Fixture.square[0]])
            let a = try await store.changes(after: nil).last
            try await Task.sleep(for: .milliseconds(60))
            let cutoff = Date().timeIntervalSince1970
            try await Task.sleep(for: .milliseconds(60))
            try await Self.submit(store, [Fixture.square[1]])
            let b = try await store.changes(after: nil).last
            #expect(start < a && a < b, "\(kind)")

            #expect(try await store.pruneChanges(before: cutoff) == 1, "\(kind)")
            #expect(try await store.pruneChanges(before: cutoff) == 0, "\(kind)")
            let fromA = try await store.changes(after: a)
            #expect(!fromA.overflow && fromA.last == b && fromA.cells == [Fixture.cell], "\(kind) \(fromA)")
            #expect(Set(fromA.bssids) == Set(Fixture.aps), "\(kind)")
            let fromStart = try await store.changes(after: start)
            #expect(fromStart.overflow && fromStart.last == b, "\(kind) \(fromStart)")

            #expect(try await store.pruneChanges(before: Date().timeIntervalSince1970 + 1) == 1, "\(kind)")
            #expect(try await store.changes(after: nil).last == b, "\(kind): the log's end moved back")
            let atB = try await store.changes(after: b)
            #expect(!atB.overflow && atB.last == b && atB.cells.isEmpty, "\(kind) \(atB)")
            try await Self.submit(store, [Fixture.square[2]])
            let next = try await store.changes(after: b)
            #expect(!next.overflow && next.last > b && next.cells == [Fixture.cell], "\(kind) \(next)")
        }
    }

    /// A replica whose snapshot position was pruned past does not keep a stale answer: a cell
    /// learned through another store, whose log row was pruned before this replica read it,
    /// is located at the replica's next request (it starts its snapshot over). Without the
    /// pruned-through mark the replica would go on answering 404 from its snapshot.
    @Test func prunedReplicaStartsOver() async throws {
        let path = Fixture.temporarySQLite()
        defer { Fixture.remove(path) }
        let a = try SQLiteStore(path: path), other = try SQLiteStore(path: path)
        try await Self.replicaStartsOver(a, other, "sqlite")
        try await other.close(); try await a.close()
        if let url = Fixture.postgresURL {
            try await Stores.withPostgres(url: url + "?schema=\(Stores.schemaName())", replicas: 2) { s in
                try await Self.replicaStartsOver(s[0], s[1], "postgresql")
            }
        }
    }

    static func replicaStartsOver(_ a: any LocationStore, _ other: any LocationStore, _ kind: String) async throws {
        let t = try TestServer(store: a) { $0.snapshotRefresh = 0 }
        let body = Fixture.geolocateBody(aps: [], lacf: false)
        #expect(try await t.one(.post, "/v1/geolocate", body).status == 404, "\(kind)")
        try await submit(other, Fixture.square)
        #expect(try await other.pruneChanges(before: Date().timeIntervalSince1970 + 1) == 1, "\(kind)")
        let r = try await t.one(.post, "/v1/geolocate", body)
        #expect(r.status == 200, "\(kind): \(r.body)")
    }

    /// Rows of `coverage_points` per TA of `cell`.
    static func pointRows(_ store: any LocationStore, cell: CellID) async throws -> [Int: Int] {
        var out: [Int: Int] = [:]
        if let s = store as? SQLiteStore {
            let counted = try await s.pool.read { db in
                try Row.fetchAll(db, sql: "SELECT ta, COUNT(*) FROM coverage_points WHERE cid = ? GROUP BY ta", arguments: [cell.cid])
                    .map { (ta: $0[0] as Int, n: $0[1] as Int) }
            }
            for r in counted { out[r.ta] = r.n }
        } else if let p = store as? PostgresStore {
            for try await r in try await p.client.query("SELECT ta, COUNT(*) FROM coverage_points WHERE cid = \(cell.cid) GROUP BY ta")
                .decode((Int, Int).self) { out[r.0] = r.1 }
        }
        return out
    }

    /// With a cap of 8 positions per area, five submissions of 4–16 positions on TA rings whose
    /// arc turns from walk to walk: each area keeps 8 rows, and its position is the walk-weighted
    /// spatial median of its 8 newest positions (`celldb build`'s placement of those alone),
    /// while its count and walks still cover every position. The check can fail: the median
    /// of all positions lies metres away.
    @Test func coveragePointsAreCappedPerArea() async throws {
        let cap = 8
        try await Stores.each(maxPointsPerArea: cap) { store, kind in
            let t = try TestServer(store: store)
            let frame = LocalFrame(origin: Fixture.center)
            var rng = SplitMix64(seed: 2329)
            var all = CellCoverageMap.Builder()
            var byArea: [Int: [(walk: Int, en: SIMD2<Double>)]] = [:]
            var requests: [(HTTPRequest.Method, String, [UInt8]?)] = []
            for w in 0..<5 {
                var items: [[String: Any]] = []
                for _ in 0..<(4 + w * 3) {
                    let ta = 1 + Int(rng.uniform(0, 3))
                    let r = (Double(ta) + rng.uniform(0, 1)) * 78.12, az = rng.uniform(0.2, 0.6) + 0.3 * Double(w)
                    let p = frame.groundGeodetic(east: r * sin(az), north: r * cos(az))
                    let en = frame.en(latitude: p.latitude, longitude: p.longitude)
                    all.add(cell: Fixture.cell, timingAdvance: ta, at: en, walk: w)
                    byArea[ta, default: []].append((w, en))
                    items.append(["position": ["latitude": p.latitude, "longitude": p.longitude, "accuracy": 5.0],
                                  "cellTowers": [["radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1,
                                                  "locationAreaCode": 1000, "cellId": Fixture.cell.cid, "timingAdvance": ta, "serving": 1]]])
                }
                requests.append((.post, "/v2/geosubmit", jsonBytes(["items": items])))
            }
            #expect(try await t.run(requests).allSatisfy { $0.status == 200 }, "\(kind)")
            let rows = try await Self.pointRows(store, cell: Fixture.cell)
            let got = CellCoverageRecord.map(try await store.lookup(cells: [Fixture.cell], bssids: []).coverage, frame: frame)
            var capped = 0, apart = 0.0
            for (ta, list) in byArea {
                #expect(rows[ta] == min(cap, list.count), "\(kind) TA \(ta): \(rows[ta] ?? 0) rows of \(list.count)")
                let key = CellCoverageMap.Key(cell: Fixture.cell, timingAdvance: ta)
                let g = try #require(got.areas[key]), full = try #require(all.map.areas[key])
                #expect(g.count == list.count && g.walks == full.walks, "\(kind) TA \(ta)")
                var newest = CellCoverageMap.Builder()
                for x in list.suffix(cap) { newest.add(cell: Fixture.cell, timingAdvance: ta, at: x.en, walk: x.walk) }
                let want = try #require(newest.map.areas[key]).mean
                #expect(((g.mean - want) * (g.mean - want)).sum().squareRoot() < 1e-3, "\(kind) TA \(ta): \(g.mean) vs \(want)")
                if list.count > cap { capped += 1; apart = max(apart, ((full.mean - want) * (full.mean - want)).sum().squareRoot()) }
            }
            #expect(capped > 0 && apart > 1, "\(kind): \(capped) capped areas, medians \(apart) m apart")
        }
    }
}
