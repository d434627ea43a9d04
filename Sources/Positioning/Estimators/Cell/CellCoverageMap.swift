import Foundation

/// Where phones were when they reported a serving cell (and timing-advance index): a cell
/// coverage map learned from recordings with positions — the database-correlation form of
/// Cell-ID (+TA) that crowd location services use instead of, or beside, a tower position
/// (3GPP TS 25.305 / 36.305 "E-CID" with a measurement database; CellSense, Ibrahim & Youssef,
/// IEEE TMC 11(9), 2012, for the same idea with RSS fingerprints).
///
/// Model: the position p of a phone that reports serving cell c with TA index k is a draw from
/// the distribution of the positions at which (c, k) was reported before. With n such
/// positions x_1…x_n (ENU m) from m walks, the fix of a cell's whole area is the mean x̄ of the
/// walk means; that of a (cell, TA) area is the walk-weighted spatial median y (`Builder.map`):
/// such an area is an arc of the TA ring, whose mean lies on the chord inside it, and y minimises
/// the expected distance to a new report where x̄ minimises its square. Its uncertainty is a
/// predictive distribution with heavy tails (for y, with the spread S + (y − x̄)(y − x̄)ᵀ about y):
///
/// - The n positions are not n independent draws: consecutive reports of one walk sit along
///   one street, and a new walk may use another. The number of independent draws is taken as
///   m = the number of recordings that contributed to the area (`walks`, ≤ n), and the spread
///   S a new walk's report has is the pooled within-walk covariance plus the sample covariance
///   of the walk means (`Builder.area`; one walk: the sample covariance of its reports).
/// - Normal–inverse-Wishart posterior of the area's (mean, covariance) from m draws with the
///   observed spread Σ̂ = S + σ_f²·I (σ_f = Δ/√12 of the RAT's default TA unit: no area is
///   known better than one TA step) and ν₀ = `priorDegrees` (1) prior degree of freedom; its
///   predictive for a new phone is a bivariate Student t with ν = ν₀ + m − 1 degrees of
///   freedom, location x̄ and scale Σ_t = Σ̂·(1 + 1/m) (Gelman et al., Bayesian Data Analysis,
///   3rd ed., §3.6, with the prior scale replaced by the observed spread).
/// - The fix must carry a Gaussian covariance (every consumer uses one), so Σ_t is mapped to
///   the covariance C whose 95 % ellipse equals the t's 95 % region: for the bivariate t,
///   dᵀΣ_t⁻¹d / 2 ~ F(2, ν), so C = Σ_t · 2F₀.₉₅(2, ν) / χ²₂,₀.₉₅ with the closed form
///   F₀.₉₅(2, ν) = (ν/2)(0.05^(−2/ν) − 1). One walk (ν = 1): C = 133 Σ̂ (σ × 11.5); three
///   (ν = 3): 4.25 Σ̂ (σ × 2.1); thirteen (ν = 13): 1.37 Σ̂ (σ × 1.2); many: Σ̂.
///
/// Unlike the ring around a tower, this uses where phones actually go (streets, buildings) and
/// needs no site position, sector or NLOS model: with the tower only, an omni ring's centroid
/// is the tower itself, and TA adds nothing (`docs/radio.md`).
///
/// Areas: per (cell, TA index) and per cell (all TA values and records without TA). A fix uses
/// the (cell, TA) area when it has at least `minCount` positions, else the cell's area, else
/// fails with `.missingInput` (the cell is not in the map, or too rarely). Positions are in the
/// frame of the reference data (`ReferenceData.cellCoverage`).
public struct CellCoverageMap: Sendable, Equatable {
    /// Sample statistics of the positions of one area, ENU m.
    public struct Area: Sendable, Equatable {
        public var mean: SIMD2<Double>
        /// Spread of a new walk's report about `mean` (`Builder.area`: one walk, the sample
        /// covariance, n − 1 denominator, zero for one position).
        public var covariance: Covariance2
        public var count: Int
        /// Recordings (walks) that contributed positions: the independent draws m of the
        /// predictive (1 when unknown, e.g. a map written before walks were counted).
        public var walks: Int
        /// The area's calibration factor on the predictive covariance (`CoverageScale`: fitted
        /// on the map's own walks by inner leave-one-day-out; 1 = none).
        public var scale: Double
        public init(mean: SIMD2<Double>, covariance: Covariance2, count: Int, walks: Int = 1, scale: Double = 1) {
            self.mean = mean; self.covariance = covariance; self.count = count; self.walks = max(1, min(walks, count))
            self.scale = scale.isFinite && scale > 0 ? scale : 1
        }
        /// The independent draws m the predictive counts: the walks, at most the positions, at
        /// least 1 (`walks` and `count` are mutable, so this is not left to `init` alone).
        public var predictiveWalks: Int { max(1, min(walks, count)) }
    }

    public struct Key: Hashable, Sendable {
        public var cell: CellID
        /// Raw TA index as reported; nil = the cell's whole area.
        public var timingAdvance: Int?
        public init(cell: CellID, timingAdvance: Int?) { self.cell = cell; self.timingAdvance = timingAdvance }
    }

    /// Positions an area needs before a fix uses it (the stages' `coverage_min_count`).
    public static let defaultMinCount = 3

    public let areas: [Key: Area]
    public init(areas: [Key: Area]) { self.areas = areas }
    public var isEmpty: Bool { areas.isEmpty }

    /// Accumulates positions per cell and per (cell, TA) with Welford's update.
    public struct Builder: Sendable {
        private struct Moments: Sendable {
            var n = 0, mean = SIMD2<Double>(0, 0), ee = 0.0, en = 0.0, nn = 0.0
            mutating func add(_ x: SIMD2<Double>) {
                n += 1
                let d = x - mean
                mean += d / Double(n)
                let d2 = x - mean
                ee += d.x * d2.x; en += d.x * d2.y; nn += d.y * d2.y
            }
        }
        /// Per area, the running moments of each walk's reports.
        private var moments: [Key: [Int: Moments]] = [:]
        /// Per (cell, TA) area, each walk's positions (for the spatial median).
        private var taPositions: [Key: [Int: [SIMD2<Double>]]] = [:]
        public init() {}

        /// The walk-weighted spatial (geometric) median of an area's positions: the point y that
        /// minimises Σᵢ wᵢ‖xᵢ − y‖ with every walk weighing 1 in all (wᵢ = 1/nⱼ for a position of
        /// walk j with nⱼ positions), by Weiszfeld's iteration from the mean of the walk means
        /// (Weiszfeld 1937; Vardi & Zhang, PNAS 97(4), 2000, for the weighted form). It minimises
        /// the expected Euclidean distance to a new walk's report, where the mean minimises the
        /// expected squared distance; on a (cell, TA) area, an arc of the TA ring, the mean lies on
        /// the chord inside the ring and the median stays on the arc.
        public static func spatialMedian(_ perWalk: [Int: [SIMD2<Double>]]) -> SIMD2<Double>? {
            var xs: [SIMD2<Double>] = [], ws: [Double] = []
            for (_, p) in perWalk.sorted(by: { $0.key < $1.key }) where !p.isEmpty {
                for x in p { xs.append(x); ws.append(1 / Double(p.count)) }
            }
            guard !xs.isEmpty else { return nil }
            let wsum = ws.reduce(0, +)
            var y = zip(xs, ws).reduce(SIMD2<Double>(0, 0)) { $0 + $1.0 * $1.1 } / wsum
            for _ in 0..<500 {
                var num = SIMD2<Double>(0, 0), den = 0.0
                for (x, w) in zip(xs, ws) {
                    // A position at the iterate (distance < 1 mm) is held at 1 mm: the usual guard
                    // of Weiszfeld's step against a division by zero.
                    let d = max(norm2(x - y), 1e-3)
                    num += x * (w / d); den += w / d
                }
                let next = num / den
                let step = norm2(next - y)
                y = next
                if step < 1e-4 { break }
            }
            return y
        }
        private static func norm2(_ v: SIMD2<Double>) -> Double { (v * v).sum().squareRoot() }

        /// The area of per-walk moments: mean = the mean of the walk means; covariance = the
        /// pooled within-walk covariance W = Σ(n_i − 1)S_i / Σ(n_i − 1) plus the sample
        /// covariance B of the walk means (m − 1 denominator; 0 for one walk) — the spread a
        /// new walk's report has about the mean. One walk: the plain sample moments.
        private static func area(_ perWalk: [Int: Moments]) -> Area {
            let ws = perWalk.sorted { $0.key < $1.key }.map(\.value)
            let n = ws.reduce(0) { $0 + $1.n }, m = ws.count
            let dofW = ws.reduce(0) { $0 + $1.n - 1 }
            var ee = 0.0, en = 0.0, nn = 0.0
            if dofW > 0 {
                for w in ws { ee += w.ee; en += w.en; nn += w.nn }
                ee /= Double(dofW); en /= Double(dofW); nn /= Double(dofW)
            }
            let mean = ws.reduce(SIMD2<Double>(0, 0)) { $0 + $1.mean } / Double(m)
            if m > 1 {
                let k = 1 / Double(m - 1)
                for w in ws {
                    let d = w.mean - mean
                    ee += d.x * d.x * k; en += d.x * d.y * k; nn += d.y * d.y * k
                }
            }
            return Area(mean: mean, covariance: Covariance2(ee: ee, en: en, nn: nn), count: n, walks: m)
        }

        /// One serving-cell report at position `p` (ENU m) of recording number `walk`, with its TA
        /// index when reported (a negative index, an invalid report, counts for the cell's area only).
        public mutating func add(cell: CellID, timingAdvance: Int?, at p: SIMD2<Double>, walk: Int = 0) {
            moments[Key(cell: cell, timingAdvance: nil), default: [:]][walk, default: Moments()].add(p)
            if let k = timingAdvance, k >= 0 {
                moments[Key(cell: cell, timingAdvance: k), default: [:]][walk, default: Moments()].add(p)
                taPositions[Key(cell: cell, timingAdvance: k), default: [:]][walk, default: []].append(p)
            }
        }

        /// Every area by `area` alone (mean x̄ and spread S): the sufficient statistics that
        /// `WalkSums` reproduces walk by walk (`posfuse serve`'s geosubmit learns these, since a
        /// spatial median cannot be merged from sums).
        public var momentMap: CellCoverageMap { CellCoverageMap(areas: moments.mapValues(Self.area)) }

        /// The map (`posfuse celldb build`, `evaluate radio`): every area by `area`; a (cell, TA) area then located at its walk-weighted
        /// spatial median y (`spatialMedian`) with the spread taken about y: S + (y − x̄)(y − x̄)ᵀ.
        /// A cell's whole area keeps the mean x̄ (a blob, not an arc: on the training folds the
        /// median did not make the cell fix better, docs/radio.md).
        public var map: CellCoverageMap {
            var areas = momentMap.areas
            for (k, p) in taPositions {
                guard let a = areas[k], let placed = Self.placed(a, perWalk: p) else { continue }
                areas[k] = placed
            }
            return CellCoverageMap(areas: areas)
        }

        /// A (cell, TA) area as `map` places it: `a` (the moments x̄, S of the positions
        /// `perWalk`, by walk) moved to their walk-weighted spatial median y with the spread
        /// taken about y, S + (y − x̄)(y − x̄)ᵀ. Nil without positions. (`posfuse serve`'s
        /// geosubmit places its learned TA areas with this too.)
        public static func placed(_ a: Area, perWalk: [Int: [SIMD2<Double>]]) -> Area? {
            guard let y = spatialMedian(perWalk) else { return nil }
            var a = a
            let d = y - a.mean
            a.covariance = Covariance2(ee: a.covariance.ee + d.x * d.x, en: a.covariance.en + d.x * d.y,
                                       nn: a.covariance.nn + d.y * d.y)
            a.mean = y
            return a
        }
    }

    /// σ_f of a RAT: Δ/√12 of its default TA unit (UMTS has none: the LTE value).
    public static func floorSigma(_ rat: RAT) -> Double {
        TimingAdvanceModel(unit: TimingAdvanceModel.defaultUnit(for: rat) ?? .lte16Ts).quantizationSigma
    }

    /// The area a report falls in: its (cell, TA) area with at least `minCount` positions, else
    /// the cell's; `usedTA` tells which.
    public func area(for obs: CellObservation, useTA: Bool, minCount: Int) -> (area: Area, usedTA: Bool)? {
        if useTA, let k = obs.timingAdvance, let a = areas[Key(cell: obs.cell, timingAdvance: k)], a.count >= minCount {
            return (a, true)
        }
        if let a = areas[Key(cell: obs.cell, timingAdvance: nil)], a.count >= minCount { return (a, false) }
        return nil
    }

    /// The fix of a serving-cell report (model above), or why there is none.
    public func fix(_ obs: CellObservation, useTA: Bool, minCount: Int = defaultMinCount, time: Double, source: Source,
                    subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        guard let (a, _) = area(for: obs, useTA: useTA, minCount: max(minCount, 1)) else {
            // A cell the map never saw is an unknown anchor; one seen too rarely lacks input.
            guard let n = areas[Key(cell: obs.cell, timingAdvance: nil)]?.count else {
                return .failure(.unknownAnchor("cell \(obs.cell) (not in the coverage map)"))
            }
            return .failure(.missingInput("cell coverage: \(n) position(s) for \(obs.cell), need \(minCount)"))
        }
        return .success(Fix(time: time, position: a.mean, covariance: Self.predictiveCovariance(a, rat: obs.cell.rat),
                            source: source, subject: subject, usedCount: a.count))
    }

    /// Prior degrees of freedom ν₀ of the predictive (model above).
    public static let priorDegrees = 1.0

    /// 2F₀.₉₅(2, ν)/χ²₂,₀.₉₅: the factor that gives a covariance the 95 % region of a bivariate t
    /// with ν degrees of freedom and unit scale (→ 1 as ν → ∞).
    public static func studentT95Factor(degrees nu: Double) -> Double {
        let f = nu / 2 * (pow(0.05, -2 / nu) - 1)
        return 2 * f / (-2 * log(0.05))
    }

    /// The Gaussian covariance of a fix from area `a` (model above): Σ̂(1 + 1/m) scaled to the
    /// Student-t predictive's 95 % region, Σ̂ = S + σ_f² I, times the map's coverage scale
    /// `a.scale` (`CoverageScale`).
    public static func predictiveCovariance(_ a: Area, rat: RAT) -> Covariance2 {
        flooredSpread(a, rat: rat).scaled(CoverageScale.inflation(priorDegrees: priorDegrees, walks: a.predictiveWalks) * a.scale)
    }

    /// Σ̂ = S + σ_f² I: the area's spread with its RAT's TA-step floor (`floorSigma`).
    public static func flooredSpread(_ a: Area, rat: RAT) -> Covariance2 {
        let f = floorSigma(rat)
        return Covariance2(ee: a.covariance.ee + f * f, en: a.covariance.en, nn: a.covariance.nn + f * f)
    }
}

extension CellCoverageMap {
    /// The sufficient statistics of an area learned walk by walk (`posfuse serve`'s geosubmit,
    /// one submission = one walk), from which `Builder`'s area follows exactly: m walks, n
    /// positions, Σ of the walk means μᵢ and of μᵢμᵢᵀ, and the pooled within-walk scatter
    /// Σ(nᵢ − 1)Sᵢ with its degrees of freedom Σ(nᵢ − 1). Sums add, so two sets of walks merge
    /// by adding (a batch never needs the positions of earlier ones); `area` is `Builder.area`'s
    /// rule: mean = Σμᵢ/m, covariance = W + B with W = scatter/dof and B the sample covariance of
    /// the walk means (m − 1 denominator). Positions are ENU m of one frame.
    public struct WalkSums: Sendable, Equatable {
        public var walks = 0, count = 0, dof = 0
        public var sumMean = SIMD2<Double>(0, 0)
        public var sumOuter = Covariance2(ee: 0, en: 0, nn: 0)
        public var scatter = Covariance2(ee: 0, en: 0, nn: 0)
        public init() {}

        /// One walk whose positions have the sample moments `a` (`Builder` of that walk alone).
        public init(walk a: Area) {
            walks = 1; count = a.count; dof = a.count - 1; sumMean = a.mean
            sumOuter = Covariance2(ee: a.mean.x * a.mean.x, en: a.mean.x * a.mean.y, nn: a.mean.y * a.mean.y)
            let k = Double(a.count - 1)
            scatter = Covariance2(ee: a.covariance.ee * k, en: a.covariance.en * k, nn: a.covariance.nn * k)
        }

        public static func + (a: Self, b: Self) -> Self {
            var s = a
            s.walks += b.walks; s.count += b.count; s.dof += b.dof; s.sumMean += b.sumMean
            s.sumOuter = Covariance2(ee: a.sumOuter.ee + b.sumOuter.ee, en: a.sumOuter.en + b.sumOuter.en, nn: a.sumOuter.nn + b.sumOuter.nn)
            s.scatter = Covariance2(ee: a.scatter.ee + b.scatter.ee, en: a.scatter.en + b.scatter.en, nn: a.scatter.nn + b.scatter.nn)
            return s
        }

        public var area: Area? {
            guard walks > 0 else { return nil }
            let m = Double(walks), mean = sumMean / m
            var ee = 0.0, en = 0.0, nn = 0.0
            if dof > 0 { ee = scatter.ee / Double(dof); en = scatter.en / Double(dof); nn = scatter.nn / Double(dof) }
            if walks > 1 {
                ee += (sumOuter.ee - m * mean.x * mean.x) / (m - 1)
                en += (sumOuter.en - m * mean.x * mean.y) / (m - 1)
                nn += (sumOuter.nn - m * mean.y * mean.y) / (m - 1)
            }
            return Area(mean: mean, covariance: Covariance2(ee: max(0, ee), en: en, nn: max(0, nn)), count: count, walks: walks)
        }
    }
}
