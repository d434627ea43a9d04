import Foundation
import Positioning
import TraceIO

/// Byte-level helpers for the text importers: files are read once into a NUL-terminated
/// byte buffer, split into lines and fields without creating a String per field, and
/// numbers are parsed with `strtod` directly from the buffer (the NUL guard keeps `strtod`
/// inside the buffer at the end of the file).
public struct ByteBuffer: Sendable {
    /// File bytes followed by one 0 byte.
    let bytes: [UInt8]
    var count: Int { bytes.count - 1 }

    public init(url: URL) throws {
        var b = [UInt8](try InputFile.data(url))
        // Strip a UTF-8 byte-order mark.
        if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { b.removeFirst(3) }
        b.append(0)
        bytes = b
    }
    public init(string: String) {
        var b = Array(string.utf8); b.append(0); bytes = b
    }

    /// Calls `body` with each line (without `\n` / `\r\n`) as a byte range and its 1-based number.
    func forEachLine(_ body: (Range<Int>, Int) throws -> Void) rethrows {
        var start = 0, n = 0
        let end = count
        try bytes.withUnsafeBufferPointer { p in
            while start < end {
                var i = start
                while i < end && p[i] != 0x0A { i += 1 }
                var e = i
                if e > start && p[e - 1] == 0x0D { e -= 1 }
                n += 1
                try body(start..<e, n)
                start = i + 1
            }
        }
    }

    /// Splits `line` at `separator` into `out` (cleared first), no quoting: for the tab-separated
    /// ms-indoor lines. Comma-separated files go through the one CSV reader, `forEachCSVRecord`.
    @inline(__always)
    func split(_ line: Range<Int>, separator: UInt8, into out: inout [Range<Int>]) {
        out.removeAll(keepingCapacity: true)
        bytes.withUnsafeBufferPointer { p in
            var s = line.lowerBound
            var i = s
            while i < line.upperBound {
                if p[i] == separator { out.append(s..<i); s = i + 1 }
                i += 1
            }
            out.append(s..<line.upperBound)
        }
    }

    func string(_ r: Range<Int>) -> String { String(decoding: bytes[r], as: UTF8.self) }

    /// The field with surrounding spaces removed.
    func trimmed(_ r: Range<Int>) -> Range<Int> {
        var a = r.lowerBound, b = r.upperBound
        while a < b && (bytes[a] == 0x20 || bytes[a] == 0x09) { a += 1 }
        while b > a && (bytes[b - 1] == 0x20 || bytes[b - 1] == 0x09) { b -= 1 }
        return a..<b
    }

    func equals(_ r: Range<Int>, _ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard r.count == n else { return false }
        return s.withUTF8Buffer { sb in
            bytes.withUnsafeBufferPointer { p in
                var i = 0
                while i < n { if p[r.lowerBound + i] != sb[i] { return false }; i += 1 }
                return true
            }
        }
    }

    func hasPrefix(_ r: Range<Int>, _ s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard r.count >= n else { return false }
        return equals(r.lowerBound..<(r.lowerBound + n), s)
    }

    /// A decimal floating-point number filling the whole (trimmed) field, or nil.
    func double(_ r0: Range<Int>) -> Double? {
        let r = trimmed(r0)
        guard !r.isEmpty else { return nil }
        // strtod reads up to the first byte that cannot continue the number: when the range is
        // a prefix of a longer number-like run (a split field), parse a copy instead.
        switch bytes[r.upperBound] {
        case 0x30...0x39, 0x2E, 0x2B, 0x2D, 0x45, 0x65, 0x58, 0x78, 0x50, 0x70, 0x41...0x46, 0x61...0x66, 0x49, 0x69, 0x4E, 0x6E:
            return Double(String(decoding: bytes[r], as: UTF8.self)).flatMap { $0.isFinite ? $0 : nil }
        default: break
        }
        return bytes.withUnsafeBufferPointer { p -> Double? in
            let base = UnsafeMutableRawPointer(mutating: p.baseAddress!).assumingMemoryBound(to: CChar.self)
            let start = base + r.lowerBound
            var end: UnsafeMutablePointer<CChar>? = nil
            let v = strtod(start, &end)
            guard let end, end - base == r.upperBound, v.isFinite else { return nil }
            return v
        }
    }

    /// A decimal integer (optional sign) filling the whole (trimmed) field, or nil.
    func int(_ r0: Range<Int>) -> Int? {
        let r = trimmed(r0)
        guard !r.isEmpty else { return nil }
        return bytes.withUnsafeBufferPointer { p -> Int? in
            var i = r.lowerBound
            var neg = false
            if p[i] == 0x2D { neg = true; i += 1 } else if p[i] == 0x2B { i += 1 }
            guard i < r.upperBound else { return nil }
            var v = 0
            while i < r.upperBound {
                let d = Int(p[i]) - 48
                guard d >= 0 && d <= 9 else { return nil }
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(d)
                guard !o1 && !o2 else { return nil }
                v = s
                i += 1
            }
            return neg ? -v : v
        }
    }
}

/// Parses a comma-separated header line into column indices by name (exact match after trimming).
func columnIndex(_ names: [String]) -> [String: Int] {
    var m: [String: Int] = [:]
    for (i, n) in names.enumerated() where m[n] == nil { m[n.trimmingCharacters(in: .whitespaces)] = i }
    return m
}

/// The first column name that occurs twice in a header row, if any.
func duplicateColumn(_ names: [String]) -> String? {
    var seen: Set<String> = []
    for n in names.map({ $0.trimmingCharacters(in: .whitespaces) }) where !n.isEmpty {
        if !seen.insert(n).inserted { return n }
    }
    return nil
}

/// Parses "lat,lon[,h]" (degrees, degrees, metres).
public func parseGeodetic(_ s: String) -> Geodetic? {
    let p = s.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
    guard p.count == 2 || p.count == 3, p.allSatisfy({ $0 != nil }) else { return nil }
    let lat = p[0]!, lon = p[1]!
    guard abs(lat) <= 90, abs(lon) <= 180 else { return nil }
    return Geodetic(latitude: lat, longitude: lon, height: p.count == 3 ? p[2]! : 0)
}
