import Foundation

/// A 4×4 matrix of Doubles stored as four `SIMD4` rows, for the fusion filters' fixed-size
/// algebra (both state vectors, [E, N, ψ, s] and [E, N, v_E, v_N], have n = 4).
///
/// `docs/engineering.md` §4: SIMD4 rows run a CV predict+update in 70–100 ns, GSL BLAS on
/// 4×4 in 800–1000 ns (call overhead), so filters use this type and call GSL only for
/// larger measurement blocks (via `Matrix`). Every operation is inlinable and allocation-free.
public struct Mat4: Sendable, Equatable {
    public var r0, r1, r2, r3: SIMD4<Double>

    @inlinable public init(r0: SIMD4<Double>, r1: SIMD4<Double>, r2: SIMD4<Double>, r3: SIMD4<Double>) {
        self.r0 = r0; self.r1 = r1; self.r2 = r2; self.r3 = r3
    }
    /// From 16 row-major values.
    public init(rowMajor a: [Double]) {
        precondition(a.count == 16)
        self.init(r0: SIMD4(a[0], a[1], a[2], a[3]), r1: SIMD4(a[4], a[5], a[6], a[7]),
                  r2: SIMD4(a[8], a[9], a[10], a[11]), r3: SIMD4(a[12], a[13], a[14], a[15]))
    }
    public static let zero = Mat4(r0: .zero, r1: .zero, r2: .zero, r3: .zero)
    public static let identity = Mat4(r0: SIMD4(1, 0, 0, 0), r1: SIMD4(0, 1, 0, 0), r2: SIMD4(0, 0, 1, 0), r3: SIMD4(0, 0, 0, 1))
    @inlinable @inline(__always) public static func diagonal(_ d: SIMD4<Double>) -> Mat4 {
        Mat4(r0: SIMD4(d[0], 0, 0, 0), r1: SIMD4(0, d[1], 0, 0), r2: SIMD4(0, 0, d[2], 0), r3: SIMD4(0, 0, 0, d[3]))
    }
    /// Outer product a bᵀ.
    @inlinable @inline(__always) public static func outer(_ a: SIMD4<Double>, _ b: SIMD4<Double>) -> Mat4 {
        Mat4(r0: a[0] * b, r1: a[1] * b, r2: a[2] * b, r3: a[3] * b)
    }

    @inlinable public subscript(row i: Int) -> SIMD4<Double> {
        get { switch i { case 0: r0; case 1: r1; case 2: r2; default: r3 } }
        set { switch i { case 0: r0 = newValue; case 1: r1 = newValue; case 2: r2 = newValue; default: r3 = newValue } }
    }
    @inlinable public subscript(i: Int, j: Int) -> Double {
        get { self[row: i][j] }
        set { var r = self[row: i]; r[j] = newValue; self[row: i] = r }
    }
    @inlinable @inline(__always) public func column(_ j: Int) -> SIMD4<Double> { SIMD4(r0[j], r1[j], r2[j], r3[j]) }
    @inlinable public var diagonal: SIMD4<Double> { SIMD4(r0[0], r1[1], r2[2], r3[3]) }

    @inlinable @inline(__always) public var transposed: Mat4 {
        Mat4(r0: SIMD4(r0[0], r1[0], r2[0], r3[0]), r1: SIMD4(r0[1], r1[1], r2[1], r3[1]),
             r2: SIMD4(r0[2], r1[2], r2[2], r3[2]), r3: SIMD4(r0[3], r1[3], r2[3], r3[3]))
    }
    /// (A + Aᵀ)/2.
    @inlinable @inline(__always) public var symmetrized: Mat4 {
        let t = transposed
        return Mat4(r0: 0.5 * (r0 + t.r0), r1: 0.5 * (r1 + t.r1), r2: 0.5 * (r2 + t.r2), r3: 0.5 * (r3 + t.r3))
    }
    @inlinable @inline(__always) static func rowTimes(_ v: SIMD4<Double>, _ b: Mat4) -> SIMD4<Double> {
        v[0] * b.r0 + v[1] * b.r1 + v[2] * b.r2 + v[3] * b.r3
    }
    @inlinable @inline(__always) public static func * (a: Mat4, b: Mat4) -> Mat4 {
        Mat4(r0: rowTimes(a.r0, b), r1: rowTimes(a.r1, b), r2: rowTimes(a.r2, b), r3: rowTimes(a.r3, b))
    }
    @inlinable @inline(__always) public static func * (a: Mat4, v: SIMD4<Double>) -> SIMD4<Double> {
        SIMD4((a.r0 * v).sum(), (a.r1 * v).sum(), (a.r2 * v).sum(), (a.r3 * v).sum())
    }
    @inlinable @inline(__always) public static func + (a: Mat4, b: Mat4) -> Mat4 { Mat4(r0: a.r0 + b.r0, r1: a.r1 + b.r1, r2: a.r2 + b.r2, r3: a.r3 + b.r3) }
    @inlinable @inline(__always) public static func - (a: Mat4, b: Mat4) -> Mat4 { Mat4(r0: a.r0 - b.r0, r1: a.r1 - b.r1, r2: a.r2 - b.r2, r3: a.r3 - b.r3) }
    @inlinable @inline(__always) public static func * (k: Double, a: Mat4) -> Mat4 { Mat4(r0: k * a.r0, r1: k * a.r1, r2: k * a.r2, r3: k * a.r3) }

    /// A F Aᵀ-style congruence: A · self · Aᵀ.
    @inlinable @inline(__always) public func congruence(_ a: Mat4) -> Mat4 { a * self * a.transposed }

    public var isFinite: Bool {
        for i in 0..<4 { let r = self[row: i]; for j in 0..<4 where !r[j].isFinite { return false } }
        return true
    }
    public var trace: Double { r0[0] + r1[1] + r2[2] + r3[3] }

    /// Lower Cholesky factor L (self = L Lᵀ), or nil if not positive definite.
    /// Written out (n = 4): L_jj = √(A_jj − Σ_k L_jk²), L_ij = (A_ij − Σ_k L_ik L_jk)/L_jj.
    public var cholesky: Mat4? {
        var l = Mat4.zero
        for j in 0..<4 {
            var d = self[j, j]
            for k in 0..<j { d -= l[j, k] * l[j, k] }
            guard d > 0, d.isFinite else { return nil }
            let ljj = d.squareRoot()
            l[j, j] = ljj
            for i in (j + 1)..<4 {
                var s = self[i, j]
                for k in 0..<j { s -= l[i, k] * l[j, k] }
                l[i, j] = s / ljj
            }
        }
        return l
    }

    /// Inverse of a symmetric positive-definite matrix from its Cholesky factor, or nil.
    public var spdInverse: Mat4? {
        guard let l = cholesky else { return nil }
        // Solve L Lᵀ X = I column by column.
        var inv = Mat4.zero
        for c in 0..<4 {
            var y = SIMD4<Double>.zero
            for i in 0..<4 {
                var s = i == c ? 1.0 : 0.0
                for k in 0..<i { s -= l[i, k] * y[k] }
                y[i] = s / l[i, i]
            }
            var x = SIMD4<Double>.zero
            for i in stride(from: 3, through: 0, by: -1) {
                var s = y[i]
                for k in (i + 1)..<4 { s -= l[k, i] * x[k] }
                x[i] = s / l[i, i]
            }
            for i in 0..<4 { inv[i, c] = x[i] }
        }
        return inv.symmetrized
    }

    /// As a general `Matrix` (for GSL-backed routines and tests).
    public var matrix: Matrix {
        Matrix(rows: 4, cols: 4, data: (0..<16).map { self[$0 / 4, $0 % 4] })
    }
    public init(_ m: Matrix) {
        precondition(m.rows == 4 && m.cols == 4)
        self.init(rowMajor: m.data)
    }
}
