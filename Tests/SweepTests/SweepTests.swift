import Foundation
import Positioning
@testable import Replay
@testable import Sweep
import Testing
import TestSupport

/// `posfuse sweep`'s library: study parsing with line-accurate errors, the grid and its
/// shards, parallel and resumed execution, merge, and the summary statistics.
@Suite struct SweepTests {
    static let root = PackagePaths.root

    static func tmp(_ name: String) -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-sweep-tests-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let p = dir.appendingPathComponent(name).path
        try? FileManager.default.removeItem(atPath: p)
        return p
    }

    /// Traces/studies/smoke.yaml: only WCL runs, 60 s of the mall walk, 12 short runs.
    static var small: String { (try? String(contentsOf: root.appendingPathComponent("Traces/studies/smoke.yaml"), encoding: .utf8)) ?? "" }
    static let smallDirectory = root.appendingPathComponent("Traces/studies")

    static func parse(_ yaml: String) throws -> Study {
        try Study.parse(yaml: yaml, file: "study.yaml", directory: root)
    }

    static func error(_ yaml: String) -> StudyError? {
        do { _ = try parse(yaml); return nil } catch let e as StudyError { return e } catch { return nil }
    }

    // MARK: parsing

    @Test func parsesTheSmallStudy() throws {
        let s = try Study.load(path: Self.smallDirectory.appendingPathComponent("smoke.yaml").path)
        #expect(s.name == "smoke")
        #expect(s.parameters.map(\.name) == ["wcl.weight_law", "wcl.exponent"])
        #expect(s.parameters[1].values == [.number(0.3), .number(1)])
        #expect(s.inputs.count == 1 && s.inputs[0].seeds == [1, 2, 3])
        #expect(s.base["ekf"]?.values["enabled"] == .bool(false))
        #expect(s.baseline == [.string("power"), .number(0.3)])
    }

    @Test func rangesExpandInclusively() throws {
        let s = try Self.parse("inputs: [{trace: Traces/open-street}]\ngrid:\n  wcl:\n    exponent: {from: 0.1, to: 1.0, step: 0.3}\n    k: {from: 2, to: 8, count: 4}\n")
        #expect(s.parameters[0].values == [0.1, 0.4, 0.7, 1.0].map { .number($0) })
        #expect(s.parameters[1].values == [2, 4, 6, 8].map { .number($0) })
    }

    @Test func unknownKeysNameTheKeyAndLine() throws {
        let top = Self.error("inputs: [{trace: Traces/open-street}]\ngrid:\n  wcl: {exponent: [1]}\nmetrix: [median_m]\n")
        #expect(top?.line == 4)
        #expect(top?.key == "metrix")
        let option = Self.error("inputs: [{trace: Traces/open-street}]\ngrid:\n  wcl:\n    exponnt: [0.5, 1]\n")
        #expect(option?.line == 4)
        #expect(option?.key == "grid.wcl.exponnt")
        #expect(option?.description.contains("study.yaml:4: grid.wcl.exponnt: unknown option exponnt of stage wcl") == true)
        // The error lists the stage's known keys (its option table).
        #expect(option?.reason.contains("known: enabled, weight_law, exponent, k,") == true)
        let stage = Self.error("inputs: [{trace: Traces/open-street}]\ngrid:\n  wlc: {exponent: [1]}\n")
        #expect(stage?.line == 3)
        #expect(stage?.key == "grid.wlc")
        let base = Self.error("inputs: [{trace: Traces/open-street}]\nstages:\n  ekf:\n    enabeld: false\ngrid:\n  wcl: {exponent: [1]}\n")
        #expect(base?.line == 4)
        #expect(base?.key == "stages.ekf.enabeld")
    }

    @Test func emptyGridsAreErrors() throws {
        let none = Self.error("inputs: [{trace: Traces/open-street}]\ngrid: {}\n")
        #expect(none?.line == 2)
        #expect(none?.reason.contains("empty grid") == true)
        let list = Self.error("inputs: [{trace: Traces/open-street}]\ngrid:\n  wcl:\n    exponent: []\n")
        #expect(list?.line == 4)
        #expect(list?.key == "grid.wcl.exponent")
        #expect(list?.reason.contains("empty grid") == true)
        let missing = Self.error("inputs: [{trace: Traces/open-street}]\n")
        #expect(missing?.key == "grid")
    }

    @Test func wrongTypesAreErrors() throws {
        let word = Self.error("inputs: [{trace: Traces/open-street}]\ngrid:\n  wcl:\n    weight_law: [power, db]\n    exponent: [0.5, high]\n")
        #expect(word?.line == 5)
        #expect(word?.key == "grid.wcl.exponent")
        #expect(word?.reason.contains("expected a number") == true)
        let scalar = Self.error("inputs: [{trace: Traces/open-street}]\ngrid:\n  wcl:\n    exponent: 0.5\n")
        #expect(scalar?.line == 4)
        #expect(scalar?.reason.contains("expected a list of values or a range") == true)
        let law = Self.error("inputs: [{trace: Traces/open-street}]\ngrid:\n  wcl:\n    weight_law: [power, cubic]\n")
        #expect(law?.line == 4)
        let seeds = Self.error("inputs:\n  - scenario: Traces/mall-sparse-ap\n    seeds: many\ngrid:\n  wcl: {k: [4]}\n")
        #expect(seeds?.line == 3)
        #expect(seeds?.key == "inputs[0].seeds")
        let baseline = Self.error("inputs: [{trace: Traces/open-street}]\ngrid:\n  wcl: {k: [4, 8]}\nbaseline: {wcl: {k: 6}}\n")
        #expect(baseline?.line == 4)
        #expect(baseline?.key == "baseline.wcl.k")
    }

    @Test func cellDatabaseInputs() throws {
        let missing = Self.error("inputs:\n  - trace: Traces/urban-canyon\n    cell_db: /nonexistent/train.sqlite\ngrid:\n  wcl: {k: [4]}\n")
        #expect(missing?.line == 3)
        #expect(missing?.key == "inputs[0].cell_db")
        let db = Self.tmp("train.sqlite")
        try Data().write(to: URL(fileURLWithPath: db))
        let with = SweepPlan(study: try Self.parse("inputs:\n  - trace: Traces/urban-canyon\n    cell_db: \(db)\ngrid:\n  wcl: {k: [4]}\n"))
        let without = SweepPlan(study: try Self.parse("inputs:\n  - trace: Traces/urban-canyon\ngrid:\n  wcl: {k: [4]}\n"))
        #expect(with.study.inputs[0].cellDatabase == db)
        #expect(with.runs[0].key != without.runs[0].key)
        #expect(with.runs[0].key.contains(db))
    }

    /// The probe that finds unknown option names accepts every option docs/pipeline.yaml
    /// documents (commented-out ones included) and rejects misspellings.
    @Test func everyDocumentedOptionIsKnown() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/pipeline.yaml"), encoding: .utf8)
        var stage: String?
        var checked = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if let m = line.firstMatch(of: /^  ([a-z-]+):/) { stage = String(m.1); continue }
            guard let stage, let m = line.firstMatch(of: /^    (?:# )?([a-z_0-9]+):/) else { continue }
            let key = String(m.1)
            #expect(SweepKeys.isKnown(stage: stage, key: key), "\(stage).\(key)")
            #expect(!SweepKeys.isKnown(stage: stage, key: key + "x"), "\(stage).\(key)x")
            checked += 1
        }
        #expect(checked > 80)
    }

    // MARK: plan

    @Test func planOrderKeysAndShards() throws {
        let plan = SweepPlan(study: try Study.parse(yaml: Self.small, file: "smoke.yaml", directory: Self.smallDirectory))
        #expect(plan.points.count == 4)
        #expect(plan.runs.count == 12)
        #expect(plan.pointLabel(1) == "weight_law=power exponent=1")
        #expect(Set(plan.runs.map(\.key)).count == 12)
        #expect(plan.runs.map(\.seed) == [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3])
        let shards = (1...5).map { plan.shard($0, of: 5).map(\.index) }
        #expect(shards.flatMap { $0 }.sorted() == Array(0..<12))
        #expect(shards[1] == [1, 6, 11])
        #expect(plan.pointJSON(3) == "{\"wcl.exponent\":1,\"wcl.weight_law\":\"db\"}")
        // The stored pipeline text reproduces the point through the pipeline loader.
        let stages = try PipelineConfigLoader.parse(yaml: plan.pipelineYAML(point: 3))
        #expect(stages == plan.stages(point: 3))
    }

    // MARK: statistics

    /// Student's t interval against the tabulated quantile t(0.975, 4) = 2.776445
    /// (NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
    @Test func tIntervalMatchesTheTable() throws {
        let x = [1.0, 2, 3, 4, 5]
        let (lo, hi) = try #require(SweepSummary.tInterval(x, confidence: 0.95))
        let h = 2.776445 * (2.5 / 5).squareRoot()
        #expect(abs(lo - (3 - h)) < 1e-5 && abs(hi - (3 + h)) < 1e-5)
        #expect(SweepSummary.tInterval([4], confidence: 0.95) == nil)
    }

    @Test func bestPointRules() {
        #expect(SweepSummary.badness("median_m", 3) < SweepSummary.badness("median_m", 4))
        #expect(SweepSummary.badness("inside95", 0.96) < SweepSummary.badness("inside95", 0.99))
        #expect(SweepSummary.badness("anees", 2.1) < SweepSummary.badness("anees", 1.5))
        #expect(SweepSummary.badness("availability", 0.9) < SweepSummary.badness("availability", 0.5))
    }

    /// On a series with no spread the one-run bootstrap interval is the value itself; on
    /// noisy errors it brackets the metric.
    @Test func oneRunBootstrapInterval() throws {
        let flat = (0..<200).map { EpochSample(time: Double($0), error: 2, radius95: nil, nees: nil, estimate: .zero, truth: .zero) }
        let i = try #require(BlockBootstrap(resamples: 200).intervals(flat)["median_m"])
        #expect(i.low == 2 && i.high == 2)
        let noisy = (0..<400).map { k in
            EpochSample(time: Double(k), error: 1 + Double((k * 7919) % 100) / 25, radius95: nil, nees: nil, estimate: .zero, truth: .zero)
        }
        let m = EpochMetrics.compute(errors: noisy.map(\.error), inside: [], nees: [])["mean_m"]!
        let j = try #require(BlockBootstrap(resamples: 400).intervals(noisy)["mean_m"])
        #expect(j.low < m && m < j.high)
        #expect(j.high - j.low < 0.5)
    }

    // MARK: execution

    @Test func parallelResumedAndShardedRunsAreIdentical() throws {
        let plan = SweepPlan(study: try Study.parse(yaml: Self.small, file: "smoke.yaml", directory: Self.smallDirectory))
        // One job, all at once.
        let one = try SweepStore(path: Self.tmp("one.sqlite"))
        let r1 = try SweepRunner(plan: plan, store: one, jobs: 1, version: "test").run(plan.runs)
        #expect(r1.ran == 12 && r1.failed.isEmpty)
        // Three jobs, in two goes (the first stops after shard 1 of 3: a resumed study).
        let three = try SweepStore(path: Self.tmp("three.sqlite"))
        let a = try SweepRunner(plan: plan, store: three, jobs: 3, version: "test").run(plan.shard(1, of: 3))
        #expect(a.ran == 4)
        let b = try SweepRunner(plan: plan, store: three, jobs: 3, version: "test").run(plan.runs)
        #expect(b.ran == 8 && b.alreadyStored == 4)
        // Shards in separate databases, merged (twice: the second merge copies nothing).
        let merged = try SweepStore(path: Self.tmp("merged.sqlite"))
        for i in 1...2 {
            let s = try SweepStore(path: Self.tmp("shard\(i).sqlite"))
            _ = try SweepRunner(plan: plan, store: s, jobs: 2, version: "test").run(plan.shard(i, of: 2))
            #expect(try merged.merge(from: s.path) == SweepStore.MergeReport(copied: 6, duplicates: 0))
            #expect(try merged.merge(from: s.path) == SweepStore.MergeReport(copied: 0, duplicates: 6))
        }
        let c1 = try one.contents(), c3 = try three.contents(), cm = try merged.contents()
        #expect(c1.count == 12)
        for (k, v) in c1 {
            #expect(c3[k]?.scores == v.scores && c3[k]?.estimates == v.estimates)
            #expect(cm[k]?.scores == v.scores && cm[k]?.estimates == v.estimates)
        }
        #expect(try one.results.runs().count == 12 && three.results.runs().count == 12 && merged.results.runs().count == 12)
        #expect(try one.results.estimateCount() == merged.results.estimateCount())
        // Summaries agree too.
        let s1 = try SweepSummary.compute(plan: plan, store: one, resamples: 100)
        let sm = try SweepSummary.compute(plan: plan, store: merged, resamples: 100)
        #expect(s1.cells == sm.cells && s1.best == sm.best)
        #expect(s1.missing == 0 && s1.cells.count == 4 * 3)
        // The baseline has no difference; each other point's mean difference is the mean of the per-seed differences.
        let base = s1.cells.filter { $0.point == plan.baselinePoint }
        #expect(base.allSatisfy { $0.diff == nil })
        let cell = try #require(s1.cells.first { $0.point == 3 && $0.metric == "median_m" })
        let b0 = try #require(s1.cells.first { $0.point == 0 && $0.metric == "median_m" })
        #expect(abs(cell.diff! - (cell.mean - b0.mean)) < 1e-9)
        #expect(cell.n == 3)
    }

    @Test func mergeRejectsAForeignFile() throws {
        let p = Self.tmp("notdb.sqlite")
        try "hello".write(toFile: p, atomically: true, encoding: .utf8)
        let store = try SweepStore(path: Self.tmp("into.sqlite"))
        #expect(throws: ResultsDataError.self) { try store.merge(from: p) }
        let plainPath = Self.tmp("plain.sqlite")
        _ = try ResultStore(path: plainPath)
        #expect(throws: ResultsDataError.self) { try store.merge(from: plainPath) }
    }
}
