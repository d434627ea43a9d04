import Foundation
@testable import Interop
import Positioning
import Testing
import TestSupport

/// The one CSV reader (`ByteBuffer.forEachCSVRecord`, RFC 4180) and the importers that read
/// through it. The expected fields of the RFC cases are what Python's `csv.reader` (an
/// independent implementation of the same RFC) returns for the same bytes.
@Suite struct CSVReaderTests {
    /// (fields as text, first line, lines spanned, defect) of every record.
    static func read(_ s: String, comment: UInt8? = nil) -> [(fields: [String], line: Int, lines: Int, comment: Bool, defect: String?)] {
        let buf = ByteBuffer(string: s)
        var out: [(fields: [String], line: Int, lines: Int, comment: Bool, defect: String?)] = []
        buf.forEachCSVRecord(comment: comment) { r in
            out.append((r.isComment ? [buf.string(r.range)] : buf.strings(r), r.line, r.lineCount, r.isComment, r.defect))
        }
        return out
    }

    @Test func quotedFieldsCRLFAndEmptyFields() {
        // Python: [['a', 'b,c', 'say "hi"'], ['', '', ''], ['x\ny', 'z'], ['', 'last']]
        let r = Self.read("a,\"b,c\",\"say \"\"hi\"\"\"\r\n,,\r\n\"x\ny\",z\n\"\",last")
        #expect(r.map(\.fields) == [["a", "b,c", "say \"hi\""], ["", "", ""], ["x\ny", "z"], ["", "last"]])
        #expect(r.map(\.line) == [1, 2, 3, 5])          // the quoted line break spans lines 3-4
        #expect(r.map(\.lines) == [1, 1, 2, 1])
        #expect(r.allSatisfy { $0.defect == nil })
    }

    @Test func lineEndsAndBlankLines() {
        // A CR before LF or at the end of the file is not part of the last field; a final line
        // break makes no extra record; an empty line is one empty field.
        #expect(Self.read("a,b\r\n\r\nc,d\r").map(\.fields) == [["a", "b"], [""], ["c", "d"]])
        #expect(Self.read("a,b\n").map(\.fields) == [["a", "b"]])
        #expect(Self.read("\"q\"\r\nx").map(\.fields) == [["q"], ["x"]])
        #expect(Self.read("a,\"b\"\r").map(\.fields) == [["a", "b"]])
        // A CR inside a line stays (only the line's end loses it); trailing separator = empty last field.
        #expect(Self.read("a\rb,c,\n").map(\.fields) == [["a\rb", "c", ""]])
        #expect(Self.read("").isEmpty)
    }

    @Test func quoteInsideAnUnquotedFieldIsAByte() {
        // Python (default dialect) gives the same: ['5"', 'x"y']
        #expect(Self.read("5\",x\"y").map(\.fields) == [["5\"", "x\"y"]])
    }

    @Test func malformedQuotingIsADefectOfItsRecord() {
        let r = Self.read("a,\"b\"c,d\nok,1\n\"never closed,2\nz")
        #expect(r.count == 3)
        #expect(r[0].defect == "text after the closing quote of field 2" && r[0].fields == ["a", "b", "d"])
        #expect(r[1].defect == nil && r[1].fields == ["ok", "1"] && r[1].line == 2)
        // An open quote runs to the end of the file: one record, starting on its own line.
        #expect(r[2].defect == "quoted field 1 never closes" && r[2].line == 3 && r[2].lines == 2)
    }

    @Test func commentLines() {
        let r = Self.read("# Fix,Provider\n  # indented \"quote\nFix,gps\n", comment: UInt8(ascii: "#"))
        #expect(r.map(\.comment) == [true, true, false])
        #expect(r[0].fields == ["# Fix,Provider"] && r[1].fields == ["  # indented \"quote"])
        #expect(r[2].fields == ["Fix", "gps"] && r[2].line == 3)
        // Without a comment byte, '#' is data.
        #expect(Self.read("# a,b").map(\.fields) == [["# a", "b"]])
    }

    @Test func numbersAreParsedInPlaceFromQuotedFields() {
        let buf = ByteBuffer(string: "\"1.5\",\" 2 \",3e2\n")
        var got: [Double?] = []
        buf.forEachCSVRecord { r in got = r.fields.map { buf.double($0) } }
        #expect(got == [1.5, 2, 300])
    }

    // The importers that used to split CSV their own way now read quoting the same way.

    @Test func positionCSVReadsQuotedSubjectsAndCRLF() throws {
        let text = "# written by hand\r\nt,lat,lon,subject\r\n1,48.1,11.5,\"object:door, north\"\r\n2,48.2,11.6,\"say \"\"x\"\"\"\r\n"
        let r = try PositionCSVImporter.parse(text, file: "p.csv", options: ImportOptions(strict: true))
        #expect(r.events.map(\.device) == ["object:door, north", "say \"x\""])
        #expect(r.report.lines == 4)
    }

    @Test func wigleReadsQuotedSSIDs() throws {
        let text = "WigleWifi-1.4,appRelease=2.26\n"
            + "MAC,SSID,AuthMode,FirstSeen,Channel,RSSI,CurrentLatitude,CurrentLongitude,AltitudeMeters,AccuracyMeters,Type\n"
            + "aa:bb:cc:dd:ee:01,\"Cafe, \"\"Free\"\"\",[ESS],2020-01-01 10:00:00,1,-60,48.1,11.1,500,5,WIFI\n"
        let r = try WiGLEImporter.parse(text, file: "w.csv", options: ImportOptions(strict: true))
        #expect(r.aps.map(\.ssid) == ["Cafe, \"Free\""])
    }

    @Test func aMalformedQuoteIsAMalformedRowWithItsLine() throws {
        let text = "t,lat,lon\n1,48.1,11.5\n2,\"48.2\"x,11.6\n"
        #expect(throws: ImportDataError.self) { try PositionCSVImporter.parse(text, file: "p.csv", options: ImportOptions(strict: true)) }
        do { _ = try PositionCSVImporter.parse(text, file: "p.csv", options: ImportOptions(strict: true)) } catch let e as ImportDataError {
            #expect(e.line == 3 && e.reason.contains("closing quote"))
        }
        let lenient = try PositionCSVImporter.parse(text, file: "p.csv", options: ImportOptions())
        #expect(lenient.events.count == 1)
    }
}
