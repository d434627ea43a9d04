import Foundation

/// Pedestrian dead reckoning (`docs/models.md` §6): steps, step lengths and heading
/// from the accelerometer, gyroscope, magnetometer or rotation vector. One tracker per phone;
/// HAPEL uses its heading and displacement, the fusion filters its steps (`takeSteps()`:
/// model length L̂ and the heading change Δψ between steps from the gyroscope alone) and its
/// absolute heading when the magnetic field is clean (`takeHeading()`).
/// Conventions: heading ψ in radians clockwise from true north, the walking direction is the
/// device +y axis (top of the screen) projected on the horizon.
///
/// Heading:
/// 1. With a rotation vector (device → ENU quaternion), ψ = atan2(E, N) of R·[0, 1, 0].
/// 2. Otherwise a two-state Kalman filter x = [ψ, b] (b: gyro bias about the vertical, rad/s)
///    over the gyroscope and the tilt-compensated magnetometer (`estimators.md` §6–7.2):
///    gravity ĝ = low-passed accelerometer (τ = 0.5 s); prediction ψ ← ψ − (ω·ĝ_up − b)·Δt
///    (heading is clockwise), F = [[1, Δt], [0, 1]], Q = diag(σ_ω²·Δt, σ_b²·Δt) with the gyro
///    angle random walk σ_ω = `gyroNoiseDensity` and bias random walk σ_b = `gyroBiasWalk`.
///    Magnetometer heading: east = m × up, north = up × east, ψ_mag = atan2(east_y, north_y) +
///    declination. Disturbance gating: a sample is rejected when the field magnitude departs
///    from its running reference by more than `magnitudeGate` (10 µT) or the dip angle
///    δ = atan2(−m·up, |m_h|) by more than `dipGate` (5°). Accepted samples are averaged
///    (circular mean) and applied once per step (never while standing: a local anomaly
///    does not average out in place), R = σ_ψ² with σ_ψ = atan(σ_d / |m_h|): σ_d is the running
///    RMS deviation of |B| and of |B|·δ from their references (the per-axis disturbance level,
///    µT, floored at `magneticNoiseFloor`), |m_h| the horizontal field.
///    Assumption: disturbances are isotropic, so the heading-relevant (horizontal, cross-field)
///    component has the σ of the two observable ones; gating removes large anomalies, the
///    per-step averaging and the bias state do the rest. 1° of heading error is ≈ 1.75 % of
///    the distance walked as cross-track error.
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
    /// Still or moving, from the accelerometer, gyroscope and steps (the filters' stationary diffusion).
    public var motion = MotionDetector()

    private var gravity: SIMD3<Double>?
    private var lastGyroTime: Double?
    private var magReference: Double?
    private var magSamples = 0
    private var dipReference: Double?
    /// Running mean square of the field deviations (magnitude, |B|·Δδ), µT².
    private var disturbanceVariance = 0.0
    private var magAccumulator = SIMD2<Double>(0, 0)   // Σ (sin, cos) of the accepted ψ_mag − ψ since the last step
    private var magAccumulated = 0
    private var lastMagUpdate: Double?
    // Heading Kalman filter [ψ, b]: covariance entries.
    private var pPsi = 0.0, pPsiBias = 0.0, pBias = 0.0
    /// Gyro bias estimate about the vertical, rad/s.
    public private(set) var gyroBias = 0.0
    /// Gyro angle random walk, rad/√s (MEMS phone gyroscopes ≈ 0.005–0.01 °/s/√Hz).
    public var gyroNoiseDensity = Angle.radians(0.01)
    /// Gyro bias random walk, rad/s/√s.
    public var gyroBiasWalk = Angle.radians(0.002)
    /// Initial gyro bias σ, rad/s (turn-on bias of phone gyroscopes ≈ 0.05–0.5 °/s).
    public var gyroBiasSigma = Angle.radians(0.2)
    /// Gate on ||B| − B_ref|, µT (`estimators.md` §6: 5–10 µT).
    public var magnitudeGate = 10.0
    /// Gate on |δ − δ_ref|, rad (`estimators.md` §6: 5°).
    public var dipGate = Angle.radians(5)
    /// Floor of the disturbance level σ_d, µT (sensor noise and residual hard iron).
    public var magneticNoiseFloor = 1.0
    /// Standard deviation of the fused heading, rad (nil before the first heading).
    public var headingSigma: Double? { heading == nil ? nil : pPsi.squareRoot() }
    private var hasRotationVector = false
    private var usesOSSteps = false
    // Step detector state: (t, |a|) history over 2.5 s, smoothed signal.
    private var accHistory = Window<(t: Double, a: Double)>()
    private var accSum = 0.0
    private var smooth = Window<(t: Double, v: Double)>()
    private var smoothSum = 0.0
    private var lastSignal = 0.0
    // Filter outputs.
    private var relativeHeading = 0.0            // gyro-integrated (or rotation vector), unwrapped, rad
    private var relativeAtLastStep: Double?
    private var steps: [Step] = []
    private var absoluteHeading: AbsoluteHeading?
    /// Σ (a_max − a_min)^{1/4} over the detected steps, for the calibration of K.
    public private(set) var weinbergRootSum = 0.0

    /// Steps since the previous call, oldest first.
    public mutating func takeSteps() -> [Step] {
        if steps.isEmpty { return [] }          // the common case (100 Hz samples): no copy of the buffer
        defer { steps.removeAll(keepingCapacity: true) }
        return steps
    }

    /// An absolute heading for the filters.
    public struct AbsoluteHeading: Sendable, Equatable {
        /// s.
        public var time: Double
        /// ψ, rad clockwise from true north.
        public var heading: Double
        /// σ_ψ² of this heading from the measured disturbance level, atan(σ_d / |m_h|)² (rad²)
        /// for a magnetometer heading; nil for the rotation vector (the OS fusion reports none).
        public var variance: Double?
    }

    /// The latest absolute heading from a clean magnetometer (or the rotation vector) since
    /// the previous call, or nil.
    public mutating func takeHeading() -> AbsoluteHeading? {
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
        case .gyroscope:
            motion.gyroscope(s.vector, time: time)
            updateGyro(s.vector, time: time)
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
        applyCompass(time: time)
        motion.noteMotion(at: time)
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
        absoluteHeading = AbsoluteHeading(time: time, heading: h, variance: nil)
    }

    private mutating func updateAccelerometer(_ a: SIMD3<Double>, time: Double) {
        // Gravity low-pass.
        if let g = gravity, let t = accHistory.last?.t {
            let dt = max(0, time - t), k = dt / (0.5 + dt)
            gravity = g + k * (a - g)
        } else { gravity = a }
        // Step detector.
        let mag = (a * a).sum().squareRoot()
        motion.accelerometer(magnitude: mag, time: time)
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
        let recent = accHistory.elements.filter { time - $0.t <= 0.7 }.map(\.a)
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
        heading = Angle.wrap(h - (rateUp - gyroBias) * dt)
        // P ← F P Fᵀ + Q, F = [[1, Δt], [0, 1]].
        pPsi += 2 * dt * pPsiBias + dt * dt * pBias + gyroNoiseDensity * gyroNoiseDensity * dt
        pPsiBias += dt * pBias
        pBias += gyroBiasWalk * gyroBiasWalk * dt
    }

    /// One Kalman update of [ψ, b] with the circular mean of the clean compass innovations since
    /// the previous step (called at each step; before the first step, once a second to
    /// refine the initial heading).
    private mutating func applyCompass(time: Double) {
        defer { magAccumulator = .zero; magAccumulated = 0 }
        guard magAccumulated > 0, let h = heading, !hasRotationVector else { return }
        lastMagUpdate = time
        // ν = circular mean of wrap(ψ_mag,i − ψ_i) over the samples (ψ_i: the gyro-propagated
        // heading at sample i), so that a turn during the step does not lag the update.
        let nu = atan2(magAccumulator.x, magAccumulator.y)
        let r = compassVariance
        let s = pPsi + r
        guard s > 0 else { return }
        let kPsi = pPsi / s, kBias = pPsiBias / s
        heading = Angle.wrap(h + kPsi * nu)
        gyroBias += kBias * nu
        // Joseph-equivalent for the scalar H = [1, 0]: P ← (I − K H) P, kept symmetric.
        let p00 = (1 - kPsi) * pPsi, p01 = (1 - kPsi) * pPsiBias, p11 = pBias - kBias * pPsiBias
        pPsi = max(p00, 0); pPsiBias = p01; pBias = max(p11, 0)
    }

    /// σ_ψ² of one compass heading: atan(σ_d / |m_h|)².
    private var compassVariance: Double {
        let sd = max(magneticNoiseFloor, disturbanceVariance.squareRoot())
        let e = atan(sd / max(1, horizontalField))
        return e * e
    }
    /// Running mean horizontal field |m_h|, µT.
    private var horizontalField = 0.0

    private mutating func updateMagnetometer(_ m: SIMD3<Double>, time: Double) {
        guard !hasRotationVector, let g = gravity else { return }
        let up = g / max(1e-9, (g * g).sum().squareRoot())
        let east0 = SIMD3(m.y * up.z - m.z * up.y, m.z * up.x - m.x * up.z, m.x * up.y - m.y * up.x)
        let en = (east0 * east0).sum().squareRoot()
        guard en > 1e-9 else { return }
        let east = east0 / en
        let north = SIMD3(up.y * east.z - up.z * east.y, up.z * east.x - up.x * east.z, up.x * east.y - up.y * east.x)
        let psiMag = Angle.wrap(atan2(east.y, north.y) + declination)
        let b = (m * m).sum().squareRoot()
        let vertical = (m * up).sum()
        let bh = max(0, b * b - vertical * vertical).squareRoot()
        let dip = atan2(-vertical, bh)
        let ref = magReference ?? b, dipRef = dipReference ?? dip
        let dB = b - ref, dDip = Angle.wrap(dip - dipRef)
        // References: the running mean of the first 1000 samples, then an exponential mean
        // with the same memory (the Earth field changes over kilometres, anomalies over metres).
        magSamples += 1
        let rate = 1 / Double(min(magSamples, 1000))
        magReference = ref + rate * dB
        dipReference = dipRef + rate * dDip
        horizontalField += rate * (bh - horizontalField)
        let dev2 = 0.5 * (dB * dB + b * b * dDip * dDip)
        disturbanceVariance += max(rate, 0.02) * (dev2 - disturbanceVariance)
        guard heading != nil else {
            heading = psiMag
            pPsi = Angle.radians(30) * Angle.radians(30); pPsiBias = 0; pBias = gyroBiasSigma * gyroBiasSigma
            return
        }
        guard abs(dB) <= magnitudeGate, abs(dDip) <= dipGate else { return }   // disturbed: gyro only
        absoluteHeading = AbsoluteHeading(time: time, heading: psiMag, variance: compassVariance)
        let innovation = Angle.wrap(psiMag - (heading ?? psiMag))
        magAccumulator += SIMD2(sin(innovation), cos(innovation)); magAccumulated += 1
        // Standing before the first step: refine the initial heading once a second.
        if stepCount == 0, time - (lastMagUpdate ?? -Double.infinity) >= 1 { applyCompass(time: time) }
    }
}

/// A first-in first-out window of samples (the step detector's 2.5 s and 0.2 s windows): removing
/// the oldest sample moves a start index instead of shifting the array (which cost a 4 KiB
/// memmove per 100 Hz accelerometer sample); the storage is compacted now and then.
private struct Window<T: Sendable>: Sendable {
    private var storage: [T] = []
    private var head = 0
    var count: Int { storage.count - head }
    var first: T? { head < storage.count ? storage[head] : nil }
    var last: T? { storage.last }
    var elements: ArraySlice<T> { storage[head...] }
    mutating func append(_ x: T) {
        if head >= 256 && head * 2 >= storage.count { storage.removeFirst(head); head = 0 }
        storage.append(x)
    }
    mutating func removeFirst() { head += 1 }
}
