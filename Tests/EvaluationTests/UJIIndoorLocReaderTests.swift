import Foundation
import Positioning
import Replay
import Testing
import TestSupport

/// UJIIndoorLoc is read once: `UJIIndoorLocReader.read` (the evaluation protocols) is the
/// importer's row reader, so both see the same rows.
@Suite struct UJIIndoorLocOneReaderTests {
    static let text = """
    "WAP001","WAP002","WAP003","LONGITUDE","LATITUDE","FLOOR","BUILDINGID","SPACEID","RELATIVEPOSITION","USERID","PHONEID","TIMESTAMP"\r
    100,-70,0,-7541.2643,4864920.7782,2,1,106,2,2,23,1371713733\r
    -50,100,-99,-7541.2643,4864920.7782,2,1,106,2,2,23,1371713733\r

    """

    @Test func readerAndImporterSeeTheSameRows() throws {
        let dir = PackagePaths.temporaryFolder("uji-one-reader")
        let url = dir.appendingPathComponent("u.csv")
        try Self.text.write(to: url, atomically: true, encoding: .utf8)
        let rows = try UJIIndoorLocReader.read(url)
        #expect(rows.count == 2)
        // 100 = not heard; 0 dBm (no phone measures a WiFi level that strong) is not kept either.
        #expect(rows[0].heard.map(\.0) == ["WAP002"] && rows[0].heard.map(\.1) == [-70])
        #expect(rows[1].building == 1 && rows[1].floor == 2 && rows[1].user == 2 && rows[1].phone == 23 && rows[1].timestamp == 1371713733)
        #expect(rows[1].position == SIMD2(-7541.2643, 4864920.7782))
        let imported = try UJIIndoorLocImporter.parse(ByteBuffer(url: url), file: url.path, options: ImportOptions(strict: true))
        let scans = imported.events.compactMap { e -> [String]? in if case .wifi(let s) = e.payload { return s.accessPoints.map(\.bssid) } else { return nil } }
        #expect(scans == rows.map { $0.heard.map { $0.0.lowercased() } })
        #expect(imported.report.dropped["WAP reading of 0 to 99 dBm (not a level a phone measures; not kept)"] == 1)
    }

    @Test func theReaderIsStrict() throws {
        let dir = PackagePaths.temporaryFolder("uji-one-reader-strict")
        let bad = dir.appendingPathComponent("bad.csv")
        try (Self.text + "x,100,100,-7541,4864920,2,1,106,2,2,23,1371713734\n").write(to: bad, atomically: true, encoding: .utf8)
        #expect { try UJIIndoorLocReader.read(bad) } throws: { e in
            (e as? ImportDataError).map { $0.line == 4 && $0.reason == "WAP001 is not an integer" } ?? false
        }
        let noBuilding = dir.appendingPathComponent("nob.csv")
        try "WAP001,LONGITUDE,LATITUDE,FLOOR\n-50,1,2,0\n".write(to: noBuilding, atomically: true, encoding: .utf8)
        #expect { try UJIIndoorLocReader.read(noBuilding) } throws: { e in
            (e as? ImportDataError)?.reason == "header lacks column BUILDINGID"
        }
        let empty = dir.appendingPathComponent("empty.csv")
        try "".write(to: empty, atomically: true, encoding: .utf8)
        #expect { try UJIIndoorLocReader.read(empty) } throws: { e in (e as? ImportDataError)?.code == .missingHeader }
    }
}
