import Testing
import Foundation

@Suite struct ImportExportCLITests {
    static let walk = """
    #\tstartTime:1600000000000
    #\tSiteID:s\tSiteName:Mall\tFloorId:f\tFloorName:F1
    1600000000005\tTYPE_WAYPOINT\t10.5\t20.25
    1600000000010\tTYPE_ACCELEROMETER\t0.1\t0.2\t9.8\t3
    1600000000020\tTYPE_WIFI\t\taa:bb:cc:00:00:02\t-70\t5180\t1599999999000
    1600000000031\tTYPE_BLUE\t\t0D:F0:25:2D:E9:ED\t-88
    1600000000060\tTYPE_WAYPOINT\t12.0\t22.0
    """

    func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    @Test func importStrictThenExport() throws {
        let d = try tempDir(); defer { try? FileManager.default.removeItem(at: d) }
        let f = d.appendingPathComponent("w.txt")
        try Data(Self.walk.utf8).write(to: f)
        let out = d.appendingPathComponent("t.jsonl").path
        let r = try CLI.run(["import", "ms-indoor", f.path, "--strict", "-o", out])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("event gt: 2"))
        #expect(r.stdout.contains("dropped TYPE_BLUE (undocumented): 1"))
        let e = try CLI.run(["export", "csv", out])
        #expect(e.status == 0, "\(e.stderr)")
        #expect(e.stdout.hasPrefix("t,time_utc,source,subject,lat,lon,h,e,n,u"))
        #expect(e.stdout.contains(",gt,phone,"))
        #expect(e.stdout.contains(",10.5,20.25,0,0,checkpoint"))
    }

    @Test func strictFailureIsExit65WithFileAndLine() throws {
        let d = try tempDir(); defer { try? FileManager.default.removeItem(at: d) }
        let f = d.appendingPathComponent("w.txt")
        try Data((Self.walk + "\n1600000000070\tTYPE_NEW\t1\n").utf8).write(to: f)
        let out = d.appendingPathComponent("t.jsonl").path
        let lenient = try CLI.run(["import", "ms-indoor", f.path, "-o", out])
        #expect(lenient.status == 0)
        #expect(lenient.stdout.contains("unknown type TYPE_NEW: 1"))
        let strict = try CLI.run(["import", "ms-indoor", f.path, "--strict", "-o", out])
        #expect(strict.status == 65)
        #expect(strict.stderr.contains("w.txt:8: unknown record type TYPE_NEW"))
    }

    @Test func unknownFormatIsUsageError() throws {
        let r = try CLI.run(["import", "nope", "x", "-o", "/dev/null"])
        #expect(r.status == 64)
        let e = try CLI.run(["export", "shp", "x"])
        #expect(e.status == 64)
    }
}
