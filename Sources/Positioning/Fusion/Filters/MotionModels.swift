import Foundation

/// Which 4-dimensional state a filter carries (`docs/models.md` §7.2).
public enum StateLayout: String, Sendable, CaseIterable {
    /// S1, step-driven: x = [E, N, ψ, s] (m, m, rad clockwise from true north, step-length scale).
    case step
    /// S2, time-driven constant velocity for traces without IMU: x = [E, N, v_E, v_N] (m, m/s).
    case constantVelocity = "cv"

    /// Index of the state component that is an angle (wrapped to (−π, π]), if any.
    public var angleIndex: Int? { self == .step ? 2 : nil }
}

/// One step of pedestrian dead reckoning as filter input.
public struct StepInput: Sendable, Equatable {
    /// Step time, trace s.
    public var time: Double
    /// Model step length L̂ (Weinberg), m.
    public var length: Double
    /// Heading change since the previous step from the gyroscope, Δψ, rad (clockwise positive).
    public var headingChange: Double
    /// A part of a stride walked between heel strikes (`StrideInterpolation`): no turn, and only
    /// the length noise; the step event that completes the stride brings the rest.
    public var isPartial: Bool
    public init(time: Double, length: Double, headingChange: Double, isPartial: Bool = false) {
        self.time = time; self.length = length; self.headingChange = headingChange; self.isPartial = isPartial
    }
}

/// S1 step-driven motion (`docs/models.md` §7.2):
///
/// Δψ is the gyroscope's heading change since the *previous* step, so the step is taken along
/// the heading after it, ψ' = ψ + Δψ (the heading is turned first, then the step is walked):
/// 1. ψ⁺ = ψ' = ψ + Δψ, E⁺ = E + s L̂ sin ψ', N⁺ = N + s L̂ cos ψ', s⁺ = s.
/// 2. F = [[1,0, sL̂cosψ', L̂sinψ'],[0,1, −sL̂sinψ', L̂cosψ'],[0,0,1,0],[0,0,0,1]].
/// 3. Q = Γ diag(σ_L², σ_Δψ²) Γᵀ + diag(0,0,0,σ_s²), Γ = [[s sinψ', 0],[s cosψ', 0],[0,1],[0,0]],
///    σ_L = `lengthSigmaFraction`·L̂ (m), σ_Δψ (rad/step), σ_s (1/step); the step's heading noise
///    enters ψ after the step and so moves the next one.
///    (Walking the step along the old ψ and turning afterwards lags the track one step behind
///    every turn: the first step after turning on the spot went the old way — office-acoustic,
///    a 160° turn at a test point, put the ekf 0.7–1.4 m off for four fixes.)
/// 4. Between steps (time-driven, Δt s): E, N random walk `positionDiffusion`·Δt (m²), ψ random
///    walk `headingDiffusion`·Δt (rad²: gyro bias), s random walk `scaleDiffusion`·Δt.
///    `positionDiffusion` covers a walker between heel strikes (the body is up to a step ahead
///    of the last step's position); while the IMU shows the phone still over the whole interval
///    (`MotionDetector`) the fusion stage uses `stationaryPositionDiffusion` instead.
public struct StepMotionModel: Sendable, Equatable {
    public var lengthSigmaFraction: Double = 0.1
    public var headingSigmaPerStep: Double = Angle.radians(1.5)
    public var scaleSigmaPerStep: Double = 0.005
    /// m²/s of position random walk between steps (phone moved without detected steps).
    public var positionDiffusion: Double = 0.05
    /// m²/s of position random walk while the phone is still (a standing person's sway and
    /// slow arm movements the detector misses: 1e-4 m²/s ≈ 1 cm after 1 s, 3 cm after 10 s).
    public var stationaryPositionDiffusion: Double = 1e-4
    /// rad²/s of heading random walk (gyro bias drift), default (0.3°)²/s.
    public var headingDiffusion: Double = Angle.radians(0.3) * Angle.radians(0.3)
    /// 1/s of step-scale random walk.
    public var scaleDiffusion: Double = 1e-6
    public init() {}

    /// x⁻ = f(x, u): turn by Δψ, then walk s·L̂.
    @inlinable public func propagate(_ x: SIMD4<Double>, _ step: StepInput) -> SIMD4<Double> {
        let d = x[3] * step.length, psi = Angle.wrap(x[2] + step.headingChange)
        return SIMD4(x[0] + d * sin(psi), x[1] + d * cos(psi), psi, x[3])
    }
    /// F = ∂f/∂x at x.
    @inlinable public func jacobian(_ x: SIMD4<Double>, _ step: StepInput) -> Mat4 {
        let l = step.length, s = x[3], sp = sin(x[2] + step.headingChange), cp = cos(x[2] + step.headingChange)
        return Mat4(r0: SIMD4(1, 0, s * l * cp, l * sp), r1: SIMD4(0, 1, -s * l * sp, l * cp),
                    r2: SIMD4(0, 0, 1, 0), r3: SIMD4(0, 0, 0, 1))
    }
    /// Q of a step; a partial advance (`StepInput.isPartial`) carries the length error only (its
    /// stride's heading and scale noise come with the step event).
    @inlinable public func noise(_ x: SIMD4<Double>, _ step: StepInput) -> Mat4 {
        let psi = x[2] + step.headingChange
        let sl = lengthSigmaFraction * step.length, sp = sin(psi), cp = cos(psi), s = x[3]
        let g0 = SIMD4(s * sp, s * cp, 0, 0)            // Γ column 0 (length error)
        var q = Mat4.outer(g0, g0)
        q = sl * sl * q
        guard !step.isPartial else { return q }
        q[2, 2] += headingSigmaPerStep * headingSigmaPerStep
        q[3, 3] += scaleSigmaPerStep * scaleSigmaPerStep
        return q
    }
    @inlinable public func diffusion(dt: Double) -> Mat4 {
        .diagonal(SIMD4(positionDiffusion * dt, positionDiffusion * dt, headingDiffusion * dt, scaleDiffusion * dt))
    }
}

/// S2 constant velocity (`docs/models.md` §7.2): x = [E, N, v_E, v_N],
/// F = [[I, Δt I],[0, I]], Q = q [[Δt³/3, Δt²/2],[Δt²/2, Δt]] ⊗ I₂ (q in m²/s³; 0.1–1 for pedestrians).
///
/// `noiseForm = .piecewiseConstantAcceleration` uses the discrete white-noise-acceleration
/// Q = q [[Δt⁴/4, Δt³/2],[Δt³/2, Δt²]] ⊗ I₂ (q in m²/s⁴, FilterPy's `Q_discrete_white_noise`),
/// which is what the benchmark compares against FilterPy and numpy.
public struct ConstantVelocityModel: Sendable, Equatable {
    public enum NoiseForm: String, Sendable { case continuous, piecewiseConstantAcceleration = "piecewise" }
    public var q: Double = 0.5
    public var noiseForm: NoiseForm = .continuous
    public init(q: Double = 0.5, noiseForm: NoiseForm = .continuous) { self.q = q; self.noiseForm = noiseForm }
    @inlinable public func transition(dt: Double) -> Mat4 {
        Mat4(r0: SIMD4(1, 0, dt, 0), r1: SIMD4(0, 1, 0, dt), r2: SIMD4(0, 0, 1, 0), r3: SIMD4(0, 0, 0, 1))
    }
    /// x⁻ = F x, P⁻ = F P Fᵀ + Q in closed form (F = [[I, Δt I],[0, I]]: rows 0, 1 gain Δt × rows
    /// 2, 3, then columns 0, 1 gain Δt × columns 2, 3); equal to the matrix products up to rounding.
    @inlinable @inline(__always) public func predict(mean x: SIMD4<Double>, covariance p: Mat4, dt: Double) -> (SIMD4<Double>, Mat4) {
        let xn = x + dt * SIMD4(x[2], x[3], 0, 0)
        let f0 = p.r0 + dt * p.r2, f1 = p.r1 + dt * p.r3                   // F P
        @inline(__always) func col(_ v: SIMD4<Double>) -> SIMD4<Double> { v + dt * SIMD4(v[2], v[3], 0, 0) }   // (F P) Fᵀ
        let q = noise(dt: dt)
        return (xn, Mat4(r0: col(f0) + q.r0, r1: col(f1) + q.r1, r2: col(p.r2) + q.r2, r3: col(p.r3) + q.r3))
    }
    @inlinable public func noise(dt: Double) -> Mat4 {
        let a: Double, b: Double, c: Double
        switch noiseForm {
        case .continuous: a = q * dt * dt * dt / 3; b = q * dt * dt / 2; c = q * dt
        case .piecewiseConstantAcceleration: a = q * dt * dt * dt * dt / 4; b = q * dt * dt * dt / 2; c = q * dt * dt
        }
        return Mat4(r0: SIMD4(a, 0, b, 0), r1: SIMD4(0, a, 0, b), r2: SIMD4(b, 0, c, 0), r3: SIMD4(0, b, 0, c))
    }
}

/// Motion configuration shared by every filter.
public struct MotionConfiguration: Sendable, Equatable {
    public var layout: StateLayout
    public var step: StepMotionModel
    public var constantVelocity: ConstantVelocityModel
    public init(layout: StateLayout, step: StepMotionModel = .init(), constantVelocity: ConstantVelocityModel = .init()) {
        self.layout = layout; self.step = step; self.constantVelocity = constantVelocity
    }

    /// Time-driven transition over Δt: (F, Q). For `step` this is the identity plus diffusion.
    @inlinable public func timeTransition(dt: Double) -> (f: Mat4, q: Mat4) {
        switch layout {
        case .constantVelocity: return (constantVelocity.transition(dt: dt), constantVelocity.noise(dt: dt))
        case .step: return (.identity, step.diffusion(dt: dt))
        }
    }
}
