import Foundation
import GRDB
import Positioning
import TraceIO

/// A sweep's results database: the `replay --db` schema (`ResultStore`: runs, estimates,
/// scores) plus one table that ties each run to its place in the study:
///
/// ```sql
/// sweep_runs(run INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
///            key TEXT NOT NULL UNIQUE,   -- SweepPlan key: input, seed, every stage option
///            study TEXT NOT NULL,        -- study name
///            point TEXT NOT NULL,        -- grid point as JSON {"wcl.exponent": 0.3, …}
///            input TEXT NOT NULL,        -- input label
///            seed INTEGER)               -- simulation seed; NULL for a recording
/// ```
///
/// A run, its estimates, scores and `sweep_runs` row are written in one transaction, so a
/// killed study leaves complete runs only; the UNIQUE key makes a second copy of a run
/// impossible (resume and merge skip keys already present). Storing a study's run
/// (`record(plan:run:…)`) is in Sweep, which knows plans; the SQL is here, with the only
/// GRDB user of the library.
public final class SweepStore {
    public let results: ResultStore
    public let path: String

    public init(path: String) throws {
        self.path = path
        results = try ResultStore(path: path)
        try results.queue.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS sweep_runs (
                    run INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
                    key TEXT NOT NULL UNIQUE, study TEXT NOT NULL, point TEXT NOT NULL,
                    input TEXT NOT NULL, seed INTEGER);
                """)
        }
    }

    /// The number of sweep runs stored in the database at `path`, read through a read-only
    /// connection that waits up to 5 s for a writer (for watching a study from outside while
    /// it runs); nil when the file is not a sweep database (yet).
    public static func storedCount(path: String) -> Int? {
        var config = Configuration()
        config.readonly = true
        config.busyMode = .timeout(5)
        guard let q = try? DatabaseQueue(path: path, configuration: config) else { return nil }
        return try? q.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sweep_runs") }
    }

    /// Keys of the runs stored, with their run ids.
    public func storedKeys() throws -> [String: Int64] {
        try results.queue.read { db in
            var out: [String: Int64] = [:]
            for r in try Row.fetchAll(db, sql: "SELECT key, run FROM sweep_runs") { out[r["key"]] = r["run"] }
            return out
        }
    }

    /// A run whose key is already stored (`claim`).
    package struct AlreadyStored: Error { package init() {} }

    /// Inside the transaction that stores run `id` (`ResultStore`'s `then` hook): ties it to its
    /// place in the study, or throws `AlreadyStored` (rolling the whole run back) when a run with
    /// `key` is already there.
    package static func claim(_ db: Database, run id: Int64, key: String, study: String, point: String, input: String,
                              seed: UInt64?) throws {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM sweep_runs WHERE key = ?", arguments: [key]) == true {
            throw AlreadyStored()
        }
        try db.execute(sql: "INSERT INTO sweep_runs (run, key, study, point, input, seed) VALUES (?, ?, ?, ?, ?, ?)",
                       arguments: [id, key, study, point, input, seed.map { Int64(bitPattern: $0) }])
    }

    /// What `merge` did.
    public struct MergeReport: Sendable, Equatable {
        public var copied = 0
        /// Runs already present (same key): not copied again.
        public var duplicates = 0
        package init(copied: Int = 0, duplicates: Int = 0) { self.copied = copied; self.duplicates = duplicates }
    }

    /// Copies every sweep run of the database at `source` that is not yet here, each with its
    /// estimates and scores, in one transaction per source. Throws `ResultsDataError` when
    /// `source` is not a sweep results database.
    public func merge(from source: String) throws -> MergeReport {
        guard FileManager.default.fileExists(atPath: source) else {
            throw ResultsDataError(file: source, reason: "no such file")
        }
        var report = MergeReport()
        try results.queue.inDatabase { db in
            do {
                try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [source])
            } catch {
                throw ResultsDataError(file: source, reason: "not an SQLite database (\(error))")
            }
            defer { try? db.execute(sql: "DETACH DATABASE src") }
            let hasTable: Bool
            do {
                hasTable = try Bool.fetchOne(db, sql: "SELECT 1 FROM src.sqlite_master WHERE type = 'table' AND name = 'sweep_runs'") == true
            } catch {
                throw ResultsDataError(file: source, reason: "not an SQLite database (\(error))")
            }
            guard hasTable else { throw ResultsDataError(file: source, reason: "not a sweep results database (no sweep_runs table)") }
            try db.inTransaction {
                let rows = try Row.fetchAll(db, sql: "SELECT run, key FROM src.sweep_runs ORDER BY run")
                for r in rows {
                    let old: Int64 = r["run"], key: String = r["key"]
                    if try Bool.fetchOne(db, sql: "SELECT 1 FROM main.sweep_runs WHERE key = ?", arguments: [key]) == true {
                        report.duplicates += 1
                        continue
                    }
                    try db.execute(sql: """
                        INSERT INTO main.runs (started, pipeline, trace, trace_name, version, parameters, events, skipped)
                        SELECT started, pipeline, trace, trace_name, version, parameters, events, skipped FROM src.runs WHERE id = ?
                        """, arguments: [old])
                    let new = db.lastInsertedRowID
                    try db.execute(sql: """
                        INSERT INTO main.estimates (run, source, subject, t, e, n, cov_ee, cov_en, cov_nn, error, truth_e, truth_n, nees, unscored)
                        SELECT ?, source, subject, t, e, n, cov_ee, cov_en, cov_nn, error, truth_e, truth_n, nees, unscored
                        FROM src.estimates WHERE run = ? ORDER BY rowid
                        """, arguments: [new, old])
                    try db.execute(sql: "INSERT INTO main.scores (run, source, metric, value) SELECT ?, source, metric, value FROM src.scores WHERE run = ?",
                                   arguments: [new, old])
                    try db.execute(sql: """
                        INSERT INTO main.sweep_runs (run, key, study, point, input, seed)
                        SELECT ?, key, study, point, input, seed FROM src.sweep_runs WHERE run = ?
                        """, arguments: [new, old])
                    report.copied += 1
                }
                return .commit
            }
        }
        return report
    }

    /// Every stored sweep run by key: its scores (source → metric → value) and its estimates
    /// as text rows in time order. Two databases hold the same study results exactly when
    /// these are equal (`posfuse sweep diff`).
    public func contents() throws -> [String: (scores: [String: [String: Double]], estimates: [String])] {
        try results.queue.read { db in
            var out: [String: (scores: [String: [String: Double]], estimates: [String])] = [:]
            for r in try Row.fetchAll(db, sql: "SELECT run, key FROM sweep_runs") {
                let id: Int64 = r["run"], key: String = r["key"]
                var scores: [String: [String: Double]] = [:]
                for s in try Row.fetchAll(db, sql: "SELECT source, metric, value FROM scores WHERE run = ?", arguments: [id]) {
                    scores[s["source"] as String, default: [:]][s["metric"] as String] = s["value"] as Double
                }
                let est = try Row.fetchAll(db, sql: """
                    SELECT source, subject, t, e, n, cov_ee, cov_en, cov_nn, error, truth_e, truth_n, nees, unscored
                    FROM estimates WHERE run = ? ORDER BY rowid
                    """, arguments: [id]).map { row in
                    (0..<row.count).map { i -> String in
                        let v = row[i] as DatabaseValue
                        if case .double(let d) = v.storage { return String(d.bitPattern, radix: 16) }
                        return v.description
                    }.joined(separator: "|")
                }
                out[key] = (scores, est)
            }
            return out
        }
    }
}
