import CGSL
import Foundation

/// Levenberg–Marquardt (GSL `gsl_multifit_nlinear`, trust region with the LM subproblem)
/// for small problems given as Swift closures, with an iteratively-reweighted (IRLS) robust
/// loss on top.
///
/// Robust loss: Huber with threshold c (in units of the residual scale σ). Each IRLS pass
/// solves min Σ w_k r_k² by LM with fixed weights w_k = min(1, c/|r_k|), then updates the
/// weights from the new residuals; 8 passes or until the weights settle. The returned
/// covariance is (JᵀWJ)⁻¹ at the solution (the residuals are already scaled by their σ).
public enum RobustLeastSquares {
    public struct Problem {
        public var residualCount: Int
        public var parameterCount: Int
        /// Residuals r(x), already divided by their standard deviations.
        public var residuals: ([Double]) -> [Double]
        /// Jacobian ∂r/∂x, row-major residualCount × parameterCount.
        public var jacobian: ([Double]) -> [Double]
        public init(residualCount: Int, parameterCount: Int, residuals: @escaping ([Double]) -> [Double],
                    jacobian: @escaping ([Double]) -> [Double]) {
            self.residualCount = residualCount; self.parameterCount = parameterCount
            self.residuals = residuals; self.jacobian = jacobian
        }
    }

    public struct Solution: Sendable {
        public var x: [Double]
        /// Σ w_k r_k² at x (robust weights of the last pass).
        public var cost: Double
        /// Final robust weights (1 = inlier).
        public var weights: [Double]
        /// (JᵀWJ)⁻¹ or nil when singular.
        public var covariance: Matrix?
        public var converged: Bool
    }

    /// One weighted LM solve: the residuals and Jacobian rows scaled by √w_k, solved by the
    /// estimators' one GSL driver (`WeightedLeastSquares`). nil if GSL fails to allocate or
    /// returns a non-finite point; `converged` is GSL's status.
    static func lm(_ problem: Problem, weights: [Double], x0: [Double], maxIterations: Int = 100) -> (x: [Double], converged: Bool)? {
        let n = problem.residualCount, p = problem.parameterCount
        guard n >= p, p > 0 else { return nil }
        let sqrtW = weights.map { $0.squareRoot() }
        guard let s = WeightedLeastSquares.solve(
            residuals: n, parameters: p, start: x0, maxIterations: maxIterations, xtol: 1e-10, gtol: 1e-10,
            f: { x in
                let r = problem.residuals(x)
                return (0..<r.count).map { sqrtW[$0] * r[$0] }
            },
            df: { x in
                var j = problem.jacobian(x)
                for i in 0..<n { for k in 0..<p { j[i * p + k] *= sqrtW[i] } }
                return j
            }) else { return nil }
        return (s.x, s.status == Int32(GSL_SUCCESS))
    }

    /// IRLS with the Huber loss around LM, from each start; the lowest robust cost wins.
    public static func solve(_ problem: Problem, starts: [[Double]], huber c: Double = 1.345,
                             passes: Int = 8) -> Solution? {
        var best: Solution?
        for x0 in starts {
            var w = [Double](repeating: 1, count: problem.residualCount)
            var x = x0
            var conv = false
            for _ in 0..<passes {
                guard let s = lm(problem, weights: w, x0: x) else { break }
                x = s.x; conv = s.converged
                let r = problem.residuals(x)
                let nw = r.map { abs($0) <= c ? 1.0 : c / abs($0) }
                let change = zip(nw, w).map { abs($0 - $1) }.max() ?? 0
                w = nw
                if change < 1e-4 { break }
            }
            let r = problem.residuals(x)
            guard r.allSatisfy(\.isFinite) else { continue }
            let cost = zip(r, w).reduce(0) { $0 + $1.1 * $1.0 * $1.0 }
            if best == nil || cost < best!.cost {
                best = Solution(x: x, cost: cost, weights: w, covariance: covariance(problem, x: x, weights: w), converged: conv)
            }
        }
        return best
    }

    /// (JᵀWJ)⁻¹ at x.
    static func covariance(_ problem: Problem, x: [Double], weights: [Double]) -> Matrix? {
        let p = problem.parameterCount
        let j = problem.jacobian(x)
        var a = Matrix(rows: p, cols: p)
        for i in 0..<problem.residualCount {
            for r in 0..<p { for c in 0..<p { a[r, c] += weights[i] * j[i * p + r] * j[i * p + c] } }
        }
        return a.spdInverse
    }
}

/// Site (antenna) position from ranges measured at known phone positions (`posfuse celldb
/// build`): min_b Σ ρ_Huber((‖p_k − b‖ − d_k)/σ_k), b = (E, N) horizontal, d_k the horizontal
/// TA range. Multi-start (the centroid of the phone positions and 8 points on a circle of the
/// median range around it) avoids the mirror minimum of nearly collinear walks.
///
/// Degenerate cases: fewer than 3 ranges → `.tooFewAnchors`; phone positions (nearly)
/// collinear → `.collinearGeometry` (the site is ambiguous across the line); LM failure →
/// `.notConverged`.
public enum RangeTrilateration {
    public struct Result: Sendable {
        public var position: SIMD2<Double>
        public var covariance: Covariance2
        public var inlierFraction: Double
        public var rmsResidual: Double
    }

    public static func fit(points: [SIMD2<Double>], ranges: [Double], sigmas: [Double],
                           huber: Double = 1.345) -> Swift.Result<Result, EstimationFailure> {
        let n = points.count
        guard n >= 3, ranges.count == n, sigmas.count == n else { return .failure(.tooFewAnchors(needed: 3, got: n)) }
        let c = points.reduce(SIMD2<Double>(0, 0), +) / Double(n)
        // Collinearity: smallest singular value of the centred positions.
        var sxx = 0.0, sxy = 0.0, syy = 0.0
        for p in points { let d = p - c; sxx += d.x * d.x; sxy += d.x * d.y; syy += d.y * d.y }
        let ax = Covariance2(ee: sxx / Double(n), en: sxy / Double(n), nn: syy / Double(n)).principalAxes
        let medRange = RadioStats.median(ranges) ?? 0
        if ax.minor < 1e-3 * max(ax.major, 1) && medRange > 3 * ax.minor { return .failure(.collinearGeometry) }
        let problem = RobustLeastSquares.Problem(
            residualCount: n, parameterCount: 2,
            residuals: { x in
                (0..<n).map { k in
                    let dx = points[k].x - x[0], dy = points[k].y - x[1]
                    return ((dx * dx + dy * dy).squareRoot() - ranges[k]) / sigmas[k]
                }
            },
            jacobian: { x in
                var j = [Double](repeating: 0, count: 2 * n)
                for k in 0..<n {
                    let dx = x[0] - points[k].x, dy = x[1] - points[k].y
                    let h = max((dx * dx + dy * dy).squareRoot(), 1e-6)
                    j[2 * k] = dx / h / sigmas[k]; j[2 * k + 1] = dy / h / sigmas[k]
                }
                return j
            })
        var starts: [[Double]] = [[c.x, c.y]]
        let r0 = max(medRange, 1)
        for i in 0..<8 {
            let a = Double(i) * .pi / 4
            starts.append([c.x + r0 * sin(a), c.y + r0 * cos(a)])
        }
        guard let s = RobustLeastSquares.solve(problem, starts: starts, huber: huber) else { return .failure(.notConverged) }
        let res = problem.residuals(s.x).enumerated().map { $0.element * sigmas[$0.offset] }
        let rms = (res.reduce(0) { $0 + $1 * $1 } / Double(n)).squareRoot()
        let cov: Covariance2
        if let m = s.covariance { cov = Covariance2(ee: m[0, 0], en: 0.5 * (m[0, 1] + m[1, 0]), nn: m[1, 1]) } else {
            return .failure(.collinearGeometry)
        }
        return .success(Result(position: SIMD2(s.x[0], s.x[1]), covariance: cov,
                               inlierFraction: Double(s.weights.filter { $0 >= 1 }.count) / Double(n), rmsResidual: rms))
    }
}
