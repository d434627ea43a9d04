import CGSL

/// Weighted nonlinear least squares on GNU GSL (`gsl_multifit_nlinear`, trust region
/// with the Levenberg–Marquardt subproblem).
///
/// The caller supplies **whitened** residuals f(x) (each row divided by its σ, or
/// premultiplied by L⁻¹ for correlated noise) and their Jacobian; GSL minimises ½‖f‖².
/// The covariance of the estimate is (JᵀJ)⁻¹ of the whitened Jacobian at the solution
/// (`gsl_multifit_nlinear_covar`), i.e. (JᵀWJ)⁻¹ of the unwhitened problem.
/// The model closure is reached from the C callbacks through `params` (`Unmanaged`),
/// since GSL callbacks must be non-capturing (`docs/engineering.md` §1).
enum WeightedLeastSquares {
    /// (whitened residuals, Jacobian n×p row-major) at x.
    typealias Model = ([Double]) -> (residuals: [Double], jacobian: [Double])

    struct Solution {
        var x: [Double]
        /// p×p row-major covariance, nil if JᵀJ is singular.
        var covariance: [Double]?
        /// ‖f‖² at the solution.
        var chiSquare: Double
        var iterations: Int
        var status: Int32
    }

    private final class Context {
        let f: ([Double]) -> [Double], df: ([Double]) -> [Double], n: Int, p: Int
        init(f: @escaping ([Double]) -> [Double], df: @escaping ([Double]) -> [Double], n: Int, p: Int) {
            self.f = f; self.df = df; self.n = n; self.p = p
        }
    }

    /// Solve from x0 with one closure giving residuals and Jacobian together.
    /// nil on allocation failure or non-finite results.
    static func solve(residuals n: Int, parameters p: Int, start x0: [Double], maxIterations: Int = 100,
                      xtol: Double = 1e-10, gtol: Double = 1e-12, model: @escaping Model) -> Solution? {
        solve(residuals: n, parameters: p, start: x0, maxIterations: maxIterations, xtol: xtol, gtol: gtol,
              f: { model($0).residuals }, df: { model($0).jacobian })
    }

    /// Solve from x0 with separate closures for the whitened residuals f(x) and the
    /// Jacobian (n×p row-major), so that GSL's residual-only evaluations do not pay for a
    /// Jacobian. This is the one GSL `multifit_nlinear` driver of the estimators that fit
    /// closures (`RobustLeastSquares` runs its IRLS passes on it). nil on allocation
    /// failure or non-finite results.
    static func solve(residuals n: Int, parameters p: Int, start x0: [Double], maxIterations: Int = 100,
                      xtol: Double = 1e-10, gtol: Double = 1e-12,
                      f residualFunction: @escaping ([Double]) -> [Double],
                      df jacobianFunction: @escaping ([Double]) -> [Double]) -> Solution? {
        guard n >= p, p > 0, x0.count == p else { return nil }
        GSL.disableAbort()
        let ctx = Context(f: residualFunction, df: jacobianFunction, n: n, p: p)
        let box = Unmanaged.passRetained(ctx)
        defer { box.release() }
        var fdf = gsl_multifit_nlinear_fdf()
        fdf.f = { x, params, f in
            let c = Unmanaged<Context>.fromOpaque(params!).takeUnretainedValue()
            let r = c.f((0..<c.p).map { gsl_vector_get(x, $0) })
            for i in 0..<c.n { gsl_vector_set(f, i, r[i]) }
            return Int32(GSL_SUCCESS)
        }
        fdf.df = { x, params, jac in
            let c = Unmanaged<Context>.fromOpaque(params!).takeUnretainedValue()
            let j = c.df((0..<c.p).map { gsl_vector_get(x, $0) })
            for i in 0..<c.n { for k in 0..<c.p { gsl_matrix_set(jac, i, k, j[i * c.p + k]) } }
            return Int32(GSL_SUCCESS)
        }
        fdf.fvv = nil
        fdf.n = n; fdf.p = p
        fdf.params = box.toOpaque()
        var params = gsl_multifit_nlinear_default_parameters()
        params.trs = cgsl_multifit_nlinear_trs_lm()
        guard let w = gsl_multifit_nlinear_alloc(cgsl_multifit_nlinear_trust(), &params, n, p) else { return nil }
        defer { gsl_multifit_nlinear_free(w) }
        guard let x = gsl_vector_alloc(p), let cov = gsl_matrix_alloc(p, p) else { return nil }
        defer { gsl_vector_free(x); gsl_matrix_free(cov) }
        for i in 0..<p { gsl_vector_set(x, i, x0[i]) }
        guard gsl_multifit_nlinear_init(x, &fdf, w) == Int32(GSL_SUCCESS) else { return nil }
        var info: Int32 = 0
        let status = gsl_multifit_nlinear_driver(maxIterations, xtol, gtol, 0, nil, nil, &info, w)
        guard let xs = gsl_multifit_nlinear_position(w), let f = gsl_multifit_nlinear_residual(w),
              let jac = gsl_multifit_nlinear_jac(w) else { return nil }
        let sol = (0..<p).map { gsl_vector_get(xs, $0) }
        var chi2 = 0.0
        gsl_blas_ddot(f, f, &chi2)
        guard sol.allSatisfy({ $0.isFinite }), chi2.isFinite else { return nil }
        var covariance: [Double]?
        if gsl_multifit_nlinear_covar(jac, 1e-12, cov) == Int32(GSL_SUCCESS) {
            let c = (0..<(p * p)).map { gsl_matrix_get(cov, $0 / p, $0 % p) }
            covariance = c.allSatisfy({ $0.isFinite }) ? c : nil
        }
        return Solution(x: sol, covariance: covariance, chiSquare: chi2,
                        iterations: Int(gsl_multifit_nlinear_niter(w)), status: status)
    }
}
