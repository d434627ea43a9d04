import Foundation
import Replay
import Testing
import TestSupport

/// End-to-end `posfuse sweep`: bad study files, a killed and restarted study, shards merged
/// by the CLI, and (where a local Slurm can be started) the study through `--slurm --submit`.
@Suite(.serialized) struct SweepCLITests {
    static let dir: URL = {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-sweepcli-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }()

    static func file(_ name: String, _ text: String? = nil) throws -> String {
        let p = dir.appendingPathComponent(name).path
        try? FileManager.default.removeItem(atPath: p)
        if let text { try text.write(toFile: p, atomically: true, encoding: .utf8) }
        return p
    }

    /// Traces/studies/smoke.yaml (2 × 2 WCL points × 3 seeds of 60 s of the mall walk, 12 short
    /// runs) with other seeds and duration, and the scenario path made absolute.
    static func study(seeds: Int = 3, duration: Int = 60) throws -> String {
        try String(contentsOf: CLI.root.appendingPathComponent("Traces/studies/smoke.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "scenario: ../mall-sparse-ap", with: "scenario: \(CLI.root.appendingPathComponent("Traces/mall-sparse-ap").path)")
            .replacingOccurrences(of: "seeds: 3", with: "seeds: \(seeds)")
            .replacingOccurrences(of: "duration_s: 60", with: "duration_s: \(duration)")
    }

    @Test func badStudyFilesExit65NamingKeyAndLine() throws {
        let cases: [(String, String, String)] = [
            ("inputs: [{trace: \(CLI.root.path)/Traces/open-street}]\ngrid:\n  wcl:\n    exponnt: [1, 2]\n", ":4: grid.wcl.exponnt: unknown option", "unknown key"),
            ("inputs: [{trace: \(CLI.root.path)/Traces/open-street}]\ngrid:\n  wcl:\n    exponent: []\n", ":4: grid.wcl.exponent: empty grid", "empty grid"),
            ("inputs: [{trace: \(CLI.root.path)/Traces/open-street}]\ngrid:\n  wcl:\n    k: [4, eight]\n", ":4: grid.wcl.k: eight: expected a number", "wrong type"),
        ]
        for (i, (yaml, message, what)) in cases.enumerated() {
            let f = try Self.file("bad\(i).yaml", yaml)
            let r = try CLI.run(["sweep", f, "--db", try Self.file("bad\(i).sqlite")])
            #expect(r.status == 65, "\(what): \(r.stderr)")
            #expect(r.stderr.contains(f + message), "\(what): \(r.stderr)")
        }
        let missing = try CLI.run(["sweep", "/nonexistent/study.yaml"])
        #expect(missing.status == 64)
    }

    /// A study killed (SIGKILL) midway keeps only whole runs; started again it completes the
    /// study with every run exactly once, identical to a run that was never interrupted.
    @Test func killedStudyResumesWithoutDuplicates() throws {
        let study = try Self.file("kill.yaml", try Self.study(seeds: 4, duration: 120))
        let db = try Self.file("kill.sqlite")
        let p = Process()
        p.executableURL = CLI.binary
        p.arguments = ["sweep", study, "--db", db, "--jobs", "2"]
        p.standardOutput = FileHandle.nullDevice; p.standardError = FileHandle.nullDevice
        try p.run()
        // Wait until some runs are stored, then kill.
        var stored = 0
        for _ in 0..<600 {
            Thread.sleep(forTimeInterval: 0.1)
            stored = SweepStore.storedCount(path: db) ?? 0
            if stored >= 3 || !p.isRunning { break }
        }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        let before = try SweepStore(path: db).storedKeys().count
        #expect(before >= 1 && before < 16, "killed after \(before) of 16 runs")
        let r = try CLI.run(["sweep", study, "--db", db, "--jobs", "2", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("\(16 - before) runs done, \(before) already stored"), "\(r.stderr)")
        let store = try SweepStore(path: db)
        #expect(try store.storedKeys().count == 16)
        #expect(try store.results.runs().count == 16)   // no half run left behind
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(json["missing"] as? Int == 0 && json["stored"] as? Int == 16)
        // The same study uninterrupted on one core gives the same runs.
        let clean = try Self.file("clean.sqlite")
        let c = try CLI.run(["sweep", study, "--db", clean, "--jobs", "1", "--json"])
        #expect(c.status == 0, "\(c.stderr)")
        let d = try CLI.run(["sweep", "diff", db, clean])
        #expect(d.status == 0, "\(d.stdout)\(d.stderr)")
        #expect(d.stdout.contains("16 runs in both (16 identical, 0 differ)"))
        var cj = try #require(try JSONSerialization.jsonObject(with: Data(c.stdout.utf8)) as? [String: Any])
        var rj = json
        cj["db"] = nil; rj["db"] = nil
        #expect(NSDictionary(dictionary: cj).isEqual(to: rj))
    }

    @Test func shardsMergeToTheLocalRunAndSummaryOutputs() throws {
        let study = try Self.file("shard.yaml", try Self.study())
        let local = try Self.file("local.sqlite")
        let csv = try Self.file("s.csv"), html = try Self.file("s.html")
        let l = try CLI.run(["sweep", study, "--db", local, "--csv", csv, "--html", html])
        #expect(l.status == 0, "\(l.stderr)")
        #expect(l.stdout.contains("weight_law=power exponent=0.3 (base)"))
        #expect(l.stdout.contains("best point per metric:"))
        let csvText = try String(contentsOfFile: csv, encoding: .utf8)
        #expect(csvText.hasPrefix("input,source,wcl.weight_law,wcl.exponent,metric,n,mean,ci_low,ci_high,diff"))
        #expect(csvText.components(separatedBy: "\r\n").count == 1 + 4 * 3 + 1)
        let page = try String(contentsOfFile: html, encoding: .utf8)
        #expect(page.contains("<section class=\"trace\" id=\"sweep\">"))
        #expect(page.components(separatedBy: "<svg").count - 1 == 3 * 2)   // 3 metrics × 2 swept options
        var shards: [String] = []
        for i in 1...3 {
            let s = try Self.file("shard-\(i).sqlite")
            let r = try CLI.run(["sweep", study, "--db", s, "--shard", "\(i)/3"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.isEmpty)
            shards.append(s)
        }
        let merged = try Self.file("merged.sqlite")
        let m = try CLI.run(["sweep", "merge", "--db", merged] + shards)
        #expect(m.status == 0 && m.stdout.contains("12 runs copied, 0 already there"), "\(m.stdout)\(m.stderr)")
        let d = try CLI.run(["sweep", "diff", local, merged])
        #expect(d.status == 0, "\(d.stdout)")
        let summary = try CLI.run(["sweep", study, "--db", merged, "--no-run"])
        #expect(summary.stdout == l.stdout)
        // A database missing a shard differs, and says so.
        let partial = try Self.file("partial.sqlite")
        _ = try CLI.run(["sweep", "merge", "--db", partial, shards[0]])
        let p = try CLI.run(["sweep", "diff", local, partial])
        #expect(p.status == 1)
        #expect(p.stdout.contains("only in \(local)"))
        let ps = try CLI.run(["sweep", study, "--db", partial, "--no-run", "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(ps.stdout.utf8)) as? [String: Any])
        #expect(json["missing"] as? Int == 8)
    }

    /// The study through a real (single-node) Slurm: `--slurm --submit` writes and submits
    /// the array and merge jobs; the merged database equals the local run. Needs
    /// scripts/slurm-local.sh to start Slurm (root, Debian packages); skipped otherwise.
    @Test func slurmSubmitEqualsLocalRun() throws {
        let start = Process()
        start.executableURL = CLI.root.appendingPathComponent("scripts/slurm-local.sh")
        start.arguments = ["start"]
        let err = Pipe()
        start.standardError = err; start.standardOutput = FileHandle.nullDevice
        try start.run()
        let why = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        start.waitUntilExit()
        if start.terminationStatus != 0 {
            print("SweepCLITests.slurmSubmitEqualsLocalRun SKIPPED: Slurm cannot be started here: \(why)")
            return
        }
        let study = try Self.file("slurm.yaml", try Self.study())
        let local = try Self.file("slurm-local.sqlite")
        let l = try CLI.run(["sweep", study, "--db", local, "--jobs", "2"])
        #expect(l.status == 0, "\(l.stderr)")
        let db = try Self.file("slurm-cluster.sqlite")
        let folder = Self.dir.appendingPathComponent("slurm-cluster.slurm")
        try? FileManager.default.removeItem(at: folder)
        let s = try CLI.run(["sweep", study, "--db", db, "--slurm", "--shards", "3", "--submit"])
        #expect(s.status == 0, "\(s.stdout)\(s.stderr)")
        #expect(s.stdout.contains("submitted array job"))
        let summaryJSON = folder.appendingPathComponent("summary.json")
        var waited = 0.0
        while !FileManager.default.fileExists(atPath: summaryJSON.path) && waited < 600 {
            Thread.sleep(forTimeInterval: 1); waited += 1
        }
        let logs = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".log") }
            .map { (try? String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)) ?? "" }.joined(separator: "\n")
        try #require(FileManager.default.fileExists(atPath: summaryJSON.path), "no summary after \(waited) s; logs:\n\(logs)")
        let d = try CLI.run(["sweep", "diff", local, db])
        #expect(d.status == 0, "\(d.stdout)")
        #expect(d.stdout.contains("12 runs in both (12 identical, 0 differ)"))
        let localSummary = try CLI.run(["sweep", study, "--db", local, "--no-run"])
        let clusterSummary = try String(contentsOf: folder.appendingPathComponent("summary.txt"), encoding: .utf8)
        #expect(clusterSummary == localSummary.stdout)
    }
}
