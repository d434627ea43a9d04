import Foundation
import Positioning
import Scoring
import Survey

// The dataset protocols `posfuse evaluate radio` runs, moved out of the command: each takes the
// loaded data and returns what the command prints.

extension CellEvaluation {
    /// Leave-one-walk-out over `walks`: each walk is tested against towers and coverage built
    /// from all the others; the folds' results pooled, β̂ their median.
    public func leaveOneWalkOut(_ walks: [RecordedWalk]) throws -> Raw {
        var pooled = Raw()
        var betas: [Double] = []
        for i in walks.indices {
            let r = try run(train: walks.enumerated().filter { $0.offset != i }.map(\.element), test: [walks[i]])
            pooled.merge(r); betas.append(r.beta)
        }
        pooled.beta = RadioStats.median(betas) ?? 0
        return pooled
    }
}

extension UJIIndoorLocReader {
    /// The rows and folds of an evaluation: given `train` and `test` files, one fold of them;
    /// else every row of `all` split by `split` (seeded for `random`). Returns also the split's label.
    public static func folds(train: [URL], test: [URL], all: [URL], split: UJISplit, trainFraction: Double,
                             seed: UInt64) throws -> (rows: [Row], folds: [UJISplit.Fold], label: String) {
        if all.isEmpty {
            var tr: [Row] = [], te: [Row] = []
            for u in train { tr += try read(u) }
            for u in test { te += try read(u) }
            let rows = tr + te
            return (rows, [UJISplit.Fold(name: "train/test", train: Array(tr.indices), test: Array(tr.count..<rows.count))], "train/test files")
        }
        var rows: [Row] = []
        for u in all { rows += try read(u) }
        return (rows, split.folds(rows, trainFraction: trainFraction, seed: seed), split.label)
    }

    /// WCL from an AP map on every fold (`evaluate(train:test:wcl:)`), pooled: the errors
    /// (EPSG:3857 m) and the share of fixes on the right floor.
    public static func evaluate(rows: [Row], folds: [UJISplit.Fold], wcl: WCLEstimator) -> (errors: [Double], floorHitRate: Double) {
        var errors: [Double] = [], floorHits = 0.0
        for f in folds {
            let e = evaluate(train: f.train.map { rows[$0] }, test: f.test.map { rows[$0] }, wcl: wcl)
            errors += e.errors; floorHits += e.floorHits * Double(e.errors.count)
        }
        return (errors, errors.isEmpty ? 0 : floorHits / Double(errors.count))
    }
}
