/// A data error in a trace or side file: which file, which line (1-based; 0 when the
/// problem is not tied to a line) and a human-readable reason. The CLI prints it as
/// `file:line: reason` and exits 65 (`docs/cli.md`).
public struct TraceDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Path of the offending file as given by the caller.
    public var file: String
    /// 1-based line number; 0 when the error concerns the whole file.
    public var line: Int
    /// What is wrong, e.g. `missing key 'lat'`, `invalid JSON: unexpected ',' at column 17`.
    public var reason: String
    /// A short stable code for machine output and lenient-mode counts
    /// (`invalid_json`, `missing_key`, `wrong_type`, `invalid_value`, `out_of_order`, `io`, …).
    public var code: String

    public init(file: String, line: Int, reason: String, code: String = "invalid_value") {
        self.file = file; self.line = line; self.reason = reason; self.code = code
    }

    /// `file:line: reason` (or `file: reason` when `line` is 0).
    public var description: String { line > 0 ? "\(file):\(line): \(reason)" : "\(file): \(reason)" }
}

/// A problem found in one line, before the file name and line number are attached.
public struct LineIssue: Error {
    public var code: String
    public var message: String

    package static func json(_ m: String) -> LineIssue { LineIssue(code: "invalid_json", message: "invalid JSON: " + m) }
    static func missing(_ key: String) -> LineIssue { LineIssue(code: "missing_key", message: "missing key '\(key)'") }
    static func wrongType(_ key: String, expected: String, got: String) -> LineIssue {
        LineIssue(code: "wrong_type", message: "key '\(key)' must be \(expected), got \(got)")
    }
    static func value(_ m: String) -> LineIssue { LineIssue(code: "invalid_value", message: m) }
}
