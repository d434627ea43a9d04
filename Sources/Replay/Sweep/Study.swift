import Foundation
import Positioning
import Yams
import Regress
import Simulation
import TraceIO

/// A study file (`posfuse sweep STUDY.yaml`, format in `docs/sweep.md`): the inputs to replay,
/// a base pipeline, a grid of pipeline options and the metrics to summarise.
///
/// ```yaml
/// name: wcl-weight-law
/// inputs:
///   - scenario: ../../Traces/mall-sparse-ap   # simulated with seeds first_seed … first_seed+seeds−1
///     seeds: 20
///   - trace: ../../Traces/mall-sparse-ap      # a recording, replayed as it is
/// stages:                                     # base pipeline, as in docs/pipeline.yaml
///   hapel: {enabled: false}
/// grid:                                       # every combination of these values
///   wcl:
///     weight_law: [power, distance, amplitude, db]
///     exponent: {from: 0.1, to: 1.0, step: 0.3}
/// baseline: {wcl: {weight_law: power, exponent: 0.3}}
/// sources: [wcl, ekf]
/// metrics: [median_m, p95_m, inside95]
/// ```
///
/// Paths are relative to the study file. Parsing keeps the YAML marks so that every error
/// names the file, the line and the key (`StudyError`, exit 65).
public struct Study: Sendable {
    /// One input: a recording replayed once, or a scenario simulated with several seeds.
    public struct Input: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case recording(TraceLocation)
            /// Scenario folder (holds scenario.yaml); seeds firstSeed ..< firstSeed + seeds.
            case scenario(folder: URL, firstSeed: UInt64, seeds: Int, duration: Double?)
        }
        /// The input's name in the results (unique within a study).
        public var label: String
        public var kind: Kind
        /// A cell database joined to the reference data (`replay --cell-db`): e.g. one built by
        /// `posfuse celldb build` from training walks, for a held-out test walk.
        public var cellDatabase: String?
        /// The seeds of its runs (nil for a recording: one run).
        public var seeds: [UInt64?] {
            switch kind {
            case .recording: return [nil]
            case let .scenario(_, first, n, _): return (0..<n).map { first + UInt64($0) }
            }
        }
    }

    /// One swept option: `stage.key` and its values in the order given.
    public struct Parameter: Sendable, Equatable {
        public var stage: String
        public var key: String
        public var values: [ConfigValue]
        public var name: String { "\(stage).\(key)" }
    }

    public var name: String
    public var file: String
    public var inputs: [Input]
    /// Options every grid point starts from (the `stages:` section).
    public var base: [String: StageOptions]
    public var parameters: [Parameter]
    /// Values of the baseline point, one per parameter (default: the first value of each).
    public var baseline: [ConfigValue]
    /// Score keys to summarise (empty: every source the runs have).
    public var sources: [String]
    public var metrics: [String]
    public var confidence: Double

    public static let defaultMetrics = ["median_m", "p95_m", "rmse_m", "inside95"]

    /// Reads and parses a study file. Throws `StudyError`.
    public static func load(path: String) throws -> Study {
        let text: String
        do { text = try InputFile.text(URL(fileURLWithPath: path)) } catch let e as TraceDataError {
            throw StudyError(file: path, line: e.line, key: nil, reason: e.reason, isIO: e.code == .io)
        }
        return try parse(yaml: text, file: path, directory: URL(fileURLWithPath: path).deletingLastPathComponent())
    }

    static let topKeys: Set<String> = ["name", "inputs", "stages", "grid", "baseline", "sources", "metrics", "confidence"]

    /// Parses study text; relative paths resolve against `directory`.
    public static func parse(yaml: String, file: String, directory: URL) throws -> Study {
        func fail(_ node: Node?, _ key: String?, _ reason: String) -> StudyError {
            StudyError(file: file, line: node?.mark?.line ?? 0, key: key, reason: reason)
        }
        let root: Node?
        do { root = try Yams.compose(yaml: yaml) } catch let e as YamlError {
            throw StudyError(file: file, line: Self.line(of: e), key: nil, reason: "invalid YAML: \(e)")
        } catch {
            throw StudyError(file: file, line: 0, key: nil, reason: "invalid YAML: \(error)")
        }
        guard let root, case .mapping(let top) = root else {
            throw fail(root, nil, "the top level must be a mapping with `inputs` and `grid`")
        }
        do { try YAMLValues.check(root) } catch let e as YAMLValues.Refused {
            throw StudyError(file: file, line: e.line ?? 0, key: nil, reason: e.reason)
        }
        var fields: [String: (key: Node, value: Node)] = [:]
        for (k, v) in top {
            guard let name = k.string else { throw fail(k, nil, "keys must be strings") }
            guard topKeys.contains(name) else {
                throw fail(k, name, "unknown key (known: \(topKeys.sorted().joined(separator: ", ")))")
            }
            fields[name] = (k, v)
        }

        // name
        var studyName = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
        if let (k, v) = fields["name"] {
            guard case .scalar = v, let s = v.string, !s.isEmpty else { throw fail(v, k.string, "expected a non-empty string") }
            studyName = s
        }

        // inputs
        guard let (inputsKey, inputsNode) = fields["inputs"] else { throw fail(root, "inputs", "missing: name at least one trace or scenario") }
        guard case .sequence(let inputSeq) = inputsNode, !inputSeq.isEmpty else {
            throw fail(inputsNode, "inputs", "expected a non-empty list of traces or scenarios")
        }
        _ = inputsKey
        var inputs: [Input] = []
        for (i, item) in inputSeq.enumerated() {
            let at = "inputs[\(i)]"
            let input = try parseInput(item, at: at, directory: directory, fail: fail)
            if inputs.contains(where: { $0.label == input.label }) {
                throw fail(item, at, "a second input named \(input.label) (set `label:` to tell them apart)")
            }
            inputs.append(input)
        }

        // stages (base pipeline): the pipeline loader's own rules, then one build to check values.
        var base: [String: StageOptions] = [:]
        if let (_, v) = fields["stages"] {
            guard case .mapping(let m) = v else { throw fail(v, "stages", "must be a mapping of stage name → options") }
            for (sk, sv) in m {
                guard let stage = sk.string else { throw fail(sk, "stages", "stage names must be strings") }
                try SweepKeys.checkStage(stage, node: sk, at: "stages.\(stage)", fail: fail)
                var values: [String: ConfigValue] = [:]
                switch sv {
                case .mapping(let om):
                    for (ok, ov) in om {
                        guard let key = ok.string else { throw fail(ok, "stages.\(stage)", "option names must be strings") }
                        try SweepKeys.checkKey(stage: stage, key: key, node: ok, at: "stages.\(stage).\(key)", fail: fail)
                        values[key] = try configValue(ov, at: "stages.\(stage).\(key)", fail: fail)
                    }
                case .scalar where sv.null != nil: break
                default: throw fail(sv, "stages.\(stage)", "must be a mapping of options")
                }
                base[stage] = StageOptions(name: stage, values: values)
                do { _ = try StageRegistry.pipeline(options: [stage: base[stage]!]) } catch let e as ConfigurationError {
                    throw fail(sv, "stages.\(e.path)", e.reason)
                }
            }
        }

        // grid
        guard let (gridKey, gridNode) = fields["grid"] else { throw fail(root, "grid", "missing: the options to sweep") }
        guard case .mapping(let gm) = gridNode, !gm.isEmpty else {
            throw fail(gridNode.mark == nil ? gridKey : gridNode, "grid", "empty grid: name at least one stage option with a list or range of values")
        }
        var parameters: [Parameter] = []
        var parameterNodes: [Node] = []
        for (sk, sv) in gm {
            guard let stage = sk.string else { throw fail(sk, "grid", "stage names must be strings") }
            try SweepKeys.checkStage(stage, node: sk, at: "grid.\(stage)", fail: fail)
            guard case .mapping(let om) = sv, !om.isEmpty else {
                throw fail(sv.mark == nil ? sk : sv, "grid.\(stage)", "empty grid: expected a mapping of option → list of values or range")
            }
            for (ok, ov) in om {
                guard let key = ok.string else { throw fail(ok, "grid.\(stage)", "option names must be strings") }
                let at = "grid.\(stage).\(key)"
                try SweepKeys.checkKey(stage: stage, key: key, node: ok, at: at, fail: fail)
                let values = try gridValues(ov, at: at, fail: fail)
                // Every value must build the stage (a value of the wrong type is caught here).
                for v in values {
                    var o = base[stage] ?? StageOptions(name: stage)
                    o.values[key] = v
                    do { _ = try StageRegistry.pipeline(options: [stage: o]) } catch let e as ConfigurationError {
                        throw fail(ov, at, "\(SweepKeys.text(v)): \(e.reason)")
                    }
                }
                parameters.append(Parameter(stage: stage, key: key, values: values))
                parameterNodes.append(ov)
            }
        }

        // baseline
        var baseline = parameters.map { $0.values[0] }
        if let (bk, bv) = fields["baseline"] {
            guard case .mapping(let bm) = bv else { throw fail(bv, bk.string, "expected a mapping like `grid` with one value per swept option") }
            var seen = Set<String>()
            for (sk, sv) in bm {
                guard let stage = sk.string, case .mapping(let om) = sv else { throw fail(sv, "baseline", "expected stage: {option: value}") }
                for (ok, ov) in om {
                    let key = ok.string ?? ""
                    let at = "baseline.\(stage).\(key)"
                    guard let i = parameters.firstIndex(where: { $0.stage == stage && $0.key == key }) else {
                        throw fail(ok, at, "not a swept option (the baseline names one value of each `grid` option)")
                    }
                    let v = try configValue(ov, at: at, fail: fail)
                    guard let match = parameters[i].values.first(where: { SweepKeys.same($0, v) }) else {
                        throw fail(ov, at, "\(SweepKeys.text(v)) is not one of the grid's values (\(parameters[i].values.map(SweepKeys.text).joined(separator: ", ")))")
                    }
                    baseline[i] = match
                    seen.insert(parameters[i].name)
                }
            }
            if let missing = parameters.first(where: { !seen.contains($0.name) }) {
                throw fail(bv, "baseline.\(missing.name)", "missing: the baseline names one value of every swept option")
            }
        }

        // sources, metrics, confidence
        func stringList(_ name: String) throws -> [String]? {
            guard let (_, v) = fields[name] else { return nil }
            guard case .sequence(let s) = v, !s.isEmpty else { throw fail(v, name, "expected a non-empty list of names") }
            return try s.map { n in
                guard case .scalar = n, let str = n.string, n.tagName == .str else { throw fail(n, name, "expected a name, got \(n.any)") }
                return str
            }
        }
        let sources = try stringList("sources") ?? []
        let knownSources = Set(Source.allCases.map(\.rawValue))
        if let (_, v) = fields["sources"], case .sequence(let s) = v {
            for (n, src) in zip(s, sources) {
                let base = src.hasSuffix(":object") ? String(src.dropLast(":object".count)) : src
                if !knownSources.contains(base) {
                    throw fail(n, "sources", "unknown source \(src) (known: \(Source.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
            }
        }
        let metrics = try stringList("metrics") ?? defaultMetrics
        if let (_, v) = fields["metrics"], case .sequence(let s) = v {
            let known = Set(MetricOrder.known)
            for (n, m) in zip(s, metrics) where !known.contains(m) {
                throw fail(n, "metrics", "unknown metric \(m) (known: \(MetricOrder.known.joined(separator: ", ")))")
            }
        }
        var confidence = 0.95
        if let (_, v) = fields["confidence"] {
            guard let c = v.float, v.tagName != .str, c > 0.5, c < 1 else { throw fail(v, "confidence", "expected a number in (0.5, 1)") }
            confidence = c
        }
        _ = parameterNodes
        return Study(name: studyName, file: file, inputs: inputs, base: base, parameters: parameters,
                     baseline: baseline, sources: sources, metrics: metrics, confidence: confidence)
    }

    static func parseInput(_ item: Node, at: String, directory: URL,
                           fail: (Node?, String?, String) -> StudyError) throws -> Input {
        func path(_ s: String) -> URL {
            s.hasPrefix("/") ? URL(fileURLWithPath: s) : directory.appendingPathComponent(s).standardizedFileURL
        }
        guard case .mapping(let m) = item else {
            throw fail(item, at, "expected a mapping: {trace: PATH} or {scenario: FOLDER, seeds: N}")
        }
        var f: [String: (Node, Node)] = [:]
        let known: Set<String> = ["trace", "scenario", "seeds", "first_seed", "duration_s", "label", "cell_db"]
        for (k, v) in m {
            guard let name = k.string, known.contains(name) else {
                throw fail(k, "\(at).\(k.string ?? "?")", "unknown key (known: \(known.sorted().joined(separator: ", ")))")
            }
            f[name] = (k, v)
        }
        func str(_ name: String) throws -> String? {
            guard let (_, v) = f[name] else { return nil }
            guard case .scalar = v, let s = v.string, !s.isEmpty else { throw fail(v, "\(at).\(name)", "expected a string") }
            return s
        }
        let label = try str("label")
        var cellDB: String?
        if let c = try str("cell_db") {
            let u = path(c)
            guard FileManager.default.fileExists(atPath: u.path) else { throw fail(f["cell_db"]!.1, "\(at).cell_db", "\(c): no such file") }
            cellDB = u.path
        }
        if let t = try str("trace") {
            if f["scenario"] != nil || f["seeds"] != nil || f["first_seed"] != nil || f["duration_s"] != nil {
                throw fail(item, at, "a `trace` is replayed as it is: seeds, first_seed, duration_s belong to a `scenario`")
            }
            let loc: TraceLocation
            do { loc = try TraceLocation.resolve(path(t).path) } catch {
                throw fail(f["trace"]!.1, "\(at).trace", "\(t): not a trace file or scenario folder with trace.jsonl")
            }
            return Input(label: label ?? loc.name, kind: .recording(loc), cellDatabase: cellDB)
        }
        guard let s = try str("scenario") else { throw fail(item, at, "needs `trace:` (a recording) or `scenario:` (a folder with scenario.yaml)") }
        let folder = path(s)
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("scenario.yaml").path) else {
            throw fail(f["scenario"]!.1, "\(at).scenario", "\(s): no scenario.yaml in this folder")
        }
        do { _ = try Scenario.load(url: folder.appendingPathComponent("scenario.yaml")) } catch {
            throw fail(f["scenario"]!.1, "\(at).scenario", "\(s): \(error)")
        }
        func int(_ name: String, _ d: Int, min: Int) throws -> Int {
            guard let (_, v) = f[name] else { return d }
            guard v.tagName == .int, let x = v.int, x >= min else { throw fail(v, "\(at).\(name)", "expected an integer ≥ \(min)") }
            return x
        }
        let seeds = try int("seeds", 1, min: 1)
        let first = try int("first_seed", 1, min: 0)
        var duration: Double?
        if let (_, v) = f["duration_s"] {
            guard v.tagName == .int || v.tagName == .float, let d = v.float, d > 0, d.isFinite else {
                throw fail(v, "\(at).duration_s", "expected a positive number of seconds")
            }
            duration = d
        }
        let name = folder.lastPathComponent
        return Input(label: label ?? "\(name) (sim)", kind: .scenario(folder: folder, firstSeed: UInt64(first), seeds: seeds, duration: duration),
                     cellDatabase: cellDB)
    }

    /// A grid entry: a non-empty list of values, or a range `{from, to, step}` / `{from, to, count}`.
    static func gridValues(_ node: Node, at: String, fail: (Node?, String?, String) -> StudyError) throws -> [ConfigValue] {
        switch node {
        case .sequence(let s):
            guard !s.isEmpty else { throw fail(node, at, "empty grid: give at least one value") }
            var out: [ConfigValue] = []
            for v in s {
                let c = try configValue(v, at: at, fail: fail)
                if out.contains(where: { SweepKeys.same($0, c) }) { throw fail(v, at, "\(SweepKeys.text(c)) is listed twice") }
                out.append(c)
            }
            return out
        case .mapping(let m):
            var f: [String: Node] = [:]
            for (k, v) in m {
                guard let n = k.string, ["from", "to", "step", "count"].contains(n) else {
                    throw fail(k, at, "a range is {from, to, step} or {from, to, count}; unknown key \(k.string ?? "?")")
                }
                f[n] = v
            }
            func num(_ n: String) throws -> Double? {
                guard let v = f[n] else { return nil }
                guard v.tagName == .int || v.tagName == .float, let x = v.float, x.isFinite else { throw fail(v, "\(at).\(n)", "expected a number") }
                return x
            }
            guard let from = try num("from"), let to = try num("to") else { throw fail(node, at, "a range needs `from` and `to`") }
            var values: [Double] = []
            if let step = try num("step") {
                guard f["count"] == nil else { throw fail(node, at, "give `step` or `count`, not both") }
                guard step > 0, to >= from else { throw fail(f["step"], "\(at).step", "expected step > 0 and to ≥ from") }
                let n = Int(((to - from) / step + 1e-9).rounded(.down))
                guard n < 10_000 else { throw fail(node, at, "more than 10,000 values") }
                values = (0...n).map { from + Double($0) * step }
            } else if let c = f["count"] {
                guard c.tagName == .int, let n = c.int, n >= 1, n <= 10_000 else { throw fail(c, "\(at).count", "expected an integer in 1…10000") }
                guard n > 1 || from == to else { throw fail(c, "\(at).count", "count 1 needs from = to") }
                values = (0..<n).map { n == 1 ? from : from + (to - from) * Double($0) / Double(n - 1) }
            } else {
                throw fail(node, at, "a range needs `step` or `count`")
            }
            // 12 significant digits: 0.1 + 2 × 0.3 is 0.7, not 0.7000000000000001.
            return values.map { .number(Double(String(format: "%.12g", $0))!) }
        default:
            throw fail(node, at, "expected a list of values or a range {from, to, step}, got \(node.any)")
        }
    }

    /// A YAML node as a `ConfigValue` (the types `PipelineConfigLoader` accepts).
    static func configValue(_ node: Node, at: String, fail: (Node?, String?, String) -> StudyError) throws -> ConfigValue {
        switch node {
        case .scalar:
            switch node.tagName {
            case .bool: return .bool(node.bool!)
            case .int: return .number(Double(node.int!))
            case .float:
                guard let d = node.float, d.isFinite else { throw fail(node, at, "expected a finite number") }
                return .number(d)
            case .null: throw fail(node, at, "a value is missing")
            default: return .string(node.string ?? "")
            }
        case .sequence(let s): return .list(try s.map { try configValue($0, at: at, fail: fail) })
        case .mapping(let m):
            var out: [String: ConfigValue] = [:]
            for (k, v) in m { out[k.string ?? ""] = try configValue(v, at: "\(at).\(k.string ?? "")", fail: fail) }
            return .map(out)
        case .alias: throw fail(node, at, "YAML aliases are not supported here")
        }
    }

    static func line(of e: YamlError) -> Int {
        if case let .parser(_, _, mark, _) = e { return mark.line }
        if case let .scanner(_, _, mark, _) = e { return mark.line }
        return 0
    }
}

/// A bad study file: file, line (1-based; 0 when unknown), the key and the reason (exit 65;
/// exit 74 when the file cannot be read).
public struct StudyError: Error, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var key: String?
    public var reason: String
    public var isIO = false
    public init(file: String, line: Int, key: String?, reason: String, isIO: Bool = false) {
        self.file = file; self.line = line; self.key = key; self.reason = reason; self.isIO = isIO
    }
    public var description: String {
        "\(file)\(line > 0 ? ":\(line)" : ""): \(key.map { "\($0): " } ?? "")\(reason)"
    }
}

/// Which stage options a study may set, and value helpers.
///
/// Stage names are those of `StageRegistry`; option names are checked against the stage's option
/// table (`OptionTable`: the keys its `make` reads, which docs/pipeline.yaml lists with their
/// defaults and units); a value is checked by building the stage with it (a value of the wrong
/// type fails there).
public enum SweepKeys {
    static func checkStage(_ stage: String, node: Node, at: String, fail: (Node?, String?, String) -> StudyError) throws {
        guard StageRegistry.entries.contains(where: { $0.name == stage }) else {
            throw fail(node, at, "unknown stage (known: \(StageRegistry.entries.map(\.name).joined(separator: ", ")))")
        }
    }

    static func checkKey(stage: String, key: String, node: Node, at: String, fail: (Node?, String?, String) -> StudyError) throws {
        guard isKnown(stage: stage, key: key) else {
            let known = StageRegistry.entry(stage)?.options.keys ?? []
            throw fail(node, at, "unknown option \(key) of stage \(stage) (known: \(known.joined(separator: ", ")))")
        }
    }

    /// Whether stage `stage` reads option `key`: its option table (`StageRegistry.Entry.options`,
    /// the keys docs/pipeline.yaml lists) has it; `enabled` is read by the registry.
    public static func isKnown(stage: String, key: String) -> Bool {
        StageRegistry.entry(stage)?.options.contains(key) ?? false
    }

    /// Two config values are the same (numbers compare as numbers).
    static func same(_ a: ConfigValue, _ b: ConfigValue) -> Bool { a == b }

    /// A value as text: numbers without a trailing .0, lists in brackets.
    public static func text(_ v: ConfigValue) -> String {
        switch v {
        case .number(let x): return x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x)
        case .string(let s): return s
        case .bool(let b): return b ? "true" : "false"
        case .list(let l): return "[" + l.map(text).joined(separator: ", ") + "]"
        case .map(let m): return "{" + m.keys.sorted().map { "\($0): \(text(m[$0]!))" }.joined(separator: ", ") + "}"
        }
    }

    /// Canonical JSON of a value (sorted keys; numbers in shortest round-trip form).
    public static func json(_ v: ConfigValue) -> String {
        switch v {
        case .number(let x): return x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x)
        case .string(let s): return jsonEscaped(s)
        case .bool(let b): return b ? "true" : "false"
        case .list(let l): return "[" + l.map(json).joined(separator: ",") + "]"
        case .map(let m): return "{" + m.keys.sorted().map { jsonEscaped($0) + ":" + json(m[$0]!) }.joined(separator: ",") + "}"
        }
    }

    /// YAML text of a value (flow style; strings quoted when needed).
    static func yaml(_ v: ConfigValue) -> String {
        switch v {
        case .string(let s): return s.range(of: "^[A-Za-z_][A-Za-z0-9_.:-]*$", options: .regularExpression) != nil && !["true", "false", "null", "yes", "no", "on", "off", "~"].contains(s.lowercased()) ? s : jsonEscaped(s)
        case .list(let l): return "[" + l.map(yaml).joined(separator: ", ") + "]"
        case .map(let m): return "{" + m.keys.sorted().map { "\($0): \(yaml(m[$0]!))" }.joined(separator: ", ") + "}"
        default: return json(v)
        }
    }
}

extension Node {
    /// The resolved tag's name (int, float, bool, str, null, …).
    var tagName: Tag.Name { Tag.Name(rawValue: tag.rawValue) }
}
