import Testing
import Foundation
import Positioning
import TestSupport

/// End-to-end tests of `posfuse replay` and `posfuse score` (docs/cli.md contract).
@Suite struct ReplayCLITests {
    static let contractKeys = ["source", "count", "availability", "mean_m", "median_m", "p75_m", "p95_m", "rmse_m",
                               "max_m", "inside95", "anees"]

    func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    func json(_ s: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any])
    }

    /// A copy of Traces/rural-cell with line `line` (1-based) replaced by `text`.
    func corruptedCopy(line: Int, text: String) throws -> URL {
        let dir = try tempDir().appendingPathComponent("rural-cell-bad")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let src = CLI.root.appendingPathComponent("Traces/rural-cell")
        var lines = try String(contentsOf: src.appendingPathComponent("trace.jsonl"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[line - 1] = text
        try lines.joined(separator: "\n").write(to: dir.appendingPathComponent("trace.jsonl"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(at: src.appendingPathComponent("reference.json"), to: dir.appendingPathComponent("reference.json"))
        return dir
    }

    @Test func replayPrintsScoreTable() throws {
        let r = try CLI.run(["replay", "Traces/open-street"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("open-street"))
        #expect(r.stdout.contains("source") && r.stdout.contains("p95_m") && r.stdout.contains("inside95"))
        let gnss = try #require(r.stdout.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("gnss ") })
        #expect(gnss.split(separator: " ").count == 11)
        #expect(r.stdout.contains("1 trace replayed, 0 skipped lines"))
    }

    @Test func replayJSONHasContractKeys() throws {
        let r = try CLI.run(["replay", "Traces/open-street", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try json(r.stdout)
        #expect(o["skipped"] as? Int == 0)
        let traces = try #require(o["traces"] as? [[String: Any]])
        #expect(traces.count == 1 && traces[0]["trace"] as? String == "open-street")
        let scores = try #require(o["scores"] as? [[String: Any]])       // single trace: also at top level
        let gnss = try #require(scores.first { $0["source"] as? String == "gnss" })
        for k in Self.contractKeys { #expect(gnss[k] != nil, "missing \(k)") }
        #expect((gnss["count"] as? Int ?? 0) > 100)
        // Same trace as Traces/README.md states: GNSS median ≈ 2.3 m, P95 ≈ 3.9 m.
        let median = try #require(gnss["median_m"] as? Double), p95 = try #require(gnss["p95_m"] as? Double)
        #expect(median > 1.5 && median < 3.5 && p95 > 3 && p95 < 5)
        #expect((traces[0]["scores"] as? [[String: Any]])?.count == scores.count)
    }

    @Test func folderOfScenariosReplaysEach() throws {
        let dir = try tempDir()
        for name in ["open-street", "rural-cell"] {
            try FileManager.default.copyItem(at: CLI.root.appendingPathComponent("Traces/\(name)"), to: dir.appendingPathComponent(name))
        }
        let r = try CLI.run(["replay", dir.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try json(r.stdout)
        let names = (o["traces"] as? [[String: Any]])?.compactMap { $0["trace"] as? String }
        #expect(names == ["open-street", "rural-cell"])
        #expect(o["skipped"] as? Int == 0)
        #expect(o["scores"] == nil)      // several traces: scores only per trace
    }

    /// Acceptance (issue 2): one malformed line → validate exits 65 naming file:line and
    /// the reason; replay scores the good lines, exits 0, reports `skipped: 1`.
    @Test func malformedLineSkippedByReplayRejectedByValidate() throws {
        let dir = try corruptedCopy(line: 40, text: "{\"t\": 12.0, \"type\": \"cell\", \"rat\": ")
        let v = try CLI.run(["validate", dir.path])
        #expect(v.status == 65)
        #expect(v.stderr.contains("trace.jsonl:40:"), "\(v.stderr)")
        #expect(v.stderr.contains("invalid JSON"))

        let r = try CLI.run(["replay", dir.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try json(r.stdout)
        #expect(o["skipped"] as? Int == 1)
        let t = try #require((o["traces"] as? [[String: Any]])?.first)
        #expect(t["skipped"] as? Int == 1)
        #expect((t["skipped_by_reason"] as? [String: Int])?["invalid_json"] == 1)
        let scores = try #require(o["scores"] as? [[String: Any]])
        #expect(scores.contains { $0["source"] as? String == "cell-ta" && ($0["count"] as? Int ?? 0) > 500 })

        let table = try CLI.run(["replay", dir.path])
        #expect(table.status == 0 && table.stdout.contains("1 skipped line"))

        let strict = try CLI.run(["replay", dir.path, "--strict"])
        #expect(strict.status == 65)
        #expect(strict.stderr.contains("trace.jsonl:40:"))
    }

    @Test func usageErrorsExit64() throws {
        #expect(try CLI.run(["replay", "Traces/no-such-trace"]).status == 64)
        #expect(try CLI.run(["replay", "Traces/open-street", "--max-truth-gap", "-1"]).status == 64)
        #expect(try CLI.run(["replay", "Traces/open-street", "--pipeline", "/nonexistent/p.yaml"]).status == 64)
        #expect(try CLI.run(["replay"]).status == 64)
        #expect(try CLI.run(["score"]).status == 64)
    }

    @Test func badPipelineContentExits65() throws {
        let p = try tempDir().appendingPathComponent("p.yaml")
        try "stages:\n  nosuchstage: {enabled: true}\n".write(to: p, atomically: true, encoding: .utf8)
        let r = try CLI.run(["replay", "Traces/rural-cell", "--pipeline", p.path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("nosuchstage"))
    }

    @Test func pipelineFileDisablesStages() throws {
        let p = try tempDir().appendingPathComponent("p.yaml")
        try "stages:\n  cell: {enabled: false}\n".write(to: p, atomically: true, encoding: .utf8)
        let r = try CLI.run(["replay", "Traces/rural-cell", "--pipeline", p.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let sources = try (json(r.stdout)["scores"] as? [[String: Any]] ?? []).compactMap { $0["source"] as? String }
        #expect(sources.contains("cell-ta") && !sources.contains("cell"))
    }

    @Test func databaseStoresRunsAndScoreReadsThem() throws {
        let db = try tempDir().appendingPathComponent("results.sqlite")
        let r = try CLI.run(["replay", "Traces/rural-cell", "--db", db.path, "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let replayed = try #require(try json(r.stdout)["scores"] as? [[String: Any]])
        #expect(try CLI.run(["replay", "Traces/rural-cell", "--db", db.path]).status == 0)
        let list = try CLI.run(["score", "--db", db.path, "--list"])
        #expect(list.status == 0 && list.stdout.split(separator: "\n").count == 2)
        let s = try CLI.run(["score", "--db", db.path, "--run", "1", "--json"])
        #expect(s.status == 0, "\(s.stderr)")
        let stored = try #require((json(s.stdout)["traces"] as? [[String: Any]])?.first?["scores"] as? [[String: Any]])
        for src in ["cell", "cell-ta"] {
            let a = try #require(replayed.first { $0["source"] as? String == src })
            let b = try #require(stored.first { $0["source"] as? String == src })
            #expect(a["p95_m"] as? Double == b["p95_m"] as? Double)
            #expect(a["count"] as? Int == (b["count"] as? Double).map { Int($0) })
        }
        let table = try CLI.run(["score", "--db", db.path])
        #expect(table.status == 0 && table.stdout.contains("run 2") && !table.stdout.contains("run 1 "))
    }

    /// Estimates exported as CSV score to the same numbers as the replay that made them.
    @Test func scoreEstimatesFileMatchesReplay() throws {
        let csv = try tempDir().appendingPathComponent("est.csv")
        let e = try CLI.run(["export", "csv", "Traces/open-street", "-o", csv.path])
        #expect(e.status == 0, "\(e.stderr)")
        let s = try CLI.run(["score", "--estimates", csv.path, "Traces/open-street", "--json"])
        #expect(s.status == 0, "\(s.stderr)")
        let r = try CLI.run(["replay", "Traces/open-street", "--json"])
        let a = try #require((json(r.stdout)["scores"] as? [[String: Any]])?.first { $0["source"] as? String == "gnss" })
        let b = try #require((json(s.stdout)["scores"] as? [[String: Any]])?.first { $0["source"] as? String == "gnss" })
        #expect(a["count"] as? Int == b["count"] as? Int)
        let pa = try #require(a["p95_m"] as? Double), pb = try #require(b["p95_m"] as? Double)
        #expect(abs(pa - pb) < 1e-3)     // CSV keeps positions to < 1 mm

        let bad = try tempDir().appendingPathComponent("bad.csv")
        try "t,source,e,n\n1,gnss,0,0\n2,nosuch,0,0\n".write(to: bad, atomically: true, encoding: .utf8)
        let b2 = try CLI.run(["score", "--estimates", bad.path, "Traces/open-street"])
        #expect(b2.status == 65 && b2.stderr.contains("bad.csv:3:"))
    }

    @Test(arguments: ["replay", "score", "validate"])
    func helpHasExample(command: String) throws {
        let r = try CLI.run([command, "--help"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("Example") && r.stdout.contains("posfuse \(command) "))
    }
}

/// docs/pipeline.yaml is the template of every option at its default: replaying with it must
/// give exactly the numbers of a replay without --pipeline.
@Suite struct PipelineTemplateTests {
    @Test(arguments: ["crowd-peers", "rural-cell"]) func templateEqualsDefaults(trace: String) throws {
        let folder = CLI.root.appendingPathComponent("Traces/\(trace)").path
        guard FileManager.default.fileExists(atPath: folder) else { return }
        let template = CLI.root.appendingPathComponent("docs/pipeline.yaml").path
        let a = try CLI.run(["replay", folder, "--json"])
        let b = try CLI.run(["replay", folder, "--json", "--pipeline", template])
        #expect(a.status == 0 && b.status == 0, "\(b.stderr)")
        #expect(a.stdout == b.stdout)
        #expect(a.stdout.contains("\"source\":\"ekf\"") || a.stdout.contains("\"source\" : \"ekf\""))
    }

    /// The committed docs/pipeline.yaml is what the option tables generate (`posfuse
    /// pipeline-template`), so no option, default or unit is documented apart from its table.
    @Test func committedTemplateIsGenerated() throws {
        let committed = try String(contentsOf: CLI.root.appendingPathComponent("docs/pipeline.yaml"), encoding: .utf8)
        let r = try CLI.run(["pipeline-template"])
        #expect(r.status == 0)
        #expect(r.stdout == PipelineTemplate.yaml())
        #expect(committed == PipelineTemplate.yaml(),
                "docs/pipeline.yaml is stale: regenerate it with `swift build && .build/debug/posfuse pipeline-template > docs/pipeline.yaml`")
        // Every option of every table appears in it, commented out or not.
        for e in StageRegistry.entries {
            for o in e.options.options { #expect(committed.contains(" \(o.key): ") || committed.contains("# \(o.key): "), "\(e.name).\(o.key)") }
        }
    }
}
