import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads whole input files (side files, YAML, CSV, importer inputs) with `open`/`read`, so
/// that FIFOs and other non-seekable inputs work (`posfuse import x <(zcat x.gz)`), and turns
/// every failure into a `TraceDataError` naming the file: code `io` (exit 74, or 64 when the
/// file does not exist) for read errors, `invalid_utf8` (exit 65, with the line) for text
/// that is not UTF-8. A file is never opened for writing here.
public enum InputFile {
    /// Largest file read whole (a larger one is a data error, not an allocation failure).
    public static let maxBytes = 4 << 30

    /// All bytes of `url`.
    public static func data(_ url: URL) throws -> Data {
        let path = url.path
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw ioError(path, "cannot open: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR { throw ioError(path, "is a folder, not a file") }
        var out = Data()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 0 { out.reserveCapacity(Int(st.st_size)) }
        let chunk = 1 << 20
        let buf = UnsafeMutablePointer<UInt8>.allocate(capacity: chunk)
        defer { buf.deallocate() }
        while true {
            let r = read(fd, buf, chunk)
            if r < 0 {
                if errno == EINTR { continue }
                throw ioError(path, "read error: \(String(cString: strerror(errno)))")
            }
            if r == 0 { break }
            guard out.count + r <= maxBytes else {
                throw TraceDataError(file: path, line: 0, reason: "larger than \(maxBytes >> 30) GiB", code: .tooLarge)
            }
            out.append(buf, count: r)
        }
        return out
    }

    /// The first `count` bytes of `url` (fewer for a shorter file), for sniffing a format.
    public static func prefix(_ url: URL, count: Int) throws -> [UInt8] {
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else { throw ioError(url.path, "cannot open: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var out = [UInt8](repeating: 0, count: count)
        var n = 0
        while n < count {
            let r = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + n, count - n) }
            if r < 0 { if errno == EINTR { continue }; throw ioError(url.path, "read error: \(String(cString: strerror(errno)))") }
            if r == 0 { break }
            n += r
        }
        return Array(out[..<n])
    }

    /// The text of `url`: UTF-8 (a byte-order mark is dropped), else a data error naming the
    /// line and column of the first invalid byte.
    public static func text(_ url: URL) throws -> String {
        try decode(try data(url), file: url.path)
    }

    /// UTF-8 text of `data` (see `text(_:)`); `file` names it in errors.
    public static func decode(_ data: Data, file: String) throws -> String {
        var bytes = [UInt8](data)
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { bytes.removeFirst(3) }
        if let bad = firstInvalidUTF8(bytes) {
            var line = 1, lineStart = 0
            for i in 0..<bad where bytes[i] == 0x0A { line += 1; lineStart = i + 1 }
            throw TraceDataError(file: file, line: line,
                                 reason: "invalid UTF-8 (byte 0x\(String(bytes[bad], radix: 16, uppercase: true)) at column \(bad - lineStart + 1))",
                                 code: .invalidUTF8)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Offset of the first byte that does not belong to a well-formed UTF-8 sequence
    /// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
    public static func firstInvalidUTF8(_ b: [UInt8]) -> Int? {
        b.withUnsafeBufferPointer { buf in
            guard let p = buf.baseAddress else { return nil }
            return firstInvalidUTF8(p, from: 0, to: buf.count)
        }
    }

    /// The one UTF-8 rule of posfuse's readers (trace files, `InputFile.text`, refine report
    /// records): the offset of the first byte of `p[from..<to]` that does not start or continue a
    /// well-formed sequence (RFC 3629, Table 3-7 of the Unicode standard: no overlong forms, no
    /// surrogates, nothing above U+10FFFF), or nil. ASCII runs are skipped 8 bytes at a time.
    public static func firstInvalidUTF8(_ p: UnsafePointer<UInt8>, from: Int, to: Int) -> Int? {
        var i = from
        while i < to {
            while i + 8 <= to, UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { i += 8 }
            guard i < to else { break }
            let c = p[i]
            if c < 0x80 { i += 1; continue }
            let len: Int, lo: UInt8, hi: UInt8
            switch c {
            case 0xC2...0xDF: len = 2; lo = 0x80; hi = 0xBF
            case 0xE0: len = 3; lo = 0xA0; hi = 0xBF
            case 0xE1...0xEC, 0xEE, 0xEF: len = 3; lo = 0x80; hi = 0xBF
            case 0xED: len = 3; lo = 0x80; hi = 0x9F
            case 0xF0: len = 4; lo = 0x90; hi = 0xBF
            case 0xF1...0xF3: len = 4; lo = 0x80; hi = 0xBF
            case 0xF4: len = 4; lo = 0x80; hi = 0x8F
            default: return i
            }
            guard i + len <= to, p[i + 1] >= lo, p[i + 1] <= hi else { return i }
            for k in 2..<max(2, len) where p[i + k] & 0xC0 != 0x80 { return i }
            i += len
        }
        return nil
    }

    static func ioError(_ path: String, _ reason: String) -> TraceDataError {
        TraceDataError(file: path, line: 0, reason: reason, code: .io)
    }
}
