import CGSL
import Foundation
import Positioning
import Storage
import Regress
import TraceIO

/// The summary of a study's stored runs (`docs/sweep.md`, "Summary"):
///
/// * per input × source × grid point × metric: the mean over the input's runs and a
///   confidence interval. A simulated input has one run per seed: the interval is Student's
///   t interval of the mean, x̄ ± t(1−α/2, n−1)·s/√n over the n seeds (none for n = 1). A
///   recording has one run: the interval is the moving-block bootstrap percentile interval
///   of the metric over its epochs (`BlockBootstrap.intervals`), i.e. the spread another
///   realisation of the same error process would give.
/// * the difference of each point from the baseline point, with an interval: over seeds the
///   paired t interval of the per-seed differences dₛ = mₛ(point) − mₛ(baseline) (the same
///   seed is the same simulated walk, so the walk's difficulty cancels); on a recording the
///   block-bootstrap interval of `posfuse compare` (`BlockBootstrap.differenceIntervals`).
///   An interval that excludes 0 marks a difference larger than the noise.
/// * the best point per input × source × metric: the lowest mean for error metrics (`*_m`),
///   the highest for availability and count, the closest to 0.95 for inside95 and to 2 for
///   anees (the mean of a χ²₂ NEES).
///
/// Everything is computed from the database in the plan's canonical order with a fixed
/// bootstrap seed, so the summary does not depend on how or where the runs were executed.
public struct SweepSummary: Sendable {
    public struct Cell: Sendable, Equatable {
        public var input: String
        public var source: String
        public var point: Int
        public var metric: String
        /// Runs that have the metric.
        public var n: Int
        public var mean: Double
        public var low: Double?
        public var high: Double?
        /// Mean difference from the baseline point (nil for the baseline itself or without data).
        public var diff: Double?
        public var diffLow: Double?
        public var diffHigh: Double?
        /// Whether the difference's interval excludes 0.
        public var significant: Bool {
            guard let l = diffLow, let h = diffHigh, let d = diff, d != 0 else { return false }
            return l > 0 || h < 0
        }
    }

    public struct Best: Sendable, Equatable {
        public var input: String
        public var source: String
        public var metric: String
        public var point: Int
        public var mean: Double
    }

    public let plan: SweepPlan
    public var cells: [Cell]
    public var best: [Best]
    public var stored: Int
    public var missing: Int
    public var confidence: Double

    /// Computes the summary from the runs of `plan` stored in `store`.
    public static func compute(plan: SweepPlan, store: SweepStore, resamples: Int = 1000, seed: UInt64 = 1) throws -> SweepSummary {
        let study = plan.study
        let ids = try store.storedKeys()
        let bootstrap = BlockBootstrap(resamples: resamples, seed: seed, confidence: study.confidence)
        var cells: [Cell] = []
        var storedCount = 0
        for (inputIndex, input) in study.inputs.enumerated() {
            let runs = plan.runs.filter { $0.input == inputIndex }
            // scores[point][seed] = source → metric → value
            var scores: [Int: [UInt64?: [String: [String: Double]]]] = [:]
            var epochs: [Int: [String: [EpochSample]]] = [:]
            var seenSources = Set<String>()
            let isRecording: Bool
            if case .recording = input.kind { isRecording = true } else { isRecording = false }
            for r in runs {
                guard let id = ids[r.key] else { continue }
                storedCount += 1
                let s = try store.results.scores(run: id)
                scores[r.point, default: [:]][r.seed] = s
                seenSources.formUnion(s.keys.filter { key in s[key]!.keys.contains { !$0.hasPrefix("failure:") } })
                if isRecording {
                    let rr = try store.results.runResults(runs: [id])
                    for src in rr.traces.first?.sources ?? [] where src.epochs != nil {
                        epochs[r.point, default: [:]][src.source] = src.epochs!
                    }
                }
            }
            let sources = study.sources.isEmpty ? orderedSources(seenSources) : study.sources
            let seeds = input.seeds
            for source in sources {
                // Bootstrap intervals of a recording, per point (all metrics at once).
                var own: [Int: [String: BlockBootstrap.Interval]] = [:]
                var fromBase: [Int: [String: BlockBootstrap.Interval]] = [:]
                if isRecording {
                    let base = epochs[plan.baselinePoint]?[source]
                    for pt in plan.points {
                        guard let e = epochs[pt.index]?[source] else { continue }
                        own[pt.index] = bootstrap.intervals(e)
                        if pt.index != plan.baselinePoint, let base { fromBase[pt.index] = bootstrap.differenceIntervals(base, e) }
                    }
                }
                for metric in study.metrics {
                    for pt in plan.points {
                        let values: [(UInt64?, Double)] = seeds.compactMap { sd in
                            guard let v = scores[pt.index]?[sd]?[source]?[metric], v.isFinite else { return nil }
                            return (sd, v)
                        }
                        if values.isEmpty { continue }
                        var cell = Cell(input: input.label, source: source, point: pt.index, metric: metric, n: values.count,
                                        mean: values.map(\.1).reduce(0, +) / Double(values.count))
                        if isRecording {
                            if let i = own[pt.index]?[metric] { cell.low = i.low; cell.high = i.high }
                            if pt.index != plan.baselinePoint, let bv = scores[plan.baselinePoint]?[nil]?[source]?[metric] {
                                cell.diff = cell.mean - bv
                                if let i = fromBase[pt.index]?[metric] { cell.diffLow = i.low; cell.diffHigh = i.high }
                            }
                        } else {
                            if let (lo, hi) = tInterval(values.map(\.1), confidence: study.confidence) { cell.low = lo; cell.high = hi }
                            if pt.index != plan.baselinePoint {
                                let diffs: [Double] = values.compactMap { sd, v in
                                    guard let b = scores[plan.baselinePoint]?[sd]?[source]?[metric], b.isFinite else { return nil }
                                    return v - b
                                }
                                if !diffs.isEmpty {
                                    cell.diff = diffs.reduce(0, +) / Double(diffs.count)
                                    if let (lo, hi) = tInterval(diffs, confidence: study.confidence) { cell.diffLow = lo; cell.diffHigh = hi }
                                }
                            }
                        }
                        cells.append(cell)
                    }
                }
            }
        }
        var best: [Best] = []
        var groups: [String: [Cell]] = [:]
        var order: [String] = []
        for c in cells {
            let k = "\(c.input)\u{1}\(c.source)\u{1}\(c.metric)"
            if groups[k] == nil { order.append(k) }
            groups[k, default: []].append(c)
        }
        for k in order {
            let g = groups[k]!
            if let b = g.min(by: { badness($0.metric, $0.mean) < badness($1.metric, $1.mean) || (badness($0.metric, $0.mean) == badness($1.metric, $1.mean) && $0.point < $1.point) }) {
                best.append(Best(input: b.input, source: b.source, metric: b.metric, point: b.point, mean: b.mean))
            }
        }
        return SweepSummary(plan: plan, cells: cells, best: best, stored: storedCount,
                            missing: plan.runs.count - storedCount, confidence: study.confidence)
    }

    /// Lower is better: the error metrics as they are, availability and count negated,
    /// inside95 and anees as the distance from their ideal (0.95, 2).
    public static func badness(_ metric: String, _ v: Double) -> Double {
        switch metric {
        case "availability", "count": return -v
        case "inside95": return abs(v - 0.95)
        case "anees": return abs(v - 2)
        default: return v
        }
    }

    /// Student's t interval of the mean (nil for fewer than 2 values).
    public static func tInterval(_ x: [Double], confidence: Double) -> (Double, Double)? {
        let n = x.count
        guard n >= 2 else { return nil }
        let m = x.reduce(0, +) / Double(n)
        let s2 = x.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(n - 1)
        let t = gsl_cdf_tdist_Pinv(1 - (1 - confidence) / 2, Double(n - 1))
        let h = t * (s2 / Double(n)).squareRoot()
        return (m - h, m + h)
    }

    static func orderedSources(_ s: Set<String>) -> [String] {
        var out: [String] = []
        for src in Source.allCases.map(\.rawValue) {
            if s.contains(src) { out.append(src) }
            if s.contains(src + ":object") { out.append(src + ":object") }
        }
        return out + s.subtracting(out).sorted()
    }

    // MARK: output

    static func num(_ x: Double?) -> String {
        guard let x else { return "–" }
        if x == x.rounded(), abs(x) < 1e9 { return String(Int(x)) }
        return String(format: "%.4g", x)
    }

    static func pad(_ s: String, _ w: Int) -> String { s.count >= w ? s + " " : s + String(repeating: " ", count: w - s.count) }

    /// Fixed-width text: one block per input × source, a row per grid point, a column per metric
    /// "mean [low, high]", then the difference from the baseline; the best points last.
    public func table() -> String {
        let pct = Int((confidence * 100).rounded())
        var out = "study \(plan.study.name): \(plan.points.count) grid point\(plan.points.count == 1 ? "" : "s") × \(plan.study.inputs.count) input\(plan.study.inputs.count == 1 ? "" : "s"), \(plan.runs.count) runs (\(stored) stored\(missing > 0 ? ", \(missing) MISSING" : ""))\n"
        out += "baseline: \(plan.pointLabel(plan.baselinePoint)); intervals \(pct)% (t over seeds; block bootstrap on a recording); * = difference from the baseline excludes 0\n"
        let labels = plan.points.map { plan.pointLabel($0.index) }
        let labelWidth = max(12, (labels.map(\.count).max() ?? 0) + 9)
        var keys: [String] = []
        var byKey: [String: [Cell]] = [:]
        for c in cells {
            let k = "\(c.input) / \(c.source)"
            if byKey[k] == nil { keys.append(k) }
            byKey[k, default: []].append(c)
        }
        for k in keys {
            let g = byKey[k]!
            let n = g.map(\.n).max() ?? 0
            out += "\n\(k) (\(n) run\(n == 1 ? "" : "s") per point)\n"
            let metrics = plan.study.metrics.filter { m in g.contains { $0.metric == m } }
            out += Self.pad("point", labelWidth)
            for m in metrics { out += Self.pad(m, 26) + Self.pad("Δ " + m, 28) }
            out += "\n"
            for pt in plan.points {
                let row = g.filter { $0.point == pt.index }
                if row.isEmpty { continue }
                out += Self.pad(labels[pt.index] + (pt.index == plan.baselinePoint ? " (base)" : ""), labelWidth)
                for m in metrics {
                    guard let c = row.first(where: { $0.metric == m }) else { out += Self.pad("–", 26) + Self.pad("", 28); continue }
                    let ci = c.low.map { "[\(Self.num($0)), \(Self.num(c.high))]" } ?? ""
                    out += Self.pad("\(Self.num(c.mean)) \(ci)", 26)
                    if let d = c.diff {
                        let dci = c.diffLow.map { " [\(Self.num($0)), \(Self.num(c.diffHigh))]" } ?? ""
                        out += Self.pad("\(d >= 0 ? "+" : "")\(Self.num(d))\(dci)\(c.significant ? " *" : "")", 28)
                    } else {
                        out += Self.pad("", 28)
                    }
                }
                out += "\n"
            }
        }
        if !best.isEmpty {
            out += "\nbest point per metric:\n"
            for b in best {
                out += "  \(b.input) / \(b.source) \(b.metric): \(plan.pointLabel(b.point)) (\(Self.num(b.mean)))\n"
            }
        }
        return out
    }

    /// JSON object: study, counts, baseline, parameters, cells and best points.
    public func json() -> [String: Any] {
        func pointObject(_ i: Int) -> [String: Any] {
            var o: [String: Any] = [:]
            for (p, v) in zip(plan.study.parameters, plan.points[i].values) { o[p.name] = Self.jsonValue(v) }
            return o
        }
        let cellsJSON: [[String: Any]] = cells.map { c in
            var o: [String: Any] = ["input": c.input, "source": c.source, "point": pointObject(c.point), "point_index": c.point,
                                    "metric": c.metric, "n": c.n, "mean": c.mean]
            o["ci_low"] = c.low ?? NSNull(); o["ci_high"] = c.high ?? NSNull()
            if c.point != plan.baselinePoint {
                o["diff"] = c.diff ?? NSNull(); o["diff_ci_low"] = c.diffLow ?? NSNull(); o["diff_ci_high"] = c.diffHigh ?? NSNull()
                o["diff_excludes_zero"] = c.significant
            }
            return o
        }
        return [
            "study": plan.study.name, "runs": plan.runs.count, "stored": stored, "missing": missing,
            "confidence": confidence,
            "parameters": plan.study.parameters.map { ["name": $0.name, "values": $0.values.map(Self.jsonValue)] as [String: Any] },
            "baseline": pointObject(plan.baselinePoint),
            "cells": cellsJSON,
            "best": best.map { ["input": $0.input, "source": $0.source, "metric": $0.metric, "point": pointObject($0.point), "mean": $0.mean] as [String: Any] },
        ]
    }

    static func jsonValue(_ v: ConfigValue) -> Any {
        switch v {
        case .number(let x): return x
        case .string(let s): return s
        case .bool(let b): return b
        case .list(let l): return l.map(jsonValue)
        case .map(let m): return m.mapValues(jsonValue)
        }
    }

    /// CSV (RFC 4180): one row per cell; the swept parameters as columns.
    public func csv() -> String {
        func field(_ s: String) -> String {
            s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) ? "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : s
        }
        func n(_ x: Double?) -> String { x.map { String($0) } ?? "" }
        var out = (["input", "source"] + plan.study.parameters.map(\.name) +
                   ["metric", "n", "mean", "ci_low", "ci_high", "diff", "diff_ci_low", "diff_ci_high", "diff_excludes_zero"])
            .map(field).joined(separator: ",") + "\r\n"
        for c in cells {
            var row = [c.input, c.source] + plan.points[c.point].values.map(SweepKeys.text)
            row += [c.metric, String(c.n), n(c.mean), n(c.low), n(c.high), n(c.diff), n(c.diffLow), n(c.diffHigh),
                    c.point == plan.baselinePoint ? "" : (c.significant ? "true" : "false")]
            out += row.map(field).joined(separator: ",") + "\r\n"
        }
        return out
    }
}
