import Testing
import Foundation
import Replay
import Positioning
import TestSupport

/// End-to-end radio commands: evaluate radio on a scenario folder (JSON), radiomap build and
/// celldb build on tiny self-made traces, usage errors (exit 64).
@Suite struct RadioCLITests {
    static func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-radio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    @Test func evaluateScenarioJSON() throws {
        let urban = CLI.root.appendingPathComponent("Traces/urban-canyon")
        guard FileManager.default.fileExists(atPath: urban.path) else { return }
        let r = try CLI.run(["evaluate", "radio", urban.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let scores = o?["scores"] as? [[String: Any]] ?? []
        #expect(Set(scores.compactMap { $0["source"] as? String }).isSuperset(of: ["cell", "cell-ta"]))
        #expect((o?["ta_radial"] as? [[String: Any]])?.first?["ta_unit"] as? String == "lte_16ts")
    }

    /// Issue 20 item 2, one path (skips without the real recordings, docs/data.md): `evaluate radio --train A B C
    /// --test D` gives exactly the checkpoint figures of `radiomap build A B C` + `import
    /// ms-indoor D` + `replay D --radio-map` with the same pipeline; the area-blocked split drops
    /// training scans; a bad pipeline value exits 65.
    @Test func msIndoorEvaluateEqualsBuildPlusReplay() throws {
        guard let src = SharedData.url("ms-indoor/site2/F3/path_data_files"),
              let all = try? FileManager.default.contentsOfDirectory(at: src, includingPropertiesForKeys: nil) else { return }
        let dir = try Self.tempDir()
        // Test walk: the first (its path passes within 10 m of 9 training scans); train: the next three.
        let walks = Array(all.filter { $0.pathExtension == "txt" }.sorted { $0.path < $1.path }.prefix(4).map(\.path).reversed())
        let pipeline = dir.appendingPathComponent("p.yaml")
        try "stages: {smoother: {enabled: true}}\n".write(to: pipeline, atomically: true, encoding: .utf8)
        let e = try CLI.run(["evaluate", "radio", "--train"] + walks.prefix(3) + ["--test", walks[3], "--split", "both",
                             "--pipeline", pipeline.path, "--json"])
        #expect(e.status == 0, "\(e.stderr)")
        let eo = try #require(try JSONSerialization.jsonObject(with: Data(e.stdout.utf8)) as? [String: Any])
        let splits = try #require(eo["splits"] as? [[String: Any]])
        #expect(splits.map { $0["split"] as? String } == ["walk-blocked", "area-blocked"])
        #expect((splits[1]["training_scans_blocked"] as? Int ?? 0) > 0)
        let db = dir.appendingPathComponent("map.sqlite").path
        let b = try CLI.run(["radiomap", "build"] + walks.prefix(3) + ["--db", db])
        #expect(b.status == 0, "\(b.stderr)")
        // --residuals: the inner folds' residuals the model was fitted on, one CSV row per WiFi fix.
        let res = dir.appendingPathComponent("res.csv").path
        let rb = try CLI.run(["radiomap", "build"] + walks.prefix(3) + ["--db", dir.appendingPathComponent("map2.sqlite").path, "--residuals", res])
        #expect(rb.status == 0, "\(rb.stderr)")
        let rows = try String(contentsOfFile: res, encoding: .utf8).split(separator: "\n")
        #expect(rows.first == "source,fold,walk,time,res_e_m,res_n_m,cov_ee_m2,cov_en_m2,cov_nn_m2,survey_distance_m,known_share,signal_distance_db,block_radius_m")
        #expect(rows.contains { $0.hasPrefix("wcl,") } && rows.dropFirst().allSatisfy { $0.split(separator: ",").count == 13 })
        // The inner folds are replayed at 10, 20 and 30 m (--radius-multiples 1 2 3, the default), each
        // walk under its own name at every radius.
        let cols = rows.dropFirst().map { $0.split(separator: ",").map(String.init) }
        #expect(Set(cols.map { $0[12] }) == ["10.0", "20.0", "30.0"])
        #expect(Set(cols.map { $0[2] }).isSubset(of: Set(walks.prefix(3).map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent })))
        let one = try CLI.run(["radiomap", "build"] + walks.prefix(3) + ["--db", dir.appendingPathComponent("map3.sqlite").path,
                               "--residuals", res, "--radius-multiples", "1"])
        #expect(one.status == 0, "\(one.stderr)")
        let oneRows = try String(contentsOfFile: res, encoding: .utf8).split(separator: "\n").dropFirst()
        // Once at 10 m: exactly the 10 m rows of the default run (the same replays).
        #expect(Set(oneRows.map(String.init)) == Set(cols.filter { $0[12] == "10.0" }.map { $0.joined(separator: ",") }))
        #expect(try CLI.run(["radiomap", "build", walks[0], "--db", db, "--inner-folds", "1"]).status == 64)
        let i = try CLI.run(["import", "ms-indoor", walks[3], "-o", dir.appendingPathComponent("test/trace.jsonl").path])
        #expect(i.status == 0, "\(i.stderr)")
        let r = try CLI.run(["replay", dir.appendingPathComponent("test").path, "--radio-map", db, "--pipeline", pipeline.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let ro = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let replayed = try #require((ro["traces"] as? [[String: Any]])?.first?["checkpoints"] as? [[String: Any]])
        let evaluated = try #require(splits[0]["checkpoints"] as? [[String: Any]])
        #expect(Set(replayed.compactMap { $0["source"] as? String }).isSuperset(of: ["wcl", "fingerprint", "ekf", "smoother"]))
        #expect(replayed.allSatisfy { ($0["scored"] as? Int ?? 0) > 0 })
        #expect(NSArray(array: replayed).isEqual(to: evaluated), "replay \(replayed)\nevaluate \(evaluated)")
        // One test walk: its own checkpoint scores in `test_walks` are the split's pooled ones.
        let perWalk = try #require((splits[0]["test_walks"] as? [[String: Any]])?.first?["checkpoints"] as? [[String: Any]])
        #expect(NSArray(array: perWalk).isEqual(to: evaluated), "test_walks \(perWalk)\npooled \(evaluated)")
        let bad = dir.appendingPathComponent("bad.yaml")
        try "stages: {ekf: {gate_probability: 2}}\n".write(to: bad, atomically: true, encoding: .utf8)
        let x = try CLI.run(["evaluate", "radio", "--train", walks[0], "--test", walks[1], "--dataset", "ms-indoor", "--pipeline", bad.path])
        #expect(x.status == 65 && x.stderr.contains("gate_probability"), "\(x.status) \(x.stderr)")
        // Loud failure: a map from an unrelated place locates nothing; --min-located fails the run.
        let none = try CLI.run(["replay", dir.appendingPathComponent("test").path, "--min-located", "0.5"])
        #expect(none.status == 1 && none.stderr.contains("below --min-located"), "\(none.status) \(none.stderr)")
    }

    /// GNSS recordings with --train: each handset calibrated on the training drive says so
    /// (`calibrated_on`); without --train nothing is learned. In-sample here (one drive in
    /// the real recordings, docs/data.md): the mechanics, not a figure (the time split is `gsdcCalibrationTimeSplit`).
    @Test func gsdcTrainCalibratesPerHandset() throws {
        guard let drive = SharedData.url("gsdc2020/2020-05-14-US-MTV-1") else { return }
        func run(_ args: [String]) throws -> [String: Any] {
            let r = try CLI.run(["evaluate", "radio"] + args + ["--json"])
            #expect(r.status == 0, "\(r.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        }
        let plain = try run(["--test", drive.path])
        #expect((plain["protocol"] as? String)?.hasPrefix("test only") == true)
        let trained = try run(["--train", drive.path, "--test", drive.path])
        let recs = try #require(trained["recordings"] as? [[String: Any]])
        #expect(recs.count == 2)
        for r in recs {
            // Per model family: Pixel4XLModded_chipset gets the --train error model's Pixel4XL entry
            // (since the GNSS error model, `calibrated_on` names the model and its entry).
            let name = try #require(r["name"] as? String), on = try #require(r["calibrated_on"] as? String)
            let family = try #require(r["family"] as? String)
            #expect(on.hasPrefix("--train error model, family \(family) ") && name.contains(family), "\(name) calibrated on \(on)")
        }
    }

    @Test func buildCommandsOnSmallTraces() throws {
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A walk east along y = 0 with ground truth, an LTE serving cell with TA to a site at
        // (300, 200), and WiFi scans of one AP at (50, 5).
        var lines = [#"{"type":"header","format":"posfuse-trace","version":1,"origin":{"lat":45.0,"lon":-75.0,"h":0}}"#]
        for k in 0..<60 {
            let t = Double(k), e = Double(k) * 5, n = (k % 7 == 0) ? 30.0 : 0.0
            lines.append(#"{"t":\#(t),"type":"gt","e":\#(e),"n":\#(n),"u":0}"#)
            let d = ((e - 300) * (e - 300) + (n - 200) * (n - 200)).squareRoot()
            lines.append(#"{"t":\#(t),"type":"cell","rat":"lte","mcc":302,"mnc":720,"area":1,"cid":77,"serving":true,"ta":\#(Int((d / 78.07).rounded())),"ta_unit":"lte_16ts"}"#)
            let da = max(1, ((e - 50) * (e - 50) + (n - 5) * (n - 5)).squareRoot())
            lines.append(#"{"t":\#(t),"type":"wifi","aps":[{"bssid":"00:1a:00:00:00:01","ssid":"x","freq":2437,"rss":\#((-40 - 30 * log10(da)).rounded())}]}"#)
        }
        let trace = dir.appendingPathComponent("walk.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(to: trace, atomically: true, encoding: .utf8)
        let cdb = dir.appendingPathComponent("cells.sqlite").path
        let c = try CLI.run(["celldb", "build", trace.path, "--db", cdb, "--json"])
        #expect(c.status == 0, "\(c.stderr)")
        #expect(c.stdout.contains("\"records\" : 1"), "\(c.stdout)")
        let rdb = dir.appendingPathComponent("map.sqlite").path, ref = dir.appendingPathComponent("aps.json")
        let m = try CLI.run(["radiomap", "build", trace.path, "--db", rdb, "--reference-json", ref.path])
        #expect(m.status == 0, "\(m.stderr)")
        let aps = try JSONSerialization.jsonObject(with: Data(contentsOf: ref)) as? [String: Any]
        #expect((aps?["aps"] as? [[String: Any]])?.first?["bssid"] as? String == "00:1a:00:00:00:01")
        #expect(aps?["fingerprints"] == nil)
        // --fingerprints: one 2 m cell per scan here (5 m steps), read back by the reference loader.
        let f = try CLI.run(["radiomap", "build", trace.path, "--db", rdb, "--reference-json", ref.path, "--fingerprints"])
        #expect(f.status == 0 && f.stdout.contains("60 fingerprint point(s)"), "\(f.stdout) \(f.stderr)")
        let map = try #require(try ReferenceLoader.load(url: ref, frame: LocalFrame(origin: Geodetic(latitude: 45, longitude: -75, height: 0))).fingerprints)
        #expect(map.points.count == 60 && map.spacing == 2 && map.bssids == ["00:1a:00:00:00:01"])
        let expected: Double = (-40 - 30 * log10(5.0)).rounded()
        let at50 = try #require(map.points.first { $0.position == SIMD2<Double>(50, 0) })
        #expect(at50.rss["00:1a:00:00:00:01"] == expected)
        #expect(try CLI.run(["radiomap", "build", trace.path, "--db", rdb, "--fingerprints"]).status == 64)
    }

    /// The cell coverage map end to end on the bundled rural-cell scenario: three other drives of
    /// the same route (seeds 1001–1003, shadowing redrawn) → `celldb build --reference-json`
    /// (SQLite table and WGS84 JSON) → the bundled trace replayed with that coverage beside its
    /// own tower database. Measured (docs/radio.md): cell mean 1635 → 1305 m; ekf 148 → 78 m;
    /// the stand-alone cell-ta is worse (379 → 737 m: the exact towers' two-operator ring
    /// intersection beats per-operator areas); `coverage: false` restores the tower path.
    @Test func cellCoverageFromOtherDrives() throws {
        let scenario = CLI.root.appendingPathComponent("Traces/rural-cell")
        guard FileManager.default.fileExists(atPath: scenario.path) else { return }
        let dir = try Self.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let train = dir.appendingPathComponent("train")
        try FileManager.default.createDirectory(at: train, withIntermediateDirectories: true)
        for seed in 1001...1003 {
            let r = try CLI.run(["simulate", scenario.appendingPathComponent("scenario.yaml").path, "-o",
                                 train.appendingPathComponent("d\(seed).jsonl").path, "--seed", "\(seed)", "--quiet", "--no-reference"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let cov = dir.appendingPathComponent("cov.json"), db = dir.appendingPathComponent("cells.sqlite")
        let b = try CLI.run(["celldb", "build", train.path, "--db", db.path, "--reference-json", cov.path, "--json"])
        #expect(b.status == 0, "\(b.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(b.stdout.utf8)) as? [String: Any])
        #expect(summary["coverage_cells"] as? Int == 10, "\(summary)")
        let stored = try CellDatabase(path: db.path).coverage()
        #expect(stored.count == summary["coverage_areas"] as? Int && stored.allSatisfy { $0.count >= 1 })
        // Three drives = three inner folds: the map is calibrated (docs/radio.md, "Coverage
        // calibration") and every area stores its factor.
        let fit = try #require(summary["coverage_scale"] as? [String: Any])
        #expect((fit["cell_residuals"] as? Int ?? 0) > 100 && (fit["cell_ta_residuals"] as? Int ?? 0) > 100, "\(fit)")
        #expect(stored.allSatisfy { $0.scale > 0 && $0.scale != 1 }, "\(stored.map(\.scale))")

        // The test folder: the bundled trace and its reference.json plus the learned coverage.
        let test = dir.appendingPathComponent("test")
        try FileManager.default.createDirectory(at: test, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: scenario.appendingPathComponent("trace.jsonl"), to: test.appendingPathComponent("trace.jsonl"))
        var ref = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: scenario.appendingPathComponent("reference.json"))) as? [String: Any])
        let learned = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: cov)) as? [String: Any])
        ref["cell_coverage"] = learned["cell_coverage"]
        try JSONSerialization.data(withJSONObject: ref).write(to: test.appendingPathComponent("reference.json"))

        func means(_ extra: [String]) throws -> [String: Double] {
            let r = try CLI.run(["replay", test.path, "--json"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            let scores = ((o?["traces"] as? [[String: Any]])?.first?["scores"] as? [[String: Any]]) ?? []
            return Dictionary(uniqueKeysWithValues: scores.compactMap { s in (s["source"] as? String).flatMap { k in (s["mean_m"] as? Double).map { (k, $0) } } })
        }
        let with = try means([])
        let off = dir.appendingPathComponent("off.yaml")
        try "stages: {cell: {coverage: false}, cell-ta: {coverage: false}}\n".write(to: off, atomically: true, encoding: .utf8)
        let without = try means(["--pipeline", off.path])
        let c1 = try #require(with["cell"]), c0 = try #require(without["cell"])
        let e1 = try #require(with["ekf"]), e0 = try #require(without["ekf"])
        #expect(c1 < 0.9 * c0, "cell: coverage \(c1) m vs tower \(c0) m")
        #expect(e1 < 0.7 * e0, "ekf: coverage \(e1) m vs tower \(e0) m")
        // The same coverage straight from the SQLite database (`--cell-db`, areas within 50 km of
        // the origin) beside the folder's own reference.json (towers only) gives the same replay to the cm.
        let viaDB = try CLI.run(["replay", scenario.path, "--json", "--cell-db", db.path])
        #expect(viaDB.status == 0, "\(viaDB.stderr)")
        let od = try JSONSerialization.jsonObject(with: Data(viaDB.stdout.utf8)) as? [String: Any]
        let dbScores = ((od?["traces"] as? [[String: Any]])?.first?["scores"] as? [[String: Any]]) ?? []
        for s in dbScores {
            guard let k = s["source"] as? String, let m = s["mean_m"] as? Double, let w = with[k] else { continue }
            #expect(abs(m - w) < 0.01, "\(k): --cell-db \(m) m vs reference.json \(w) m")   // JSON prints 15 digits
        }
        // refine --cell-db: a report carrying one of the trace's cell records is located from the database.
        let cellLine = try #require(try String(contentsOf: scenario.appendingPathComponent("trace.jsonl"), encoding: .utf8)
            .split(separator: "\n").first { $0.contains("\"type\":\"cell\"") && $0.contains("\"serving\":true") && $0.contains("\"ta\"") })
        let reports = dir.appendingPathComponent("reports.jsonl")
        try (#"{"id":"c1","lat":52.3,"lon":9.8,"accuracy_m":5000,"evidence":["# + cellLine + "]}\n").write(to: reports, atomically: true, encoding: .utf8)
        let rf = try CLI.run(["refine", reports.path, "--cell-db", db.path, "--lines", "--no-progress"])
        #expect(rf.status == 0, "\(rf.stderr)")
        #expect(rf.stdout.contains("\"cell-ta\""), "\(rf.stdout)")
        #expect(try CLI.run(["refine", reports.path, "--cell-db", cov.path]).status == 65)   // JSON is no database

        // `coverage: false` is exactly the tower path of the bundled folder (no coverage there).
        let r = try CLI.run(["replay", scenario.path, "--json"])
        let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let bundled = ((o?["traces"] as? [[String: Any]])?.first?["scores"] as? [[String: Any]])?.first { $0["source"] as? String == "cell-ta" }
        #expect(bundled?["mean_m"] as? Double == without["cell-ta"], "\(String(describing: bundled?["mean_m"])) vs \(String(describing: without["cell-ta"]))")
    }

    @Test func usageErrors() throws {
        #expect(try CLI.run(["evaluate", "radio"]).status == 64)
        #expect(try CLI.run(["evaluate", "radio", "--train", "/nonexistent", "--test", "/nonexistent"]).status == 64)
        #expect(try CLI.run(["evaluate", "radio", "Traces", "--variant", "v3"]).status == 64)
        // A GnssLogger log needs its surveyed point.
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("gl-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: log) }
        try "# Fix,Provider,Latitude,Longitude,Altitude,Speed,Accuracy,(UTC)Time\nFix,gps,37.4,-122.0,-30,0,3,1467321969000\n"
            .write(to: log, atomically: true, encoding: .utf8)
        let r = try CLI.run(["evaluate", "radio", "--test", log.path])
        #expect(r.status == 64 && r.stderr.contains("--truth-point"), "\(r.stderr)")
        #expect(try CLI.run(["evaluate", "radio", "--test", log.path, "--truth-point", "north"]).status == 64)
        // --pipeline: a missing file is a usage error; a pipeline's options reach the filters, and
        // the phone's accuracy calibration α̂ = √(ANEES_gnss/2) is reported.
        #expect(try CLI.run(["evaluate", "radio", "--test", log.path, "--truth-point", "37.4,-122.0,-30", "--pipeline", "/nonexistent.yaml"]).status == 64)
        let cfg = FileManager.default.temporaryDirectory.appendingPathComponent("pl-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: cfg) }
        // α̂ calibrates the phone's own reported accuracy, so both runs switch the shipped GNSS
        // error model off (it would scale the reported accuracy first).
        try "stages: {gnss: {error_model: none}, ekf: {inflation: {gnss: 2}}}\n".write(to: cfg, atomically: true, encoding: .utf8)
        let noModel = FileManager.default.temporaryDirectory.appendingPathComponent("pl-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: noModel) }
        try "stages: {gnss: {error_model: none}}\n".write(to: noModel, atomically: true, encoding: .utf8)
        try ("# Fix,Provider,Latitude,Longitude,Altitude,Speed,Accuracy,(UTC)TimeInMs\n" + (0..<5).map {
            "Fix,gps,37.40003,-122.0,-30,0,3,\(1467321969000 + 1000 * $0)\n" }.joined()).write(to: log, atomically: true, encoding: .utf8)
        let plain = try CLI.run(["evaluate", "radio", "--test", log.path, "--truth-point", "37.4,-122.0,-30", "--json", "--pipeline", noModel.path])
        let inflated = try CLI.run(["evaluate", "radio", "--test", log.path, "--truth-point", "37.4,-122.0,-30", "--json", "--pipeline", cfg.path])
        #expect(plain.status == 0 && inflated.status == 0, "\(plain.stderr) \(inflated.stderr)")
        func recording(_ o: String) -> [String: Any]? {
            ((try? JSONSerialization.jsonObject(with: Data(o.utf8))) as? [String: Any]).flatMap { ($0["recordings"] as? [[String: Any]])?.first }
        }
        let a = try #require(recording(plain.stdout)), b = try #require(recording(inflated.stdout))
        // The fixes are 3.3 m north of the truth with a reported 3 m (68 %) accuracy.
        let alpha = try #require(a["accuracy_calibration_alpha"] as? Double)
        #expect(alpha > 1 && alpha < 2, "α̂ \(alpha)")
        func r95(_ r: [String: Any]) -> Double? { ((r["sources"] as? [String: Any])?["ekf"] as? [String: Any])?["final_r95_m"] as? Double }
        let r1 = try #require(r95(a)), r2 = try #require(r95(b))
        #expect(r2 > 1.5 * r1, "inflation.gnss 2 must widen the ekf's 95 % radius: \(r1) → \(r2) m")
    }
}
