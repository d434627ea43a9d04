import Foundation
import Positioning

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
