/// Phone displacement between two photos from the accelerometer and attitude, with the
/// zero-velocity correction of `design/estimators.md` §5.3.
///
/// The phone is held still at both shots ⇒ v(t1) = v(t2) = 0.
/// 1. a_w = R_wb·a_b − g·ẑ (R_wb from the rotation-vector quaternion nearest before each
///    sample, device → ENU; g = 9.80665 m/s²).
/// 2. v(t) = ∫_{t1}^{t} a_w (trapezoid).
/// 3. v_c(t) = v(t) − ((t − t1)/T)·v(t2), T = t2 − t1: removes any constant accelerometer
///    bias **exactly** (v_err = b(t − t1) − (t − t1)b = 0); white noise still grows ∝ T^{3/2}.
/// 4. D = ∫ v_c dt (trapezoid).
///
/// Degenerate: fewer than 2 accelerometer samples in [t1, t2] or no attitude → nil.
public enum IMUDisplacement {
    public static let gravity = 9.80665

    /// Rotate v by the unit quaternion q = (x, y, z, w): v + 2w(q×v) + 2q×(q×v).
    @inlinable public static func rotate(_ v: SIMD3<Double>, by q: SIMD4<Double>) -> SIMD3<Double> {
        let u = SIMD3(q.x, q.y, q.z), w = q.w
        let t = 2 * cross(u, v)
        return v + w * t + cross(u, t)
    }

    @inlinable static func cross(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
    }

    /// - Parameters:
    ///   - accelerometer: (time, specific force incl. gravity, device frame, m/s²), time-sorted.
    ///   - attitude: (time, unit quaternion device → ENU), time-sorted.
    /// - Returns: displacement in ENU (m), or nil if the data do not cover the interval.
    public static func displacement(accelerometer: [(Double, SIMD3<Double>)], attitude: [(Double, SIMD4<Double>)],
                                    from t1: Double, to t2: Double) -> SIMD3<Double>? {
        guard t2 > t1, !attitude.isEmpty else { return nil }
        let samples = accelerometer.filter { $0.0 >= t1 - 1e-9 && $0.0 <= t2 + 1e-9 }
        guard samples.count >= 2 else { return nil }
        var ai = 0
        func attitudeAt(_ t: Double) -> SIMD4<Double> {
            while ai + 1 < attitude.count && attitude[ai + 1].0 <= t { ai += 1 }
            let q = attitude[ai].1
            let n = (q * q).sum().squareRoot()
            return n > 0 ? q / n : SIMD4(0, 0, 0, 1)
        }
        // World accelerations; hold the first/last sample to the interval ends.
        var ts = [t1], aw: [SIMD3<Double>] = []
        let g = SIMD3<Double>(0, 0, gravity)
        let world = samples.map { rotate($0.1, by: attitudeAt($0.0)) - g }
        aw.append(world[0])
        for (i, s) in samples.enumerated() where s.0 > t1 && s.0 < t2 { ts.append(s.0); aw.append(world[i]) }
        ts.append(t2); aw.append(world[world.count - 1])
        // v(t) by trapezoid.
        var v = [SIMD3<Double>](repeating: .zero, count: ts.count)
        for i in 1..<ts.count { v[i] = v[i - 1] + 0.5 * (ts[i] - ts[i - 1]) * (aw[i] + aw[i - 1]) }
        let total = t2 - t1, vEnd = v[v.count - 1]
        // Zero-velocity correction and position integral.
        var d = SIMD3<Double>.zero
        var prev = v[0] - 0 * vEnd
        for i in 1..<ts.count {
            let vc = v[i] - ((ts[i] - t1) / total) * vEnd
            d += 0.5 * (ts[i] - ts[i - 1]) * (vc + prev)
            prev = vc
        }
        return d.x.isFinite && d.y.isFinite && d.z.isFinite ? d : nil
    }
}
