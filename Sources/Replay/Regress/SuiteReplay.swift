import Foundation
import Positioning

/// Replays traces through a pipeline and scores every fix against ground truth, producing
/// the `RunResults` that `posfuse regress`, `compare` and `report` consume.
///
/// Scoring (the definitions of `design/estimators.md` §8, as `posfuse replay` reports them):
/// 1. Truth of a fix is the `gt` track of the fix's subject (`Fix.subject` = the gt event's
///    `device`), converted to ENU with the trace header's frame, **linearly interpolated** at
///    the fix time between the two neighbouring truth samples t_i ≤ t ≤ t_{i+1}. A fix is
///    scored only when such samples exist (never extrapolated) and t_{i+1} − t_i ≤
///    `maxTruthGap` (default 2 s).
/// 2. Per scored fix: error vector e = p̂ − p (m), error e = ‖e‖₂, NEES eᵀP⁻¹e (absent if P is
///    singular), and the radius of the reported 95 % circle (`Covariance2.circularRadius`;
///    closed form σ√(−2 ln 0.05) for an isotropic P).
/// 3. Per source: `count` (scored fixes), `availability` = share of the primary subject's
///    truth samples that have a fix of the source within `availabilityWindow` (1 s), and
///    the `EpochMetrics` (mean, median, P75, P90, P95, RMSE, max, inside95, ANEES).
///
/// Memory: events stream from the reader; only fixes and truth samples are kept.
public struct SuiteReplay {
    public var options: [String: StageOptions]
    public var mode: TraceReadMode
    public var maxTruthGap: Double
    public var availabilityWindow: Double

    public init(options: [String: StageOptions] = [:], mode: TraceReadMode = .lenient,
                maxTruthGap: Double = 2, availabilityWindow: Double = 1) {
        self.options = options; self.mode = mode; self.maxTruthGap = maxTruthGap; self.availabilityWindow = availabilityWindow
    }

    /// Replay and score all locations in order.
    public func run(_ locations: [TraceLocation], label: String, progress: Bool = false) throws -> RunResults {
        var traces: [TraceResult] = []
        for loc in locations {
            let size = (try? FileManager.default.attributesOfItem(atPath: loc.trace.path)[.size] as? NSNumber)?.int64Value
            let p = progress ? Progress(label: "replay \(loc.name)", total: size) : nil
            defer { p?.finish() }
            traces.append(try run(loc, progress: p))
        }
        return RunResults(label: label, traces: traces)
    }

    /// Replay and score one trace. Throws `TraceDataError` (bad trace or reference data) or
    /// `ConfigurationError` (bad pipeline options).
    public func run(_ location: TraceLocation, progress: Progress? = nil) throws -> TraceResult {
        let reader = try TraceReader(url: location.trace, mode: mode)
        let header = reader.header
        let reference = location.reference == nil ? ReferenceData.empty : try ReferenceLoader.load(url: location.reference!, frame: header.frame)
        let pipeline = try StageRegistry.pipeline(options: options)
        let ctx = PipelineContext(header: header, reference: reference)
        var fixes: [Fix] = []
        var truth: [String: [(Double, SIMD2<Double>)]] = [:]
        var n: Int64 = 0
        func collect(_ rs: [StageResult]) { for r in rs { if case .fix(let f) = r { fixes.append(f) } } }
        while let e = try reader.next() {
            if case .groundTruth(let g) = e.payload {
                let p: SIMD2<Double>
                switch g.position {
                case .geodetic(let q): let v = header.frame.enu(q); p = SIMD2(v.x, v.y)
                case .local(let v): p = SIMD2(v.x, v.y)
                }
                truth[e.device, default: []].append((e.time, p))
            }
            collect(pipeline.process(e, context: ctx))
            n += 1
            if let progress, n & 0x3FFF == 0 { progress.update(completed: reader.bytesRead) }
        }
        collect(pipeline.finish(context: ctx))
        for k in truth.keys { truth[k]!.sort { $0.0 < $1.0 } }
        return score(name: location.name, fixes: fixes, truth: truth, skipped: reader.stats.skippedTotal)
    }

    /// Score fixes against truth tracks (step 1–3 above).
    public func score(name: String, fixes: [Fix], truth: [String: [(Double, SIMD2<Double>)]], skipped: Int = 0) -> TraceResult {
        var bySource: [Source: [EpochSample]] = [:]
        for f in fixes {
            guard let track = truth[f.subject], let p = Self.interpolate(track, at: f.time, maxGap: maxTruthGap) else {
                bySource[f.source, default: []] += []
                continue
            }
            let ev = f.position - p
            let c = f.covariance
            let iso = abs(c.ee - c.nn) <= 1e-12 * max(c.ee, c.nn) && abs(c.en) <= 1e-12 * max(c.ee, c.nn)
            let r95: Double? = c.isValid && c.trace > 0 ? (iso ? c.ee.squareRoot() * (-2 * log(0.05)).squareRoot() : c.circularRadius(probability: 0.95)) : nil
            bySource[f.source, default: []].append(EpochSample(time: f.time, error: (ev.x * ev.x + ev.y * ev.y).squareRoot(),
                                                               radius95: r95, nees: c.mahalanobis2(ev), estimate: f.position, truth: p))
        }
        let primary = truth[Fix.defaultSubject] ?? truth.values.max { $0.count < $1.count } ?? []
        var sources: [SourceResult] = []
        for s in bySource.keys.sorted() {
            let epochs = bySource[s]!.sorted { $0.time < $1.time }
            var m = EpochMetrics.compute(epochs)
            m["count"] = Double(epochs.count)
            if !primary.isEmpty {
                let times = epochs.map(\.time)
                var hit = 0, j = 0
                for (t, _) in primary {
                    while j < times.count && times[j] < t - availabilityWindow { j += 1 }
                    if j < times.count && abs(times[j] - t) <= availabilityWindow { hit += 1 }
                }
                m["availability"] = Double(hit) / Double(primary.count)
            }
            sources.append(SourceResult(source: s.rawValue, metrics: m, epochs: epochs))
        }
        return TraceResult(trace: name, sources: sources, skipped: skipped)
    }

    /// Linear interpolation of a time-sorted track at t; nil outside it or across a gap > maxGap.
    static func interpolate(_ track: [(Double, SIMD2<Double>)], at t: Double, maxGap: Double) -> SIMD2<Double>? {
        guard let first = track.first, let last = track.last, t >= first.0, t <= last.0 else { return nil }
        var lo = 0, hi = track.count - 1
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if track[mid].0 <= t { lo = mid } else { hi = mid }
        }
        let (t0, p0) = track[lo], (t1, p1) = track[hi]
        if t == t0 { return p0 }
        if t == t1 { return p1 }
        guard t1 - t0 <= maxGap, t1 > t0 else { return nil }
        let w = (t - t0) / (t1 - t0)
        return p0 + w * (p1 - p0)
    }
}
