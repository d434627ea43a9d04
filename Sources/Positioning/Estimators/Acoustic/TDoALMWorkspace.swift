import CGSL

/// Levenberg–Marquardt refinement of a TDoA solution on GNU GSL
/// (`gsl_multifit_nlinear`, trust region with the `lm` subproblem), reusable across solves.
///
/// GSL minimises ½‖f‖² with the **whitened** residual f(p) = L⁻¹(m(p) − ρ), where
/// Q_ρ = L Lᵀ (Cholesky) and m_i(p) = r_i − r_1; the Jacobian is L⁻¹·∂m/∂p, so
/// ½‖f‖² = ½(ρ − m)ᵀQ_ρ⁻¹(ρ − m) (`docs/models.md` §4A). Stopping: xtol 1e-10
/// (relative step), gtol 1e-12, at most `maxIterations` iterations.
///
/// Allocations (workspace, vectors, the `fdf` struct GSL keeps a pointer to) are cached
/// per (number of differences, dimension). Not thread-safe: one per stage/thread.
/// Callbacks are non-capturing closures; state travels through `params` via `Unmanaged`
/// (`docs/engineering.md` §1).
public final class TDoALMWorkspace {
    /// State read by the C callbacks.
    final class Context {
        var problem: TDoAProblem
        /// L⁻¹ (n×n row-major, lower triangular) with Q_ρ = L Lᵀ.
        var linv: [Double]
        var n: Int, d: Int
        init(problem: TDoAProblem, linv: [Double], n: Int, d: Int) {
            self.problem = problem; self.linv = linv; self.n = n; self.d = d
        }
    }

    private struct Slot {
        var workspace: UnsafeMutablePointer<gsl_multifit_nlinear_workspace>
        var x: UnsafeMutablePointer<gsl_vector>
        var fdf: UnsafeMutablePointer<gsl_multifit_nlinear_fdf>
    }
    private var slots: [Int: Slot] = [:]
    private let context = Context(problem: TDoAProblem(beacons: [], rangeDifferences: [], sigmas: [], mode: .spatial),
                                  linv: [], n: 0, d: 0)

    public init() { GSL.disableAbort() }

    deinit {
        for s in slots.values {
            gsl_multifit_nlinear_free(s.workspace)
            gsl_vector_free(s.x)
            s.fdf.deallocate()
        }
    }

    private func slot(n: Int, d: Int) -> Slot? {
        let key = n * 16 + d
        if let s = slots[key] { return s }
        var params = gsl_multifit_nlinear_default_parameters()
        params.trs = cgsl_multifit_nlinear_trs_lm()
        guard let w = gsl_multifit_nlinear_alloc(cgsl_multifit_nlinear_trust(), &params, n, d),
              let x = gsl_vector_alloc(d) else { return nil }
        let fdf = UnsafeMutablePointer<gsl_multifit_nlinear_fdf>.allocate(capacity: 1)
        fdf.initialize(to: gsl_multifit_nlinear_fdf())
        fdf.pointee.f = { x, params, f in
            let c = Unmanaged<Context>.fromOpaque(params!).takeUnretainedValue()
            let p = (0..<c.d).map { gsl_vector_get(x, $0) }
            let (e, _) = TDoASolver.residualsAndJacobian(c.problem, p)
            // f = L⁻¹(m − ρ) = −L⁻¹e
            for i in 0..<c.n {
                var s = 0.0
                for k in 0...i { s -= c.linv[i * c.n + k] * e[k] }
                gsl_vector_set(f, i, s)
            }
            return Int32(GSL_SUCCESS)
        }
        fdf.pointee.df = { x, params, jac in
            let c = Unmanaged<Context>.fromOpaque(params!).takeUnretainedValue()
            let p = (0..<c.d).map { gsl_vector_get(x, $0) }
            let (_, j) = TDoASolver.residualsAndJacobian(c.problem, p)
            for i in 0..<c.n {
                for col in 0..<c.d {
                    var s = 0.0
                    for k in 0...i { s += c.linv[i * c.n + k] * j[k * c.d + col] }
                    gsl_matrix_set(jac, i, col, s)
                }
            }
            return Int32(GSL_SUCCESS)
        }
        fdf.pointee.fvv = nil
        fdf.pointee.n = n
        fdf.pointee.p = d
        let s = Slot(workspace: w, x: x, fdf: fdf)
        slots[key] = s
        return s
    }

    /// Outcome of one refinement.
    public struct Outcome: Sendable, Equatable {
        /// Best point GSL holds when the driver returned, m.
        public var position: [Double]
        public var iterations: Int
        /// The driver's status: `GSL_SUCCESS` when a stopping test (xtol or gtol) was met;
        /// `GSL_EMAXITER` (iteration limit) or `GSL_ENOPROG` (no acceptable step) otherwise.
        public var status: Int32
        /// Which test stopped it (GSL's `info`: 1 small step, 2 small gradient; 0 none).
        public var info: Int32
        /// GSL said the minimisation converged. A point without this is not a solution: it can
        /// lie hundreds of metres away with a χ² in the thousands (issue 21).
        public var converged: Bool { status == Int32(GSL_SUCCESS) }
    }

    /// Refine from `start`; returns the point, iteration count and GSL's convergence status
    /// (callers must check `converged`), or nil on a GSL allocation/initialisation failure or
    /// non-positive-definite Q_ρ.
    public func refine(_ problem: TDoAProblem, start: [Double], maxIterations: Int = 20) -> Outcome? {
        let d = problem.mode.dimension, n = problem.beacons.count - 1
        guard n >= d, start.count == d else { return nil }
        // Q_ρ = σ₁²11ᵀ + diag(σ_i²) and its Cholesky factor inverse.
        var q = [Double](repeating: problem.sigmas[0] * problem.sigmas[0], count: n * n)
        for i in 0..<n { q[i * n + i] += problem.sigmas[i + 1] * problem.sigmas[i + 1] }
        guard SmallSPD.choleskyInPlace(&q, n) else { return nil }
        var linv = [Double](repeating: 0, count: n * n)
        for c in 0..<n {
            // Forward substitution L y = e_c → column c of L⁻¹.
            for i in c..<n {
                var s = i == c ? 1.0 : 0.0
                for k in c..<i { s -= q[i * n + k] * linv[k * n + c] }
                linv[i * n + c] = s / q[i * n + i]
            }
        }
        guard let s = slot(n: n, d: d) else { return nil }
        context.problem = problem; context.linv = linv; context.n = n; context.d = d
        s.fdf.pointee.params = Unmanaged.passUnretained(context).toOpaque()
        for i in 0..<d { gsl_vector_set(s.x, i, start[i]) }
        guard gsl_multifit_nlinear_init(s.x, s.fdf, s.workspace) == Int32(GSL_SUCCESS) else { return nil }
        var info: Int32 = 0
        let status = gsl_multifit_nlinear_driver(maxIterations, 1e-10, 1e-12, 0, nil, nil, &info, s.workspace)
        // Every status leaves the best point found in the workspace; only GSL_SUCCESS means a
        // stopping test was met (the caller decides what to do with the others).
        guard let xs = gsl_multifit_nlinear_position(s.workspace) else { return nil }
        let p = (0..<d).map { gsl_vector_get(xs, $0) }
        return Outcome(position: p, iterations: Int(gsl_multifit_nlinear_niter(s.workspace)), status: status, info: info)
    }
}
