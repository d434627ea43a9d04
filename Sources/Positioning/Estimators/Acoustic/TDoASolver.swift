import Foundation

/// How the closed-form TDoA solution is refined.
public enum TDoARefinement: String, Sendable, CaseIterable {
    /// Chan–Ho closed form only.
    case none
    /// Inline Gauss–Newton with step halving (fast path, no GSL calls).
    case gaussNewton = "gauss-newton"
    /// Levenberg–Marquardt on GSL (`gsl_multifit_nlinear`, `trs_lm`) on the whitened residuals.
    case levenbergMarquardt = "lm"
}

/// A solved TDoA problem (unknown vector of length D = 2 or 3).
public struct TDoAEstimate: Sendable, Equatable {
    /// Final position (E, N[, U]), m.
    public var position: [Double]
    /// Chan–Ho stage 1 (weighted LS on [p, r₁], second pass) position, m.
    public var stage1: [Double]
    /// Chan–Ho stage 2 position (nil in the minimal case or if stage 2 was singular), m.
    public var stage2: [Double]?
    /// Covariance (JᵀWJ)⁻¹ at the solution, D×D row-major, m².
    public var covariance: [Double]
    /// Weighted residual cost χ² = eᵀWe at the solution (dimensionless).
    public var chiSquare: Double
    /// Range-difference residuals ρ − m(p̂), m (length M − 1).
    public var residuals: [Double]
    /// Refinement iterations.
    public var iterations: Int
    /// True if the minimal (quadratic) closed form was used.
    public var minimal: Bool
}

/// Chan–Ho two-stage closed-form TDoA solver with Gauss–Newton / GSL Levenberg–Marquardt
/// refinement (`docs/models.md` §4A).
///
/// Algorithm (unknowns p ∈ ℝᴰ, D = 2 with known phone height h or D = 3; beacon 1 = reference;
/// ranges r_i = ‖P − s_i‖ with P = (p, h) or p):
/// 1. Geometry check: the baseline matrix A = [s_i − s_1]_(i=2..M) (horizontal part in 2-D)
///    must have σ_min/σ_max ≥ `degeneracyRatio`, else `collinearGeometry` (2-D) or
///    `coplanarGeometry` (3-D). Too few beacons: M < D + 1 → `tooFewAnchors`.
/// 2. Stage 1 (M ≥ D + 2): with K_i = ‖s_i‖² (3-D) or ‖s_i,EN‖² + (h − z_i)² (2-D),
///    G_a = −[a_i, ρ_i1], h_i = ½(ρ_i1² − K_i + K_1), z_a = [p, r₁] solves
///    z_a = (G_aᵀΨ⁻¹G_a)⁻¹G_aᵀΨ⁻¹h with Ψ = Q_ρ, then again with Ψ = B Q_ρ B,
///    B = diag(r_2…r_M) from the first pass; cov(z_a) = (G_aᵀΨ⁻¹G_a)⁻¹.
/// 3. Stage 2: h' = [(z_a,k − s_1,k)², z_a,D+1² − (h − z_1)²] (the last term only in 2-D),
///    G' = [I_D; 1ᵀ], B' = diag(z_a,k − s_1,k, z_a,D+1), Ψ' = 4B'cov(z_a)B',
///    z' = (G'ᵀΨ'⁻¹G')⁻¹G'ᵀΨ'⁻¹h', p = s_1 + sign(z_a − s_1) ⊙ √|z'|.
/// 4. Minimal case (M = D + 1): p = p₀ + q·r₁ from the D linear equations, substituted
///    into r₁² = ‖P − s_1‖² → quadratic in r₁; roots with r₁ ≥ 0 and all r_i ≥ 0 are
///    admissible; two admissible roots are resolved by a prior or reported as `ambiguousRoots`.
/// 5. Refinement of (ρ − m(p))ᵀW(ρ − m(p)), W = Q_ρ⁻¹, m_i = r_i − r_1,
///    J_i = (P − s_i)ᵀ/r_i − (P − s_1)ᵀ/r_1 (first D components).
/// 6. Covariance (JᵀWJ)⁻¹ at the solution.
///
/// Units: metres throughout; σ in metres (c_s·σ_TOA).
/// Degenerate cases never yield NaN: any non-finite intermediate → `notConverged`.
public struct TDoASolver: Sendable {
    public var refinement: TDoARefinement
    /// Minimum σ_min/σ_max of the baseline matrix before the geometry counts as degenerate.
    public var degeneracyRatio: Double
    /// Maximum refinement iterations.
    public var maxIterations: Int

    public init(refinement: TDoARefinement = .levenbergMarquardt, degeneracyRatio: Double = 1e-2, maxIterations: Int = 20) {
        self.refinement = refinement; self.degeneracyRatio = degeneracyRatio; self.maxIterations = maxIterations
    }

    /// Solve. `prior` (length D) disambiguates the minimal case; `workspace` lets the GSL
    /// path reuse its allocations across solves (created on demand otherwise).
    public func solve(_ problem: TDoAProblem, prior: [Double]? = nil,
                      workspace: TDoALMWorkspace? = nil) -> Result<TDoAEstimate, EstimationFailure> {
        let d = problem.mode.dimension
        let m = problem.beacons.count
        guard m >= d + 1 else { return .failure(.tooFewAnchors(needed: d + 1, got: m)) }
        guard problem.rangeDifferences.count == m - 1, problem.sigmas.count == m else {
            return .failure(.inconsistentMeasurements("\(m) beacons but \(problem.rangeDifferences.count) range differences, \(problem.sigmas.count) sigmas"))
        }
        guard problem.rangeDifferences.allSatisfy({ $0.isFinite }),
              problem.sigmas.allSatisfy({ $0 > 0 && $0.isFinite }),
              problem.beacons.allSatisfy({ $0.x.isFinite && $0.y.isFinite && $0.z.isFinite }) else {
            return .failure(.inconsistentMeasurements("non-finite or non-positive input"))
        }
        if let g = Self.geometryFailure(problem, ratio: degeneracyRatio) { return .failure(g) }
        let s2 = problem.sigmas.map { $0 * $0 }
        let w = SmallSPD.differenceInverse(reference: s2[0], others: Array(s2.dropFirst()))

        var stage1: [Double], stage2: [Double]?, start: [Double], minimal = false
        if m == d + 1 {
            switch Self.minimalSolve(problem, prior: prior) {
            case .success(let p): stage1 = p; stage2 = nil; start = p; minimal = true
            case .failure(let f): return .failure(f)
            }
        } else {
            guard let ch = Self.chanHo(problem, weight: w) else { return .failure(.notConverged) }
            stage1 = ch.stage1; stage2 = ch.stage2; start = ch.stage2 ?? ch.stage1
        }
        var p = start, iterations = 0
        switch refinement {
        case .none: break
        case .gaussNewton:
            let gn = Self.gaussNewton(problem, weight: w, start: start, maxIterations: maxIterations)
            guard gn.converged else { return .failure(.notConverged) }
            (p, iterations) = (gn.position, gn.iterations)
        case .levenbergMarquardt:
            // GSL's status decides: a run that met no stopping test (iteration limit, no
            // acceptable step) is not a solution, whatever point it stopped at. Then the
            // Gauss–Newton result stands in when that one converged, else the solve fails.
            let ws = workspace ?? TDoALMWorkspace()
            guard let r = ws.refine(problem, start: start, maxIterations: maxIterations) else { return .failure(.notConverged) }
            if r.converged && r.position.allSatisfy({ $0.isFinite }) {
                (p, iterations) = (r.position, r.iterations)
            } else {
                let gn = Self.gaussNewton(problem, weight: w, start: start, maxIterations: maxIterations)
                guard gn.converged else { return .failure(.notConverged) }
                (p, iterations) = (gn.position, r.iterations + gn.iterations)
            }
        }
        guard p.allSatisfy({ $0.isFinite }) else { return .failure(.notConverged) }
        // A converged point whose χ² exceeds the 99.9 % bound of χ²(M−1−D) may be a local
        // minimum (in 3-D typically the mirror image through the beacons' best-fit plane, where
        // the height is weakly determined): Gauss–Newton from the other Chan–Ho stage, from the
        // mirror image and (after LM) from the common start; the lowest converged χ² wins.
        let dof = m - 1 - d
        if refinement != .none, dof > 0, Self.cost(problem, w, p) > Self.chi2Bound999(dof: dof) {
            var starts = [stage1]
            if let s2 = stage2 { starts.append(s2) }
            if refinement == .levenbergMarquardt { starts.append(start) }
            if problem.mode == .spatial, let mirror = Self.mirrored(p, through: problem.beacons) { starts.append(mirror) }
            var best = Self.cost(problem, w, p)
            for s in starts {
                let gn = Self.gaussNewton(problem, weight: w, start: s, maxIterations: maxIterations)
                let c = Self.cost(problem, w, gn.position)
                if gn.converged, c < best { best = c; p = gn.position; iterations += gn.iterations }
            }
        }
        let (res, jac) = Self.residualsAndJacobian(problem, p)
        // The baseline geometry passed the test above, so singular information at the solution
        // means the solve ended where every beacon looks alike (far away): not a geometry fault.
        guard let cov = SmallSPD.inverse(Self.information(jac, w, rows: m - 1, d: d), d) else {
            return .failure(.notConverged)
        }
        let chi2 = Self.cost(problem, w, p)
        guard cov.allSatisfy({ $0.isFinite }), chi2.isFinite else { return .failure(.notConverged) }
        return .success(TDoAEstimate(position: p, stage1: stage1, stage2: stage2, covariance: cov, chiSquare: chi2,
                                     residuals: res, iterations: iterations, minimal: minimal))
    }

    // MARK: - Geometry

    /// Singular-value test of the baseline matrix A = [s_i − s_1] (horizontal columns in 2-D).
    /// 2-D uses the closed-form eigenvalues of AᵀA; 3-D uses GSL's Jacobi SVD.
    public static func geometryFailure(_ problem: TDoAProblem, ratio: Double) -> EstimationFailure? {
        let s1 = problem.beacons[0]
        let rel = problem.beacons.dropFirst().map { $0 - s1 }
        switch problem.mode {
        case .planar:
            var a = 0.0, b = 0.0, c = 0.0
            for v in rel { a += v.x * v.x; b += v.x * v.y; c += v.y * v.y }
            let mean = 0.5 * (a + c), dev = (0.25 * (a - c) * (a - c) + b * b).squareRoot()
            let l1 = mean + dev, l2 = max(0, mean - dev)
            guard l1 > 0, (l2 / l1).squareRoot() >= ratio else { return .collinearGeometry }
            return nil
        case .spatial:
            let mat = Matrix(rows: rel.count, cols: 3, data: rel.flatMap { [$0.x, $0.y, $0.z] })
            let sv = mat.singularValues
            guard let mx = sv.max(), mx > 0, let mn = sv.min(), mn / mx >= ratio, sv.count == 3 else {
                // Rank ≤ 1 in 3-D means the beacons are collinear, which is also coplanar.
                return .coplanarGeometry
            }
            return nil
        }
    }

    // MARK: - Model

    /// Residuals e = ρ − m(p) (length M−1) and Jacobian J = ∂m/∂p ((M−1)×D row-major).
    @inline(__always)
    static func residualsAndJacobian(_ problem: TDoAProblem, _ p: [Double]) -> ([Double], [Double]) {
        let d = problem.mode.dimension, n = problem.beacons.count - 1
        let pt = problem.point(p)
        let u1 = pt - problem.beacons[0]
        let r1 = max((u1 * u1).sum().squareRoot(), 1e-12)
        var e = [Double](repeating: 0, count: n)
        var j = [Double](repeating: 0, count: n * d)
        for i in 0..<n {
            let ui = pt - problem.beacons[i + 1]
            let ri = max((ui * ui).sum().squareRoot(), 1e-12)
            e[i] = problem.rangeDifferences[i] - (ri - r1)
            for k in 0..<d { j[i * d + k] = ui[k] / ri - u1[k] / r1 }
        }
        return (e, j)
    }

    /// JᵀWJ (D×D).
    @inline(__always)
    static func information(_ j: [Double], _ w: [Double], rows n: Int, d: Int) -> [Double] {
        var wj = [Double](repeating: 0, count: n * d)   // W J
        for i in 0..<n { for k in 0..<n { let wik = w[i * n + k]; for c in 0..<d { wj[i * d + c] += wik * j[k * d + c] } } }
        var f = [Double](repeating: 0, count: d * d)
        for a in 0..<d { for b in 0..<d { var s = 0.0; for i in 0..<n { s += j[i * d + a] * wj[i * d + b] }; f[a * d + b] = s } }
        return f
    }

    // MARK: - Chan–Ho

    static func chanHo(_ problem: TDoAProblem, weight w: [Double]) -> (stage1: [Double], stage2: [Double]?)? {
        let d = problem.mode.dimension, n = problem.beacons.count - 1, q = d + 1
        let s1 = problem.beacons[0]
        var hz = 0.0
        if case .planar(let h) = problem.mode { hz = h }
        func k(_ s: SIMD3<Double>) -> Double {
            d == 2 ? s.x * s.x + s.y * s.y + (hz - s.z) * (hz - s.z) : (s * s).sum()
        }
        let k1 = k(s1)
        var g = [Double](repeating: 0, count: n * q), h = [Double](repeating: 0, count: n)
        for i in 0..<n {
            let si = problem.beacons[i + 1], rho = problem.rangeDifferences[i]
            let a = si - s1
            for c in 0..<d { g[i * q + c] = -a[c] }
            g[i * q + d] = -rho
            h[i] = 0.5 * (rho * rho - k(si) + k1)
        }
        // Weighted LS with weight matrix Wt (n×n): z = (GᵀWtG)⁻¹GᵀWt h.
        func wls(_ wt: [Double]) -> (z: [Double], cov: [Double])? {
            var wg = [Double](repeating: 0, count: n * q), wh = [Double](repeating: 0, count: n)
            for i in 0..<n {
                for kk in 0..<n {
                    let x = wt[i * n + kk]
                    if x == 0 { continue }
                    for c in 0..<q { wg[i * q + c] += x * g[kk * q + c] }
                    wh[i] += x * h[kk]
                }
            }
            var a = [Double](repeating: 0, count: q * q), b = [Double](repeating: 0, count: q)
            for r in 0..<q {
                for c in 0..<q { var s = 0.0; for i in 0..<n { s += g[i * q + r] * wg[i * q + c] }; a[r * q + c] = s }
                var s = 0.0; for i in 0..<n { s += g[i * q + r] * wh[i] }; b[r] = s
            }
            guard let cov = SmallSPD.inverse(a, q) else { return nil }
            var z = [Double](repeating: 0, count: q)
            for r in 0..<q { var s = 0.0; for c in 0..<q { s += cov[r * q + c] * b[c] }; z[r] = s }
            return (z, cov)
        }
        // Pass 1: Ψ = Q_ρ.
        guard let first = wls(w) else { return nil }
        // Pass 2: Ψ = B Q B, B = diag(r_i) from pass 1 → Ψ⁻¹ = B⁻¹ W B⁻¹.
        let p1 = problem.point(Array(first.z[0..<d]))
        var binv = [Double](repeating: 0, count: n)
        for i in 0..<n { binv[i] = 1 / max(distance(p1, problem.beacons[i + 1]), 1e-3) }
        var w2 = w
        for i in 0..<n { for kk in 0..<n { w2[i * n + kk] *= binv[i] * binv[kk] } }
        let second = wls(w2) ?? first
        let za = second.z
        guard za.allSatisfy({ $0.isFinite }) else { return nil }
        let stage1 = Array(za[0..<d])

        // Stage 2.
        var hp = [Double](repeating: 0, count: q), bp = [Double](repeating: 0, count: q)
        for c in 0..<d { let v = za[c] - s1[c]; hp[c] = v * v; bp[c] = v }
        hp[d] = za[d] * za[d] - (d == 2 ? (hz - s1.z) * (hz - s1.z) : 0)
        bp[d] = za[d]
        // Ψ' = 4 B' cov B'
        var psi = [Double](repeating: 0, count: q * q)
        for r in 0..<q { for c in 0..<q { psi[r * q + c] = 4 * bp[r] * second.cov[r * q + c] * bp[c] } }
        guard let psiInv = SmallSPD.inverse(psi, q) else { return (stage1, nil) }
        // G' = [I_D; 1ᵀ]: (G'ᵀΨ'⁻¹G')_{ab} = Σ_{r,c} G'_{ra} Ψ'⁻¹_{rc} G'_{cb}
        func gp(_ r: Int, _ a: Int) -> Double { r == d ? 1 : (r == a ? 1 : 0) }
        var a2 = [Double](repeating: 0, count: d * d), b2 = [Double](repeating: 0, count: d)
        for a in 0..<d {
            for b in 0..<d {
                var s = 0.0
                for r in 0..<q { let ga = gp(r, a); if ga == 0 { continue }; for c in 0..<q { s += ga * psiInv[r * q + c] * gp(c, b) } }
                a2[a * d + b] = s
            }
            var s = 0.0
            for r in 0..<q { let ga = gp(r, a); if ga == 0 { continue }; for c in 0..<q { s += ga * psiInv[r * q + c] * hp[c] } }
            b2[a] = s
        }
        guard let zp = SmallSPD.solve(a2, b2, d) else { return (stage1, nil) }
        var stage2 = [Double](repeating: 0, count: d)
        for c in 0..<d {
            let sgn: Double = za[c] - s1[c] >= 0 ? 1 : -1
            stage2[c] = s1[c] + sgn * abs(zp[c]).squareRoot()
        }
        guard stage2.allSatisfy({ $0.isFinite }) else { return (stage1, nil) }
        return (stage1, stage2)
    }

    // MARK: - Minimal case

    /// M = D + 1: p = p₀ + q r₁, substitute into r₁² = ‖P − s_1‖² (quadratic in r₁).
    static func minimalSolve(_ problem: TDoAProblem, prior: [Double]?) -> Result<[Double], EstimationFailure> {
        let d = problem.mode.dimension, n = d
        let s1 = problem.beacons[0]
        var hz = 0.0
        if case .planar(let h) = problem.mode { hz = h }
        func k(_ s: SIMD3<Double>) -> Double {
            d == 2 ? s.x * s.x + s.y * s.y + (hz - s.z) * (hz - s.z) : (s * s).sum()
        }
        // a_iᵀ p = −h_i − ρ_i r₁, h_i = ½(ρ_i² − K_i + K_1).
        var a = [Double](repeating: 0, count: n * d), bh = [Double](repeating: 0, count: n), br = [Double](repeating: 0, count: n)
        for i in 0..<n {
            let si = problem.beacons[i + 1], rho = problem.rangeDifferences[i]
            for c in 0..<d { a[i * d + c] = si[c] - s1[c] }
            bh[i] = -0.5 * (rho * rho - k(si) + k(s1))
            br[i] = -rho
        }
        // Solve the square system through the normal equations (AᵀA is SPD when A is full rank).
        var ata = [Double](repeating: 0, count: d * d), atbh = [Double](repeating: 0, count: d), atbr = [Double](repeating: 0, count: d)
        for r in 0..<d {
            for c in 0..<d { var s = 0.0; for i in 0..<n { s += a[i * d + r] * a[i * d + c] }; ata[r * d + c] = s }
            var s = 0.0, t = 0.0
            for i in 0..<n { s += a[i * d + r] * bh[i]; t += a[i * d + r] * br[i] }
            atbh[r] = s; atbr[r] = t
        }
        guard let p0 = SmallSPD.solve(ata, atbh, d), let q = SmallSPD.solve(ata, atbr, d) else {
            return .failure(d == 2 ? .collinearGeometry : .coplanarGeometry)
        }
        // (qᵀq − 1) r₁² + 2 qᵀw r₁ + (wᵀw + Δz²) = 0, w = p₀ − s_1.
        var qa = -1.0, qb = 0.0, qc = d == 2 ? (hz - s1.z) * (hz - s1.z) : 0
        for c in 0..<d { let wc = p0[c] - s1[c]; qa += q[c] * q[c]; qb += 2 * q[c] * wc; qc += wc * wc }
        var roots: [Double] = []
        if abs(qa) < 1e-12 * max(1, abs(qb)) {
            if abs(qb) > 0 { roots = [-qc / qb] }
        } else {
            let disc = qb * qb - 4 * qa * qc
            let scale = max(qb * qb, abs(4 * qa * qc), 1e-300)
            if disc >= -1e-9 * scale {
                let sq = max(disc, 0).squareRoot()
                // Numerically stable pair.
                let t = -0.5 * (qb + (qb >= 0 ? sq : -sq))
                roots = t != 0 ? [t / qa, qc / t] : [0]
            }
        }
        let tol = 1e-6
        var candidates: [[Double]] = []
        for r1 in roots where r1.isFinite && r1 >= -tol {
            guard problem.rangeDifferences.allSatisfy({ r1 + $0 >= -tol }) else { continue }
            let p = (0..<d).map { p0[$0] + q[$0] * r1 }
            // Drop duplicate roots.
            if let c = candidates.first, zip(c, p).allSatisfy({ abs($0 - $1) < 1e-6 }) { continue }
            candidates.append(p)
        }
        switch candidates.count {
        case 0: return .failure(.inconsistentMeasurements("no admissible root of the minimal TDoA quadratic"))
        case 1: return .success(candidates[0])
        default:
            guard let prior, prior.count == d else { return .failure(.ambiguousRoots) }
            let dist = candidates.map { c in zip(c, prior).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }.squareRoot() }
            // The prior must clearly prefer one root (closer one at most half as far).
            let (i0, i1) = dist[0] <= dist[1] ? (0, 1) : (1, 0)
            guard dist[i0] < 0.5 * dist[i1] else { return .failure(.ambiguousRoots) }
            return .success(candidates[i0])
        }
    }

    // MARK: - Refinement (fast path)

    /// 99.9 % quantiles of χ²(k), k = 1…64 (GSL), looked up per solve.
    static let chi2Table: [Double] = (1...64).map { ChiSquare.quantile(0.999, dof: $0) }
    static func chi2Bound999(dof: Int) -> Double { dof <= 64 ? chi2Table[dof - 1] : ChiSquare.quantile(0.999, dof: dof) }

    /// p reflected through the least-squares plane of the beacons (centroid c, normal n = the
    /// eigenvector of the smallest eigenvalue of their scatter matrix): p − 2((p − c)·n)n.
    static func mirrored(_ p: [Double], through beacons: [SIMD3<Double>]) -> [Double]? {
        let c = beacons.reduce(SIMD3<Double>()) { $0 + $1 } / Double(beacons.count)
        var s = [Double](repeating: 0, count: 9)
        for b in beacons {
            let v = b - c
            for i in 0..<3 { for j in 0..<3 { s[i * 3 + j] += v[i] * v[j] } }
        }
        guard let (_, vec) = Matrix(rows: 3, cols: 3, data: s).symmetricEigen() else { return nil }
        let n = SIMD3(vec.data[2], vec.data[5], vec.data[8])
        let q = SIMD3(p[0], p[1], p[2])
        let r = q - 2 * ((q - c) * n).sum() * n
        return [r.x, r.y, r.z]
    }

    /// χ² = (ρ − m(p))ᵀW(ρ − m(p)) at p.
    static func cost(_ problem: TDoAProblem, _ w: [Double], _ p: [Double]) -> Double {
        let n = problem.beacons.count - 1
        let (e, _) = residualsAndJacobian(problem, p)
        var c = 0.0
        for i in 0..<n { for j in 0..<n { c += e[i] * w[i * n + j] * e[j] } }
        return c
    }

    /// Gauss–Newton on (ρ − m(p))ᵀW(ρ − m(p)) with step halving when the cost rises;
    /// converged when the undamped step is below 1e-6 m (a stationary point; the step is
    /// then taken or, at the optimum in rounding, not). Not converged: iteration limit,
    /// singular JᵀWJ, or a cost no halving of a large step lowers.
    static func gaussNewton(_ problem: TDoAProblem, weight w: [Double], start: [Double], maxIterations: Int)
        -> (position: [Double], iterations: Int, converged: Bool) {
        let d = problem.mode.dimension, n = problem.beacons.count - 1
        func cost(_ e: [Double]) -> Double {
            var c = 0.0
            for i in 0..<n { var s = 0.0; for j in 0..<n { s += w[i * n + j] * e[j] }; c += e[i] * s }
            return c
        }
        var p = start
        var (e, j) = residualsAndJacobian(problem, p)
        var c0 = cost(e)
        var it = 0
        var converged = false
        while it < maxIterations {
            it += 1
            let f = information(j, w, rows: n, d: d)
            // g = Jᵀ W e
            var g = [Double](repeating: 0, count: d)
            for i in 0..<n {
                var we = 0.0
                for kk in 0..<n { we += w[i * n + kk] * e[kk] }
                for c in 0..<d { g[c] += j[i * d + c] * we }
            }
            guard let step = SmallSPD.solve(f, g, d) else { break }
            var alpha = 1.0, accepted = false
            for _ in 0..<8 {
                let trial = (0..<d).map { p[$0] + alpha * step[$0] }
                let (e2, j2) = residualsAndJacobian(problem, trial)
                let c2 = cost(e2)
                if c2 <= c0 || !c0.isFinite {
                    p = trial; e = e2; j = j2; c0 = c2; accepted = true
                    break
                }
                alpha *= 0.5
            }
            // The undamped step measures stationarity; a damped step that shrinks to nothing
            // while the full step stays large is a stall, not convergence.
            let full = (step.reduce(0) { $0 + $1 * $1 }).squareRoot()
            if full < 1e-6 { converged = true; break }
            if !accepted || full * alpha < 1e-6 { break }
        }
        return (p, it, converged && p.allSatisfy { $0.isFinite })
    }

    // MARK: - Bounds

    /// Cramér–Rao bound (GᵀQ_ρ⁻¹G)⁻¹ (D×D, m²) at the point p for the problem's geometry
    /// and σ (`docs/models.md` §4A). nil if the information is singular.
    public static func crlb(_ problem: TDoAProblem, at p: [Double]) -> [Double]? {
        let d = problem.mode.dimension, n = problem.beacons.count - 1
        let s2 = problem.sigmas.map { $0 * $0 }
        let w = SmallSPD.differenceInverse(reference: s2[0], others: Array(s2.dropFirst()))
        let (_, j) = residualsAndJacobian(problem, p)
        return SmallSPD.inverse(information(j, w, rows: n, d: d), d)
    }

    /// GDOP = √tr((Gᵀ(I + 11ᵀ)⁻¹G)⁻¹) (dimensionless) at p. nil if singular.
    public static func gdop(_ problem: TDoAProblem, at p: [Double]) -> Double? {
        let d = problem.mode.dimension, n = problem.beacons.count - 1
        let w = SmallSPD.differenceInverse(reference: 1, others: [Double](repeating: 1, count: n))
        let (_, j) = residualsAndJacobian(problem, p)
        guard let c = SmallSPD.inverse(information(j, w, rows: n, d: d), d) else { return nil }
        let tr = (0..<d).reduce(0) { $0 + c[$1 * d + $1] }
        return tr >= 0 && tr.isFinite ? tr.squareRoot() : nil
    }
}
