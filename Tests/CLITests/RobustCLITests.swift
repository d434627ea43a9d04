import Testing
import Foundation
import TestSupport

/// End-to-end regression tests for the reproducers of issue 25 (crashes, NaN/null outputs,
/// contracts): every one runs the built `posfuse` as a user would.
@Suite struct RobustCLITests {
    static func temp(_ name: String) -> URL {
        let d = FileManager.default.temporaryDirectory
            .appendingPathComponent("posfuse-robustcli-\(ProcessInfo.processInfo.processIdentifier)-\(name)")
        try? FileManager.default.removeItem(at: d)
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }
    static func write(_ bytes: [UInt8], _ url: URL) throws { try Data(bytes).write(to: url) }
    static func write(_ text: String, _ url: URL) throws { try text.write(to: url, atomically: true, encoding: .utf8) }

    /// One line on stderr, no crash report, no NSError dump.
    static func oneLine(_ r: CLI.Output) -> Bool {
        let lines = r.stderr.split(separator: "\n")
        return lines.count == 1 && !r.stderr.contains("Error Domain") && !r.stderr.contains("crashed")
    }

    /// A small walk: the first 600 lines of the bundled open-street trace.
    static func smallTrace(_ dir: URL) throws -> URL {
        let src = try String(contentsOf: CLI.root.appendingPathComponent("Traces/open-street/trace.jsonl"), encoding: .utf8)
        let u = dir.appendingPathComponent("trace.jsonl")
        try write(src.split(separator: "\n").prefix(600).joined(separator: "\n") + "\n", u)
        return u
    }

    // MARK: crashes

    @Test func gpxWithInvalidUTF8InAnElementNameIsADataError() throws {
        let d = Self.temp("gpx")
        let gpx = d.appendingPathComponent("bad.gpx")
        try Self.write(Array("<?xml version=\"1.0\"?>\n<gpx version=\"1.1\">\n<trk><trkseg><trkpt lat=\"48.1\" lon=\"11.5\"><".utf8)
                       + [0xFF, 0xFE] + Array("ele>5</ele></trkpt></trkseg></trk></gpx>\n".utf8), gpx)
        let r = try CLI.run(["import", "gpx", gpx.path, "-o", d.appendingPathComponent("o.jsonl").path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("bad.gpx:3: invalid UTF-8"), "\(r.stderr)")
        #expect(Self.oneLine(r))
    }

    @Test func ujiWithADuplicatedHeaderColumnDoesNotCrash() throws {
        let d = Self.temp("uji")
        let csv = d.appendingPathComponent("dup.csv")
        try Self.write("""
            WAP001,WAP002,LONGITUDE,LATITUDE,FLOOR,BUILDINGID,SPACEID,RELATIVEPOSITION,USERID,PHONEID,TIMESTAMP,WAP002
            -50,100,-7541.2643,4864920.7782,2,1,106,2,2,23,1371713733,-60
            -50,100,-7541.2643,4864920.7782,2,1,106,2,2,23,1371713733

            """, csv)
        let out = d.appendingPathComponent("o.jsonl").path
        let lenient = try CLI.run(["import", "ujiindoorloc", csv.path, "-o", out])
        #expect(lenient.status == 0, "\(lenient.stderr)")
        #expect(lenient.stdout.contains("header repeats column WAP002"))
        let strict = try CLI.run(["import", "ujiindoorloc", csv.path, "-o", out, "--strict"])
        #expect(strict.status == 65)
        #expect(strict.stderr.contains("dup.csv:1: header repeats column WAP002"))
    }

    @Test func referenceCellAtHugeEastingFailsInValidateAndReplayAlike() throws {
        let d = Self.temp("refcell")
        _ = try Self.smallTrace(d)
        try Self.write(#"{"cells":[{"rat":"lte","mcc":262,"mnc":1,"area":1,"cid":1,"e":1e300,"n":0}]}"#, d.appendingPathComponent("reference.json"))
        let v = try CLI.run(["validate", d.path]), r = try CLI.run(["replay", d.path])
        #expect(v.status == 65 && r.status == 65, "\(v.stderr) \(r.stderr)")
        #expect(r.stderr.contains("reference.json: cells[0]: e 1e+300 outside"))
        #expect(!r.stderr.contains("crashed"))
    }

    @Test func simulateWithOutOfBoundsScenarioValuesFailsAtOnce() throws {
        let d = Self.temp("sim")
        let base = try String(contentsOf: CLI.root.appendingPathComponent("Traces/open-street/scenario.yaml"), encoding: .utf8)
        for (from, to) in [("rate_hz: 100 ", "rate_hz: 1e19 "), ("duration_s: 120 ", "duration_s: 1e16 "),
                           ("[[0, 0], [80, 0]", "[[0, 0], [.nan, 0]")] {
            let y = base.replacingOccurrences(of: from, with: to)
            #expect(y != base, "\(from)")
            let f = d.appendingPathComponent("s.yaml")
            try Self.write(y, f)
            let r = try CLI.run(["simulate", f.path, "-o", d.appendingPathComponent("o/trace.jsonl").path, "-q"])
            #expect(r.status == 65, "\(to): \(r.stderr)")
            #expect(r.stderr.hasPrefix(f.path), "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: d.appendingPathComponent("o/trace.jsonl").path))
        }
    }

    // MARK: NaN, Infinity, null

    @Test func truthAtHugeEastingIsRejectedNotPrintedAsNaN() throws {
        let d = Self.temp("gt")
        let u = try Self.smallTrace(d)
        let h = try FileHandle(forWritingTo: u)
        h.seekToEndOfFile(); h.write(Data(#"{"t":5.5,"type":"gt","e":1e308,"n":0}"#.utf8 + [0x0A])); try h.close()
        let v = try CLI.run(["validate", d.path])
        #expect(v.status == 65)
        #expect(v.stderr.contains("trace.jsonl:601: e 1e+308 outside"), "\(v.stderr)")
        let r = try CLI.run(["replay", d.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("nan") && !r.stdout.contains("inf") && !r.stdout.contains("null,"))
        let t = try CLI.run(["replay", d.path])
        #expect(!t.stdout.contains("nan") && !t.stdout.contains("inf"))
    }

    @Test func reportAtTimeOneE300IsAnErrorRecord() throws {
        let d = Self.temp("refine")
        let f = d.appendingPathComponent("r.jsonl")
        try Self.write("""
            {"id":"a","lat":48.1,"lon":11.5,"accuracy_m":20,"t":1e300,"evidence":[]}
            {"id":"b","lat":48.1,"lon":11.5,"accuracy_m":20,"t":60,"evidence":[]}

            """, f)
        let r = try CLI.run(["refine", f.path, "--lines"])
        let recs = r.stdout.split(separator: "\n")
        #expect(recs.count == 2)
        #expect(recs.first?.contains("\"status\":\"error\"") == true && recs.first?.contains("outside") == true, "\(recs.first ?? "")")
        #expect(!r.stdout.contains("null,\"") || !recs[1].contains("\"radius95_m\":null"))
    }

    /// Each importer, fed values outside the trace format's domain, writes a trace that validates.
    @Test func importersNeverWriteATraceTheirValidatorRejects() throws {
        let d = Self.temp("imports")
        let cases: [(String, String, String)] = [
            ("csv", "c.csv", "t,lat,lon,h,cov_ee,cov_en,cov_nn,source\n1,48.1,11.5,1e30,1,0,1,gnss\n2,48.1,11.5,0,-4,0,1,gnss\n1e300,48.1,11.5,0,,,,gt\n3,48.1,11.5,0,,,,gt\n"),
            ("tum", "t.txt", "# origin 48 11 500\n1e300 1 2 0 0 0 0 1\n2 1e300 0 0 0 0 0 1\n3 1 2 0 0 0 0 1\n"),
            ("geojson", "g.geojson", #"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Point","coordinates":[11.5,48.1,1e300]},"properties":{"t":1}},{"type":"Feature","geometry":{"type":"Point","coordinates":[11.5,48.1]},"properties":{"t":1e300}},{"type":"Feature","geometry":{"type":"Point","coordinates":[11.5,48.1]},"properties":{"t":5,"floor":1e300}},{"type":"Feature","geometry":{"type":"Point","coordinates":[11.5,48.1]},"properties":{"t":6}}]}"#),
            ("opencellid-measurements", "m.csv", "mcc,mnc,lac,cellid,lat,lon,signal,measured_at,act,ta\n262,1,1,1,48,11,-1e300,1600000000000,LTE,-5\n262,1,1,1,48,11,-80,1e300,LTE,\n262,1,1,2,48,11,-80,1600000001000,LTE,3\n"),
            ("gnsslogger", "g.txt", "# Fix,Provider,LatitudeDegrees,LongitudeDegrees,AltitudeMeters,SpeedMps,AccuracyMeters,BearingDegrees,UnixTimeMillis\nFix,GPS,37.1,-122.2,1e300,0,3.9,0,1600000000999\nFix,GPS,37.1,-122.2,5,0,-3,0,1600000001999\nFix,GPS,37.1,-122.2,5,0,3,0,1600000002999\n"),
            ("nmea", "n.nmea", "$GNGGA,235959.50,4807.038,N,01131.000,E,1,08,0.9,1e300,M,46.9,M,,*00\n$GNRMC,235959.50,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*53\n"),
            ("ujiindoorloc", "u.csv", "WAP001,LONGITUDE,LATITUDE,FLOOR,BUILDINGID,SPACEID,RELATIVEPOSITION,USERID,PHONEID,TIMESTAMP\n-500,-7541.26,4864920.77,2,1,106,2,2,23,1371713733\n-50,-7541.26,4864920.77,2000,1,106,2,2,23,1371713734\n-50,-7541.26,4864920.77,2,1,106,2,2,23,1371713735\n"),
        ]
        for (fmt, name, text) in cases {
            let f = d.appendingPathComponent(name)
            try Self.write(text, f)
            let out = d.appendingPathComponent("\(fmt).jsonl")
            let r = try CLI.run(["import", fmt, f.path, "-o", out.path])
            #expect(r.status == 0, "\(fmt): \(r.stderr)")
            guard r.status == 0 else { continue }
            let v = try CLI.run(["validate", out.path])
            #expect(v.status == 0, "\(fmt) wrote a trace validate rejects: \(v.stderr)")
            let txt = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
            #expect(!txt.contains("null"), "\(fmt): \(txt)")
        }
    }

    @Test func oneBadRSSIRowInWiGLEIsSkippedNotFatal() throws {
        let d = Self.temp("wigle")
        let f = d.appendingPathComponent("w.csv")
        try Self.write("""
            WigleWifi-1.4,appRelease=2.26
            MAC,SSID,AuthMode,FirstSeen,Channel,RSSI,CurrentLatitude,CurrentLongitude,AltitudeMeters,AccuracyMeters,Type
            AA:BB:CC:DD:EE:01,x,[ESS],2020-01-01 10:00:00,6,1e400,48.0,11.0,500,5,WIFI
            AA:BB:CC:DD:EE:02,y,[ESS],2020-01-01 10:00:00,6,-50,48.0,11.0,500,5,WIFI

            """, f)
        let out = d.appendingPathComponent("ref.json")
        let r = try CLI.run(["import", "wigle", f.path, "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("RSSI"))
        let json = try String(contentsOf: out, encoding: .utf8)
        #expect(json.contains("aa:bb:cc:dd:ee:02") && !json.contains("aa:bb:cc:dd:ee:01"))
        #expect(try CLI.run(["import", "wigle", f.path, "-o", out.path, "--strict"]).status == 65)
    }

    // MARK: contracts

    @Test func cellDBIsNeverWritten() throws {
        let d = Self.temp("celldb")
        _ = try Self.smallTrace(d)
        let empty = d.appendingPathComponent("empty.sqlite")
        FileManager.default.createFile(atPath: empty.path, contents: Data())
        let r = try CLI.run(["replay", d.path, "--cell-db", empty.path])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("empty.sqlite"))
        #expect(try Data(contentsOf: empty).isEmpty)
        let results = d.appendingPathComponent("results.sqlite")
        #expect(try CLI.run(["replay", d.path, "--db", results.path]).status == 0)
        let before = try Data(contentsOf: results)
        let r2 = try CLI.run(["replay", d.path, "--cell-db", results.path])
        #expect(r2.status == 65)
        #expect(r2.stderr.contains("not a cell database"))
        #expect(try Data(contentsOf: results) == before)
    }

    @Test func twoReplaysIntoOneDatabaseBothStoreTheirRuns() throws {
        let d = Self.temp("busy")
        _ = try Self.smallTrace(d)
        let db = d.appendingPathComponent("r.sqlite").path
        let procs = (0..<2).map { i -> (Process, URL) in
            let p = Process()
            p.executableURL = CLI.binary
            p.arguments = ["replay", d.path, "--db", db, "--json"]
            let out = d.appendingPathComponent("out\(i).json")
            FileManager.default.createFile(atPath: out.path, contents: nil)
            p.standardOutput = FileHandle(forWritingAtPath: out.path); p.standardError = FileHandle.nullDevice
            return (p, out)
        }
        for (p, _) in procs { try p.run() }
        for (p, _) in procs { p.waitUntilExit() }
        #expect(procs.map(\.0.terminationStatus) == [0, 0])
        var runs: [Int] = []
        for (_, out) in procs {
            let o = try JSONSerialization.jsonObject(with: Data(contentsOf: out)) as? [String: Any]
            runs += (o?["runs"] as? [Int]) ?? []
        }
        #expect(runs.sorted() == [1, 2])
    }

    @Test func ioErrorsExit74WithOneLine() throws {
        let d = Self.temp("io")
        _ = try Self.smallTrace(d)
        let tumIn = d.appendingPathComponent("t.txt")
        try Self.write("1 1 2 0 0 0 0 1\n", tumIn)
        let full = try CLI.run(["import", "tum", tumIn.path, "-o", "/dev/full"])
        #expect(full.status == 74, "\(full.stderr)")
        #expect(full.stderr.contains("/dev/full") && Self.oneLine(full), "\(full.stderr)")
        let dirAsPipeline = try CLI.run(["replay", d.path, "--pipeline", d.path])
        #expect(dirAsPipeline.status == 74, "\(dirAsPipeline.stderr)")
        #expect(Self.oneLine(dirAsPipeline), "\(dirAsPipeline.stderr)")
        let missing = try CLI.run(["replay", d.path, "--pipeline", d.appendingPathComponent("none.yaml").path])
        #expect(missing.status == 64)
    }

    @Test func invalidUTF8InYAMLAndEstimatesNamesTheLine() throws {
        let d = Self.temp("utf8")
        _ = try Self.smallTrace(d)
        let y = d.appendingPathComponent("p.yaml")
        try Self.write(Array("stages:\n  # caf".utf8) + [0xE9] + Array("\n  ekf: {}\n".utf8), y)
        let r = try CLI.run(["replay", d.path, "--pipeline", y.path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("p.yaml:2: invalid UTF-8"), "\(r.stderr)")
        let csv = d.appendingPathComponent("e.csv")
        try Self.write(Array("t,source,lat,lon\n1,gnss,48.15,11.58\n2,gnss,48.15,11.58".utf8) + [0xFF] + [0x0A], csv)
        let s = try CLI.run(["score", "--estimates", csv.path, d.path])
        #expect(s.status == 65)
        #expect(s.stderr.contains("e.csv:3: invalid UTF-8"), "\(s.stderr)")
    }

    @Test func crlfEstimatesAreScored() throws {
        let d = Self.temp("crlf")
        _ = try Self.smallTrace(d)
        let lf = d.appendingPathComponent("lf.csv"), crlf = d.appendingPathComponent("crlf.csv")
        let rows = ["t,source,e,n", "10,gnss,1,2", "20,gnss,3,4", "30,gnss,5,6"]
        try Self.write(rows.joined(separator: "\n") + "\n", lf)
        try Self.write(rows.joined(separator: "\r\n") + "\r\n", crlf)
        let a = try CLI.run(["score", "--estimates", lf.path, d.path, "--json"])
        let b = try CLI.run(["score", "--estimates", crlf.path, d.path, "--json"])
        #expect(a.status == 0 && b.status == 0, "\(a.stderr) \(b.stderr)")
        #expect(a.stdout.contains(#""fixes":3,"source":"gnss""#))
        #expect(b.stdout.contains(#""fixes":3,"source":"gnss""#), "\(b.stdout)")
    }

    @Test func bomInTUMKeepsTheOriginLine() throws {
        let d = Self.temp("bom")
        let f = d.appendingPathComponent("t.txt")
        try Self.write([0xEF, 0xBB, 0xBF] + Array("# origin 48.1 11.5 500\n1.0 1 2 0 0 0 0 1\n".utf8), f)
        let out = d.appendingPathComponent("o.jsonl")
        #expect(try CLI.run(["import", "tum", f.path, "-o", out.path]).status == 0)
        #expect(try String(contentsOf: out, encoding: .utf8).contains(#""origin":{"lat":48.1,"lon":11.5,"h":500}"#))
    }

    @Test func csvStrictFailsOnANonNumericLatitude() throws {
        let d = Self.temp("csvstrict")
        let f = d.appendingPathComponent("c.csv")
        try Self.write("t,lat,lon,e,n\n1,abc,11.5,1,2\n2,48.1,11.5,,\n", f)
        let r = try CLI.run(["import", "csv", f.path, "-o", d.appendingPathComponent("o.jsonl").path, "--strict"])
        #expect(r.status == 65)
        #expect(r.stderr.contains("c.csv:2: lat 'abc' is not a number"), "\(r.stderr)")
    }

    @Test func fifosWorkForImportSimulateAndPipeline() throws {
        let d = Self.temp("fifo")
        let trace = try Self.smallTrace(d)
        _ = trace
        func fifo(_ name: String, _ text: String) -> String {
            let p = d.appendingPathComponent(name).path
            _ = mkfifo(p, 0o600)
            Thread { try? text.write(toFile: p, atomically: false, encoding: .utf8) }.start()
            return p
        }
        let imp = try CLI.run(["import", "tum", fifo("in.tum", "# origin 48 11 500\n1 1 2 0 0 0 0 1\n"), "-o", d.appendingPathComponent("t.jsonl").path])
        #expect(imp.status == 0, "\(imp.stderr)")
        let sc = try String(contentsOf: CLI.root.appendingPathComponent("Traces/open-street/scenario.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "duration_s: 120 ", with: "duration_s: 5 ")
        let sim = try CLI.run(["simulate", fifo("s.yaml", sc), "-o", d.appendingPathComponent("sim/trace.jsonl").path, "-q"])
        #expect(sim.status == 0, "\(sim.stderr)")
        let rep = try CLI.run(["replay", d.path, "--pipeline", fifo("p.yaml", "stages:\n  ekf: {}\n")])
        #expect(rep.status == 0, "\(rep.stderr)")
    }
}
