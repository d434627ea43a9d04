import Foundation

/// Extended Kalman filter (`ekf`) over the S1 step state [E, N, ψ, s] or the S2 constant-velocity
/// state [E, N, v_E, v_N] (`docs/models.md` §7.2–7.3).
///
/// * Predict: x ← f(x, u), P ← F P Fᵀ + Q (F the Jacobian of f; exact for CV).
/// * Update with any `MeasurementModel`: H = [∂h/∂p 0] (the model's 2-column Jacobian embedded in
///   the E, N columns; for a velocity model in the v_E, v_N columns, `stateJacobian`), ν = z − h(x) (angles wrapped by the model), S = HPHᵀ + R, χ² gate on
///   νᵀS⁻¹ν, Joseph-form covariance and symmetrisation (`KalmanAlgebra`).
/// * Inequality measurements (saturated TA, hidden APs) are applied as ordinary updates only
///   when the current estimate violates them (§1.3, §3.2 step 6).
/// * Position fixes (`PositionMeasurement`) take an allocation-free closed-form path.
///
/// Degenerate cases: a singular S leaves the state untouched and reports `.singular`.
public final class ExtendedKalmanFilter: FusionFilter {
    public var motion: MotionConfiguration
    // The filter state is accessed only from this class's own methods, never across an
    // inout call that could overlap; the per-access dynamic exclusivity check cost 37% of a
    // CV predict+update step (perf), so it is off for these four properties.
    @exclusivity(unchecked) public private(set) var isInitialized = false
    @exclusivity(unchecked) public private(set) var time = 0.0
    @exclusivity(unchecked) public private(set) var mean = SIMD4<Double>.zero
    @exclusivity(unchecked) public private(set) var covariance = Mat4.identity
    /// Optional hook called after every prediction with (F, x⁻, P⁻) — used by the RTS smoother.
    public var onPredict: ((Mat4, SIMD4<Double>, Mat4, Double) -> Void)?

    public init(motion: MotionConfiguration) { self.motion = motion }

    /// Back to the state `init(motion:)` leaves (no estimate, no hook): `FusionStage` reuses a
    /// reset track's filter for the next trace instead of allocating one (`FusionTrack.recycle`).
    func restart(motion: MotionConfiguration) {
        self.motion = motion
        isInitialized = false; time = 0; mean = .zero; covariance = .identity; onPredict = nil
    }

    public func initialize(mean: SIMD4<Double>, covariance: Mat4, time: Double) {
        self.mean = mean; self.covariance = covariance.symmetrized; self.time = time; isInitialized = true
    }

    public func predict(to t: Double) {
        guard isInitialized, t > time else { if !isInitialized { time = max(time, t) }; return }
        let dt = t - time
        if motion.layout == .constantVelocity {
            let cv = motion.constantVelocity
            let (x, p) = cv.predict(mean: mean, covariance: covariance, dt: dt)   // closed form of the lines below
            mean = x; covariance = p.symmetrized
            time = t
            if let hook = onPredict { hook(cv.transition(dt: dt), x, covariance, t) }
            return
        }
        let (f, q) = motion.timeTransition(dt: dt)
        mean = f * mean                                                     // x⁻ = F x
        covariance = (covariance.congruence(f) + q).symmetrized            // P⁻ = F P Fᵀ + Q
        time = t
        onPredict?(f, mean, covariance, t)
    }

    public func predict(step: StepInput) {
        guard motion.layout == .step else { predict(to: step.time); return }
        predict(to: step.time)
        guard isInitialized else { return }
        let sm = motion.step
        let f = sm.jacobian(mean, step)
        let q = sm.noise(mean, step)
        mean = sm.propagate(mean, step)                                                       // x⁻ = f(x, u)
        covariance = (covariance.congruence(f) + q).symmetrized                               // P⁻ = F P Fᵀ + Q
        onPredict?(f, mean, covariance, time)
    }

    /// The fast path for a plain position fix z with covariance R; returns the NIS, or nil if
    /// S is singular, or −NIS when gated. Allocation-free (benchmarked).
    @discardableResult
    public func updatePosition(_ z: SIMD2<Double>, ree: Double, ren: Double, rnn: Double, gate: Double? = nil) -> Double? {
        // Local copies: inout access to a class's stored properties costs a dynamic
        // exclusivity check per access (measured: a third of the step time).
        var x = mean, p = covariance
        let nis = KalmanAlgebra.updatePosition(mean: &x, covariance: &p, z: z, ree: ree, ren: ren, rnn: rnn, gate: gate)
        mean = x; covariance = p
        return nis
    }

    /// Constant-velocity predict by Δt with a fixed (F, Q): the benchmark's predict.
    public func predict(f: Mat4, q: Mat4, dt: Double) {
        mean = f * mean
        covariance = (covariance.congruence(f) + q).symmetrized
        time += dt
    }

    public func update(_ m: any MeasurementModel, gate: Double?) -> UpdateRecord {
        guard isInitialized else { return UpdateRecord(time: m.time, source: m.source, dimension: m.dimension, nis: nil, gate: gate, outcome: .uninitialized) }
        // A position fix of the position block (not an inequality): its argument and H = [I₂ 0] exist
        // in every layout, so the checks below would pass and their results go unused; the closed
        // form straight away (building H, an array per update, cost ≈ 1.4k instructions).
        if let pm = m.asPosition, m.observedBlock == .position, m.asInequality == nil { return updatePosition(pm, gate: gate) }
        let dim = m.dimension
        guard let p = m.argument(mean, layout: motion.layout), let h = m.stateJacobian(mean, layout: motion.layout) else {
            return UpdateRecord(time: m.time, source: m.source, dimension: dim, nis: nil, gate: gate, outcome: .unobservable)
        }
        var gate = gate
        if let iq = m.asInequality {
            guard iq.isViolated(p) else { return UpdateRecord(time: m.time, source: m.source, dimension: dim, nis: nil, gate: nil, outcome: .notViolated) }
            gate = nil
        }
        if let pm = m.asPosition { return updatePosition(pm, gate: gate) }
        let nu = m.innovation(m.predict(p))
        switch KalmanAlgebra.update(mean: mean, covariance: covariance, h: h, innovation: nu, noise: m.noise,
                                    gate: gate, angleIndex: motion.layout.angleIndex) {
        case .success(let r):
            mean = r.mean; covariance = r.covariance
            return UpdateRecord(time: m.time, source: m.source, dimension: dim, nis: r.nis, gate: gate, outcome: .accepted)
        case .failure(.gated(let d)):
            return UpdateRecord(time: m.time, source: m.source, dimension: dim, nis: d, gate: gate, outcome: .gated)
        case .failure(.singular):
            return UpdateRecord(time: m.time, source: m.source, dimension: dim, nis: nil, gate: gate, outcome: .singular)
        }
    }

    /// The closed-form update of a position fix (`KalmanAlgebra.updatePosition`).
    private func updatePosition(_ pm: PositionMeasurement, gate: Double?) -> UpdateRecord {
        let r = pm.covariance
        let out = KalmanAlgebra.updatePosition(mean: &mean, covariance: &covariance, z: SIMD2(pm.z[0], pm.z[1]),
                                               ree: r.ee, ren: r.en, rnn: r.nn, gate: gate)
        guard let nis = out else { return UpdateRecord(time: pm.time, source: pm.source, dimension: 2, nis: nil, gate: gate, outcome: .singular) }
        if let a = motion.layout.angleIndex { mean[a] = Angle.wrap(mean[a]) }
        return UpdateRecord(time: pm.time, source: pm.source, dimension: 2, nis: abs(nis), gate: gate, outcome: nis < 0 ? .gated : .accepted)
    }

    public func updateHeading(_ z: Double, variance: Double, time t: Double, gate: Double?) -> UpdateRecord {
        guard isInitialized, motion.layout == .step else {
            return UpdateRecord(time: t, source: .ekf, dimension: 1, nis: nil, gate: gate, outcome: .uninitialized)
        }
        return KalmanAlgebra.updateHeading(mean: &mean, covariance: &covariance, z: z, variance: variance, time: t,
                                           gate: gate, source: .ekf)
    }

    public func snapshot() -> FilterSnapshot { FilterSnapshot(time: time, mean: mean, covariance: covariance, initialized: isInitialized, payload: nil) }
    public func restore(_ s: FilterSnapshot) { time = s.time; mean = s.mean; covariance = s.covariance; isInitialized = s.initialized }
}
