import Foundation

/// Recognising an SQLite database file, the one sniff the commands use to tell a results
/// database from a JSON file or a trace.
public enum SQLiteFile {
    /// The 16-byte header every SQLite 3 database starts with: "SQLite format 3" and a NUL
    /// (sqlite.org/fileformat.html, §1.3.1).
    public static let magic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    /// Whether the file at `path` starts with the SQLite header (false when it cannot be read).
    public static func isDatabase(path: String) -> Bool {
        guard let h = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? h.close() }
        guard let head = try? h.read(upToCount: magic.count) else { return false }
        return Array(head) == magic
    }
}
