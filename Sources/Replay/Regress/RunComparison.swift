import Foundation
import Positioning
import TraceIO

/// Canonical order of metric names in tables (unknown metrics follow, alphabetically).
public enum MetricOrder {
    public static let known = ["count", "availability", "mean_m", "median_m", "p75_m", "p90_m", "p95_m",
                               "rmse_m", "max_m", "inside95", "anees"]
    public static func sorted<S: Sequence>(_ names: S) -> [String] where S.Element == String {
        let set = Set(names)
        return known.filter(set.contains) + set.subtracting(known).sorted()
    }
}

/// One row of `posfuse compare`: a metric of a source on a trace in runs A and B, the
/// difference B − A and, when both runs carry per-epoch errors, its block-bootstrap
/// interval (`BlockBootstrap`).
public struct MetricComparison: Sendable, Equatable {
    public var trace: String
    public var source: String
    public var metric: String
    public var a: Double?
    public var b: Double?
    public var interval: BlockBootstrap.Interval?
    /// B − A; differences below 1e-12 of the values' magnitude (round-off) are exactly 0.
    public var difference: Double? {
        guard let a, let b else { return nil }
        let d = b - a
        return abs(d) <= 1e-12 * max(abs(a), abs(b)) ? 0 : d
    }
}

/// Two runs side by side, per trace, source and metric.
public struct RunComparison: Sendable {
    public var labelA: String
    public var labelB: String
    public var rows: [MetricComparison]

    /// Compare every trace and source present in either run. Traces are matched by name,
    /// sources by name; a side that lacks one shows as nil.
    public static func compare(_ a: RunResults, _ b: RunResults, bootstrap: BlockBootstrap) -> RunComparison {
        let a = a.withUniqueTraceNames(), b = b.withUniqueTraceNames()
        var rows: [MetricComparison] = []
        var traceNames = a.traces.map(\.trace)
        for t in b.traces.map(\.trace) where !traceNames.contains(t) { traceNames.append(t) }
        for t in traceNames {
            let ta = a.trace(t), tb = b.trace(t)
            let sourceNames = sortedSources(Set((ta?.sources.map(\.source) ?? []) + (tb?.sources.map(\.source) ?? [])))
            for s in sourceNames {
                let sa = ta?.source(s), sb = tb?.source(s)
                var intervals: [String: BlockBootstrap.Interval] = [:]
                if let ea = sa?.epochs, let eb = sb?.epochs {
                    intervals = bootstrap.differenceIntervals(ea, eb)
                }
                let keys = Set(sa.map { Array($0.metrics.keys) } ?? []).union(sb.map { Array($0.metrics.keys) } ?? [])
                let names = MetricOrder.sorted(keys)
                for m in names {
                    rows.append(MetricComparison(trace: t, source: s, metric: m, a: sa?.metrics[m], b: sb?.metrics[m],
                                                 interval: intervals[m]))
                }
            }
        }
        return RunComparison(labelA: a.label, labelB: b.label, rows: rows)
    }

    /// Sources in `Source` order (estimators, then filters), unknown names last.
    static func sortedSources(_ s: Set<String>) -> [String] {
        let order = Source.allCases.map(\.rawValue)
        return order.filter(s.contains) + s.subtracting(order).sorted()
    }

    /// Fixed-width text table, one block per trace × source.
    public func table() -> String {
        var out = "A = \(labelA)\nB = \(labelB)\n"
        var last = ""
        for r in rows {
            let key = "\(r.trace) / \(r.source)"
            if key != last {
                out += "\n\(key)\n"
                out += pad("metric", 14) + pad("A", 12) + pad("B", 12) + pad("B − A", 12) + "95% CI (block bootstrap)\n"
                last = key
            }
            var ci = ""
            if let i = r.interval {
                ci = "[\(fmt4(i.low)), \(fmt4(i.high))] ℓ=\(i.blockLength)\(i.paired ? " paired" : "")"
                ci += i.includesZero ? "" : "  *"
            }
            out += pad(r.metric, 14) + pad(fmt4(r.a), 12) + pad(fmt4(r.b), 12) + pad(fmt4(r.difference), 12) + ci + "\n"
        }
        let withCI = rows.filter { $0.interval != nil }
        let real = withCI.filter { !$0.interval!.includesZero && $0.difference != 0 }
        out += "\n\(real.count) of \(withCI.count) metric changes with an interval exclude 0"
        out += real.isEmpty ? ".\n" : " (*): the change is larger than the run-to-run noise.\n"
        return out
    }

    /// JSON: {"a": label, "b": label, "rows": [{trace, source, metric, a, b, diff, ci_low, ci_high, block_length, paired}]}.
    public func json() -> Data {
        let rowsJSON: [[String: Any]] = rows.map { r in
            var o: [String: Any] = ["trace": r.trace, "source": r.source, "metric": r.metric,
                                    "a": r.a ?? NSNull(), "b": r.b ?? NSNull(), "diff": r.difference ?? NSNull()]
            if let i = r.interval {
                o["ci_low"] = i.low; o["ci_high"] = i.high; o["block_length"] = i.blockLength; o["paired"] = i.paired
                o["ci_includes_zero"] = i.includesZero
            }
            return o
        }
        let obj: [String: Any] = ["a": labelA, "b": labelB, "confidence": 0.95, "rows": rowsJSON]
        return (try? JSONSerialization.data(withJSONObject: obj, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }
}

func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s + " " : s + String(repeating: " ", count: w - s.count) }

/// Compact number formatting for tables: 4 significant digits, "–" for a missing value.
func fmt4(_ x: Double?) -> String {
    guard let x else { return "–" }
    if x == x.rounded(), abs(x) < 1e9 { return String(Int(x)) }
    return String(format: "%.4g", x)
}

extension RunResults {
    /// The same run with repeated trace names (several runs of one trace in a results
    /// database) made unique as "name #2", "name #3", … in order, so each is compared with
    /// its counterpart in the other run.
    public func withUniqueTraceNames() -> RunResults {
        var seen: [String: Int] = [:]
        var r = self
        for i in r.traces.indices {
            let n = r.traces[i].trace
            seen[n, default: 0] += 1
            if seen[n]! > 1 { r.traces[i].trace = "\(n) #\(seen[n]!)" }
        }
        return r
    }
}
