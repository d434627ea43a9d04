import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams the records of a report file as raw bytes, in file order, in bounded memory:
///
/// - **JSON Lines**: one report (or GeoJSON Feature) per line; every non-blank line is one record
///   (blank = spaces, tabs and carriage returns only; a trailing CR is dropped). Lines are split with `memchr`.
/// - **One GeoJSON FeatureCollection** (the file starts with `{` and its first 4 KiB mention
///   `"FeatureCollection"`): every element of its `features` array is one record, read feature by
///   feature (`FeatureSplitter`): the document is never held whole, and a syntax error inside
///   one feature makes that feature one malformed record; the next feature is read normally. A
///   record's "line" is then its 1-based index in `features`.
///
/// Nothing is parsed here beyond finding where a record ends: `ReportRecordParser` scans the
/// record with the trace scanner (`JSONLineScanner`), so reports and trace lines share one JSON
/// grammar. Records are handed on as soon as they are complete (standard input: before the next
/// `read(2)`, so a service can keep `posfuse refine -` running as a co-process). The bytes
/// handed to `body` are valid only during the call, and the byte after them is readable (a
/// delimiter or NUL: the scanner's `strtod` fallback stops there).
public struct ReportStream {
    public enum Record {
        /// One record's bytes (not yet checked to be JSON).
        case bytes(UnsafeBufferPointer<UInt8>, line: Int)
        /// A record that could not even be delimited (a FeatureCollection whose `features`
        /// array is missing or broken beyond recovery).
        case malformed(reason: String, line: Int)
    }

    public let url: URL?
    /// Chunk size of each read(2).
    static let chunk = 1 << 20

    /// Reads `url`, or standard input when nil.
    public init(url: URL?) { self.url = url }

    /// Calls `body` for every record, in file order.
    public func forEach(_ body: (Record) throws -> Void) throws {
        let fd: Int32
        if let url {
            fd = open(url.path, O_RDONLY)
            guard fd >= 0 else { throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: url.path, NSLocalizedDescriptionKey: String(cString: strerror(errno))]) }
        } else {
            fd = 0
        }
        defer { if url != nil { close(fd) } }
        var buffer = ChunkBuffer()
        _ = try buffer.fill(fd, upTo: 4096)
        if buffer.looksLikeFeatureCollection {
            var splitter = FeatureSplitter()
            try splitter.run(&buffer, fd: fd, body)
            return
        }
        var line = 1
        while true {
            // Lines already complete are handed on before the next read (which may block on a pipe).
            try buffer.withData { base, count in
                var start = buffer.consumed
                while start < count, let nl = memchr(base + start, 0x0A, count - start) {
                    let end = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(nl))
                    try Self.emitLine(base + start, end - start, line: line, body)
                    line += 1
                    start = end + 1
                }
                buffer.consumed = start
            }
            if buffer.eof { break }
            buffer.compact()
            if try buffer.fill(fd, upTo: Self.chunk) == 0 {
                // The last line without a newline.
                try buffer.withData { base, count in
                    if buffer.consumed < count { try Self.emitLine(base + buffer.consumed, count - buffer.consumed, line: line, body) }
                    buffer.consumed = count
                }
                break
            }
        }
    }

    private static func emitLine(_ p: UnsafePointer<UInt8>, _ n: Int, line: Int, _ body: (Record) throws -> Void) throws {
        var n = n
        if n > 0 && p[n - 1] == 0x0D { n -= 1 }
        var blank = true
        // JSON's insignificant white space except the line feed that ends the line: a line of
        // only spaces, tabs and carriage returns ("\r\r" too) carries no record.
        for i in 0..<n where p[i] != 0x20 && p[i] != 0x09 && p[i] != 0x0D { blank = false; break }
        if blank { return }
        try body(.bytes(UnsafeBufferPointer(start: p, count: n), line: line))
    }
}

/// The read buffer of a `ReportStream`: bytes `consumed..<count` not yet handed on, always
/// followed by a NUL byte (the scanner's terminator for a record at the very end of the file).
struct ChunkBuffer {
    private(set) var storage: [UInt8] = [0]
    private(set) var count = 0
    var consumed = 0
    private(set) var eof = false

    /// Appends whatever one read(2) of up to `max` bytes returns (a pipe does not wait for a full
    /// chunk); returns the number of bytes read (0 at end of file).
    mutating func fill(_ fd: Int32, upTo max: Int) throws -> Int {
        if storage.count < count + max + 1 { storage.append(contentsOf: repeatElement(0, count: count + max + 1 - storage.count)) }
        while true {
            #if canImport(Glibc)
            let n = storage.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, max) }
            #else
            let n = storage.withUnsafeMutableBytes { Darwin.read(fd, $0.baseAddress! + count, max) }
            #endif
            if n >= 0 {
                count += n
                storage[count] = 0
                if n == 0 { eof = true }
                return n
            }
            if errno != EINTR { throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(errno))]) }
        }
    }

    /// Drops the consumed bytes (moves the rest to the front).
    mutating func compact() {
        guard consumed > 0 else { return }
        let rest = count - consumed
        if rest > 0 {
            storage.withUnsafeMutableBufferPointer { b in
                _ = memmove(b.baseAddress!, b.baseAddress! + consumed, rest)
            }
        }
        count = rest
        consumed = 0
        storage[count] = 0
    }

    func withData<R>(_ body: (UnsafePointer<UInt8>, Int) throws -> R) rethrows -> R {
        try storage.withUnsafeBufferPointer { try body($0.baseAddress!, count) }
    }

    /// The file starts with `{` (after whitespace) and its first 4 KiB name a FeatureCollection.
    var looksLikeFeatureCollection: Bool {
        withData { p, n in
            let head = min(n, 4096)
            var i = 0
            while i < head, p[i] == 0x20 || p[i] == 0x09 || p[i] == 0x0A || p[i] == 0x0D { i += 1 }
            guard i < head, p[i] == UInt8(ascii: "{") else { return false }
            let needle: StaticString = "\"FeatureCollection\""
            let m = needle.utf8CodeUnitCount
            var k = i
            while k + m <= head {
                if p[k] == UInt8(ascii: "\""), memcmp(p + k, needle.utf8Start, m) == 0 { return true }
                k += 1
            }
            return false
        }
    }
}

/// Splits one GeoJSON FeatureCollection document into its features while reading it.
///
/// The top-level object is walked key by key (strings honour escapes; nested values are
/// skipped by bracket depth); the value of `features` is walked element by element. An
/// element ends at the `,` or `]` at its own depth; it is handed on as one record and checked by
/// the record parser, so a feature with a bad value is one error record and the rest go on. Only
/// a break of the structure itself (unbalanced brackets, an unterminated string, the end of the
/// file inside the array) stops the walk: the rest of the file is then one malformed record.
/// Memory: the read buffer holds at most the largest feature plus one chunk.
struct FeatureSplitter {
    private enum State { case topKey, topValue(isFeatures: Bool), elementStart, afterElement, done }
    private var state = State.topKey
    private var sawFeatures = false
    private var index = 0
    private var topOpened = false

    mutating func run(_ buffer: inout ChunkBuffer, fd: Int32, _ body: (ReportStream.Record) throws -> Void) throws {
        while true {
            let progressed = try step(&buffer, body)
            if case .done = state { return }
            if !progressed {
                if buffer.eof {
                    try finishAtEOF(body)
                    return
                }
                buffer.compact()
                _ = try buffer.fill(fd, upTo: ReportStream.chunk)
            }
        }
    }

    private mutating func finishAtEOF(_ body: (ReportStream.Record) throws -> Void) throws {
        switch state {
        case .done: return
        case .elementStart, .afterElement:
            index += 1
            try body(.malformed(reason: "invalid JSON: the FeatureCollection ends inside its 'features' array", line: index))
        default:
            if !sawFeatures { try body(.malformed(reason: "FeatureCollection without a 'features' array", line: 1)) }
        }
        state = .done
    }

    /// Advances as far as the buffered bytes allow; false when more bytes are needed.
    private mutating func step(_ buffer: inout ChunkBuffer, _ body: (ReportStream.Record) throws -> Void) throws -> Bool {
        var progressed = false
        try buffer.withData { p, count in
            var i = buffer.consumed
            func ws() { while i < count, p[i] == 0x20 || p[i] == 0x09 || p[i] == 0x0A || p[i] == 0x0D { i += 1 } }
            loop: while true {
                // Iteration boundaries are consistent states: what is before `i` is done.
                if i != buffer.consumed { buffer.consumed = i; progressed = true }
                ws()
                guard i < count else { break loop }
                switch state {
                case .done:
                    break loop
                case .topKey:
                    if !topOpened {
                        guard p[i] == UInt8(ascii: "{") else { try fail("expected '{'"); break loop }
                        topOpened = true; i += 1; continue loop
                    }
                    if p[i] == UInt8(ascii: "}") { i += 1; try close(); break loop }
                    if p[i] == UInt8(ascii: ",") { i += 1; continue loop }
                    guard p[i] == UInt8(ascii: "\"") else { try fail("expected a key"); break loop }
                    guard let e = Self.stringEnd(p, i, count) else { break loop }
                    let isFeatures = e - i - 2 == 8 && memcmp(p + i + 1, "features", 8) == 0
                    i = e
                    ws()
                    guard i < count else { i = buffer.consumed; break loop }     // re-read the key with more bytes
                    guard p[i] == UInt8(ascii: ":") else { try fail("expected ':'"); break loop }
                    i += 1
                    state = .topValue(isFeatures: isFeatures)
                case .topValue(let isFeatures):
                    if isFeatures && p[i] == UInt8(ascii: "[") {
                        sawFeatures = true
                        i += 1; state = .elementStart
                        continue loop
                    }
                    guard let e = Self.valueEnd(p, i, count) else { break loop }
                    if e <= i { try fail("unbalanced brackets or a misplaced \(JSONLineScanner.describe(p[i]))"); break loop }
                    if isFeatures { try body(.malformed(reason: "FeatureCollection without a 'features' array", line: 1)); sawFeatures = true }
                    i = e; state = .topKey
                case .elementStart:
                    if p[i] == UInt8(ascii: "]") { i += 1; state = .topKey; continue loop }
                    guard let e = Self.valueEnd(p, i, count) else { break loop }
                    index += 1
                    if e <= i {
                        try body(.malformed(reason: "invalid JSON: unbalanced brackets or an unterminated string in feature \(index); the rest of the file is not read", line: index))
                        state = .done; break loop
                    }
                    try body(.bytes(UnsafeBufferPointer(start: p + i, count: e - i), line: index))
                    i = e; state = .afterElement
                case .afterElement:
                    if p[i] == UInt8(ascii: ",") { i += 1; state = .elementStart; continue loop }
                    if p[i] == UInt8(ascii: "]") { i += 1; state = .topKey; continue loop }
                    // Garbage between features: it belongs to the next record, which the parser rejects.
                    state = .elementStart
                }
            }
            if case .done = state, i != buffer.consumed { buffer.consumed = i; progressed = true }
        }
        return progressed

        func close() throws {
            if !sawFeatures { try body(.malformed(reason: "FeatureCollection without a 'features' array", line: 1)) }
            state = .done
        }
        func fail(_ what: String) throws {
            index += 1
            try body(.malformed(reason: "invalid JSON: \(what) in the FeatureCollection; the rest of the file is not read", line: max(index, 1)))
            state = .done
        }
    }

    /// The offset after the string whose opening quote is at `q`, nil when it is not complete yet.
    private static func stringEnd(_ p: UnsafePointer<UInt8>, _ q: Int, _ count: Int) -> Int? {
        var i = q + 1
        while i < count {
            if p[i] == UInt8(ascii: "\"") { return i + 1 }
            i += p[i] == UInt8(ascii: "\\") ? 2 : 1
        }
        return nil
    }

    /// The offset after the value starting at `i`: for a scalar the next `,` `]` `}` or
    /// whitespace at depth 0; for a container its matching bracket. nil: not complete yet;
    /// −1: the brackets do not match.
    private static func valueEnd(_ p: UnsafePointer<UInt8>, _ start: Int, _ count: Int) -> Int? {
        var i = start
        var stack: [UInt8] = []
        while i < count {
            let c = p[i]
            switch c {
            case UInt8(ascii: "\""):
                guard let e = stringEnd(p, i, count) else { return nil }
                i = e
                if stack.isEmpty { return i }
                continue
            case UInt8(ascii: "{"): stack.append(UInt8(ascii: "}"))
            case UInt8(ascii: "["): stack.append(UInt8(ascii: "]"))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if stack.isEmpty { return i }                    // end of a scalar
                guard stack.removeLast() == c else { return -1 }
                if stack.isEmpty { return i + 1 }
            case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
                if stack.isEmpty { return i }
            default: break
            }
            i += 1
        }
        return nil
    }
}
