import Foundation
import Positioning
import Storage
import TraceIO

/// Settings of one replay.
public struct ReplayOptions: Sendable {
    /// `.lenient` (default for `posfuse replay`): bad lines are skipped and counted;
    /// `.strict` (`--strict`): the first bad line throws `TraceDataError`.
    public var mode: TraceReadMode
    /// Seconds of timestamp disorder the reader repairs (`docs/trace-format.md`, "Ordering").
    public var reorderWindow: Double
    /// Pipeline configuration: stage name → options (`StageRegistry.pipeline(options:)`).
    public var stages: [String: StageOptions]
    public var scoring: ScoringOptions
    /// A cell database (SQLite, `CellDatabase`) whose towers and coverage areas within 50 km of
    /// the trace origin join the trace's reference data (its own `reference.json` entries win).
    public var cellDatabase: String?
    /// A reference side file used instead of the trace's own (`posfuse replay --reference`).
    public var reference: URL?
    /// A radio map (SQLite, `RadioMapDatabase`: `posfuse radiomap build`) whose APs, fingerprint
    /// survey and uncertainty model join the reference data (`posfuse replay --radio-map`).
    public var radioMap: String?

    public init(mode: TraceReadMode = .lenient, reorderWindow: Double = TraceReader.defaultReorderWindow,
                stages: [String: StageOptions] = [:], scoring: ScoringOptions = ScoringOptions(), cellDatabase: String? = nil,
                reference: URL? = nil, radioMap: String? = nil) {
        self.mode = mode; self.reorderWindow = reorderWindow; self.stages = stages; self.scoring = scoring
        self.cellDatabase = cellDatabase; self.reference = reference; self.radioMap = radioMap
    }
}

/// The outcome of replaying one trace.
public struct ReplayResult: Sendable {
    public var location: TraceLocation
    public var header: TraceHeader
    public var scores: TraceScores
    /// Reader counts: events by type, skipped lines by reason, unknown types, out of order.
    public var stats: TraceReaderStats
    /// Sources the pipeline can emit (in pipeline order).
    public var pipelineSources: [Source]
    /// Epochs located (`LocatedShare`).
    public var located = LocatedShare()
}

/// Replays a trace: reader → pipeline → scorer, one direction.
///
/// Events come from `TraceReader` in non-decreasing time (its ordering policy:
/// `docs/trace-format.md`, "Ordering": disorder up to the reorder window is repaired,
/// older events are skipped in lenient mode and fatal in strict mode). Each event goes
/// first to the scorer (which keeps ground truth, for every subject of a multi-device
/// trace) and then through the pipeline; the pipeline's results go to the scorer. At the
/// end of the trace `Pipeline.finish` lets offline stages emit, then the scorer
/// finishes. A fresh pipeline is built per trace (stages keep state).
///
/// ```swift
/// let r = try Replayer(options: ReplayOptions()).run(try TraceLocation.resolve("Traces/open-street"))
/// print(r.scores.score("gnss")?.statistics?.p95 ?? 0)
/// ```
public final class Replayer {
    public let options: ReplayOptions
    /// Progress hook: (bytes of the trace read so far, file size when known). Called about
    /// every 4,096 events and once at the end; `Progress.callback` fits.
    public var progress: ((Int64, Int64?) -> Void)?
    /// Called for every estimate once scored or found unscorable (result storage).
    public var onEstimate: ((ScoredEstimate) throws -> Void)?
    /// Called with every event and the pipeline's results for it, and the trace's frame: for
    /// checks that need the measurements, e.g. the TA radial error of `RadioScenarioReplay`.
    public var onResults: ((TraceEvent, [StageResult], LocalFrame) -> Void)?
    /// Called with the pipeline after `Pipeline.finish` (its stages' diagnostics, e.g. the fusion
    /// filters' per-source NIS counters).
    public var onFinish: ((Pipeline) -> Void)?
    /// Events between progress calls.
    public static let progressInterval = 4096

    public init(options: ReplayOptions = ReplayOptions()) { self.options = options }

    /// Replays one trace. Throws `TraceDataError` (unreadable trace or reference file,
    /// strict-mode bad line), `ConfigurationError` (bad stage options) or whatever
    /// `onEstimate` throws.
    public func run(_ location: TraceLocation) throws -> ReplayResult {
        let reader = try TraceReader(url: location.trace, mode: options.mode, reorderWindow: options.reorderWindow)
        let header = reader.header
        let reference = try (options.reference ?? location.reference).map { try ReferenceLoader.load(url: $0, frame: header.frame) } ?? .empty
        let size = (try? FileManager.default.attributesOfItem(atPath: location.trace.path)[.size] as? NSNumber)?.int64Value
        var n = 0
        let (scores, sources, located) = try replay(header: header, reference: reference) {
            guard let event = try reader.next() else { return nil }
            n += 1
            if n % Self.progressInterval == 0 { progress?(reader.bytesRead, size) }
            return event
        }
        progress?(reader.bytesRead, size ?? reader.bytesRead)
        return ReplayResult(location: location, header: header, scores: scores, stats: reader.stats, pipelineSources: sources,
                            located: located)
    }

    /// The one loop: every event to the scorer (truth) and through the pipeline, the pipeline's
    /// results to the scorer (and `onResults`, and the share located); at the end
    /// `Pipeline.finish`, then the scorer's. `reference` is joined by the options' cell database
    /// and radio map.
    private func replay(header: TraceHeader, reference: ReferenceData, next: () throws -> TraceEvent?) throws -> (TraceScores, [Source], LocatedShare) {
        var reference = reference
        if let db = options.cellDatabase { try CellDatabase.forReading(path: db).merge(into: &reference, frame: header.frame) }
        if let db = options.radioMap { try RadioMapDatabase.forReading(path: db).merge(into: &reference, frame: header.frame) }
        let pipeline = try StageRegistry.pipeline(options: options.stages)
        let context = PipelineContext(header: header, reference: reference)
        let scorer = Scorer(frame: header.frame, options: options.scoring)
        scorer.onEstimate = onEstimate
        var located = LocatedShare()
        while let event = try next() {
            try scorer.add(event: event)
            let results = pipeline.process(event, context: context)
            onResults?(event, results, header.frame)
            located.add(results)
            try scorer.add(results)
        }
        try scorer.add(pipeline.finish(context: context))
        onFinish?(pipeline)
        return (try scorer.finish(), pipeline.sources, located)
    }
}

extension Replayer {
    /// Replays events already in memory (an imported recording: `RecordedWalk.header`,
    /// `.events`) through the same pipeline → scorer loop as `run(_:)`, without a reader:
    /// events are taken in time order (stable for equal times); `reference` plays the part of
    /// the trace's reference.json (the cell database of `options` joins it as in `run`).
    /// The result's `location` names `name` (no file); `stats` counts the events by type.
    public func run(header: TraceHeader, events: [TraceEvent], reference: ReferenceData = .empty, name: String) throws -> ReplayResult {
        var stats = TraceReaderStats()
        var it = events.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element).makeIterator()
        let (scores, sources, located) = try replay(header: header, reference: reference) {
            guard let event = it.next() else { return nil }
            stats.events += 1; stats.eventsByType[event.typeName, default: 0] += 1
            return event
        }
        return ReplayResult(location: TraceLocation(trace: URL(fileURLWithPath: name), reference: nil, name: name), header: header,
                            scores: scores, stats: stats, pipelineSources: sources, located: located)
    }

    /// Scores estimates made elsewhere (`posfuse score --estimates`) against the ground
    /// truth of a trace: the trace is read (for its `gt` events only) with the same reader
    /// and options, the estimates are scored exactly as a replay's would be.
    public static func score(estimates: [Fix], location: TraceLocation, options: ReplayOptions = ReplayOptions()) throws -> ReplayResult {
        let reader = try TraceReader(url: location.trace, mode: options.mode, reorderWindow: options.reorderWindow)
        let header = reader.header
        let scorer = Scorer(frame: header.frame, options: options.scoring)
        while let event = try reader.next() { try scorer.add(event: event) }
        try scorer.add(estimates.map { .fix($0) })
        return ReplayResult(location: location, header: header, scores: try scorer.finish(), stats: reader.stats,
                            pipelineSources: Array(Set(estimates.map(\.source))).sorted())
    }
}
