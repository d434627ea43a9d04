import Foundation
import GRDB
import Logging
import Positioning
@testable import PosfuseServer
import PostgresNIO
import Replay
import Testing

/// Bluetooth beacons in `posfuse serve`: geosubmit learns them (samples, the AP estimator, the
/// pending re-fit, the change log) and geolocate uses the known ones through the pipeline's `ble`
/// stage, on both stores (PostgreSQL when a server answers; `Stores.each` says when it skips).
@Suite(.serialized) struct BeaconTests {
    /// Four beacons on the corners of a 40 m square around `Fixture.center`, ids in corner order.
    static let beacons = ["c0:ff:ee:00:00:01", "c0:ff:ee:00:00:02", "c0:ff:ee:00:00:03", "c0:ff:ee:00:00:04"]
    static let corners: [SIMD2<Double>] = [SIMD2(-20, -20), SIMD2(20, -20), SIMD2(20, 20), SIMD2(-20, 20)]
    /// The level every learning sample has, dBm, and the distance of the samples from the point
    /// they surround, m.
    static let sampleRSS = -70.0, sampleRing = 5.0

    /// A geosubmit body: per beacon, four items 5 m east, west, north and south of `corner +
    /// offset`, each hearing only that beacon at −70 dBm (no cell, no WiFi). Equal levels at
    /// symmetric positions: the weighted centroid is the point they surround.
    static func submission(offset: SIMD2<Double> = .zero, ids: [String] = beacons) -> [UInt8] {
        let f = LocalFrame(origin: Fixture.center)
        var items: [[String: Any]] = []
        for (i, id) in ids.enumerated() {
            let c = corners[i % corners.count] + offset
            for d in [SIMD2(sampleRing, 0), SIMD2(-sampleRing, 0), SIMD2(0, sampleRing), SIMD2(0, -sampleRing)] {
                let p = f.groundGeodetic(east: c.x + d.x, north: c.y + d.y)
                items.append(["timestamp": 1_700_000_000_000,
                              "position": ["latitude": p.latitude, "longitude": p.longitude, "accuracy": 5.0],
                              "bluetoothBeacons": [["macAddress": id.uppercased(), "signalStrength": sampleRSS, "age": 200, "name": "tag"]]])
            }
        }
        return jsonBytes(["items": items])
    }

    /// A geolocate body with only `beacons` (each at `rss`), plus WiFi APs when given.
    static func geolocate(_ ids: [String], rss: Double = -65, aps: [String] = []) -> [UInt8] {
        var o: [String: Any] = ["considerIp": false, "bluetoothBeacons": ids.map { ["macAddress": $0, "signalStrength": rss] }]
        if !aps.isEmpty { o["wifiAccessPoints"] = aps.map { ["macAddress": $0, "signalStrength": -65] } }
        return jsonBytes(o)
    }

    /// The east/north offset (m) of an answer from `Fixture.center`.
    static func offset(_ r: TestServer.Reply) throws -> SIMD2<Double> {
        let loc = try #require(r.json["location"] as? [String: Any])
        return LocalFrame(origin: Fixture.center).en(latitude: try #require(loc["lat"] as? Double), longitude: try #require(loc["lng"] as? Double))
    }

    /// The ekf's 95 % radius of one `ble` fix of four equal-level beacons on the square (the
    /// noise-free geometry of these tests): the WCL spread about the centre is S = diag(400, 400)
    /// m² (four anchors, weights ¼, at ±20 m), Σ = κ·S + σ0²·I = 0.03 · 400 + 11² = 133 m², taken
    /// by the filter with the `ble` inflation α (R × α²).
    static func squareAccuracy() throws -> Double {
        let wcl = WCLEstimator()
        let alpha = try #require(FusionStage.Settings.defaultInflation[.ble])
        let v = (wcl.kappa * 400 + wcl.sigma0 * wcl.sigma0) * alpha * alpha
        return Covariance2(ee: v, en: 0, nn: v).circularRadius(probability: 0.95)
    }

    /// geosubmit stores the beacon samples and fits each beacon with the AP estimator: at the
    /// centroid of its samples (the corner, to 1 mm), P0 by the median rule with n = 2.5 (fewer
    /// than 20 samples: −70 + 25·log10 5 dBm), four samples; /health counts them; the change log
    /// names them; a beacon with fewer than three samples does not exist.
    @Test func geosubmitLearnsBeacons() async throws {
        try await Stores.each { store, kind in
            let t = try TestServer(store: store)
            let few = "c0:ff:ee:00:00:99"
            let lone = jsonBytes(["items": [["position": ["latitude": Fixture.center.latitude, "longitude": Fixture.center.longitude, "accuracy": 5.0],
                                             "bluetoothBeacons": [["macAddress": few, "signalStrength": -70]]]]])
            let r = try await t.run([(.post, "/v2/geosubmit", Self.submission()), (.post, "/v2/geosubmit", lone), (.get, "/health", nil)])
            #expect(r[0].status == 200 && r[0].body == "{}" && r[1].status == 200, "\(kind): \(r[0].body) \(r[1].body)")
            #expect(r[2].json["beacons"] as? Int == 4 && r[2].json["aps"] as? Int == 0, "\(kind): \(r[2].body)")
            let known = try await store.lookup(cells: [], bssids: [], beacons: Set(Self.beacons + [few]))
            #expect(known.beacons.map(\.bssid) == Self.beacons && known.aps.isEmpty, "\(kind): \(known.beacons.map(\.bssid))")
            let f = LocalFrame(origin: Fixture.center)
            let p0 = Self.sampleRSS + 25 * log10(Self.sampleRing)
            for (b, c) in zip(known.beacons, Self.corners) {
                let p = f.en(latitude: b.position.latitude, longitude: b.position.longitude)
                #expect(abs(p.x - c.x) < 1e-3 && abs(p.y - c.y) < 1e-3, "\(kind) \(b.bssid): \(p)")
                #expect(abs((b.p0 ?? 0) - p0) < 1e-4 && b.pathLossExponent == 2.5 && b.samples == 4 && !b.modelFitted,
                        "\(kind) \(b.bssid): p0 \(b.p0 ?? .nan), n \(b.pathLossExponent ?? .nan), \(b.samples) samples")
            }
            // Beacons live apart from the APs: no AP of these names.
            #expect(try await store.lookup(cells: [], bssids: Set(Self.beacons)).aps.isEmpty, "\(kind)")
            let log = try await store.changes(after: 0)
            #expect(Set(log.beacons) == Set(Self.beacons + [few]) && log.bssids.isEmpty && log.cells.isEmpty, "\(kind): \(log)")
        }
    }

    /// geolocate with only beacons, all known: the `ble` stage's weighted centroid of the four
    /// corners (the square's centre, to 1 mm) fused by the ekf, whose 95 % radius is the fix's
    /// covariance with the `ble` inflation (`squareAccuracy`, to 10⁻⁶ m).
    @Test func beaconsOnlyAreLocated() async throws {
        let want = try Self.squareAccuracy()
        try await Stores.each { store, kind in
            let t = try TestServer(store: store)
            let r = try await t.run([(.post, "/v2/geosubmit", Self.submission()), (.post, "/v1/geolocate", Self.geolocate(Self.beacons))])
            #expect(r[1].status == 200, "\(kind): \(r[1].body)")
            let en = try Self.offset(r[1])
            #expect(abs(en.x) < 1e-3 && abs(en.y) < 1e-3, "\(kind): \(en)")
            let acc = try #require(r[1].json["accuracy"] as? Double)
            #expect(abs(acc - want) < 1e-6, "\(kind): \(acc) vs \(want)")
            let extra = try #require(r[1].json["posfuse"] as? [String: Any])
            #expect(extra["sources_used"] as? [String] == ["ble"], "\(kind): \(r[1].body)")
            let known = try #require(extra["known"] as? [String: Any])
            #expect(known["bluetooth"] as? Int == 4 && known["wifi"] as? Int == 0 && known["cells"] as? Int == 0, "\(kind): \(known)")
        }
    }

    /// `/v1/refine` looks up the beacons a report's `ble` evidence names, as it does its APs
    /// (session 25): a report 40 m east of the square's centre with one scan of the four
    /// beacons at one level is refined with `ble` toward the centre (the fix at the centre and
    /// the report's own 30 m position fused: between the two, nearer the fix); before the store
    /// knows the beacons the same record is only reported, its position unchanged.
    @Test func refineUsesLearnedBeacons() async throws {
        let f = LocalFrame(origin: Fixture.center)
        let at = f.groundGeodetic(east: 40, north: 0)
        let record = jsonBytes(["id": "b1", "lat": at.latitude, "lon": at.longitude, "accuracy_m": 30.0, "t": 10,
                                "evidence": [["t": 9.5, "type": "ble", "beacons": Self.beacons.map { ["id": $0, "rss": -65] }]]])
        try await Stores.each { store, kind in
            let t = try TestServer(store: store)
            let r = try await t.run([(.post, "/v1/refine", record), (.post, "/v2/geosubmit", Self.submission()), (.post, "/v1/refine", record)])
            #expect(r[0].status == 200 && r[2].status == 200, "\(kind): \(r[0].body) \(r[2].body)")
            let before = try #require(r[0].json["properties"] as? [String: Any])
            #expect(before["status"] as? String == "reported" && before["shift_m"] as? Double == 0, "\(kind): \(r[0].body)")
            let p = try #require(r[2].json["properties"] as? [String: Any])
            #expect(p["status"] as? String == "refined" && (p["sources_used"] as? [String])?.contains("ble") == true, "\(kind): \(r[2].body)")
            let c = try #require((r[2].json["geometry"] as? [String: Any])?["coordinates"] as? [Double])
            let en = f.en(latitude: c[1], longitude: c[0])
            #expect(en.x > 0 && en.x < 20 && abs(en.y) < 1e-3, "\(kind): \(en)")
        }
    }

    /// Unknown beacons get WiFi's "not found"; so does a single known beacon (the privacy rule
    /// of WiFi: at least two known), with unknown ones beside it; two known ones are located.
    /// A `bluetoothBeacons` member that is not an array of objects is a parseError.
    @Test func unknownBeaconsAreNotFound() async throws {
        try await Stores.each { store, kind in
            let t = try TestServer(store: store)
            let unknown = ["c0:ff:ee:00:01:01", "c0:ff:ee:00:01:02"]
            let r = try await t.run([
                (.post, "/v1/geolocate", Self.geolocate(unknown)),
                (.post, "/v2/geosubmit", Self.submission()),
                (.post, "/v1/geolocate", Self.geolocate(unknown)),
                (.post, "/v1/geolocate", Self.geolocate([Self.beacons[0]] + unknown)),
                (.post, "/v1/geolocate", Self.geolocate(Array(Self.beacons.prefix(2)) + unknown)),
                (.post, "/v1/geolocate", Array(#"{"bluetoothBeacons": 3}"#.utf8)),
                (.post, "/v1/geolocate", Array(#"{"bluetoothBeacons": [1]}"#.utf8)),
            ])
            let notFound = try Fixture.json("error-notfound.json"), parse = try Fixture.json("error-parse.json")
            for i in [0, 2, 3] { #expect(r[i].status == 404 && contains(r[i].json, notFound), "\(kind) \(i): \(r[i].body)") }
            #expect(r[4].status == 200, "\(kind): \(r[4].body)")
            // Two beacons 40 m apart at equal levels: their midpoint (corners 0 and 1: (0, −20)).
            let en = try Self.offset(r[4])
            #expect(abs(en.x) < 1e-3 && abs(en.y + 20) < 1e-3, "\(kind): \(en)")
            for i in [5, 6] { #expect(r[i].status == 400 && contains(r[i].json, parse), "\(kind) \(i): \(r[i].body)") }
        }
    }

    /// Beacons and WiFi together: both stages' fixes are fused (`sources_used` has `wcl` and
    /// `ble`), the answer stays at the centre where both put it, and it is tighter than the
    /// beacons' alone.
    @Test func beaconsAndWiFiAreBothUsed() async throws {
        let beaconsAlone = try Self.squareAccuracy()
        try await Stores.each { store, kind in
            let t = try TestServer(store: store)
            // The APs of `Fixture.submission`: heard at the same level from the four corners, so
            // each sits at the centre.
            let r = try await t.run([
                (.post, "/v2/geosubmit", Fixture.submission(Fixture.square)),
                (.post, "/v2/geosubmit", Self.submission()),
                (.post, "/v1/geolocate", Self.geolocate(Self.beacons, aps: Fixture.aps)),
            ])
            #expect(r[2].status == 200, "\(kind): \(r[2].body)")
            let en = try Self.offset(r[2])
            #expect(abs(en.x) < 1e-3 && abs(en.y) < 1e-3, "\(kind): \(en)")
            let extra = try #require(r[2].json["posfuse"] as? [String: Any])
            let used = extra["sources_used"] as? [String] ?? []
            #expect(used.contains("ble") && used.contains("wcl"), "\(kind): \(r[2].body)")
            let known = try #require(extra["known"] as? [String: Any])
            #expect(known["bluetooth"] as? Int == 4 && known["wifi"] as? Int == 3, "\(kind): \(known)")
            let acc = try #require(r[2].json["accuracy"] as? Double)
            #expect(acc < beaconsAlone, "\(kind): \(acc) vs \(beaconsAlone) from the beacons alone")
        }
    }

    /// A beacon re-learned after geolocate read it is read again (the snapshot forgets the
    /// beacons a committed submission names): four more samples per beacon around a point 10 m
    /// east move each beacon, and the answer, 5 m east (to 1 mm).
    @Test func relearnedBeaconsReachGeolocate() async throws {
        try await Stores.each { store, kind in
            let t = try TestServer(store: store)
            let r = try await t.run([
                (.post, "/v2/geosubmit", Self.submission()),
                (.post, "/v1/geolocate", Self.geolocate(Self.beacons)),
                (.post, "/v2/geosubmit", Self.submission(offset: SIMD2(10, 0))),
                (.post, "/v1/geolocate", Self.geolocate(Self.beacons)),
            ])
            #expect(r[1].status == 200 && r[3].status == 200, "\(kind): \(r[1].body) \(r[3].body)")
            let before = try Self.offset(r[1]), after = try Self.offset(r[3])
            #expect(abs(before.x) < 1e-3 && abs(after.x - 5) < 1e-3 && abs(after.y) < 1e-3, "\(kind): \(before) → \(after)")
            let known = try await store.lookup(cells: [], bssids: [], beacons: Set(Self.beacons))
            #expect(known.beacons.allSatisfy { $0.samples == 8 }, "\(kind)")
        }
    }

    /// A store created before beacons were learned (a change log without the `beacons` column)
    /// gains it when opened, and logs beacons from then on: SQLite (a file with the old table)
    /// and PostgreSQL (a schema with the old table, then `migrate`).
    @Test func olderChangeLogIsMigrated() async throws {
        let path = Fixture.temporarySQLite()
        defer { Fixture.remove(path) }
        let old = try DatabaseQueue(path: path)
        try await old.write { db in
            try db.execute(sql: "CREATE TABLE radio_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, cells TEXT NOT NULL, bssids TEXT NOT NULL)")
            try db.execute(sql: "INSERT INTO radio_changes (cells, bssids) VALUES ('', '00:1b:cc:00:00:01')")
        }
        try old.close()
        let s = try SQLiteStore(path: path)
        try await s.submit(try GeoAPI.submission(Self.submission()).items, digest: "x")
        let log = try await s.changes(after: 0)
        #expect(log.bssids == ["00:1b:cc:00:00:01"] && Set(log.beacons) == Set(Self.beacons), "\(log)")
        try await s.close()

        guard let url = Fixture.postgresURL else { return }
        let schema = Stores.schemaName()
        try await Stores.withPostgres(url: url + "?schema=\(schema)", replicas: 1) { stores in
            // `withPostgres` migrated the schema: drop the log and put the old one back, then migrate again.
            let c = stores[0].client
            _ = try await c.query("DROP TABLE radio_changes")
            _ = try await c.query("CREATE TABLE radio_changes (seq BIGSERIAL PRIMARY KEY, cells TEXT NOT NULL, bssids TEXT NOT NULL)")
            _ = try await c.query("INSERT INTO radio_changes (cells, bssids) VALUES ('', '00:1b:cc:00:00:01')")
            try await stores[0].migrate()
            try await stores[0].submit(try GeoAPI.submission(Self.submission()).items, digest: "x")
            let log = try await stores[0].changes(after: 0)
            #expect(log.bssids == ["00:1b:cc:00:00:01"] && Set(log.beacons) == Set(Self.beacons), "postgresql: \(log)")
        }
    }
}
