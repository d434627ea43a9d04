/// What a stage sees besides the event: the trace header (ENU frame) and reference data.
public struct PipelineContext: Sendable {
    public var header: TraceHeader
    public var frame: LocalFrame
    public var reference: ReferenceData
    public init(header: TraceHeader, reference: ReferenceData = .empty) {
        self.header = header; frame = header.frame; self.reference = reference
    }
}

/// One output of a pipeline stage.
public enum StageResult: Sendable {
    /// A position estimate (scored against ground truth).
    case fix(Fix)
    /// An estimator had the input but could not produce a fix, and why.
    case failure(source: Source, time: Double, subject: String, reason: EstimationFailure)
    /// A tight-coupling measurement for downstream filters (not scored).
    case measurement(any MeasurementModel, subject: String)
}

/// The kinds of event a stage reads (`PipelineStage.inputs`), one bit per `TraceEvent.Payload` case.
public struct EventKinds: OptionSet, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let gnss = EventKinds(rawValue: 1 << 0), wifi = EventKinds(rawValue: 1 << 1), cell = EventKinds(rawValue: 1 << 2)
    public static let imu = EventKinds(rawValue: 1 << 3), step = EventKinds(rawValue: 1 << 4), acoustic = EventKinds(rawValue: 1 << 5)
    public static let peerRange = EventKinds(rawValue: 1 << 6), photo = EventKinds(rawValue: 1 << 7), groundTruth = EventKinds(rawValue: 1 << 8)
    public static let ble = EventKinds(rawValue: 1 << 9)
    public static let all = EventKinds(rawValue: 0x3FF)
    /// The kind of `payload`.
    /// Inlinable: called across modules (`ReportRefiner.fuse`), it copied the payload of an
    /// array element to pass it (≈ 150 instructions per evidence event, docs/refine.md).
    @inlinable public init(_ payload: TraceEvent.Payload) {
        switch payload {
        case .gnss: self = .gnss
        case .wifi: self = .wifi
        case .ble: self = .ble
        case .cell: self = .cell
        case .imu: self = .imu
        case .step: self = .step
        case .acoustic: self = .acoustic
        case .peerRange: self = .peerRange
        case .photo: self = .photo
        case .groundTruth: self = .groundTruth
        }
    }
}

/// What a stage reads: the event kinds whose raw events it uses, and whether it reads the
/// results of the stages before it. A stage called with an event of another kind and no
/// upstream result (or with upstream results it does not read) must return nothing and change
/// no state: `Pipeline.process` then skips the call (most events are IMU samples, which 8 of
/// the default pipeline's 11 stages ignore).
public struct StageInputs: Sendable {
    public var events: EventKinds
    public var upstream: Bool
    public init(events: EventKinds, upstream: Bool) { self.events = events; self.upstream = upstream }
    /// Every event and every upstream result (the default).
    public static let everything = StageInputs(events: .all, upstream: true)
}

/// A stage of a replay pipeline: stand-alone estimators and fusion filters alike.
///
/// Replay flows one way: reader → pipeline → scorer. For each event in time order the
/// pipeline calls every stage in order; a stage sees the raw event and the results of
/// the stages before it for that event (so filters consume estimators' fixes and
/// measurement models). At the end `finish` lets offline stages (the smoother) emit.
public protocol PipelineStage: AnyObject {
    /// The sources whose fixes this stage emits.
    var sources: [Source] { get }
    /// Handle one event; `upstream` holds what earlier stages emitted for it.
    func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult]
    /// End of trace. A stage that has seen no event since it was made or reset returns nothing
    /// and changes nothing here (it reports on what it saw): `Pipeline.finish` does not call it
    /// then (`PipelineUnreadWorkTests.unusedStagesFinishWithNothing`).
    func finish(context: PipelineContext) -> [StageResult]
    /// A new stage with this one's configuration (its parsed options) and none of its per-trace
    /// state: what `PipelinePrototype` hands each report or request instead of parsing the
    /// options again. It only reads immutable configuration, so prototypes may be shared
    /// across threads (`serve`).
    func fresh() -> any PipelineStage
    /// Clears every piece of per-trace state, so that the stage goes on exactly as `fresh()`
    /// would (same configuration, nothing from any earlier trace): what `refine` does between
    /// reports instead of building its pipeline again. Each stage lists its own state (no
    /// default implementation: a new stage has to say what it keeps). Collections are replaced
    /// by new empty ones, not emptied with their capacity kept: a dictionary's iteration order
    /// depends on its capacity, and a fresh stage's is the empty one's. `RefineResetTests`
    /// checks the bytes of refine's output against a fresh pipeline per report.
    func reset()
    /// What the stage reads (default: everything); `Pipeline.process` skips the stage for an
    /// event it provably ignores. Declare less only when `process` starts by returning `[]` for
    /// the other kinds (and does not look at `upstream` unless `upstream` is true).
    var inputs: StageInputs { get }
    /// Called once by `Pipeline.init` with the pipeline's stages and this stage's index: a stage
    /// may keep a reference to an earlier stage of the same pipeline whose result for the same
    /// event it would otherwise compute again (`HAPELStage` takes `WCLStage`'s fix of a first
    /// scan), or read, never change, a later stage's state, which before the later stage sees an
    /// event holds only earlier events (`GNSSStage` reads the ekf's online scales to report a
    /// fix's region; the ekf fuses the fix unwidened). Default: nothing. A link is part of the pipeline's structure: `reset()` keeps it,
    /// `fresh()` does not (the new pipeline links its own stages).
    func link(_ stages: [any PipelineStage], at index: Int)
    /// Whether the stage may read an upstream `.measurement` of `source` that observes the
    /// position (a `PositionMeasurement`, the tight-coupling form of that source's fix). Default:
    /// whenever it reads upstream results at all (`inputs.upstream`). A stage that emits such a
    /// measurement beside its fix asks the later stages once (`link`) and builds it only when one
    /// of them may read it (`GNSSStage`).
    func readsPositionMeasurements(of source: Source) -> Bool
}

extension PipelineStage {
    public func finish(context: PipelineContext) -> [StageResult] { [] }
    public var inputs: StageInputs { .everything }
    public func link(_ stages: [any PipelineStage], at index: Int) {}
    public func readsPositionMeasurements(of source: Source) -> Bool { inputs.upstream }
}

/// Whether a stage's fixes are followed by their `PositionMeasurement` (the tight-coupling form
/// of the same fix): true unless `link` found that no later stage of the pipeline reads one
/// (`readsPositionMeasurements(of:)`; only a filter with the source in its `tight` list does, so
/// in the default pipeline none is built). A stage outside a pipeline emits it. Building an unread
/// one allocated its z, its R and its existential box (≈ 1k instructions per fix, every refined
/// report). Part of the pipeline's structure: `reset()` keeps it, `fresh()` links again.
/// The one rule of the stages that emit them (`gnss`, `wcl`, `rss`, `fingerprint`, `ble`).
public struct PositionMeasurementEmission: Sendable {
    public let source: Source
    public private(set) var isOn = true
    public init(_ source: Source) { self.source = source }
    /// Asks the stages after `index` (a stage's `link`).
    public mutating func link(_ stages: [any PipelineStage], at index: Int) {
        isOn = stages[(index + 1)...].contains { $0.readsPositionMeasurements(of: source) }
    }
    /// `f` as a fix, followed by its position measurement when on.
    @inline(__always) public func results(_ f: Fix, subject: String) -> [StageResult] {
        isOn ? [.fix(f), .measurement(PositionMeasurement(fix: f), subject: subject)] : [.fix(f)]
    }
}

/// An ordered list of stages.
public final class Pipeline {
    public let stages: [any PipelineStage]
    /// Each stage's `inputs`, read once (`EventKinds` bits; upstream flags).
    private let eventMasks: [UInt16]
    private let readsUpstream: [Bool]
    public init(stages: [any PipelineStage]) {
        self.stages = stages
        eventMasks = stages.map(\.inputs.events.rawValue)
        readsUpstream = stages.map(\.inputs.upstream)
        stageSources = stages.map(\.sources.first)
        for (i, s) in stages.enumerated() { s.link(stages, at: i) }
    }

    public var sources: [Source] { stages.flatMap(\.sources) }
    /// The first of each stage's `sources` (nil: none), taken once.
    public let stageSources: [Source?]

    /// Run all stages on one event; returns every stage's results in order.
    public func process(_ event: TraceEvent, context: PipelineContext) -> [StageResult] {
        // Most stages return nothing for most events (an IMU sample): `results += []` still
        // reallocated the shared buffer (measured: 11 reallocations per event, 13 % of a replay).
        var results: [StageResult] = []
        let kind = EventKinds(event.payload).rawValue
        for i in stages.indices {
            // A stage that reads neither this kind of event nor (with something upstream) the
            // results before it would return nothing: not called (`StageInputs`).
            if eventMasks[i] & kind == 0 && (results.isEmpty || !readsUpstream[i]) { continue }
            if dormant & Self.dormantBit(i) != 0 { continue }
            ran |= Self.bit(i)
            let r = stages[i].process(event, upstream: results, context: context)
            if r.isEmpty { continue }
            if results.isEmpty { results = r } else { results.append(contentsOf: r) }
        }
        return results
    }

    /// Every stage's `finish`, except the stages not called since the last `reset()`: in their
    /// reset state they have nothing to finish (`PipelineStage.finish`). (A report without evidence
    /// called the nine stages that saw no event, ≈ 1k instructions, and the reset then reset them.)
    public func finish(context: PipelineContext) -> [StageResult] {
        var results: [StageResult] = []
        for i in stages.indices {
            if dormant & Self.dormantBit(i) != 0 || ran & Self.bit(i) == 0 { continue }
            let r = stages[i].finish(context: context)
            // `results += []` reallocated the buffer once per stage (11 allocations per report).
            if r.isEmpty { continue }
            if results.isEmpty { results = r } else { results.append(contentsOf: r) }
        }
        return results
    }

    /// Stages that `process` and `finish` do not call (bit i = `stages[i]`; stages from the
    /// 64th on are always called), until `reset()`, which clears it. The caller's promise:
    /// nothing such a stage would return matters to it (`ReportRefiner.fuse` sets it per report
    /// for the stages whose own evidence the report does not carry).
    public var dormant: UInt64 = 0
    /// Stages `process` or `finish` called since the last `reset()` (bit i = `stages[i]`, the
    /// 64th and later share bit 63). All set at first: the stages given to `init` may have run.
    private var ran: UInt64 = ~0
    @inline(__always) private static func bit(_ i: Int) -> UInt64 { i < 63 ? 1 << UInt64(i) : 1 << 63 }
    @inline(__always) private static func dormantBit(_ i: Int) -> UInt64 { i < 64 ? 1 << UInt64(i) : 0 }

    /// Every stage's `reset()`: the pipeline then behaves as `PipelinePrototype.make()`'s.
    /// A stage this pipeline has not called since its last reset is skipped: its per-trace
    /// state is still what that reset left (the refine output is the same as with a new
    /// pipeline per report: `RefineResetTests`).
    public func reset() {
        for i in stages.indices where ran & Self.bit(i) != 0 { stages[i].reset() }
        ran = 0; dormant = 0
    }
}

/// A pipeline configuration parsed once: `make()` gives a pipeline of fresh stages (no state
/// from any earlier trace) without parsing the options again. `refine` builds one per
/// configuration and a new pipeline per report; `serve` one per server and a pipeline per
/// request (building the stages from their options cost ≈ 23k instructions per report, more
/// with a configuration file: docs/refine.md, "Throughput").
///
/// Thread safety: the prototype's stages are never run; `fresh()` reads only their immutable
/// configuration, so one prototype serves concurrent requests.
public final class PipelinePrototype: @unchecked Sendable {
    private let stages: [any PipelineStage]
    public init(stages: [any PipelineStage]) { self.stages = stages }
    /// The stages' sources, in pipeline order.
    public var sources: [Source] { stages.flatMap(\.sources) }
    /// A new pipeline with fresh stages.
    public func make() -> Pipeline { Pipeline(stages: stages.map { $0.fresh() }) }
    /// The prototype's stages, for inspection (settings); never run them.
    public var configuredStages: [any PipelineStage] { stages }
}
