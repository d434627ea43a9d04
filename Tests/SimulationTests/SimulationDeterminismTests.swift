import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport


@Suite struct SimulationDeterminismTests {
    static let small = """
    name: tiny
    seed: 5
    duration_s: 20
    origin: {lat: 48.0, lon: 11.0, h: 500}
    phones:
      - id: phone
        path: {mode: walk, loop: true, waypoints: [[0, 0], [20, 0], [20, 10]]}
    gnss: {profile: urban-canyon}
    imu: {rate_hz: 20}
    wifi:
      aps: [{e: 0, n: 5}, {e: 20, n: 5}, {e: 10, n: -5}]
    """

    func run(_ yaml: String, seed: UInt64?, name: String) throws -> Data {
        let sc = try Scenario.parse(yaml: yaml)
        let u = PackagePaths.temporaryFolder(name).appendingPathComponent("trace.jsonl")
        _ = try Simulator.run(scenario: sc, options: SimulationOptions(seed: seed), trace: u)
        return try Data(contentsOf: u)
    }

    @Test func sameSeedGivesIdenticalBytes() throws {
        let a = try run(Self.small, seed: nil, name: "a"), b = try run(Self.small, seed: nil, name: "b")
        #expect(a.count > 1000)
        #expect(a == b)
    }

    @Test func otherSeedDiffers() throws {
        let a = try run(Self.small, seed: 5, name: "c"), b = try run(Self.small, seed: 6, name: "d")
        #expect(a != b)
    }

    @Test func unknownKeyIsAnError() {
        #expect(throws: ScenarioError.self) { try Scenario.parse(yaml: Self.small + "\nwifi_typo: 1\n") }
        let bad = Self.small.replacingOccurrences(of: "profile: urban-canyon", with: "profile: urban-canyon, rate: 2")
        #expect(throws: ScenarioError.self) { try Scenario.parse(yaml: bad) }
    }

    /// docs/scenario-template.yaml documents every key and is itself a valid scenario that
    /// produces every event type.
    @Test func templateIsAValidScenario() throws {
        let sc = try Scenario.load(url: PackagePaths.root.appendingPathComponent("docs/scenario-template.yaml"))
        let u = PackagePaths.temporaryFolder("template").appendingPathComponent("trace.jsonl")
        let s = try Simulator.run(scenario: sc, options: SimulationOptions(duration: 40), trace: u,
                                  reference: PackagePaths.temporaryFolder("template").appendingPathComponent("reference.json"))
        for t in ["gt", "gnss", "wifi", "cell", "acc", "gyro", "mag", "acoustic", "photo"] {
            #expect((s.byType[t] ?? 0) > 0, "no \(t) events")
        }
    }

    /// The committed rural-cell trace is reproduced byte for byte from its scenario and seed.
    @Test func committedRuralCellTraceRegenerates() throws {
        let dir = PackagePaths.root.appendingPathComponent("Traces/rural-cell")
        let committed = try Data(contentsOf: dir.appendingPathComponent("trace.jsonl"))
        let committedRef = try Data(contentsOf: dir.appendingPathComponent("reference.json"))
        let sc = try Scenario.load(url: dir.appendingPathComponent("scenario.yaml"))
        let out = PackagePaths.temporaryFolder("rural")
        _ = try Simulator.run(scenario: sc, trace: out.appendingPathComponent("trace.jsonl"),
                              reference: out.appendingPathComponent("reference.json"))
        #expect(try Data(contentsOf: out.appendingPathComponent("trace.jsonl")) == committed)
        #expect(try Data(contentsOf: out.appendingPathComponent("reference.json")) == committedRef)
    }
}
