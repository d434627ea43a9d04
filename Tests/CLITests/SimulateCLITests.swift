import Testing
import Foundation
import TestSupport

/// End-to-end `posfuse simulate`: writes a trace + reference, is deterministic per seed,
/// reports scenario errors with exit 65 and usage errors with 64.
@Suite struct SimulateCLITests {
    static func tmp(_ n: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-simcli-\(ProcessInfo.processInfo.processIdentifier)/\(n)")
    }

    @Test func simulatesAFolderDeterministically() throws {
        let a = Self.tmp("a/trace.jsonl"), b = Self.tmp("b/trace.jsonl"), c = Self.tmp("c/trace.jsonl")
        for (u, seed) in [(a, "9"), (b, "9"), (c, "10")] {
            let r = try CLI.run(["simulate", "Traces/office-acoustic", "-o", u.path, "--seed", seed, "--duration", "20", "-q"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let da = try Data(contentsOf: a), db = try Data(contentsOf: b), dc = try Data(contentsOf: c)
        #expect(da == db)
        #expect(da != dc)
        #expect(FileManager.default.fileExists(atPath: a.deletingLastPathComponent().appendingPathComponent("reference.json").path))
        let v = try CLI.run(["validate", a.path])
        #expect(v.status == 0, "\(v.stderr)")
    }

    @Test func badScenarioIsExit65WithLocation() throws {
        let dir = Self.tmp("bad")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let f = dir.appendingPathComponent("s.yaml")
        try "origin: {lat: 0, lon: 0}\nphones: [{path: {mode: static, waypoints: [[0, 0]]}}]\nwifi: {shadowing_sigma: 3}\n"
            .write(to: f, atomically: true, encoding: .utf8)
        let r = try CLI.run(["simulate", f.path, "-o", dir.appendingPathComponent("t.jsonl").path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("wifi.shadowing_sigma"))
        #expect(r.stderr.contains(":3"))
    }

    @Test func badOptionIsUsageError() throws {
        let r = try CLI.run(["simulate", "Traces/open-street", "-o", Self.tmp("x.jsonl").path, "--duration", "-1"])
        #expect(r.status == 64)
    }
}
