import Foundation

/// One record of a comma-separated file, as `ByteBuffer.forEachCSVRecord` reads it.
public struct CSVRecord: Sendable {
    /// Each field's content as a byte range of the buffer; for a quoted field, the bytes between
    /// its quotes (doubled quotes still doubled: `ByteBuffer.string(_:_:)` undoes them).
    public internal(set) var fields: [Range<Int>] = []
    /// The indices of the quoted fields whose content holds doubled quotes.
    var escaped: [Int] = []
    /// The record's bytes, all its lines, without the final line break.
    public internal(set) var range: Range<Int> = 0..<0
    /// The 1-based line the record starts on.
    public internal(set) var line = 0
    /// How many lines the record spans (more than one only when a quoted field holds a line break).
    public internal(set) var lineCount = 0
    /// A comment line (its first byte other than space or tab is the reader's comment byte):
    /// `fields` is empty, `range` is the line.
    public internal(set) var isComment = false
    /// Why the record is malformed (a quoted field that never closes, text after a closing
    /// quote), or nil. The fields are still given, as far as they could be read.
    public internal(set) var defect: String? = nil

    public var count: Int { fields.count }
    public subscript(i: Int) -> Range<Int> { fields[i] }
}

extension ByteBuffer {
    /// The one CSV reader of the importers (RFC 4180, https://www.rfc-editor.org/rfc/rfc4180):
    /// records end at LF or CRLF; fields are split at `separator`; a field that starts with `"`
    /// is quoted: it ends at the next lone `"`, `""` inside it stands for one `"`, and it may
    /// hold separators and line breaks. Beyond the RFC, as the files met in practice need: a
    /// `"` inside an unquoted field is an ordinary byte, a CR before the line's LF (or the end
    /// of the file) is dropped, the last line needs no line break, and with `comment` set, a
    /// line whose first byte other than space or tab is `comment` is given whole as a comment
    /// record. An empty line is a record of one empty field (callers skip blank records).
    ///
    /// No bytes are copied: fields are ranges of the buffer, so numbers are parsed in place
    /// (`double`, `int`). `body` gets each record with its first line number.
    func forEachCSVRecord(separator: UInt8 = UInt8(ascii: ","), comment: UInt8? = nil,
                          _ body: (CSVRecord) throws -> Void) rethrows {
        let quote = UInt8(ascii: "\""), lf: UInt8 = 0x0A, cr: UInt8 = 0x0D
        let end = count
        var rec = CSVRecord()
        var pos = 0, line = 1
        try bytes.withUnsafeBufferPointer { p in
            while pos < end {
                rec.fields.removeAll(keepingCapacity: true)
                rec.escaped.removeAll(keepingCapacity: true)
                rec.defect = nil
                rec.isComment = false
                rec.line = line
                let start = pos
                var lines = 1
                if let c = comment {
                    var j = pos
                    while j < end && (p[j] == 0x20 || p[j] == 0x09) { j += 1 }
                    if j < end && p[j] == c {
                        while j < end && p[j] != lf { j += 1 }
                        rec.isComment = true
                        rec.range = start..<(j > start && p[j - 1] == cr ? j - 1 : j)
                        rec.lineCount = 1
                        try body(rec)
                        pos = j + 1; line += 1
                        continue
                    }
                }
                fields: while true {
                    if pos < end && p[pos] == quote {
                        let contentStart = pos + 1
                        var i = contentStart, doubled = false, closed = false
                        while i < end {
                            if p[i] == quote {
                                if i + 1 < end && p[i + 1] == quote { doubled = true; i += 2; continue }
                                closed = true; break
                            }
                            if p[i] == lf { lines += 1 }
                            i += 1
                        }
                        rec.fields.append(contentStart..<i)
                        if doubled { rec.escaped.append(rec.fields.count - 1) }
                        guard closed else { rec.defect = "quoted field \(rec.fields.count) never closes"; pos = end; break fields }
                        pos = i + 1
                        if pos < end && p[pos] != separator && p[pos] != lf && !(p[pos] == cr && (pos + 1 == end || p[pos + 1] == lf)) {
                            rec.defect = rec.defect ?? "text after the closing quote of field \(rec.fields.count)"
                            while pos < end && p[pos] != separator && p[pos] != lf { pos += 1 }
                        }
                        if pos < end && p[pos] == separator { pos += 1; continue fields }
                        if pos < end && p[pos] == cr { pos += 1 }   // CRLF, or a CR ending the file
                        break fields
                    }
                    var i = pos
                    while i < end && p[i] != separator && p[i] != lf { i += 1 }
                    var e = i
                    if e > pos && p[e - 1] == cr && (i == end || p[i] == lf) { e -= 1 }
                    rec.fields.append(pos..<e)
                    pos = i
                    if pos < end && p[pos] == separator { pos += 1; continue fields }
                    break fields
                }
                // pos is at the record's LF or at the end of the buffer.
                rec.range = start..<(pos > start && p[pos - 1] == cr ? pos - 1 : pos)
                rec.lineCount = lines
                try body(rec)
                line += lines
                pos += 1
            }
        }
    }

    /// Field `i` of `record` as text, a quoted field's doubled quotes undone (not trimmed).
    func string(_ record: CSVRecord, _ i: Int) -> String {
        let s = string(record.fields[i])
        return record.escaped.contains(i) ? s.replacingOccurrences(of: "\"\"", with: "\"") : s
    }

    /// Every field of `record` as text (`string(_:_:)`).
    func strings(_ record: CSVRecord) -> [String] { record.fields.indices.map { string(record, $0) } }
}

extension ImportContext {
    /// The importers' loop over a CSV file (`ByteBuffer.forEachCSVRecord`): sets `line` to each
    /// record's first line, counts the lines, skips blank records and reports a malformed one
    /// (`malformed`: an error with `--strict`, else skipped and counted). `body` gets every other
    /// record, comment lines too when `comment` is set, with this context to report into.
    mutating func forEachRow(of buf: ByteBuffer, comment: UInt8? = nil,
                             _ body: (CSVRecord, inout ImportContext) throws -> Void) throws {
        try buf.forEachCSVRecord(comment: comment) { rec in
            line = rec.line
            report.lines += rec.lineCount
            if buf.trimmed(rec.range).isEmpty { return }
            if let d = rec.defect { try malformed(d); return }
            try body(rec, &self)
        }
    }
}
