import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Positioning
@testable import PosfuseServer
import Replay
import Testing
import TestSupport

/// Shared fixtures and helpers of the service tests.
enum Fixture {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let root = PackagePaths.root
    static func bytes(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: folder.appendingPathComponent(name))) }
    static func json(_ name: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes(name))) as? [String: Any])
    }

    /// The synthetic world: cell 228-1-1000-123456 (LTE) and three APs, learned from
    /// submissions at four positions on a 40 m square around `center`.
    static let center = Geodetic(latitude: 47.3700, longitude: 8.5400)
    static let cell = CellID(rat: .lte, mcc: 228, mnc: 1, area: 1000, cid: 123456)
    static let aps = ["00:1b:cc:00:00:01", "00:1b:cc:00:00:02", "00:1b:cc:00:00:03"]
    static var square: [Geodetic] {
        let f = LocalFrame(origin: center)
        return [(-20.0, -20.0), (20, -20), (20, 20), (-20, 20)].map { f.groundGeodetic(east: $0.0, north: $0.1) }
    }

    /// A geosubmit body: one item per position, with the cell (TA 2) and the APs.
    static func submission(_ positions: [Geodetic], cell: CellID = cell, ta: Int? = 2, aps: [String] = aps, ssid: String? = nil) -> [UInt8] {
        let items: [[String: Any]] = positions.map { p in
            var c: [String: Any] = ["radioType": "lte", "mobileCountryCode": cell.mcc, "mobileNetworkCode": cell.mnc,
                                    "locationAreaCode": cell.area, "cellId": cell.cid, "serving": 1]
            if let ta { c["timingAdvance"] = ta }
            return ["timestamp": 1_700_000_000_000,
                    "position": ["latitude": p.latitude, "longitude": p.longitude, "accuracy": 5.0],
                    "cellTowers": [c],
                    "wifiAccessPoints": aps.enumerated().map { i, m -> [String: Any] in
                        var w: [String: Any] = ["macAddress": m, "signalStrength": -60 - 5 * i]
                        if let ssid { w["ssid"] = ssid }
                        return w
                    }]
        }
        return jsonBytes(["items": items])
    }

    static func geolocateBody(cells: [CellID] = [cell], ta: Int? = 2, aps: [String] = aps, lacf: Bool = true) -> [UInt8] {
        var o: [String: Any] = ["considerIp": false, "fallbacks": ["lacf": lacf]]
        o["cellTowers"] = cells.map { c -> [String: Any] in
            var d: [String: Any] = ["radioType": "lte", "mobileCountryCode": c.mcc, "mobileNetworkCode": c.mnc,
                                    "locationAreaCode": c.area, "cellId": c.cid]
            if let ta { d["timingAdvance"] = ta }
            return d
        }
        o["wifiAccessPoints"] = aps.map { ["macAddress": $0, "signalStrength": -65] }
        return jsonBytes(o)
    }

    static func temporarySQLite() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-serve-test-\(getpid())-\(UUID().uuidString).sqlite").path
    }
    static func remove(_ path: String) {
        for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) }
    }

    /// The 12 APs of `learnedGrid`: 25 m apart east, 30 m north (a 4 × 3 grid from `center`).
    static let gridAPs = (0..<12).map { String(format: "00:1b:cc:00:01:%02x", $0) }

    /// Teaches `store` a small world in one submission: 120 positions on an 8 m grid (12 × 10)
    /// from `center`, each hearing the 12 `gridAPs` with a log-distance RSS (−40 dBm at 1 m,
    /// exponent 2.5) and serving LTE cell 228/1/1000/7000 + k mod 2 with TA 1 + k mod 3.
    static func learnedGrid(_ store: any LocationStore) async throws {
        let f = LocalFrame(origin: center)
        func apXY(_ i: Int) -> SIMD2<Double> { SIMD2(Double(i % 4) * 25, Double(i / 4) * 30) }
        var items: [[String: Any]] = []
        for k in 0..<120 {
            let e = Double(k % 12) * 8, n = Double(k / 12) * 8
            let p = f.groundGeodetic(east: e, north: n)
            let wifi = gridAPs.enumerated().map { i, a -> [String: Any] in
                ["macAddress": a, "signalStrength": -40 - 25 * log10(max(1, ((apXY(i) - SIMD2(e, n)) * (apXY(i) - SIMD2(e, n))).sum().squareRoot()))]
            }
            items.append(["position": ["latitude": p.latitude, "longitude": p.longitude, "accuracy": 5.0],
                          "cellTowers": [["radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1, "locationAreaCode": 1000,
                                          "cellId": 7000 + k % 2, "timingAdvance": 1 + k % 3, "serving": 1]],
                          "wifiAccessPoints": wifi])
        }
        let body = Array(try JSONSerialization.data(withJSONObject: ["items": items]))
        try await store.submit(try GeoAPI.submission(body).items, digest: Learner.digest(body))
    }

    /// The PostgreSQL server of the tests: POSFUSE_TEST_POSTGRES, else the one
    /// `scripts/postgres-test-server.sh` starts. Nil (tests skip, saying so) when none answers.
    static let postgresURL: String? = {
        let url = ProcessInfo.processInfo.environment["POSFUSE_TEST_POSTGRES"] ?? "postgres://posfuse:posfuse@127.0.0.1:54329/posfuse_test"
        guard let u = URLComponents(string: url), let host = u.host else { return nil }
        // A TCP connect probe (the driver would retry for its connect timeout).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(u.port ?? 5432).bigEndian)
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &a.sin_addr) == 1 else { return nil }
        let ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if ok != 0 {
            print("PostgreSQL tests skipped: no server at \(host):\(u.port ?? 5432) (run scripts/postgres-test-server.sh as root, or set POSFUSE_TEST_POSTGRES)")
            return nil
        }
        return url
    }()
}

/// A server over a store, driven through Hummingbird's router test client.
struct TestServer {
    let server: LocationServer

    init(store: any LocationStore, configure: (inout ServerOptions) -> Void = { _ in }) throws {
        var o = ServerOptions()
        o.port = 0
        configure(&o)
        server = try LocationServer(store: store, options: o, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
    }

    struct Reply {
        var status: Int
        var body: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
    }

    /// Sends requests in order through the router (no socket).
    func run(_ requests: [(HTTPRequest.Method, String, [UInt8]?)]) async throws -> [Reply] {
        let app = server.application()
        return try await app.test(.router) { client in
            var out: [Reply] = []
            for (m, uri, body) in requests {
                let r = try await client.execute(uri: uri, method: m, body: body.map { ByteBuffer(bytes: $0) })
                out.append(Reply(status: Int(r.status.code), body: String(buffer: r.body)))
            }
            return out
        }
    }

    func one(_ m: HTTPRequest.Method, _ uri: String, _ body: [UInt8]? = nil) async throws -> Reply {
        try await run([(m, uri, body)])[0]
    }
}

/// Every member of `expected` is in `actual` with an equal value (objects recursively; extra
/// members of `actual` are the superset's).
func contains(_ actual: Any?, _ expected: Any?) -> Bool {
    switch (actual, expected) {
    case (let a as [String: Any], let e as [String: Any]):
        return e.allSatisfy { k, v in contains(a[k], v) }
    case (let a as [Any], let e as [Any]):
        return a.count == e.count && zip(a, e).allSatisfy { contains($0, $1) }
    case (let a as NSNumber, let e as NSNumber): return a == e
    case (let a as String, let e as String): return a == e
    case (is NSNull, is NSNull): return true
    default: return false
    }
}

/// Every member of `expected` is in `actual` with the same JSON type (objects recursively):
/// the documented response shape, whatever the values.
func sameShape(_ actual: Any?, _ expected: Any?) -> Bool {
    switch (actual, expected) {
    case (let a as [String: Any], let e as [String: Any]): return e.allSatisfy { k, v in sameShape(a[k], v) }
    case (is [Any], is [Any]): return true
    case (is NSNumber, is NSNumber): return true
    case (is String, is String): return true
    default: return false
    }
}

/// JSON bytes of an object (sorted keys).
func jsonBytes(_ o: Any) -> [UInt8] {
    Array((try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data())
}
