import CGSL

/// A small dense row-major matrix of Doubles for estimator and filter algebra.
///
/// Sizes here are tiny (n ≤ 10): plain loops beat BLAS call overhead
/// (`docs/engineering.md` §4: GSL dgemm 10× slower on 4×4). Factorisations that need
/// care (Cholesky, LU inverse, SVD) go through GNU GSL.
public struct Matrix: Sendable, Equatable, CustomStringConvertible {
    public let rows: Int
    public let cols: Int
    public var data: [Double]

    public init(rows: Int, cols: Int, repeating v: Double = 0) {
        self.rows = rows; self.cols = cols; data = [Double](repeating: v, count: rows * cols)
    }
    public init(rows: Int, cols: Int, data: [Double]) {
        precondition(data.count == rows * cols)
        self.rows = rows; self.cols = cols; self.data = data
    }
    /// From nested rows: `Matrix([[1, 2], [3, 4]])`.
    public init(_ r: [[Double]]) {
        rows = r.count; cols = r.first?.count ?? 0; data = r.flatMap { $0 }
        precondition(data.count == rows * cols)
    }
    public static func identity(_ n: Int) -> Matrix {
        var m = Matrix(rows: n, cols: n)
        for i in 0..<n { m[i, i] = 1 }
        return m
    }
    public static func diagonal(_ d: [Double]) -> Matrix {
        var m = Matrix(rows: d.count, cols: d.count)
        for i in d.indices { m[i, i] = d[i] }
        return m
    }
    /// Column vector.
    public static func column(_ v: [Double]) -> Matrix { Matrix(rows: v.count, cols: 1, data: v) }

    @inlinable public subscript(i: Int, j: Int) -> Double {
        get { data[i * cols + j] }
        set { data[i * cols + j] = newValue }
    }

    public var transposed: Matrix {
        var t = Matrix(rows: cols, cols: rows)
        for i in 0..<rows { for j in 0..<cols { t[j, i] = self[i, j] } }
        return t
    }

    public static func * (a: Matrix, b: Matrix) -> Matrix {
        precondition(a.cols == b.rows, "dimension mismatch \(a.rows)x\(a.cols) * \(b.rows)x\(b.cols)")
        var c = Matrix(rows: a.rows, cols: b.cols)
        for i in 0..<a.rows {
            for k in 0..<a.cols {
                let aik = a[i, k]
                if aik == 0 { continue }
                for j in 0..<b.cols { c.data[i * b.cols + j] += aik * b.data[k * b.cols + j] }
            }
        }
        return c
    }
    public static func * (a: Matrix, v: [Double]) -> [Double] {
        precondition(a.cols == v.count)
        var r = [Double](repeating: 0, count: a.rows)
        for i in 0..<a.rows { var s = 0.0; for j in 0..<a.cols { s += a[i, j] * v[j] }; r[i] = s }
        return r
    }
    public static func * (k: Double, a: Matrix) -> Matrix { Matrix(rows: a.rows, cols: a.cols, data: a.data.map { k * $0 }) }
    public static func + (a: Matrix, b: Matrix) -> Matrix {
        precondition(a.rows == b.rows && a.cols == b.cols)
        return Matrix(rows: a.rows, cols: a.cols, data: zip(a.data, b.data).map(+))
    }
    public static func - (a: Matrix, b: Matrix) -> Matrix {
        precondition(a.rows == b.rows && a.cols == b.cols)
        return Matrix(rows: a.rows, cols: a.cols, data: zip(a.data, b.data).map(-))
    }

    /// (A + Aᵀ)/2.
    public var symmetrized: Matrix {
        var s = self
        for i in 0..<rows { for j in 0..<i { let v = 0.5 * (self[i, j] + self[j, i]); s[i, j] = v; s[j, i] = v } }
        return s
    }

    public var trace: Double { (0..<min(rows, cols)).reduce(0) { $0 + self[$1, $1] } }

    public var isFinite: Bool { data.allSatisfy { $0.isFinite } }

    /// Lower Cholesky factor L (A = L Lᵀ) by GSL, or nil if A is not positive definite.
    public var cholesky: Matrix? {
        precondition(rows == cols)
        guard isFinite else { return nil }
        return GSL.withMatrix(self) { m -> Matrix? in
            guard gsl_linalg_cholesky_decomp1(m) == Int32(GSL_SUCCESS) else { return nil }
            var l = Matrix(rows: rows, cols: rows)
            for i in 0..<rows { for j in 0...i { l[i, j] = gsl_matrix_get(m, i, j) } }
            return l
        }
    }

    /// Inverse of a symmetric positive-definite matrix via GSL Cholesky; nil if not SPD.
    public var spdInverse: Matrix? {
        precondition(rows == cols)
        if rows == 1 { return self[0, 0] > 0 && self[0, 0].isFinite ? Matrix(rows: 1, cols: 1, data: [1 / self[0, 0]]) : nil }
        if rows == 2 {
            let a = self[0, 0], b = 0.5 * (self[0, 1] + self[1, 0]), d = self[1, 1]
            let det = a * d - b * b
            guard a > 0, det > 0, det.isFinite else { return nil }
            return Matrix(rows: 2, cols: 2, data: [d / det, -b / det, -b / det, a / det])
        }
        guard isFinite else { return nil }
        return GSL.withMatrix(self) { m -> Matrix? in
            guard gsl_linalg_cholesky_decomp1(m) == Int32(GSL_SUCCESS),
                  gsl_linalg_cholesky_invert(m) == Int32(GSL_SUCCESS) else { return nil }
            return GSL.matrix(m, rows: rows, cols: cols).symmetrized
        }
    }

    /// General inverse by GSL LU; nil if singular (|det| below 1e-300 or non-finite result).
    public var inverse: Matrix? {
        precondition(rows == cols)
        guard isFinite else { return nil }
        return GSL.withMatrix(self) { m -> Matrix? in
            let p = gsl_permutation_alloc(rows)!
            defer { gsl_permutation_free(p) }
            var signum: Int32 = 0
            guard gsl_linalg_LU_decomp(m, p, &signum) == Int32(GSL_SUCCESS) else { return nil }
            let det = gsl_linalg_LU_det(m, signum)
            guard det != 0, det.isFinite else { return nil }
            let inv = gsl_matrix_alloc(rows, cols)!
            defer { gsl_matrix_free(inv) }
            guard gsl_linalg_LU_invert(m, p, inv) == Int32(GSL_SUCCESS) else { return nil }
            let r = GSL.matrix(inv, rows: rows, cols: cols)
            return r.isFinite ? r : nil
        }
    }

    /// Singular values (descending), by GSL's one-sided Jacobi SVD. Used for rank and
    /// conditioning tests of anchor geometry.
    public var singularValues: [Double] {
        let m = max(rows, cols), n = min(rows, cols)
        let a = rows >= cols ? self : transposed
        return GSL.withMatrix(a) { g -> [Double] in
            let v = gsl_matrix_alloc(n, n)!, s = gsl_vector_alloc(n)!
            defer { gsl_matrix_free(v); gsl_vector_free(s) }
            _ = m
            _ = gsl_linalg_SV_decomp_jacobi(g, v, s)
            return (0..<n).map { gsl_vector_get(s, $0) }
        }
    }

    public var description: String {
        (0..<rows).map { i in (0..<cols).map { String(self[i, $0]) }.joined(separator: " ") }.joined(separator: "\n")
    }
}

/// Thin helpers around GSL objects.
public enum GSL {
    /// Turn off GSL's abort-on-error handler (idempotent). Called by every entry point
    /// that uses GSL so failures come back as return codes.
    public static func disableAbort() { _ = gsl_set_error_handler_off() }

    static func withMatrix<R>(_ a: Matrix, _ body: (UnsafeMutablePointer<gsl_matrix>) -> R) -> R {
        disableAbort()
        let m = gsl_matrix_alloc(a.rows, a.cols)!
        defer { gsl_matrix_free(m) }
        for i in 0..<a.rows { for j in 0..<a.cols { gsl_matrix_set(m, i, j, a[i, j]) } }
        return body(m)
    }
    static func matrix(_ m: UnsafeMutablePointer<gsl_matrix>, rows: Int, cols: Int) -> Matrix {
        var r = Matrix(rows: rows, cols: cols)
        for i in 0..<rows { for j in 0..<cols { r[i, j] = gsl_matrix_get(m, i, j) } }
        return r
    }
}
