import Foundation
import Positioning
import TraceIO

/// Where exported positions come from: ground truth of a trace, and the estimates of
/// running the default pipeline over it.
public enum ExportInput {
    /// Runs `pipeline` over `events` (time order) and returns every fix (a minimal replay
    /// loop: reader → pipeline, no scoring).
    public static func estimates(events: [TraceEvent], header: TraceHeader, reference: ReferenceData = .empty,
                                 pipeline: Pipeline) -> [Fix] {
        let ctx = PipelineContext(header: header, reference: reference)
        var fixes: [Fix] = []
        func collect(_ rs: [StageResult]) { for r in rs { if case .fix(let f) = r { fixes.append(f) } } }
        for e in events { collect(pipeline.process(e, context: ctx)) }
        collect(pipeline.finish(context: ctx))
        return fixes
    }

    /// Ground truth (`gt`) of the trace plus the estimates of `sources` (nil = all) from the
    /// pipeline; `gnss` without a pipeline stage falls back to the trace's GNSS events.
    public static func points(events: [TraceEvent], header: TraceHeader, sources: Set<String>?, reference: ReferenceData = .empty,
                              pipeline: Pipeline?) -> [ExportPoint] {
        var pts = ExportBuilder.points(events: events, header: header, sources: sources.map { $0.intersection(["gt"]) } ?? ["gt"])
        let wanted = sources.map { $0.subtracting(["gt"]) }
        if wanted?.isEmpty ?? false { return pts }
        if let p = pipeline {
            let fixes = estimates(events: events, header: header, reference: reference, pipeline: p)
            pts += ExportBuilder.points(fixes: fixes, header: header, sources: wanted)
            if wanted?.contains("gnss") ?? false, !p.sources.contains(.gnss) {
                pts += ExportBuilder.points(events: events, header: header, sources: ["gnss"])
            }
        } else {
            pts += ExportBuilder.points(events: events, header: header, sources: wanted.map { $0.intersection(["gnss"]) } ?? ["gnss"])
        }
        return pts
    }
}

extension ExportInput {
    /// Positions of a finished run (`posfuse replay --json --epochs` output) for one trace:
    /// each epoch's estimate of the chosen sources and its matched truth (`gt`, once per
    /// time). The run holds only the 95 % radius, so the covariance is the isotropic
    /// σ²·I with σ = radius95 / 2.4477 (exact for circular estimates). Height is 0 (ENU up).
    public static func points(run: TraceResult, header: TraceHeader, sources: Set<String>?) -> [ExportPoint] {
        let frame = header.frame
        let k = Covariance2.ellipseScale(probability: 0.95)
        var out: [ExportPoint] = []
        var truthTimes = Set<Double>()
        for s in run.sources {
            for e in s.epochs ?? [] {
                if let tr = e.truth, sources?.contains("gt") ?? true, truthTimes.insert(e.time).inserted {
                    let v = SIMD3(tr.x, tr.y, 0)
                    out.append(ExportPoint(time: e.time, source: "gt", subject: Fix.defaultSubject, geodetic: frame.geodetic(v), enu: v))
                }
                guard sources?.contains(s.source) ?? true, let est = e.estimate else { continue }
                let v = SIMD3(est.x, est.y, 0)
                let cov = e.radius95.flatMap { $0 > 0 && $0.isFinite ? Covariance2(sigma: $0 / k) : nil }
                out.append(ExportPoint(time: e.time, source: s.source, subject: Fix.defaultSubject, geodetic: frame.geodetic(v),
                                       enu: v, covariance: cov))
            }
        }
        return out
    }
}
