import CGSL
import Foundation

/// Joint refinement of several phones' positions from their own (coarse) fixes and
/// pairwise acoustic ranges (Liu et al., TMC 2014; `docs/models.md` §4B, continuous
/// MAP form with the radio map replaced by each phone's fix).
///
/// Cost (unknowns p_1…p_N ∈ ℝ², horizontal ENU m):
///
///     Σ_i (p_i − a_i)ᵀ Σ_i⁻¹ (p_i − a_i) + Σ_(i,j) (‖p_i − p_j‖ − D_ij)² / σ_ij²
///
/// a_i, Σ_i: phone i's anchor fix (e.g. `wcl`) and covariance; D_ij, σ_ij: range and σ.
/// Minimised by weighted nonlinear least squares on GSL (Levenberg–Marquardt) with
/// whitened residuals L_i⁻¹(p_i − a_i) and (‖p_i − p_j‖ − D_ij)/σ_ij; covariance
/// (JᵀWJ)⁻¹, from which each phone's 2×2 block is reported.
///
/// Initialisation (the range term is non-convex: flips and folds): when the range graph
/// is complete and N ≥ 3, classical MDS of D gives the relative layout up to a rigid
/// motion and reflection; the weighted Procrustes fit to the anchors (rotation, optional
/// reflection, translation; closed form in 2-D) places it. Otherwise the anchors start.
///
/// **Correlated anchors.** Phones a few metres apart see the same shadowing field, so their
/// RSS fixes err alike (measured on crowd-peers, `rss` anchors: error correlation 0.73 at
/// 0–2 m, 0.30 at 2–4 m, 0.16 at 4–6 m). The anchor errors e = a − p are modelled jointly:
/// Cov(e_i, e_j) = ρ_ij L_i L_jᵀ (L_i the Cholesky factor of Σ_i), ρ_ij = (1 − ν)·exp(−d_ij/d_c)
/// for i ≠ j, d_ij the phones' distance in the starting layout (which the ranges shape),
/// d_c = `anchorCorrelationDistance`, ν = `anchorIndependentFraction` (the per-scan receiver
/// jitter every phone has on its own: ≈ 2² / (6² + 2²) = 0.1 for 2 dB jitter on 6 dB
/// shadowing, estimators.md §2.1). The joint matrix Λ(R ⊗ I₂)Λᵀ is positive definite (the
/// exponential kernel is, and ν > 0 keeps coincident phones apart), and the anchor residuals
/// are whitened by its Cholesky factor G: G⁻¹(p − a). d_c = 0 gives independent anchors.
///
/// Assumptions: ranges are treated as horizontal (phones at similar heights); the
/// absolute position is only as good as the mean of the anchors (ranges fix the shape,
/// not the translation): with N independent anchors of σ the translation error is ≈ σ/√N,
/// with fully correlated ones ≈ σ.
/// Degenerate: no anchors → `tooFewAnchors`; phones not linked by any range keep their
/// anchor (the solve is still well-posed because every phone has a prior).
public struct CooperativePositioning: Sendable {
    public struct Node: Sendable, Equatable {
        public var id: String
        public var anchor: SIMD2<Double>
        public var covariance: Covariance2
        public init(id: String, anchor: SIMD2<Double>, covariance: Covariance2) {
            self.id = id; self.anchor = anchor; self.covariance = covariance
        }
    }
    public struct Edge: Sendable, Equatable {
        public var a: Int, b: Int
        public var range: Double, sigma: Double
        public init(a: Int, b: Int, range: Double, sigma: Double) { self.a = a; self.b = b; self.range = range; self.sigma = sigma }
    }
    public struct Solution: Sendable {
        public var positions: [SIMD2<Double>]
        public var covariances: [Covariance2]
        /// Whitened cost at the solution.
        public var chiSquare: Double
        /// Normalised range residuals (‖p_i − p_j‖ − D_ij)/σ_ij per edge.
        public var rangeResiduals: [Double]
        public var usedMDS: Bool
    }

    public var useMDSInitialisation: Bool
    /// The `peer` stage's d_c, m: the shadow-fading correlation distance of 3GPP TR 38.901's
    /// indoor-office NLOS channel (Table 7.5-6: 6 m; 10 m LOS) — a standard's value, not one
    /// fitted to a bundled trace (crowd-peers simulates 3 m). Sensitivity in docs/acoustic-camloc.md.
    public static let defaultAnchorCorrelationDistance = 6.0
    /// d_c of the anchor-error correlation exp(−d/d_c), m (0: independent anchors).
    public var anchorCorrelationDistance: Double
    /// ν: the share of each anchor's error variance that is its own (not shared with nearby phones).
    public var anchorIndependentFraction: Double
    public init(useMDSInitialisation: Bool = true, anchorCorrelationDistance: Double = 0, anchorIndependentFraction: Double = 0.1) {
        self.useMDSInitialisation = useMDSInitialisation
        self.anchorCorrelationDistance = anchorCorrelationDistance
        self.anchorIndependentFraction = anchorIndependentFraction
    }

    public func solve(nodes: [Node], edges: [Edge]) -> Result<Solution, EstimationFailure> {
        let n = nodes.count
        guard n >= 1 else { return .failure(.tooFewAnchors(needed: 1, got: 0)) }
        for nd in nodes {
            let c = nd.covariance
            guard c.ee > 0, c.determinant > 0, c.isValid else {
                return .failure(.inconsistentMeasurements("anchor covariance of \(nd.id) is not positive definite"))
            }
        }
        let valid = edges.filter { $0.a != $0.b && $0.a >= 0 && $0.b >= 0 && $0.a < n && $0.b < n
            && $0.range.isFinite && $0.range >= 0 && $0.sigma > 0 && $0.sigma.isFinite }
        var start = nodes.flatMap { [$0.anchor.x, $0.anchor.y] }
        var usedMDS = false
        if useMDSInitialisation, n >= 3, let layout = mdsLayout(n: n, edges: valid) {
            start = procrustes(layout, nodes: nodes).flatMap { [$0.x, $0.y] }
            usedMDS = true
        }
        // Break exact coincidences (the range Jacobian is undefined at p_i = p_j).
        for e in valid where start[2 * e.a] == start[2 * e.b] && start[2 * e.a + 1] == start[2 * e.b + 1] {
            start[2 * e.b] += 1e-3 * max(e.range, 1)
        }
        let layout = (0..<n).map { SIMD2(start[2 * $0], start[2 * $0 + 1]) }
        guard let whiten = anchorWhitening(nodes: nodes, layout: layout) else {
            return .failure(.inconsistentMeasurements("joint anchor covariance is not positive definite"))
        }
        let rows = 2 * n + valid.count, p = 2 * n
        let model: WeightedLeastSquares.Model = { x in
            var f = [Double](repeating: 0, count: rows)
            var j = [Double](repeating: 0, count: rows * p)
            // Anchor rows: G⁻¹(x − a), lower triangular (block-diagonal for independent anchors).
            for r in 0..<p {
                var acc = 0.0
                for c in 0...r where whiten[r, c] != 0 {
                    let a = c % 2 == 0 ? nodes[c / 2].anchor.x : nodes[c / 2].anchor.y
                    acc += whiten[r, c] * (x[c] - a)
                    j[r * p + c] = whiten[r, c]
                }
                f[r] = acc
            }
            for (k, e) in valid.enumerated() {
                let r = 2 * n + k
                let dx = x[2 * e.a] - x[2 * e.b], dy = x[2 * e.a + 1] - x[2 * e.b + 1]
                let d = max((dx * dx + dy * dy).squareRoot(), 1e-9)
                f[r] = (d - e.range) / e.sigma
                let ux = dx / d / e.sigma, uy = dy / d / e.sigma
                j[r * p + 2 * e.a] = ux; j[r * p + 2 * e.a + 1] = uy
                j[r * p + 2 * e.b] = -ux; j[r * p + 2 * e.b + 1] = -uy
            }
            return (f, j)
        }
        guard let sol = WeightedLeastSquares.solve(residuals: rows, parameters: p, start: start, model: model),
              let cov = sol.covariance else { return .failure(.notConverged) }
        let positions = (0..<n).map { SIMD2(sol.x[2 * $0], sol.x[2 * $0 + 1]) }
        let covs = (0..<n).map { i -> Covariance2 in
            Covariance2(ee: cov[(2 * i) * p + 2 * i], en: 0.5 * (cov[(2 * i) * p + 2 * i + 1] + cov[(2 * i + 1) * p + 2 * i]),
                        nn: cov[(2 * i + 1) * p + 2 * i + 1])
        }
        let res = valid.map { e -> Double in
            let d = positions[e.a] - positions[e.b]
            return ((d * d).sum().squareRoot() - e.range) / e.sigma
        }
        return .success(Solution(positions: positions, covariances: covs, chiSquare: sol.chiSquare,
                                 rangeResiduals: res, usedMDS: usedMDS))
    }

    /// G⁻¹ for the joint anchor covariance C = G Gᵀ (lower triangular, 2n × 2n; see the type's
    /// doc for C). nil if C is not positive definite.
    func anchorWhitening(nodes: [Node], layout: [SIMD2<Double>]) -> Matrix? {
        let n = nodes.count
        let chol = nodes.map { c -> Matrix in
            let l00 = c.covariance.ee.squareRoot(), l10 = c.covariance.en / l00
            return Matrix(rows: 2, cols: 2, data: [l00, 0, l10, (c.covariance.nn - l10 * l10).squareRoot()])
        }
        var cov = Matrix(rows: 2 * n, cols: 2 * n)
        for i in 0..<n {
            for j in 0...i {
                let rho: Double
                if i == j { rho = 1 } else if anchorCorrelationDistance > 0 {
                    let d = layout[i] - layout[j]
                    rho = (1 - anchorIndependentFraction) * exp(-(d * d).sum().squareRoot() / anchorCorrelationDistance)
                } else { rho = 0 }
                guard rho != 0 else { continue }
                let block = rho * (chol[i] * chol[j].transposed)
                for a in 0..<2 { for b in 0..<2 {
                    cov[2 * i + a, 2 * j + b] = block[a, b]; cov[2 * j + b, 2 * i + a] = block[a, b]
                } }
            }
        }
        guard let g = cov.cholesky, let gi = g.inverse else { return nil }
        var w = gi
        for r in 0..<(2 * n) { for c in (r + 1)..<(2 * n) { w[r, c] = 0 } }   // exact zeros above the diagonal
        return w
    }

    /// Classical MDS: B = −½ J D⁽²⁾ J, X = V₂ Λ₂^½ (GSL symmetric eigensolver). Needs every
    /// pair ranged (averaging duplicates); nil otherwise or if the top eigenvalues are not positive.
    func mdsLayout(n: Int, edges: [Edge]) -> [SIMD2<Double>]? {
        var d2 = [Double](repeating: -1, count: n * n), cnt = [Double](repeating: 0, count: n * n)
        for i in 0..<n { d2[i * n + i] = 0 }
        for e in edges {
            for (i, j) in [(e.a, e.b), (e.b, e.a)] {
                if cnt[i * n + j] == 0 { d2[i * n + j] = 0 }
                d2[i * n + j] += e.range * e.range; cnt[i * n + j] += 1
            }
        }
        for i in 0..<n { for j in 0..<n where i != j { guard cnt[i * n + j] > 0 else { return nil }; d2[i * n + j] /= cnt[i * n + j] } }
        // Double centring.
        var rowMean = [Double](repeating: 0, count: n), total = 0.0
        for i in 0..<n { for j in 0..<n { rowMean[i] += d2[i * n + j] / Double(n) }; total += rowMean[i] / Double(n) }
        var b = Matrix(rows: n, cols: n)
        for i in 0..<n { for j in 0..<n { b[i, j] = -0.5 * (d2[i * n + j] - rowMean[i] - rowMean[j] + total) } }
        guard let (values, vectors) = b.symmetricEigen(), values.count >= 2, values[0] > 0, values[1] > 0 else { return nil }
        let s0 = values[0].squareRoot(), s1 = values[1].squareRoot()
        return (0..<n).map { SIMD2(vectors[$0, 0] * s0, vectors[$0, 1] * s1) }
    }

    /// Weighted 2-D Procrustes: rotation θ (and reflection if it fits better) and translation
    /// minimising Σ w_i ‖R x_i + t − a_i‖², w_i = 2/tr Σ_i. Closed form:
    /// θ = atan2(Σ w (x̃ × ã), Σ w (x̃ · ã)) on centred coordinates.
    func procrustes(_ x: [SIMD2<Double>], nodes: [Node]) -> [SIMD2<Double>] {
        let w = nodes.map { 2 / max($0.covariance.trace, 1e-12) }
        let wsum = w.reduce(0, +)
        var xc = SIMD2<Double>(0, 0), ac = SIMD2<Double>(0, 0)
        for i in x.indices { xc += w[i] * x[i]; ac += w[i] * nodes[i].anchor }
        xc /= wsum; ac /= wsum
        func fit(_ pts: [SIMD2<Double>]) -> ([SIMD2<Double>], Double) {
            var sdot = 0.0, scross = 0.0
            for i in pts.indices {
                let u = pts[i] - xc, v = nodes[i].anchor - ac
                sdot += w[i] * (u.x * v.x + u.y * v.y); scross += w[i] * (u.x * v.y - u.y * v.x)
            }
            let th = atan2(scross, sdot), c = cos(th), s = sin(th)
            let out = pts.map { p -> SIMD2<Double> in let u = p - xc; return SIMD2(c * u.x - s * u.y, s * u.x + c * u.y) + ac }
            var cost = 0.0
            for i in out.indices { let e = out[i] - nodes[i].anchor; cost += w[i] * (e * e).sum() }
            return (out, cost)
        }
        let (direct, c1) = fit(x)
        let mirrored = x.map { SIMD2($0.x, 2 * xc.y - $0.y) }
        let (flipped, c2) = fit(mirrored)
        return c2 < c1 ? flipped : direct
    }
}

extension Matrix {
    /// Eigenvalues (descending) and eigenvectors (columns) of a symmetric matrix by GSL
    /// (`gsl_eigen_symmv`). nil on failure.
    func symmetricEigen() -> ([Double], Matrix)? {
        precondition(rows == cols)
        guard isFinite else { return nil }
        return GSL.withMatrix(self.symmetrized) { m -> ([Double], Matrix)? in
            let n = rows
            guard let eval = gsl_vector_alloc(n), let evec = gsl_matrix_alloc(n, n), let ws = gsl_eigen_symmv_alloc(n) else { return nil }
            defer { gsl_vector_free(eval); gsl_matrix_free(evec); gsl_eigen_symmv_free(ws) }
            guard gsl_eigen_symmv(m, eval, evec, ws) == Int32(GSL_SUCCESS) else { return nil }
            _ = gsl_eigen_symmv_sort(eval, evec, GSL_EIGEN_SORT_VAL_DESC)
            return ((0..<n).map { gsl_vector_get(eval, $0) }, GSL.matrix(evec, rows: n, cols: n))
        }
    }
}
