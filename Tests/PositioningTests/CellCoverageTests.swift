import Testing
import Foundation
import CGSL
@testable import Positioning

@Suite struct CellCoverageMapTests {
    let id = CellID(rat: .lte, mcc: 302, mnc: 720, area: 29100, cid: 9_751_830)

    func obs(ta: Int?) -> CellObservation { CellObservation(cell: id, serving: true, timingAdvance: ta) }

    /// Exact moments of a hand-computed area: positions (0,0), (4,0), (0,6) with TA 2, and
    /// (100,100) with TA 5. The TA-2 area: mean (4/3, 2), S = [[16/3, −4], [−4, 12]] (n − 1).
    @Test func exactAreaMomentsAndPredictiveCovariance() throws {
        var b = CellCoverageMap.Builder()
        for p in [SIMD2(0.0, 0), SIMD2(4.0, 0), SIMD2(0.0, 6)] { b.add(cell: id, timingAdvance: 2, at: p) }
        b.add(cell: id, timingAdvance: 5, at: SIMD2(100, 100))
        let map = b.momentMap
        let a = try #require(map.areas[.init(cell: id, timingAdvance: 2)])
        #expect(a.count == 3)
        #expect(abs(a.mean.x - 4.0 / 3) < 1e-12 && abs(a.mean.y - 2) < 1e-12)
        #expect(abs(a.covariance.ee - 16.0 / 3) < 1e-12 && abs(a.covariance.en + 4) < 1e-12 && abs(a.covariance.nn - 12) < 1e-12)
        #expect(map.areas[.init(cell: id, timingAdvance: nil)]?.count == 4)

        let f = try map.fix(obs(ta: 2), useTA: true, time: 7, source: .cellTA).get()
        let floor2 = pow(TimingAdvanceModel(unit: .lte16Ts).stepLength, 2) / 12
        #expect(abs(CellCoverageMap.floorSigma(.lte) - 22.537) < 1e-3)
        #expect(f.position == a.mean && f.usedCount == 3 && f.source == .cellTA && f.time == 7)
        // One walk (m = 1): Student t with ν = ν₀ + m − 1 = 1, F₀.₉₅(2, 1) = 199.5 (closed form and
        // tables), C = (S + σ_f² I)·(1 + 1/m)·2·199.5/χ²₂,₀.₉₅.
        #expect(a.walks == 1 && CellCoverageMap.priorDegrees == 1)
        let k = 2 * 2 * 199.5 / 5.991464547107979
        #expect(abs(CellCoverageMap.studentT95Factor(degrees: 2) - 2 * 19 / 5.991464547107979) < 1e-9)
        #expect(abs(f.covariance.ee - (16.0 / 3 + floor2) * k) < 1e-6 * k)
        #expect(abs(f.covariance.en - (-4.0) * k) < 1e-6 * k)
        #expect(abs(f.covariance.nn - (12.0 + floor2) * k) < 1e-6 * k)
        // F₀.₉₅(2, ν) against GSL's F quantile for several ν, and → χ² as ν → ∞.
        for nu in [3.0, 7, 14, 40] {
            #expect(abs(CellCoverageMap.studentT95Factor(degrees: nu) - 2 * gsl_cdf_fdist_Pinv(0.95, 2, nu) / 5.991464547107979) < 1e-9)
        }
        #expect(abs(CellCoverageMap.studentT95Factor(degrees: 1e7) - 1) < 1e-5)
        // Three walks: m = 3 (positions of walks 0, 1, 1, 2), capped by the count.
        var b3 = CellCoverageMap.Builder()
        for (i, p) in [SIMD2(0.0, 0), SIMD2(4.0, 0), SIMD2(0.0, 6), SIMD2(1.0, 1)].enumerated() {
            b3.add(cell: id, timingAdvance: 2, at: p, walk: [0, 1, 1, 2][i])
        }
        #expect(b3.map.areas[.init(cell: id, timingAdvance: 2)]?.walks == 3)
        #expect(CellCoverageMap.Area(mean: .zero, covariance: Covariance2(sigma: 1), count: 2, walks: 5).walks == 2)
    }

    /// A (cell, TA) area of `map` sits at its spatial median: on the triangle (0,0), (4,0), (0,6)
    /// (all angles < 120°) the Fermat point, where the unit vectors to the three corners sum to
    /// zero (the optimality condition, checked independently of Weiszfeld's iteration); the
    /// spread is taken about it (S + ddᵀ, d = y − x̄); the cell's whole area keeps the mean.
    @Test func taAreaAtTheSpatialMedian() throws {
        var b = CellCoverageMap.Builder()
        let pts = [SIMD2(0.0, 0), SIMD2(4.0, 0), SIMD2(0.0, 6)]
        for p in pts { b.add(cell: id, timingAdvance: 2, at: p) }
        let moments = try #require(b.momentMap.areas[.init(cell: id, timingAdvance: 2)])
        let a = try #require(b.map.areas[.init(cell: id, timingAdvance: 2)])
        let grad = pts.reduce(SIMD2<Double>(0, 0)) { g, p in let d = p - a.mean; return g + d / (d * d).sum().squareRoot() }
        #expect((grad * grad).sum().squareRoot() < 1e-3, "\(a.mean): Σ unit vectors \(grad)")
        #expect(((a.mean - moments.mean) * (a.mean - moments.mean)).sum() > 0.1)
        let d = a.mean - moments.mean
        #expect(abs(a.covariance.ee - (16.0 / 3 + d.x * d.x)) < 1e-9 && abs(a.covariance.en - (-4 + d.x * d.y)) < 1e-9
                && abs(a.covariance.nn - (12 + d.y * d.y)) < 1e-9)
        #expect(a.count == 3 && a.walks == 1)
        #expect(b.map.areas[.init(cell: id, timingAdvance: nil)] == b.momentMap.areas[.init(cell: id, timingAdvance: nil)])
        // Every walk weighs 1: one walk of 10 positions at (100, 0) and two walks of one position
        // each at (0, 0) and (0, 1) give a median at the two single walks' side of the heavy walk's
        // point (unweighted, the ten positions would pull it to (100, 0)).
        var w = CellCoverageMap.Builder()
        for _ in 0..<10 { w.add(cell: id, timingAdvance: 1, at: SIMD2(100, 0), walk: 0) }
        w.add(cell: id, timingAdvance: 1, at: SIMD2(0, 0), walk: 1); w.add(cell: id, timingAdvance: 1, at: SIMD2(0, 1), walk: 2)
        #expect(try #require(w.map.areas[.init(cell: id, timingAdvance: 1)]).mean.x < 50)
    }

    /// Seeded arcs of a TA ring (LTE, TA 3: 234–312 m from the site; arc ±70°, 8 walks of 20
    /// reports each, radius uniform in the ring): the spatial median stays in the ring where
    /// the mean falls inside it, and it is nearer to new walks' reports (median distance over
    /// 2,000 fresh draws: the spatial median minimises the expected distance) in at least 45 of 50
    /// seeded areas.
    @Test func spatialMedianBeatsTheMeanOnAnArc() throws {
        var rng = SplitMix64(seed: 2026)
        let step = TimingAdvanceModel(unit: .lte16Ts).stepLength
        func draw() -> SIMD2<Double> {
            let r = step * (3 + rng.uniform(0, 1)), t = rng.uniform(-70, 70) * .pi / 180
            return SIMD2(r * sin(t), r * cos(t))
        }
        func medianDistance(_ y: SIMD2<Double>, _ xs: [SIMD2<Double>]) -> Double {
            xs.reduce(0) { $0 + (($1 - y) * ($1 - y)).sum().squareRoot() } / Double(xs.count)
        }
        var wins = 0, insideRing = 0
        for _ in 0..<50 {
            var b = CellCoverageMap.Builder()
            for walk in 0..<8 { for _ in 0..<20 { b.add(cell: id, timingAdvance: 3, at: draw(), walk: walk) } }
            let y = try #require(b.map.areas[.init(cell: id, timingAdvance: 3)]).mean
            let m = try #require(b.momentMap.areas[.init(cell: id, timingAdvance: 3)]).mean
            let fresh = (0..<2000).map { _ in draw() }
            if medianDistance(y, fresh) < medianDistance(m, fresh) { wins += 1 }
            let r = (y * y).sum().squareRoot()
            if r > 3 * step - 5 && r < 4 * step { insideRing += 1 }
            #expect((m * m).sum().squareRoot() < 3 * step, "the mean of an arc lies inside the ring")
        }
        #expect(wins >= 45, "median nearer in \(wins) of 50")
        #expect(insideRing >= 45, "median in the ring in \(insideRing) of 50")
    }

    /// A TA area below `minCount` falls back to the cell's area; Cell-ID ignores TA; an unknown
    /// or too rarely seen cell is a typed failure, never a NaN fix.
    @Test func fallbackAndFailures() throws {
        var b = CellCoverageMap.Builder()
        for x in [0.0, 10, 20] { b.add(cell: id, timingAdvance: 1, at: SIMD2(x, 0)) }
        b.add(cell: id, timingAdvance: 4, at: SIMD2(300, 0))
        b.add(cell: id, timingAdvance: nil, at: SIMD2(40, 0))
        let map = b.map
        let all = try #require(map.areas[.init(cell: id, timingAdvance: nil)])
        #expect(all.count == 5 && abs(all.mean.x - 74) < 1e-12)
        // TA 1: collinear positions, spatial median = the middle one (Weiszfeld to 10⁻⁴ m).
        #expect(abs(try map.fix(obs(ta: 1), useTA: true, time: 0, source: .cellTA).get().position.x - 10) < 1e-3)
        #expect(try map.fix(obs(ta: 4), useTA: true, time: 0, source: .cellTA).get().position.x == 74)   // 1 < 3: the cell's
        #expect(try map.fix(obs(ta: 1), useTA: false, time: 0, source: .cell).get().position.x == 74)
        #expect(map.area(for: obs(ta: 1), useTA: true, minCount: 3)?.usedTA == true)
        #expect(map.area(for: obs(ta: 4), useTA: true, minCount: 3)?.usedTA == false)
        let other = CellObservation(cell: CellID(rat: .gsm, mcc: 1, mnc: 1, area: 1, cid: 1), serving: true)
        guard case .failure(.unknownAnchor) = map.fix(other, useTA: true, time: 0, source: .cellTA) else {
            Issue.record("unknown cell must fail as an unknown anchor"); return
        }
        guard case .failure(.missingInput) = map.fix(obs(ta: 1), useTA: true, minCount: 6, time: 0, source: .cellTA) else {
            Issue.record("a cell below minCount must fail"); return
        }
        #expect(CellCoverageMap(areas: [:]).isEmpty)
    }

    /// Welford's running moments equal the two-pass sample moments on 10,000 seeded positions.
    @Test func runningMomentsEqualTwoPass() throws {
        var rng = TestRNG(seed: 11)
        var b = CellCoverageMap.Builder()
        var xs: [SIMD2<Double>] = []
        for _ in 0..<10_000 {
            let p = SIMD2(5000 + 120 * rng.gaussian(), -3000 + 40 * rng.gaussian() + 0.5 * 120 * rng.gaussian())
            xs.append(p); b.add(cell: id, timingAdvance: 0, at: p)
        }
        let a = try #require(b.momentMap.areas[.init(cell: id, timingAdvance: 0)])
        let m = xs.reduce(SIMD2(0, 0), +) / Double(xs.count)
        var ee = 0.0, en = 0.0, nn = 0.0
        for p in xs { let d = p - m; ee += d.x * d.x; en += d.x * d.y; nn += d.y * d.y }
        let k = 1 / Double(xs.count - 1)
        #expect(abs(a.mean.x - m.x) < 1e-9 && abs(a.mean.y - m.y) < 1e-9)
        #expect(abs(a.covariance.ee - ee * k) < 1e-6 * ee * k && abs(a.covariance.en - en * k) < 1e-6 * abs(en * k))
        #expect(abs(a.covariance.nn - nn * k) < 1e-6 * nn * k)
    }

    /// The predictive covariance is honest for a new phone in the same area: areas of n = 30
    /// positions drawn from a Gaussian (σ 150 × 60 m, correlated), a new position from the
    /// same distribution; over 4,000 seeded areas the NEES averages Hotelling's T² mean
    /// 2(n−1)/(n−4) = 2.23 without the floor (the floor, 22.5 m against a 60 m axis, lowers it
    /// a little) and about 95 % fall inside the 95 % ellipse.
    @Test func predictiveCovarianceIsConsistent() throws {
        var rng = TestRNG(seed: 2026)
        var nees: [Double] = []
        for _ in 0..<4000 {
            var b = CellCoverageMap.Builder()
            func draw() -> SIMD2<Double> {
                let u = rng.gaussian(), v = rng.gaussian()
                return SIMD2(1000 + 150 * u, 2000 + 0.6 * 60 * u + 0.8 * 60 * v)
            }
            for w in 0..<30 { b.add(cell: id, timingAdvance: 3, at: draw(), walk: w) }
            let f = try b.map.fix(obs(ta: 3), useTA: true, time: 0, source: .cellTA).get()
            nees.append(try #require(f.covariance.mahalanobis2(f.position - draw())))
        }
        let anees = nees.reduce(0, +) / Double(nees.count)
        let inside = Double(nees.filter { $0 <= 5.991 }.count) / Double(nees.count)
        #expect(anees > 1.6 && anees < 2.2, "ANEES \(anees)")
        #expect(inside > 0.94 && inside < 0.975, "inside95 \(inside)")
    }

    /// Positions of one walk are not independent: areas learned from 3 walks of 10 reports each,
    /// every walk along its own street (offset N(0, 120² I) from the area's centre, reports
    /// N(0, 25²) about it); a new phone on a new street. Counting the 30 reports as independent
    /// (the Gaussian S·(1 + 1/n) + σ_f² rule) holds 58 % inside the 95 % ellipse; counting walks
    /// (m = 3, ν = 3) holds 88.6 % (ANEES 2.5): three walks of a street layout whose spread is
    /// five times the within-street one is the hard case, where the honest predictive (Hotelling,
    /// ν = m − 2 = 1) is heavier still.
    @Test func walksAreTheIndependentDraws() throws {
        var rng = TestRNG(seed: 21)
        var inT = 0, inNaive = 0, nees: [Double] = []
        let runs = 3000
        for _ in 0..<runs {
            var b = CellCoverageMap.Builder()
            func walk() -> SIMD2<Double> { SIMD2(120 * rng.gaussian(), 120 * rng.gaussian()) }
            func report(_ o: SIMD2<Double>) -> SIMD2<Double> { o + SIMD2(25 * rng.gaussian(), 25 * rng.gaussian()) }
            for w in 0..<3 {
                let o = walk()
                for _ in 0..<10 { b.add(cell: id, timingAdvance: 3, at: report(o), walk: w) }
            }
            let a = try #require(b.map.areas[.init(cell: id, timingAdvance: 3)])
            let f = try b.map.fix(obs(ta: 3), useTA: true, time: 0, source: .cellTA).get()
            let x = report(walk())
            let m2 = try #require(f.covariance.mahalanobis2(x - f.position))
            nees.append(m2)
            if m2 <= 5.991 { inT += 1 }
            let fl = CellCoverageMap.floorSigma(.lte), g = 1 + 1 / 30.0
            let naive = Covariance2(ee: a.covariance.ee * g + fl * fl, en: a.covariance.en * g, nn: a.covariance.nn * g + fl * fl)
            if let n2 = naive.mahalanobis2(x - f.position), n2 <= 5.991 { inNaive += 1 }
        }
        let share = Double(inT) / Double(runs), naive = Double(inNaive) / Double(runs)
        print("walks as draws: inside95 \(share), ANEES \(nees.reduce(0, +) / Double(runs)); reports as draws: inside95 \(naive)")
        #expect(share >= 0.85 && share <= 0.99, "inside95 \(share)")
        #expect(naive < 0.65, "the naive rule should be over-confident here: \(naive)")
    }

    /// The stages say why a report is not located: a cell whose area has too few positions is
    /// `missing_input` (the coverage map's reason) when the tower database has no site for it
    /// either, a cell nobody saw is `unknown_anchor`; with the site known the tower fix is used.
    @Test func stagesReportTheCoverageReason() throws {
        let rare = CellCoverageMap(areas: [.init(cell: id, timingAdvance: nil): .init(mean: SIMD2(5, 5), covariance: .zero, count: 1)])
        let origin = Geodetic(latitude: 45, longitude: -75)
        func codes(_ reference: ReferenceData, _ o: CellObservation) -> [String] {
            let ctx = PipelineContext(header: TraceHeader(origin: origin), reference: reference)
            let ev = TraceEvent(time: 1, payload: .cell(o))
            return (CellIDStage().process(ev, upstream: [], context: ctx) + CellTAStage().process(ev, upstream: [], context: ctx)).compactMap {
                switch $0 {
                case .failure(_, _, _, let r): return r.code
                case .fix: return "fix"
                default: return nil
                }
            }
        }
        #expect(codes(ReferenceData(cellCoverage: rare), obs(ta: 3)) == ["missing_input", "missing_input"])
        let other = CellObservation(cell: CellID(rat: .lte, mcc: 1, mnc: 1, area: 1, cid: 1), serving: true, timingAdvance: 3)
        #expect(codes(ReferenceData(cellCoverage: rare), other) == ["unknown_anchor", "unknown_anchor"])
        let site = CellSite(cell: id, position: SIMD3(0, 0, 30))
        #expect(codes(ReferenceData(cells: [id: site], cellCoverage: rare), obs(ta: 3)) == ["fix", "fix"])
    }
}
