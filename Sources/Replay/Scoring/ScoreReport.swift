import Foundation
import Positioning
import TraceIO

/// Renders replay results: the metric dictionary shared by JSON, the results database
/// and regress (`RunResults`), the `posfuse replay --json` object and the text table.
/// The JSON contract is documented in `docs/cli.md`.
public enum ScoreReport {
    /// Metric names in output order. Values that are undefined are left out, never NaN.
    public static let metricNames = ["count", "fixes", "availability", "mean_m", "median_m", "p75_m", "p90_m", "p95_m",
                                     "rmse_m", "max_m", "std_m", "bias_e_m", "bias_n_m", "inside95", "anees", "cov_count"]

    /// The numeric metrics of one source score (`metricNames`, those defined).
    public static func metrics(_ s: SourceScore) -> [(String, Double)] {
        var m: [(String, Double)] = [("count", Double(s.count)), ("fixes", Double(s.fixes))]
        if let a = s.availability { m.append(("availability", a)) }
        if let st = s.statistics {
            m += [("mean_m", st.mean), ("median_m", st.median), ("p75_m", st.p75), ("p90_m", st.p90), ("p95_m", st.p95),
                  ("rmse_m", st.rmse), ("max_m", st.max)]
            if let sd = st.std { m.append(("std_m", sd)) }
            m += [("bias_e_m", st.biasE), ("bias_n_m", st.biasN)]
            if let i = st.inside95 { m.append(("inside95", i)) }
            if let a = st.anees { m.append(("anees", a)) }
            m.append(("cov_count", Double(st.covarianceCount)))
        }
        return m
    }

    /// One entry of a trace's `scores` array.
    public static func json(_ s: SourceScore) -> [String: Any] {
        var o: [String: Any] = ["source": s.key, "subjects": s.group.rawValue]
        for (k, v) in metrics(s) { o[k] = (k == "count" || k == "fixes" || k == "cov_count") ? Int(v) as Any : v as Any }
        if let st = s.statistics {
            o["cdf_m"] = st.cdf.map { ["p": $0.p, "error_m": $0.error] }
        }
        o["unscored"] = s.unscored
        if let e = s.epochs { o["epochs"] = EpochSample.jsonColumns(e) }
        return o
    }

    /// One entry of the `traces` array.
    public static func json(_ r: ReplayResult) -> [String: Any] {
        [
            "trace": r.location.name,
            "path": r.location.trace.path,
            "events": r.stats.events,
            "scores": r.scores.sources.map(json),
            "failures": r.scores.failures,
            "skipped": r.stats.skippedTotal,
            "skipped_by_reason": r.stats.skipped,
            "unknown_types": r.stats.unknownTypes,
            "out_of_order": r.stats.outOfOrder,
            "truth_subjects": r.scores.truthSubjects,
            "truth_s": r.scores.truthSeconds,
        ].merging(locatedJSON(r)) { a, _ in a }
    }

    /// The trace's checkpoint scores (only when its truth is checkpoints) and its share located.
    static func locatedJSON(_ r: ReplayResult) -> [String: Any] {
        var o = r.located.jsonMembers
        if !r.scores.checkpoints.isEmpty { o["checkpoints"] = r.scores.checkpoints.map { $0.json() } }
        return o
    }

    /// The checkpoint table of a trace whose truth is checkpoints (`CheckpointScore`), "" otherwise.
    public static func checkpointTable(_ cps: [CheckpointScore], indent: String = "  ") -> String {
        guard !cps.isEmpty else { return "" }
        func f(_ x: Double?, _ d: Int = 2) -> String { x.map { String(format: "%.\(d)f", $0) } ?? "-" }
        let head = ["at checkpoints", "scored", "missed", "mean_m", "median_m", "p75_m", "p95_m", "inside95", "anees", "ipin_m", "floor_hit"]
        let rows = cps.map { c in
            [c.source.rawValue, "\(c.scored)", "\(c.missed)", f(c.statistics?.mean), f(c.statistics?.median), f(c.statistics?.p75),
             f(c.statistics?.p95), f(c.statistics?.inside95, 3), f(c.statistics?.anees), f(c.ipin), f(c.floorHitRate, 3)]
        }
        return aligned([head] + rows, indent: indent)
    }

    static func aligned(_ all: [[String]], indent: String) -> String {
        let widths = all[0].indices.map { c in all.map { $0[c].count }.max()! }
        var out = ""
        for row in all {
            out += indent + row.enumerated().map { c, v in
                c == 0 ? v.padding(toLength: widths[c], withPad: " ", startingAt: 0)
                       : String(repeating: " ", count: widths[c] - v.count) + v
            }.joined(separator: "  ") + "\n"
        }
        return out
    }

    /// The whole `posfuse replay --json` object: `traces`, the total `skipped`, and, for
    /// a single trace, its `scores`, `failures` and `unknown_types` at top level too.
    public static func json(_ results: [ReplayResult], extra: [String: Any] = [:]) -> [String: Any] {
        var o: [String: Any] = ["traces": results.map(json),
                                "skipped": results.reduce(0) { $0 + $1.stats.skippedTotal }]
        if results.count == 1, let t = o["traces"] as? [[String: Any]], let only = t.first {
            for k in ["scores", "failures", "unknown_types", "trace"] { o[k] = only[k] }
        }
        for (k, v) in extra { o[k] = v }
        return o
    }

    /// JSON text (sorted keys, one line).
    public static func jsonData(_ o: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])
    }

    /// The results as `RunResults` (regress, compare, report).
    public static func runResults(_ results: [ReplayResult], label: String) -> RunResults {
        RunResults(label: label, traces: results.map { r in
            TraceResult(trace: r.location.name, sources: r.scores.sources.map { s in
                SourceResult(source: s.key, metrics: Dictionary(metrics(s), uniquingKeysWith: { a, _ in a }), epochs: s.epochs)
            }, skipped: r.stats.skippedTotal)
        })
    }

    /// The human-readable table of one trace.
    public static func table(_ r: ReplayResult) -> String {
        var out = "\(r.location.name)  (\(r.stats.events) events"
        out += r.stats.skippedTotal > 0 ? ", \(r.stats.skippedTotal) skipped lines" : ", 0 skipped"
        if r.stats.unknownTotal > 0 { out += ", \(r.stats.unknownTotal) of unknown type" }
        out += ")\n"
        let head = ["source", "count", "avail", "mean_m", "median_m", "p75_m", "p95_m", "rmse_m", "max_m", "inside95", "anees"]
        var rows: [[String]] = []
        for s in r.scores.sources {
            func f(_ x: Double?, _ d: Int = 2) -> String { x.map { String(format: "%.\(d)f", $0) } ?? "-" }
            let st = s.statistics
            rows.append([s.key, "\(s.count)", f(s.availability, 3), f(st?.mean), f(st?.median), f(st?.p75), f(st?.p95),
                         f(st?.rmse), f(st?.max), f(st?.inside95, 3), f(st?.anees)])
        }
        if rows.isEmpty {
            out += "  (no estimates)\n"
        } else {
            let all = [head] + rows
            let widths = head.indices.map { c in all.map { $0[c].count }.max()! }
            for row in all {
                out += "  " + row.enumerated().map { c, v in
                    c == 0 ? v.padding(toLength: widths[c], withPad: " ", startingAt: 0)
                           : String(repeating: " ", count: widths[c] - v.count) + v
                }.joined(separator: "  ") + "\n"
            }
        }
        let unscored = r.scores.sources.filter { !$0.unscored.isEmpty }
        if !unscored.isEmpty {
            out += "  not scored: " + unscored.map { s in
                s.key + " " + s.unscored.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            }.joined(separator: "; ") + "\n"
        }
        out += checkpointTable(r.scores.checkpoints)
        if !r.scores.failures.isEmpty {
            out += "  failures: " + r.scores.failures.sorted { $0.key < $1.key }.map { src, reasons in
                src + " " + reasons.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            }.joined(separator: "; ") + "\n"
        }
        return out
    }
}
