import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

private let packageRoot = PackagePaths.root

@Suite struct ResultStoreTests {
    struct Interrupted: Error {}

    func info(_ name: String = "rural-cell") -> ResultStore.RunInfo {
        ResultStore.RunInfo(pipeline: "", trace: name, traceName: name, version: "test", parameters: "{}")
    }

    /// A replay that throws midway (as a killed one would stop) leaves no row of its run.
    @Test func interruptedRunLeavesNothing() throws {
        let store = try ResultStore(path: ":memory:")
        let loc = try TraceLocation.resolve(packageRoot.appendingPathComponent("Traces/rural-cell").path)
        var inserted = 0
        #expect(throws: Interrupted.self) {
            _ = try store.record(info()) { w in
                let r = Replayer()
                r.onEstimate = { e in
                    try w.insert(e)
                    inserted += 1
                    if inserted == 100 { throw Interrupted() }
                }
                return try r.run(loc)
            }
        }
        #expect(inserted == 100)
        #expect(try store.runs().isEmpty)
        #expect(try store.estimateCount() == 0)
        let scores = try store.queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM scores") }
        #expect(scores == 0)
    }

    @Test func completeRunStoresEstimatesAndScores() throws {
        let store = try ResultStore(path: ":memory:")
        let loc = try TraceLocation.resolve(packageRoot.appendingPathComponent("Traces/rural-cell").path)
        let (run, result) = try store.record(info()) { w in
            let r = Replayer()
            r.onEstimate = { try w.insert($0) }
            return try r.run(loc)
        }
        let fixes = result.scores.sources.reduce(0) { $0 + $1.fixes }
        #expect(fixes > 0)
        #expect(try store.estimateCount(run: run) == fixes)
        let sc = try store.scores(run: run)
        let cell = try #require(result.scores.score("cell")?.statistics)
        #expect(sc["cell"]?["p95_m"] == cell.p95)
        #expect(sc["cell"]?["count"] == Double(cell.count))
        // Round trip to RunResults (compare/report read databases this way).
        let rr = try store.runResults()
        #expect(rr.traces.first?.source("cell")?.epochs?.count == cell.count)
    }
}

@Suite struct PipelineConfigLoaderTests {
    @Test func parsesStagesIntoOptions() throws {
        let o = try PipelineConfigLoader.parse(yaml: """
            stages:
              gnss: {enabled: true, inflation: 1.5}
              wcl:
                enabled: false
                weight_law: power
                exponent: 2
              tdoa: {}
            """)
        #expect(o["gnss"]?.values["inflation"] == .number(1.5))
        #expect(o["wcl"]?.isEnabled == false)
        #expect(try o["wcl"]?.string("weight_law", default: "") == "power")
        #expect(try o["wcl"]?.int("exponent", default: 0) == 2)
        let p = try StageRegistry.pipeline(options: o)
        #expect(!p.sources.contains(.wcl) && p.sources.contains(.gnss))
    }

    @Test func rejectsUnknownStageAndBadShape() throws {
        #expect(throws: ConfigurationError.self) { try PipelineConfigLoader.parse(yaml: "stages: {nosuch: {}}") }
        #expect(throws: ConfigurationError.self) { try PipelineConfigLoader.parse(yaml: "stages: [1, 2]") }
        // Stage options without the `stages:` level are refused, naming the key, not ignored.
        do {
            _ = try PipelineConfigLoader.parse(yaml: "fingerprint: {method: wknn}\n", file: "p.yaml")
            Issue.record("a top-level stage section was accepted")
        } catch let e as ConfigurationError {
            #expect(e.path == "p.yaml: fingerprint")
            #expect(e.reason.contains("under `stages:`"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(throws: ConfigurationError.self) { try PipelineConfigLoader.parse(yaml: "stages: {}\nname: x\n") }
        #expect(try PipelineConfigLoader.parse(yaml: "stages: {}\n").isEmpty)
        #expect(throws: ConfigurationError.self) { try PipelineConfigLoader.parse(yaml: "stages: {gnss: {a: [1, }") }
    }
}

@Suite struct EstimatesFileTests {
    let frame = LocalFrame(origin: Geodetic(latitude: 48, longitude: 11))

    @Test func readsExportCSV() throws {
        let p = frame.geodetic(east: 10, north: 20)
        let csv = """
            t,time_utc,source,subject,lat,lon,h,e,n,u,floor,kind,cov_ee,cov_en,cov_nn
            1,x,gt,phone,,,,0,0,0,,continuous,,,
            2,x,ekf,phone,\(p.latitude),\(p.longitude),0,,,,,,4,0,4
            3,x,"wcl",peer2,,,,5,6,,,,,,
            """
        let f = try EstimatesFile.parse(csv: csv, file: "e.csv", frame: frame)
        #expect(f.count == 2)
        #expect(abs(f[0].position.x - 10) < 1e-6 && abs(f[0].position.y - 20) < 1e-6 && f[0].covariance.ee == 4)
        #expect(f[1].source == .wcl && f[1].subject == "peer2" && f[1].position == SIMD2(5, 6))
    }

    @Test func badRowNamesLine() {
        let csv = "t,source,e,n\n1,gnss,0,0\n2,gnss,abc,0\n"
        do {
            _ = try EstimatesFile.parse(csv: csv, file: "e.csv", frame: frame)
            Issue.record("expected an error")
        } catch let e as TraceDataError {
            #expect(e.line == 3 && e.description.hasPrefix("e.csv:3:"))
        } catch { Issue.record("unexpected \(error)") }
    }
}
