import Testing
import Foundation
import Positioning
import Replay
import TestSupport

/// End-to-end tests of `posfuse regress`, `compare` and `report` on synthetic runs
/// (replay JSON with per-epoch columns, seeded noise), plus the headless-Chromium check
/// of the report (skipped when chromium is absent).
enum GateFixtures {
    /// A run of one trace "loop" with sources gnss (σ = 3 m, honest covariance) and ekf
    /// (σ = 1.5 m); `gnssReportedSigma` lets a test make gnss overconfident.
    static func run(seed: UInt64, gnssReportedSigma: Double = 3, n: Int = 300) -> RunResults {
        var g = SplitMix64(seed: seed)
        func source(_ name: String, sigma: Double, reported: Double) -> SourceResult {
            var ex = 0.0, ey = 0.0
            let phi = 0.8, k = (1 - phi * phi).squareRoot()
            let r95 = reported * (-2 * log(0.05)).squareRoot()
            var epochs: [EpochSample] = []
            for i in 0..<n {
                ex = phi * ex + k * g.gaussian(); ey = phi * ey + k * g.gaussian()
                let e = SIMD2(sigma * ex, sigma * ey)
                let s = Double(i) * 0.5
                let truth = SIMD2(20 * cos(s / 20), 12 * sin(s / 20))
                epochs.append(EpochSample(time: Double(i), error: (e.x * e.x + e.y * e.y).squareRoot(), radius95: r95,
                                          nees: (e.x * e.x + e.y * e.y) / (reported * reported), estimate: truth + e, truth: truth))
            }
            var m = EpochMetrics.compute(epochs)
            m["count"] = Double(n); m["availability"] = 1
            return SourceResult(source: name, metrics: m, epochs: epochs)
        }
        let sources = [source("gnss", sigma: 3, reported: gnssReportedSigma), source("ekf", sigma: 1.5, reported: 1.5)]
        return RunResults(label: "seed \(seed)", traces: [TraceResult(trace: "loop", sources: sources)])
    }

    static func write(_ r: RunResults, to url: URL) throws {
        let traces: [[String: Any]] = r.traces.map { t in
            ["trace": t.trace, "skipped": t.skipped, "scores": t.sources.map { s -> [String: Any] in
                var o: [String: Any] = ["source": s.source]
                for (k, v) in s.metrics { o[k] = v }
                if let e = s.epochs { o["epochs"] = EpochSample.jsonColumns(e) }
                return o
            }]
        }
        try JSONSerialization.data(withJSONObject: ["traces": traces]).write(to: url)
    }

    static func tempDir() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-gate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }
}

@Suite struct GateCLITests {
    @Test func regressPassesUnchangedFailsDegradedAndWritesJUnit() throws {
        let dir = try GateFixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = dir.appendingPathComponent("good.json"), bad = dir.appendingPathComponent("bad.json")
        try GateFixtures.write(GateFixtures.run(seed: 1), to: good)
        try GateFixtures.write(GateFixtures.run(seed: 1, gnssReportedSigma: 1), to: bad)
        let base = dir.appendingPathComponent("baseline.yaml").path
        let u = try CLI.run(["regress", "--baseline", base, "--update-baseline", "--results", good.path])
        #expect(u.status == 0, "\(u.stderr)")
        let text = try String(contentsOfFile: base, encoding: .utf8)
        #expect(text.contains("format: posfuse-baseline") && text.contains("loop:") && text.contains("inside95"))

        let ok = try CLI.run(["regress", "--baseline", base, "--results", good.path, "--junit", dir.appendingPathComponent("ok.xml").path])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains("ok:"))
        let okXML = try String(contentsOf: dir.appendingPathComponent("ok.xml"), encoding: .utf8)
        #expect(okXML.contains("tests=\"2\" failures=\"0\""))

        let junit = dir.appendingPathComponent("bad.xml")
        let r = try CLI.run(["regress", "--baseline", base, "--results", bad.path, "--junit", junit.path])
        #expect(r.status == 1)
        #expect(r.stdout.contains("REGRESSION loop gnss inside95"))
        #expect(r.stdout.contains("REGRESSION loop gnss anees"))
        #expect(!r.stdout.contains("loop ekf"))
        let xml = try String(contentsOf: junit, encoding: .utf8)
        #expect(xml.components(separatedBy: "<testcase ").count - 1 == 2)
        #expect(xml.components(separatedBy: "<failure ").count - 1 == 1)
        #expect(xml.contains("gnss regressed on loop: inside95, anees"))
        let j = try CLI.run(["regress", "--baseline", base, "--results", bad.path, "--json"])
        #expect(j.status == 1)
        let o = try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any]
        #expect(o?["passed"] as? Bool == false && o?["failures"] as? Int == 2)
    }

    @Test func regressBadDataExits65() throws {
        let dir = try GateFixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let good = dir.appendingPathComponent("good.json")
        try GateFixtures.write(GateFixtures.run(seed: 1), to: good)
        let base = dir.appendingPathComponent("b.yaml")
        try "format: posfuse-baseline\ntraces: [1, 2]\n".write(to: base, atomically: true, encoding: .utf8)
        #expect(try CLI.run(["regress", "--baseline", base.path, "--results", good.path]).status == 65)
        #expect(try CLI.run(["regress", "--baseline", dir.appendingPathComponent("none.yaml").path, "--results", good.path]).status == 65)
        try "{\"traces\": 3}".write(to: good, atomically: true, encoding: .utf8)
        #expect(try CLI.run(["regress", "--baseline", base.path, "--update-baseline", "--results", good.path]).status == 65)
        #expect(try CLI.run(["regress", "--baseline", base.path, "--results", good.path, "Traces"]).status == 64)
        // A malformed trace line: lenient replay skips it, --strict stops with exit 65 naming file:line.
        let open = CLI.root.appendingPathComponent("Traces/open-street/trace.jsonl")
        if let text = try? String(contentsOf: open, encoding: .utf8) {
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            lines.insert("{\"t\": 1.0, \"type\": \"gnss\", \"lat\": oops}", at: 5)
            let bad = dir.appendingPathComponent("bad.jsonl")
            try lines.joined(separator: "\n").write(to: bad, atomically: true, encoding: .utf8)
            let b2 = dir.appendingPathComponent("b2.yaml").path
            #expect(try CLI.run(["regress", "--baseline", b2, "--update-baseline", bad.path]).status == 0)
            let strict = try CLI.run(["regress", "--baseline", b2, "--strict", bad.path])
            #expect(strict.status == 65)
            #expect(strict.stderr.contains("bad.jsonl:6"), "\(strict.stderr)")
        }
    }

    @Test func compareSeedsIncludeZeroDegradedExcludesIt() throws {
        let dir = try GateFixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("a.json"), b = dir.appendingPathComponent("b.json"), c = dir.appendingPathComponent("c.json")
        try GateFixtures.write(GateFixtures.run(seed: 1), to: a)
        try GateFixtures.write(GateFixtures.run(seed: 2), to: b)
        try GateFixtures.write(GateFixtures.run(seed: 2, gnssReportedSigma: 1), to: c)
        func rows(_ x: URL, _ y: URL) throws -> [[String: Any]] {
            let r = try CLI.run(["compare", x.path, y.path, "--json", "--resamples", "400", "--seed", "7"])
            #expect(r.status == 0, "\(r.stderr)")
            let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            return o?["rows"] as? [[String: Any]] ?? []
        }
        let seeds = try rows(a, b)
        let mean = try #require(seeds.first { $0["source"] as? String == "gnss" && $0["metric"] as? String == "mean_m" })
        #expect(mean["ci_includes_zero"] as? Bool == true, "\(mean)")
        #expect((mean["block_length"] as? Int ?? 0) >= 2)
        let degraded = try rows(a, c)
        let anees = try #require(degraded.first { $0["source"] as? String == "gnss" && $0["metric"] as? String == "anees" })
        #expect(anees["ci_includes_zero"] as? Bool == false, "\(anees)")
        #expect((anees["ci_low"] as? Double ?? 0) > 0)
        let text = try CLI.run(["compare", a.path, c.path, "--resamples", "100"])
        #expect(text.status == 0 && text.stdout.contains("loop / gnss") && text.stdout.contains("anees"))
        #expect(text.stdout.contains("metric changes with an interval exclude 0"))
        #expect(try CLI.run(["compare", a.path, dir.appendingPathComponent("nope.json").path]).status == 65)
    }

    @Test func reportIsSelfContainedAndRendersInChromium() throws {
        let dir = try GateFixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("run.json"), html = dir.appendingPathComponent("report.html")
        try GateFixtures.write(GateFixtures.run(seed: 3, gnssReportedSigma: 2), to: run)
        let r = try CLI.run(["report", run.path, "-o", html.path, "--traces", dir.path])
        #expect(r.status == 0, "\(r.stderr)")
        let text = try String(contentsOf: html, encoding: .utf8)
        for id in ["t0-cdf", "t0-traj", "t0-err-gnss", "t0-err-ekf", "t0-nees-gnss", "class=\"metrics\""] { #expect(text.contains(id), "\(id)") }
        #expect(text.range(of: #"(src|href)\s*=\s*["']?(https?:)?//"#, options: .regularExpression) == nil)
        #expect(!text.contains("<script"))
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard chromium != nil else { return }  // no headless browser on this machine: the static checks above still ran
        let p = Process()
        p.executableURL = CLI.root.appendingPathComponent("scripts/render-report.sh")
        p.arguments = [html.path]
        let out = Pipe()
        p.standardOutput = out; p.standardError = out
        try p.run()
        let log = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(log)")
        #expect(log.contains("PROBE errors=0") && log.contains("network requests: 0") && log.contains("plots present"))
    }
}

/// Acceptance on the bundled scenarios (issue 8): a deliberately wrong WCL weight exponent
/// fails `posfuse regress` naming source and metric; the unchanged configuration passes;
/// compare on two seeds includes zero, on a degraded configuration excludes it.
@Suite(.serialized) struct GateAcceptanceTests {
    static let traces = CLI.root.appendingPathComponent("Traces")

    @Test func wrongWCLExponentRegressesUnchangedPasses() throws {
        let mall = Self.traces.appendingPathComponent("mall-sparse-ap")
        guard FileManager.default.fileExists(atPath: mall.path) else { return }
        let dir = try GateFixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // The simulated APs use locally administered BSSIDs (02:…), which WCL excludes by default.
        let good = dir.appendingPathComponent("good.yaml"), bad = dir.appendingPathComponent("bad.yaml")
        // Covariance pinned (κ = 1, σ0 = 3 m): with the calibrated defaults (κ = 0.03, σ0 = 11 m,
        // docs/radio.md) the wrong exponent still regresses the errors, but not ANEES.
        try "stages:\n  wcl: {exclude_local: false, kappa: 1, sigma0: 3}\n  hapel: {enabled: false}\n".write(to: good, atomically: true, encoding: .utf8)
        try "stages:\n  wcl: {exclude_local: false, kappa: 1, sigma0: 3, exponent: 10}\n  hapel: {enabled: false}\n".write(to: bad, atomically: true, encoding: .utf8)
        let base = dir.appendingPathComponent("baseline.yaml").path
        let u = try CLI.run(["regress", "--baseline", base, "--update-baseline", "--pipeline", good.path, mall.path])
        #expect(u.status == 0, "\(u.stderr)")
        let same = try CLI.run(["regress", "--baseline", base, "--pipeline", good.path, mall.path])
        #expect(same.status == 0, "\(same.stdout)\(same.stderr)")
        let junit = dir.appendingPathComponent("junit.xml")
        let r = try CLI.run(["regress", "--baseline", base, "--pipeline", bad.path, "--junit", junit.path, mall.path])
        #expect(r.status == 1)
        #expect(r.stdout.contains("REGRESSION mall-sparse-ap wcl p95_m"), "\(r.stdout)")
        #expect(r.stdout.contains("REGRESSION mall-sparse-ap wcl anees"))
        let xml = try String(contentsOf: junit, encoding: .utf8)
        // One failing test case per regressed trace × source: wcl itself and the fusion
        // filters that consume its fixes.
        let regressed = Set(r.stdout.split(separator: "\n").filter { $0.hasPrefix("REGRESSION mall-sparse-ap ") }
            .map { $0.split(separator: " ")[2] })
        #expect(regressed.contains("wcl"))
        #expect(xml.components(separatedBy: "<failure ").count - 1 == regressed.count, "\(regressed)")
        #expect(xml.contains("<testcase classname=\"posfuse.regress.mall-sparse-ap\" name=\"wcl\""))
        let unknown = dir.appendingPathComponent("typo.yaml")
        try "stages:\n  wlc: {exponent: 2}\n".write(to: unknown, atomically: true, encoding: .utf8)
        #expect(try CLI.run(["regress", "--baseline", base, "--pipeline", unknown.path, mall.path]).status == 65)
    }

    @Test func compareTwoSeedsIncludesZeroDegradedExcludesIt() throws {
        let scenario = Self.traces.appendingPathComponent("open-street")
        guard FileManager.default.fileExists(atPath: scenario.appendingPathComponent("scenario.yaml").path) else { return }
        let dir = try GateFixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        // 30 min so that the GNSS bias (Gauss–Markov, τ = 60 s) is seen many times over.
        for seed in ["31", "32"] {
            let out = dir.appendingPathComponent("s\(seed)/trace.jsonl")
            try FileManager.default.createDirectory(at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
            let s = try CLI.run(["simulate", scenario.path, "-o", out.path, "--seed", seed, "--duration", "1800", "--imu-rate", "10", "-q"])
            #expect(s.status == 0, "\(s.stderr)")
        }
        func rows(_ args: [String]) throws -> [String: [String: Any]] {
            let r = try CLI.run(["compare"] + args + ["--json", "--resamples", "500"])
            #expect(r.status == 0, "\(r.stderr)")
            let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            var m: [String: [String: Any]] = [:]
            for row in o?["rows"] as? [[String: Any]] ?? [] where row["source"] as? String == "gnss" { m[row["metric"] as! String] = row }
            return m
        }
        let seeds = try rows([dir.appendingPathComponent("s31").path, dir.appendingPathComponent("s32").path])
        for metric in ["mean_m", "median_m", "p95_m", "rmse_m", "inside95", "anees"] {
            #expect(seeds[metric]?["ci_includes_zero"] as? Bool == true, "\(metric): \(seeds[metric] ?? [:])")
        }
        let degraded = dir.appendingPathComponent("degraded.yaml")
        try "stages:\n  gnss: {inflation: 0.4}\n".write(to: degraded, atomically: true, encoding: .utf8)
        let s31 = dir.appendingPathComponent("s31").path
        let d = try rows([s31, s31, "--pipeline-b", degraded.path])
        #expect(d["anees"]?["ci_includes_zero"] as? Bool == false, "\(d["anees"] ?? [:])")
        #expect(d["inside95"]?["ci_includes_zero"] as? Bool == false)
        #expect((d["inside95"]?["ci_high"] as? Double ?? 0) < 0)
        #expect(d["mean_m"]?["diff"] as? Double == 0)
    }

    @Test func reportOfABundledScenario() throws {
        let open = Self.traces.appendingPathComponent("open-street")
        guard FileManager.default.fileExists(atPath: open.path) else { return }
        let dir = try GateFixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let html = dir.appendingPathComponent("r.html")
        let r = try CLI.run(["report", open.path, "-o", html.path])
        #expect(r.status == 0, "\(r.stderr)")
        let text = try String(contentsOf: html, encoding: .utf8)
        #expect(text.contains("id=\"t0-traj\"") && text.contains("id=\"t0-nees-gnss\"") && text.contains("ground truth"))
        #expect(try CLI.run(["report", dir.appendingPathComponent("missing").path, "-o", html.path]).status == 64)
        // From a results database and from replay --json --epochs: same plots, truth found in --traces.
        let db = dir.appendingPathComponent("r.sqlite").path
        #expect(try CLI.run(["replay", open.path, "--db", db]).status == 0)
        let fromDB = try CLI.run(["report", db, "-o", html.path, "--traces", Self.traces.path])
        #expect(fromDB.status == 0, "\(fromDB.stderr)")
        #expect(try String(contentsOf: html, encoding: .utf8).contains("id=\"t0-nees-gnss\""))
        let json = try CLI.run(["replay", open.path, "--json", "--epochs"])
        let run = dir.appendingPathComponent("run.json")
        try json.stdout.write(to: run, atomically: true, encoding: .utf8)
        let fromJSON = try CLI.run(["report", run.path, "-o", html.path, "--traces", Self.traces.path])
        #expect(fromJSON.status == 0, "\(fromJSON.stderr)")
        let t = try String(contentsOf: html, encoding: .utf8)
        #expect(t.contains("id=\"t0-err-gnss\"") && !t.contains(" 0 ground-truth points"))
    }
}

/// `posfuse regress --runs`: a baseline written from seeded runs passes against itself (the gate
/// is deterministic) and fails, naming the metric, when the baseline claims a better mean error.
@Suite struct MonteCarloGateCLITests {
    @Test func seededRunsGate() throws {
        let folder = CLI.root.appendingPathComponent("Traces/open-street").path
        let dir = try GateFixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = dir.appendingPathComponent("mc.yaml").path
        let u = try CLI.run(["regress", "--baseline", base, "--runs", "2", "--first-seed", "3", "--update-baseline", folder])
        #expect(u.status == 0, "\(u.stderr)")
        var text = try String(contentsOfFile: base, encoding: .utf8)
        #expect(text.contains("open-street (2 runs, seeds 3…4)"))
        let ok = try CLI.run(["regress", "--baseline", base, "--runs", "2", "--first-seed", "3", folder])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        // Claim an ekf mean error of 1 mm: the real one is a regression against it.
        let lines = text.components(separatedBy: "\n")
        let ekf = try #require(lines.firstIndex(of: "    ekf:"))
        let mean = try #require(lines[ekf...].firstIndex { $0.hasPrefix("      mean_m:") })
        var edited = lines; edited[mean] = "      mean_m: 0.001"
        text = edited.joined(separator: "\n")
        try text.write(toFile: base, atomically: true, encoding: .utf8)
        let bad = try CLI.run(["regress", "--baseline", base, "--runs", "2", "--first-seed", "3", folder])
        #expect(bad.status == 1 && bad.stdout.contains("ekf mean_m"), "\(bad.status) \(bad.stdout)")
        #expect(try CLI.run(["regress", "--baseline", base, "--runs", "0", folder]).status == 64)
        #expect(try CLI.run(["regress", "--baseline", base, "--runs", "2", "/nonexistent"]).status == 64)
    }
}
