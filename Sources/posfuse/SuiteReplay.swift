import ArgumentParser
import Foundation
import Positioning
import Replay

/// Replay traces (files, scenario folders or folders of them) into a `RunResults` for
/// regress/report/compare. `progress` draws a progress line on a terminal.
func replaySuite(_ paths: [String], pipeline: String?, strict: Bool, progress: Bool) throws -> RunResults {
    var locations: [TraceLocation] = []
    for p in paths { locations += try TraceLocation.resolveAll(p) }
    let options = try pipeline.map { try PipelineConfig.load(url: URL(fileURLWithPath: $0)) } ?? [:]
    do {
        return try SuiteReplay(options: options, mode: strict ? .strict : .lenient)
            .run(locations, label: paths.joined(separator: " ") + (pipeline.map { " (\($0))" } ?? ""), progress: progress)
    } catch let e as ConfigurationError {
        throw ResultsDataError(file: pipeline ?? "pipeline", reason: e.description)
    }
}

/// A run for compare/report: a `posfuse replay --json` output (`.json`), else a trace,
/// scenario folder or folder of traces replayed with `pipeline`.
func loadOrReplay(_ path: String, pipeline: String?, strict: Bool = false, progress: Bool = false) throws -> RunResults {
    if path.hasSuffix(".json") {
        guard FileManager.default.fileExists(atPath: path) else { throw ResultsDataError(file: path, reason: "no such file") }
        return try RunResults.load(url: URL(fileURLWithPath: path))
    }
    return try replaySuite([path], pipeline: pipeline, strict: strict, progress: progress)
}
