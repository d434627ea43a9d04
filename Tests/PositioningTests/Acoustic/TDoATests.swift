import Testing
import CGSL
@testable import Positioning

/// Seeded Gaussian noise (GSL mt19937) for Monte Carlo tests.
final class SeededNoise {
    let rng: UnsafeMutablePointer<gsl_rng>
    init(seed: UInt) { rng = gsl_rng_alloc(cgsl_rng_mt19937())!; gsl_rng_set(rng, seed) }
    deinit { gsl_rng_free(rng) }
    func gaussian(_ sigma: Double) -> Double { gsl_ran_gaussian(rng, sigma) }
    func uniform() -> Double { gsl_rng_uniform(rng) }
}

/// Office-like layout: 5 beacons on a 10 m × 8 m ceiling at slightly different heights.
let ceilingBeacons: [SIMD3<Double>] = [
    SIMD3(0, 0, 3.0), SIMD3(10, 0, 3.0), SIMD3(10, 8, 3.0), SIMD3(0, 8, 3.0), SIMD3(5, 4, 3.0),
]
/// Non-coplanar 3-D layout (heights differ by metres).
let spatialBeacons: [SIMD3<Double>] = [
    SIMD3(0, 0, 0.5), SIMD3(10, 0, 3.0), SIMD3(10, 8, 0.8), SIMD3(0, 8, 2.9), SIMD3(5, 4, 3.5), SIMD3(2, 6, 0.3),
]

@Suite struct TDoASolverTests {
    init() { GSL.disableAbort() }

    @Test(arguments: TDoARefinement.allCases)
    func exactPlanarNoiseFree(refinement: TDoARefinement) throws {
        // Noise-free ρ: every stage must return the true point (stage 2 exact up to rounding).
        let truth = SIMD3(3.7, 5.2, 1.2)
        let p = TDoAProblem(beacons: ceilingBeacons,
                            rangeDifferences: TDoAProblem.rangeDifferences(beacons: ceilingBeacons, at: truth),
                            sigma: 0.01, mode: .planar(height: 1.2))
        let est = try TDoASolver(refinement: refinement).solve(p).get()
        #expect(abs(est.position[0] - 3.7) < 1e-6 && abs(est.position[1] - 5.2) < 1e-6)
        #expect(abs(est.stage1[0] - 3.7) < 1e-6 && abs(est.stage1[1] - 5.2) < 1e-6)
        let s2 = try #require(est.stage2)
        #expect(abs(s2[0] - 3.7) < 1e-6 && abs(s2[1] - 5.2) < 1e-6)
        #expect(est.chiSquare < 1e-8)
    }

    @Test func exactSpatialNoiseFree() throws {
        let truth = SIMD3(6.1, 2.4, 1.4)
        let p = TDoAProblem(beacons: spatialBeacons,
                            rangeDifferences: TDoAProblem.rangeDifferences(beacons: spatialBeacons, at: truth),
                            sigma: 0.01, mode: .spatial)
        for r in TDoARefinement.allCases {
            let est = try TDoASolver(refinement: r).solve(p).get()
            #expect(abs(est.position[0] - 6.1) < 1e-6 && abs(est.position[1] - 2.4) < 1e-6 && abs(est.position[2] - 1.4) < 1e-6)
        }
    }

    @Test func minimalCaseUniqueAndAmbiguous() throws {
        // 3 beacons in 2-D. Inside the triangle the quadratic has one admissible root.
        let b: [SIMD3<Double>] = [SIMD3(0, 0, 3), SIMD3(10, 0, 3), SIMD3(0, 10, 3)]
        let truth = SIMD3(2.0, 3.0, 1.2)
        let p = TDoAProblem(beacons: b, rangeDifferences: TDoAProblem.rangeDifferences(beacons: b, at: truth),
                            sigma: 0.01, mode: .planar(height: 1.2))
        let solver = TDoASolver(refinement: .none)
        switch TDoASolver.minimalSolve(p, prior: nil) {
        case .success(let x): #expect(abs(x[0] - 2) < 1e-6 && abs(x[1] - 3) < 1e-6)
        case .failure(let f):
            // Two admissible roots: the prior at the truth must resolve it.
            #expect(f == .ambiguousRoots)
            let x = try solver.solve(p, prior: [2, 3]).get().position
            #expect(abs(x[0] - 2) < 1e-6 && abs(x[1] - 3) < 1e-6)
        }
        // Far outside the triangle, behind beacon 1, both roots are admissible: ambiguous
        // without a prior, resolved by one.
        let far = SIMD3(-30.0, -25.0, 1.2)
        let q = TDoAProblem(beacons: b, rangeDifferences: TDoAProblem.rangeDifferences(beacons: b, at: far),
                            sigma: 0.01, mode: .planar(height: 1.2))
        let roots = TDoASolver.minimalSolve(q, prior: nil)
        if case .failure(let f) = roots {
            #expect(f == .ambiguousRoots)
            let x = try solver.solve(q, prior: [-28, -26]).get().position
            #expect(abs(x[0] + 30) < 1e-5 && abs(x[1] + 25) < 1e-5)
        } else if case .success(let x) = roots {
            #expect(abs(x[0] + 30) < 1e-5 && abs(x[1] + 25) < 1e-5)
        }
    }

    @Test func ambiguousRootsAreReportedNotGuessed() {
        // Construct a case with two admissible roots: search a grid for one and check the
        // solver reports .ambiguousRoots (never NaN, never a silent guess).
        let b: [SIMD3<Double>] = [SIMD3(0, 0, 3), SIMD3(10, 0, 3), SIMD3(0, 10, 3)]
        var found = 0
        for x in stride(from: -40.0, through: 40, by: 4) {
            for y in stride(from: -40.0, through: 40, by: 4) {
                let p = TDoAProblem(beacons: b, rangeDifferences: TDoAProblem.rangeDifferences(beacons: b, at: SIMD3(x, y, 1.2)),
                                    sigma: 0.01, mode: .planar(height: 1.2))
                switch TDoASolver(refinement: .none).solve(p) {
                case .failure(let f):
                    #expect(f == .ambiguousRoots)
                    found += 1
                case .success(let e):
                    #expect(e.position.allSatisfy { $0.isFinite })
                    #expect(abs(e.position[0] - x) < 1e-4 && abs(e.position[1] - y) < 1e-4)
                }
            }
        }
        #expect(found > 0, "the grid should contain two-root points outside the beacon triangle")
    }

    @Test func degenerateGeometriesAreTypedFailures() {
        // Too few.
        let two = TDoAProblem(beacons: Array(ceilingBeacons.prefix(2)), rangeDifferences: [1], sigma: 0.01, mode: .planar(height: 1.2))
        #expect(failure(TDoASolver().solve(two)) == .tooFewAnchors(needed: 3, got: 2))
        let three3 = TDoAProblem(beacons: Array(spatialBeacons.prefix(3)), rangeDifferences: [1, 2], sigma: 0.01, mode: .spatial)
        #expect(failure(TDoASolver().solve(three3)) == .tooFewAnchors(needed: 4, got: 3))
        // Collinear (2-D): beacons on one line.
        let line: [SIMD3<Double>] = (0..<5).map { SIMD3(Double($0) * 2.5, 1, 3) }
        let pl = TDoAProblem(beacons: line, rangeDifferences: TDoAProblem.rangeDifferences(beacons: line, at: SIMD3(3, 4, 1.2)),
                             sigma: 0.01, mode: .planar(height: 1.2))
        #expect(failure(TDoASolver().solve(pl)) == .collinearGeometry)
        // Coplanar (3-D): all on the ceiling.
        let pc = TDoAProblem(beacons: ceilingBeacons, rangeDifferences: TDoAProblem.rangeDifferences(beacons: ceilingBeacons, at: SIMD3(3, 4, 1.2)),
                             sigma: 0.01, mode: .spatial)
        #expect(failure(TDoASolver().solve(pc)) == .coplanarGeometry)
        // Non-finite input.
        let bad = TDoAProblem(beacons: ceilingBeacons, rangeDifferences: [1, .nan, 2, 3], sigma: 0.01, mode: .planar(height: 1.2))
        if case .inconsistentMeasurements = failure(TDoASolver().solve(bad)) {} else { Issue.record("expected inconsistentMeasurements") }
    }

    /// Monte Carlo (seeded, 600 runs, σ_TOA ⇒ 1 cm per beacon, 5 beacons): the refined RMSE
    /// is within 10 % of √tr(CRLB) and stage 2 beats stage 1.
    @Test(arguments: [TDoARefinement.levenbergMarquardt, .gaussNewton])
    func monteCarloAgainstCRLB(refinement: TDoARefinement) throws {
        let noise = SeededNoise(seed: 20261122)
        let truth = SIMD3(3.1, 2.2, 1.2)
        let sigma = 0.01
        let exact = TDoAProblem.rangeDifferences(beacons: ceilingBeacons, at: truth)
        let base = TDoAProblem(beacons: ceilingBeacons, rangeDifferences: exact, sigma: sigma, mode: .planar(height: 1.2))
        let crlb = try #require(TDoASolver.crlb(base, at: [truth.x, truth.y]))
        let bound = (crlb[0] + crlb[3]).squareRoot()
        let solver = TDoASolver(refinement: refinement)
        let ws = TDoALMWorkspace()
        var se = 0.0, se1 = 0.0, se2 = 0.0
        let runs = 600
        for _ in 0..<runs {
            // Independent TOA noise per beacon; differencing correlates ρ through beacon 1.
            let n = (0..<5).map { _ in noise.gaussian(sigma) }
            var p = base
            p.rangeDifferences = (0..<4).map { exact[$0] + n[$0 + 1] - n[0] }
            let e = try solver.solve(p, workspace: ws).get()
            func sq(_ x: [Double]) -> Double { (x[0] - truth.x) * (x[0] - truth.x) + (x[1] - truth.y) * (x[1] - truth.y) }
            se += sq(e.position); se1 += sq(e.stage1); se2 += sq(try #require(e.stage2))
        }
        let rmse = (se / Double(runs)).squareRoot()
        let rmse1 = (se1 / Double(runs)).squareRoot(), rmse2 = (se2 / Double(runs)).squareRoot()
        print("TDoA MC \(refinement.rawValue): RMSE \(rmse) m, sqrt(tr CRLB) \(bound) m, ratio \(rmse / bound), stage1 \(rmse1), stage2 \(rmse2)")
        #expect(rmse <= 1.1 * bound, "RMSE \(rmse) vs CRLB \(bound)")
        #expect(rmse2 < rmse1, "stage 2 \(rmse2) must beat stage 1 \(rmse1)")
        #expect(rmse <= rmse1)
    }

    @Test func lmAndGaussNewtonAgree() throws {
        let noise = SeededNoise(seed: 7)
        let truth = SIMD3(7.5, 6.0, 1.1)
        let exact = TDoAProblem.rangeDifferences(beacons: ceilingBeacons, at: truth)
        for _ in 0..<50 {
            let rho = exact.map { $0 + noise.gaussian(0.02) }
            let p = TDoAProblem(beacons: ceilingBeacons, rangeDifferences: rho, sigma: 0.01, mode: .planar(height: 1.1))
            let a = try TDoASolver(refinement: .levenbergMarquardt).solve(p).get()
            let b = try TDoASolver(refinement: .gaussNewton).solve(p).get()
            #expect(abs(a.position[0] - b.position[0]) < 1e-5 && abs(a.position[1] - b.position[1]) < 1e-5)
            #expect(abs(a.chiSquare - b.chiSquare) < 1e-6 * max(1, a.chiSquare))
        }
    }

    @Test func speedOfSound() {
        #expect(abs(SpeedOfSound.metersPerSecond(celsius: 20) - 343.2) < 0.05)
        #expect(abs(SpeedOfSound.metersPerSecond(celsius: 0) - 331.3) < 1e-9)
        #expect(SpeedOfSound.metersPerSecond(celsius: -400).isFinite)
    }

    @Test func gdopIsDimensionlessAndScaleFree() throws {
        let truth = [4.0, 3.0]
        let p1 = TDoAProblem(beacons: ceilingBeacons, rangeDifferences: [0, 0, 0, 0], sigma: 0.01, mode: .planar(height: 1.2))
        var p2 = p1; p2.sigmas = p2.sigmas.map { $0 * 10 }
        let g1 = try #require(TDoASolver.gdop(p1, at: truth)), g2 = try #require(TDoASolver.gdop(p2, at: truth))
        #expect(abs(g1 - g2) < 1e-12)
        // CRLB = σ²·GDOP-matrix for equal σ: √tr(CRLB) = σ·GDOP.
        let c = try #require(TDoASolver.crlb(p1, at: truth))
        #expect(abs((c[0] + c[3]).squareRoot() - 0.01 * g1) < 1e-12)
    }
}

func failure<T>(_ r: Result<T, EstimationFailure>) -> EstimationFailure? {
    if case .failure(let f) = r { return f }
    return nil
}
