#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// JSON value kinds the scanner distinguishes.
package enum JKind: UInt8 { case number, string, bool, null, object, array }

/// One `"key": value` member of a scanned JSON object. Offsets are byte offsets from
/// the start of the line (so error columns are `offset + 1`).
public struct JField {
    package var keyStart: Int
    package var keyLength: Int
    package var kind: JKind
    /// The number (kind `.number`), 1/0 (kind `.bool`).
    package var number: Double
    /// String content without quotes (kind `.string`), or the whole `{…}` / `[…]` text.
    package var start: Int
    package var end: Int
    /// The string contains backslash escapes (decode with `JSONLineScanner.string`).
    package var escaped: Bool
}

/// A purpose-built scanner for one JSON Lines line (RFC 8259 grammar), working on raw
/// bytes without allocating for anything but the output field list.
///
/// Outline:
/// 1. `object(at:into:)` scans `{ "key": value, … }` and records each member's key range
///    and value: numbers are converted immediately, strings are recorded as byte ranges
///    (decoded only when an event needs them), nested objects and arrays are validated
///    and recorded as ranges (scanned again on demand, e.g. the `aps` of a WiFi scan).
/// 2. Numbers: the JSON grammar is checked byte by byte while accumulating up to 19
///    significant decimal digits. Clinger's fast path (mantissa ≤ 2⁵³ and decimal
///    exponent within ±22: one correctly rounded multiplication or division by an exact
///    power of ten) gives the correctly rounded double; every other number falls back to
///    C `strtod`, which is correctly rounded in glibc and Darwin libc. The caller keeps a
///    NUL byte after the line, so `strtod` never reads past the buffer.
/// 3. Errors name the first offending byte and its 1-based column.
///
/// `p[count]` must be readable (the reader keeps a terminator byte after each line).
public struct JSONLineScanner {
    package let p: UnsafePointer<UInt8>
    package let count: Int
    /// Deepest nesting accepted (a guard for the recursive descent): 64 for trace lines, more for
    /// report records (which carry whatever an app nests in keys posfuse ignores).
    package var maxDepth = JSONLineScanner.traceLineDepth
    /// The nesting limit of a trace line's scan (the trace decoder's, a report's evidence events').
    package static var traceLineDepth: Int { 64 }

    package init(p: UnsafePointer<UInt8>, count: Int) { self.p = p; self.count = count }

    // MARK: objects

    /// An array read in the object scan (`line(into:reading:…)`): its offset (its field's `start`)
    /// and its elements' range of `bounds`.
    package typealias ReadArray = (start: Int, bounds: Range<Int>)

    /// Whether the key at `ks..<ke` (unescaped bytes) is `key`.
    @inline(__always)
    private func isKey(_ key: StaticString, _ ks: Int, _ ke: Int) -> Bool {
        ke - ks == key.utf8CodeUnitCount && memcmp(p + ks, key.utf8Start, ke - ks) == 0
    }

    /// Scans the object starting at `i` (which must be `{` after optional whitespace)
    /// into `fields` (appended). Returns the offset just after the closing `}`.
    package func object(at start: Int, into fields: inout [JField]) throws(LineIssue) -> Int {
        var unused = 0, none: [JField] = [], noBounds: [(start: Int, end: Int)] = [], noStarts: [ReadArray] = [], noObjects: [JField] = []
        return try members(at: start, into: &fields, deferring: nil, also: nil, reading: false, deferred: &unused, elements: &none,
                           bounds: &noBounds, readStarts: &noStarts, objects: &noObjects, elementDepth: nil, depth: 1)
    }

    /// `object(at:into:)`; with `deferring`, the array value of a member with that (unescaped) key
    /// is only delimited, not validated, and counted in `deferred`. When every element of such an
    /// array is an object, its elements are delimited in the same pass and appended to `elements`
    /// (`objectElements`); otherwise the array is delimited as a whole (`containerEnd`) and
    /// nothing is appended.
    /// `reading` (with `key`, and `key2` when given): such an array of objects is instead read in
    /// this pass, validated (`objectMembers`): its elements' members go to `elements`, their
    /// ranges there to `bounds`, its offset and its elements' range of `bounds` to `readStarts`.
    /// `objects`, `elementDepth` (reading only): see `objectMembers`.
    /// `depth`: the nesting depth of this object's member values (1 for a line's top level).
    @inline(__always)
    private func members(at start: Int, into fields: inout [JField], deferring key: StaticString?, also key2: StaticString?,
                         reading: Bool, deferred: inout Int,
                         elements: inout [JField], bounds: inout [(start: Int, end: Int)], readStarts: inout [ReadArray],
                         objects: inout [JField], elementDepth: Int?, depth: Int) throws(LineIssue) -> Int {
        var i = skipWS(start)
        guard i < count, p[i] == UInt8(ascii: "{") else { throw unexpected(i, expecting: "'{'") }
        i = skipWS(i + 1)
        if i < count, p[i] == UInt8(ascii: "}") { return i + 1 }
        while true {
            guard i < count, p[i] == UInt8(ascii: "\"") else { throw unexpected(i, expecting: "a key string") }
            let (ks, ke, kesc) = try stringRange(at: i)
            i = skipWS(ke + 1)
            guard i < count, p[i] == UInt8(ascii: ":") else { throw unexpected(i, expecting: "':'") }
            i = skipWS(i + 1)
            var f = JField(keyStart: ks, keyLength: ke - ks, kind: .null, number: 0, start: 0, end: 0, escaped: kesc)
            if reading, let key, i < count, p[i] == UInt8(ascii: "["),
               isKey(key, ks, ke) || key2.map({ isKey($0, ks, ke) }) == true,
               case let first = bounds.count,
               let e = try objectMembers(at: i, into: &elements, bounds: &bounds, objects: &objects, elementDepth: elementDepth) {
                f.kind = .array; f.start = i; f.end = e
                readStarts.append((i, first..<bounds.count))
                i = e
            } else if !reading, let key, i < count, p[i] == UInt8(ascii: "["), isKey(key, ks, ke),
               let e = objectElements(at: i, into: &elements) ?? containerEnd(at: i, limit: count) {
                f.kind = .array; f.start = i; f.end = e
                i = e
                deferred += 1
            } else {
                i = try value(at: i, into: &f, depth: depth)
            }
            fields.append(f)
            i = skipWS(i)
            guard i < count else { throw unexpected(i, expecting: "',' or '}'") }
            if p[i] == UInt8(ascii: ",") { i = skipWS(i + 1); continue }
            if p[i] == UInt8(ascii: "}") { return i + 1 }
            throw unexpected(i, expecting: "',' or '}'")
        }
    }

    /// Scans a whole line as one object: nothing but whitespace may follow it.
    package func line(into fields: inout [JField]) throws(LineIssue) {
        let e = try object(at: 0, into: &fields)
        let j = skipWS(e)
        if j < count { throw unexpected(j, expecting: "end of line") }
    }

    /// `line`, except that the array value of every top-level member named `key` is only delimited
    /// (bracket depth and quotes), not validated: a report's `evidence`, whose events the trace
    /// decoder validates one by one. Returns how many members were deferred; the caller must
    /// validate them (or the whole line with `line`) before it relies on them.
    /// `elements`: the element fields of a deferred array whose elements are all objects, as
    /// `validatedArrayElements` gives them, delimited in the same pass (one pass over a report's
    /// evidence instead of two); nothing is appended for an array with any other element.
    package func line(into fields: inout [JField], deferring key: StaticString, elements: inout [JField]) throws(LineIssue) -> Int {
        var deferred = 0, noBounds: [(start: Int, end: Int)] = [], noStarts: [ReadArray] = [], noObjects: [JField] = []
        let e = try members(at: 0, into: &fields, deferring: key, also: nil, reading: false, deferred: &deferred, elements: &elements,
                            bounds: &noBounds, readStarts: &noStarts, objects: &noObjects, elementDepth: nil, depth: 1)
        let j = skipWS(e)
        if j < count { throw unexpected(j, expecting: "end of line") }
        return deferred
    }

    /// `line`, validating all of it, and in the same pass reading the array value of each
    /// top-level member named `key` (or `key2`) whose elements are all objects: each element's
    /// members are appended to `elements` (as `object(at:into:)` gives them; nesting counted from
    /// the line's top), its range there to `bounds`, the array's offset (its field's `start`) and
    /// its elements' range of `bounds` to `readStarts`. An array with another kind of element is
    /// validated as `line` does and not read. (serve's geolocate: `wifiAccessPoints`, most of a
    /// request, and `cellTowers`, scanned once instead of validated and then read.)
    package func line(into fields: inout [JField], reading key: StaticString, also key2: StaticString? = nil, elements: inout [JField],
                      bounds: inout [(start: Int, end: Int)], readStarts: inout [ReadArray]) throws(LineIssue) {
        var unused = 0, noObjects: [JField] = []
        let e = try members(at: 0, into: &fields, deferring: key, also: key2, reading: true, deferred: &unused, elements: &elements,
                            bounds: &bounds, readStarts: &readStarts, objects: &noObjects, elementDepth: nil, depth: 1)
        let j = skipWS(e)
        if j < count { throw unexpected(j, expecting: "end of line") }
    }

    /// `line(into:reading:…)` for a report's `evidence` (the trace decoder then decodes each event
    /// from its members, `TraceLineDecoder.event(members:record:count:span:)`, instead of scanning the
    /// event's bytes again): each read element's own byte range also goes to `objects` (a field of
    /// kind `.object`, as `validatedArrayElements` gives it), one per entry of `bounds`; and the
    /// nesting inside a read element is limited to `elementDepth` levels counted from the element,
    /// the limit of the scan the decoder would otherwise make of it (`maxDepth` of a trace line's
    /// scanner). An element nested deeper throws here although the record may be valid JSON: the
    /// caller then reads the record the other way (`ReportRecordParser.parse`).
    package func line(into fields: inout [JField], reading key: StaticString, elements: inout [JField],
                      bounds: inout [(start: Int, end: Int)], readStarts: inout [ReadArray],
                      objects: inout [JField], elementDepth: Int) throws(LineIssue) {
        var unused = 0
        let e = try members(at: 0, into: &fields, deferring: key, also: nil, reading: true, deferred: &unused, elements: &elements,
                            bounds: &bounds, readStarts: &readStarts, objects: &objects, elementDepth: elementDepth, depth: 1)
        let j = skipWS(e)
        if j < count { throw unexpected(j, expecting: "end of line") }
    }

    /// The array `[…]` at `start` (a top-level member's value, depth 1) read as a list of objects
    /// (depth 2; their values from depth 3), each validated as `skipContainer` would: members
    /// appended to `out`, ranges to `bounds`. Returns the offset after the closing `]`; nil (and
    /// `out`, `bounds` as they were) when an element is not an object, for the caller to validate
    /// the array as any value. Throws where the text is not valid JSON.
    /// `elementDepth` (non-nil: a report's evidence): each element's byte range is appended to
    /// `objects` as well, and its nesting is limited to `elementDepth` levels counted from the
    /// element (its member values are at depth 1 there, 3 here: the limit is `elementDepth + 2`).
    private func objectMembers(at start: Int, into out: inout [JField], bounds: inout [(start: Int, end: Int)],
                               objects: inout [JField], elementDepth: Int?) throws(LineIssue) -> Int? {
        guard maxDepth >= 2 else { return nil }
        let firstMember = out.count, firstBound = bounds.count, firstObject = objects.count
        var i = skipWS(start + 1)
        if i < count, p[i] == UInt8(ascii: "]") { return i + 1 }
        var unused = 0, none: [JField] = [], noBounds: [(start: Int, end: Int)] = [], noStarts: [ReadArray] = [], noObjects: [JField] = []
        var inner = self
        if let elementDepth { inner.maxDepth = min(maxDepth, elementDepth + 2) }
        while true {
            guard i < count, p[i] == UInt8(ascii: "{") else {
                out.removeSubrange(firstMember...); bounds.removeSubrange(firstBound...)
                if elementDepth != nil { objects.removeSubrange(firstObject...) }
                return nil
            }
            let b = out.count, objectStart = i
            i = try inner.members(at: i, into: &out, deferring: nil, also: nil, reading: false, deferred: &unused, elements: &none,
                                  bounds: &noBounds, readStarts: &noStarts, objects: &noObjects, elementDepth: nil, depth: 3)
            bounds.append((b, out.count))
            if elementDepth != nil {
                objects.append(JField(keyStart: 0, keyLength: 0, kind: .object, number: 0, start: objectStart, end: i, escaped: false))
            }
            i = skipWS(i)
            guard i < count else { throw unexpected(i, expecting: "',' or ']'") }
            if p[i] == UInt8(ascii: ",") { i = skipWS(i + 1); continue }
            if p[i] == UInt8(ascii: "]") { return i + 1 }
            throw unexpected(i, expecting: "',' or ']'")
        }
    }

    /// Whether the whole text is one JSON value of any kind, with only whitespace around it.
    package func isSingleValue() -> Bool {
        var f = JField(keyStart: 0, keyLength: 0, kind: .null, number: 0, start: 0, end: 0, escaped: false)
        guard let e = try? value(at: skipWS(0), into: &f, depth: 1) else { return false }
        return skipWS(e) == count
    }

    /// Element ranges of the array `[…]` spanning `start..<end` (as recorded in a field).
    package func arrayElements(start: Int, end: Int, into out: inout [JField]) throws(LineIssue) {
        try elements(start: start, end: end, into: &out, validated: false)
    }

    /// `arrayElements` of an array whose bytes an earlier scan of this text has already
    /// validated (a report's `evidence`, validated by `line`): the same fields, but an object or
    /// array element is delimited by bracket depth and string quotes alone instead of being
    /// validated (and its numbers converted) a second time. Other elements go through `value`.
    package func validatedArrayElements(start: Int, end: Int, into out: inout [JField]) throws(LineIssue) {
        try elements(start: start, end: end, into: &out, validated: true)
    }

    /// The one element loop of both: `validated` (a constant at each call, so the branch folds
    /// away when inlined) delimits container elements without validating them.
    @inline(__always) private func elements(start: Int, end: Int, into out: inout [JField], validated: Bool) throws(LineIssue) {
        var i = skipWS(start + 1)
        if i < end, p[i] == UInt8(ascii: "]") { return }
        while true {
            var f = JField(keyStart: 0, keyLength: 0, kind: .null, number: 0, start: 0, end: 0, escaped: false)
            if validated, i < end, p[i] == UInt8(ascii: "{") || p[i] == UInt8(ascii: "["), let e = containerEnd(at: i, limit: end) {
                f.kind = p[i] == UInt8(ascii: "{") ? .object : .array; f.start = i; f.end = e
                i = e
            } else {
                i = try value(at: i, into: &f, depth: 1)
            }
            out.append(f)
            i = skipWS(i)
            guard i < end else { throw unexpected(i, expecting: "',' or ']'") }
            if p[i] == UInt8(ascii: ",") { i = skipWS(i + 1); continue }
            if p[i] == UInt8(ascii: "]") { return }
            throw unexpected(i, expecting: "',' or ']'")
        }
    }

    /// The array `[…]` at `start` (text not yet validated) delimited as a list of objects: each
    /// element `{…}` delimited by `containerEnd` and appended to `out` as `validatedArrayElements`
    /// would give it. Returns the offset after the closing `]`, or nil (and `out` as it was) when
    /// an element is not an object or the text is not a comma-separated list of them.
    @inline(__always) private func objectElements(at start: Int, into out: inout [JField]) -> Int? {
        let first = out.count
        var i = skipWS(start + 1)
        if i < count, p[i] == UInt8(ascii: "]") { return i + 1 }
        while true {
            guard i < count, p[i] == UInt8(ascii: "{"), let e = containerEnd(at: i, limit: count) else { break }
            out.append(JField(keyStart: 0, keyLength: 0, kind: .object, number: 0, start: i, end: e, escaped: false))
            i = skipWS(e)
            guard i < count else { break }
            if p[i] == UInt8(ascii: ",") { i = skipWS(i + 1); continue }
            if p[i] == UInt8(ascii: "]") { return i + 1 }
            break
        }
        out.removeSubrange(first...)
        return nil
    }

    /// The offset after the container opening at `start` in text known to be valid JSON: brackets
    /// counted outside strings, a string's escapes stepped over. nil when `limit` comes first
    /// (never for validated text).
    @inline(__always) private func containerEnd(at start: Int, limit: Int) -> Int? {
        var depth = 0, i = start
        while i < limit {
            switch p[i] {
            case UInt8(ascii: "\""):
                i += 1
                while i < limit && p[i] != UInt8(ascii: "\"") { i += p[i] == UInt8(ascii: "\\") ? 2 : 1 }
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { return i + 1 }
            default: break
            }
            i += 1
        }
        return nil
    }

    // MARK: values

    /// Scans one value at `i` into `f`; returns the offset after it.
    private func value(at i: Int, into f: inout JField, depth: Int) throws(LineIssue) -> Int {
        guard i < count else { throw unexpected(i, expecting: "a value") }
        switch p[i] {
        case UInt8(ascii: "\""):
            let (s, e, esc) = try stringRange(at: i)
            f.kind = .string; f.start = s; f.end = e; f.escaped = esc
            return e + 1
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let (v, e) = try number(at: i)
            f.kind = .number; f.number = v; f.start = i; f.end = e
            return e
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let e = try skipContainer(at: i, depth: depth)
            f.kind = p[i] == UInt8(ascii: "{") ? .object : .array; f.start = i; f.end = e
            return e
        case UInt8(ascii: "t"):
            try literal("true", at: i); f.kind = .bool; f.number = 1; return i + 4
        case UInt8(ascii: "f"):
            try literal("false", at: i); f.kind = .bool; f.number = 0; return i + 5
        case UInt8(ascii: "n"):
            try literal("null", at: i); f.kind = .null; return i + 4
        default:
            throw unexpected(i, expecting: "a value")
        }
    }

    /// Validates a nested object or array; returns the offset after its closing bracket.
    private func skipContainer(at start: Int, depth: Int) throws(LineIssue) -> Int {
        guard depth <= maxDepth else { throw .json("nesting deeper than \(maxDepth) at column \(start + 1)") }
        let isObject = p[start] == UInt8(ascii: "{")
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var i = skipWS(start + 1)
        if i < count, p[i] == close { return i + 1 }
        var scratch = JField(keyStart: 0, keyLength: 0, kind: .null, number: 0, start: 0, end: 0, escaped: false)
        while true {
            if isObject {
                guard i < count, p[i] == UInt8(ascii: "\"") else { throw unexpected(i, expecting: "a key string") }
                let (_, ke, _) = try stringRange(at: i)
                i = skipWS(ke + 1)
                guard i < count, p[i] == UInt8(ascii: ":") else { throw unexpected(i, expecting: "':'") }
                i = skipWS(i + 1)
            }
            if i < count, p[i] == UInt8(ascii: "{") || p[i] == UInt8(ascii: "[") {
                i = try skipContainer(at: i, depth: depth + 1)
            } else {
                i = try value(at: i, into: &scratch, depth: depth + 1)
            }
            i = skipWS(i)
            guard i < count else { throw unexpected(i, expecting: isObject ? "',' or '}'" : "',' or ']'") }
            if p[i] == UInt8(ascii: ",") { i = skipWS(i + 1); continue }
            if p[i] == close { return i + 1 }
            throw unexpected(i, expecting: isObject ? "',' or '}'" : "',' or ']'")
        }
    }

    private func literal(_ word: StaticString, at i: Int) throws(LineIssue) {
        let n = word.utf8CodeUnitCount
        let w = word.utf8Start
        for k in 0..<n where i + k >= count || p[i + k] != w[k] {
            throw unexpected(i + k, expecting: "'\(word)'")
        }
    }

    // MARK: strings

    /// Validates the string whose opening quote is at `q`: returns the content range
    /// (closing quote at `end`) and whether it contains escapes.
    @inline(__always)
    private func stringRange(at q: Int) throws(LineIssue) -> (Int, Int, Bool) {
        var i = q + 1
        var escaped = false
        while i < count {
            let c = p[i]
            if c == UInt8(ascii: "\"") { return (q + 1, i, escaped) }
            if c == UInt8(ascii: "\\") {
                escaped = true
                guard i + 1 < count else { break }
                switch p[i + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    i += 2
                case UInt8(ascii: "u"):
                    for k in 2...5 where i + k >= count || hexValue(p[i + k]) < 0 {
                        throw .json("invalid \\u escape at column \(i + 1)")
                    }
                    i += 6
                default:
                    throw .json("invalid escape '\\\(Self.describe(p[i + 1]))' at column \(i + 1)")
                }
                continue
            }
            if c < 0x20 { throw .json("control character \(Self.describe(c)) in string at column \(i + 1)") }
            i += 1
        }
        throw .json("unterminated string starting at column \(q + 1)")
    }

    /// Decodes the string content `start..<end` (escapes resolved when `escaped`).
    package func string(start: Int, end: Int, escaped: Bool) throws(LineIssue) -> String {
        if !escaped { return String(decoding: UnsafeBufferPointer(start: p + start, count: end - start), as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(end - start)
        var i = start
        while i < end {
            let c = p[i]
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            let e = p[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(i)
                i += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    // High surrogate: a low surrogate escape must follow (RFC 8259 §7).
                    guard i + 1 < end, p[i] == UInt8(ascii: "\\"), p[i + 1] == UInt8(ascii: "u") else {
                        throw .json("unpaired surrogate \\u\(String(scalar, radix: 16)) at column \(i - 5)")
                    }
                    let low = hex4(i + 2)
                    guard (0xDC00..<0xE000).contains(low) else {
                        throw .json("unpaired surrogate \\u\(String(scalar, radix: 16)) at column \(i - 5)")
                    }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw .json("unpaired surrogate \\u\(String(scalar, radix: 16)) at column \(i - 5)")
                }
                guard let u = Unicode.Scalar(scalar) else { throw .json("invalid \\u escape at column \(i - 5)") }
                out.append(contentsOf: UTF8.encode(u)!)
            default: out.append(e)  // " \ /
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    @inline(__always) private func hexValue(_ c: UInt8) -> Int {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(c) - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(c) - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(c) - 55
        default: return -1
        }
    }

    private func hex4(_ i: Int) -> UInt32 {
        var v: UInt32 = 0
        for k in 0..<4 { v = v << 4 | UInt32(max(0, hexValue(p[i + k]))) }
        return v
    }

    // MARK: numbers

    /// 10^k for 0 ≤ k ≤ 19, exact in a UInt64. A switch of constants (a table in the binary),
    /// not a `static let` array: every access to a global array went through `swift_once`
    /// (a call per number, ~12 % of the number scan by callgrind).
    @inline(__always) static func pow10Int(_ k: Int) -> UInt64 {
        switch k {
        case 0: return 1
        case 1: return 10
        case 2: return 100
        case 3: return 1_000
        case 4: return 10_000
        case 5: return 100_000
        case 6: return 1_000_000
        case 7: return 10_000_000
        case 8: return 100_000_000
        case 9: return 1_000_000_000
        case 10: return 10_000_000_000
        case 11: return 100_000_000_000
        case 12: return 1_000_000_000_000
        case 13: return 10_000_000_000_000
        case 14: return 100_000_000_000_000
        case 15: return 1_000_000_000_000_000
        case 16: return 10_000_000_000_000_000
        case 17: return 100_000_000_000_000_000
        case 18: return 1_000_000_000_000_000_000
        default: return 10_000_000_000_000_000_000
        }
    }

    /// Exact powers of ten representable in a Double, 0 ≤ k ≤ 22 (10²² is the largest): 10^k for
    /// k ≤ 19 converted from the exact integer (5^19 < 2^53, so exact), 10^19 · 10^(k−19) above
    /// (5^22 < 2^53: the product is representable, hence exact).
    @inline(__always) static func exactPow10(_ k: Int) -> Double {
        k <= 19 ? Double(pow10Int(k)) : Double(pow10Int(19)) * Double(pow10Int(k - 19))
    }
    #if arch(x86_64) && !os(Windows)
    /// Exact powers of ten in Float80, 0 ≤ k ≤ 27 (5²⁷ < 2⁶⁴, so 10⁰ … 10²⁷ are exact; a product
    /// of exact factors whose value is representable is exact).
    @inline(__always) static func exactPow10x(_ k: Int) -> Float80 {
        k <= 19 ? Float80(pow10Int(k)) : Float80(pow10Int(19)) * Float80(pow10Int(k - 19))
    }
    #endif

    /// Scans a JSON number at `start`; returns its correctly rounded value and end offset.
    @inline(__always)
    private func number(at start: Int) throws(LineIssue) -> (Double, Int) {
        var i = start
        let negative = p[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        var mantissa: UInt64 = 0
        var digits = 0          // significant digits accumulated (leading zeros excluded)
        var dropped = false     // more than 19 significant digits
        var exp10 = 0
        guard i < count, p[i] &- 48 < 10 else { throw unexpected(i, expecting: "a digit") }
        if p[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            while i < count, p[i] &- 48 < 10 {
                if digits < 19 { mantissa = mantissa &* 10 &+ UInt64(p[i] &- 48); digits += 1 } else { exp10 += 1; dropped = true }
                i += 1
            }
        }
        if i < count, p[i] == UInt8(ascii: ".") {
            i += 1
            guard i < count, p[i] &- 48 < 10 else { throw unexpected(i, expecting: "a digit after '.'") }
            // Runs of digits from one eight-byte load each (`leadingDigits`: how many of the eight
            // are digits, with no per-byte test). Each step leaves the mantissa, the count of
            // significant digits and the exponent where the one-digit loop below would have left
            // them: leading zeros (nothing significant yet) only move the exponent; a run that
            // ends inside the load and fits the 19 kept digits is taken whole, and so are eight
            // digits while they fit. Otherwise (the 19 are nearly full, or the line ends within
            // eight bytes) the one-digit loop takes the rest, without more loads.
            var runs = true
            while true {
                if runs && i + 8 <= count {
                    let (v, n) = leadingDigits(at: i)
                    if n == 0 { break }
                    if digits == 0 {
                        let z = min(n, Self.leadingZeroDigits(v))
                        if z > 0 { exp10 -= z; i += z; continue }
                    }
                    if n < 8 && digits + n <= 19 {
                        mantissa = mantissa &* Self.pow10Int(n) &+ Self.digitValue(v, n); digits += n; exp10 -= n; i += n
                        break
                    }
                    if n == 8 && digits <= 11 {
                        mantissa = mantissa &* 100_000_000 &+ Self.eightDigitValue(v); digits += 8; exp10 -= 8; i += 8
                        continue
                    }
                    runs = false
                }
                guard i < count, p[i] &- 48 < 10 else { break }
                let d = p[i] &- 48
                if digits == 0 && d == 0 {
                    exp10 -= 1
                } else if digits < 19 {
                    mantissa = mantissa &* 10 &+ UInt64(d); digits += 1; exp10 -= 1
                } else {
                    dropped = true
                }
                i += 1
            }
        }
        if i < count, p[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            var eneg = false
            if i < count, p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") { eneg = p[i] == UInt8(ascii: "-"); i += 1 }
            guard i < count, p[i] &- 48 < 10 else { throw unexpected(i, expecting: "a digit in the exponent") }
            var e = 0
            while i < count, p[i] &- 48 < 10 {
                if e < 100_000 { e = e * 10 + Int(p[i] &- 48) }
                i += 1
            }
            exp10 += eneg ? -e : e
        }
        // A number must be followed by a delimiter; checking it here also guarantees
        // that strtod below consumes exactly the bytes scanned.
        if i < count {
            switch p[i] {
            case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                break
            default: throw unexpected(i, expecting: "',' or the end of the number")
            }
        }
        if !dropped && mantissa <= 1 << 53 && exp10 >= -22 && exp10 <= 22 {
            var v = Double(mantissa)
            v = exp10 < 0 ? v / Self.exactPow10(-exp10) : v * Self.exactPow10(exp10)
            return (negative ? -v : v, i)
        }
        if mantissa == 0 && !dropped { return (negative ? -0.0 : 0.0, i) }
        #if arch(x86_64) && !os(Windows)
        // Up to 19 digits with |exponent| ≤ 27: one x87 operation with exact operands
        // (w < 2⁶⁴ and 10^|e| = 2^|e|·5^|e| with 5²⁷ < 2⁶⁴ are exact in Float80) is correctly
        // rounded to 64 bits; rounding that to 53 bits is correct unless the 64-bit result
        // lies within one unit of a halfway point between doubles (then strtod decides).
        if !dropped && exp10 >= -27 && exp10 <= 27 {
            let w = Float80(mantissa)
            let r = exp10 < 0 ? w / Self.exactPow10x(-exp10) : w * Self.exactPow10x(exp10)
            let low = r.significandBitPattern & 0x7FF
            if low != 0x400 && low != 0x3FF && low != 0x401 {
                let v = Double(r)
                return (negative ? -v : v, i)
            }
        }
        #endif
        let v = strtod(UnsafeRawPointer(p + start).assumingMemoryBound(to: CChar.self), nil)
        guard v.isFinite else {
            throw .value("number out of range at column \(start + 1)")
        }
        return (v, i)
    }

    /// The eight bytes at `p[i..<i+8]` (the caller guarantees `i + 8 <= count`) and how many of
    /// them, from the first, are ASCII digits (0…8). SWAR: one 64-bit load and a test of all eight
    /// bytes at once (the digit test of Lemire's fast_float, `is_made_of_eight_digits_fast`;
    /// D. Lemire, "Number parsing at a gigabyte per second", Software: Practice and Experience
    /// 51(8), 2021), whose failing bytes are located instead of only detected: byte k of
    /// `(v & F0…) | (((v + 06…) & F0…) >> 4)` is 0x33 exactly when byte k of v is '0'…'9'. The one
    /// place the test can err is a carry out of a lower byte (a byte ≥ 0xFA, itself not a digit)
    /// into the next: only bytes after the first non-digit, which the count does not read.
    @inline(__always) private func leadingDigits(at i: Int) -> (v: UInt64, n: Int) {
        let v = UInt64(littleEndian: UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
        let x = (v & 0xF0F0_F0F0_F0F0_F0F0) | (((v &+ 0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0) >> 4)
        return (v, Self.leadingZeroBytes(x ^ 0x3333_3333_3333_3333))
    }

    /// How many of the bytes of `v`, from the first, are '0' (0…8).
    @inline(__always) static func leadingZeroDigits(_ v: UInt64) -> Int { leadingZeroBytes(v ^ 0x3030_3030_3030_3030) }

    /// How many of the bytes of `x`, from the first (the lowest: a little-endian load), are 0 (0…8).
    @inline(__always) static func leadingZeroBytes(_ x: UInt64) -> Int { x == 0 ? 8 : x.trailingZeroBitCount >> 3 }

    /// The value of eight ASCII digits loaded as `v` (first digit in the lowest byte): three
    /// multiplications (fast_float's `parse_eight_digits_unrolled`, Lemire 2021).
    @inline(__always) static func eightDigitValue(_ v: UInt64) -> UInt64 {
        var x = v &- 0x3030_3030_3030_3030
        x = (x &* 10) &+ (x >> 8)
        x = (((x & 0x0000_00FF_0000_00FF) &* (100 &+ (1_000_000 << 32)))
             &+ (((x >> 16) & 0x0000_00FF_0000_00FF) &* (1 &+ (10_000 << 32)))) >> 32
        return x
    }

    /// The value of the first n (1…7) ASCII digits of `v`: they are moved to the last n bytes and
    /// the first 8 − n filled with '0', which leaves the value of eight digits unchanged.
    @inline(__always) static func digitValue(_ v: UInt64, _ n: Int) -> UInt64 {
        let shift = UInt64(64 - 8 * n)
        return eightDigitValue((v << shift) | (0x3030_3030_3030_3030 >> (64 - shift)))
    }

    // MARK: helpers

    @inline(__always) func skipWS(_ start: Int) -> Int {
        var i = start
        while i < count {
            let c = p[i]
            // JSON whitespace (RFC 8259 §2); a trace line never holds a newline, a pretty-printed feature may.
            if c != UInt8(ascii: " ") && c != UInt8(ascii: "\t") && c != UInt8(ascii: "\r") && c != UInt8(ascii: "\n") { break }
            i += 1
        }
        return i
    }

    private func unexpected(_ i: Int, expecting: String) -> LineIssue {
        if i >= count { return .json("unexpected end of line at column \(i + 1), expected \(expecting)") }
        return .json("unexpected \(Self.describe(p[i])) at column \(i + 1), expected \(expecting)")
    }

    static func describe(_ c: UInt8) -> String {
        if c >= 0x20 && c < 0x7F { return "'\(Character(Unicode.Scalar(c)))'" }
        return "byte 0x" + (c < 16 ? "0" : "") + String(c, radix: 16, uppercase: true)
    }
}
