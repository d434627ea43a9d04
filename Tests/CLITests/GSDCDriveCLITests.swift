import Testing
import Foundation
import Replay
import Positioning
import TestSupport

/// A GSDC-layout drive written by the test (issue 21 item 1): two phones 50 m apart, each with
/// its own SPAN truth track; the first phone's file name carries a modification marker
/// (`PhoneAModded`), its truth is `SPAN_PhoneA_10Hz.nmea` with EVERY `$GPRMC` checksum wrong
/// (as on a real held-back drive), the second's is `SPAN_PhoneB_1Hz.nmea`, clean.
enum GSDCFixture {
    static func sentence(_ body: String) -> String {
        var x: UInt8 = 0
        for b in body.utf8 { x ^= b }
        return "$" + body + "*" + String(format: "%02X", x)
    }

    /// `ddmm.mmmmmm,N,dddmm.mmmmmm,W` of a position.
    static func latlon(_ lat: Double, _ lon: Double) -> String {
        func dm(_ v: Double, _ w: Int) -> String {
            let a = abs(v), d = Int(a), m = (a - Double(d)) * 60
            return String(format: "%0\(w)d%09.6f", d, m)
        }
        return "\(dm(lat, 2)),\(lat >= 0 ? "N" : "S"),\(dm(lon, 3)),\(lon >= 0 ? "E" : "W")"
    }

    /// GGA + RMC per epoch; `badRMC`: every RMC checksum off by one.
    static func track(_ points: [(tod: Int, lat: Double, lon: Double)], quality: Int, hdop: Double, badRMC: Bool) -> String {
        var out: [String] = []
        for p in points {
            let t = String(format: "%02d%02d%02d.00", p.tod / 3600, (p.tod / 60) % 60, p.tod % 60)
            out.append(sentence("GPGGA,\(t),\(latlon(p.lat, p.lon)),\(quality),12,\(hdop),10.0,M,0.0,M,,"))
            var rmc = sentence("GPRMC,\(t),A,\(latlon(p.lat, p.lon)),010.0,090.0,140520,,,A")
            if badRMC {
                let hex = UInt8(rmc.suffix(2), radix: 16)! ^ 0x01
                rmc = String(rmc.dropLast(2)) + String(format: "%02X", hex)
            }
            out.append(rmc)
        }
        return out.joined(separator: "\n") + "\n"
    }

    static let epochs = 300
    static let metrePerDegLat = 111_000.0

    /// Writes the drive; returns the number of broken RMC sentences.
    @discardableResult
    static func write(to dir: URL) throws -> Int {
        var rng = SplitMix64(seed: 21)
        func truth(_ k: Int, north: Double) -> (Int, Double, Double) {
            (80_000 + k, 37.4 + (north + 0.0) / metrePerDegLat, -122.1 + Double(k) * 8 / (metrePerDegLat * cos(37.4 * .pi / 180)))
        }
        for (name, north) in [("PhoneA", 0.0), ("PhoneB", 50.0)] {
            let t = (0..<epochs).map { truth($0, north: north) }
            let phone = t.map { p -> (tod: Int, lat: Double, lon: Double) in
                (p.0, p.1 + 0.6 * rng.gaussian() / metrePerDegLat, p.2 + 0.6 * rng.gaussian() / (metrePerDegLat * cos(37.4 * .pi / 180)))
            }
            let phoneName = name == "PhoneA" ? "PhoneAModded" : name
            try track(phone, quality: 1, hdop: 0.5, badRMC: false)
                .write(to: dir.appendingPathComponent("\(phoneName)_chipset.nmea"), atomically: true, encoding: .utf8)
            let span = name == "PhoneA" ? "SPAN_PhoneA_10Hz.nmea" : "SPAN_PhoneB_1Hz.nmea"
            try track(t.map { (tod: $0.0, lat: $0.1, lon: $0.2) }, quality: 4, hdop: 0.8, badRMC: name == "PhoneA")
                .write(to: dir.appendingPathComponent(span), atomically: true, encoding: .utf8)
        }
        return epochs
    }
}

@Suite struct GSDCDriveCLITests {
    @Test func brokenRMCChecksumsAreCountedAndEachPhoneHasItsOwnTruth() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-gsdc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let broken = try GSDCFixture.write(to: dir)

        let r = try CLI.run(["evaluate", "radio", "--test", dir.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let recs = try #require(o["recordings"] as? [[String: Any]])
        #expect(recs.count == 2)
        for rec in recs {
            let name = try #require(rec["name"] as? String)
            let a = name.hasSuffix("PhoneAModded_chipset")
            #expect(rec["family"] as? String == (a ? "PhoneA" : "PhoneB"))
            #expect(rec["truth_file"] as? String == (a ? "SPAN_PhoneA_10Hz.nmea" : "SPAN_PhoneB_1Hz.nmea"))
            #expect(rec["truth_match"] as? String == (a ? "family PhoneA" : "name"))
            let tol = try #require(rec["tolerated"] as? [String: [String: Int]])
            #expect(tol["truth"] == (a ? ["NMEA checksum mismatch in $GPRMC": broken] : [:]), "\(tol)")
            #expect(tol["phone"] == [:])
            // Against its own truth the phone's 0.6 m noise gives a P50 well under 2 m; against
            // the other phone's track it would be 50 m.
            let g = try #require((rec["sources"] as? [String: Any])?["gnss"] as? [String: Any])
            let e = try #require(g["errors"] as? [String: Any])
            #expect(e["count"] as? Int == GSDCFixture.epochs)
            #expect(try #require(e["median_m"] as? Double) < 2, "\(name): \(e)")
        }
        // The text report says it too.
        let t = try CLI.run(["evaluate", "radio", "--test", dir.path])
        #expect(t.status == 0 && t.stdout.contains("truth file: tolerated NMEA checksum mismatch in $GPRMC: \(broken)"), "\(t.stdout)")
        // --strict: the first broken sentence is fatal, naming file and line (line 2: the first RMC).
        let s = try CLI.run(["evaluate", "radio", "--test", dir.path, "--strict"])
        #expect(s.status == 65 && s.stderr.contains("SPAN_PhoneA_10Hz.nmea:2"), "\(s.status) \(s.stderr)")
        // Without a track of its own or its family, with two phones' tracks in the folder: exit 65 naming it.
        try FileManager.default.moveItem(at: dir.appendingPathComponent("SPAN_PhoneA_10Hz.nmea"),
                                         to: dir.appendingPathComponent("SPAN_PhoneC_1Hz.nmea"))
        let m = try CLI.run(["evaluate", "radio", "--test", dir.path])
        #expect(m.status == 65 && m.stderr.contains("no truth track for phone PhoneAModded"), "\(m.status) \(m.stderr)")
        // An override maps the phone onto PhoneC's family.
        let ov = try CLI.run(["evaluate", "radio", "--test", dir.path, "--handset-family", "PhoneAModded=PhoneC", "--json"])
        #expect(ov.status == 0, "\(ov.stderr)")
        #expect(ov.stdout.contains("\"truth_file\" : \"SPAN_PhoneC_1Hz.nmea\""))
        #expect(try CLI.run(["evaluate", "radio", "--test", dir.path, "--handset-family", "nonsense"]).status == 64)
    }

    /// One path from reader to scorer (issue 19/21 item 5): `evaluate radio` on a drive gives
    /// exactly the figures of `posfuse import nmea … --truth …` followed by `posfuse replay`
    /// with the smoother on.
    @Test func evaluateRadioEqualsReplay() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-gsdc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try GSDCFixture.write(to: dir)
        let ev = try CLI.run(["evaluate", "radio", "--test", dir.path, "--json"])
        #expect(ev.status == 0, "\(ev.stderr)")
        let recs = try #require((try JSONSerialization.jsonObject(with: Data(ev.stdout.utf8)) as? [String: Any])?["recordings"] as? [[String: Any]])
        let b = try #require(recs.first { ($0["name"] as? String)?.hasSuffix("PhoneB_chipset") == true })
        let trace = dir.appendingPathComponent("b.jsonl"), yaml = dir.appendingPathComponent("s.yaml")
        let imp = try CLI.run(["import", "nmea", dir.appendingPathComponent("PhoneB_chipset.nmea").path,
                               "--truth", dir.appendingPathComponent("SPAN_PhoneB_1Hz.nmea").path, "-o", trace.path])
        #expect(imp.status == 0, "\(imp.stderr)")
        // evaluate radio applies the shipped GNSS error model for the phone's family (PhoneB: not in
        // the model, so its pooled factor); replay does the same when the pipeline says so.
        try "stages:\n  gnss: {error_model: shipped, handset_family: PhoneB}\n  smoother: {enabled: true}\n"
            .write(to: yaml, atomically: true, encoding: .utf8)
        let rp = try CLI.run(["replay", trace.path, "--pipeline", yaml.path, "--json"])
        #expect(rp.status == 0, "\(rp.stderr)")
        let rj = try #require(try JSONSerialization.jsonObject(with: Data(rp.stdout.utf8)) as? [String: Any])
        let scores = try #require(((rj["traces"] as? [[String: Any]])?.first)?["scores"] as? [[String: Any]])
        for src in ["gnss", "ekf", "smoother"] {
            let r = try #require(scores.first { $0["source"] as? String == src })
            let e = try #require((b["sources"] as? [String: Any])?[src] as? [String: Any])
            let errs = try #require(e["errors"] as? [String: Any])
            #expect(errs["count"] as? Int == r["count"] as? Int, "\(src)")
            for (mine, theirs) in [("mean_m", "mean_m"), ("median_m", "median_m"), ("p95_m", "p95_m")] {
                #expect(errs[mine] as? Double == r[theirs] as? Double, "\(src) \(mine)")
            }
            #expect(e["inside95"] as? Double == r["inside95"] as? Double && e["anees"] as? Double == r["anees"] as? Double, "\(src)")
        }
    }

    @Test func handsetFamilies() {
        let f = HandsetFamilies()
        #expect(f.family(of: "Pixel4XLModded") == "Pixel4XL")
        #expect(f.family(of: "Pixel4XLModded_chipset") == "Pixel4XL")
        #expect(f.family(of: "Pixel4_chipset") == "Pixel4")
        #expect(f.family(of: "Pixel 4 XL") == "Pixel4XL")
        #expect(f.family(of: "Mi8") == "Mi8")
        #expect(f.family(of: "Mod") == "Mod")   // nothing left: the name stays
        #expect(HandsetFamilies(overrides: ["Pixel4XLModded": "Pixel4XLm"]).family(of: "Pixel4XLModded") == "Pixel4XLm")
        if case .success = HandsetFamilies.parse(["a"]) { Issue.record("NAME=FAMILY expected") }
    }
}

/// Cell coverage in another district (issue 21 item 3): a map learned on walks that served
/// cells A and B, tested on a walk whose reports are of cell C (never seen) but for a few of B:
/// the run reports the share located and the reasons (unknown_anchor), warns, and with
/// `--min-located` exits 1.
@Suite struct CellLocatedShareCLITests {
    static func walk(_ cells: [Int], start: Int, lat0: Double) -> String {
        var lines = ["mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid"]
        for (k, c) in cells.enumerated() {
            let lat = lat0 + Double(k) * 2e-5, lon = -75.70 + Double(k) * 3e-5
            lines.append("302,720,29100,\(c),\(lat),\(lon),-90,\(1_600_000_000_000 + (start + k) * 5000),5.0,1.0,0,LTE,\(2 + k % 3),,29100,269,,,")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test func unknownCellsAreCountedAndMinLocatedFails() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-cells-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var train: [String] = []
        for i in 0..<3 {
            let u = dir.appendingPathComponent("OpenCellID_train\(i).csv")
            try Self.walk(Array(repeating: 9_751_830, count: 20) + Array(repeating: 9_751_831, count: 20), start: i * 100, lat0: 45.41 + Double(i) * 1e-4)
                .write(to: u, atomically: true, encoding: .utf8)
            train.append(u.path)
        }
        let test = dir.appendingPathComponent("OpenCellID_test.csv")
        try Self.walk(Array(repeating: 9_751_831, count: 4) + Array(repeating: 9_999_999, count: 36), start: 1000, lat0: 45.4105)
            .write(to: test, atomically: true, encoding: .utf8)
        let args = ["evaluate", "radio", "--train"] + train + ["--test", test.path, "--dataset", "lte-walks"]
        let r = try CLI.run(args + ["--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let cov = try #require((o["cell"] as? [String: Any])?["coverage"] as? [String: Any])
        let located = try #require(cov["located_cell"] as? [String: Any])
        #expect(located["epochs"] as? Int == 40 && located["located"] as? Int == 4, "\(located)")
        #expect((located["not_located"] as? [String: Int]) == ["unknown_anchor": 36])
        #expect(abs((located["share"] as? Double ?? 0) - 0.1) < 1e-12)
        #expect(r.stderr.contains("cell located 4 of 40 (10.0 %); not located: unknown_anchor 36"), "\(r.stderr)")
        #expect(r.stderr.contains("located almost nothing"))
        let strict = try CLI.run(args + ["--min-located", "0.5"])
        #expect(strict.status == 1 && strict.stderr.contains("cell located 0.100 < --min-located 0.500"), "\(strict.status) \(strict.stderr)")
        #expect(try CLI.run(args + ["--min-located", "0.05"]).status == 0)
        #expect(try CLI.run(args + ["--min-located", "2"]).status == 64)
    }
}
