import Foundation

/// Where phones were when they reported a serving cell (and timing-advance index): a cell
/// coverage map learned from recordings with positions — the database-correlation form of
/// Cell-ID (+TA) that crowd location services use instead of, or beside, a tower position
/// (3GPP TS 25.305 / 36.305 "E-CID" with a measurement database; CellSense, Ibrahim & Youssef,
/// IEEE TMC 11(9), 2012, for the same idea with RSS fingerprints).
///
/// Model: the position p of a phone that reports serving cell c with TA index k is a draw from
/// the distribution of the positions at which (c, k) was reported before. With n such
/// positions x_1…x_n (ENU m) of sample mean x̄ and sample covariance S (n − 1 denominator),
/// the posterior-mean fix is x̄ and its predictive covariance, for a new draw from the same
/// area, S·(1 + 1/n), plus σ_f²·I with σ_f = Δ/√12 of the RAT's default TA unit (no area is
/// known better than one TA step: guards a walk along one street, whose S is thin across it,
/// and few samples). Unlike the ring around a tower, this uses where phones actually go
/// (streets, buildings) and needs no site position, sector or NLOS model: with the tower only,
/// an omni ring's centroid is the tower itself, and TA adds nothing (`docs/radio.md`).
///
/// Areas: per (cell, TA index) and per cell (all TA values and records without TA). A fix uses
/// the (cell, TA) area when it has at least `minCount` positions, else the cell's area, else
/// fails with `.missingInput` (the cell is not in the map, or too rarely). Positions are in the
/// frame of the reference data (`ReferenceData.cellCoverage`).
public struct CellCoverageMap: Sendable, Equatable {
    /// Sample statistics of the positions of one area, ENU m.
    public struct Area: Sendable, Equatable {
        public var mean: SIMD2<Double>
        /// Sample covariance (n − 1 denominator; zero for one position).
        public var covariance: Covariance2
        public var count: Int
        public init(mean: SIMD2<Double>, covariance: Covariance2, count: Int) {
            self.mean = mean; self.covariance = covariance; self.count = count
        }
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
            var area: Area {
                let k = n > 1 ? 1 / Double(n - 1) : 0
                return Area(mean: mean, covariance: Covariance2(ee: ee * k, en: en * k, nn: nn * k), count: n)
            }
        }
        private var moments: [Key: Moments] = [:]
        public init() {}

        /// One serving-cell report at position `p` (ENU m), with its TA index when reported (a
        /// negative index, an invalid report, counts for the cell's area only).
        public mutating func add(cell: CellID, timingAdvance: Int?, at p: SIMD2<Double>) {
            moments[Key(cell: cell, timingAdvance: nil), default: Moments()].add(p)
            if let k = timingAdvance, k >= 0 { moments[Key(cell: cell, timingAdvance: k), default: Moments()].add(p) }
        }

        public var map: CellCoverageMap { CellCoverageMap(areas: moments.mapValues(\.area)) }
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
            let n = areas[Key(cell: obs.cell, timingAdvance: nil)]?.count ?? 0
            return .failure(.missingInput("cell coverage: \(n) position(s) for \(obs.cell), need \(minCount)"))
        }
        let f = Self.floorSigma(obs.cell.rat), g = 1 + 1 / Double(a.count)
        let c = Covariance2(ee: a.covariance.ee * g + f * f, en: a.covariance.en * g, nn: a.covariance.nn * g + f * f)
        return .success(Fix(time: time, position: a.mean, covariance: c, source: source, subject: subject, usedCount: a.count))
    }
}

extension CellCoverageMap.Area {
    /// The statistics of the union of the positions behind `self` and `other` (both in one
    /// frame): n = n_a + n_b, x̄ = x̄_a + δ n_b/n with δ = x̄_b − x̄_a, and the scatter
    /// M = M_a + M_b + δδᵀ n_a n_b/n with M = S·(n − 1) — the pairwise form of Welford's update
    /// (Chan, Golub & LeVeque, "Updating formulae and a pairwise algorithm for computing sample
    /// variances", 1979). Merging the areas of two sets of positions gives the area of all of
    /// them, so a coverage map can learn batch by batch (`posfuse serve`'s geosubmit) and equal
    /// the map `Builder` makes of everything at once.
    public func merged(with other: Self) -> Self {
        guard count > 0 else { return other }
        guard other.count > 0 else { return self }
        let na = Double(count), nb = Double(other.count), n = na + nb
        let d = other.mean - mean
        let w = na * nb / n
        let me = covariance.ee * (na - 1) + other.covariance.ee * (nb - 1) + d.x * d.x * w
        let mc = covariance.en * (na - 1) + other.covariance.en * (nb - 1) + d.x * d.y * w
        let mn = covariance.nn * (na - 1) + other.covariance.nn * (nb - 1) + d.y * d.y * w
        let k = 1 / (n - 1)
        return .init(mean: mean + d * (nb / n), covariance: Covariance2(ee: me * k, en: mc * k, nn: mn * k), count: count + other.count)
    }
}
