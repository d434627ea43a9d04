import Foundation

/// Walks the S1 state between heel strikes, so that the step-driven filter's position is the
/// walker's position at any time and not the position at the last detected step.
///
/// A step event stands for a whole stride (L̂ metres since the previous step), but a fix that
/// arrives half-way through the next stride finds the walker ≈ L̂/2 ahead of the last step's
/// position; the filter corrects to it, and the next step then adds a full L̂ again — the track
/// overshoots by the part of the stride walked before the fix (office-acoustic: 0.3–0.5 m at
/// step outputs against 1 cm TDoA fixes). This is S3 of `docs/models.md` §7.2 in
/// discrete form, without new states:
/// 1. After step k at t_k (period T_k = t_k − t_{k−1} ≤ `maxPeriod`, length L̂_k), the walker is
///    assumed to go on at v = L̂_k / T_k along ψ: before a prediction to t the filter is moved by
///    a partial step of length v·(min(t, t_k + T_k, t_motion) − t_k) − (already advanced),
///    t_motion = the last IMU motion evidence (`MotionDetector`): no advance once the phone is
///    still, never more than one stride.
/// 2. Step k+1 then brings only L̂_{k+1} − (advanced), so a stride still adds L̂_{k+1} in all.
/// 3. After a gap longer than `maxPeriod` (a stop) the next step starts afresh (no advance
///    until a stride period is known again).
/// The partial steps carry the length noise σ_L = 0.1·length only (`StepInput.isPartial`).
struct StrideInterpolation: Sendable, Equatable {
    /// s: a longer gap between steps is a stop.
    var maxPeriod = 1.5
    private(set) var lastStep: Double?
    private(set) var period: Double?
    private(set) var speed: Double?
    private(set) var advanced = 0.0

    /// The filter input for a step event: the stride's length minus what was already walked.
    mutating func step(_ s: StepInput) -> StepInput {
        var out = s
        if let t0 = lastStep, s.time > t0, s.time - t0 <= maxPeriod {
            out.length = s.length - advanced
            period = s.time - t0
            speed = s.length / (s.time - t0)
        } else {
            period = nil; speed = nil
        }
        advanced = 0
        lastStep = s.time
        return out
    }

    /// The partial step that brings the walker to time t (nil when none is due).
    mutating func advance(to t: Double, lastMotion: Double?) -> StepInput? {
        guard let t0 = lastStep, let T = period, let v = speed, let moving = lastMotion, moving > t0 else { return nil }
        let target = v * (min(t, t0 + T, moving) - t0)
        let d = target - advanced
        guard d > 1e-6 else { return nil }
        advanced = target
        return StepInput(time: t, length: d, headingChange: 0, isPartial: true)
    }
}
