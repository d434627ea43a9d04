/// Tiny dense symmetric-positive-definite algebra on row-major `[Double]` for the
/// acoustic solvers' hot path (n ≤ 8).
///
/// `docs/models.md` §7.7: tiny fixed-size algebra in a hot loop may be written
/// inline when GSL call overhead dominates; the TDoA benchmark (`posfuse-bench tdoa`)
/// shows it does for the closed form (GSL Cholesky of a 3×3 costs more than the whole
/// inline solve). The iterative refinement on GSL (`TDoARefiner.gslLevenbergMarquardt`)
/// and the geometry SVD in 3-D still use GSL.
enum SmallSPD {
    /// In-place lower Cholesky factor of the n×n SPD matrix `a` (row-major); the strict
    /// upper triangle is left untouched. Returns false if a pivot is not positive.
    @inline(__always)
    static func choleskyInPlace(_ a: inout [Double], _ n: Int) -> Bool {
        for j in 0..<n {
            var d = a[j * n + j]
            for k in 0..<j { d -= a[j * n + k] * a[j * n + k] }
            guard d > 0, d.isFinite else { return false }
            let ljj = d.squareRoot()
            a[j * n + j] = ljj
            for i in (j + 1)..<max(j + 1, n) {
                var s = a[i * n + j]
                for k in 0..<j { s -= a[i * n + k] * a[j * n + k] }
                a[i * n + j] = s / ljj
            }
        }
        return true
    }

    /// Solve A x = b for SPD A (n×n row-major). nil if A is not positive definite.
    static func solve(_ a: [Double], _ b: [Double], _ n: Int) -> [Double]? {
        var l = a
        guard choleskyInPlace(&l, n) else { return nil }
        var y = b
        // L y = b
        for i in 0..<n {
            var s = y[i]
            for k in 0..<i { s -= l[i * n + k] * y[k] }
            y[i] = s / l[i * n + i]
        }
        // Lᵀ x = y
        for i in stride(from: n - 1, through: 0, by: -1) {
            var s = y[i]
            for k in (i + 1)..<max(i + 1, n) { s -= l[k * n + i] * y[k] }
            y[i] = s / l[i * n + i]
        }
        return y
    }

    /// Inverse of SPD A (n×n row-major), symmetric. nil if A is not positive definite.
    static func inverse(_ a: [Double], _ n: Int) -> [Double]? {
        var l = a
        guard choleskyInPlace(&l, n) else { return nil }
        var inv = [Double](repeating: 0, count: n * n)
        var col = [Double](repeating: 0, count: n)
        for c in 0..<n {
            for i in 0..<n { col[i] = i == c ? 1 : 0 }
            for i in 0..<n {
                var s = col[i]
                for k in 0..<i { s -= l[i * n + k] * col[k] }
                col[i] = s / l[i * n + i]
            }
            for i in stride(from: n - 1, through: 0, by: -1) {
                var s = col[i]
                for k in (i + 1)..<max(i + 1, n) { s -= l[k * n + i] * col[k] }
                col[i] = s / l[i * n + i]
            }
            for i in 0..<n { inv[i * n + c] = col[i] }
        }
        for i in 0..<n { for j in 0..<i { let v = 0.5 * (inv[i * n + j] + inv[j * n + i]); inv[i * n + j] = v; inv[j * n + i] = v } }
        return inv
    }

    /// Inverse of the difference covariance Q = σ₁²·11ᵀ + diag(s₂², …, s_M²) by
    /// Sherman–Morrison (`docs/models.md` §4A):
    /// W = D⁻¹ − (D⁻¹1)(D⁻¹1)ᵀ / (1/σ₁² + Σ 1/s_i²). `s2` holds s_i² (i = 2..M), `r2` = σ₁².
    static func differenceInverse(reference r2: Double, others s2: [Double]) -> [Double] {
        let n = s2.count
        var dinv = [Double](repeating: 0, count: n)
        var denom = 1 / r2
        for i in 0..<n { dinv[i] = 1 / s2[i]; denom += dinv[i] }
        var w = [Double](repeating: 0, count: n * n)
        for i in 0..<n {
            for j in 0..<n {
                w[i * n + j] = (i == j ? dinv[i] : 0) - dinv[i] * dinv[j] / denom
            }
        }
        return w
    }
}
