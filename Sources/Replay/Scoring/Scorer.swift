import Foundation
import Positioning
import TraceIO

/// Settings of the scorer (`docs/metrics.md`).
public struct ScoringOptions: Sendable, Equatable {
    /// Longest interval between two truth samples of a subject across which truth is
    /// interpolated, s. Estimates inside a longer gap are not scored (`truth_gap`), and
    /// the gap does not count as truth time for availability. Default 5 s.
    public var maxTruthGap: Double
    /// How long an estimate stays valid for availability, s: an estimate at t covers the
    /// truth time [t, t + fixValidity]. Default 2 s.
    public var fixValidity: Double
    /// Keep the per-epoch samples (`posfuse replay --json --epochs`, reports).
    public var keepEpochs: Bool
    /// Checkpoint scoring (`CheckpointScore`): the longest gap between the two estimates a
    /// checkpoint is interpolated between, and the oldest estimate that is still held, s.
    /// Default 10 s (WiFi scans on the ms-indoor walks come every 2–10 s).
    public var checkpointHold: Double = ScoringOptions.defaultCheckpointHold
    public static let defaultCheckpointHold = 10.0

    public static let defaultMaxTruthGap = 5.0
    public static let defaultFixValidity = 2.0

    public init(maxTruthGap: Double = ScoringOptions.defaultMaxTruthGap,
                fixValidity: Double = ScoringOptions.defaultFixValidity, keepEpochs: Bool = false) {
        self.maxTruthGap = maxTruthGap; self.fixValidity = fixValidity; self.keepEpochs = keepEpochs
    }
}

/// Which kind of subject an estimate locates: the phones of the trace, or objects
/// (`object:<id>`, e.g. landmarks reported by CamLoc). Scores are kept per source and group.
public enum SubjectGroup: String, Sendable, CaseIterable, Comparable {
    case phones
    case objects

    public init(subject: String) { self = Subject.isObject(subject) ? .objects : .phones }

    public static func < (a: SubjectGroup, b: SubjectGroup) -> Bool { a == .phones && b == .objects }
}

/// One estimate as the scorer saw it (for result storage and per-epoch output).
public struct ScoredEstimate: Sendable {
    public var fix: Fix
    /// Interpolated truth (local ENU, m), when scored.
    public var truth: SIMD2<Double>?
    /// Horizontal error ‖p̂ − p‖₂, m, when scored.
    public var error: Double?
    /// NEES dᵀP⁻¹d, when scored and the covariance is usable.
    public var nees: Double?
    /// Why it was not scored (nil when scored).
    public var unscored: UnscoredReason?
}

/// The scores of one source on one trace, for one subject group.
public struct SourceScore: Sendable, Equatable {
    public var source: Source
    public var group: SubjectGroup
    /// Estimates the pipeline emitted (scored or not).
    public var fixes: Int
    /// Statistics of the scored estimates; nil when none was scored.
    public var statistics: ErrorStatistics?
    /// Share of truth time with an estimate (`docs/metrics.md`); nil when undefined.
    public var availability: Double?
    /// Estimates not scored, by reason (`UnscoredReason` raw values).
    public var unscored: [String: Int]
    /// Per-epoch samples (only with `ScoringOptions.keepEpochs`).
    public var epochs: [EpochSample]?

    /// Scored estimates.
    public var count: Int { statistics?.count ?? 0 }

    /// The name used in output: the source name for phones (`gnss`), `<source>:object`
    /// for objects (`camloc:object`).
    public var key: String { group == .phones ? source.rawValue : source.rawValue + ":object" }
}

/// Everything the scorer found for one trace.
public struct TraceScores: Sendable, Equatable {
    /// Per source and subject group, in `Source` order, phones before objects.
    public var sources: [SourceScore]
    /// Estimation failures (`StageResult.failure`): source → reason code → count.
    public var failures: [String: [String: Int]]
    /// Subjects with ground truth.
    public var truthSubjects: [String]
    /// Scorable truth time of the phone subjects (sum over subjects), s.
    public var truthSeconds: Double
    /// Scores at the checkpoints of phone subjects whose truth is checkpoints only
    /// (`CheckpointScore`); empty when every subject has continuous truth.
    public var checkpoints: [CheckpointScore] = []

    public func score(_ key: String) -> SourceScore? { sources.first { $0.key == key } }
}

/// Scores a stream of pipeline results against the ground truth of the same trace.
///
/// Feed it every event (it keeps the `gt` ones) and every pipeline result, in replay
/// order; `finish()` returns the scores. An estimate is scored as soon as its subject's
/// truth reaches its time (truth after it is needed to interpolate), so memory holds the
/// truth track and a few numbers per scored estimate, not the events.
///
/// Truth per subject (`TraceEvent.device` of `gt` events): WGS84 positions are
/// converted to local ENU with the header's frame, local `e`/`n` are taken as they are.
/// Interpolation, gaps and the no-extrapolation rule: `GroundTruthTrack`.
public final class Scorer {
    public let frame: LocalFrame
    public let options: ScoringOptions
    /// Called once for every estimate when it is scored or found unscorable (result store).
    public var onEstimate: ((ScoredEstimate) throws -> Void)?

    private var truth: [String: GroundTruthTrack] = [:]
    private var pending: [String: [Fix]] = [:]
    /// A fusion filter's latest output per source and subject, held until an output at a later
    /// time arrives: the filter's estimate at time t is its state after *all* inputs at t (a
    /// dual-SIM phone's two serving cells are two events at one time; scoring the intermediate
    /// state too would weigh that epoch twice and compare the filter with its smoother on
    /// different epochs).
    private var heldFusion: [String: Fix] = [:]
    private var acc: [Key: Accumulator] = [:]
    private var failures: [String: [String: Int]] = [:]
    private var checkpointTracker = CheckpointTracker()
    /// Largest event time seen (the stream time).
    private var now = -Double.infinity
    /// Estimates waiting for truth (memory check in tests).
    private(set) var pendingCount = 0
    private var pendingCheck = 0

    private struct Key: Hashable { var source: Source; var group: SubjectGroup }
    private struct Accumulator {
        var fixes = 0
        var errE: [Double] = []
        var errN: [Double] = []
        var nees: [Double] = []
        var times: [String: [Double]] = [:]
        var unscored: [String: Int] = [:]
        var epochs: [EpochSample] = []
    }

    public init(frame: LocalFrame, options: ScoringOptions = ScoringOptions()) {
        self.frame = frame; self.options = options
    }

    /// Ground truth of a `gt` event in local ENU (m).
    public static func enu(_ g: GroundTruth, frame: LocalFrame) -> SIMD2<Double> {
        switch g.position {
        case .geodetic(let p): return frame.en(latitude: p.latitude, longitude: p.longitude, height: p.height)
        case .local(let v): return SIMD2(v.x, v.y)
        }
    }

    /// Takes the ground truth of an event (other events are ignored) and scores the
    /// waiting estimates of its subject that it now brackets.
    public func add(event: TraceEvent) throws {
        if event.time > now { now = event.time }
        guard case .groundTruth(let g) = event.payload else {
            pendingCheck &+= 1
            if pendingCheck & 0xFF == 0, pendingCount > 0 { try settleHopeless() }
            return
        }
        let s = event.device
        let p = Self.enu(g, frame: frame)
        truth[s, default: GroundTruthTrack(subject: s)].append(time: event.time, position: p)
        checkpointTracker.add(truth: g, subject: s, time: event.time, position: p)
        guard var waiting = pending[s], !waiting.isEmpty else { return }
        let t = event.time
        let ready = waiting.filter { $0.time <= t }
        guard !ready.isEmpty else { return }
        waiting.removeAll { $0.time <= t }
        pending[s] = waiting
        pendingCount -= ready.count
        for f in ready { try score(f) }
    }

    /// Scores the waiting estimates no future truth can bracket, so that memory stays flat
    /// when truth is missing: events arrive in time order, so once the stream time `now`
    /// is past an estimate's time, a later truth sample is later than it too. A moving
    /// subject whose last truth sample is more than the max truth gap before `now` can
    /// only get a bracket wider than the gap (`truth_gap`); a subject without any truth
    /// yet has none at or before the estimate (`no_truth`). Objects (static) keep waiting.
    private func settleHopeless() throws {
        for s in pending.keys.sorted() where !Subject.isObject(s) {
            guard var waiting = pending[s], !waiting.isEmpty else { continue }
            let last = truth[s]?.lastTime
            if let last, now <= last + options.maxTruthGap { continue }
            let done = waiting.filter { $0.time < now }
            guard !done.isEmpty else { continue }
            waiting.removeAll { $0.time < now }
            pending[s] = waiting
            pendingCount -= done.count
            for f in done { try score(f, unscoredReason: last == nil ? .noTruth : .truthGap) }
        }
    }

    /// Takes pipeline results: fixes are scored (now or when truth reaches their time),
    /// failures counted, measurements ignored.
    public func add(_ results: [StageResult]) throws {
        for r in results {
            switch r {
            case .fix(let f) where f.source.isFusion:
                let k = f.source.rawValue + "|" + f.subject
                if let held = heldFusion[k], held.time != f.time { try route(held) }
                heldFusion[k] = f
            case .fix(let f):
                try route(f)
            case .failure(let source, _, _, let reason):
                failures[source.rawValue, default: [:]][reason.code, default: 0] += 1
            case .measurement:
                break
            }
        }
    }

    /// Scores a fix now, or keeps it until truth reaches its time.
    private func route(_ f: Fix) throws {
        checkpointTracker.add(f)
        if let last = truth[f.subject]?.lastTime, last >= f.time {
            try score(f)
        } else if f.time.isFinite {
            pending[f.subject, default: []].append(f)
            pendingCount += 1
        } else {
            try score(f)
        }
    }

    private func score(_ f: Fix, unscoredReason: UnscoredReason? = nil) throws {
        let key = Key(source: f.source, group: SubjectGroup(subject: f.subject))
        var a = acc[key] ?? Accumulator()
        a.fixes += 1
        var out = ScoredEstimate(fix: f)
        let valid = f.time.isFinite && f.position.x.isFinite && f.position.y.isFinite
        let located: Result<SIMD2<Double>, UnscoredReason>
        if let unscoredReason {
            located = .failure(unscoredReason)
        } else {
            located = valid ? (truth[f.subject]?.position(at: f.time, maxGap: options.maxTruthGap) ?? .failure(.noTruth))
                            : .failure(.noTruth)
        }
        switch located {
        case .failure(let why):
            a.unscored[why.rawValue, default: 0] += 1
            out.unscored = why
        case .success(let p):
            let d = f.position - p
            let e = (d.x * d.x + d.y * d.y).squareRoot()
            let nees = f.covariance.isValid ? f.covariance.mahalanobis2(d) : nil
            a.errE.append(d.x); a.errN.append(d.y)
            if let nees, nees.isFinite { a.nees.append(nees) }
            a.times[f.subject, default: []].append(f.time)
            if options.keepEpochs {
                let c = f.covariance
                let isotropic = abs(c.ee - c.nn) <= 1e-12 * max(c.ee, c.nn) && abs(c.en) <= 1e-12 * max(c.ee, c.nn)
                // Circle holding 95 %: closed form σ√(−2 ln 0.05) when isotropic, else numerical.
                let r95 = c.isValid && c.trace > 0
                    ? (isotropic ? c.ee.squareRoot() * ErrorStatistics.chi2Two95.squareRoot() : c.circularRadius(probability: 0.95)) : nil
                a.epochs.append(EpochSample(time: f.time, error: e, radius95: r95, nees: nees, estimate: f.position, truth: p))
            }
            out.truth = p; out.error = e; out.nees = nees
        }
        acc[key] = a
        try onEstimate?(out)
    }

    /// Scores what is still waiting (estimates after the last truth sample are not scored)
    /// and returns the scores.
    public func finish() throws -> TraceScores {
        for k in heldFusion.keys.sorted() { try route(heldFusion[k]!) }
        heldFusion = [:]
        for s in pending.keys.sorted() {
            for f in pending[s] ?? [] { try score(f) }
        }
        pending = [:]
        pendingCount = 0
        let gap = options.maxTruthGap
        var intervals: [String: [ClosedRange<Double>]] = [:]
        var truthSeconds = 0.0
        for (s, tr) in truth where !tr.isStatic {
            let iv = tr.scorableIntervals(maxGap: gap)
            intervals[s] = iv
            truthSeconds += iv.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) }
        }
        let objects = truth.keys.filter { Subject.isObject($0) }
        var out: [SourceScore] = []
        for key in acc.keys.sorted(by: { ($0.source, $0.group) < ($1.source, $1.group) }) {
            let a = acc[key]!
            var availability: Double?
            switch key.group {
            case .phones:
                if truthSeconds > 0 {
                    var covered = 0.0
                    for (s, ts) in a.times { covered += coveredLength(starts: ts, width: options.fixValidity, within: intervals[s] ?? []) }
                    availability = min(1, covered / truthSeconds)
                }
            case .objects:
                if !objects.isEmpty {
                    availability = Double(objects.filter { a.times[$0] != nil }.count) / Double(objects.count)
                }
            }
            out.append(SourceScore(source: key.source, group: key.group, fixes: a.fixes,
                                   statistics: ErrorStatistics(errorE: a.errE, errorN: a.errN, nees: a.nees),
                                   availability: availability, unscored: a.unscored,
                                   epochs: options.keepEpochs ? a.epochs : nil))
        }
        return TraceScores(sources: out, failures: failures, truthSubjects: truth.keys.sorted(), truthSeconds: truthSeconds,
                           checkpoints: checkpointTracker.scores(hold: options.checkpointHold))
    }
}
