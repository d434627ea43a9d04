import Foundation

/// Pedestrian dead reckoning (`design/estimators.md` §6): steps, step lengths and heading
/// from the accelerometer, gyroscope, magnetometer or rotation vector. One tracker per phone;
/// HAPEL uses its heading and displacement, the fusion filters its steps (`takeSteps()`:
/// model length L̂ and the heading change Δψ between steps from the gyroscope alone) and its
/// absolute heading when the magnetic field is clean (`takeHeading()`).
/// Conventions: heading ψ in radians clockwise from true north, the walking direction is the
/// device +y axis (top of the screen) projected on the horizon.
///
/// Heading:
/// 1. With a rotation vector (device → ENU quaternion), ψ = atan2(E, N) of R·[0, 1, 0].
/// 2. Otherwise a complementary filter: gravity ĝ = low-passed accelerometer (τ = 0.5 s);
///    ψ̇ = −ω·ĝ_up (gyro rate about the vertical; heading is clockwise);
///    magnetometer heading from tilt compensation east = m × up, north = up × east,
///    ψ_mag = atan2(east_y, north_y) + declination; ψ ← ψ + (Δt/τ_m)·wrap(ψ_mag − ψ) with
///    τ_m = 5 s, gated when |B| departs more than 10 µT from its running median value.
///
/// Steps (Navigine pedometer defaults): |a| minus its 2.5 s running mean, smoothed over
/// 0.2 s; a step when it crosses +0.05 g upwards ≥ 0.3 s after the previous one. Step length
/// Weinberg L = K·(a_max − a_min)^{1/4} over the last 0.7 s, K = 0.52, clamped to [0.3, 1.2] m.
/// OS step events (with or without a length) take precedence once one has been seen.
/// Each step adds L·u(ψ) to the displacement.
///
/// Filter inputs: Δψ of a step is the change of the gyro-integrated heading since the previous
/// step (or of the rotation-vector heading, unwrapped), so that it is independent of the
/// magnetometer corrections that `takeHeading()` reports as absolute measurements.
/// Per-user calibration of K: `PedestrianDeadReckoning.calibratedWeinbergK(trueDistance:)`.
public struct PedestrianDeadReckoning: Sendable {
    /// One detected (or OS-reported) step, for the filters.
    public struct Step: Sendable, Equatable {
        public var time: Double
        /// Model step length L̂, m.
        public var length: Double
        /// Heading change since the previous step, gyroscope only, rad (clockwise positive).
        public var headingChange: Double
        /// Fused heading at the step (gyro + magnetometer), rad; nil before the first heading.
        public var heading: Double?
        /// Weinberg (a_max − a_min)^{1/4} of the step (m/s²)^{1/4}; nil for OS steps.
        public var weinbergRoot: Double?
    }
    public var declination: Double
    public private(set) var heading: Double?
    public private(set) var lastStepTime: Double?
    /// Displacement since the last `takeDisplacement()`, ENU m.
    public private(set) var displacement = SIMD2<Double>(0, 0)
    public private(set) var stepCount = 0
    public var weinbergK = 0.52
    public var defaultStepLength = 0.7

    private var gravity: SIMD3<Double>?
    private var lastGyroTime: Double?
    private var lastMagTime: Double?
    private var magReference: Double?
    private var hasRotationVector = false
    private var usesOSSteps = false
    // Step detector state: (t, |a|) history over 2.5 s, smoothed signal.
    private var accHistory: [(t: Double, a: Double)] = []
    private var accSum = 0.0
    private var smooth: [(t: Double, v: Double)] = []
    private var smoothSum = 0.0
    private var lastSignal = 0.0
    // Filter outputs.
    private var relativeHeading = 0.0            // gyro-integrated (or rotation vector), unwrapped, rad
    private var relativeAtLastStep: Double?
    private var steps: [Step] = []
    private var absoluteHeading: (time: Double, heading: Double)?
    /// Σ (a_max − a_min)^{1/4} over the detected steps, for the calibration of K.
    public private(set) var weinbergRootSum = 0.0

    /// Steps since the previous call, oldest first.
    public mutating func takeSteps() -> [Step] {
        defer { steps.removeAll(keepingCapacity: true) }
        return steps
    }

    /// The latest absolute heading from a clean magnetometer (or the rotation vector) since
    /// the previous call: (time s, ψ rad clockwise from true north), or nil.
    public mutating func takeHeading() -> (time: Double, heading: Double)? {
        defer { absoluteHeading = nil }
        return absoluteHeading
    }

    /// Per-user Weinberg constant K = D_true / Σₖ (a_max − a_min)ₖ^{1/4} (`estimators.md` §6)
    /// from a walked distance with known length (m), or nil before any detected step.
    public func calibratedWeinbergK(trueDistance: Double) -> Double? {
        weinbergRootSum > 0 && trueDistance > 0 ? trueDistance / weinbergRootSum : nil
    }

    public init(declinationDegrees: Double = 0) { declination = Angle.radians(declinationDegrees) }

    /// Whether a step happened within `window` seconds before `time`.
    public func isMoving(at time: Double, window: Double = 2) -> Bool {
        guard let s = lastStepTime else { return false }
        return time - s <= window && time >= s - 1e-9
    }

    /// Returns and resets the displacement accumulated since the previous call.
    public mutating func takeDisplacement() -> SIMD2<Double> {
        defer { displacement = .zero }
        return displacement
    }

    public mutating func update(_ s: IMUSample, time: Double) {
        switch s.kind {
        case .rotationVector: updateRotationVector(s, time: time)
        case .accelerometer: updateAccelerometer(s.vector, time: time)
        case .gyroscope: updateGyro(s.vector, time: time)
        case .magnetometer: updateMagnetometer(s.vector, time: time)
        case .barometer: break
        }
    }

    /// An OS step event.
    public mutating func step(_ e: StepEvent, time: Double) {
        usesOSSteps = true
        addStep(length: e.length ?? defaultStepLength, time: time, weinbergRoot: nil)
    }

    private mutating func addStep(length: Double, time: Double, weinbergRoot: Double?) {
        lastStepTime = time
        stepCount += 1
        let dpsi = relativeAtLastStep.map { Angle.wrap(relativeHeading - $0) } ?? 0
        relativeAtLastStep = relativeHeading
        if let r = weinbergRoot { weinbergRootSum += r }
        steps.append(Step(time: time, length: length, headingChange: dpsi, heading: heading, weinbergRoot: weinbergRoot))
        guard let h = heading else { return }
        displacement += length * Angle.unit(h)
    }

    private mutating func updateRotationVector(_ s: IMUSample, time: Double) {
        hasRotationVector = true
        // R·[0,1,0] for unit quaternion q = (x, y, z, w): second column of R.
        let x = s.x, y = s.y, z = s.z, w = s.w
        let e = 2 * (x * y - z * w), n = 1 - 2 * (x * x + z * z)
        guard abs(e) + abs(n) > 1e-9 else { return }
        let h = Angle.wrap(atan2(e, n) + declination)
        relativeHeading += Angle.wrap(h - (heading ?? h))
        heading = h
        absoluteHeading = (time, h)
    }

    private mutating func updateAccelerometer(_ a: SIMD3<Double>, time: Double) {
        // Gravity low-pass.
        if let g = gravity, let t = accHistory.last?.t {
            let dt = max(0, time - t), k = dt / (0.5 + dt)
            gravity = g + k * (a - g)
        } else { gravity = a }
        // Step detector.
        let mag = (a * a).sum().squareRoot()
        accHistory.append((time, mag)); accSum += mag
        while let f = accHistory.first, time - f.t > 2.5 { accSum -= f.a; accHistory.removeFirst() }
        let centered = mag - accSum / Double(accHistory.count)
        smooth.append((time, centered)); smoothSum += centered
        while let f = smooth.first, time - f.t > 0.2 { smoothSum -= f.v; smooth.removeFirst() }
        let sig = smoothSum / Double(smooth.count)
        defer { lastSignal = sig }
        let threshold = 0.05 * 9.80665
        guard !usesOSSteps, lastSignal < threshold, sig >= threshold else { return }
        if let l = lastStepTime, time - l < 0.3 { return }
        let recent = accHistory.filter { time - $0.t <= 0.7 }.map(\.a)
        let span = (recent.max() ?? 0) - (recent.min() ?? 0)
        let root = pow(span, 0.25)
        let len = span > 0 ? min(1.2, max(0.3, weinbergK * root)) : defaultStepLength
        addStep(length: len, time: time, weinbergRoot: span > 0 ? root : nil)
    }

    private mutating func updateGyro(_ w: SIMD3<Double>, time: Double) {
        defer { lastGyroTime = time }
        guard !hasRotationVector, let g = gravity, let t0 = lastGyroTime else { return }
        let gn = (g * g).sum().squareRoot()
        guard gn > 1e-6 else { return }
        let dt = time - t0
        guard dt > 0, dt < 1 else { return }
        let rateUp = (w * g).sum() / gn   // ω about the up axis (counter-clockwise positive)
        relativeHeading -= rateUp * dt
        guard let h = heading else { return }
        heading = Angle.wrap(h - rateUp * dt)
    }

    private mutating func updateMagnetometer(_ m: SIMD3<Double>, time: Double) {
        defer { lastMagTime = time }
        guard !hasRotationVector, let g = gravity else { return }
        let up = g / max(1e-9, (g * g).sum().squareRoot())
        let east0 = SIMD3(m.y * up.z - m.z * up.y, m.z * up.x - m.x * up.z, m.x * up.y - m.y * up.x)
        let en = (east0 * east0).sum().squareRoot()
        guard en > 1e-9 else { return }
        let east = east0 / en
        let north = SIMD3(up.y * east.z - up.z * east.y, up.z * east.x - up.x * east.z, up.x * east.y - up.y * east.x)
        let psiMag = Angle.wrap(atan2(east.y, north.y) + declination)
        let b = (m * m).sum().squareRoot()
        let ref = magReference ?? b
        magReference = ref + 0.01 * (b - ref)
        guard let h = heading else { heading = psiMag; return }
        guard abs(b - ref) <= 10 else { return }   // magnetically disturbed: gyro only
        absoluteHeading = (time, psiMag)
        let dt = lastMagTime.map { max(0, min(1, time - $0)) } ?? 0
        heading = Angle.wrap(h + dt / 5 * Angle.wrap(psiMag - h))
    }
}
