import Foundation
import Yams
import TraceIO

/// How much a metric may worsen before `posfuse regress` calls it a regression.
///
/// A metric regresses when its worsening w exceeds max(`abs`, `rel` · |baseline|), where
/// w depends on which direction is `better`:
/// lower: w = new − old; higher: w = old − new; target t: w = |new − t| − |old − t|
/// (moving away from the ideal value, e.g. inside95 → 0.95, ANEES → 2); both: w = |new − old|.
/// A metric that improves by more than the same allowance is reported as improved (not a
/// failure) so the baseline can be refreshed.
public struct Tolerance: Sendable, Equatable {
    public enum Better: String, Sendable { case lower, higher, target, both }
    public var abs: Double
    public var rel: Double
    public var better: Better
    public var target: Double?
    public init(abs: Double = 0, rel: Double = 0, better: Better = .lower, target: Double? = nil) {
        self.abs = abs; self.rel = rel; self.better = better; self.target = target
    }

    /// The allowed worsening for a baseline value.
    public func allowance(old: Double) -> Double { max(abs, rel * Swift.abs(old)) }

    /// The worsening w (positive = worse) from `old` to `new`.
    public func worsening(old: Double, new: Double) -> Double {
        switch better {
        case .lower: return new - old
        case .higher: return old - new
        case .target:
            let t = target ?? 0
            return Swift.abs(new - t) - Swift.abs(old - t)
        case .both: return Swift.abs(new - old)
        }
    }

    /// Tolerances written into a new baseline file. `count` is recorded but not checked
    /// (availability covers lost fixes). Replays are deterministic, so any change is a code
    /// or configuration change; the allowances absorb harmless numerical changes only.
    public static let defaults: [String: Tolerance] = [
        "availability": Tolerance(abs: 0.02, better: .higher),
        "mean_m": Tolerance(abs: 0.05, rel: 0.05),
        "median_m": Tolerance(abs: 0.05, rel: 0.05),
        "p75_m": Tolerance(abs: 0.05, rel: 0.05),
        "p90_m": Tolerance(abs: 0.05, rel: 0.05),
        "p95_m": Tolerance(abs: 0.05, rel: 0.05),
        "rmse_m": Tolerance(abs: 0.05, rel: 0.05),
        "max_m": Tolerance(abs: 0.5, rel: 0.25),
        "inside95": Tolerance(abs: 0.03, better: .target, target: 0.95),
        "anees": Tolerance(abs: 0.2, rel: 0.2, better: .target, target: 2),
    ]
}

/// The committed accuracy baseline of a trace suite (`docs/regress.md`): per trace and
/// source the metric values of a reference run, and per metric a tolerance (file-wide,
/// overridable per trace × source).
public struct Baseline: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var metrics: [String: Double]
        /// Overrides of the file-wide tolerances for this trace × source.
        public var tolerances: [String: Tolerance]
        public init(metrics: [String: Double], tolerances: [String: Tolerance] = [:]) {
            self.metrics = metrics; self.tolerances = tolerances
        }
    }
    public static let formatName = "posfuse-baseline"

    public var tolerances: [String: Tolerance]
    /// trace → source → entry.
    public var traces: [String: [String: Entry]]

    public init(tolerances: [String: Tolerance] = Tolerance.defaults, traces: [String: [String: Entry]] = [:]) {
        self.tolerances = tolerances; self.traces = traces
    }

    /// The tolerance that applies to a metric of a trace × source (nil: not checked).
    public func tolerance(trace: String, source: String, metric: String) -> Tolerance? {
        traces[trace]?[source]?.tolerances[metric] ?? tolerances[metric]
    }

    // MARK: Reading

    /// Parse a baseline (YAML; JSON is valid YAML too). Errors name the offending key.
    public static func parse(_ text: String, file: String) throws -> Baseline {
        let root: Any?
        do { root = try YAMLValues.load(yaml: text) } catch {
            throw ResultsDataError(file: file, reason: "not YAML: \(error)")
        }
        guard let obj = root as? [String: Any] else { throw ResultsDataError(file: file, reason: "expected a mapping at the top level") }
        if let f = obj["format"] as? String, f != formatName {
            throw ResultsDataError(file: file, reason: "format is \"\(f)\", expected \"\(formatName)\"")
        }
        if let v = obj["version"], number(v) != 1 {
            throw ResultsDataError(file: file, reason: "unsupported version \(v)")
        }
        var b = Baseline(tolerances: [:])
        if let t = obj["tolerances"] {
            b.tolerances = try parseTolerances(t, file: file, at: "tolerances")
        }
        if let ts = obj["traces"] {
            guard let tm = ts as? [String: Any] else { throw ResultsDataError(file: file, reason: "traces: expected a mapping trace → source → metrics") }
            for (trace, sv) in tm {
                guard let sm = sv as? [String: Any] else { throw ResultsDataError(file: file, reason: "traces.\(trace): expected a mapping source → metrics") }
                var entries: [String: Entry] = [:]
                for (source, mv) in sm {
                    let at = "traces.\(trace).\(source)"
                    guard let mm = mv as? [String: Any] else { throw ResultsDataError(file: file, reason: "\(at): expected a mapping metric → value") }
                    var e = Entry(metrics: [:])
                    for (k, v) in mm {
                        if k == "tolerances" { e.tolerances = try parseTolerances(v, file: file, at: "\(at).tolerances"); continue }
                        guard let x = number(v) else { throw ResultsDataError(file: file, reason: "\(at).\(k): expected a number") }
                        e.metrics[k] = x
                    }
                    entries[source] = e
                }
                b.traces[trace] = entries
            }
        }
        return b
    }

    public static func load(url: URL) throws -> Baseline {
        let text: String
        do { text = try String(contentsOf: url, encoding: .utf8) } catch {
            throw ResultsDataError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        return try parse(text, file: url.path)
    }

    static func number(_ v: Any) -> Double? {
        if let d = v as? Double { return d.isFinite ? d : nil }
        if let i = v as? Int { return Double(i) }
        if let s = v as? String, let d = Double(s), d.isFinite { return d }
        return nil
    }

    static func parseTolerances(_ v: Any, file: String, at: String) throws -> [String: Tolerance] {
        guard let m = v as? [String: Any] else { throw ResultsDataError(file: file, reason: "\(at): expected a mapping metric → {abs, rel, better, target}") }
        var out: [String: Tolerance] = [:]
        for (metric, tv) in m {
            guard let t = tv as? [String: Any] else { throw ResultsDataError(file: file, reason: "\(at).\(metric): expected {abs, rel, better, target}") }
            var tol = Tolerance(better: defaultBetter(metric))
            tol.target = Tolerance.defaults[metric]?.target
            for (k, x) in t {
                switch k {
                case "abs", "rel", "target":
                    guard let d = number(x), k == "target" || d >= 0 else {
                        throw ResultsDataError(file: file, reason: "\(at).\(metric).\(k): expected a non-negative number")
                    }
                    if k == "abs" { tol.abs = d } else if k == "rel" { tol.rel = d } else { tol.target = d }
                case "better":
                    guard let s = x as? String, let bb = Tolerance.Better(rawValue: s) else {
                        throw ResultsDataError(file: file, reason: "\(at).\(metric).better: expected lower, higher, target or both")
                    }
                    tol.better = bb
                default:
                    throw ResultsDataError(file: file, reason: "\(at).\(metric): unknown key \"\(k)\"")
                }
            }
            if tol.better == .target && tol.target == nil {
                throw ResultsDataError(file: file, reason: "\(at).\(metric): better: target needs a target value")
            }
            out[metric] = tol
        }
        return out
    }

    /// Direction when a tolerance does not say: errors (…_m) lower, availability higher,
    /// inside95/anees towards their ideal, anything else any change.
    static func defaultBetter(_ metric: String) -> Tolerance.Better {
        if let d = Tolerance.defaults[metric] { return d.better }
        return metric.hasSuffix("_m") ? .lower : .both
    }

    // MARK: Writing

    /// The baseline as YAML, deterministic (sorted keys, 6 significant digits).
    public func yaml() -> String {
        var s = """
        # posfuse accuracy baseline (docs/regress.md). Produced from main by
        #   posfuse regress --baseline FILE --update-baseline
        # A metric is checked when it has a tolerance: it regresses when it worsens by more than
        # max(abs, rel × |baseline value|) in its "better" direction (lower, higher, towards target, both).
        # Tolerances below apply to every trace × source; an entry may override them under its own
        # "tolerances:" key. Edit tolerances by hand; --update-baseline keeps them.
        format: \(Self.formatName)
        version: 1
        tolerances:

        """
        for m in MetricOrder.sorted(tolerances.keys) { s += "  \(m): \(Self.yamlTolerance(tolerances[m]!))\n" }
        s += "traces:\n"
        if traces.isEmpty { s = String(s.dropLast()) + " {}\n" }
        for trace in traces.keys.sorted() {
            let sources = traces[trace]!
            s += "  \(Self.quote(trace)):\(sources.isEmpty ? " {}" : "")\n"
            for source in RunComparison.sortedSources(Set(sources.keys)) {
                let e = sources[source]!
                s += "    \(Self.quote(source)):\n"
                for m in MetricOrder.sorted(e.metrics.keys) { s += "      \(m): \(Self.yamlNumber(e.metrics[m]!))\n" }
                if !e.tolerances.isEmpty {
                    s += "      tolerances:\n"
                    for m in MetricOrder.sorted(e.tolerances.keys) { s += "        \(m): \(Self.yamlTolerance(e.tolerances[m]!))\n" }
                }
            }
        }
        return s
    }

    static func yamlTolerance(_ t: Tolerance) -> String {
        var parts: [String] = []
        if t.abs > 0 { parts.append("abs: \(yamlNumber(t.abs))") }
        if t.rel > 0 { parts.append("rel: \(yamlNumber(t.rel))") }
        parts.append("better: \(t.better.rawValue)")
        if t.better == .target, let x = t.target { parts.append("target: \(yamlNumber(x))") }
        return "{" + parts.joined(separator: ", ") + "}"
    }

    /// A number YAML reads back as a float or int: 6 significant digits, and exponent
    /// forms always with a decimal point (YAML 1.1 floats need one).
    static func yamlNumber(_ x: Double) -> String {
        if x == x.rounded(), Swift.abs(x) < 1e12 { return String(Int(x)) }
        var s = String(format: "%.6g", x)
        if s.contains("e"), !s.contains(".") { s = s.replacingOccurrences(of: "e", with: ".0e") }
        return s
    }

    static func quote(_ k: String) -> String {
        let plain = k.range(of: "^[A-Za-z_][A-Za-z0-9_.-]*$", options: .regularExpression) != nil
            && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"].contains(k.lowercased())
        if plain { return k }
        return "\"" + k.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Replace the entries of the traces in `run` by its values, keeping tolerances and
    /// other traces (`--update-baseline`).
    public func updated(with run: RunResults) -> Baseline {
        var b = self
        for t in run.traces {
            var entries: [String: Entry] = [:]
            for s in t.sources {
                entries[s.source] = Entry(metrics: s.metrics, tolerances: traces[t.trace]?[s.source]?.tolerances ?? [:])
            }
            b.traces[t.trace] = entries
        }
        return b
    }
}
