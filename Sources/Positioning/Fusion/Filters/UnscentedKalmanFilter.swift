import Foundation

/// Merwe scaled sigma points (`docs/models.md` §7.3, FilterPy `MerweScaledSigmaPoints`):
/// λ = α²(n + κ) − n; W₀ᵐ = λ/(n + λ); W₀ᶜ = W₀ᵐ + 1 − α² + β; Wᵢ = 1/(2(n + λ)), i = 1…2n;
/// χ₀ = x, χᵢ = x + (√((n+λ)P))ᵢ, χᵢ₊ₙ = x − (√((n+λ)P))ᵢ with the Cholesky factor's columns.
/// For n = 4 the defaults α = 1, β = 2, κ = 0 give λ = 0, W₀ᵐ = 0 (no negative weights;
/// FilterPy's α = 10⁻³ would give W₀ᵐ ≈ −10⁶ for n this small).
public struct SigmaPointParameters: Sendable, Equatable {
    public var alpha: Double = 1
    public var beta: Double = 2
    public var kappa: Double = 0
    public init(alpha: Double = 1, beta: Double = 2, kappa: Double = 0) { self.alpha = alpha; self.beta = beta; self.kappa = kappa }
    static let n = 4.0
    public var lambda: Double { alpha * alpha * (Self.n + kappa) - Self.n }
    public var meanWeights: (w0: Double, wi: Double) { (lambda / (Self.n + lambda), 1 / (2 * (Self.n + lambda))) }
    public var covarianceWeights: (w0: Double, wi: Double) {
        (lambda / (Self.n + lambda) + 1 - alpha * alpha + beta, 1 / (2 * (Self.n + lambda)))
    }
}

/// Unscented Kalman filter (`ukf`) over the same states as the EKF.
///
/// 1. Sigma points from P (Cholesky); a non-positive-definite P is reported as `.singular`.
/// 2. Predict: χᵢ⁻ = f(χᵢ, u); x⁻ = Σ Wᵐχᵢ⁻ with the circular mean atan2(ΣW sin ψ, ΣW cos ψ) for ψ;
///    P⁻ = Σ Wᶜ(χᵢ⁻ − x⁻)(χᵢ⁻ − x⁻)ᵀ + Q (ψ differences wrapped).
/// 3. Update: Zᵢ = h(χᵢ); z̄ = Σ WᵐZᵢ (circular for angle components); S = Σ Wᶜ ΔZ ΔZᵀ + R;
///    P_xz = Σ Wᶜ Δχ ΔZᵀ; K = P_xz S⁻¹; x ← x + K(z − z̄); P ← P − K S Kᵀ, symmetrised.
/// 4. χ² gate on (z − z̄)ᵀS⁻¹(z − z̄). Inequality models only when violated (as the EKF).
///
/// On a linear-Gaussian problem every step is exact, so it agrees with the KF to rounding.
public final class UnscentedKalmanFilter: FusionFilter {
    public var motion: MotionConfiguration
    public var sigma: SigmaPointParameters
    public private(set) var isInitialized = false
    public private(set) var time = 0.0
    public private(set) var mean = SIMD4<Double>.zero
    public private(set) var covariance = Mat4.identity

    public init(motion: MotionConfiguration, sigma: SigmaPointParameters = .init()) { self.motion = motion; self.sigma = sigma }

    public func initialize(mean: SIMD4<Double>, covariance: Mat4, time: Double) {
        self.mean = mean; self.covariance = covariance.symmetrized; self.time = time; isInitialized = true
    }

    /// The 2n + 1 sigma points of (x, P) (default: the filter's), or nil when P is not positive definite.
    func sigmaPoints(mean: SIMD4<Double>? = nil, covariance: Mat4? = nil) -> [SIMD4<Double>]? {
        let mean = mean ?? self.mean
        guard let l = ((4 + sigma.lambda) * (covariance ?? self.covariance)).cholesky else { return nil }
        var pts = [mean]
        pts.reserveCapacity(9)
        for i in 0..<4 { pts.append(mean + l.column(i)) }
        for i in 0..<4 { pts.append(mean - l.column(i)) }
        if let a = motion.layout.angleIndex { for i in pts.indices { pts[i][a] = Angle.wrap(pts[i][a]) } }
        return pts
    }

    /// Weighted mean of state points (circular for ψ).
    func stateMean(_ pts: [SIMD4<Double>]) -> SIMD4<Double> {
        let (w0, wi) = sigma.meanWeights
        var m = w0 * pts[0]
        for i in 1..<pts.count { m += wi * pts[i] }
        if let a = motion.layout.angleIndex {
            var s = w0 * sin(pts[0][a]), c = w0 * cos(pts[0][a])
            for i in 1..<pts.count { s += wi * sin(pts[i][a]); c += wi * cos(pts[i][a]) }
            m[a] = atan2(s, c)
        }
        return m
    }
    func stateDiff(_ a: SIMD4<Double>, _ b: SIMD4<Double>) -> SIMD4<Double> {
        var d = a - b
        if let k = motion.layout.angleIndex { d[k] = Angle.wrap(d[k]) }
        return d
    }
    func stateCovariance(_ pts: [SIMD4<Double>], mean m: SIMD4<Double>) -> Mat4 {
        let (w0, wi) = sigma.covarianceWeights
        var p = Mat4.zero
        for i in pts.indices { let d = stateDiff(pts[i], m); p = p + (i == 0 ? w0 : wi) * Mat4.outer(d, d) }
        return p
    }

    public func predict(to t: Double) {
        guard isInitialized, t > time else { if !isInitialized { time = max(time, t) }; return }
        let dt = t - time
        time = t
        switch motion.layout {
        case .step:
            covariance = (covariance + motion.step.diffusion(dt: dt)).symmetrized     // f = identity
        case .constantVelocity:
            let f = motion.constantVelocity.transition(dt: dt), q = motion.constantVelocity.noise(dt: dt)
            guard let pts = sigmaPoints() else { covariance = (covariance.congruence(f) + q).symmetrized; mean = f * mean; return }
            let moved = pts.map { f * $0 }
            mean = stateMean(moved)
            covariance = (stateCovariance(moved, mean: mean) + q).symmetrized
        }
    }

    public func predict(step: StepInput) {
        guard motion.layout == .step else { predict(to: step.time); return }
        predict(to: step.time)
        guard isInitialized else { return }
        let sm = motion.step
        let q = sm.noise(mean, step)
        guard let pts = sigmaPoints() else {
            let f = sm.jacobian(mean, step)
            mean = sm.propagate(mean, step)
            covariance = (covariance.congruence(f) + q).symmetrized
            return
        }
        let moved = pts.map { sm.propagate($0, step) }
        mean = stateMean(moved)
        covariance = (stateCovariance(moved, mean: mean) + q).symmetrized
    }

    public func update(_ m: any MeasurementModel, gate: Double?) -> UpdateRecord {
        let dim = m.dimension
        func record(_ nis: Double?, _ g: Double?, _ o: UpdateRecord.Outcome) -> UpdateRecord {
            UpdateRecord(time: m.time, source: m.source, dimension: dim, nis: nis, gate: g, outcome: o)
        }
        guard isInitialized else { return record(nil, gate, .uninitialized) }
        var gate = gate
        if let iq = m.asInequality {
            guard iq.isViolated(SIMD2(mean[0], mean[1])) else { return record(nil, nil, .notViolated) }
            gate = nil
        }
        guard let (ia, ib) = m.observedBlock.indices(in: motion.layout) else { return record(nil, gate, .unobservable) }
        guard let pts = sigmaPoints() else { return record(nil, gate, .singular) }
        let zs = pts.map { m.predict(SIMD2($0[ia], $0[ib])) }
        let (w0, wi) = sigma.meanWeights
        let (c0, ci) = sigma.covarianceWeights
        let angle = (0..<dim).map { m.isAngleComponent($0) }
        var zbar = [Double](repeating: 0, count: dim)
        for k in 0..<dim {
            if angle[k] {
                var s = 0.0, c = 0.0
                for i in zs.indices { let w = i == 0 ? w0 : wi; s += w * sin(zs[i][k]); c += w * cos(zs[i][k]) }
                zbar[k] = atan2(s, c)
            } else {
                var a = 0.0
                for i in zs.indices { a += (i == 0 ? w0 : wi) * zs[i][k] }
                zbar[k] = a
            }
        }
        var s = m.noise
        var pxz = [SIMD4<Double>](repeating: .zero, count: dim)   // columns of P_xz
        for i in pts.indices {
            let w = i == 0 ? c0 : ci
            var dz = [Double](repeating: 0, count: dim)
            for k in 0..<dim { dz[k] = angle[k] ? Angle.wrap(zs[i][k] - zbar[k]) : zs[i][k] - zbar[k] }
            let dx = stateDiff(pts[i], mean)
            for a in 0..<dim {
                pxz[a] += (w * dz[a]) * dx
                for b in 0..<dim { s[a, b] += w * dz[a] * dz[b] }                          // S = Σ Wᶜ ΔZ ΔZᵀ + R
            }
        }
        s = s.symmetrized
        guard let si = s.spdInverse else { return record(nil, gate, .singular) }
        let nu = m.innovation(zbar)
        var nis = 0.0
        for a in 0..<dim { for b in 0..<dim { nis += nu[a] * si[a, b] * nu[b] } }
        guard nis.isFinite else { return record(nil, gate, .singular) }
        if let g = gate, nis > g { return record(nis, g, .gated) }
        var k = [SIMD4<Double>](repeating: .zero, count: dim)                                  // K = P_xz S⁻¹
        for col in 0..<dim { var v = SIMD4<Double>.zero; for j in 0..<dim { v += pxz[j] * si[j, col] }; k[col] = v }
        var xn = mean
        for col in 0..<dim { xn += k[col] * nu[col] }
        if let a = motion.layout.angleIndex { xn[a] = Angle.wrap(xn[a]) }
        var pn = covariance
        for a in 0..<dim { for b in 0..<dim where s[a, b] != 0 { pn = pn - s[a, b] * Mat4.outer(k[a], k[b]) } }  // P − K S Kᵀ
        pn = pn.symmetrized
        guard pn.cholesky != nil else { return record(nis, gate, .singular) }
        mean = xn; covariance = pn
        return record(nis, gate, .accepted)
    }

    public func updateHeading(_ z: Double, variance: Double, time t: Double, gate: Double?) -> UpdateRecord {
        guard isInitialized, motion.layout == .step else {
            return UpdateRecord(time: t, source: .ukf, dimension: 1, nis: nil, gate: gate, outcome: .uninitialized)
        }
        return KalmanAlgebra.updateHeading(mean: &mean, covariance: &covariance, z: z, variance: variance, time: t,
                                           gate: gate, source: .ukf)
    }

    public func snapshot() -> FilterSnapshot { FilterSnapshot(time: time, mean: mean, covariance: covariance, initialized: isInitialized, payload: nil) }
    public func restore(_ s: FilterSnapshot) { time = s.time; mean = s.mean; covariance = s.covariance; isInitialized = s.initialized }
}
