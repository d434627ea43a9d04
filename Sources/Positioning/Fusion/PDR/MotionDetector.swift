import Foundation

/// Whether a handheld phone was still over a time interval, from its accelerometer and
/// gyroscope (a zero-velocity / stance detector in the sense of Skog et al. 2010, "Zero-velocity
/// detection — an algorithm evaluation", IEEE TBME 57(11), in its simplest magnitude form).
///
/// Motion evidence at an IMU sample:
/// * accelerometer: | ‖a‖ − ā | > `accelerationThreshold` (m/s²), ā an exponential mean of ‖a‖
///   over `meanTimeConstant` s (gravity plus the sensor's bias; walking swings ‖a‖ by 1–3 m/s²
///   at the step frequency, a phone held still by < 0.2 m/s² of tremor and noise);
/// * gyroscope: ‖ω‖ > `rotationThreshold` (rad/s) — turning on the spot;
/// * a detected or OS-reported step (`noteMotion`).
/// Evidence holds for `hold` seconds (walking crosses the thresholds only in part of each
/// stride). Evidence is kept as merged intervals for `memory` seconds; because an interval
/// [first, last evidence] counts as motion until last + `hold`, the answer for a past interval
/// (a late input replayed by the filter's rewind) is the same as it was in time order.
///
/// Assumptions and limits: a slow, smooth arm movement (30 cm over 2 s peaks at 0.3 m/s²) is not
/// detected — the filter's stationary diffusion is a small random walk, not zero, and a fix it
/// gates under it is re-tested under the walking diffusion (`FusionStage`). Without IMU samples
/// covering the interval the phone is never called still.
public struct MotionDetector: Sendable {
    /// m/s² of ‖a‖ deviation that counts as motion (0.05 g, the step detector's threshold).
    public var accelerationThreshold = 0.05 * 9.80665
    /// rad/s of ‖ω‖ that counts as motion (20°/s).
    public var rotationThreshold = Angle.radians(20)
    /// s, time constant of the mean ‖a‖.
    public var meanTimeConstant = 1.0
    /// s of evidence history kept.
    public var memory = 30.0
    /// s that one piece of evidence counts as motion (also the gap that merges two intervals).
    public var hold = 0.5

    private var meanAcceleration: Double?
    private var lastAccelerationTime: Double?
    /// First and latest IMU sample times seen.
    private var firstSample: Double?
    private var lastSample: Double?
    /// Merged intervals [start, end] with motion evidence, oldest first.
    private var motion: [(start: Double, end: Double)] = []

    public init() {}

    /// One accelerometer sample's magnitude ‖a‖ (m/s²).
    public mutating func accelerometer(magnitude m: Double, time: Double) {
        see(time)
        guard let mean = meanAcceleration, let t0 = lastAccelerationTime else {
            meanAcceleration = m; lastAccelerationTime = time; return
        }
        let dt = max(0, time - t0), k = dt / (meanTimeConstant + dt)
        if abs(m - mean) > accelerationThreshold { noteMotion(at: time) }
        meanAcceleration = mean + k * (m - mean)
        lastAccelerationTime = time
    }

    public mutating func gyroscope(_ w: SIMD3<Double>, time: Double) {
        see(time)
        if (w * w).sum() > rotationThreshold * rotationThreshold { noteMotion(at: time) }
    }

    /// Records motion evidence at `time` (a step, or an IMU sample above a threshold).
    public mutating func noteMotion(at time: Double) {
        if let last = motion.last, time >= last.start, time - last.end <= hold {
            motion[motion.count - 1].end = max(last.end, time)
        } else {
            motion.append((time, time))
        }
        if let first = motion.first, first.end < time - memory { motion.removeFirst() }
    }

    /// Whether the phone was still throughout [t0, t1]: IMU samples cover the interval (up to
    /// 0.1 s before t1: the sample clock and the event clock interleave) and no motion (evidence
    /// plus its hold) overlaps it.
    public func isStill(from t0: Double, to t1: Double) -> Bool {
        guard let first = firstSample, let last = lastSample, first <= t0, last >= t1 - 0.1, t1 >= t0,
              t0 >= last - memory else { return false }
        for m in motion.reversed() {
            if m.end + hold < t0 { break }
            if m.start <= t1 { return false }
        }
        return true
    }

    /// Until when, at or before `time`, the phone was last in motion (evidence plus its hold),
    /// or nil if no evidence is remembered.
    public func lastMotion(atOrBefore time: Double) -> Double? {
        for m in motion.reversed() where m.start <= time { return min(m.end + hold, time) }
        return nil
    }

    private mutating func see(_ time: Double) {
        if firstSample == nil { firstSample = time }
        lastSample = max(lastSample ?? time, time)
    }
}
