import Foundation

/// Streams the records of a report file: JSON Lines (one report or GeoJSON Feature per line,
/// read in 1 MiB chunks, so memory stays bounded for any number of reports) or one GeoJSON
/// FeatureCollection document (read whole). Every non-blank line is a record: a line that is
/// not JSON is handed on as a parse error, so it still produces an output record.
public struct ReportStream {
    public enum Record {
        case object(Any, line: Int)
        case malformed(reason: String, line: Int)
    }

    public let url: URL

    public init(url: URL) { self.url = url }

    /// Calls `body` for every record, in file order.
    public func forEach(_ body: (Record) throws -> Void) throws {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let first = try handle.read(upToCount: 4096) ?? Data()
        let head = String(decoding: first.prefix(4096), as: UTF8.self)
        if head.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{"), head.contains("\"FeatureCollection\"") {
            var all = first
            all.append(try handle.readToEnd() ?? Data())
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
        var pending = first
        var line = 1
        while true {
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            pending.append(chunk)
            line = try lines(of: pending, startLine: line, flush: chunk.isEmpty, body, rest: &pending)
            if chunk.isEmpty { break }
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
        var start = data.startIndex
        var out = Data()
        var i = data.startIndex
        while i < data.endIndex {
            if data[i] == 0x0A {
                try emit(data[start..<i], line: line, body)
                line += 1
                start = data.index(after: i)
            }
            i = data.index(after: i)
        }
        if flush {
            if start < data.endIndex { try emit(data[start..<data.endIndex], line: line, body); line += 1 }
        } else {
            out = Data(data[start..<data.endIndex])
        }
        rest = out
        return line
    }

    private func emit(_ bytes: Data, line: Int, _ body: (Record) throws -> Void) throws {
        let text = bytes.last == 0x0D ? bytes.dropLast() : bytes
        if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
        if let object = try? JSONSerialization.jsonObject(with: Data(text)) {
            try body(.object(object, line: line))
        } else {
            try body(.malformed(reason: "invalid JSON", line: line))
        }
    }
}
