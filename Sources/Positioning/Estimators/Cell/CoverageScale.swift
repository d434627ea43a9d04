import Foundation

/// The coverage map's calibration, fitted on the map's own walks: per kind of area (whole
/// cell; cell + TA) the prior degrees ν₀ of the predictive and a scale s on it.
///
/// The predictive (`CellCoverageMap.predictiveCovariance`) is C = g(ν₀, m)·Σ̂ with
/// g(ν₀, m) = (1 + 1/m)·2F₀.₉₅(2, ν₀ + m − 1)/χ²₂,₀.₉₅ (m the area's walks, Σ̂ its spread
/// with the TA-step floor) and the default ν₀ = 1. Whether its 95 % region holds depends on
/// how the district's walks differ from one another (routes, buildings, hand-over points),
/// which the model only knows through m. So the map measures it on itself:
///
/// 1. Inner folds: the walks of one UTC day (`day(walkStart:)`; a walk whose times are not
///    Unix times is its own fold) are held out together, as a new phone's walk comes on
///    another day. For each fold, the map of the other folds (the same `Builder`) locates the
///    fold's reports by the stages' rule (`defaultMinCount`): a whole-cell area for every
///    report whose cell it knows, a (cell, TA) area for every report with a TA whose area it
///    knows; each gives q = dᵀΣ̂⁻¹d and the inner area's m (`Residual`), so its d² under any
///    ν₀ is q/g(ν₀, m).
/// 2. ν₀: the largest value in `priorRange` for which 95 % of all the kind's residuals lie
///    inside the 95 % ellipse (bisection on log ν₀; inside95 falls as ν₀ grows). ν₀ is the
///    tail shape, and it carries over from the inner maps (m − 1 walks) to the full map (m)
///    through g: a multiplicative factor fitted on the inner maps would not (g(ν₀, 2) is
///    2.2 × g(ν₀, 3) at ν₀ = 1, so a 3-walk map would be calibrated for 2-walk ones).
/// 3. s: each fold with at least `minFoldResiduals` residuals gives s_f = Q₀.₉₅(d²_f)/χ²₂,₀.₉₅
///    under the fitted ν₀ (Q type 7); s is the ⌈0.95(k + 1)⌉-th smallest of the k fold values
///    — the largest while k < 19 — so that, if days are exchangeable, a new day's s_f is
///    below s with probability ≥ 0.95 (the split-conformal order statistic, Vovk et al.,
///    Algorithmic Learning in a Random World, 2005; here over days, not reports).
///
/// Each area then stores its covariance factor on the model's predictive,
/// scale = s·g(ν₀, m)/g(1, m) (`CellCoverageMap.scaled`), so the predictive of an area is
/// unchanged in form and every store carries one number per area. Fewer than `minFolds` folds
/// (or fewer than `minFoldResiduals` residuals of a kind in every fold): ν₀ = 1, s = 1.
///
/// The scale is stored with every area (`Area.scale`; the cell database's and serve's
/// `cell_coverage.scale`, reference.json's `scale`), so `replay`, `refine` and `geolocate`
/// use it without an option; maps written before it read as 1 (the model alone).
public enum CoverageScale {
    /// One serving-cell report of a walk at its true position (ENU m).
    public struct Report: Sendable, Equatable {
        public var cell: CellID
        public var timingAdvance: Int?
        public var position: SIMD2<Double>
        public var walk: Int
        /// The inner fold of the walk (`fold(walkStart:)`): walks of one fold are held out together.
        public var fold: Int
        public init(cell: CellID, timingAdvance: Int?, position: SIMD2<Double>, walk: Int, fold: Int? = nil) {
            self.cell = cell; self.timingAdvance = timingAdvance; self.position = position; self.walk = walk
            self.fold = fold ?? walk
        }
    }

    /// The inner fold of a walk that starts at `t` (trace time, s): its UTC day (days since
    /// 1970) when `t` is a Unix time (≥ 1e9 s, after 9 Sep 2001), so the walks of one day —
    /// which share a route, a network state and often a phone — are held out together, as a
    /// new phone's walk comes on another day; else nil (the walk is its own fold).
    public static func day(walkStart t: Double) -> Int? {
        t >= 1e9 && t.isFinite ? Int((t / 86_400).rounded(.down)) : nil
    }

    /// The fitted values and the inner-fold residual counts behind them.
    public struct Fit: Sendable, Equatable {
        /// Prior degrees ν₀ of the predictive, per kind (the model's default 1 when not fitted).
        public var cellPriorDegrees = CellCoverageMap.priorDegrees, taPriorDegrees = CellCoverageMap.priorDegrees
        /// The widening s ≥ 1 on top, per kind.
        public var cell = 1.0, timingAdvance = 1.0
        public var cellResiduals = 0, taResiduals = 0
        public init() {}
    }

    /// Inner folds (days) a map needs before it is calibrated.
    public static let minFolds = 3
    /// d² values a fold needs before it gives a scale.
    public static let minFoldResiduals = 20
    /// The fitted quantile.
    public static let probability = 0.95

    /// The map of `reports` (`CellCoverageMap.Builder.map`).
    public static func uncalibrated(_ reports: [Report], excludingFold fold: Int? = nil) -> CellCoverageMap {
        var b = CellCoverageMap.Builder()
        for r in reports where r.fold != fold { b.add(cell: r.cell, timingAdvance: r.timingAdvance, at: r.position, walk: r.walk) }
        return b.map
    }

    /// One inner-fold residual: q = dᵀΣ̂⁻¹d against the inner map's spread Σ̂ (floor included)
    /// of an area of m walks; the predictive's d² is q / g(ν₀, m).
    public struct Residual: Sendable, Equatable {
        public var q: Double
        public var walks: Int
        public func d2(priorDegrees: Double, scale: Double = 1) -> Double { q / (inflation(priorDegrees: priorDegrees, walks: walks) * scale) }
    }

    /// g(ν₀, m) = (1 + 1/m)·2F₀.₉₅(2, ν₀ + m − 1)/χ²₂,₀.₉₅: the predictive's factor on Σ̂
    /// (`CellCoverageMap.predictiveCovariance`).
    public static func inflation(priorDegrees nu0: Double, walks: Int) -> Double {
        let m = Double(max(1, walks))
        return (1 + 1 / m) * CellCoverageMap.studentT95Factor(degrees: nu0 + m - 1)
    }

    /// The inner leave-one-fold-out residuals of `reports` (model above), by kind and fold.
    public static func residuals(_ reports: [Report], minCount: Int = CellCoverageMap.defaultMinCount)
        -> (cell: [Int: [Residual]], ta: [Int: [Residual]]) {
        var cell: [Int: [Residual]] = [:], ta: [Int: [Residual]] = [:]
        for w in Set(reports.map(\.fold)).sorted() {
            let inner = uncalibrated(reports, excludingFold: w)
            func residual(_ key: CellCoverageMap.Key, _ r: Report) -> Residual? {
                guard let a = inner.areas[key], a.count >= minCount else { return nil }
                let base = CellCoverageMap.flooredSpread(a, rat: r.cell.rat)
                guard let q = base.mahalanobis2(r.position - a.mean), q.isFinite else { return nil }
                return Residual(q: q, walks: a.predictiveWalks)
            }
            for r in reports where r.fold == w {
                if let x = residual(.init(cell: r.cell, timingAdvance: nil), r) { cell[w, default: []].append(x) }
                if let k = r.timingAdvance, k >= 0, let x = residual(.init(cell: r.cell, timingAdvance: k), r) { ta[w, default: []].append(x) }
            }
        }
        return (cell, ta)
    }

    /// Range of the fitted prior degrees ν₀.
    public static let priorRange = 0.1...10_000.0

    /// The share of `x` inside the 95 % ellipse under ν₀.
    static func inside95(_ x: [Residual], priorDegrees nu0: Double) -> Double {
        Double(x.filter { $0.d2(priorDegrees: nu0) <= RadioStats.chi2Two95 }.count) / Double(max(1, x.count))
    }

    /// The largest ν₀ in `priorRange` whose inside95 on `x` is at least 0.95 (inside95 falls as
    /// ν₀ grows: the tails thin); the range's bound when none or all are.
    static func priorDegrees(_ x: [Residual]) -> Double {
        var lo = log(priorRange.lowerBound), hi = log(priorRange.upperBound)
        if inside95(x, priorDegrees: priorRange.upperBound) >= probability { return priorRange.upperBound }
        if inside95(x, priorDegrees: priorRange.lowerBound) < probability { return priorRange.lowerBound }
        for _ in 0..<60 {
            let mid = (lo + hi) / 2
            if inside95(x, priorDegrees: exp(mid)) >= probability { lo = mid } else { hi = mid }
        }
        return exp(lo)
    }

    /// The order statistic of the fold values (model above): the ⌈0.95(k + 1)⌉-th most
    /// cautious of k (the most cautious while k < 19); nil with fewer than `minFolds`.
    static func cautious(_ v: [Double], ascendingIsCautious: Bool) -> Double? {
        guard v.count >= minFolds else { return nil }
        let s = ascendingIsCautious ? v.sorted() : v.sorted(by: >)
        let j = min(s.count, Int((probability * Double(s.count + 1)).rounded(.up)))
        return s[j - 1]
    }

    /// Step 3, the scale cautious over folds: each fold with at least `minFoldResiduals` values
    /// gives s_f = Q₀.₉₅(d²_f)/χ²₂,₀.₉₅ (Q type 7), and the result is their `cautious` order
    /// statistic (the largest while there are fewer than 19 folds); nil with fewer than
    /// `minFolds` such folds. `d2PerFold`: 2-D squared Mahalanobis distances (NEES) of held-out
    /// data, one array per fold. Also the WiFi uncertainty model's scale over its inner folds of
    /// walks (`RadioUncertaintyModel.fit`, `scaleRule: .cautiousOverGroups`).
    public static func cautiousScale(d2PerFold: [[Double]]) -> Double? {
        let s = d2PerFold.filter { $0.count >= minFoldResiduals }
            .compactMap { f in RadioStats.quantile(f, probability).map { $0 / RadioStats.chi2Two95 } }
        return cautious(s, ascendingIsCautious: true)
    }

    /// ν₀ and s of one kind from its per-fold residuals (model above); the model's (1, 1) with
    /// fewer than `minFolds` folds of at least `minFoldResiduals` residuals.
    public static func fitKind(perFold: [Int: [Residual]]) -> (priorDegrees: Double, scale: Double) {
        let folds = perFold.sorted { $0.key < $1.key }.map(\.value).filter { $0.count >= minFoldResiduals }
        guard folds.count >= minFolds else { return (CellCoverageMap.priorDegrees, 1) }
        let nu0 = priorDegrees(folds.flatMap { $0 })
        return (nu0, cautiousScale(d2PerFold: folds.map { f in f.map { $0.d2(priorDegrees: nu0) } }) ?? 1)
    }

    /// The calibration of the map of `reports` (model above).
    public static func fit(_ reports: [Report], minCount: Int = CellCoverageMap.defaultMinCount) -> Fit {
        var f = Fit()
        guard Set(reports.map(\.fold)).count >= minFolds else { return f }
        let (cell, ta) = residuals(reports, minCount: minCount)
        f.cellResiduals = cell.values.reduce(0) { $0 + $1.count }; f.taResiduals = ta.values.reduce(0) { $0 + $1.count }
        (f.cellPriorDegrees, f.cell) = fitKind(perFold: cell)
        (f.taPriorDegrees, f.timingAdvance) = fitKind(perFold: ta)
        return f
    }

    /// The calibrated map of `reports`: `Builder.map` with every area carrying its factor from
    /// `fit` (`calibrate: false`: the model alone, scale 1).
    public static func map(_ reports: [Report], calibrate: Bool = true) -> (map: CellCoverageMap, fit: Fit) {
        let f = calibrate ? fit(reports) : Fit()
        return (uncalibrated(reports).scaled(f), f)
    }
}

extension CellCoverageMap {
    /// The same areas with the calibration of `fit`, as each area's covariance factor on the
    /// model's predictive: scale = s·g(ν₀*, m)/g(1, m) (whole-cell areas the cell kind's, (cell,
    /// TA) areas the TA kind's; m the area's walks).
    public func scaled(_ fit: CoverageScale.Fit) -> CellCoverageMap {
        CellCoverageMap(areas: areas.reduce(into: [:]) { out, kv in
            var a = kv.value
            let whole = kv.key.timingAdvance == nil
            let nu0 = whole ? fit.cellPriorDegrees : fit.taPriorDegrees, s = whole ? fit.cell : fit.timingAdvance
            let m = a.predictiveWalks
            a.scale = s * CoverageScale.inflation(priorDegrees: nu0, walks: m) / CoverageScale.inflation(priorDegrees: CellCoverageMap.priorDegrees, walks: m)
            out[kv.key] = a
        })
    }
}
