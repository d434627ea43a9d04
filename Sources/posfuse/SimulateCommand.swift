import ArgumentParser
import Foundation
import Replay

/// `posfuse simulate SCENARIO -o trace.jsonl [--seed N]`: generate a synthetic trace with ground
/// truth from a scenario file (docs/simulator.md, docs/scenario-template.yaml).
struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate a synthetic trace (with ground truth) from a scenario file.",
        discussion: """
        SCENARIO is a YAML scenario file or a Traces/NAME/ folder holding scenario.yaml.
        The same scenario and seed always give byte-identical output. The reference side file
        (AP map, cell DB, beacons, landmarks) is written as reference.json next to the trace
        unless --reference is given or --no-reference is set.
        Long benchmark trace (1 h, > 1,000,000 events):
          posfuse simulate Traces/open-street/scenario.yaml --duration 3600 \\
            -o /tmp/long.jsonl
        """.reflowed)

    @Argument(help: "Scenario YAML file, or a folder containing scenario.yaml.")
    var scenario: String

    @Option(name: [.short, .customLong("output")], help: "Output trace (JSON Lines).")
    var output: String

    @Option(help: "Random seed (default: the scenario's `seed`).")
    var seed: UInt64?

    @Option(help: "Override the simulated duration, s.")
    var duration: Double?

    @Option(name: .customLong("imu-rate"), help: "Override the IMU sample rate, Hz.")
    var imuRate: Double?

    @Option(help: "Where to write the reference side file (default: reference.json next to the trace).")
    var reference: String?

    @Flag(name: .customLong("no-reference"), help: "Do not write the reference side file.")
    var noReference = false

    @Flag(name: [.short, .long], help: "Print nothing on success.")
    var quiet = false

    func validate() throws {
        if let d = duration, !(d > 0) { throw ValidationError("--duration must be > 0") }
        if let r = imuRate, !(r > 0) { throw ValidationError("--imu-rate must be > 0") }
    }

    func run() throws {
        var url = URL(fileURLWithPath: scenario)
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir), isDir.boolValue {
            url = url.appendingPathComponent("scenario.yaml")
        }
        guard FileManager.default.fileExists(atPath: url.path) else { throw ValidationError("no such scenario file \(url.path)") }
        // Scenario errors (file:line: key: reason) and bad data exit 65, I/O errors 74.
        let (sc, s, out, ref) = try withExitCodes { () throws -> (Scenario, SimulationSummary, URL, URL?) in
            let sc = try Scenario.load(url: url)
            let out = URL(fileURLWithPath: output)
            try FileManager.default.createDirectory(at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
            let ref: URL? = noReference ? nil
                : reference.map { URL(fileURLWithPath: $0) } ?? out.deletingLastPathComponent().appendingPathComponent("reference.json")
            let s = try Simulator.run(scenario: sc, options: SimulationOptions(seed: seed, duration: duration, imuRate: imuRate),
                                      trace: out, reference: ref)
            return (sc, s, out, ref)
        }
        if !quiet {
            let types = s.byType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            print("\(sc.name): \(s.events) events over \(String(format: "%.1f", s.duration)) s (seed \(s.seed)) → \(out.path)")
            print("  \(types)")
            if let r = ref { print("  reference → \(r.path)") }
        }
    }
}
