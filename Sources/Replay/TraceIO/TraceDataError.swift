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
    /// A short stable code for machine output and lenient-mode counts (`DataErrorCode`).
    public var code: DataErrorCode

    public init(file: String, line: Int, reason: String, code: DataErrorCode = .invalidValue) {
        self.file = file; self.line = line; self.reason = reason; self.code = code
    }

    /// `file:line: reason` (or `file: reason` when `line` is 0).
    public var description: String { line > 0 ? "\(file):\(line): \(reason)" : "\(file): \(reason)" }
}

/// The stable codes of data errors: what `--json` output, lenient-mode counts
/// (`skipped_by_reason`) and the exit status (`io` → 74, the rest → 65) are keyed by. The raw
/// values are the wire strings; docs/cli.md "Error codes" lists them and `ErrorCodeTests` pins them.
public enum DataErrorCode: String, CaseIterable, Sendable, Codable {
    /// A line or file that is not JSON (or a line too long to be one).
    case invalidJSON = "invalid_json"
    /// A required key or column is absent.
    case missingKey = "missing_key"
    /// A value of the wrong JSON type.
    case wrongType = "wrong_type"
    /// A value outside its domain, or otherwise malformed.
    case invalidValue = "invalid_value"
    /// An event earlier than the reorder window allows.
    case outOfOrder = "out_of_order"
    /// A file that has no header (empty trace, empty CSV).
    case missingHeader = "missing_header"
    /// A file larger than an input may be.
    case tooLarge = "too_large"
    /// Text that is not UTF-8.
    case invalidUTF8 = "invalid_utf8"
    /// A file that cannot be opened, read or written, or is absent.
    case io
    /// A file given where another kind belongs (reference data to the trace importer).
    case usage
    /// A file that is not a cell database.
    case invalidCellDB = "invalid_cell_db"
    /// A file that is not a radio map.
    case invalidRadioMap = "invalid_radio_map"
}

/// A problem found in one line, before the file name and line number are attached.
public struct LineIssue: Error {
    public var code: DataErrorCode
    public var message: String

    package static func json(_ m: String) -> LineIssue { LineIssue(code: .invalidJSON, message: "invalid JSON: " + m) }
    static func missing(_ key: String) -> LineIssue { LineIssue(code: .missingKey, message: "missing key '\(key)'") }
    static func wrongType(_ key: String, expected: String, got: String) -> LineIssue {
        LineIssue(code: .wrongType, message: "key '\(key)' must be \(expected), got \(got)")
    }
    static func value(_ m: String) -> LineIssue { LineIssue(code: .invalidValue, message: m) }
}
