import Foundation
import Positioning
import Interop
import Scoring
import Survey
import TraceIO

/// How training and test data are separated in `posfuse evaluate radio` on walks (docs/radio.md,
/// "Evaluation protocol").
public enum RadioSplit: Sendable, Equatable, Hashable {
    /// Leave-one-walk-out (or the given --train/--test): each test walk's map is built from the
    /// other walks.
    case walk
    /// As `walk`, and every training sample (scan) taken within `radius` m of the test walk's
    /// path (its waypoints joined by straight segments) is removed too, so that the test walk is
    /// as far from the map as a walk through an unsurveyed part of the site would be (spatially
    /// blocked cross-validation, Roberts et al., Ecography 2017).
    case area(radius: Double)

    public var name: String {
        switch self {
        case .walk: return "walk-blocked"
        case .area: return "area-blocked"
        }
    }

    public var description: String {
        switch self {
        case .walk: return "walk-blocked: the test walk's map is built from the other walks"
        case .area(let r): return String(format: "area-blocked: the other walks minus every scan within %.0f m of the test walk's path", r)
        }
    }

    /// The default block radius, m (about the median distance from a waypoint to the nearest
    /// other walk on ms-indoor site2 F3, 7.5 m, rounded up: docs/radio.md).
    public static let defaultRadius = RadioMapLearner.defaultBlockRadius
}

/// A walk prepared for the evaluation: the recording as the builders see it and the trace file
/// (written by the `posfuse import` code) that the replayer reads.
public struct PreparedWalk: Sendable {
    public var walk: RecordedWalk
    public var location: TraceLocation
}

/// `posfuse evaluate radio` on walks (ms-indoor path files or posfuse traces with checkpoint or
/// continuous truth): for each test walk, the radio map is built from the training walks of the
/// split with `RadioMapLearner` (what `posfuse radiomap build` runs), written to a temporary SQLite
/// file, and the test walk is replayed through `Replayer` with that map (`replay --radio-map`)
/// and the given pipeline; its scores are the product scorer's (`Scorer`, checkpoint scores
/// included). Folds are pooled by adding up samples.
public struct RadioWalkEvaluation {
    public var learner: RadioMapLearner
    /// Pipeline stage options (the `--pipeline` file's; empty = the default pipeline).
    public var stages: [String: StageOptions]
    public var scoring: ScoringOptions
    /// Called after each fold with (split, folds done, folds in all, test walk): the CLI's
    /// progress lines on stderr.
    public var progress: (@Sendable (RadioSplit, Int, Int, String) -> Void)?

    public init(learner: RadioMapLearner = RadioMapLearner(), stages: [String: StageOptions] = RadioWalkEvaluation.defaultStages,
                scoring: ScoringOptions = ScoringOptions()) {
        self.learner = learner; self.stages = stages; self.scoring = scoring
    }

    /// The default pipeline with the offline smoother enabled (the pipeline file
    /// `smoother: {enabled: true}`): what `evaluate radio` replays unless `--pipeline` is given.
    public static let defaultStages: [String: StageOptions] = ["smoother": StageOptions(name: "smoother", values: ["enabled": .bool(true)])]

    /// Imports recordings into trace files under `directory` (ms-indoor path files through the
    /// `posfuse import ms-indoor` code, with their floor plan; traces are used where they are).
    public static func prepare(_ urls: [URL], dataset: RadioDataset, directory: URL) throws -> [PreparedWalk] {
        try urls.map { u in
            switch dataset {
            case .traces:
                let loc = try TraceLocation.resolve(u.path)
                return PreparedWalk(walk: try RecordedWalk.read(u), location: loc)
            case .msIndoor, .lteWalks:
                let t = try importTrace(format: dataset == .msIndoor ? .msIndoor : .opencellidMeasurements, urls: [u], options: ImportOptions())
                let name = u.deletingPathExtension().lastPathComponent
                let out = directory.appendingPathComponent(name).appendingPathComponent("trace.jsonl")
                _ = try writeImportedTrace(t, to: out)
                return PreparedWalk(walk: RecordedWalk(name: name, header: t.header, events: t.events), location: try TraceLocation.resolve(out.path))
            case .ujiIndoorLoc:
                throw ImportDataError(file: u.path, line: 0, reason: "UJIIndoorLoc rows are not walks")
            }
        }
    }

    /// One test walk's replay.
    public struct Fold: Sendable {
        public var test: String
        public var train: [String]
        /// Training scans removed by the area block.
        public var removedScans: Int
        public var keptScans: Int
        public var result: ReplayResult
        /// Per-source update counters (accepted, gated, Σ NIS) of each fusion stage, by the
        /// stage's source (`ekf`, `ukf`, `pf`, `smoother`: its forward filter). Heading updates
        /// count under the stage's own source.
        public var fusionCounters: [Source: [Source: SourceCounters]] = [:]
        /// The fold map's PDR step length (nil: none fitted) and the test walk's step segments
        /// against its truth: a diagnostic of the PDR on a walk the calibration never saw (never
        /// fed back into the replay).
        public var stepLength: StepLengthCalibration? = nil
        public var testSegments: [StepLengthCalibration.Segment] = []
    }

    /// The pooled figures of one split.
    public struct Summary: Sendable {
        public var split: RadioSplit
        public var folds: [Fold]
        public var checkpoints: [CheckpointScore]
        /// Per-estimate errors and NEES pooled per source (truth interpolated at the estimate).
        public var estimates: [Source: (errors: [Double], nees: [Double])]
        public var located: LocatedShare
    }

    /// Leave-one-walk-out over `walks` under `split`.
    public func leaveOneOut(_ walks: [PreparedWalk], split: RadioSplit, scratch: URL) throws -> Summary {
        var folds: [Fold] = []
        for i in walks.indices {
            let train = walks.enumerated().filter { $0.offset != i }.map(\.element)
            folds.append(try fold(train: train, test: walks[i], split: split, scratch: scratch))
            progress?(split, i + 1, walks.count, walks[i].walk.name)
        }
        return summary(folds, split: split)
    }

    /// --train/--test: each test walk against the training walks (area-blocked per test walk).
    public func trainTest(train: [PreparedWalk], test: [PreparedWalk], split: RadioSplit, scratch: URL) throws -> Summary {
        var folds: [Fold] = []
        for (i, t) in test.enumerated() {
            folds.append(try fold(train: train, test: t, split: split, scratch: scratch))
            progress?(split, i + 1, test.count, t.walk.name)
        }
        return summary(folds, split: split)
    }

    public func fold(train: [PreparedWalk], test: PreparedWalk, split: RadioSplit, scratch: URL) throws -> Fold {
        var walks = train.map(\.walk)
        var removed = 0, kept = 0
        if case .area(let r) = split {
            let path = RadioMapLearner.truthPath(test.walk)
            walks = walks.map { w in
                let (b, n, k) = RadioMapLearner.block(w, paths: [path], radius: r)
                removed += n; kept += k
                return b
            }
        } else {
            kept = walks.reduce(0) { $0 + $1.events.filter { if case .wifi = $0.payload { return true } else { return false } }.count }
        }
        let db = scratch.appendingPathComponent("map-\(test.walk.name)-\(split.name).sqlite")
        try? FileManager.default.removeItem(at: db)
        defer { try? FileManager.default.removeItem(at: db) }
        var l = learner
        l.stages = stages
        let map = l.build(walks)
        if let map { try l.write(map, to: db.path) }
        let replayer = Replayer(options: ReplayOptions(stages: stages, scoring: ScoringOptions(maxTruthGap: scoring.maxTruthGap,
                                                       fixValidity: scoring.fixValidity, keepEpochs: true),
                                                       radioMap: FileManager.default.fileExists(atPath: db.path) ? db.path : nil))
        final class Box: @unchecked Sendable { var counters: [Source: [Source: SourceCounters]] = [:] }
        let box = Box()
        replayer.onFinish = { p in
            for st in p.stages {
                if let f = st as? FusionStage { box.counters[f.source] = f.counters } else if let s = st as? SmootherStage { box.counters[.smoother] = s.counters }
            }
        }
        let r = try replayer.run(test.location)
        return Fold(test: test.walk.name, train: train.map(\.walk.name), removedScans: removed, keptScans: kept, result: r,
                    fusionCounters: box.counters, stepLength: map?.stepLength, testSegments: RadioMapLearner.stepSegments(test.walk))
    }

    func summary(_ folds: [Fold], split: RadioSplit) -> Summary {
        var est: [Source: (errors: [Double], nees: [Double])] = [:]
        for f in folds {
            for s in f.result.scores.sources where s.group == .phones {
                var a = est[s.source] ?? ([], [])
                for e in s.epochs ?? [] { a.errors.append(e.error); if let n = e.nees { a.nees.append(n) } }
                est[s.source] = a
            }
        }
        return Summary(split: split, folds: folds, checkpoints: CheckpointScore.pooled(folds.map(\.result.scores.checkpoints)),
                       estimates: est, located: folds.reduce(LocatedShare()) { $0 + $1.result.located })
    }

}

extension RadioWalkEvaluation.Summary {
    /// Summary of per-estimate errors of one source.
    public func estimateSummary(_ s: Source) -> [String: Any] {
        guard let a = estimates[s], !a.errors.isEmpty else { return [:] }
        var o = try? JSONSerialization.jsonObject(with: JSONEncoder().encode(ErrorSummary(a.errors))) as? [String: Any]
        if !a.nees.isEmpty {
            o?["inside95"] = RadioStats.inside95(a.nees)
            o?["anees"] = RadioStats.mean(a.nees)
        }
        return o ?? [:]
    }

    /// The PDR on the test walks against their truth, pooled over the folds: truth distance
    /// between checkpoints, the PDR's distance with each fold's fitted K (and with `defaultK`),
    /// and the heading error (truth bearing − PDR heading) over segments of at least
    /// `minimumSegment` m: mean and RMS, degrees.
    public func pdrDiagnostics(defaultK: Double, minimumSegment: Double = 5) -> [String: Any] {
        var d = 0.0, fitted = 0.0, plain = 0.0, errors: [Double] = [], calibrated = 0
        for f in folds {
            for g in f.testSegments {
                d += g.distance; plain += defaultK * g.rootSum
                fitted += (f.stepLength?.weinbergK ?? defaultK) * g.rootSum
                if let e = g.headingError, g.distance >= minimumSegment { errors.append(Angle.degrees(e)) }
            }
            if f.stepLength != nil { calibrated += 1 }
        }
        guard d > 0 else { return [:] }
        var o: [String: Any] = ["truth_m": d, "pdr_m": fitted, "pdr_default_k_m": plain, "truth_over_pdr": fitted > 0 ? d / fitted : 0,
                                "truth_over_pdr_default_k": plain > 0 ? d / plain : 0, "folds_with_fitted_k": calibrated,
                                "segments": folds.reduce(0) { $0 + $1.testSegments.count }]
        if !errors.isEmpty {
            o["heading_error_deg"] = ["segments": errors.count, "min_length_m": minimumSegment, "mean": RadioStats.mean(errors) ?? 0,
                                      "rms": (errors.reduce(0) { $0 + $1 * $1 } / Double(errors.count)).squareRoot()]
        }
        return o
    }

    /// Per-source counters of each fusion stage, summed over the folds (`Fold.fusionCounters`).
    public var fusionCounters: [Source: [Source: SourceCounters]] {
        var out: [Source: [Source: SourceCounters]] = [:]
        for f in folds { for (stage, m) in f.fusionCounters { for (s, c) in m { out[stage, default: [:]][s, default: SourceCounters()].add(c) } } }
        return out
    }

    /// Errors at the checkpoints where `a` and `b` both have an estimate (walk, time), for the
    /// "fusion vs its input at the same waypoints" comparison: (mean a, mean b, count).
    public func sameCheckpoints(_ a: Source, _ b: Source) -> (Double, Double, Int)? {
        struct K: Hashable { var s: String; var t: Double }
        var ea: [K: Double] = [:], eb: [K: Double] = [:]
        for f in folds {
            guard let x = f.result.scores.checkpoints.first(where: { $0.source == a }),
                  let y = f.result.scores.checkpoints.first(where: { $0.source == b }) else { continue }
            for s in x.samples { ea[K(s: f.test + "/" + s.subject, t: s.time)] = s.error }
            for s in y.samples { eb[K(s: f.test + "/" + s.subject, t: s.time)] = s.error }
        }
        let common = ea.keys.filter { eb[$0] != nil }
        guard !common.isEmpty else { return nil }
        let ma = common.reduce(0) { $0 + ea[$1]! } / Double(common.count)
        let mb = common.reduce(0) { $0 + eb[$1]! } / Double(common.count)
        return (ma, mb, common.count)
    }
}
