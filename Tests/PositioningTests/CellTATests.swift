import Testing
import Foundation
@testable import Positioning

/// Seeded generator for Monte Carlo tests in this target.
typealias TestRNG = SplitMix64

@Suite struct TimingAdvanceTableTests {
    /// §1.1 Δ table, exact c: GSM 553.46, LTE 78.07, NR μ=0..3 78.07/39.04/19.52/9.76, one-way µs 299.79.
    @Test func stepLengthsExactSpeedOfLight() {
        let exact: [(TimingAdvanceUnit, Double)] = [(.gsmBits, 553.46), (.lte16Ts, 78.07), (.nrMu0, 78.07),
                                                    (.nrMu1, 39.04), (.nrMu2, 19.52), (.nrMu3, 9.76),
                                                    (.oneWayMicroseconds, 299.79)]
        for (u, d) in exact {
            #expect(abs(TimingAdvanceModel(unit: u).stepLength - d) < 0.005, "\(u)")
        }
    }

    /// Same table with the literature's c = 3e8: GSM 553.85, LTE 78.125, NR 78.125/2^μ, 300 m.
    @Test func stepLengthsLiteratureConvention() {
        let lit: [(TimingAdvanceUnit, Double)] = [(.gsmBits, 553.846), (.lte16Ts, 78.125), (.nrMu0, 78.125),
                                                  (.nrMu1, 39.0625), (.nrMu2, 19.53125), (.nrMu3, 9.765625),
                                                  (.oneWayMicroseconds, 300)]
        for (u, d) in lit {
            let m = TimingAdvanceModel(unit: u, speedOfLight: TimingAdvanceModel.literatureSpeedOfLight)
            #expect(abs(m.stepLength - d) < 0.001, "\(u)")
        }
    }

    @Test func resolutionFloor() {
        // §1.5: Δ/√12 = GSM 159.8 m, LTE 22.5 m, NR μ=1 11.3 m, one-way µs 86.5 m.
        #expect(abs(TimingAdvanceModel(unit: .gsmBits).quantizationSigma - 159.8) < 0.05)
        #expect(abs(TimingAdvanceModel(unit: .lte16Ts).quantizationSigma - 22.54) < 0.05)
        #expect(abs(TimingAdvanceModel(unit: .nrMu1).quantizationSigma - 11.27) < 0.05)
        #expect(abs(TimingAdvanceModel(unit: .oneWayMicroseconds).quantizationSigma - 86.54) < 0.05)
    }

    @Test func ringsAndOffsets() {
        let r = TimingAdvanceModel(unit: .gsmBits).ring(2)
        #expect(abs(r.lower - 830.19) < 0.01 && abs(r.upper - 1383.66) < 0.01)
        let z = TimingAdvanceModel(unit: .lte16Ts).ring(0)
        #expect(z.lower == 0 && abs(z.upper - 39.03) < 0.01)
        // Truncation: β = ½ → ring [TA·Δ, (TA+1)·Δ].
        let t = TimingAdvanceModel(unit: .lte16Ts, offset: TimingAdvanceModel.Quantizer.truncation.offset)
        #expect(abs(t.ring(3).lower - 3 * t.stepLength) < 1e-9 && abs(t.ring(3).upper - 4 * t.stepLength) < 1e-9)
    }

    @Test func saturationAndValidation() {
        let g = TimingAdvanceModel(unit: .gsmBits)
        #expect(g.isSaturated(63) && !g.isSaturated(62))
        #expect(TimingAdvanceModel(unit: .gsmBits, gsmMaxIndex: 219).isSaturated(219))
        #expect(TimingAdvanceModel(unit: .lte16Ts).isSaturated(1282))
        #expect(TimingAdvanceModel(unit: .nrMu1).isSaturated(3846))
        #expect(g.validate(-1) != nil)
        #expect(g.validate(Int(Int32.max)) == .missingInput("timing advance unavailable"))
    }

    /// β̂ = median(d_true/Δ − TA) recovers the quantiser: truncated data → β̂ ≈ ½, rounded → ≈ 0.
    @Test func offsetCalibration() {
        var rng = TestRNG(seed: 7)
        let m = TimingAdvanceModel(unit: .lte16Ts)
        var trunc: [(ta: Int, trueRange: Double)] = [], round: [(ta: Int, trueRange: Double)] = []
        for _ in 0..<4000 {
            let d = 50 + 3000 * rng.uniform()
            trunc.append((Int((d / m.stepLength).rounded(.down)), d))
            round.append((Int((d / m.stepLength).rounded()), d))
        }
        #expect(abs(m.calibrateOffset(trunc)! - 0.5) < 0.03)
        #expect(abs(m.calibrateOffset(round)!) < 0.03)
        #expect(m.calibrateOffset([]) == nil)
    }
}

@Suite struct AnnulusSectorTests {
    /// §1.2 golden values: GSM TA = 2, β = 0, W = 120° → E[a] = 934.49, σ_a = 216.37, σ_b = 617.88 m.
    @Test func goldenGSMSector() {
        let m = TimingAdvanceModel(unit: .gsmBits)
        let r = m.ring(2)
        let a = AnnulusSector(innerRadius: r.lower, outerRadius: r.upper, width: Angle.radians(120), boresight: 0)
        #expect(abs(a.meanAlong - 934.49) < 0.02)
        #expect(abs(a.varianceAlong.squareRoot() - 216.37) < 0.02)
        #expect(abs(a.varianceAcross.squareRoot() - 617.88) < 0.02)
        // Boresight north: mean offset straight north, Σ axis-aligned (E across, N along).
        #expect(abs(a.meanOffset.x) < 1e-9 && abs(a.meanOffset.y - 934.49) < 0.02)
        #expect(abs(a.covariance.ee.squareRoot() - 617.88) < 0.02 && abs(a.covariance.en) < 1e-6)
    }

    /// TA = 0 omni GSM: E[r] = 184.49 m, σ = 138.37 m per axis.
    @Test func goldenTAZeroOmni() {
        let r = TimingAdvanceModel(unit: .gsmBits).ring(0)
        let a = AnnulusSector(innerRadius: r.lower, outerRadius: r.upper)
        #expect(abs(a.radialMoment(1) - 184.49) < 0.02)
        #expect(abs(a.covariance.ee.squareRoot() - 138.37) < 0.02 && abs(a.covariance.nn - a.covariance.ee) < 1e-9)
        #expect(a.meanOffset == .zero)
    }

    /// Moments agree with a seeded Monte Carlo of the area-uniform sector at an oblique boresight.
    @Test func monteCarloAgreement() {
        var rng = TestRNG(seed: 42)
        let a = AnnulusSector(innerRadius: 300, outerRadius: 900, width: Angle.radians(65), boresight: Angle.radians(200))
        var sx = 0.0, sy = 0.0, sxx = 0.0, syy = 0.0, sxy = 0.0
        let n = 200_000
        for _ in 0..<n {
            let r = (300.0 * 300 + rng.uniform() * (900.0 * 900 - 300 * 300)).squareRoot()
            let phi = Angle.radians(200) + (rng.uniform() - 0.5) * Angle.radians(65)
            let x = r * sin(phi), y = r * cos(phi)
            sx += x; sy += y; sxx += x * x; syy += y * y; sxy += x * y
        }
        let mx = sx / Double(n), my = sy / Double(n)
        #expect(abs(mx - a.meanOffset.x) < 3 && abs(my - a.meanOffset.y) < 3)
        let c = a.covariance
        #expect(abs((sxx / Double(n) - mx * mx) - c.ee) < 0.02 * c.trace)
        #expect(abs((syy / Double(n) - my * my) - c.nn) < 0.02 * c.trace)
        #expect(abs((sxy / Double(n) - mx * my) - c.en) < 0.02 * c.trace)
    }
}

@Suite struct CellEstimatorTests {
    let id = CellID(rat: .lte, mcc: 262, mnc: 1, area: 100, cid: 0x1234_01)

    @Test func cellIDOmniAndSector() throws {
        let est = CellIDEstimator()
        let obs = CellObservation(cell: id, serving: true)
        let omni = CellSite(cell: id, position: SIMD3(100, 200, 30), range: 1000)
        let f = try est.estimate(obs, site: omni, time: 1).get()
        #expect(f.position == SIMD2(100, 200) && abs(f.covariance.ee - 250_000) < 1e-6)
        let sec = CellSite(cell: id, position: SIMD3(0, 0, 30), azimuth: 90, beamwidth: 120, range: 1000)
        let g = try est.estimate(obs, site: sec, time: 1).get()
        // E[a] = (2/3)R·sinc(W/2) = 666.67·0.82699 = 551.33 m east.
        #expect(abs(g.position.x - 551.33) < 0.05 && abs(g.position.y) < 1e-6)
        // Crowd-sourced centroid: no sector offset.
        var cen = sec; cen.provenance = "centroid"
        #expect(try est.estimate(obs, site: cen, time: 1).get().position == SIMD2(0, 0))
        #expect(est.estimate(obs, site: nil, time: 1) == .failure(.unknownAnchor(id.description)))
    }

    @Test func cellTAFailuresAreTyped() {
        let est = CellTAEstimator()
        let site = CellSite(cell: id, position: SIMD3(0, 0, 0))
        #expect(est.estimate(CellObservation(cell: id, serving: true), site: site, time: 0) == .failure(.missingInput("timing advance")))
        let sat = CellObservation(cell: id, serving: true, timingAdvance: 1282, timingAdvanceUnit: .lte16Ts)
        #expect(est.estimate(sat, site: site, time: 0) == .failure(.saturatedTimingAdvance))
        #expect(est.measurement(sat, site: site, time: 0) is TimingAdvanceLowerBound)
        let umts = CellObservation(cell: CellID(rat: .umts, mcc: 1, mnc: 1, area: 1, cid: 1), serving: true, timingAdvance: 3)
        if case .failure(.missingInput) = est.estimate(umts, site: site, time: 0) {} else { Issue.record("UMTS TA must fail") }
    }

    /// Antenna height shrinks the horizontal ring: ρ = √(r² − Δh²).
    @Test func antennaHeight() throws {
        let est = CellTAEstimator(sigmaFraction: 0)
        let obs = CellObservation(cell: id, serving: true, timingAdvance: 1, timingAdvanceUnit: .lte16Ts)
        let f = try est.estimate(obs, site: CellSite(cell: id, position: SIMD3(0, 0, 50)), time: 0).get()
        let lo = (39.035 * 39.035 - 2500).squareRoot().isNaN ? 0 : max(0, 39.035 * 39.035 - 2500).squareRoot()
        let hi = (117.105 * 117.105 - 2500).squareRoot()
        let a = AnnulusSector(innerRadius: lo, outerRadius: hi)
        #expect(abs(f.covariance.ee - a.covariance.ee) < 1)
    }

    /// Simulation (§1.6 b): for uniform placement the radial error of d̂ = (TA+β)Δ has std
    /// Δ/√12. A single-epoch ring-sector fix beats the Cell-ID sector centroid, but in a 120°
    /// sector the tangential spread ρW/√12 dominates, so the median only drops to ≈ 0.72×
    /// (measured with this seed: 890 m vs 1230 m); halving it needs more than one epoch.
    @Test func radialErrorStdMatchesQuantisation() throws {
        var rng = TestRNG(seed: 2024)
        let m = TimingAdvanceModel(unit: .lte16Ts)
        let site = CellSite(cell: id, position: SIMD3(0, 0, 0), azimuth: 0, beamwidth: 120, range: 3000)
        let ta = CellTAEstimator(sigmaFraction: 0), cid = CellIDEstimator()
        var radial: [Double] = [], eTA: [Double] = [], eID: [Double] = []
        for _ in 0..<5000 {
            let r = 3000 * rng.uniform().squareRoot()
            let phi = (rng.uniform() - 0.5) * Angle.radians(120)
            let p = SIMD2(r * sin(phi), r * cos(phi))
            let idx = Int((r / m.stepLength).rounded())
            radial.append(m.range(idx) - r)
            let obs = CellObservation(cell: id, serving: true, timingAdvance: idx, timingAdvanceUnit: .lte16Ts)
            let f = try ta.estimate(obs, site: site, time: 0).get()
            let g = try cid.estimate(obs, site: site, time: 0).get()
            eTA.append(((f.position - p) * (f.position - p)).sum().squareRoot())
            eID.append(((g.position - p) * (g.position - p)).sum().squareRoot())
        }
        let sd = RadioStats.standardDeviation(radial)!
        #expect(abs(sd / m.quantizationSigma - 1) < 0.05)
        #expect(RadioStats.median(eTA)! < 0.8 * RadioStats.median(eID)!)
    }
}

@Suite struct TimingAdvanceMeasurementTests {
    let m = TimingAdvanceModel(unit: .lte16Ts)

    /// The k-th repeat of a TA report: R × k, log L / k, everything else the base's.
    @Test func repeatedMeasurementCarriesOneKth() {
        let meas = TimingAdvanceRangeMeasurement(time: 0, site: SIMD3(120, -40, 35), timingAdvance: 5, model: m, sigmaM: 10)
        let r = RepeatedMeasurement(meas, repeat: 3)
        let p = SIMD2(400.0, 250.0)
        #expect(abs(r.noise[0, 0] - 3 * meas.noise[0, 0]) < 1e-9 && r.z == meas.z && r.predict(p) == meas.predict(p))
        #expect(abs(r.logLikelihood(p) - meas.logLikelihood(p) / 3) < 1e-12)
        #expect(meas.repeatIdentity != nil && r.repeatIdentity == meas.repeatIdentity)
    }

    /// In a filter with `tight: [cell-ta]`, the same cell's unchanged TA reported n times in a row
    /// enters as 1 + 1/2 + … + 1/n reports' worth (R × k for the k-th); a changed TA is new.
    @Test func filterTempersRepeatedTAReports() throws {
        let ctx = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48, longitude: 11)))
        func run(repeatInflation: Bool) -> Covariance2 {
            var st = FusionStage.Settings(kind: .ekf); st.tight = [.cellTA]; st.repeatInflation = repeatInflation
            let stage = FusionStage(settings: st)
            let start = Fix(time: 0, position: SIMD2(300, 300), covariance: Covariance2(sigma: 200), source: .gnss)
            let tick = { (t: Double) in TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 3))) }
            _ = stage.process(tick(0), upstream: [.fix(start)], context: ctx)
            var last = start.covariance
            for k in 1...20 {
                let meas = TimingAdvanceRangeMeasurement(time: Double(k), site: SIMD3(0, 0, 30), timingAdvance: 5, model: m, sigmaM: 10,
                                                         cell: CellID(rat: .lte, mcc: 262, mnc: 2, area: 1, cid: 7))
                for r in stage.process(tick(Double(k)), upstream: [.measurement(meas, subject: Fix.defaultSubject)], context: ctx) {
                    if case .fix(let f) = r { last = f.covariance }
                }
            }
            return last
        }
        let tempered = run(repeatInflation: true), plain = run(repeatInflation: false)
        // The radial direction is (1, 1)/√2: its variance shrinks ~1/H_20 vs 1/20 without tempering.
        let u = SIMD2(1.0, 1.0) / 2.0.squareRoot()
        func radial(_ c: Covariance2) -> Double { u.x * u.x * c.ee + 2 * u.x * u.y * c.en + u.y * u.y * c.nn }
        #expect(radial(tempered) > 2 * radial(plain), "\(radial(tempered)) vs \(radial(plain))")
    }

    @Test func jacobianMatchesFiniteDifferences() {
        let meas = TimingAdvanceRangeMeasurement(time: 0, site: SIMD3(120, -40, 35), timingAdvance: 5, model: m, sigmaM: 10)
        for p in [SIMD2(400.0, 250.0), SIMD2(-80.0, 10.0), SIMD2(121.0, -39.0)] {
            let a = meas.jacobian(p), n = meas.numericalJacobian(p)
            for c in 0..<2 { #expect(abs(a[0, c] - n[0, c]) < 1e-6 * max(1, abs(a[0, c]))) }
        }
        // R = Δ²/12 + σ_m².
        #expect(abs(meas.noise[0, 0] - (m.stepLength * m.stepLength / 12 + 100)) < 1e-9)
        #expect(abs(meas.z[0] - 5 * m.stepLength) < 1e-9)
    }

    /// The annulus likelihood is flat inside the ring and falls off outside; finite everywhere.
    @Test func annulusLikelihoodShape() {
        let meas = TimingAdvanceRangeMeasurement(time: 0, site: SIMD3(0, 0, 0), timingAdvance: 5, model: m, sigmaM: 5)
        let mid = meas.logLikelihood(SIMD2(0, 5 * m.stepLength))
        let edge = meas.logLikelihood(SIMD2(0, 5.5 * m.stepLength))
        let inner = meas.logLikelihood(SIMD2(0, 5.2 * m.stepLength))
        let far = meas.logLikelihood(SIMD2(0, 50_000))
        #expect(abs(mid) < 1e-6 && abs(inner) < 0.01)
        #expect(abs(edge - log(0.5)) < 1e-3)
        #expect(far.isFinite && far < -1e6)
        // Equals Φ((r_hi−ρ)/σ) − Φ((r_lo−ρ)/σ) directly in the bulk.
        let rho = 4.6 * m.stepLength
        let direct = NormalCDF.phi((meas.ringUpper - rho) / 5) - NormalCDF.phi((meas.ringLower - rho) / 5)
        #expect(abs(meas.logLikelihood(SIMD2(rho, 0)) - log(direct)) < 1e-9)
    }

    @Test func lowerBoundIsOneSided() {
        let lb = TimingAdvanceLowerBound(time: 0, site: SIMD3(0, 0, 0), timingAdvance: 1282, model: m, sigmaM: 10)
        #expect(abs(lb.z[0] - 1281.5 * m.stepLength) < 1e-6)
        #expect(lb.isViolated(SIMD2(0, 1000)) && !lb.isViolated(SIMD2(0, 200_000)))
        #expect(abs(lb.logLikelihood(SIMD2(0, 200_000))) < 1e-9)
        #expect(lb.logLikelihood(SIMD2(0, 1000)).isFinite)
        let a = lb.jacobian(SIMD2(3000, 4000)), n = lb.numericalJacobian(SIMD2(3000, 4000))
        #expect(abs(a[0, 0] - n[0, 0]) < 1e-6 && abs(a[0, 1] - n[0, 1]) < 1e-6)
    }

    @Test func logPhiTails() {
        #expect(abs(NormalCDF.logPhi(0) - log(0.5)) < 1e-12)
        #expect(abs(NormalCDF.logPhi(-34.9) - NormalCDF.logPhi(-35.1)) < 8)   // continuous at the switch
        #expect(NormalCDF.logPhi(-1e5).isFinite)
        #expect(abs(NormalCDF.logDifference(40, 39) - NormalCDF.logPhi(-39)) < 1e-6)
    }
}

@Suite struct MultiRingTests {
    /// Two rings (GSM + LTE of different sites) intersect: the posterior mean lands near the
    /// truth, far better than either single ring-sector centroid.
    @Test func twoRingsIntersect() throws {
        let est = CellTAEstimator()
        let truth = SIMD2(1800.0, 900.0)
        let gsmSite = CellSite(cell: CellID(rat: .gsm, mcc: 1, mnc: 1, area: 1, cid: 1), position: SIMD3(0, 0, 0), azimuth: 60, beamwidth: 120)
        let lteSite = CellSite(cell: CellID(rat: .lte, mcc: 1, mnc: 2, area: 1, cid: 2), position: SIMD3(3000, -1500, 0), azimuth: 330, beamwidth: 120)
        func ring(_ s: CellSite, _ u: TimingAdvanceUnit) -> TimingAdvanceRing {
            let m = TimingAdvanceModel(unit: u)
            let d = ((truth - SIMD2(s.position.x, s.position.y)) * (truth - SIMD2(s.position.x, s.position.y))).sum().squareRoot()
            let ta = Int((d / m.stepLength).rounded())
            return TimingAdvanceRing(site: s, measurement: TimingAdvanceRangeMeasurement(time: 0, site: s.position, timingAdvance: ta,
                                                                                          model: m, sigmaM: 0.15 * m.stepLength), time: 0)
        }
        let rings = [ring(gsmSite, .gsmBits), ring(lteSite, .lte16Ts)]
        let f = try #require(est.multiRingFix(rings, time: 0))
        let e = ((f.position - truth) * (f.position - truth)).sum().squareRoot()
        #expect(e < 250 && f.usedCount == 2)
        // Same site twice → not a multi-ring problem.
        #expect(est.multiRingFix([rings[0], rings[0]], time: 0) == nil)
        // The 3GPP pattern prior: 0 dB on boresight, −12 dB at 65°, floor −20 dB.
        #expect(abs(CellTAEstimator.sectorLogPrior(site: gsmSite, point: SIMD2(sin(Angle.radians(60)), cos(Angle.radians(60)))) ) < 1e-9)
        #expect(abs(CellTAEstimator.sectorLogPrior(site: gsmSite, point: SIMD2(0, -1)) + 20 * log(10.0) / 10) < 1e-9)
    }
}

@Suite struct CellLookupTests {
    /// Sites without a range get the nearest other site of their network; the eNB fallback
    /// finds a sibling sector without its sector geometry.
    @Test func interSiteRangeAndSiteFallback() throws {
        let a = CellID(rat: .lte, mcc: 1, mnc: 1, area: 1, cid: 0x100 + 1)
        let b = CellID(rat: .lte, mcc: 1, mnc: 1, area: 1, cid: 0x200 + 1)
        let c = CellID(rat: .lte, mcc: 1, mnc: 2, area: 1, cid: 0x300 + 1)   // other operator
        let l = CellLookup([a: CellSite(cell: a, position: SIMD3(0, 0, 0), azimuth: 0, beamwidth: 120),
                            b: CellSite(cell: b, position: SIMD3(3000, 4000, 0)),
                            c: CellSite(cell: c, position: SIMD3(10, 0, 0), range: 700)])
        #expect(l.site(for: a)?.range == 5000 && l.site(for: b)?.range == 5000 && l.site(for: c)?.range == 700)
        let sibling = try #require(l.site(for: CellID(rat: .lte, mcc: 1, mnc: 1, area: 1, cid: 0x100 + 2)))
        #expect(sibling.position == SIMD3(0, 0, 0) && sibling.azimuth == nil)
        #expect(l.site(for: CellID(rat: .gsm, mcc: 1, mnc: 1, area: 1, cid: 5)) == nil)
    }
}
