import Foundation
import TraceIO
import Positioning

/// The runs of a study: every grid point × input × seed, in a canonical order that does not
/// depend on how they are executed (one core, several, or Slurm shards).
///
/// Order: input (study order), seed (ascending), grid point (the grid's last parameter
/// varies fastest). A run's `key` is its identity in the results database: the input, the
/// seed and every stage option the run uses (base options merged with the point's), as
/// canonical JSON. A run whose key is already stored is not run again (resume); changing
/// the base pipeline changes every key, so old runs are not mistaken for new ones.
public struct SweepPlan: Sendable {
    public struct Point: Sendable, Equatable {
        public var index: Int
        /// One value per study parameter.
        public var values: [ConfigValue]
    }

    public struct Run: Sendable {
        /// Position in the canonical order (0-based).
        public var index: Int
        public var input: Int
        public var seed: UInt64?
        public var point: Int
        public var key: String
    }

    public let study: Study
    public let points: [Point]
    public let runs: [Run]
    /// Index of the baseline point.
    public let baselinePoint: Int

    public init(study: Study) {
        self.study = study
        var points: [Point] = [Point(index: 0, values: [])]
        for p in study.parameters {
            points = points.flatMap { pt in p.values.map { Point(index: 0, values: pt.values + [$0]) } }
        }
        for i in points.indices { points[i].index = i }
        self.points = points
        baselinePoint = points.firstIndex { $0.values == study.baseline } ?? 0
        var runs: [Run] = []
        for (i, input) in study.inputs.enumerated() {
            for seed in input.seeds {
                for pt in points {
                    let key = Self.key(input: input, seed: seed, stages: Self.stages(study: study, point: pt))
                    runs.append(Run(index: runs.count, input: i, seed: seed, point: pt.index, key: key))
                }
            }
        }
        self.runs = runs
    }

    /// The stage options of a point: the study's base options with the point's values set.
    public static func stages(study: Study, point: Point) -> [String: StageOptions] {
        var out = study.base
        for (p, v) in zip(study.parameters, point.values) {
            out[p.stage, default: StageOptions(name: p.stage)].values[p.key] = v
        }
        return out
    }

    public func stages(point: Int) -> [String: StageOptions] { Self.stages(study: study, point: points[point]) }

    /// The point as canonical JSON {"stage.key": value, …} (stored in `sweep_runs.point`).
    public func pointJSON(_ point: Int) -> String {
        let pairs = zip(study.parameters, points[point].values).map { (p, v) in (p.name, v) }.sorted { $0.0 < $1.0 }
        return "{" + pairs.map { jsonEscaped($0.0) + ":" + SweepKeys.json($0.1) }.joined(separator: ",") + "}"
    }

    /// A short label of the point: "weight_law=power exponent=0.3".
    public func pointLabel(_ point: Int) -> String {
        if study.parameters.isEmpty { return "(defaults)" }
        let names = Self.shortNames(study.parameters)
        return zip(names, points[point].values).map { "\($0)=\(SweepKeys.text($1))" }.joined(separator: " ")
    }

    /// Parameter names without the stage where that is unambiguous.
    static func shortNames(_ ps: [Study.Parameter]) -> [String] {
        let keys = ps.map(\.key)
        return ps.map { p in keys.filter { $0 == p.key }.count > 1 ? p.name : p.key }
    }

    static func key(input: Study.Input, seed: UInt64?, stages: [String: StageOptions]) -> String {
        let opts = stages.keys.sorted().map { s in
            jsonEscaped(s) + ":" + SweepKeys.json(.map(stages[s]!.values))
        }.joined(separator: ",")
        var inputText: String
        switch input.kind {
        case .recording(let loc): inputText = "trace " + loc.name
        case let .scenario(folder, _, _, duration):
            inputText = "scenario " + folder.lastPathComponent + (duration.map { " duration \(SweepKeys.text(.number($0))) s" } ?? "")
        }
        if let c = input.cellDatabase { inputText += " cell_db " + c }
        inputText = input.label + " = " + inputText
        return "{\"input\":\(jsonEscaped(inputText)),\"seed\":\(seed.map(String.init) ?? "null"),\"stages\":{\(opts)}}"
    }

    /// The pipeline configuration text of a point (stored in `runs.pipeline`; `posfuse replay
    /// --pipeline` with it reproduces the run).
    public func pipelineYAML(point: Int) -> String {
        let st = stages(point: point)
        if st.isEmpty { return "" }
        var out = "stages:\n"
        for s in st.keys.sorted() {
            let v = st[s]!.values
            if v.isEmpty { out += "  \(s): {}\n"; continue }
            out += "  \(s):\n"
            for k in v.keys.sorted() { out += "    \(k): \(SweepKeys.yaml(v[k]!))\n" }
        }
        return out
    }

    /// The runs of shard `index` (1-based) of `count`: every run whose canonical index i has
    /// i mod count = index − 1. Deterministic, disjoint, and together the whole plan.
    public func shard(_ index: Int, of count: Int) -> [Run] {
        runs.filter { $0.index % count == index - 1 }
    }

    /// A run's trace name in the results database: "mall-sparse-ap (sim) seed 7".
    public func traceName(_ r: Run) -> String {
        study.inputs[r.input].label + (r.seed.map { " seed \($0)" } ?? "")
    }
}
