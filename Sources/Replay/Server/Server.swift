import Foundation
import Hummingbird
import Logging
import NIOCore
import Positioning
import Prometheus
import Replay
import ServiceLifecycle

/// `posfuse serve` (docs/serve.md): the MLS/ichnaea and Google Geolocation API (geolocate,
/// geosubmit) and report refinement over HTTP, on Hummingbird 2.
public struct ServerOptions: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// `--require-key`: which endpoints need a valid key.
    public enum KeyRule: String, Sendable, CaseIterable { case none, submit, all }
    public var requireKey: KeyRule = .none
    public var keys: APIKeys = APIKeys()
    /// Requests per second per key (token bucket, burst = 1 s worth); 0 = unlimited. Requests
    /// without a key share one bucket.
    public var rateLimit: Double = 0
    /// Request body limit, bytes (413 above).
    public var maxBodyBytes = 1 << 20
    /// Time a client has to send its body, s (408 after), and idle time before a kept-alive
    /// connection is closed, s.
    public var bodyTimeout: Double = 10
    public var idleTimeout: Double = 30
    /// Seconds between reads of the store's change log by the radio snapshot (`RadioSnapshot`):
    /// a submission committed through another replica is used within this plus one read.
    public var snapshotRefresh: Double = 0.25
    /// Seconds the store's change log keeps a row (`RadioChanges.defaultRetention`); older
    /// rows are deleted once a minute (`ChangeLogPruner`). Must be ≥ 10 × `snapshotRefresh`.
    public var changeRetention: Double = RadioChanges.defaultRetention
    /// Adds `POST /v0/empty` (answers `{}` without reading anything): the benchmark's reference.
    public var emptyHandler = false
    public var stages: [String: StageOptions] = [:]
    /// refine's `--reference` (reference.json), besides the store.
    public var referenceURL: URL?
    public init() {}
}

/// API keys: a file of lines `KEY [REQUESTS_PER_SECOND]` ('#' starts a comment). A key's own
/// rate overrides `--rate-limit`.
public struct APIKeys: Sendable {
    public var rates: [String: Double?] = [:]
    public init() {}
    public init(file: String) throws {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw ServeError.configuration("cannot read the key file \(file)") }
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            if f.isEmpty { continue }
            guard f.count <= 2, f[0].count >= 8 else {
                throw ServeError.configuration("\(file):\(i + 1): expected 'KEY [REQUESTS_PER_SECOND]' with a key of at least 8 characters")
            }
            if f.count == 2 {
                guard let r = Double(f[1]), r > 0 else { throw ServeError.configuration("\(file):\(i + 1): the rate must be a number > 0") }
                rates[f[0]] = r
            } else {
                rates[f[0]] = .some(nil)
            }
        }
    }
    public var isEmpty: Bool { rates.isEmpty }
    public func contains(_ k: String) -> Bool { rates[k] != nil }
}

/// Token buckets per key.
final class RateLimiter: @unchecked Sendable {
    private let lock = NSLock()
    private var buckets: [String: (tokens: Double, time: Double)] = [:]
    /// True if a request of `key` at rate `rate`/s may pass now.
    func allow(_ key: String, rate: Double, now: Double = ProcessInfo.processInfo.systemUptime) -> Bool {
        lock.lock(); defer { lock.unlock() }
        let burst = max(1, rate)
        var b = buckets[key] ?? (burst, now)
        b.tokens = min(burst, b.tokens + (now - b.time) * rate)
        b.time = now
        let ok = b.tokens >= 1
        if ok { b.tokens -= 1 }
        buckets[key] = b
        return ok
    }
}

/// The service's Prometheus metrics (text exposition at /metrics).
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    let requests: [String: [Int: Counter]]
    let latency: [String: DurationHistogram]
    let located: Counter, notLocated: Counter, submitted: Counter
    let cells: Gauge, coverageAreas: Gauge, aps: Gauge, beacons: Gauge, share: Gauge
    static let endpoints = ["geolocate", "geosubmit", "refine", "health", "metrics", "empty", "other"]
    static let statuses = [200, 400, 403, 404, 408, 413, 500, 503]

    /// A metric name: posfuse_<metric>[_<unit>].
    static func d(_ metric: String, _ unit: String = "", _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "posfuse", metricName: metric, unitName: unit, helpText: help)
    }

    init() {
        var r: [String: [Int: Counter]] = [:], l: [String: DurationHistogram] = [:]
        let buckets: [Duration] = [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
                                   .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                                   .milliseconds(500), .seconds(1), .seconds(5)]
        for e in Self.endpoints {
            for s in Self.statuses {
                r[e, default: [:]][s] = registry.makeCounter(descriptor: Self.d("http_requests", "total", "HTTP requests by endpoint and status."),
                                                            labels: [("endpoint", e), ("status", "\(s)")])
            }
            l[e] = registry.makeDurationHistogram(descriptor: Self.d("http_request_duration", "seconds", "Time from request head to response, by endpoint."),
                                                  labels: [("endpoint", e)], buckets: buckets)
        }
        requests = r; latency = l
        located = registry.makeCounter(descriptor: Self.d("geolocate_located", "total", "geolocate requests answered with a position."))
        notLocated = registry.makeCounter(descriptor: Self.d("geolocate_not_found", "total", "geolocate requests answered 404 notFound."))
        submitted = registry.makeCounter(descriptor: Self.d("geosubmit_items", "total", "Submitted items with a usable position, committed."))
        share = registry.makeGauge(descriptor: Self.d("geolocate_located_share", "", "located / (located + not found) since start."))
        cells = registry.makeGauge(descriptor: Self.d("learned_cells", "", "Cells with a learned coverage area in the store."))
        coverageAreas = registry.makeGauge(descriptor: Self.d("learned_coverage_areas", "", "Coverage areas (cell and cell+TA) in the store."))
        aps = registry.makeGauge(descriptor: Self.d("learned_aps", "", "Access points in the store's radio map."))
        beacons = registry.makeGauge(descriptor: Self.d("learned_beacons", "", "Bluetooth beacons in the store's radio map."))
    }

    private let counts = Counts()
    final class Counts: @unchecked Sendable {
        let lock = NSLock(); var located = 0, notFound = 0
    }
    func geolocate(found: Bool) {
        (found ? located : notLocated).increment()
        counts.lock.lock()
        if found { counts.located += 1 } else { counts.notFound += 1 }
        let s = Double(counts.located) / Double(counts.located + counts.notFound)
        counts.lock.unlock()
        share.set(s)
    }

    func record(endpoint: String, status: Int, duration: Duration) {
        let e = requests[endpoint] == nil ? "other" : endpoint
        let s = Self.statuses.contains(status) ? status : (status >= 500 ? 500 : 400)
        requests[e]?[s]?.increment()
        latency[e]?.record(duration)
    }
}

/// The HTTP service over a store.
public final class LocationServer: Sendable {
    public let store: any LocationStore
    public let options: ServerOptions
    public let metrics = ServerMetrics()
    let limiter = RateLimiter()
    let refiner: LockedRefiner
    let logger: Logger
    /// The pipelines of geolocate (`GeoAPI.prototype`, parsed once), kept between requests.
    let reportPipelines: PipelinePool
    /// What geolocate and refine read: the store's radios, kept in memory (`RadioSnapshot`).
    let snapshot: RadioSnapshot

    public init(store: any LocationStore, options: ServerOptions, logger: Logger = Logger(label: "posfuse.serve")) throws {
        self.store = store; self.options = options; self.logger = logger
        refiner = LockedRefiner(try ReportRefiner(referenceURL: options.referenceURL, stages: options.stages))
        reportPipelines = PipelinePool(try GeoAPI.prototype(stages: options.stages))
        snapshot = RadioSnapshot(store: store, refresh: options.snapshotRefresh)
    }

    /// The routes: what docs/openapi.yaml documents (the OpenAPI test compares the two).
    public static let routes: [(method: String, path: String)] = [
        ("POST", "/v1/geolocate"), ("POST", "/v2/geosubmit"), ("POST", "/v1/refine"), ("GET", "/health"), ("GET", "/metrics"),
    ]

    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: ServiceMiddleware(server: self))
        router.post("/v1/geolocate") { req, _ in try await self.geolocate(req) }
        router.post("/v2/geosubmit") { req, _ in try await self.geosubmit(req) }
        router.post("/v1/refine") { req, _ in try await self.refine(req) }
        router.get("/health") { _, _ in try await self.health() }
        router.get("/metrics") { _, _ in try await self.metricsText() }
        if options.emptyHandler { router.post("/v0/empty") { _, _ in Self.json(["x": 0] as [String: Any], status: .ok, raw: "{}") } }
        return router
    }

    /// The Hummingbird application (its services: `services`, e.g. the PostgreSQL client, and
    /// the AP re-fit service). `onListening` gets the bound port (useful with port 0).
    public func application(services: [any Service] = [], onListening: @escaping @Sendable (Int?) -> Void = { _ in })
        -> some ApplicationProtocol {
        let bodyTimeout = TimeAmount.nanoseconds(Int64(options.bodyTimeout * 1e9))
        return Application(router: router(),
                    server: .http1(configuration: .init(additionalChannelHandlers: [BodyTimeout(timeout: bodyTimeout)],
                                                        idleTimeout: .milliseconds(Int64(options.idleTimeout * 1000)))),
                    configuration: .init(address: .hostname(options.host, port: options.port), serverName: "posfuse"),
                    services: services + [APRefitService(store: store, logger: logger),
                                          ChangeLogPruner(store: store, retention: options.changeRetention, logger: logger)], onServerRunning: { ch in onListening(ch.localAddress?.port) }, logger: logger)
    }

    // MARK: handlers

    static func json(_ o: Any, status: HTTPResponse.Status, raw: String? = nil) -> Response {
        let text = raw ?? String(decoding: (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data("{}".utf8), as: UTF8.self)
        var h = HTTPFields()
        h[.contentType] = "application/json"
        return Response(status: status, headers: h, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func error(_ e: GeoAPI.APIError) -> Response {
        var r = json(e.body, status: HTTPResponse.Status(code: e.status))
        // A client too slow to send its body is not waited for again: the connection closes.
        if e.reason == .requestTimeout { r.headers[.connection] = "close" }
        return r
    }

    /// The body, within the size limit and the body timeout (`BodyTimeout`, armed by the
    /// channel when the request head arrived).
    ///
    /// The parts are copied straight into one array (a request's body is one or a few parts), sized
    /// once from `Content-Length` with a spare byte for the parser's terminator (`GeoAPI.Body.read`
    /// appends it in place): NIO's `collect(upTo:)` gathered them in a `ByteBuffer` through two more
    /// layers of generic async iteration, `Array(buffer:)` copied that, and the terminator copied the
    /// array again.
    func body(_ req: Request) async throws -> [UInt8] {
        let limit = options.maxBodyBytes
        let announced = Self.contentLength(req.headers)
        if let l = announced, l > limit { throw GeoAPI.APIError.tooLarge(limit) }
        do {
            var out: [UInt8] = []
            if let l = announced, l >= 0 { out.reserveCapacity(l + 1) }
            for try await part in req.body {
                guard part.readableBytes <= limit - out.count else { throw GeoAPI.APIError.tooLarge(limit) }
                part.withUnsafeReadableBytes { out.append(contentsOf: $0) }
            }
            return out
        } catch let e as GeoAPI.APIError {
            throw e
        } catch is BodyTimeout.Expired {
            throw GeoAPI.APIError.timeout
        } catch let e as any HTTPResponseError where e.status == .contentTooLarge {
            throw GeoAPI.APIError.tooLarge(limit)
        }
    }

    /// `Int(headers[.contentLength])`: the value of the one Content-Length field, nil when there
    /// is none or several (the subscript joins several with ", ", which no Int reads). Found by
    /// walking the fields: the subscript's lazy join runs through unspecialized library code
    /// (generic metadata look-ups, about 2k instructions per request by callgrind).
    static func contentLength(_ headers: HTTPFields) -> Int? {
        var value: String?, n = 0
        for f in headers where f.name == .contentLength { n += 1; value = f.value }
        return n == 1 ? value.flatMap { Int($0) } : nil
    }

    func geolocate(_ req: Request) async throws -> Response {
        let q = try GeoAPI.query(try await body(req))
        let answer: GeoAPI.Answer?
        do { answer = try await GeoAPI.locate(q, store: snapshot, pipelines: reportPipelines) } catch let e as GeoAPI.APIError { throw e } catch {
            logger.error("geolocate: store or pipeline failure: \(error)")
            throw GeoAPI.APIError.unavailable("The location store could not be read.")
        }
        metrics.geolocate(found: answer != nil)
        guard let a = answer else { return Self.error(.notFound) }
        return Self.bytes(a.jsonBytes, status: .ok)
    }

    func geosubmit(_ req: Request) async throws -> Response {
        let bytes = try await body(req)
        let (items, received) = try GeoAPI.submission(bytes)
        do {
            try await store.submit(items, digest: Learner.digest(bytes))
            snapshot.forget(RadioChanges.of(items))
        } catch {
            logger.error("geosubmit: not committed: \(error)")
            throw GeoAPI.APIError.unavailable("The submission was not stored; send it again.")
        }
        metrics.submitted.increment(by: Int64(items.count))
        logger.debug("geosubmit", metadata: ["items": "\(received)", "learned": "\(items.count)"])
        return Self.json([:] as [String: Any], status: .ok, raw: "{}")
    }

    /// One report (a `posfuse refine` record or GeoJSON Feature) → a Feature; a
    /// FeatureCollection → a FeatureCollection, one Feature per input feature, in order.
    func refine(_ req: Request) async throws -> Response {
        let bytes = try await body(req)
        // Which shape (and a parseError for a body that is not a JSON object) from the scan in
        // place; only a FeatureCollection is taken apart with JSONSerialization.
        let collection = try GeoAPI.Body.read(bytes) { b, o in b.string(o["type", in: b]) == "FeatureCollection" }
        var out: [UInt8] = []
        if collection {
            let o = try GeoAPI.object(bytes)
            guard let fs = o["features"] as? [Any] else { throw GeoAPI.APIError.parse("a FeatureCollection needs a 'features' array") }
            out.append(contentsOf: Array(#"{"features":["#.utf8))
            for (i, f) in fs.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                let one = (try? JSONSerialization.data(withJSONObject: f, options: [.fragmentsAllowed])).map { Array($0) } ?? Array("null".utf8)
                _ = try await refineOne(one, location: "features[\(i)]", into: &out)
            }
            out.append(contentsOf: Array(#"],"type":"FeatureCollection"}"#.utf8))
            return Self.bytes(out, status: .ok)
        }
        let r = try await refineOne(bytes, location: "body", into: &out)
        return Self.bytes(out, status: r.ok ? .ok : .badRequest)
    }

    /// Looks the record's cells and APs up in the store, then refines it with them.
    func refineOne(_ json: [UInt8], location: String, into out: inout [UInt8]) async throws -> ReportRefiner.Outcome {
        var extra: ReferenceData?
        if let ids = refiner.identifiers(json) {
            do {
                let known = try await snapshot.lookup(cells: ids.cells, bssids: ids.bssids, beacons: ids.beacons)
                extra = known.reference(in: ReportRefiner.frame(latitude: ids.latitude, longitude: ids.longitude))
            } catch {
                logger.error("refine: store failure: \(error)")
                throw GeoAPI.APIError.unavailable("The location store could not be read.")
            }
        }
        return refiner.refine(json, location: location, adding: extra, into: &out)
    }

    static func bytes(_ b: [UInt8], status: HTTPResponse.Status) -> Response {
        var h = HTTPFields()
        h[.contentType] = "application/json"
        return Response(status: status, headers: h, body: .init(byteBuffer: ByteBuffer(bytes: b)))
    }

    func health() async throws -> Response {
        do {
            let s = try await store.statistics()
            return Self.json(["status": "ok", "cells": s.cells, "coverage_areas": s.coverageAreas, "aps": s.aps, "beacons": s.beacons,
                              "submissions": s.submissions] as [String: Any], status: .ok)
        } catch {
            return Self.json(["status": "unavailable", "error": "the store does not answer"] as [String: Any], status: .serviceUnavailable)
        }
    }

    func metricsText() async throws -> Response {
        if let s = try? await store.statistics() {
            metrics.cells.set(Double(s.cells)); metrics.coverageAreas.set(Double(s.coverageAreas)); metrics.aps.set(Double(s.aps))
            metrics.beacons.set(Double(s.beacons))
        }
        var h = HTTPFields()
        h[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: h, body: .init(byteBuffer: ByteBuffer(bytes: metrics.registry.emitToBuffer())))
    }

    /// The endpoint label of a path (metrics, key rules).
    static func endpoint(_ path: String) -> String {
        switch path {
        case "/v1/geolocate": return "geolocate"
        case "/v2/geosubmit": return "geosubmit"
        case "/v1/refine": return "refine"
        case "/health": return "health"
        case "/metrics": return "metrics"
        case "/v0/empty": return "empty"
        default: return "other"
        }
    }
}

/// Re-fits the APs and beacons that geosubmit marked pending (`LocationStore.refitPending`), a batch at a
/// time, outside the submissions' transactions: a submission is acknowledged once its samples
/// and pending marks are committed, and the AP estimate (the `radiomap build` estimator over up
/// to 500 samples, tens of ms) no longer sits in its critical path. The marks are durable, so a
/// crash loses no re-fit (the next start, or the next read of the AP, does it); reads re-fit
/// the pending APs they touch first, so answers never use a stale estimate.
struct APRefitService: Service {
    let store: any LocationStore
    let logger: Logger
    static let batch = 64
    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            var n = 0
            do { n = try await store.refitPending(limit: Self.batch) } catch {
                logger.warning("AP re-fit failed (the APs stay pending): \(error)")
            }
            if n == 0 { try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(200)) } }
        }
    }
}

/// Deletes the change log's rows older than `retention` (`LocationStore.pruneChanges`) once a
/// minute (or every retention/10 s when that is shorter), outside the submissions' path. Every
/// replica runs one; PostgreSQL serialises them on the submissions' advisory lock. A replica
/// whose position was pruned past starts its snapshot over (`RadioSnapshot`), so pruning never
/// leaves a stale answer behind.
struct ChangeLogPruner: Service {
    let store: any LocationStore
    let retention: Double
    let logger: Logger
    func run() async throws {
        let every = min(60, retention / 10)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                let n = try await store.pruneChanges(before: Date().timeIntervalSince1970 - retention)
                if n > 0 { logger.debug("change log pruned", metadata: ["rows": "\(n)"]) }
            } catch {
                logger.warning("change log prune failed (retried later): \(error)")
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(Int64(every * 1000))) }
        }
    }
}

/// The refiner behind a lock (its tile cache and buffers are not thread-safe).
final class LockedRefiner: @unchecked Sendable {
    private let lock = NSLock()
    private let refiner: ReportRefiner
    init(_ r: ReportRefiner) { refiner = r }
    func identifiers(_ json: [UInt8]) -> ReportRefiner.RadioIdentifiers? {
        lock.lock(); defer { lock.unlock() }
        return refiner.radioIdentifiers(json: json)
    }
    func refine(_ json: [UInt8], location: String, adding extra: ReferenceData?, into out: inout [UInt8]) -> ReportRefiner.Outcome {
        lock.lock(); defer { lock.unlock() }
        return refiner.refine(json: json, file: location, line: 1, adding: extra, into: &out)
    }
}

/// Keys, rate limit, errors in the Google shape, metrics and the access log (method, path
/// without the query string — keys travel there and are never logged —, status, duration).
struct ServiceMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let server: LocationServer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let endpoint = LocationServer.endpoint(request.uri.path)
        let response: Response
        do {
            try check(request, endpoint: endpoint)
            response = try await next(request, context)
        } catch let e as GeoAPI.APIError {
            response = LocationServer.error(e)
        } catch let e as any HTTPResponseError {
            let code = Int(e.status.code)
            let reason: GeoAPI.APIError.Reason = code == 404 ? .notFound : code == 405 ? .methodNotAllowed : code == 413 ? .requestTooLarge : .badRequest
            let message = code == 404 ? "No such endpoint" : e.status.reasonPhrase
            response = LocationServer.error(GeoAPI.APIError(status: code, domain: .global, reason: reason, message: message))
        } catch {
            server.logger.error("\(request.method) \(request.uri.path): \(error)")
            response = LocationServer.error(.server("Internal error"))
        }
        let d = ContinuousClock.now - start
        let status = Int(response.status.code)
        server.metrics.record(endpoint: endpoint, status: status, duration: d)
        if status >= 500 || endpoint == "geosubmit" || server.logger.logLevel <= .debug {
            server.logger.log(level: status >= 500 ? .error : .info, "\(request.method) \(request.uri.path) \(status)",
                              metadata: ["ms": "\(Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000)"])
        }
        return response
    }

    func check(_ request: Request, endpoint: String) throws {
        let o = server.options
        let api = ["geolocate", "geosubmit", "refine"].contains(endpoint)
        guard api else { return }
        let needed = o.requireKey == .all || (o.requireKey == .submit && endpoint == "geosubmit")
        // No key file, no key required, no rate limit (the default): nothing reads the key, so the
        // query string is not parsed for it.
        if o.keys.isEmpty, !needed, o.rateLimit <= 0 { return }
        let key = request.uri.queryParameters["key"].map(String.init)
        if let k = key, !o.keys.isEmpty, !o.keys.contains(k) { throw GeoAPI.APIError.keyInvalid }
        if needed && (key == nil || !o.keys.contains(key!)) { throw GeoAPI.APIError.keyInvalid }
        let rate = key.flatMap { o.keys.rates[$0] ?? nil } ?? o.rateLimit
        if rate > 0, !server.limiter.allow(key ?? "", rate: rate) { throw GeoAPI.APIError.rateLimited }
    }
}

/// Opening the store and running the service until SIGTERM/SIGINT (graceful: the listener
/// closes, requests in flight finish — a submission being committed is committed and
/// acknowledged — then the store closes).
public enum Serve {
    /// `db`: a SQLite file path, or postgres://user:password@host:port/database.
    public static func isPostgres(_ db: String) -> Bool { db.hasPrefix("postgres://") || db.hasPrefix("postgresql://") }

    public static func run(options: ServerOptions, db: String, logger: Logger,
                           onListening: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let store: any LocationStore
        let pg: PostgresStore?
        if isPostgres(db) {
            let p = try PostgresStore(url: db, logger: logger)
            store = p; pg = p
        } else {
            store = try SQLiteStore(path: db); pg = nil
        }
        try await withThrowingTaskGroup(of: Void.self) { g in
            if let pg {
                g.addTask { await pg.client.run() }
                do { try await pg.migrate() } catch {
                    g.cancelAll()
                    throw ServeError.configuration("cannot reach or prepare the PostgreSQL database: \(String(reflecting: error).prefix(300))")
                }
            }
            let server = try LocationServer(store: store, options: options, logger: logger)
            let app = server.application(onListening: { p in
                let port = p ?? options.port
                logger.info("listening", metadata: ["address": "http://\(options.host):\(port)", "store": "\(pg == nil ? "sqlite" : "postgresql")"])
                onListening(port)
            })
            try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
            try await store.close()
            g.cancelAll()
        }
    }
}
