import Foundation

/// The Weinberg step-length constant K fitted on walks with truth (`posfuse radiomap build`),
/// stored in the radio map and used by the fusion filters' PDR in place of the option's K
/// (docs/fusion.md, "Step length on real phones").
///
/// Why: the default K = 0.52 (m per (m/s²)^¼) makes steps of 0.91–1.04 m on the ms-indoor
/// phones (50 Hz accelerometers held in the hand), while the walkers' true steps are about
/// 0.65 m: the PDR walked 1.5 times the truth distance on every one of the 22 walks of the dev
/// floor. K depends on the phone, the way it is held and the detector's band, so it is learned
/// from training walks, never taken from the walk being located.
///
/// Fit. Each training walk is split at its truth samples (checkpoints) into segments; a segment
/// contributes the straight-line truth distance dᵢ between its two checkpoints and the sum rᵢ
/// of the detected steps' Weinberg roots (a_max − a_min)^¼ in (tᵢ, tᵢ₊₁]. K̂ = Σ dᵢ / Σ rᵢ over
/// every segment of every walk (the ratio estimator: the pooled distance over the pooled roots,
/// so long walks weigh by their length). The straight line between checkpoints is the shortest
/// path, so K̂ is slightly low when walkers do not go straight between them (a few per cent on
/// checkpoints 5–20 s apart). Spread: each walk's own K_w = Σ_w d / Σ_w r, and `scaleSigma` the
/// distance-weighted RMS of K_w / K̂ − 1 — how far one walk's scale is from the pooled one,
/// the prior σ of the filters' step-scale state s when this calibration applies.
public struct StepLengthCalibration: Sendable, Codable, Equatable {
    /// K̂, m per (m/s²)^¼.
    public var weinbergK: Double
    /// σ of one walk's scale about K̂ (relative): the prior σ of the filter's s.
    public var scaleSigma: Double
    public var walks: Int
    public var segments: Int
    /// Σ dᵢ, m.
    public var distance: Double

    public init(weinbergK: Double, scaleSigma: Double, walks: Int, segments: Int, distance: Double) {
        self.weinbergK = weinbergK; self.scaleSigma = scaleSigma; self.walks = walks; self.segments = segments; self.distance = distance
    }

    enum CodingKeys: String, CodingKey {
        case weinbergK = "weinberg_k", scaleSigma = "scale_sigma", walks, segments, distance = "distance_m"
    }

    /// One segment between consecutive truth samples.
    public struct Segment: Sendable, Equatable {
        /// Straight-line truth distance, m.
        public var distance: Double
        /// Σ (a_max − a_min)^¼ of the detected steps in the segment.
        public var rootSum: Double
        /// Steps in the segment.
        public var steps: Int
        /// The truth bearing of the segment minus the circular mean of the PDR's heading at its
        /// steps, rad (positive: the walker went clockwise of the PDR heading); nil when no step
        /// had a heading. A diagnostic (docs/fusion.md): the walker does not go straight between
        /// checkpoints, so short segments scatter.
        public var headingError: Double? = nil
        public init(distance: Double, rootSum: Double, steps: Int, headingError: Double? = nil) {
            self.distance = distance; self.rootSum = rootSum; self.steps = steps; self.headingError = headingError
        }
    }

    /// Fewest segments with steps a fit needs.
    public static let minimumSegments = 5
    /// Floor of `scaleSigma` (the truth segments' own straight-line error).
    public static let minimumScaleSigma = 0.03

    /// Segments of one walk: the steps the PDR detects in its IMU samples (`PedestrianDeadReckoning`
    /// with its default detector, any K: only the roots are kept) between consecutive truth
    /// samples `truth` (time, position; time order). Segments without a detected step are left
    /// out (standing, or OS step events without roots); a walk with OS step events gives none.
    public static func segments(imu: [(time: Double, sample: IMUSample)], truth: [(time: Double, position: SIMD2<Double>)]) -> [Segment] {
        guard truth.count >= 2 else { return [] }
        var pdr = PedestrianDeadReckoning()
        var steps: [(time: Double, root: Double, heading: Double?)] = []
        for (t, s) in imu {
            pdr.update(s, time: t)
            for st in pdr.takeSteps() { if let r = st.weinbergRoot { steps.append((st.time, r, st.heading)) } }
        }
        var out: [Segment] = []
        var k = 0
        for i in 1..<truth.count {
            let (t0, t1) = (truth[i - 1].time, truth[i].time)
            while k < steps.count, steps[k].time <= t0 { k += 1 }
            var sum = 0.0, n = 0, j = k, u = SIMD2<Double>(0, 0)
            while j < steps.count, steps[j].time <= t1 {
                sum += steps[j].root; n += 1
                if let h = steps[j].heading { u += Angle.unit(h) }
                j += 1
            }
            let d = truth[i].position - truth[i - 1].position
            let error = (u * u).sum() > 0 && (d * d).sum() > 0 ? Angle.wrap(atan2(d.x, d.y) - atan2(u.x, u.y)) : nil
            if n > 0 { out.append(Segment(distance: (d * d).sum().squareRoot(), rootSum: sum, steps: n, headingError: error)) }
        }
        return out
    }

    /// K̂ and its spread from the segments of each walk; nil with fewer than two walks that have
    /// segments or fewer than `minimumSegments` segments.
    public static func fit(_ walks: [[Segment]]) -> StepLengthCalibration? {
        let used = walks.filter { w in w.contains { $0.rootSum > 0 } }
        let all = used.flatMap { $0 }
        let d = all.reduce(0) { $0 + $1.distance }, r = all.reduce(0) { $0 + $1.rootSum }
        guard used.count >= 2, all.count >= minimumSegments, d > 0, r > 0 else { return nil }
        let k = d / r
        var sw = 0.0, s2 = 0.0
        for w in used {
            let dw = w.reduce(0) { $0 + $1.distance }, rw = w.reduce(0) { $0 + $1.rootSum }
            guard dw > 0, rw > 0 else { continue }
            let e = (dw / rw) / k - 1
            sw += dw; s2 += dw * e * e
        }
        let sigma = max(minimumScaleSigma, sw > 0 ? (s2 / sw).squareRoot() : 0)
        return StepLengthCalibration(weinbergK: k, scaleSigma: sigma, walks: used.count, segments: all.count, distance: d)
    }
}
