import Foundation
import GRDB
import Positioning
import TraceIO

/// Replay results in SQLite (GRDB): one row in `runs` per replayed trace, its estimates
/// and its scores (`docs/cli.md`, "Results database").
///
/// Schema (units: s, m, m²):
/// ```sql
/// runs(id INTEGER PRIMARY KEY, started TEXT,          -- ISO 8601 UTC
///      pipeline TEXT,                                   -- configuration text ("" = defaults)
///      trace TEXT, trace_name TEXT, version TEXT,       -- posfuse version
///      parameters TEXT,                                 -- JSON: mode, max_truth_gap_s, …
///      events INTEGER, skipped INTEGER)
/// estimates(run, source, subject, t, e, n, cov_ee, cov_en, cov_nn,
///           error,                                      -- NULL when not scored
///           truth_e, truth_n, nees, unscored)           -- unscored: reason code or NULL
/// scores(run, source, metric, value)                    -- source = score key (gnss, camloc:object)
/// ```
/// A run is written in **one transaction** (`record`): a replay that throws or is killed
/// midway leaves no row of that run. Estimates are inserted with a cached prepared
/// statement (Codable record inserts are about 5× slower, `docs/engineering.md`).
public final class ResultStore {
    public let queue: DatabaseQueue

    /// Opens or creates the database at `path` (":memory:" for an in-memory one).
    /// How long a writer waits for another process's transaction on the same database before
    /// giving up (SQLite busy timeout): concurrent replays into one `--db` queue, none is lost.
    public static let busyTimeout: TimeInterval = 3600

    /// The database file (":memory:" for an in-memory one).
    public let path: String

    public init(path: String) throws {
        self.path = path
        var config = Configuration()
        config.busyMode = .timeout(Self.busyTimeout)
        queue = path == ":memory:" ? try DatabaseQueue(configuration: config) : try DatabaseQueue(path: path, configuration: config)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS runs (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    started TEXT NOT NULL, pipeline TEXT NOT NULL, trace TEXT NOT NULL,
                    trace_name TEXT NOT NULL, version TEXT NOT NULL, parameters TEXT NOT NULL,
                    events INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE IF NOT EXISTS estimates (
                    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                    source TEXT NOT NULL, subject TEXT NOT NULL, t REAL NOT NULL,
                    e REAL NOT NULL, n REAL NOT NULL, cov_ee REAL, cov_en REAL, cov_nn REAL,
                    error REAL, truth_e REAL, truth_n REAL, nees REAL, unscored TEXT);
                CREATE INDEX IF NOT EXISTS estimates_run ON estimates(run, source, t);
                CREATE TABLE IF NOT EXISTS scores (
                    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                    source TEXT NOT NULL, metric TEXT NOT NULL, value REAL NOT NULL,
                    PRIMARY KEY (run, source, metric));
                """)
        }
    }

    /// What describes a run besides its results.
    public struct RunInfo: Sendable {
        public var started: Date
        public var pipeline: String
        public var trace: String
        public var traceName: String
        public var version: String
        /// JSON object text.
        public var parameters: String
        public init(started: Date = Date(), pipeline: String, trace: String, traceName: String, version: String, parameters: String) {
            self.started = started; self.pipeline = pipeline; self.trace = trace; self.traceName = traceName
            self.version = version; self.parameters = parameters
        }
    }

    /// Inserts estimates of the run being recorded (valid only inside `record`).
    public final class RunWriter {
        public let run: Int64
        private let statement: Statement
        public private(set) var estimates = 0
        fileprivate init(db: Database, run: Int64) throws {
            self.run = run
            statement = try db.cachedStatement(sql: """
                INSERT INTO estimates (run, source, subject, t, e, n, cov_ee, cov_en, cov_nn, error, truth_e, truth_n, nees, unscored)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        }
        /// Inserts one estimate row; `error`, `truth`, `nees` are nil when it was not scored,
        /// `unscored` is then the reason code. A covariance with a non-finite entry is stored as NULLs.
        public func insert(source: String, subject: String, time: Double, position: SIMD2<Double>,
                           covariance c: (ee: Double, en: Double, nn: Double),
                           error: Double?, truth: SIMD2<Double>?, nees: Double?, unscored: String?) throws {
            let finite = c.ee.isFinite && c.en.isFinite && c.nn.isFinite
            try statement.execute(arguments: [
                run, source, subject, time, position.x, position.y,
                finite ? c.ee : nil, finite ? c.en : nil, finite ? c.nn : nil,
                error, truth?.x, truth?.y, nees, unscored,
            ])
            estimates += 1
        }
    }

    /// Work done inside a run's transaction after its rows are written: (database, run id).
    public typealias RunHook = (Database, Int64) throws -> Void

    /// What a recorded run adds to its `runs` row besides `RunInfo`, and its score rows
    /// (source key, metric, value).
    public struct RunSummary: Sendable {
        public var events: Int
        public var skipped: Int
        public var scores: [(source: String, metric: String, value: Double)]
        public init(events: Int, skipped: Int, scores: [(source: String, metric: String, value: Double)]) {
            self.events = events; self.skipped = skipped; self.scores = scores
        }
    }

    /// Records one run in one transaction: inserts the run, calls `body` with a writer for
    /// its estimates, then stores `summary(result)` and commits. If anything throws, the
    /// transaction is rolled back and the error rethrown: no part of the run remains.
    /// `then` runs last in the same transaction with the run id (e.g. `posfuse sweep` adds
    /// the run's grid point there, so a run and its point are stored together or not at all).
    /// (`record(_:then:_:)` in Scoring is the form that takes a `ReplayResult`.)
    public func recordRun<R>(_ info: RunInfo, summary: (R) -> RunSummary, then: RunHook? = nil,
                             _ body: (RunWriter) throws -> R) throws -> (run: Int64, result: R) {
        // IMMEDIATE: the write lock is taken (or waited for, `busyTimeout`) before any work, so two
        // processes recording into one database queue up instead of one failing with SQLITE_BUSY.
        do {
            return try queue.writeWithoutTransaction { db in
                var out: (run: Int64, result: R)!
                try db.inTransaction(.immediate) {
                    out = try recordRun(db, info, summary, then, body)
                    return .commit
                }
                return out
            }
        } catch let e as DatabaseError {
            throw SystemError(e, file: path)
        }
    }

    private func recordRun<R>(_ db: Database, _ info: RunInfo, _ summary: (R) -> RunSummary, _ then: RunHook?,
                              _ body: (RunWriter) throws -> R) throws -> (run: Int64, result: R) {
        do {
            try db.execute(sql: """
                INSERT INTO runs (started, pipeline, trace, trace_name, version, parameters) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [Self.iso8601(info.started), info.pipeline, info.trace, info.traceName, info.version, info.parameters])
            let run = db.lastInsertedRowID
            let writer = try RunWriter(db: db, run: run)
            let result = try body(writer)
            let sum = summary(result)
            try db.execute(sql: "UPDATE runs SET events = ?, skipped = ? WHERE id = ?",
                           arguments: [sum.events, sum.skipped, run])
            let insert = try db.cachedStatement(sql: "INSERT INTO scores (run, source, metric, value) VALUES (?, ?, ?, ?)")
            for row in sum.scores {
                try insert.execute(arguments: [run, row.source, row.metric, row.value])
            }
            try then?(db, run)
            return (run, result)
        }
    }

    /// A stored run.
    public struct StoredRun: Sendable, Equatable {
        public var id: Int64
        public var started: String
        public var pipeline: String
        public var trace: String
        public var traceName: String
        public var version: String
        public var parameters: String
        public var events: Int
        public var skipped: Int
    }

    public func runs() throws -> [StoredRun] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM runs ORDER BY id").map {
                StoredRun(id: $0["id"], started: $0["started"], pipeline: $0["pipeline"], trace: $0["trace"],
                          traceName: $0["trace_name"], version: $0["version"], parameters: $0["parameters"],
                          events: $0["events"], skipped: $0["skipped"])
            }
        }
    }

    /// Scores of a run: source → metric → value.
    public func scores(run: Int64) throws -> [String: [String: Double]] {
        try queue.read { db in
            var out: [String: [String: Double]] = [:]
            for r in try Row.fetchAll(db, sql: "SELECT source, metric, value FROM scores WHERE run = ?", arguments: [run]) {
                out[r["source"] as String, default: [:]][r["metric"] as String] = r["value"] as Double
            }
            return out
        }
    }

    /// Number of stored estimates of a run (all when nil).
    public func estimateCount(run: Int64? = nil) throws -> Int {
        try queue.read { db in
            if let run { return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM estimates WHERE run = ?", arguments: [run]) ?? 0 }
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM estimates") ?? 0
        }
    }

    /// A run as `RunResults` (for `posfuse compare`/`report`): scores per source, and the
    /// scored estimates as per-epoch samples.
    public func runResults(runs ids: [Int64]? = nil) throws -> RunResults {
        let all = try runs()
        let chosen = ids.map { want in all.filter { want.contains($0.id) } } ?? all
        var traces: [TraceResult] = []
        for r in chosen {
            let sc = try scores(run: r.id)
            var sources: [SourceResult] = []
            for key in sc.keys.sorted() {
                let metrics = sc[key]!.filter { !$0.key.hasPrefix("failure:") }
                if metrics.isEmpty { continue }
                let epochs: [EpochSample] = try queue.read { db in
                    let (src, objects) = Self.splitKey(key)
                    let like = objects ? Subject.objectPrefix + "%" : "%"
                    let notObject = !objects
                    return try Row.fetchAll(db, sql: """
                        SELECT t, error, nees, e, n, truth_e, truth_n FROM estimates
                        WHERE run = ? AND source = ? AND error IS NOT NULL AND subject LIKE ? AND (? = 0 OR subject NOT LIKE 'object:%')
                        ORDER BY t
                        """, arguments: [r.id, src, like, notObject ? 1 : 0]).map { row in
                        EpochSample(time: row["t"], error: row["error"], radius95: nil, nees: row["nees"],
                                    estimate: SIMD2(row["e"], row["n"]),
                                    truth: SIMD2(row["truth_e"] as Double? ?? 0, row["truth_n"] as Double? ?? 0))
                    }
                }
                sources.append(SourceResult(source: key, metrics: metrics, epochs: epochs))
            }
            traces.append(TraceResult(trace: r.traceName, sources: sources, skipped: r.skipped))
        }
        return RunResults(label: "results database", traces: traces)
    }

    /// A score key's source and whether it scores objects ("camloc:object") or phones.
    static func splitKey(_ key: String) -> (source: String, objects: Bool) {
        key.hasSuffix(":object") ? (String(key.dropLast(":object".count)), true) : (key, false)
    }

    static func iso8601(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: d)
    }
}
