import Foundation
import Positioning
import Simulation
import TraceIO

/// Seeded Monte Carlo runs of a simulator scenario, each written to a temporary trace folder
/// (trace.jsonl + reference.json, removed afterwards) and handed to `body` for replay: run k
/// (0-based) uses seed `firstSeed + k`, the same trace as `posfuse simulate … --seed`.
public enum SimulatedRuns {
    public static func forEach(scenarioFolder: URL, runs: Int, firstSeed: UInt64, duration: Double? = nil,
                        _ body: (_ run: Int, _ trace: TraceLocation) throws -> Void) throws {
        let scenario = try Scenario.load(url: scenarioFolder.appendingPathComponent("scenario.yaml"))
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-runs-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        for k in 0..<runs {
            let trace = work.appendingPathComponent("trace.jsonl"), ref = work.appendingPathComponent("reference.json")
            _ = try Simulator.run(scenario: scenario, options: SimulationOptions(seed: firstSeed + UInt64(k), duration: duration),
                                  trace: trace, reference: ref)
            try body(k, try TraceLocation.resolve(work.path))
        }
    }

    /// Training samples of each input (`posfuse calibrate …`): with `runs`, `runs` seeded runs of
    /// the scenario folder (seeds `firstSeed`…); without, the recording itself. `progress` gets
    /// the number of inputs × runs done.
    public static func collect<Sample>(inputs: [String], runs: Int?, firstSeed: UInt64, progress: ((Int) -> Void)? = nil,
                                       _ samples: (TraceLocation) throws -> [Sample]) throws -> [Sample] {
        var out: [Sample] = []
        for (i, input) in inputs.enumerated() {
            if let r = runs {
                try forEach(scenarioFolder: URL(fileURLWithPath: input), runs: r, firstSeed: firstSeed) { k, location in
                    out += try samples(location)
                    progress?(i * r + k + 1)
                }
            } else {
                out += try samples(try TraceLocation.resolve(input))
                progress?(i + 1)
            }
        }
        return out
    }
}
