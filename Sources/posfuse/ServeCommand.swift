import ArgumentParser
import Foundation
import Logging
import PosfuseServer

/// `posfuse serve`: the location and report-refinement service (docs/serve.md).
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve geolocate/geosubmit (MLS/ichnaea, Google Geolocation API) and report refinement over HTTP.",
        discussion: """
        Endpoints: POST /v1/geolocate, POST /v2/geosubmit, POST /v1/refine, GET /health, GET /metrics \
        (Prometheus). docs/serve.md has the request/response shapes, a curl example per endpoint and \
        the geoclue configuration; docs/openapi.yaml is the OpenAPI 3 document.

        The store (--db) is a SQLite file (default posfuse-serve.sqlite; a cell database from \
        `posfuse celldb build` or a radio map from `posfuse radiomap build` is served as it is) or \
        postgres://user:password@host:port/database, shared by several replicas. Submissions \
        teach the coverage map and the radio map; one is acknowledged (200) only once committed.

        Every option can also be set by an environment variable: POSFUSE_SERVE_<OPTION> \
        (e.g. POSFUSE_SERVE_DB, POSFUSE_SERVE_PORT, POSFUSE_SERVE_REQUIRE_KEY); a flag wins.

        Examples:
          posfuse serve --db cells.sqlite --port 8080
          posfuse serve --db postgres://posfuse:secret@db:5432/posfuse --host 0.0.0.0 \\
            --keys keys.txt --require-key submit --rate-limit 20
          curl -s -XPOST localhost:8080/v1/geolocate -d @request.json

        SIGTERM or SIGINT stops it gracefully (requests in flight finish). Exit codes: 0 stopped, \
        64 usage or configuration error (bad flag, unreadable key file, unreachable database).
        """
    )

    @Option(help: "Store: a SQLite file, or postgres://user:password@host:port/database.") var db: String?
    @Option(help: "Address to listen on (0.0.0.0 for every interface).") var host: String?
    @Option(help: "Port (0: any free port, printed in the log).") var port: Int?
    @Option(help: "API key file: lines 'KEY [REQUESTS_PER_SECOND]'.") var keys: String?
    @Option(name: .customLong("require-key"), help: "Endpoints that need a valid ?key=: none, submit (geosubmit only) or all.") var requireKey: String?
    @Option(name: .customLong("rate-limit"), help: "Requests per second per key (token bucket; keyless requests share one bucket); 0 = no limit.") var rateLimit: Double?
    @Option(name: .customLong("max-body"), help: "Request body limit, bytes (413 above).") var maxBody: Int?
    @Option(name: .customLong("body-timeout"), help: "Seconds a client has to send its request body (408 after).") var bodyTimeout: Double?
    @Option(name: .customLong("idle-timeout"), help: "Seconds before an idle keep-alive connection is closed.") var idleTimeout: Double?
    @Option(name: .customLong("snapshot-refresh"), help: "Seconds between reads of the store's change log: a submission committed through another replica (or process) is used within this (0: read it before every request).") var snapshotRefresh: Double?
    @Option(name: .customLong("change-retention"), help: "Seconds the store's change log keeps a submission's row (≥ 10 × --snapshot-refresh); a replica further behind starts its snapshot over.") var changeRetention: Double?
    @Option(help: "Reference data for /v1/refine (reference.json), besides the store.") var reference: String?
    @Option(help: "Pipeline configuration (YAML, docs/pipeline.yaml) for geolocate and refine.") var pipeline: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.") var logLevel: String?
    @Flag(name: .customLong("empty-handler"), help: "Also serve POST /v0/empty (answers {} at once): the benchmark's reference handler.") var emptyHandler = false

    /// A flag's value, else POSFUSE_SERVE_<NAME>.
    func setting(_ flag: String?, _ name: String) -> String? {
        flag ?? ProcessInfo.processInfo.environment["POSFUSE_SERVE_" + name]
    }

    func run() throws {
        var o = ServerOptions()
        func number<T: LosslessStringConvertible>(_ v: T?, _ name: String) throws -> T? {
            if let v { return v }
            guard let s = ProcessInfo.processInfo.environment["POSFUSE_SERVE_" + name] else { return nil }
            guard let x = T(s) else { throw ValidationError("POSFUSE_SERVE_\(name)=\(s) is not a valid value") }
            return x
        }
        o.host = setting(host, "HOST") ?? o.host
        o.port = try number(port, "PORT") ?? o.port
        o.rateLimit = try number(rateLimit, "RATE_LIMIT") ?? o.rateLimit
        o.maxBodyBytes = try number(maxBody, "MAX_BODY") ?? o.maxBodyBytes
        o.bodyTimeout = try number(bodyTimeout, "BODY_TIMEOUT") ?? o.bodyTimeout
        o.idleTimeout = try number(idleTimeout, "IDLE_TIMEOUT") ?? o.idleTimeout
        o.snapshotRefresh = try number(snapshotRefresh, "SNAPSHOT_REFRESH") ?? o.snapshotRefresh
        guard o.snapshotRefresh >= 0, o.snapshotRefresh.isFinite else { throw ValidationError("--snapshot-refresh must be a number of seconds ≥ 0") }
        o.changeRetention = try number(changeRetention, "CHANGE_RETENTION") ?? o.changeRetention
        guard o.changeRetention.isFinite, o.changeRetention > 0, o.changeRetention >= 10 * o.snapshotRefresh else {
            throw ValidationError("--change-retention must be > 0 s and ≥ 10 × --snapshot-refresh")
        }
        o.emptyHandler = emptyHandler || ProcessInfo.processInfo.environment["POSFUSE_SERVE_EMPTY_HANDLER"] == "1"
        guard (0...65535).contains(o.port) else { throw ValidationError("--port must be 0…65535") }
        guard o.rateLimit >= 0, o.maxBodyBytes > 0, o.bodyTimeout > 0, o.idleTimeout > 0 else {
            throw ValidationError("--rate-limit must be ≥ 0; --max-body, --body-timeout and --idle-timeout > 0")
        }
        if let r = setting(requireKey, "REQUIRE_KEY") {
            guard let rule = ServerOptions.KeyRule(rawValue: r) else { throw ValidationError("--require-key must be none, submit or all") }
            o.requireKey = rule
        }
        do {
            if let k = setting(keys, "KEYS") { o.keys = try APIKeys(file: k) }
        } catch { throw ValidationError("\(error)") }
        if o.requireKey != .none && o.keys.isEmpty { throw ValidationError("--require-key \(o.requireKey.rawValue) needs --keys with at least one key") }
        if let r = setting(reference, "REFERENCE") {
            guard FileManager.default.fileExists(atPath: r) else { throw ValidationError("no such file: \(r)") }
            o.referenceURL = URL(fileURLWithPath: r)
        }
        if let p = setting(pipeline, "PIPELINE") { o.stages = try loadPipelineStages(p) }
        let level = setting(logLevel, "LOG_LEVEL") ?? "info"
        guard let lv = Logger.Level(rawValue: level) else { throw ValidationError("--log-level: unknown level \(level)") }
        let db = setting(self.db, "DB") ?? "posfuse-serve.sqlite"
        var logger = Logger(label: "posfuse.serve")
        logger.logLevel = lv
        let options = o
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { try await Serve.run(options: options, db: db, logger: logger) } catch { outcome.error = error }
            done.signal()
        }
        done.wait()
        if let e = outcome.error {
            if e is ServeError { printError("\(e)"); throw ExitCode(ExitStatus.usage) }
            printError("serve stopped: \(e)")
            throw ExitCode(74)
        }
    }

    final class Outcome: @unchecked Sendable { var error: (any Error)? }
}
