import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse calibrate`: fit corrections of reported uncertainties against ground truth.
struct Calibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fit uncertainty calibrations against ground truth (training data only).",
        subcommands: [CalibrateGNSS.self, CalibrateFingerprint.self]
    )
}

/// The training inputs of `posfuse calibrate` subcommands: recordings, or scenario folders with
/// `--runs` (seeded simulator runs).
struct TrainingInputs: ParsableArguments {
    @Argument(help: "Training traces (files or folders), or scenario folders with --runs.") var inputs: [String]
    @Option(help: "Simulate each input (a folder with scenario.yaml) this many times instead of replaying it.") var runs: Int?
    @Option(name: .customLong("first-seed"), help: "Seed of the first simulated run.") var firstSeed: UInt64 = 1001
    @Flag(name: .customLong("no-progress"), help: "No progress line on stderr.") var noProgress = false

    func validate() throws {
        if let r = runs {
            guard r >= 1 else { throw ValidationError("--runs must be ≥ 1") }
            try requireScenarioFolders(inputs, note: " (needed with --runs)")
        }
    }

    /// Every input's samples, with a progress line unless `quiet`.
    func collect<Sample>(_ label: String, quiet: Bool, _ samples: (TraceLocation) throws -> [Sample]) throws -> [Sample] {
        let bar = Progress(label: label, total: Int64(inputs.count * (runs ?? 1)), enabled: !noProgress && !quiet)
        defer { bar.finish() }
        return try SimulatedRuns.collect(inputs: inputs, runs: runs, firstSeed: firstSeed,
                                         progress: { bar.update(completed: Int64($0)) }, samples)
    }
}

/// Where a `posfuse calibrate` subcommand puts its result: a pipeline file (`-o`) and stdout
/// (the same YAML, or `--json`).
struct CalibrationOutput: ParsableArguments {
    @Option(name: [.customShort("o"), .long], help: "Write the calibration as a pipeline file here.") var output: String?
    @Flag(help: "Machine-readable JSON on stdout.") var json = false

    /// The command line that fitted it, for the file's header comment.
    static func commandLine(_ subcommand: String) -> String {
        (["posfuse", "calibrate", subcommand] + CommandLine.arguments.dropFirst(3)).joined(separator: " ")
    }

    func emit(yaml: String, json object: () throws -> [String: Any]) throws {
        if let o = output { try yaml.write(toFile: o, atomically: true, encoding: .utf8) }
        if json {
            print(String(decoding: try JSONSerialization.data(withJSONObject: try object(), options: [.sortedKeys]), as: UTF8.self))
        } else {
            print(yaml, terminator: "")
        }
    }
}

/// `posfuse calibrate gnss`: the phone's reported GNSS accuracy against truth (docs/consistency.md).
struct CalibrateGNSS: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gnss",
        abstract: "Calibrate the phone's reported GNSS accuracy against ground truth.",
        discussion: """
        Replays the training recordings (traces with ground truth), or with --runs simulates each
        scenario folder with seeds S, S+1, …, and collects every gnss fix with its reported
        accuracy r and its NEES under the uncalibrated covariance. Fixes are cut into bins of r
        with equal counts; per bin α² = median NEES / (2 ln 2) (the median of χ²₂), so multipath
        outliers (the filters gate them) do not set the scale. Writes a pipeline file whose gnss
        stage scales σ by α(r): use it with --pipeline, or copy its two keys into yours.

        Calibrate on recordings (or seeds) other than those you evaluate on.

        Examples:
          posfuse calibrate gnss Traces/urban-canyon --runs 30 --first-seed 1001 -o urban-gnss.yaml
          posfuse evaluate consistency Traces/urban-canyon --runs 50 --pipeline urban-gnss.yaml
          posfuse calibrate gnss drive1/ drive2/ --json
        """.reflowed
    )

    @OptionGroup var training: TrainingInputs
    @Option(name: .customLong("min-per-bin"), help: "Fewest fixes per bin.") var minPerBin: Int = 200
    @Option(name: .customLong("max-bins"), help: "Most bins.") var maxBins: Int = 8
    @Option(help: "Pipeline file whose gnss accuracy_confidence applies (other options are ignored).") var pipeline: String?
    @OptionGroup var result: CalibrationOutput

    func validate() throws {
        guard minPerBin >= 1, maxBins >= 1 else { throw ValidationError("--min-per-bin and --max-bins must be ≥ 1") }
    }

    func run() throws {
        try withExitCodes {
            let stages = try pipeline.map { try loadPipelineStages($0) } ?? [:]
            let samples = try training.collect("calibrate gnss", quiet: result.json) { try GNSSCalibrationFit.samples(of: $0, stages: stages) }
            guard let (calibration, bins) = GNSSAccuracyCalibration.fit(samples, minPerBin: minPerBin, maxBins: maxBins) else {
                printError("calibrate gnss: \(samples.count) gnss fixes with ground truth, fewer than --min-per-bin \(minPerBin)")
                throw ExitCode(ExitStatus.dataError)
            }
            try result.emit(yaml: GNSSCalibrationFit.pipelineYAML(calibration, bins: bins, command: CalibrationOutput.commandLine("gnss"))) {
                ["fixes": samples.count, "edges_m": calibration.edges, "factors": calibration.factors,
                 "bins": try JSONSerialization.jsonObject(with: try JSONEncoder().encode(bins))]
            }
        }
    }
}

/// `posfuse calibrate fingerprint`: the fingerprint likelihood's σ against ground truth (docs/radio.md).
struct CalibrateFingerprint: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fingerprint",
        abstract: "Calibrate the fingerprint stage's σ (dB) against ground truth.",
        discussion: """
        Replays the training recordings (traces with ground truth and a reference.json that
        carries a fingerprint map), or with --runs simulates each scenario folder with seeds
        S, S+1, …, matches every WiFi scan against the map, and finds the σ at which the fixes'
        average NEES is 2 (the χ²₂ mean the filters expect of their inputs). Writes a pipeline
        file with that sigma_db. The σ belongs to a site and its survey: calibrate per site, on
        recordings (or seeds) other than those you evaluate on.

        Examples:
          posfuse calibrate fingerprint Traces/crowd-peers --runs 30 --first-seed 1001 -o site.yaml
          posfuse evaluate consistency Traces/crowd-peers --runs 50 --pipeline site.yaml
        """.reflowed
    )

    @OptionGroup var training: TrainingInputs
    @Option(help: "Pipeline file whose fingerprint options (other than sigma_db) apply.") var pipeline: String?
    @OptionGroup var result: CalibrationOutput

    func run() throws {
        try withExitCodes {
            let stages = try pipeline.map { try loadPipelineStages($0) } ?? [:]
            let samples = try training.collect("calibrate fingerprint", quiet: result.json) { try FingerprintCalibrationFit.samples(of: $0, stages: stages) }
            guard let r = FingerprintCalibration.fit(samples), r.count > 0 else {
                printError("calibrate fingerprint: no WiFi scan with ground truth and a fingerprint map in the inputs")
                throw ExitCode(ExitStatus.dataError)
            }
            try result.emit(yaml: FingerprintCalibrationFit.pipelineYAML(r, command: CalibrationOutput.commandLine("fingerprint"))) {
                ["scans": r.count, "sigma_db": r.sigma, "anees": r.anees, "inside95": r.inside95]
            }
        }
    }
}
