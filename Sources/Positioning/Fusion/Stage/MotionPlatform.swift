import Foundation

/// The platform a phone rides on, which sets the constant-velocity filter's process noise q
/// (S2, no accelerometer): a pedestrian's velocity changes slowly (`cv_q_m2_per_s3`, 0.5 m²/s³),
/// a car's in bursts (`cv_vehicle_q_m2_per_s3`, 8 m²/s³). Option `platform`: `pedestrian`,
/// `vehicle`, or `auto` (the default): pedestrian until the phone's GNSS fixes show a sustained
/// speed no walker reaches (`PlatformEvidence`), then vehicle for the rest of the track.
///
/// Why a vehicle q: phone chipsets already filter their fixes with Doppler, so a causal
/// constant-velocity filter that believes in a smooth velocity (q = 0.5) only adds lag on a
/// drive. Measured (docs/fusion.md "Motion model per platform"): on the GSDC drives, leave-one-
/// recording-out, the ekf's mean/P95 go from 0.5–2 % worse than the phone's own fixes to level.
/// The value 8 m²/s³ is set from the vehicle's dynamics, not fitted to a drive: with white-noise
/// acceleration q, the velocity random walk over Δt = 1 s has σ_v = √(qΔt) ≈ 2.8 m/s, the order of
/// a car's braking or of the centripetal 2–6 m/s² of a turn (SPAN truth of the GSDC drive:
/// acceleration RMS 0.5 m/s², yaw rate up to 35°/s at 5–15 m/s; Bar-Shalom, Li & Kirubarajan 2001,
/// §6.2.2: q of the order of the maximum acceleration squared times the sampling interval).
public enum MotionPlatform: String, Sendable, CaseIterable { case auto, pedestrian, vehicle }

/// Evidence that a phone is in a vehicle, from its own GNSS fixes (never from truth; the stage
/// gives it the fixes its filter accepted, so a gated outlier never counts): the
/// displacement between two fixes at least `baseline` seconds apart, less three standard
/// deviations of the two fixes' errors (σ² = tr R of each, R the covariance the filter uses),
/// is a lower bound on the distance travelled; divided by the time it bounds the mean speed
/// from below. When that bound exceeds `threshold` (5 m/s = 18 km/h: above walking, 1–2 m/s, and
/// jogging, about 3 m/s) in `windows` consecutive windows and over their whole span, the phone
/// is a vehicle from then on (a latch: a car waiting at a light stays a car). A single outlier
/// fix can make the window it ends and the one it starts fast, but not the span over both, so
/// it never decides alone. A gap longer than three baselines starts the evidence again.
public struct PlatformEvidence: Sendable, Equatable {
    public var threshold: Double
    public var baseline: Double
    public var windows: Int
    public private(set) var isVehicle = false
    /// The accepted fixes of the last `windows` × 3 × `baseline` seconds (oldest first), without a
    /// gap over 3 × `baseline`: the windows are chained back from each new fix.
    private var recent: [Point] = []

    struct Point: Sendable, Equatable { var time: Double; var position: SIMD2<Double>; var variance: Double }

    public init(threshold: Double = 5, baseline: Double = 10, windows: Int = 2) {
        self.threshold = threshold; self.baseline = baseline; self.windows = max(1, windows)
    }

    /// The lower bound on the mean speed between two fixes (m/s); nil when Δt ≤ 0.
    public static func speedLowerBound(from a: SIMD2<Double>, varianceA: Double, to b: SIMD2<Double>, varianceB: Double, dt: Double) -> Double? {
        guard dt > 0 else { return nil }
        let d = ((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y)).squareRoot()
        return (d - 3 * (varianceA + varianceB).squareRoot()) / dt
    }

    private func fast(_ a: Point, _ b: Point) -> Bool {
        (Self.speedLowerBound(from: a.position, varianceA: a.variance, to: b.position, varianceB: b.variance, dt: b.time - a.time) ?? 0) > threshold
    }

    /// Takes one GNSS fix (time, position, σ² = trace of its R). Returns true when this fix made
    /// the phone a vehicle.
    ///
    /// The windows are chained back from every fix (session 22): from the fix, the latest earlier
    /// fix at least `baseline` before it, from that one the same, `windows` times; each window and
    /// the span must be fast. (Before, the window ends were a fixed chain, each end the first fix
    /// `baseline` after the last: the decision then waited for the grid, and which fixes the grid
    /// fell on moved it. On the GSDC Pixel4 drive, not fusing 18 held fixes before the car moved
    /// shifted the grid and the decision by 26 s, into the car's first acceleration: 3–5 m of
    /// pedestrian-q lag; docs/fusion.md, session 22.) The statistic and its outlier argument are
    /// unchanged: one outlier can make the windows it bounds fast, never the span over both.
    @discardableResult
    public mutating func observe(time: Double, position: SIMD2<Double>, variance: Double) -> Bool {
        guard !isVehicle, time.isFinite, position.x.isFinite, position.y.isFinite, variance.isFinite, variance >= 0 else { return false }
        let p = Point(time: time, position: position, variance: variance)
        if let last = recent.last, time <= last.time || time - last.time > 3 * baseline { recent.removeAll(keepingCapacity: true) }
        recent.append(p)
        let horizon = time - Double(windows) * 3 * baseline
        if let k = recent.firstIndex(where: { $0.time >= horizon }), k > 0 { recent.removeFirst(k) }
        var end = p
        for _ in 0..<windows {
            guard let start = recent.last(where: { end.time - $0.time >= baseline }),
                  end.time - start.time <= 3 * baseline, fast(start, end) else { return false }
            end = start
        }
        guard fast(end, p) else { return false }
        isVehicle = true
        return true
    }
}
