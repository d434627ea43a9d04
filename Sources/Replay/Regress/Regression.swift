import Foundation
import TraceIO

/// The verdict on one metric of one trace × source against the baseline.
public struct RegressionFinding: Sendable, Equatable {
    public enum Status: String, Sendable {
        /// Within tolerance.
        case ok
        /// Worse than the baseline by more than the tolerance (a failure).
        case regressed
        /// The baseline has it but the run does not (a failure).
        case missing
        /// Better than the baseline by more than the tolerance (informational).
        case improved
        /// Recorded but not checked (no tolerance), or new in the run.
        case unchecked
    }
    public var trace: String
    public var source: String
    public var metric: String
    public var old: Double?
    public var new: Double?
    public var allowance: Double?
    public var status: Status
    public var isFailure: Bool { status == .regressed || status == .missing }

    public var message: String {
        switch status {
        case .missing where new == nil && old != nil:
            return "\(trace) \(source) \(metric): missing from the run (baseline \(fmt4(old)))"
        default:
            let d = (old != nil && new != nil) ? " (Δ \(fmt4(new! - old!)), allowed \(fmt4(allowance)))" : ""
            return "\(trace) \(source) \(metric): \(status.rawValue) \(fmt4(old)) → \(fmt4(new))\(d)"
        }
    }
}

/// The outcome of `posfuse regress`: every checked metric of every replayed trace × source.
public struct RegressionReport: Sendable {
    public var findings: [RegressionFinding]
    /// Replayed traces that the baseline does not know (not failures; run --update-baseline).
    public var tracesNotInBaseline: [String]
    /// Replayed trace × source pairs ("trace/source") of known traces that the baseline lacks
    /// (a new estimator: not failures; run --update-baseline).
    public var sourcesNotInBaseline: [String] = []
    public var failures: [RegressionFinding] { findings.filter(\.isFailure) }
    public var passed: Bool { failures.isEmpty }

    /// Check a run against a baseline. Only traces present in the run are checked, so a
    /// subset of the suite can be replayed; a source or checked metric that the baseline
    /// has and the run lacks is a failure (`missing`).
    public static func check(_ run: RunResults, against b: Baseline) -> RegressionReport {
        var findings: [RegressionFinding] = []
        var unknown: [String] = [], newSources: [String] = []
        for t in run.traces {
            guard let entries = b.traces[t.trace] else { unknown.append(t.trace); continue }
            let names = RunComparison.sortedSources(Set(entries.keys).union(t.sources.map(\.source)))
            for s in names where entries[s] == nil { newSources.append("\(t.trace)/\(s)") }
            for s in names {
                let old = entries[s]?.metrics ?? [:]
                let new = t.source(s)?.metrics ?? [:]
                for m in MetricOrder.sorted(Set(old.keys).union(new.keys)) {
                    let tol = entries[s] == nil ? nil : b.tolerance(trace: t.trace, source: s, metric: m)
                    var f = RegressionFinding(trace: t.trace, source: s, metric: m, old: old[m], new: new[m],
                                              allowance: nil, status: .unchecked)
                    if let tol, let o = old[m] {
                        f.allowance = tol.allowance(old: o)
                        if let n = new[m] {
                            let w = tol.worsening(old: o, new: n)
                            let a = f.allowance! + 1e-12
                            f.status = w > a ? .regressed : (-w > a && tol.better != .both ? .improved : .ok)
                        } else {
                            f.status = .missing
                        }
                    }
                    findings.append(f)
                }
            }
        }
        return RegressionReport(findings: findings, tracesNotInBaseline: unknown, sourcesNotInBaseline: newSources)
    }

    /// Human-readable summary: failures first, then improvements, then a count line.
    public func summary() -> String {
        var s = ""
        for f in failures { s += "REGRESSION " + f.message + "\n" }
        for f in findings where f.status == .improved { s += "improved   " + f.message + "\n" }
        for t in tracesNotInBaseline { s += "note: trace \(t) is not in the baseline (run with --update-baseline)\n" }
        for p in sourcesNotInBaseline { s += "note: \(p) is not in the baseline (new source; run with --update-baseline)\n" }
        let checked = findings.filter { $0.status != .unchecked }.count
        let pairs = Set(findings.map { "\($0.trace)\u{0}\($0.source)" }).count
        s += passed
            ? "ok: \(checked) metrics of \(pairs) trace × source pairs within tolerance\n"
            : "FAILED: \(failures.count) of \(checked) metrics regressed\n"
        return s
    }

    /// JUnit XML: one `<testsuite>` per trace, one `<testcase>` per trace × source (named by
    /// the source, classname `posfuse.regress.<trace>`); a regressed case carries one
    /// `<failure>` whose message names the regressed metrics and whose text lists each one
    /// with old and new values. Unchanged sources are passing cases.
    public func junit() -> String {
        var byTrace: [String: [String: [RegressionFinding]]] = [:]
        var traceOrder: [String] = []
        for f in findings {
            if byTrace[f.trace] == nil { traceOrder.append(f.trace) }
            byTrace[f.trace, default: [:]][f.source, default: []].append(f)
        }
        let totalCases = byTrace.values.reduce(0) { $0 + $1.count }
        let totalFailed = byTrace.values.reduce(0) { $0 + $1.values.filter { $0.contains(where: \.isFailure) }.count }
        var x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        x += "<testsuites name=\"posfuse regress\" tests=\"\(totalCases)\" failures=\"\(totalFailed)\" errors=\"0\">\n"
        for t in traceOrder {
            let sources = byTrace[t]!
            let names = RunComparison.sortedSources(Set(sources.keys))
            let failed = sources.values.filter { $0.contains(where: \.isFailure) }.count
            x += "  <testsuite name=\"\(XMLText.escape(t))\" tests=\"\(names.count)\" failures=\"\(failed)\" errors=\"0\" skipped=\"0\">\n"
            for s in names {
                let fs = sources[s]!
                x += "    <testcase classname=\"posfuse.regress.\(XMLText.escape(t))\" name=\"\(XMLText.escape(s))\" time=\"0\""
                let bad = fs.filter(\.isFailure)
                x += ">\n"
                if !bad.isEmpty {
                    let msg = "\(s) regressed on \(t): " + bad.map(\.metric).joined(separator: ", ")
                    x += "      <failure type=\"AccuracyRegression\" message=\"\(XMLText.escape(msg))\">"
                    x += bad.map { XMLText.escape($0.message) }.joined(separator: "\n")
                    x += "</failure>\n"
                }
                // Every metric, baseline → run, so the CI page shows the numbers of passing cases too.
                let lines = fs.map { f in "\(f.metric): \(fmt4(f.old)) → \(fmt4(f.new)) [\(f.status.rawValue)]" }
                x += "      <system-out>\(XMLText.escape(lines.joined(separator: "\n")))</system-out>\n    </testcase>\n"
            }
            x += "  </testsuite>\n"
        }
        x += "</testsuites>\n"
        return x
    }
}


extension RegressionReport {
    /// JSON: {"passed": Bool, "failures": N, "findings": [{trace, source, metric, old, new, allowance, status}],
    /// "traces_not_in_baseline": [...]}.
    public func json() -> Data {
        let rows: [[String: Any]] = findings.map { f in
            ["trace": f.trace, "source": f.source, "metric": f.metric, "old": f.old ?? NSNull(), "new": f.new ?? NSNull(),
             "allowance": f.allowance ?? NSNull(), "status": f.status.rawValue]
        }
        let o: [String: Any] = ["passed": passed, "failures": failures.count, "findings": rows,
                                "traces_not_in_baseline": tracesNotInBaseline, "sources_not_in_baseline": sourcesNotInBaseline]
        return (try? JSONSerialization.data(withJSONObject: o, options: [.prettyPrinted, .sortedKeys])) ?? Data()
    }
}
