import Foundation

/// Phone displacement between two photos from the accelerometer and attitude, with the
/// zero-velocity correction of `docs/models.md` §5.3.
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
        var ai = 0
        func attitudeAt(_ t: Double) -> SIMD4<Double> {
            while ai + 1 < attitude.count && attitude[ai + 1].0 <= t { ai += 1 }
            let q = attitude[ai].1
            let n = (q * q).sum().squareRoot()
            return n > 0 ? q / n : SIMD4(0, 0, 0, 1)
        }
        let g = SIMD3<Double>(0, 0, gravity)
        let world = accelerometer.filter { $0.0 >= t1 - 1e-9 && $0.0 <= t2 + 1e-9 }
            .map { ($0.0, rotate($0.1, by: attitudeAt($0.0)) - g) }
        return displacement(worldAcceleration: world, from: t1, to: t2)
    }

    /// Strapdown variant without an attitude sensor: the initial attitude by TRIAD from the
    /// mean accelerometer (up = f/|f|) and magnetometer (E = m × up, N = up × E) over the
    /// still window [t1 − `window`, t1], rotated from magnetic to true north by the
    /// declination; the gyroscope bias is the mean gyro over the same window; the attitude is
    /// propagated with R ← R·Exp([(ω − b)Δt]×) (Rodrigues). Gravity is taken as |f̄| of the
    /// still window, so a constant accelerometer bias stays constant in the world frame while
    /// the attitude is unchanged and the zero-velocity correction removes it.
    public static func displacement(accelerometer: [(Double, SIMD3<Double>)], gyroscope: [(Double, SIMD3<Double>)],
                                    magnetometer: [(Double, SIMD3<Double>)], declinationDegrees: Double,
                                    from t1: Double, to t2: Double, window: Double = 0.5) -> SIMD3<Double>? {
        guard t2 > t1 else { return nil }
        func mean(_ xs: [(Double, SIMD3<Double>)], _ a: Double, _ b: Double) -> SIMD3<Double>? {
            let w = xs.filter { $0.0 >= a && $0.0 <= b }
            guard !w.isEmpty else { return nil }
            return w.reduce(SIMD3<Double>.zero) { $0 + $1.1 } / Double(w.count)
        }
        guard let f0 = mean(accelerometer, t1 - window, t1 + 1e-9) ?? mean(accelerometer, t1, t1 + window),
              let m0 = mean(magnetometer, t1 - window, t1 + 1e-9) ?? mean(magnetometer, t1, t1 + window) else { return nil }
        let bias = mean(gyroscope, t1 - window, t1 + 1e-9) ?? .zero
        let gmag = (f0 * f0).sum().squareRoot()
        guard gmag > 1 else { return nil }
        let up = f0 / gmag
        var east = cross(m0, up)
        let en = (east * east).sum().squareRoot()
        guard en > 1e-9 else { return nil }
        east /= en
        let north = cross(up, east)
        // Rows of R (body → magnetic ENU) are the world axes in body coordinates; then rotate
        // azimuths by the declination D: (x, y) → (x cos D + y sin D, −x sin D + y cos D).
        let d = declinationDegrees * .pi / 180, cd = cos(d), sd = sin(d)
        var r0 = east * cd + north * sd, r1 = -east * sd + north * cd, r2 = up
        // Zero-order hold of the bias-corrected rate, advanced through gyro and acc times.
        var rate = (gyroscope.last { $0.0 <= t1 }?.1 ?? bias) - bias
        var gyro = gyroscope.filter { $0.0 > t1 && $0.0 <= t2 + 1e-9 }[...]
        var lastT = t1
        var world: [(Double, SIMD3<Double>)] = []
        for (t, f) in accelerometer where t >= t1 - 1e-9 && t <= t2 + 1e-9 {
            while let g = gyro.first, g.0 <= t {
                rotateRows(&r0, &r1, &r2, by: rate * (g.0 - lastT))
                rate = g.1 - bias; lastT = g.0
                gyro = gyro.dropFirst()
            }
            if t > lastT { rotateRows(&r0, &r1, &r2, by: rate * (t - lastT)); lastT = t }
            let aw = SIMD3((r0 * f).sum(), (r1 * f).sum(), (r2 * f).sum()) - SIMD3(0, 0, gmag)
            world.append((t, aw))
        }
        return displacement(worldAcceleration: world, from: t1, to: t2)
    }

    /// R ← R·Exp([θ]×) for R given by its rows.
    static func rotateRows(_ r0: inout SIMD3<Double>, _ r1: inout SIMD3<Double>, _ r2: inout SIMD3<Double>, by th: SIMD3<Double>) {
        let a = (th * th).sum().squareRoot()
        guard a > 1e-15 else { return }
        let k = th / a, c = cos(a), s = sin(a)
        // Rodrigues: E = I + s[k]× + (1 − c)[k]×². For a row r: r[k]× = −(k × r) = r × k,
        // so r·E = r + s (r × k) + (1 − c)((r × k) × k).
        func apply(_ r: SIMD3<Double>) -> SIMD3<Double> {
            let rk = cross(r, k)
            return r + s * rk + (1 - c) * cross(rk, k)
        }
        r0 = apply(r0); r1 = apply(r1); r2 = apply(r2)
    }

    /// Zero-velocity-corrected double integration of world accelerations (gravity removed)
    /// sampled in [t1, t2]; the first/last samples are held to the interval ends.
    public static func displacement(worldAcceleration samples: [(Double, SIMD3<Double>)], from t1: Double, to t2: Double) -> SIMD3<Double>? {
        guard t2 > t1, samples.count >= 2 else { return nil }
        var ts = [t1], aw = [samples[0].1]
        for s in samples where s.0 > t1 && s.0 < t2 { ts.append(s.0); aw.append(s.1) }
        ts.append(t2); aw.append(samples[samples.count - 1].1)
        // v(t) by trapezoid.
        var v = [SIMD3<Double>](repeating: .zero, count: ts.count)
        for i in 1..<ts.count { v[i] = v[i - 1] + 0.5 * (ts[i] - ts[i - 1]) * (aw[i] + aw[i - 1]) }
        let total = t2 - t1, vEnd = v[v.count - 1]
        // Zero-velocity correction v_c = v − ((t − t1)/T)·v(t2), then D = ∫ v_c dt.
        var d = SIMD3<Double>.zero
        var prev = v[0]
        for i in 1..<ts.count {
            let vc = v[i] - ((ts[i] - t1) / total) * vEnd
            d += 0.5 * (ts[i] - ts[i - 1]) * (vc + prev)
            prev = vc
        }
        return d.x.isFinite && d.y.isFinite && d.z.isFinite ? d : nil
    }
}
