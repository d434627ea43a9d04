import ArgumentParser
import Foundation
import Positioning
import Replay

/// Replay traces (files, scenario folders or folders of them) into a `RunResults` for
/// regress/report/compare: the same replay and scoring as `posfuse replay` (`ReplayJob`,
/// `Replayer`, `Scorer`), keeping the per-epoch samples. `progress` draws a progress line
/// on a terminal. A bad `--pipeline` file is a `ResultsDataError` (exit 65).
func replaySuite(_ paths: [String], pipeline: String?, strict: Bool, progress: Bool) throws -> RunResults {
    let job = try ReplayJob(paths: paths, pipeline: pipeline, strict: strict, epochs: true, db: nil)
    let results = try job.run(progress: progress)
    return ScoreReport.runResults(results, label: paths.joined(separator: " ") + (pipeline.map { " (\($0))" } ?? ""))
}

/// A run for compare/report: a `posfuse replay --json` output (`.json`), a results
/// database (`posfuse replay --db`, every run in it), else a trace, scenario folder or
/// folder of traces replayed with `pipeline`.
func loadOrReplay(_ path: String, pipeline: String?, strict: Bool = false, progress: Bool = false) throws -> RunResults {
    if path.hasSuffix(".json") {
        guard FileManager.default.fileExists(atPath: path) else { throw ResultsDataError(file: path, reason: "no such file") }
        return try RunResults.load(url: URL(fileURLWithPath: path))
    }
    if SQLiteFile.isDatabase(path: path) {
        do { return try ResultStore(path: path).runResults() } catch {
            throw ResultsDataError(file: path, reason: "cannot read results database: \(error)")
        }
    }
    return try replaySuite([path], pipeline: pipeline, strict: strict, progress: progress)
}
