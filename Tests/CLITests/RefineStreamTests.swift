import Foundation
import Testing
import TestSupport

/// The refine record reader (`ReportStream`, `ReportRecordParser`): a FeatureCollection is read
/// feature by feature (a bad feature is one error record, the others go on), and numbers are
/// read correctly rounded.
@Suite struct RefineStreamTests {
    func folder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("refine-stream-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    func properties(_ line: Substring) throws -> [String: Any] {
        let f = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return try #require(f["properties"] as? [String: Any])
    }

    static func feature(_ id: String, lat: String = "48.1") -> String {
        "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[11.5,\(lat)]},\"properties\":{\"id\":\"\(id)\",\"accuracy_m\":20}}"
    }

    /// Issue 25's reproducer: one bad value in a FeatureCollection made the whole document one
    /// error record (3 features in, 1 out). Now: 3 in, 3 out, the bad one names its feature.
    @Test func badFeatureIsOneErrorRecord() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let f = dir.appendingPathComponent("reports.geojson")
        let doc = "{\"type\": \"FeatureCollection\", \"features\": [\n" + [Self.feature("a"), Self.feature("b", lat: "4x.1"), Self.feature("c")].joined(separator: ",\n") + "\n]}\n"
        try doc.write(to: f, atomically: true, encoding: .utf8)
        let r = try CLI.run(["refine", f.path, "--lines", "--no-progress"])
        #expect(r.status == 0, "\(r.stderr)")
        let out = r.stdout.split(separator: "\n")
        #expect(out.count == 3)
        #expect(r.stderr.contains("3 reports in, 3 records out"), "\(r.stderr)")
        let p = try out.map(properties)
        #expect(p[0]["id"] as? String == "a" && p[0]["status"] as? String == "reported")
        #expect(p[1]["status"] as? String == "error")
        let e = try #require(p[1]["error"] as? String)
        #expect(e.hasPrefix(f.path + ":2: invalid JSON: unexpected 'x'"), "\(e)")
        #expect(p[2]["id"] as? String == "c" && p[2]["status"] as? String == "reported")
        // --strict stops at that feature.
        let strict = try CLI.run(["refine", f.path, "--lines", "--strict", "--no-progress"])
        #expect(strict.status == 65)
        #expect(strict.stderr.contains(f.path + ":2: invalid JSON"), "\(strict.stderr)")
        #expect(strict.stdout.split(separator: "\n").count == 1)
    }

    /// A break of the document's structure (an unterminated string) cannot be resynchronised: the
    /// features before it are refined, then one error record says where reading stopped.
    @Test func brokenStructureStopsWithOneRecord() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let f = dir.appendingPathComponent("reports.geojson")
        try ("{\"type\":\"FeatureCollection\",\"features\":[" + Self.feature("a") + ",{\"type\":\"Feature\",\"properties\":{\"id\":\"b]}").write(to: f, atomically: true, encoding: .utf8)
        let r = try CLI.run(["refine", f.path, "--lines", "--no-progress"])
        #expect(r.status == 0, "\(r.stderr)")
        let out = r.stdout.split(separator: "\n")
        #expect(out.count == 2)
        #expect(try properties(out[0])["status"] as? String == "reported")
        let e = try #require(try properties(out[1])["error"] as? String)
        #expect(e.hasPrefix(f.path + ":2: invalid JSON"), "\(e)")
        // No features array at all.
        try "{\"type\":\"FeatureCollection\",\"name\":\"x\"}".write(to: f, atomically: true, encoding: .utf8)
        let none = try CLI.run(["refine", f.path, "--lines", "--no-progress"])
        #expect(none.stdout.contains("FeatureCollection without a 'features' array"))
    }

    /// Features split across read chunks (each feature larger than the first 4 KiB read and the
    /// 1 MiB chunks): every one arrives whole, in order.
    @Test func largeFeaturesAcrossChunks() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let f = dir.appendingPathComponent("reports.geojson")
        let imu = (0..<9000).map { "{\"t\":\(Double($0) / 100),\"type\":\"acc\",\"x\":0.1,\"y\":0.2,\"z\":9.8}" }.joined(separator: ",")
        let features = (0..<5).map { "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[11.5,48.1]},\"properties\":{\"id\":\"f\($0)\",\"accuracy_m\":20,\"evidence\":[\(imu)]}}" }
        try ("{\"type\":\"FeatureCollection\",\"features\":[" + features.joined(separator: ",") + "]}").write(to: f, atomically: true, encoding: .utf8)
        let r = try CLI.run(["refine", f.path, "--lines", "--no-progress"])
        #expect(r.status == 0, "\(r.stderr)")
        let out = try r.stdout.split(separator: "\n").map(properties)
        #expect(out.map { $0["id"] as? String } == (0..<5).map { "f\($0)" })
        #expect(out.allSatisfy { $0["status"] as? String != "error" })
    }

    /// Coordinates of 17 significant digits are read correctly rounded (the old Foundation parser
    /// was up to 3 units in the last place off): `reported` echoes them digit for digit.
    @Test func numbersAreCorrectlyRounded() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let f = dir.appendingPathComponent("r.jsonl")
        try "{\"id\":\"x\",\"lat\":37.50003617806449,\"lon\":127.03217556664066,\"accuracy_m\":30}\n".write(to: f, atomically: true, encoding: .utf8)
        let r = try CLI.run(["refine", f.path, "--lines", "--no-progress"])
        #expect(r.stdout.contains("\"reported\":{\"accuracy_m\":30,\"lat\":37.50003617806449,\"lon\":127.03217556664066}"), "\(r.stdout)")
    }
}
