import Foundation
import Positioning
import Storage

// Storing scored replays in the results database: the scoring side of `ResultStore`
// (Storage knows rows, not scores; this file maps one onto the other).

extension ResultStore.RunWriter {
    /// Inserts one scored estimate of the run being recorded.
    public func insert(_ s: ScoredEstimate) throws {
        let f = s.fix, c = f.covariance
        try insert(source: f.source.rawValue, subject: f.subject, time: f.time, position: f.position,
                   covariance: (c.ee, c.en, c.nn), error: s.error, truth: s.truth, nees: s.nees,
                   unscored: s.unscored?.rawValue)
    }
}

extension ResultStore {
    /// Records one run in one transaction: inserts the run, calls `body` with a writer for
    /// its estimates (hook it to `Replayer.onEstimate`), then stores the scores of the
    /// result and commits. If anything throws, the transaction is rolled back and the
    /// error rethrown: no part of the run remains. Returns the run id and the result.
    /// `then` runs last in the same transaction with the run id (e.g. `posfuse sweep` adds
    /// the run's grid point there, so a run and its point are stored together or not at all).
    public func record(_ info: RunInfo, then: RunHook? = nil,
                       _ body: (RunWriter) throws -> ReplayResult) throws -> (run: Int64, result: ReplayResult) {
        try recordRun(info, summary: { r in
            RunSummary(events: r.stats.events, skipped: r.stats.skippedTotal, scores: Self.scoreRows(r.scores))
        }, then: then, body)
    }

    /// The stored metric rows of a trace's scores: every metric of `ScoreReport.metrics`
    /// per source key, plus failures as `failure:<reason>` per source.
    static func scoreRows(_ s: TraceScores) -> [(source: String, metric: String, value: Double)] {
        var rows: [(source: String, metric: String, value: Double)] = []
        for src in s.sources {
            for (k, v) in ScoreReport.metrics(src) { rows.append((src.key, k, v)) }
        }
        for (src, reasons) in s.failures.sorted(by: { $0.key < $1.key }) {
            for (r, n) in reasons.sorted(by: { $0.key < $1.key }) { rows.append((src, "failure:" + r, Double(n))) }
        }
        return rows
    }
}
