import Foundation
import Positioning
import Scoring
import Storage
import TraceIO

extension SweepStore {
    /// Stores one finished run of the study (its estimates and result, and its `sweep_runs`
    /// row: key, study, grid point, input, seed) in one transaction. Returns false (and stores
    /// nothing) when a run with that key is already there.
    @discardableResult
    public func record(plan: SweepPlan, run: SweepPlan.Run, result: ReplayResult, estimates: [ScoredEstimate],
                       parameters: String, version: String) throws -> Bool {
        let info = ResultStore.RunInfo(pipeline: plan.pipelineYAML(point: run.point), trace: result.location.trace.path,
                                       traceName: plan.traceName(run), version: version, parameters: parameters)
        do {
            _ = try results.record(info, then: { db, id in
                try SweepStore.claim(db, run: id, key: run.key, study: plan.study.name, point: plan.pointJSON(run.point),
                                     input: plan.study.inputs[run.input].label, seed: run.seed)
            }) { w in
                for e in estimates { try w.insert(e) }
                return result
            }
            return true
        } catch is AlreadyStored {
            return false
        }
    }
}
