import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams the records of a report file: JSON Lines (one report or GeoJSON Feature per line,
/// read in 1 MiB chunks, so memory stays bounded for any number of reports) or one GeoJSON
/// FeatureCollection document (read whole). Every non-blank line is a record: a line that is
/// not JSON is handed on as a parse error, so it still produces an output record.
/// `url == nil` reads standard input: each record is handed on as soon as its line is complete
/// (a service can keep `posfuse refine -` running as a co-process).
public struct ReportStream {
    public enum Record {
        case object(Any, line: Int)
        case malformed(reason: String, line: Int)
    }

    public let url: URL?

    /// Reads `url`, or standard input when nil.
    public init(url: URL?) { self.url = url }

    /// Up to `count` bytes: whatever one read(2) returns (a pipe does not wait for a full chunk).
    private static func read(_ fd: Int32, upTo count: Int) throws -> Data {
        var buffer = [UInt8](repeating: 0, count: count)
        while true {
            #if canImport(Glibc)
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, count) }
            #else
            let n = buffer.withUnsafeMutableBytes { Darwin.read(fd, $0.baseAddress, count) }
            #endif
            if n >= 0 { return Data(buffer[0..<n]) }
            if errno != EINTR { throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(errno))]) }
        }
    }

    /// Calls `body` for every record, in file order.
    public func forEach(_ body: (Record) throws -> Void) throws {
        let handle = try url.map { try FileHandle(forReadingFrom: $0) } ?? FileHandle.standardInput
        defer { if url != nil { try? handle.close() } }
        let fd = handle.fileDescriptor
        let first = try Self.read(fd, upTo: 4096)
        let head = String(decoding: first.prefix(4096), as: UTF8.self)
        if head.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{"), head.contains("\"FeatureCollection\"") {
            var all = first
            while true { let more = try Self.read(fd, upTo: 1 << 20); if more.isEmpty { break }; all.append(more) }
            if let doc = try? JSONSerialization.jsonObject(with: all) as? [String: Any], doc["type"] as? String == "FeatureCollection" {
                guard let features = doc["features"] as? [Any] else {
                    try body(.malformed(reason: "FeatureCollection without a 'features' array", line: 1)); return
                }
                for (i, f) in features.enumerated() { try body(.object(f, line: i + 1)) }   // line = feature index
                return
            }
            // Not a single document: fall through to JSON Lines on the same bytes.
            try lines(of: all, startLine: 1, flush: true, body)
            return
        }
        // Lines already complete are handed on before the next read (which may block on a pipe).
        var pending = first
        var line = 1
        var eof = first.isEmpty
        while true {
            line = try lines(of: pending, startLine: line, flush: eof, body, rest: &pending)
            if eof { break }
            let chunk = try Self.read(fd, upTo: 1 << 20)
            eof = chunk.isEmpty
            pending.append(chunk)
        }
    }

    @discardableResult
    private func lines(of data: Data, startLine: Int, flush: Bool, _ body: (Record) throws -> Void) throws -> Int {
        var rest = Data()
        return try lines(of: data, startLine: startLine, flush: flush, body, rest: &rest)
    }

    /// Emits the complete lines of `data`; the incomplete tail goes to `rest` (or is emitted
    /// too when `flush`). Returns the next line number.
    private func lines(of data: Data, startLine: Int, flush: Bool, _ body: (Record) throws -> Void, rest: inout Data) throws -> Int {
        var line = startLine
        var tail = Data()
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            guard let base = raw.baseAddress else { return }
            var start = 0
            while start < raw.count, let nl = memchr(base + start, 0x0A, raw.count - start) {
                let end = base.distance(to: UnsafeRawPointer(nl))
                try emit(UnsafeRawBufferPointer(rebasing: raw[start..<end]), line: line, body)
                line += 1
                start = end + 1
            }
            if flush {
                if start < raw.count { try emit(UnsafeRawBufferPointer(rebasing: raw[start...]), line: line, body); line += 1 }
            } else {
                tail = Data(raw[start...])
            }
        }
        rest = tail
        return line
    }

    private func emit(_ bytes: UnsafeRawBufferPointer, line: Int, _ body: (Record) throws -> Void) throws {
        let text = bytes.last == 0x0D ? UnsafeRawBufferPointer(rebasing: bytes.dropLast()) : bytes
        if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
        do {
            try body(.object(try Self.record(text), line: line))
        } catch let issue as LineIssue {
            try body(.malformed(reason: issue.message, line: line))
        }
    }

    /// Parses one JSON Lines record. The `evidence` array (top level, or in a Feature's
    /// `properties`), which holds nearly all of a record's bytes (an IMU window is thousands of
    /// events), is not turned into Foundation objects: it is validated by the trace scanner and
    /// handed on as `RawEvidence`, byte ranges the trace decoder reads directly. Everything else
    /// goes through `JSONSerialization` with the array emptied. (Measured on 51 kB reports: the
    /// Foundation round trip, parse then re-serialise each event for the decoder, was 80 % of
    /// `posfuse refine`'s time.)
    static func record(_ text: UnsafeRawBufferPointer) throws(LineIssue) -> Any {
        var buffer = [UInt8](text)
        let count = buffer.count
        buffer.append(0)                                        // the scanner's terminator (strtod)
        var top: [JField] = [], properties: [JField] = [], elements: [JField] = []
        var stripped: [UInt8]?
        var inProperties = false
        try buffer.withUnsafeBufferPointer { (b) throws(LineIssue) in
            let s = JSONLineScanner(p: b.baseAddress!, count: count)
            do throws(LineIssue) { try s.line(into: &top) } catch {
                // Valid JSON that is not an object goes on (the refiner says what a report must be).
                if (try? JSONSerialization.jsonObject(with: Data(text), options: [.fragmentsAllowed])) != nil { return }
                throw error
            }
            func key(_ f: JField, _ k: StaticString) -> Bool {
                f.keyLength == k.utf8CodeUnitCount && memcmp(s.p + f.keyStart, k.utf8Start, f.keyLength) == 0
            }
            var fields = top
            if top.contains(where: { key($0, "type") && $0.kind == .string && $0.end - $0.start == 7 && memcmp(s.p + $0.start, "Feature", 7) == 0 }),
               let p = top.last(where: { key($0, "properties") && $0.kind == .object }) {
                _ = try s.object(at: p.start, into: &properties)
                fields = properties; inProperties = true
            }
            let found = fields.filter { key($0, "evidence") }
            guard found.count == 1, let e = found.first, e.kind == .array else { return }   // anything else: the plain path
            try s.arrayElements(start: e.start, end: e.end, into: &elements)
            stripped = Array(b[0..<e.start]) + Array("[]".utf8) + Array(b[e.end..<count])
        }
        guard let stripped, var object = try? JSONSerialization.jsonObject(with: Data(stripped)) as? [String: Any] else {
            guard let object = try? JSONSerialization.jsonObject(with: Data(text), options: [.fragmentsAllowed]) else { throw .json("not parseable") }
            return object
        }
        let raw = RawEvidence(buffer: buffer, elements: elements.map { ($0.kind == .object, $0.start..<$0.end) })
        if inProperties, var p = object["properties"] as? [String: Any] {
            p["evidence"] = raw; object["properties"] = p
        } else {
            object["evidence"] = raw
        }
        return object
    }
}

/// The `evidence` array of a JSON Lines report, still as bytes: the line (with a terminating
/// NUL) and each element's byte range, validated JSON, flagged when it is an object.
public struct RawEvidence {
    public let buffer: [UInt8]
    public let elements: [(isObject: Bool, range: Range<Int>)]
}
