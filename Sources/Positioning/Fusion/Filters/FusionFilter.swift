import Foundation

/// The outcome of one measurement update, logged per update (`docs/models.md` §7.5–7.6).
public struct UpdateRecord: Sendable, Equatable {
    /// `unobservable`: the model observes a part of the state this filter's layout does not carry
    /// (a velocity in the step state); nothing changed.
    public enum Outcome: String, Sendable { case accepted, gated, notViolated = "not_violated", singular, uninitialized, unobservable }
    public var time: Double
    public var source: Source
    /// Measurement dimension m.
    public var dimension: Int
    /// Normalised innovation squared νᵀS⁻¹ν (χ²_m when consistent); nil when not computed.
    public var nis: Double?
    /// χ² gate threshold used, or nil (no gate).
    public var gate: Double?
    public var outcome: Outcome
    public init(time: Double, source: Source, dimension: Int, nis: Double?, gate: Double?, outcome: Outcome) {
        self.time = time; self.source = source; self.dimension = dimension; self.nis = nis; self.gate = gate; self.outcome = outcome
    }
    public var accepted: Bool { outcome == .accepted }
}

/// What the rewind buffer and the smoother need to restore a filter.
public struct FilterSnapshot: @unchecked Sendable {
    public var time: Double
    public var mean: SIMD4<Double>
    public var covariance: Mat4
    public var initialized: Bool
    /// Filter-specific payload (particle arrays for the particle filter).
    public var payload: AnyObject?
}

/// A recursive Bayes filter over one of the two 4-state layouts, consuming any
/// `MeasurementModel` (the seam of docs/models.md §0). EKF, UKF and the particle filter conform.
public protocol FusionFilter: AnyObject {
    var motion: MotionConfiguration { get set }
    var isInitialized: Bool { get }
    /// Time of the current estimate, trace s.
    var time: Double { get }
    /// State mean (for the particle filter the weighted mean; ψ circular).
    var mean: SIMD4<Double> { get }
    /// State covariance.
    var covariance: Mat4 { get }
    /// Start (or restart) at x, P.
    func initialize(mean: SIMD4<Double>, covariance: Mat4, time: Double)
    /// Time-driven prediction to `time` (no-op if `time` ≤ current time).
    func predict(to time: Double)
    /// Step-driven prediction (layout `.step`); `.cv` treats it as a time prediction.
    func predict(step: StepInput)
    /// Measurement update with χ² gate `gate` (nil = no gate). Does not predict first.
    func update(_ m: any MeasurementModel, gate: Double?) -> UpdateRecord
    /// Direct heading measurement z = ψ (rad), variance (rad²) (layout `.step` only).
    func updateHeading(_ z: Double, variance: Double, time: Double, gate: Double?) -> UpdateRecord
    func snapshot() -> FilterSnapshot
    func restore(_ s: FilterSnapshot)
}

extension FusionFilter {
    /// Runs `body` under a motion model changed by `change` (a still phone's diffusion, a
    /// manoeuvre's q), then restores the filter's own.
    public func withMotion<R>(_ change: (inout MotionConfiguration) -> Void, _ body: () throws -> R) rethrows -> R {
        let saved = motion
        change(&motion)
        defer { motion = saved }
        return try body()
    }

    /// Position and its 2×2 covariance as a `Fix`.
    public func fix(source: Source, subject: String, usedCount: Int = 0, flags: FixFlags = []) -> Fix {
        let p = covariance
        return Fix(time: time, position: SIMD2(mean[0], mean[1]),
                   covariance: Covariance2(ee: p[0, 0], en: 0.5 * (p[0, 1] + p[1, 0]), nn: p[1, 1]),
                   source: source, subject: subject, usedCount: usedCount, flags: flags)
    }
}

/// Shared linear-algebra of the Kalman update for an m-dimensional measurement whose
/// Jacobian rows are `h[k]` (1×4 each), innovation ν, noise R (m×m):
///
/// 1. c_k = P h_kᵀ (columns of P Hᵀ);  S = H P Hᵀ + R, S_ij = h_i·c_j + R_ij.
/// 2. d² = νᵀ S⁻¹ ν (NIS); reject when d² > gate.
/// 3. K = P Hᵀ S⁻¹ (columns K_k = Σ_j c_j S⁻¹_jk);  x ← x + K ν (ψ wrapped).
/// 4. Joseph form P ← (I − K H) P (I − K H)ᵀ + K R Kᵀ, then P ← (P + Pᵀ)/2.
enum KalmanAlgebra {
    struct Result { var mean: SIMD4<Double>; var covariance: Mat4; var nis: Double }
    enum Failure: Error { case singular, gated(Double) }

    static func update(mean x: SIMD4<Double>, covariance p: Mat4, h: [SIMD4<Double>], innovation nu: [Double],
                       noise r: Matrix, gate: Double?, angleIndex: Int?) -> Swift.Result<Result, Failure> {
        let m = h.count
        var c = [SIMD4<Double>](repeating: .zero, count: m)
        for k in 0..<m { c[k] = p * h[k] }                                  // P Hᵀ (P symmetric)
        var s = Matrix(rows: m, cols: m)
        for i in 0..<m { for j in 0..<m { s[i, j] = (h[i] * c[j]).sum() + r[i, j] } }   // S = H P Hᵀ + R
        guard let si = s.spdInverse else { return .failure(.singular) }
        var nis = 0.0
        for i in 0..<m { for j in 0..<m { nis += nu[i] * si[i, j] * nu[j] } }            // νᵀ S⁻¹ ν
        guard nis.isFinite else { return .failure(.singular) }
        if let g = gate, nis > g { return .failure(.gated(nis)) }
        var k = [SIMD4<Double>](repeating: .zero, count: m)
        for col in 0..<m { var v = SIMD4<Double>.zero; for j in 0..<m { v += c[j] * si[j, col] }; k[col] = v }  // K = P Hᵀ S⁻¹
        var xn = x
        for col in 0..<m { xn += k[col] * nu[col] }                          // x + K ν
        if let a = angleIndex { xn[a] = Angle.wrap(xn[a]) }
        var ikh = Mat4.identity
        for col in 0..<m { ikh = ikh - Mat4.outer(k[col], h[col]) }       // I − K H
        var pn = p.congruence(ikh)                                           // (I−KH) P (I−KH)ᵀ
        for i in 0..<m { for j in 0..<m where r[i, j] != 0 { pn = pn + r[i, j] * Mat4.outer(k[i], k[j]) } }  // + K R Kᵀ
        return .success(Result(mean: xn, covariance: pn.symmetrized, nis: nis))
    }

    /// Direct heading measurement z = ψ (rad) with variance (rad²) on the S1 state: H = [0 0 1 0],
    /// ν wrapped to (−π, π]. h is linear, so this is the Kalman update for the EKF and the UKF alike.
    static func updateHeading(mean: inout SIMD4<Double>, covariance: inout Mat4, z: Double, variance: Double, time t: Double,
                              gate: Double?, source: Source) -> UpdateRecord {
        let nu = Angle.wrap(z - mean[2])
        switch update(mean: mean, covariance: covariance, h: [SIMD4(0, 0, 1, 0)], innovation: [nu],
                      noise: Matrix(rows: 1, cols: 1, data: [variance]), gate: gate, angleIndex: 2) {
        case .success(let r):
            mean = r.mean; covariance = r.covariance
            return UpdateRecord(time: t, source: source, dimension: 1, nis: r.nis, gate: gate, outcome: .accepted)
        case .failure(.gated(let d)): return UpdateRecord(time: t, source: source, dimension: 1, nis: d, gate: gate, outcome: .gated)
        case .failure(.singular): return UpdateRecord(time: t, source: source, dimension: 1, nis: nil, gate: gate, outcome: .singular)
        }
    }

    /// Closed-form m = 2 update with H = [I₂ 0] (position fix), allocation-free: the hot path
    /// the benchmark measures. Same equations as `update`.
    @inline(__always) static func updatePosition(mean x: inout SIMD4<Double>, covariance p: inout Mat4, z: SIMD2<Double>,
                                          ree: Double, ren: Double, rnn: Double, gate: Double?) -> Double? {
        let c0 = p.column(0), c1 = p.column(1)                               // P Hᵀ
        let s00 = c0[0] + ree, s01 = c1[0] + ren, s11 = c1[1] + rnn          // S = H P Hᵀ + R
        let det = s00 * s11 - s01 * s01
        guard det > 0, s00 > 0, det.isFinite else { return nil }
        let i00 = s11 / det, i01 = -s01 / det, i11 = s00 / det
        let y0 = z.x - x[0], y1 = z.y - x[1]
        let nis = y0 * (i00 * y0 + i01 * y1) + y1 * (i01 * y0 + i11 * y1)
        if let g = gate, nis > g { return -nis }
        let k0 = c0 * i00 + c1 * i01, k1 = c0 * i01 + c1 * i11               // K = P Hᵀ S⁻¹
        x += k0 * y0 + k1 * y1
        // Joseph form P⁺ = (I − KH) P (I − KH)ᵀ + K R Kᵀ for H = [I₂ 0], row by row without
        // forming I − KH: M = P − K (HP) (HP = rows 0, 1 of P), N = M − (M Hᵀ) Kᵀ, P⁺ = N + K R Kᵀ
        // (the same terms as the matrix products, a quarter of the arithmetic).
        let p0 = p.r0, p1 = p.r1
        let u0 = ree * k0 + ren * k1, u1 = ren * k0 + rnn * k1               // R Kᵀ, as rows
        @inline(__always) func row(_ r: SIMD4<Double>, _ i: Int) -> SIMD4<Double> {
            let m = r - k0[i] * p0 - k1[i] * p1
            return m - m[0] * k0 - m[1] * k1 + k0[i] * u0 + k1[i] * u1
        }
        p = Mat4(r0: row(p.r0, 0), r1: row(p.r1, 1), r2: row(p.r2, 2), r3: row(p.r3, 3)).symmetrized
        return nis
    }
}
