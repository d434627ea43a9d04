import Foundation
import GRDB

/// Read-only checks of an SQLite file (kill tests, `posfuse` diagnostics): SQLite's own
/// `PRAGMA integrity_check` and row counts, opened read-only so the check never repairs or
/// rolls back anything itself (a hot journal left by a killed writer is rolled back by the
/// next writer; a read-only connection still reads the last committed state).
public enum SQLiteFileCheck {
    /// "ok", or SQLite's list of problems.
    public static func integrity(path: String) throws -> String {
        try queue(path).read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
    }

    /// Rows of `table` (nil when the table does not exist).
    public static func count(path: String, table: String) throws -> Int? {
        try queue(path).read { db in
            guard try db.tableExists(table) else { return nil }
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \"\(table.replacingOccurrences(of: "\"", with: "\"\""))\"")
        }
    }

    /// Rows of an SQL query returning one integer.
    public static func int(path: String, sql: String) throws -> Int? {
        try queue(path).read { db in try Int.fetchOne(db, sql: sql) }
    }

    private static func queue(_ path: String) throws -> DatabaseQueue {
        var c = Configuration()
        c.readonly = true
        c.busyMode = .timeout(30)
        return try DatabaseQueue(path: path, configuration: c)
    }
}
