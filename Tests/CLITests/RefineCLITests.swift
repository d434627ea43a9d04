import Foundation
import Testing
import TestSupport

/// `posfuse refine` end to end on the bundled sample reports (Traces/reports, built from the
/// mall-sparse-ap walk by scripts/make-sample-reports.py, truth in truth.jsonl).
@Suite struct RefineCLITests {
    static let dir = CLI.root.appendingPathComponent("Traces/reports")

    func features(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    /// A report whose WiFi scan is matched against a surveyed fingerprint map (reference points in
    /// WGS84): `fingerprint` is among the sources used and the refined position moves from the
    /// reported one (28.8 m off, accuracy 30 m) most of the way to the point whose signature the
    /// scan has, inside its 95 % radius.
    @Test func fingerprintEvidence() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("refine-fp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let lat0 = 45.0, lon0 = -75.0, mLat = 1 / 111_132.0, mLon = 1 / (111_320.0 * cos(lat0 * .pi / 180))
        let aps: [(String, Double, Double)] = [("02:00:00:00:00:01", 0, 0), ("02:00:00:00:00:02", 40, 0), ("02:00:00:00:00:03", 0, 40), ("02:00:00:00:00:04", 40, 40)]
        func rss(_ e: Double, _ n: Double) -> [String: Double] {
            Dictionary(uniqueKeysWithValues: aps.map { ($0.0, (-40 - 30 * log10(max(1, ((e - $0.1) * (e - $0.1) + (n - $0.2) * (n - $0.2)).squareRoot()))).rounded()) })
        }
        var points: [String] = []
        for i in 0...10 { for j in 0...10 {
            let e = Double(i) * 4, n = Double(j) * 4
            let r = rss(e, n).map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ")
            points.append("{\"lat\": \(lat0 + n * mLat), \"lon\": \(lon0 + e * mLon), \"rss\": {\(r)}}")
        } }
        let ref = dir.appendingPathComponent("reference.json")
        try "{\"fingerprints\": {\"threshold_dbm\": -95, \"spacing_m\": 4, \"points\": [\(points.joined(separator: ","))]}}".write(to: ref, atomically: true, encoding: .utf8)
        let scan = rss(12, 28).map { "{\"bssid\": \"\($0.key)\", \"ssid\": \"x\", \"freq\": 2437, \"rss\": \($0.value)}" }.joined(separator: ",")
        let report = "{\"id\": \"r1\", \"lat\": \(lat0 + 8 * mLat), \"lon\": \(lon0 + 40 * mLon), \"accuracy_m\": 30, \"t\": 10, \"evidence\": [{\"t\": 9, \"type\": \"wifi\", \"aps\": [\(scan)]}]}"
        let input = dir.appendingPathComponent("reports.jsonl")
        try (report + "\n").write(to: input, atomically: true, encoding: .utf8)
        let r = try CLI.run(["refine", input.path, "--reference", ref.path, "--lines", "--no-progress"])
        #expect(r.status == 0, "\(r.stderr)")
        let f = try #require(try features(r.stdout).first)
        let p = try #require(f["properties"] as? [String: Any])
        let used = try #require(p["sources_used"] as? [String])
        #expect(used.contains("fingerprint"), "\(used)")
        let c = try #require((f["geometry"] as? [String: Any])?["coordinates"] as? [Double])
        let de = (c[0] - lon0) / mLon - 12, dn = (c[1] - lat0) / mLat - 28
        let off = (de * de + dn * dn).squareRoot()
        let radius = try #require(p["radius95_m"] as? Double)
        print("refine with fingerprint evidence: \(off) m from the scan's point (reported 28.8 m off), radius95 \(radius) m, sources \(used)")
        // The fused fix leans on the scan (its posterior spreads over several 4 m cells: four APs,
        // σ 4.6 dB) against a 30 m report, and its 95 % radius covers the point.
        #expect(off < 0.3 * 28.8)
        #expect(off < radius)
    }

    /// Records out = records in; every error names file:line and a reason; the evidence-backed
    /// reports move much closer to the truth and their 95 % radius covers it.
    @Test func sampleReports() throws {
        let input = Self.dir.appendingPathComponent("sample-reports.jsonl")
        guard FileManager.default.fileExists(atPath: input.path) else { return }
        let r = try CLI.run(["refine", input.path, "--reference", Self.dir.appendingPathComponent("reference.json").path, "--lines", "--no-progress"])
        #expect(r.status == 0, "\(r.stderr)")
        let inCount = try String(contentsOf: input, encoding: .utf8).split(separator: "\n").count
        let out = try features(r.stdout)
        #expect(out.count == inCount)
        #expect(r.stderr.contains("\(inCount) reports in, \(inCount) records out"))
        var truth: [String: (Double, Double)] = [:]
        for l in try String(contentsOf: Self.dir.appendingPathComponent("truth.jsonl"), encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any])
            truth[o["id"] as! String] = (o["lat"] as! Double, o["lon"] as! Double)
        }
        func metres(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
            let dn = (a.0 - b.0) * 111_320, de = (a.1 - b.1) * 111_320 * cos(a.0 * .pi / 180)
            return (dn * dn + de * de).squareRoot()
        }
        var reportedErr: [Double] = [], refinedErr: [Double] = [], covered = 0, errors = 0
        for f in out {
            let p = try #require(f["properties"] as? [String: Any])
            if p["status"] as? String == "error" {
                errors += 1
                let e = try #require(p["error"] as? String)
                #expect(e.contains("sample-reports.jsonl:") && e.split(separator: ":").count >= 3, "\(e)")
                #expect(f["geometry"] is NSNull)
                continue
            }
            guard let id = p["id"] as? String, id.hasPrefix("mall-"), let t = truth[id] else { continue }
            let g = try #require((f["geometry"] as? [String: Any])?["coordinates"] as? [Double])
            let rep = try #require(p["reported"] as? [String: Any])
            reportedErr.append(metres(t, (rep["lat"] as! Double, rep["lon"] as! Double)))
            let e = metres(t, (g[1], g[0]))
            refinedErr.append(e)
            if e <= (p["radius95_m"] as! Double) { covered += 1 }
            #expect((p["sources_used"] as? [String])?.contains("wcl") == true)
        }
        #expect(errors == 4)
        #expect(refinedErr.count == 10)
        let med = { (v: [Double]) in v.sorted()[v.count / 2] }
        #expect(med(refinedErr) < 0.4 * med(reportedErr), "refined median \(med(refinedErr)) m vs reported \(med(reportedErr)) m")
        #expect(covered >= 9, "radius95 covered the truth in \(covered)/10")
        // Partial reports say why their evidence was not used.
        let unknown = try #require(out.first { ($0["properties"] as? [String: Any])?["id"] as? String == "partial-unknown-evidence" })
        let rej = try #require((unknown["properties"] as? [String: Any])?["rejected"] as? [[String: Any]])
        #expect(rej.contains { ($0["reason"] as? String)?.contains("unknown event type 'lidar'") == true })
    }

    /// --strict stops at the first malformed report with exit 65 and file:line; the default
    /// FeatureCollection output is one valid GeoJSON document.
    @Test func strictAndFeatureCollection() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("refine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let f = dir.appendingPathComponent("r.jsonl")
        var text = ""
        for k in 0..<300 { text += "{\"id\":\"r\(k)\",\"lat\":48.1,\"lon\":11.5,\"accuracy_m\":20}\n" }
        text += "{\"id\":\"bad\",\"lat\":48.1,\"lon\":11.5}\n"
        try text.write(to: f, atomically: true, encoding: .utf8)
        let ok = try CLI.run(["refine", f.path, "--no-progress"])
        #expect(ok.status == 0)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(ok.stdout.utf8)) as? [String: Any])
        #expect(doc["type"] as? String == "FeatureCollection" && (doc["features"] as? [Any])?.count == 301)
        let strict = try CLI.run(["refine", f.path, "--strict", "--no-progress"])
        #expect(strict.status == 65)
        #expect(strict.stderr.contains("r.jsonl:301: missing or invalid 'accuracy_m'"), "\(strict.stderr)")
        #expect(try CLI.run(["refine", dir.appendingPathComponent("none.jsonl").path]).status == 64)
        // A pipeline with a bad option value: exit 65 naming the file and the option (was 1).
        let bad = dir.appendingPathComponent("bad.yaml")
        try "stages: {ekf: {gnss_bias_fraction: 1.5}}\n".write(to: bad, atomically: true, encoding: .utf8)
        let r = try CLI.run(["refine", f.path, "--no-progress", "--pipeline", bad.path])
        #expect(r.status == 65 && r.stderr.contains("bad.yaml") && r.stderr.contains("gnss_bias_fraction"), "\(r.status) \(r.stderr)")
    }
    /// The same reports as JSON Lines records and as features of a FeatureCollection document (read
    /// feature by feature) give the same output either way (coordinates, radius, sources used,
    /// rejections), and evidence errors name their index.
    @Test func rawAndParsedEvidenceAgree() throws {
        let input = Self.dir.appendingPathComponent("sample-reports.jsonl")
        guard FileManager.default.fileExists(atPath: input.path) else { return }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("refine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var lines: [String] = []
        for l in try String(contentsOf: input, encoding: .utf8).split(separator: "\n") {
            guard let o = try? JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any], o["lat"] != nil, o["lon"] != nil,
                  o["accuracy_m"] != nil else { continue }
            var p = o; p.removeValue(forKey: "lat"); p.removeValue(forKey: "lon")
            let feature: [String: Any] = ["type": "Feature", "properties": p,
                                          "geometry": ["type": "Point", "coordinates": [o["lon"]!, o["lat"]!]]]
            lines.append(String(decoding: try JSONSerialization.data(withJSONObject: feature), as: UTF8.self))
        }
        // A bad evidence event is rejected with its index; a non-object element fails the report.
        lines.append(#"{"id":"bad-event","lat":37.5,"lon":127.03,"accuracy_m":30,"t":5,"evidence":[{"t":1,"type":"wifi"},{"t":2,"type":"step"}]}"#)
        lines.append(#"{"id":"bad-element","lat":37.5,"lon":127.03,"accuracy_m":30,"evidence":[{"t":1,"type":"step"},7]}"#)
        lines.append(#"[1, 2]"#)                                   // valid JSON, not a report
        let jsonl = dir.appendingPathComponent("r.jsonl"), doc = dir.appendingPathComponent("r.geojson")
        try lines.joined(separator: "\n").write(to: jsonl, atomically: true, encoding: .utf8)
        try ("{\"type\":\"FeatureCollection\",\"features\":[" + lines.joined(separator: ",\n") + "]}").write(to: doc, atomically: true, encoding: .utf8)
        let ref = Self.dir.appendingPathComponent("reference.json").path
        let a = try CLI.run(["refine", jsonl.path, "--reference", ref, "--lines", "--no-progress"])
        let b = try CLI.run(["refine", doc.path, "--reference", ref, "--lines", "--no-progress"])
        #expect(a.status == 0 && b.status == 0, "\(a.stderr)\(b.stderr)")
        let fa = try features(a.stdout), fb = try features(b.stdout)
        #expect(fa.count == lines.count && fb.count == lines.count)
        var refined = 0
        for (x, y) in zip(fa, fb) {
            let px = try #require(x["properties"] as? [String: Any]), py = try #require(y["properties"] as? [String: Any])
            #expect(px["id"] as? String == py["id"] as? String)
            #expect(px["status"] as? String == py["status"] as? String)
            if px["status"] as? String == "refined" { refined += 1 }
            #expect(NSDictionary(dictionary: x["geometry"] as? [String: Any] ?? [:]).isEqual(to: y["geometry"] as? [String: Any] ?? [:]))
            #expect(px["radius95_m"] as? Double == py["radius95_m"] as? Double)
            #expect((px["sources_used"] as? [String]) == (py["sources_used"] as? [String]))
            #expect((px["rejected"] as? [Any])?.count == (py["rejected"] as? [Any])?.count)
        }
        #expect(refined >= 9)
        let badEvent = try #require(fa.first { ($0["properties"] as? [String: Any])?["id"] as? String == "bad-event" })
        let rej = try #require((badEvent["properties"] as? [String: Any])?["rejected"] as? [[String: Any]])
        #expect(rej.contains { $0["input"] as? String == "evidence[0]" && ($0["reason"] as? String)?.contains("aps") == true }, "\(rej)")
        let badElement = try #require(fa.first { ($0["properties"] as? [String: Any])?["id"] as? String == "bad-element" })
        #expect(((badElement["properties"] as? [String: Any])?["error"] as? String)?.contains("evidence[1] is not an object") == true)
        #expect(((fa.last?["properties"] as? [String: Any])?["error"] as? String)?.hasSuffix("a report must be a JSON object") == true)
    }
    /// Service use: `posfuse refine -` answers each report line on stdout before the next one
    /// arrives (no buffering until EOF), and ends with exit 0 and the usual count when stdin closes.
    /// A cell report against a learned coverage map (`cell_coverage` in WGS84, as `celldb build
    /// --reference-json` writes it) and a tower: the refined position is drawn to the (cell, TA)
    /// area's mean — 400 m east of the tower where the ring centroid would be the tower itself —
    /// and its 95 % radius covers that area; a TA the map has too few positions for uses the
    /// cell's area.
    @Test func cellCoverageEvidence() throws {
        let dir = try GateFixtures.tempDir()
        let lat0 = 40.75, lon0 = -73.99, mLat = 1 / 111_034.0, mLon = 1 / (111_320.0 * cos(lat0 * .pi / 180))
        let ref = dir.appendingPathComponent("ref.json"), reports = dir.appendingPathComponent("r.jsonl")
        let id = #""rat":"lte","mcc":310,"mnc":260,"area":7001,"cid":40002"#
        try #"{"cells":[{\#(id),"lat":\#(lat0),"lon":\#(lon0),"h":30}],"cell_coverage":[{\#(id),"ta":5,"lat":\#(lat0 + 10 * mLat),"lon":\#(lon0 + 400 * mLon),"cov_m2":[900,0,2500],"count":20,"walks":20},{\#(id),"ta":9,"lat":\#(lat0),"lon":\#(lon0 + 700 * mLon),"cov_m2":[0,0,0],"count":1},{\#(id),"lat":\#(lat0 - 100 * mLat),"lon":\#(lon0 + 300 * mLon),"cov_m2":[40000,0,40000],"count":40,"walks":40}]}"#
            .write(to: ref, atomically: true, encoding: .utf8)
        let cell = #"{"t":9,"type":"cell",\#(id),"serving":true,"ta_unit":"lte_16ts","rsrp":-75"#
        try ([#"{"id":"ta5","lat":\#(lat0),"lon":\#(lon0),"accuracy_m":2000,"t":10,"evidence":[\#(cell),"ta":5}]}"#,
              #"{"id":"ta9","lat":\#(lat0),"lon":\#(lon0),"accuracy_m":2000,"t":10,"evidence":[\#(cell),"ta":9}]}"#].joined(separator: "\n") + "\n")
            .write(to: reports, atomically: true, encoding: .utf8)
        let r = try CLI.run(["refine", reports.path, "--reference", ref.path, "--lines", "--no-progress"])
        #expect(r.status == 0, "\(r.stderr)")
        let fs = try features(r.stdout)
        #expect(fs.count == 2)
        for (f, target) in zip(fs, [SIMD2(400.0, 10), SIMD2(300.0, -100)]) {
            let p = try #require(f["properties"] as? [String: Any])
            #expect((p["sources_used"] as? [String] ?? []).contains("cell-ta"), "\(p)")
            let c = try #require((f["geometry"] as? [String: Any])?["coordinates"] as? [Double])
            let d = SIMD2((c[0] - lon0) / mLon, (c[1] - lat0) / mLat) - target
            let off = (d * d).sum().squareRoot(), radius = try #require(p["radius95_m"] as? Double)
            // The report (2 km accuracy) barely pulls it, and the radius covers the area's spread.
            #expect(off < 20, "\(p["id"] ?? "") \(off) m from the area mean")
            #expect(radius > 2.4 * 30 && radius < 2 * 2000, "\(radius)")
        }
    }

    /// A report whose cell evidence carries a timing advance gives a `cell` and a `cell-ta` fix;
    /// the filter fuses the second only (it contains the first), and the output says so.
    @Test func cellFixContainedInCellTAIsNamed() throws {
        let dir = try GateFixtures.tempDir()
        let ref = dir.appendingPathComponent("ref.json"), reports = dir.appendingPathComponent("r.jsonl")
        try #"{"cells":[{"rat":"lte","mcc":310,"mnc":260,"area":7001,"cid":40002,"lat":40.7500,"lon":-73.9900,"h":55,"azimuth":300,"beamwidth":120}]}"#
            .write(to: ref, atomically: true, encoding: .utf8)
        try (#"{"id":"ta","lat":40.7505,"lon":-73.9905,"accuracy_m":80,"t":10,"evidence":[{"t":9,"type":"cell","rat":"lte","mcc":310,"mnc":260,"area":7001,"cid":40002,"serving":true,"ta":5,"ta_unit":"lte_16ts","rsrp":-75}]}"# + "\n")
            .write(to: reports, atomically: true, encoding: .utf8)
        let r = try CLI.run(["refine", reports.path, "--reference", ref.path, "--lines", "--no-progress"])
        #expect(r.status == 0, "\(r.stderr)")
        let first = try features(r.stdout).first
        let props = try #require(first?["properties"] as? [String: Any])
        let used = props["sources_used"] as? [String] ?? []
        let rejected = props["rejected"] as? [[String: Any]] ?? []
        #expect(used.contains("cell-ta") && !used.contains("cell"), "\(props)")
        #expect(rejected.contains { $0["input"] as? String == "cell" && ($0["reason"] as? String)?.contains("contained in the cell-ta fix") == true },
                "\(rejected)")
    }

    @Test func stdinStreamsOneRecordPerLine() throws {
        let p = Process()
        p.executableURL = CLI.binary
        p.arguments = ["refine", "-", "--lines", "--no-progress"]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        p.standardInput = input; p.standardOutput = output; p.standardError = errors
        try p.run()
        /// Output lines, read on a background thread so a missing answer times out instead of hanging.
        final class Lines: @unchecked Sendable {
            private var buffer = Data()
            private var closed = false
            private let lock = NSLock()
            init(_ h: FileHandle) {
                Thread.detachNewThread { [self] in
                    while true {
                        let chunk = h.availableData
                        lock.lock(); if chunk.isEmpty { closed = true } else { buffer.append(chunk) }; lock.unlock()
                        if chunk.isEmpty { return }
                    }
                }
            }
            /// The next complete line, waiting at most `seconds` (nil on timeout or EOF).
            func next(within seconds: Double) -> String? {
                let deadline = Date().addingTimeInterval(seconds)
                while Date() < deadline {
                    lock.lock()
                    if let nl = buffer.firstIndex(of: 0x0A) {
                        let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                        buffer = Data(buffer[(nl + 1)...])
                        lock.unlock()
                        return line
                    }
                    let done = closed
                    lock.unlock()
                    if done { return nil }
                    Thread.sleep(forTimeInterval: 0.01)
                }
                return nil
            }
        }
        let reader = Lines(output.fileHandleForReading)
        for k in 0..<3 {
            input.fileHandleForWriting.write(Data("{\"id\":\"s\(k)\",\"lat\":48.1,\"lon\":11.5,\"accuracy_m\":20}\n".utf8))
            guard let line = reader.next(within: 30) else {
                Issue.record("no answer to report \(k) while stdin stays open"); p.terminate(); return
            }
            let f = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect((f["properties"] as? [String: Any])?["id"] as? String == "s\(k)")
        }
        input.fileHandleForWriting.write(Data("not json\n".utf8))
        let bad = try #require(reader.next(within: 30))
        #expect(bad.contains("stdin:4: invalid JSON"), "\(bad)")
        try input.fileHandleForWriting.close()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(err.contains("4 reports in, 4 records out"), "\(err)")
    }
}
