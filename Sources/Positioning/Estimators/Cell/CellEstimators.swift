import Foundation

/// Cell-ID only (`docs/models.md` §1.2 item 1): the phone is somewhere in its serving
/// cell. Fix:
/// * sector known (azimuth and beamwidth in the cell database, provenance not a
///   measurement centroid): the centroid of the annular sector r ∈ [0, R_cell] around the
///   boresight, with its moment covariance (`AnnulusSector`);
/// * otherwise (omni, unknown sector, or a crowd-sourced centroid position that already
///   averages over the sector): the site position, Σ = (R_cell/2)²·I (uniform disc of radius R).
///
/// R_cell is the database `range` when present, else `defaultRange[rat]`.
/// Degenerate cases: cell not in the database → `.unknownAnchor`.
public struct CellIDEstimator: Sendable {
    /// Fallback cell radius per RAT, m.
    public var defaultRange: [RAT: Double]
    /// Use sector azimuth/beamwidth when the database has them.
    public var useSector: Bool

    public static let standardRanges: [RAT: Double] = [.gsm: 5000, .umts: 2000, .lte: 2000, .nr: 1000]

    public init(defaultRange: [RAT: Double] = CellIDEstimator.standardRanges, useSector: Bool = true) {
        self.defaultRange = defaultRange; self.useSector = useSector
    }

    public func radius(of site: CellSite) -> Double {
        if let r = site.range, r.isFinite, r > 0 { return r }
        return defaultRange[site.cell.rat] ?? 2000
    }

    /// Sector geometry of a site, or nil for omni / unusable (centroid positions).
    static func sector(_ site: CellSite, use: Bool) -> (width: Double, boresight: Double)? {
        guard use, site.provenance != "centroid", let az = site.azimuth, let bw = site.beamwidth,
              az.isFinite, bw.isFinite, bw > 0, bw < 360 else { return nil }
        return (Angle.radians(bw), Angle.radians(az))
    }

    public func estimate(_ obs: CellObservation, site: CellSite?, time: Double,
                         subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        guard let site else { return .failure(.unknownAnchor(obs.cell.description)) }
        let r = radius(of: site)
        let base = SIMD2(site.position.x, site.position.y)
        if let s = Self.sector(site, use: useSector) {
            let a = AnnulusSector(innerRadius: 0, outerRadius: r, width: s.width, boresight: s.boresight)
            return .success(Fix(time: time, position: base + a.meanOffset, covariance: a.covariance,
                                source: .cell, subject: subject, usedCount: 1))
        }
        return .success(Fix(time: time, position: base, covariance: Covariance2(sigma: r / 2),
                            source: .cell, subject: subject, usedCount: 1))
    }
}

/// Cell-ID + timing advance (`docs/models.md` §1.2 item 2): the ring of the TA index,
/// intersected with the sector when it is known.
///
/// Algorithm:
/// 1. Validate the index (unavailable/negative/above maximum → typed failure); unit from the
///    record, else the RAT default.
/// 2. Saturated index → `.saturatedTimingAdvance` (the closed form needs a bounded ring); the
///    stage still emits `TimingAdvanceLowerBound` for filters.
/// 3. Slant ring [r_lo, r_hi] = [max(0,(TA+β−½)Δ), (TA+β+½)Δ]; horizontal ring
///    ρ = √(max(0, r² − Δh²)) with Δh = antenna height − phone height.
/// 4. Moments of the area-uniform annular sector (omni when the sector is unknown):
///    p̂ = site + E[a]·u(α), Σ = Var[a] u uᵀ + E[b²] u⊥ u⊥ᵀ, plus σ_m²·I for the BTS timing
///    estimation noise.
/// Degenerate cases: TA = 0 → disc (r_lo = 0), not a point; cell not in DB → `.unknownAnchor`.
public struct CellTAEstimator: Sendable {
    /// Speed of light for Δ (exact by default).
    public var speedOfLight: Double
    /// Quantiser offset β (0 rounding, 0.5 truncation, or calibrated).
    public var offset: Double
    /// BTS timing estimation noise σ_m as a fraction of Δ (default 0.15).
    public var sigmaFraction: Double
    /// GSM maximum TA index (63 normal, 219 extended).
    public var gsmMaxIndex: Int
    /// Unit assumed for NR records without `ta_unit`.
    public var nrDefaultUnit: TimingAdvanceUnit
    /// Phone height above the ENU origin, m.
    public var phoneUp: Double
    public var useSector: Bool

    public init(speedOfLight: Double = TimingAdvanceModel.exactSpeedOfLight, offset: Double = 0,
                sigmaFraction: Double = 0.15, gsmMaxIndex: Int = 63, nrDefaultUnit: TimingAdvanceUnit = .nrMu0,
                phoneUp: Double = 0, useSector: Bool = true) {
        self.speedOfLight = speedOfLight; self.offset = offset; self.sigmaFraction = sigmaFraction
        self.gsmMaxIndex = gsmMaxIndex; self.nrDefaultUnit = nrDefaultUnit; self.phoneUp = phoneUp
        self.useSector = useSector
    }

    /// The TA model for an observation, or a typed failure when it has no usable TA.
    public func model(for obs: CellObservation) -> Result<TimingAdvanceModel, EstimationFailure> {
        guard obs.timingAdvance != nil else { return .failure(.missingInput("timing advance")) }
        let unit = obs.timingAdvanceUnit ?? (obs.cell.rat == .nr ? nrDefaultUnit : TimingAdvanceModel.defaultUnit(for: obs.cell.rat))
        guard let unit else { return .failure(.missingInput("timing advance unit for \(obs.cell.rat.rawValue)")) }
        return .success(TimingAdvanceModel(unit: unit, speedOfLight: speedOfLight, offset: offset, gsmMaxIndex: gsmMaxIndex))
    }

    /// σ_m for a model, m.
    public func sigmaM(_ m: TimingAdvanceModel) -> Double { sigmaFraction * m.stepLength }

    public func estimate(_ obs: CellObservation, site: CellSite?, time: Double,
                         subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        guard let site else { return .failure(.unknownAnchor(obs.cell.description)) }
        let m: TimingAdvanceModel
        switch model(for: obs) { case .success(let x): m = x; case .failure(let f): return .failure(f) }
        guard let ta = obs.timingAdvance else { return .failure(.missingInput("timing advance")) }
        if let f = m.validate(ta) { return .failure(f) }
        if m.isSaturated(ta) { return .failure(.saturatedTimingAdvance) }
        let ring = m.ring(ta)
        let dh = site.position.z - phoneUp
        func horizontal(_ r: Double) -> Double { (max(0, r * r - dh * dh)).squareRoot() }
        let lo = horizontal(ring.lower), hi = horizontal(ring.upper)
        var flags: FixFlags = []
        if hi <= 0 { flags.insert(.clamped) }   // ring entirely within the antenna height
        let base = SIMD2(site.position.x, site.position.y)
        let sector = CellIDEstimator.sector(site, use: useSector)
        let a = AnnulusSector(innerRadius: lo, outerRadius: hi, width: sector?.width ?? 2 * .pi,
                              boresight: sector?.boresight ?? 0)
        let s = sigmaM(m)
        return .success(Fix(time: time, position: base + a.meanOffset, covariance: a.covariance + Covariance2(sigma: s),
                            source: .cellTA, subject: subject, usedCount: 1, flags: flags))
    }

    /// The tight-coupling measurement for the filters: a TA range (annulus likelihood) or, for
    /// a saturated index, the one-sided lower bound. nil when the record has no usable TA.
    public func measurement(_ obs: CellObservation, site: CellSite, time: Double) -> (any MeasurementModel)? {
        guard case .success(let m) = model(for: obs), let ta = obs.timingAdvance, m.validate(ta) == nil else { return nil }
        if m.isSaturated(ta) {
            return TimingAdvanceLowerBound(time: time, site: site.position, timingAdvance: ta, model: m,
                                           sigmaM: sigmaM(m), phoneUp: phoneUp)
        }
        return TimingAdvanceRangeMeasurement(time: time, site: site.position, timingAdvance: ta, model: m,
                                             sigmaM: sigmaM(m), phoneUp: phoneUp, cell: obs.cell)
    }
}

/// One serving-cell TA ring available at an epoch (for the multi-ring fix).
public struct TimingAdvanceRing: Sendable {
    public var site: CellSite
    public var measurement: TimingAdvanceRangeMeasurement
    public var time: Double
    public init(site: CellSite, measurement: TimingAdvanceRangeMeasurement, time: Double) {
        self.site = site; self.measurement = measurement; self.time = time
    }
}

extension CellTAEstimator {
    /// 3GPP horizontal antenna pattern A(φ) = −min(12(φ/φ_3dB)², A_m) dB, φ_3dB = 65°,
    /// A_m = 20 dB, as a log prior on the bearing from a sectorised site (linear gain, i.e.
    /// A·ln10/10); 0 for omni/unknown sectors.
    public static func sectorLogPrior(site: CellSite, point p: SIMD2<Double>, useSector: Bool = true) -> Double {
        guard let s = CellIDEstimator.sector(site, use: useSector) else { return 0 }
        let d = p - SIMD2(site.position.x, site.position.y)
        guard abs(d.x) + abs(d.y) > 1e-9 else { return 0 }
        let phi = Angle.degrees(Angle.wrap(atan2(d.x, d.y) - s.boresight))
        let a = -min(12 * (phi / 65) * (phi / 65), 20)
        return a * log(10.0) / 10
    }

    /// Multi-ring fix (`docs/models.md` §1.2 items 3–4, §1.5): when several serving cells
    /// of different sites report TA at (nearly) the same time — dual-SIM phones, GSM + LTE — the
    /// rings intersect. Posterior on a polar grid around the narrowest ring's site:
    /// r over its ring ±3σ_m (12 values, area element r), azimuth every 1°;
    /// log w = log r + Σ_i log L_i(ρ_i(p)) + Σ_i log A_i(bearing_i(p)) with L_i the annulus
    /// likelihood of ring i (`TimingAdvanceRangeMeasurement.logLikelihood`) and A_i the
    /// sector pattern prior. Fix = posterior mean, Σ = posterior covariance + (grid step)²·I.
    /// Returns nil for fewer than two rings of distinct sites.
    public func multiRingFix(_ rings: [TimingAdvanceRing], time: Double, subject: String = Fix.defaultSubject) -> Fix? {
        var distinct: [TimingAdvanceRing] = []
        for r in rings where !distinct.contains(where: {
            let d = SIMD2($0.site.position.x - r.site.position.x, $0.site.position.y - r.site.position.y)
            return (d * d).sum() < 1
        }) { distinct.append(r) }
        guard distinct.count >= 2 else { return nil }
        let ref = distinct.min { ($0.measurement.ringUpper - $0.measurement.ringLower) < ($1.measurement.ringUpper - $1.measurement.ringLower) }!
        let m = ref.measurement
        let dh = ref.site.position.z - phoneUp
        func horizontal(_ r: Double) -> Double { (max(0, r * r - dh * dh)).squareRoot() }
        let lo = horizontal(max(0, m.ringLower - 3 * m.sigmaM)), hi = horizontal(m.ringUpper + 3 * m.sigmaM)
        let nr = 12, nphi = 360
        let c = SIMD2(ref.site.position.x, ref.site.position.y)
        var pts: [SIMD2<Double>] = [], lw: [Double] = []
        pts.reserveCapacity(nr * nphi); lw.reserveCapacity(nr * nphi)
        let dr = (hi - lo) / Double(nr)
        for i in 0..<nr {
            let r = lo + (Double(i) + 0.5) * dr
            for j in 0..<nphi {
                let a = Double(j) * 2 * .pi / Double(nphi)
                let p = c + r * Angle.unit(a)
                var l = log(max(r, 1e-9))
                for q in distinct {
                    l += q.measurement.logLikelihood(p)
                    l += Self.sectorLogPrior(site: q.site, point: p, useSector: useSector)
                }
                pts.append(p); lw.append(l)
            }
        }
        guard let mx = lw.max(), mx.isFinite else { return nil }
        var sw = 0.0, mean = SIMD2<Double>(0, 0)
        var w = lw.map { exp($0 - mx) }
        for k in w.indices { sw += w[k]; mean += w[k] * pts[k] }
        guard sw > 0 else { return nil }
        mean /= sw
        for k in w.indices { w[k] /= sw }
        var cov = Covariance2.zero
        for k in w.indices {
            let d = pts[k] - mean
            cov = cov + Covariance2(ee: w[k] * d.x * d.x, en: w[k] * d.x * d.y, nn: w[k] * d.y * d.y)
        }
        let step = max(dr, 0.5 * (lo + hi) * 2 * .pi / Double(nphi))
        return Fix(time: time, position: mean, covariance: cov + Covariance2(sigma: step), source: .cellTA,
                   subject: subject, usedCount: distinct.count)
    }
}
