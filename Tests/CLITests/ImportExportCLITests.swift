import Testing
import Foundation
import TestSupport

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

/// Real recordings (skipped without them, docs/data.md): imported strictly, they replay.
@Suite struct ImportedTraceReplayCLITests {
    static var data: URL? { SharedData.folder }

    @Test(.enabled(if: data != nil)) func gsdcPhoneAgainstSpanReplays() throws {
        let d = Self.data!.appendingPathComponent("gsdc2020/2020-05-14-US-MTV-1")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("gsdc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let imp = try CLI.run(["import", "nmea", d.appendingPathComponent("Pixel4_chipset.nmea").path,
                               "--truth", d.appendingPathComponent("SPAN_Pixel4_1Hz.nmea").path, "--strict",
                               "-o", out.appendingPathComponent("trace.jsonl").path])
        #expect(imp.status == 0, "\(imp.stderr)")
        #expect(imp.stdout.contains("event gnss: 1737"))
        // Replayed in process by compare; phone fixes against the SPAN truth: sub-5 m median.
        let r = try CLI.run(["compare", out.path, out.path])
        #expect(r.status == 0, "\(r.stderr)")
        // The compare table has one block per source ("<trace> / <source>"): read each median.
        var median: [String: Double] = [:]
        var block = ""
        for line in r.stdout.split(separator: "\n") {
            if line.contains(" / ") { block = String(line.split(separator: "/").last!).trimmingCharacters(in: .whitespaces) }
            let cols = line.split(separator: " ")
            if cols.first == "median_m", cols.count > 1 { median[block] = Double(String(cols[1])) }
        }
        #expect(median["gnss"] != nil && median["gnss"]! < 5, "\(r.stdout)")
        // The default ekf over the phone's fixes (constant velocity, a car): no worse than 1.5× the fixes.
        #expect(median["ekf"] != nil && median["ekf"]! < 1.5 * (median["gnss"] ?? 0), "\(r.stdout)")
        let geo = try CLI.run(["export", "geojson", out.path, "--source", "gt,gnss", "-o", out.appendingPathComponent("x.geojson").path])
        #expect(geo.status == 0, "\(geo.stderr)")
        // Estimates through a --pipeline file: unreadable → 64, a bad option value → 65 naming it.
        let bad = out.appendingPathComponent("bad.yaml")
        try "stages: {ekf: {gnss_bias_fraction: 1.5}}\n".write(to: bad, atomically: true, encoding: .utf8)
        #expect(try CLI.run(["export", "geojson", out.path, "--source", "ekf", "--pipeline", "/nonexistent.yaml", "-o", "/dev/null"]).status == 64)
        let badRun = try CLI.run(["export", "geojson", out.path, "--source", "ekf", "--pipeline", bad.path, "-o", "/dev/null"])
        #expect(badRun.status == 65 && badRun.stderr.contains("gnss_bias_fraction"), "\(badRun.status) \(badRun.stderr)")
        // A results database run exports too (origin from the trace folder).
        let db = out.appendingPathComponent("r.sqlite").path
        let rep = try CLI.run(["replay", out.path, "--db", db])
        #expect(rep.status == 0, "\(rep.stderr)")
        let csv = try CLI.run(["export", "csv", db, "--traces", out.deletingLastPathComponent().path, "--trace-name", out.lastPathComponent])
        #expect(csv.status == 0, "\(csv.stderr)")
        #expect(csv.stdout.split(separator: "\n").filter { $0.contains(",gnss,phone,") }.count == 1737)
    }
}

@Suite struct ExportRunCLITests {
    /// A finished run (replay --json --epochs layout) exports with the origin given.
    @Test func runJSONExportsEstimatesAndTruth() throws {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: d) }
        let run = """
        {"traces":[{"trace":"walk","skipped":0,"scores":[{"source":"ekf","count":2,"median_m":1.0,
          "epochs":{"t":[10.0,11.0],"e_m":[1.0,1.0],"r95_m":[2.4477468306808161,null],"x_m":[1.0,2.0],"y_m":[0.0,0.0],
                    "gt_x_m":[0.0,1.0],"gt_y_m":[0.0,0.0]}}]}]}
        """
        let f = d.appendingPathComponent("run.json")
        try Data(run.utf8).write(to: f)
        let r = try CLI.run(["export", "csv", f.path, "--origin", "48,11,0"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = r.stdout.split(separator: "\n")
        #expect(rows.count == 5)   // header + 2 ekf + 2 gt
        #expect(rows.contains { $0.contains(",ekf,phone,") && $0.contains(",1,0,0,,,1,0,1,") })   // σ = 1 m
        #expect(rows.filter { $0.contains(",gt,phone,") }.count == 2)
        let noOrigin = try CLI.run(["export", "csv", f.path])
        #expect(noOrigin.status == 64)
    }
}

@Suite struct ExportScoreInteropCLITests {
    static let nmea = """
    $GPGGA,120000.00,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*67
    $GPRMC,120000.00,A,4807.038,N,01131.000,E,0.0,0.0,230394,,*3D
    $GPGGA,120001.00,4807.039,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*67
    $GPRMC,120001.00,A,4807.039,N,01131.000,E,0.0,0.0,230394,,*3D
    $GPGGA,120002.00,4807.040,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*6A
    $GPRMC,120002.00,A,4807.040,N,01131.000,E,0.0,0.0,230394,,*30
    $GPGGA,120003.00,4807.041,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*6A
    $GPRMC,120003.00,A,4807.041,N,01131.000,E,0.0,0.0,230394,,*30
    """

    /// import nmea (+ static truth) → export csv of the estimates → score --estimates gives
    /// the same gnss scores as replay.
    @Test func exportedEstimatesScoreLikeReplay() throws {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("xs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: d) }
        let n = d.appendingPathComponent("p.nmea")
        try Data(Self.nmea.utf8).write(to: n)
        let trace = d.appendingPathComponent("t.jsonl").path
        let imp = try CLI.run(["import", "nmea", n.path, "--static-truth", "48.1173,11.5167,592.3", "--strict", "-o", trace])
        #expect(imp.status == 0, "\(imp.stderr)")
        let csv = d.appendingPathComponent("est.csv").path
        let exp = try CLI.run(["export", "csv", trace, "--source", "gnss", "-o", csv])
        #expect(exp.status == 0, "\(exp.stderr)")
        let scored = try CLI.run(["score", "--estimates", csv, trace, "--json"])
        let replayed = try CLI.run(["replay", trace, "--json"])
        #expect(scored.status == 0, "\(scored.stderr)")
        #expect(replayed.status == 0, "\(replayed.stderr)")
        func median(_ s: String) -> Double? {
            guard let o = try? JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any],
                  let t = (o["traces"] as? [[String: Any]])?.first, let sc = t["scores"] as? [[String: Any]],
                  let g = sc.first(where: { $0["source"] as? String == "gnss" }) else { return nil }
            return (g["median_m"] as? NSNumber)?.doubleValue
        }
        let a = try #require(median(scored.stdout)), b = try #require(median(replayed.stdout))
        #expect(abs(a - b) < 1e-6)
    }
}
