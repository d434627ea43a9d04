import Testing
import CGSL
@testable import Positioning

/// An independent reference for the TDoA solver (issue 21 item 4): weighted least squares of the
/// range differences, written here without any of the solver's code — dense Gaussian
/// elimination, a central-difference Jacobian, Levenberg–Marquardt with Marquardt's diagonal
/// damping — started at the TRUE position, so it finds the least-squares minimum nearest the
/// truth ("exact least squares from the truth").
enum ReferenceTDoALS {
    /// Solves A x = b (n×n row-major) by Gaussian elimination with partial pivoting.
    static func solve(_ a: [Double], _ b: [Double], _ n: Int) -> [Double]? {
        var m = a, x = b
        for c in 0..<n {
            var piv = c
            for r in c..<n where abs(m[r * n + c]) > abs(m[piv * n + c]) { piv = r }
            guard abs(m[piv * n + c]) > 1e-300 else { return nil }
            if piv != c {
                for k in 0..<n { m.swapAt(c * n + k, piv * n + k) }
                x.swapAt(c, piv)
            }
            for r in (c + 1)..<n {
                let f = m[r * n + c] / m[c * n + c]
                for k in c..<n { m[r * n + k] -= f * m[c * n + k] }
                x[r] -= f * x[c]
            }
        }
        for c in stride(from: n - 1, through: 0, by: -1) {
            var s = x[c]
            for k in (c + 1)..<n { s -= m[c * n + k] * x[k] }
            x[c] = s / m[c * n + c]
        }
        return x
    }

    /// W = Q⁻¹ with Q = σ₁²11ᵀ + diag(σ₂², …, σ_M²), by solving Q w_c = e_c column by column.
    static func weight(_ sigmas: [Double]) -> [Double] {
        let n = sigmas.count - 1
        var q = [Double](repeating: sigmas[0] * sigmas[0], count: n * n)
        for i in 0..<n { q[i * n + i] += sigmas[i + 1] * sigmas[i + 1] }
        var w = [Double](repeating: 0, count: n * n)
        for c in 0..<n {
            var e = [Double](repeating: 0, count: n); e[c] = 1
            let col = solve(q, e, n)!
            for r in 0..<n { w[r * n + c] = col[r] }
        }
        return w
    }

    static func model(_ beacons: [SIMD3<Double>], _ p: [Double]) -> [Double] {
        let pt = SIMD3(p[0], p[1], p[2])
        func r(_ s: SIMD3<Double>) -> Double { let d = pt - s; return (d * d).sum().squareRoot() }
        return beacons.dropFirst().map { r($0) - r(beacons[0]) }
    }

    static func chi2(_ beacons: [SIMD3<Double>], _ rho: [Double], _ w: [Double], _ p: [Double]) -> Double {
        let m = model(beacons, p), n = rho.count
        var c = 0.0
        for i in 0..<n { for j in 0..<n { c += (rho[i] - m[i]) * w[i * n + j] * (rho[j] - m[j]) } }
        return c
    }

    /// Minimises χ²(p) from `start`; returns (p, χ²).
    static func minimise(_ beacons: [SIMD3<Double>], _ rho: [Double], sigmas: [Double], start: [Double]) -> ([Double], Double) {
        let w = weight(sigmas), n = rho.count
        var p = start, c = chi2(beacons, rho, w, p), lambda = 1e-3
        for _ in 0..<500 {
            let m0 = model(beacons, p)
            var jac = [Double](repeating: 0, count: n * 3)
            for k in 0..<3 {
                let h = 1e-6 * max(1, abs(p[k]))
                var a = p, b = p; a[k] += h; b[k] -= h
                let ma = model(beacons, a), mb = model(beacons, b)
                for i in 0..<n { jac[i * 3 + k] = (ma[i] - mb[i]) / (2 * h) }
            }
            var jtwj = [Double](repeating: 0, count: 9), g = [Double](repeating: 0, count: 3)
            for a in 0..<3 {
                for i in 0..<n {
                    for j in 0..<n {
                        let x = jac[i * 3 + a] * w[i * n + j]
                        g[a] += x * (rho[j] - m0[j])
                        for b in 0..<3 { jtwj[a * 3 + b] += x * jac[j * 3 + b] }
                    }
                }
            }
            var improved = false
            for _ in 0..<30 {
                var damped = jtwj
                for a in 0..<3 { damped[a * 3 + a] *= 1 + lambda }
                guard let step = solve(damped, g, 3) else { lambda *= 10; continue }
                let trial = (0..<3).map { p[$0] + step[$0] }
                let ct = chi2(beacons, rho, w, trial)
                if ct < c {
                    let small = (step.map { $0 * $0 }.reduce(0, +)).squareRoot() < 1e-10
                    p = trial; c = ct; lambda = max(lambda / 10, 1e-12); improved = true
                    if small { return (p, c) }
                    break
                }
                lambda *= 10
            }
            if !improved { break }
        }
        return (p, c)
    }
}

@Suite struct TDoAConvergenceTests {
    init() { GSL.disableAbort() }

    /// The office of `posfuse-bench tdoa` (20 m × 12 m, beacons at 1.9–3.0 m), solved in 3-D
    /// with its first five beacons: the beacon heights differ by only 0.8 m, so the height is
    /// weakly determined and the problem passes the degeneracy test (σ_min/σ_max ≈ 0.02) while
    /// Levenberg–Marquardt, started from the Chan–Ho point, can run off along the weak
    /// direction. Found by a seeded search over phone positions (mt19937 seed 21, σ = 1 cm):
    /// the first problem where GSL's driver stops without meeting a stopping test.
    static let office: [SIMD3<Double>] = [
        SIMD3(0.3, 0.3, 2.9), SIMD3(19.7, 0.3, 2.3), SIMD3(19.7, 11.7, 2.8), SIMD3(0.3, 11.7, 2.1), SIMD3(10, 0.3, 2.6),
    ]

    /// Problems of the office layout in 3-D whose LM run does not converge in 20 iterations.
    static func nonConvergingOfficeProblems(limit: Int) -> [(truth: SIMD3<Double>, problem: TDoAProblem)] {
        let noise = SeededNoise(seed: 21)
        let ws = TDoALMWorkspace()
        var out: [(SIMD3<Double>, TDoAProblem)] = []
        for _ in 0..<4000 where out.count < limit {
            let truth = SIMD3(1 + 18 * noise.uniform(), 1 + 10 * noise.uniform(), 0.5 + 1.5 * noise.uniform())
            var rho = TDoAProblem.rangeDifferences(beacons: office, at: truth)
            let n0 = noise.gaussian(0.01)
            rho = rho.map { $0 + noise.gaussian(0.01) - n0 }
            let p = TDoAProblem(beacons: office, rangeDifferences: rho, sigma: 0.01, mode: .spatial)
            guard TDoASolver.geometryFailure(p, ratio: 1e-2) == nil,
                  let ch = TDoASolver.chanHo(p, weight: SmallSPD.differenceInverse(reference: 1e-4, others: [1e-4, 1e-4, 1e-4, 1e-4])),
                  let r = ws.refine(p, start: ch.stage2 ?? ch.stage1) else { continue }
            if !r.converged { out.append((truth, p)) }
        }
        return out
    }

    @Test func officeGeometryNeverReturnsAnUnconvergedLMPoint() throws {
        let cases = Self.nonConvergingOfficeProblems(limit: 20)
        // The geometry must actually exercise the non-converged path, or this test says nothing.
        #expect(cases.count >= 5, "expected LM non-convergence on the office layout in 3-D, found \(cases.count)")
        let bound = ChiSquare.quantile(0.999, dof: 1)
        let solver = TDoASolver(refinement: .levenbergMarquardt)
        var fallbacks = 0
        for (truth, p) in cases {
            let (ref, refChi2) = ReferenceTDoALS.minimise(Self.office, p.rangeDifferences, sigmas: p.sigmas, start: [truth.x, truth.y, truth.z])
            switch solver.solve(p) {
            case .success(let e):
                fallbacks += 1
                // Only Gauss–Newton's converged point may stand in: it is the reference minimum.
                #expect(e.chiSquare <= max(bound, refChi2 * (1 + 1e-6) + 1e-9), "χ² \(e.chiSquare) vs reference \(refChi2)")
                #expect(zip(e.position, ref).allSatisfy { abs($0 - $1) < 1e-3 }, "\(e.position) vs reference \(ref)")
            case .failure(let f):
                #expect(f == .notConverged, "a geometry that passed the degeneracy test failed as \(f)")
            }
            // With 200 iterations the answer is a converged fix or notConverged, never a geometry failure.
            switch TDoASolver(refinement: .levenbergMarquardt, maxIterations: 200).solve(p) {
            case .success(let e): #expect(e.chiSquare <= max(bound, refChi2 * (1 + 1e-6) + 1e-9))
            case .failure(let f): #expect(f == .notConverged)
            }
        }
        print("office 3-D: \(cases.count) problems where LM did not converge; \(fallbacks) fixes from the Gauss–Newton fallback, \(cases.count - fallbacks) notConverged")
        #expect(fallbacks > 0, "Gauss–Newton should rescue some of the non-converged LM runs")
    }

    /// ≥ 1,000 seeded random 3-D geometries (5–8 beacons anywhere in a 20 × 12 × 3 m room, the
    /// phone anywhere in it, σ_TOA 1–5 cm per beacon): every fix the solver returns has a χ²
    /// within the 99.9 % bound of χ²(M−1−3) — or, where the data themselves exceed it, no more
    /// than the reference minimum's — and lies at the reference minimum. Failures are typed
    /// and rare.
    @Test(arguments: [TDoARefinement.levenbergMarquardt, .gaussNewton])
    func randomGeometriesAgainstReference(refinement: TDoARefinement) {
        let noise = SeededNoise(seed: 2026_1124)
        let solver = TDoASolver(refinement: refinement)
        let ws = TDoALMWorkspace()
        var fixes = 0, failures: [String: Int] = [:], geometries = 0, farFromReference = 0
        while geometries < 1200 {
            let m = 5 + Int(noise.uniform() * 4)
            let beacons = (0..<m).map { _ in SIMD3(20 * noise.uniform(), 12 * noise.uniform(), 3 * noise.uniform()) }
            let truth = SIMD3(20 * noise.uniform(), 12 * noise.uniform(), 3 * noise.uniform())
            let sigmas = (0..<m).map { _ in 0.01 + 0.04 * noise.uniform() }
            let ranges = beacons.enumerated().map { i, s -> Double in
                let d = truth - s
                return (d * d).sum().squareRoot() + noise.gaussian(sigmas[i])
            }
            let p = TDoAProblem(beacons: beacons, rangeDifferences: ranges.dropFirst().map { $0 - ranges[0] }, sigmas: sigmas, mode: .spatial)
            guard TDoASolver.geometryFailure(p, ratio: solver.degeneracyRatio) == nil else { continue }
            geometries += 1
            let (ref, refChi2) = ReferenceTDoALS.minimise(beacons, p.rangeDifferences, sigmas: sigmas, start: [truth.x, truth.y, truth.z])
            let bound = ChiSquare.quantile(0.999, dof: m - 4)
            switch solver.solve(p, workspace: ws) {
            case .success(let e):
                fixes += 1
                #expect(e.chiSquare.isFinite && e.position.allSatisfy { $0.isFinite })
                #expect(e.chiSquare <= max(bound, refChi2 * (1 + 1e-6) + 1e-9),
                        "M=\(m) fix \(e.position) χ² \(e.chiSquare) > bound \(bound); reference \(ref) χ² \(refChi2)")
                // Another minimum with an admissible χ² (a mirror through a near-plane of
                // beacons) is possible; it must be rare.
                if !zip(e.position, ref).allSatisfy({ abs($0 - $1) < 1e-3 }) { farFromReference += 1 }
            case .failure(let f):
                failures[f.code, default: 0] += 1
                #expect(f == .notConverged || f == .ambiguousRoots, "M=\(m): \(f)")
            }
        }
        let failed = failures.values.reduce(0, +)
        print("random 3-D [\(refinement)]: \(geometries) geometries, \(fixes) fixes, failures \(failures), \(farFromReference) away from the reference minimum")
        #expect(fixes + failed == geometries)
        #expect(Double(failed) <= 0.02 * Double(geometries), "failures \(failures) of \(geometries)")
        #expect(Double(farFromReference) <= 0.02 * Double(geometries), "\(farFromReference) fixes away from the reference minimum")
    }
}
