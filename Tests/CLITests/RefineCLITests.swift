import Foundation
import Testing

/// `posfuse refine` end to end on the bundled sample reports (Traces/reports, built from the
/// mall-sparse-ap walk by scripts/make-sample-reports.py, truth in truth.jsonl).
@Suite struct RefineCLITests {
    static let dir = CLI.root.appendingPathComponent("Traces/reports")

    func features(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
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
    }
}
