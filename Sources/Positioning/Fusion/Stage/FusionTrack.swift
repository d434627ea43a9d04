import Foundation

/// Per-source update counters of a fusion filter (`docs/models.md` §7.5–7.6).
public struct SourceCounters: Sendable, Equatable {
    public var accepted = 0
    public var gated = 0
    public var singular = 0
    /// Fixes of this source that (re)started the filter.
    public var initializations = 0
    /// Fixes of this source not fused because a fix that contains them came with them
    /// (`FusionStage.Settings.superseding`).
    public var superseded = 0
    /// Fixes of this source that entered inside another source's update: the covariance
    /// intersection of one scan's WiFi fixes (`FusionStage.Settings.scanCombined`).
    public var combined = 0
    /// GNSS fixes not fused because they carried no information at the filter's scale: a variance
    /// over `FusionStage.uninformativeRatio` × the filter's position variance (an absurd accuracy).
    public var uninformative = 0
    /// GNSS fixes equal to the phone's previous one (a receiver holding its solution) that were
    /// not fused (`FusionStage.Settings.gnssHoldUpdates` false).
    public var held = 0
    /// Σ NIS and Σ m over the accepted and gated updates (ANIS = nisSum / dofSum; ≈ 1 when consistent).
    public var nisSum = 0.0
    public var dofSum = 0
    public init() {}
    public var averageNIS: Double? { dofSum > 0 ? nisSum / Double(dofSum) : nil }

    /// Adds another phone's counters (the stage's totals).
    public mutating func add(_ c: SourceCounters) {
        accepted += c.accepted; gated += c.gated; singular += c.singular; initializations += c.initializations
        superseded += c.superseded; combined += c.combined; uninformative += c.uninformative; held += c.held; nisSum += c.nisSum; dofSum += c.dofSum
    }
}

/// One filter input, kept for rewind-and-replay and for the smoother.
enum FusionInput {
    case step(StepInput)
    case update(any MeasurementModel)
    case heading(time: Double, value: Double, variance: Double)
    /// A time prediction with no measurement: a GNSS fix too uncertain to carry information
    /// (`FusionStage.uninformativeRatio`) still gets the filter's output at its time.
    case predict(time: Double)

    var time: Double {
        switch self {
        case .step(let s): return s.time
        case .update(let m): return m.time
        case .heading(let t, _, _): return t
        case .predict(let t): return t
        }
    }
}

/// One epoch of the filter's history for the Rauch–Tung–Striebel smoother: the prediction
/// x⁻ₖ = f(x⁺ₖ₋₁), P⁻ₖ with its transition Jacobian Fₖ, the cross-covariance
/// Dₖ = Cov(x⁺ₖ₋₁, x⁻ₖ) of the prediction (EKF: P⁺ₖ₋₁Fₖᵀ; UKF: from the sigma points, Särkkä
/// 2008), and the posterior x⁺ₖ, P⁺ₖ after the epoch's updates. `emitted` marks epochs whose
/// posterior was output as a fix.
public struct FilterEpoch: Sendable {
    public var time: Double
    public var transition: Mat4
    public var crossCovariance: Mat4
    public var priorMean: SIMD4<Double>
    public var priorCovariance: Mat4
    public var posteriorMean: SIMD4<Double>
    public var posteriorCovariance: Mat4
    public var emitted = false
    /// The filter was (re)initialised here: the epoch does not follow from the previous one.
    public var startsSegment = false
    /// The GNSS bias block after the prediction and after the updates (nil when off).
    public var priorBias: GNSSBias? = nil
    public var posteriorBias: GNSSBias? = nil
    /// φ of the bias over this epoch's prediction.
    public var biasDecay = 1.0
    /// The particle filter's cloud at this epoch's output, with its genealogy (`ParticleFilter.seal`;
    /// nil for the Kalman filters and epochs without output).
    public var cloud: SealedCloud? = nil
}

/// The filter of one phone inside `FusionStage`: the filter object, its PDR, the rewind
/// history and the epoch log for smoothing.
///
/// Time order: inputs normally arrive in time order. An input older than the filter's time
/// (a late Wi-Fi scan or audio result) rewinds: the filter is restored to the snapshot taken
/// before the first later input still in the history (`historySeconds`), the late input is
/// applied, and the later inputs are re-applied in order (§7.1). Older than the history: dropped
/// and counted (`tooLate`).
final class FusionTrack {
    let filter: any FusionFilter
    var pdr: PedestrianDeadReckoning
    var counters = SourceMap<SourceCounters>()
    var consecutiveGated = SourceMap<Int>()
    /// The previous fix of the current run of gated fixes, per source (two-point re-initialisation).
    var previousGated = SourceMap<Fix>()
    /// The fix of a one-point S2 start, until the next fix of its source is accepted.
    var startFix: Fix?
    /// The source and the variance (trace of R = α²Σ) of the fix that (re)started the filter
    /// (`FusionStage.uninformativeRatio`).
    var start: (source: Source, trace: Double)?
    /// The phone's last GNSS fix seen by the stage (position, reported covariance): the hold test
    /// of `gnss_hold_updates: false` (nil under the default, which keeps no memory of it).
    var lastGNSS: (position: SIMD2<Double>, covariance: Covariance2)?
    /// Per observed thing (a loose source, or a tight measurement's `repeatIdentity`): the last
    /// value seen and how many times in a row it has come unchanged (`repeatCount`).
    private var repeatRuns: [RepeatKey: (value: [Double], count: Int)] = [:]
    /// What `repeatCount` counts runs of: a loose source's fixes, or one tight measurement's
    /// `repeatIdentity` (an enum, not a "fix:"/"measurement:" string: no string built per fix).
    enum RepeatKey: Hashable { case fix(Source), measurement(String) }
    var reinitializations = 0
    var rewinds = 0
    var tooLate = 0
    var lastEmitTime = -Double.infinity
    var lastHeadingUpdate = -Double.infinity
    var seenIMU = false
    /// `platform: auto`: the evidence that the phone is in a vehicle (nil: the platform is set).
    var platform: PlatformEvidence?
    /// Whether the last time prediction used the stationary diffusion; `allowStill` = false
    /// forces the walking diffusion (re-test of a fix gated under the still hypothesis).
    private(set) var lastPredictionStill = false
    var allowStill = true
    /// The next GNSS fix is applied with the bias re-drawn (`GNSSBias.redraw`): the re-solution
    /// re-test of a fix gated while the receiver reports rest (`FusionStage`).
    var redrawsBias = false
    /// Walks the state between heel strikes (`StrideInterpolation`); off = the position moves at steps only.
    var interpolatesStrides = true
    /// Prior σ of the step scale s from the fitted step length (`StepLengthCalibration.scaleSigma`); nil = the option's.
    var stepScaleSigma: Double?
    private(set) var stride = StrideInterpolation()
    /// The bias states beside the filter's (`GNSSBias`); nil = off (GNSS fixes are white).
    /// The block serves one family of fixes at a time (`biasFamily`): GNSS fixes, or radio-map
    /// fixes that carry a fitted error correlation (`Fix.errorCorrelation` from the map's
    /// `RadioUncertaintyModel`); fixes of the other family enter white while it is taken.
    var gnssBias: GNSSBias?
    /// Which family the primed bias block belongs to (nil: unprimed).
    private(set) var biasFamily: BiasFamily?
    enum BiasFamily { case gnss, radio }

    /// The bias family of a fix's measurement: GNSS fixes always (the stage's β, τ when the fix
    /// carries none), other loose fixes when they carry an error correlation.
    static func biasFamily(source: Source, correlation: ErrorCorrelation?) -> BiasFamily? {
        source == .gnss ? .gnss : correlation != nil ? .radio : nil
    }
    /// Sources whose fixes' R is scaled by a calibrated accuracy scale (`AccuracyScale`), with the scale.
    var accuracyScales = SourceMap<AccuracyScale>()
    /// NIS of every update in order (time, source, m, NIS, accepted) when logging is on.
    var nisLog: [(time: Double, source: Source, dimension: Int, nis: Double, accepted: Bool)] = []

    private struct HistoryEntry {
        var input: FusionInput; var before: FilterSnapshot; var stride: StrideInterpolation; var bias: GNSSBias?; var family: BiasFamily?
        var scales: SourceMap<AccuracyScale>; var epochCount: Int
    }
    private var history: [HistoryEntry] = []
    let historySeconds: Double
    let recordEpochs: Bool
    private(set) var epochs: [FilterEpoch] = []
    private var logNIS: Bool

    init(filter: any FusionFilter, pdr: PedestrianDeadReckoning, historySeconds: Double, recordEpochs: Bool, logNIS: Bool) {
        self.filter = filter; self.pdr = pdr; self.historySeconds = historySeconds
        self.recordEpochs = recordEpochs; self.logNIS = logNIS
    }

    /// Returns every per-trace property to the value `init` gives it, with a new PDR for
    /// `declinationDegrees` and `logNIS` as `init` would take them (`historySeconds` and `recordEpochs` are the stage's configuration,
    /// the same for every track it makes). The filter is the caller's to restart
    /// (`ExtendedKalmanFilter.restart`). `FusionStage` reuses the track of a reset trace this way
    /// (a refine report, a geolocate request: creating and freeing one cost ≈ 4.6k instructions
    /// per report, docs/refine.md). The collections keep their storage, emptied: the same values.
    /// (`repeatRuns` is only looked up, never iterated: a dictionary's order depends on its
    /// capacity and on its storage's own hash seed, so it differs between two new tracks too.)
    /// `FusionTrackRecycleTests` compares every stored property, by reflection, with a new
    /// track's after other traces have run on the old one.
    func recycle(declinationDegrees: Double, logNIS: Bool) {
        // Built in place: a PDR passed in was copied twice on the way (≈ 1k instructions).
        pdr = PedestrianDeadReckoning(declinationDegrees: declinationDegrees); self.logNIS = logNIS
        counters.removeAll(); consecutiveGated.removeAll(); previousGated.removeAll(); accuracyScales.removeAll()
        startFix = nil; start = nil; lastGNSS = nil
        repeatRuns.removeAll(keepingCapacity: true)
        reinitializations = 0; rewinds = 0; tooLate = 0
        lastEmitTime = -.infinity; lastHeadingUpdate = -.infinity
        seenIMU = false; platform = nil
        lastPredictionStill = false; allowStill = true; redrawsBias = false; interpolatesStrides = true; stepScaleSigma = nil
        stride = StrideInterpolation()
        gnssBias = nil; biasFamily = nil
        nisLog.removeAll(keepingCapacity: true); history.removeAll(keepingCapacity: true); epochs.removeAll(keepingCapacity: true)
    }

    /// Whether a GNSS fix repeats the phone's previous one: position within 1 mm, reported
    /// covariance bit-equal (a receiver re-emitting its held solution).
    func isGNSSHold(_ f: Fix) -> Bool {
        guard let (p, c) = lastGNSS else { return false }
        let d = SIMD2(f.position.x, f.position.y) - p
        return (d * d).sum() < 1e-6 && c == f.covariance
    }

    /// k for this observation of `key`: one more than last time when `value` is unchanged, else 1
    /// (the `repeat_inflation` count).
    func repeatCount(of key: RepeatKey, value: [Double]) -> Int {
        // One look-up of the key (a read and a write hashed it twice); an absent key starts at
        // count 0, which gives 1 whether or not `value` is empty.
        Self.advance(&repeatRuns[key, default: (value: [], count: 0)], to: value)
    }

    private static func advance(_ run: inout (value: [Double], count: Int), to value: [Double]) -> Int {
        run.count = run.value == value ? run.count + 1 : 1
        run.value = value
        return run.count
    }

    /// Starts (or restarts) the filter; clears the rewind history (the epoch log continues).
    /// `correlatedFix`: the start is a fix of a bias family (`biasFamily(source:correlation:)`) with
    /// this covariance: the bias block (the particle filter's conditional biases) is primed from it.
    /// `differencedOver`: a constant-velocity start from two fixes that far apart (s; its velocity
    /// shares the start fix's bias, `GNSSBias.prime(startingAt:time:differencedOver:)`).
    func initialize(mean: SIMD4<Double>, covariance: Mat4, time: Double,
                    correlatedFix: (family: BiasFamily, covariance: Covariance2)? = nil, errorCorrelation: ErrorCorrelation? = nil,
                    differencedOver dt: Double? = nil) {
        filter.initialize(mean: mean, covariance: covariance, time: time)
        (filter as? ParticleFilter)?.primeBias(startingAt: correlatedFix?.covariance, family: correlatedFix?.family ?? .gnss,
                                               correlation: errorCorrelation, fix: SIMD2(mean[0], mean[1]))
        if gnssBias != nil {
            gnssBias!.adopt(errorCorrelation)
            if let c = correlatedFix { gnssBias!.prime(startingAt: c.covariance, time: time, differencedOver: dt); biasFamily = c.family } else { gnssBias!.reset(time: time); biasFamily = nil }
        }
        // Capacity kept: the next inputs are appended again (a new buffer grew by reallocation at
        // each of a short track's first updates, ≈ 640 instructions each).
        history.removeAll(keepingCapacity: true)
        if recordEpochs {
            epochs.append(FilterEpoch(time: time, transition: .identity, crossCovariance: covariance, priorMean: mean, priorCovariance: covariance,
                                      posteriorMean: mean, posteriorCovariance: covariance, startsSegment: true,
                                      priorBias: gnssBias, posteriorBias: gnssBias))
        }
    }

    /// Applies an input in time order (rewinding for a late one). Returns the record of the
    /// input's own update (nil for steps and dropped inputs).
    @discardableResult
    func apply(_ input: FusionInput, gate: (any MeasurementModel) -> Double?) -> UpdateRecord? {
        let t = input.time
        guard filter.isInitialized else { return nil }
        if t >= filter.time {
            return run(input, gate: gate)
        }
        // Late input: find the first history entry later than t.
        guard let first = history.first, t >= first.before.time else { tooLate += 1; return nil }
        let i = history.firstIndex { $0.input.time > t } ?? history.count
        guard i < history.count else { return run(input, gate: gate) }
        rewinds += 1
        let replay = history[i...].map(\.input)
        filter.restore(history[i].before)
        stride = history[i].stride
        gnssBias = history[i].bias
        biasFamily = history[i].family
        accuracyScales = history[i].scales
        if recordEpochs { epochs.removeLast(epochs.count - history[i].epochCount) }
        history.removeLast(history.count - i)
        let record = run(input, gate: gate, countIt: true)
        for r in replay { run(r, gate: gate, countIt: false) }
        return record
    }

    @discardableResult
    private func run(_ input: FusionInput, gate: (any MeasurementModel) -> Double?, countIt: Bool = true) -> UpdateRecord? {
        history.append(HistoryEntry(input: input, before: filter.snapshot(), stride: stride, bias: gnssBias, family: biasFamily, scales: accuracyScales,
                                    epochCount: epochs.count))
        let horizon = input.time - historySeconds
        if let k = history.firstIndex(where: { $0.input.time >= horizon }), k > 0 { history.removeFirst(k) }
        var record: UpdateRecord?
        switch input {
        case .step(let full):
            let s = interpolatesStrides && filter.motion.layout == .step ? stride.step(full) : full
            predict(step: s) { filter.predict(step: s) }
        case .update(let original):
            predictTime(to: original.time)
            var m = original
            let scale = accuracyScales[m.source]
            if let s = scale, let pm = m.asPosition { m = pm.scaled(s.value) }
            defer {
                if scale != nil, m.asPosition != nil, let r = record, let nis = r.nis, r.outcome == .accepted || r.outcome == .gated {
                    accuracyScales[m.source]!.observe(nis: nis)
                }
            }
            if gnssBias != nil, let pm = m.asPosition,
               let family = Self.biasFamily(source: pm.source, correlation: pm.errorCorrelation), biasFamily == nil || biasFamily == family {
                gnssBias!.adopt(pm.errorCorrelation)
                if redrawsBias, family == .gnss, biasFamily == .gnss, gnssBias!.isPrimed { redrawBias(for: pm) }
                record = updateWithBias(pm, gate: gate(m), adapting: family == .gnss)
                if record?.outcome == .accepted { biasFamily = family }
            } else {
                let prior = gnssBias?.isPrimed == true ? (x: filter.mean, p: filter.covariance) : nil   // only the bias block needs it
                record = filter.update(m, gate: gate(m))
                let layout = filter.motion.layout
                if record?.accepted == true, let (x, p) = prior, let q = m.argument(x, layout: layout), let h = m.stateJacobian(x, layout: layout) {
                    gnssBias!.update(h: h, innovation: m.innovation(m.predict(q)), noise: m.noise, prior: p)
                }
            }
        case .predict(let time):
            predictTime(to: time)
        case .heading(let time, let value, let variance):
            predictTime(to: time)
            let prior = gnssBias?.isPrimed == true ? (x: filter.mean, p: filter.covariance) : nil
            record = filter.updateHeading(value, variance: variance, time: time, gate: ChiSquare.quantile(0.99, dof: 1))
            if record?.accepted == true, let (x, p) = prior {
                gnssBias!.update(h: [SIMD4(0, 0, 1, 0)], innovation: [Angle.wrap(value - x[2])],
                                 noise: Matrix(rows: 1, cols: 1, data: [variance]), prior: p)
            }
        }
        if let r = record, countIt { count(r) }
        if recordEpochs, !epochs.isEmpty {
            epochs[epochs.count - 1].posteriorMean = filter.mean
            epochs[epochs.count - 1].posteriorCovariance = filter.covariance
            epochs[epochs.count - 1].posteriorBias = gnssBias
        }
        return record
    }

    /// A GNSS fix as the joint update of [x; b] (`GNSSBias.updateFix`), written back to the filter;
    /// `adapting`: it feeds the online widening μ (GNSS fixes only).
    private func updateWithBias(_ m: PositionMeasurement, gate: Double?, adapting: Bool) -> UpdateRecord {
        func record(_ nis: Double?, _ o: UpdateRecord.Outcome) -> UpdateRecord {
            UpdateRecord(time: m.time, source: m.source, dimension: 2, nis: nis, gate: gate, outcome: o)
        }
        guard let out = gnssBias!.updateFix(SIMD2(m.z[0], m.z[1]), covariance: m.covariance, mean: filter.mean, prior: filter.covariance,
                                            gate: gate, angleIndex: filter.motion.layout.angleIndex, adapting: adapting) else { return record(nil, .singular) }
        guard out.nis >= 0 else { return record(-out.nis, .gated) }
        filter.restore(FilterSnapshot(time: filter.time, mean: out.mean, covariance: out.covariance, initialized: true, payload: nil))
        return record(out.nis, .accepted)
    }

    /// Runs a prediction and logs it as a new smoother epoch (when it moved the state in time
    /// or by a step) with its transition Jacobian F: for a step of length L̂ the S1 Jacobian at
    /// the previous mean (the time part is the identity in S1); for a time prediction the
    /// identity (S1) or the constant-velocity F(Δt) (S2). The cross-covariance D = Cov(x⁺, x⁻)
    /// is P⁺Fᵀ, except for a UKF step (`UnscentedKalmanFilter.stepCrossCovariance`).
    private func predict(step: StepInput? = nil, _ body: () -> Void) {
        guard recordEpochs || gnssBias != nil else { body(); return }
        let (t0, x0, p0) = (filter.time, filter.mean, filter.covariance)
        body()
        guard filter.time != t0 || filter.mean != x0 else { return }
        let motion = filter.motion
        let f: Mat4
        switch (motion.layout, step) {
        case (.step, let s?): f = motion.step.jacobian(x0, s)
        case (.step, nil): f = .identity
        case (.constantVelocity, _): f = motion.constantVelocity.transition(dt: filter.time - t0)
        }
        let phi = gnssBias?.decay(filter.time - t0) ?? 1
        gnssBias?.predict(transition: f, to: filter.time)
        guard recordEpochs else { return }
        var d = p0 * f.transposed
        if let ukf = filter as? UnscentedKalmanFilter, motion.layout == .step, let s = step,
           let u = ukf.stepCrossCovariance(mean: x0, covariance: p0, dt: max(0, s.time - t0), step: s, prior: filter.mean) {
            d = u
        }
        epochs.append(FilterEpoch(time: filter.time, transition: f, crossCovariance: d, priorMean: filter.mean,
                                  priorCovariance: filter.covariance, posteriorMean: filter.mean,
                                  posteriorCovariance: filter.covariance, priorBias: gnssBias, posteriorBias: gnssBias, biasDecay: phi))
    }

    /// The bias re-drawn for the GNSS fix `m` at the filter's time (`GNSSBias.redraw`, the
    /// Gauss–Markov prediction with φ = 0), logged as an epoch of its own for the smoother:
    /// transition F = I over no time, D = P, φ = 0, so the RTS recursion over [x; b] sees the new
    /// bias independent of the old.
    private func redrawBias(for m: PositionMeasurement) {
        gnssBias!.redraw(fixCovariance: m.covariance)
        guard recordEpochs else { return }
        let (x, p) = (filter.mean, filter.covariance)
        epochs.append(FilterEpoch(time: filter.time, transition: .identity, crossCovariance: p, priorMean: x, priorCovariance: p,
                                  posteriorMean: x, posteriorCovariance: p, priorBias: gnssBias, posteriorBias: gnssBias, biasDecay: 0))
    }

    /// Time prediction to t. S1 while the PDR's motion detector shows the phone still over the
    /// whole interval: the position diffuses at the stationary rate (`StepMotionModel`), unless
    /// `allowStill` is off (the walking re-test of a gated fix); otherwise the walker goes on
    /// along the current stride (`StrideInterpolation`).
    private func predictTime(to t: Double) {
        lastPredictionStill = allowStill && filter.motion.layout == .step && pdr.motion.isStill(from: filter.time, to: t)
        guard lastPredictionStill else {
            if interpolatesStrides, filter.motion.layout == .step,
               let s = stride.advance(to: t, lastMotion: pdr.motion.lastMotion(atOrBefore: t)) {
                predict(step: s) { filter.predict(step: s) }
            } else {
                predict { filter.predict(to: t) }
            }
            return
        }
        filter.withMotion({ $0.step.positionDiffusion = $0.step.stationaryPositionDiffusion }) { predict { filter.predict(to: t) } }
    }

    /// Undoes the last input (the update `record` just applied in time order) and applies it
    /// again, e.g. under another motion model; nil (nothing undone) if the last input is not it.
    func reapplyLast(_ record: UpdateRecord, gate: (any MeasurementModel) -> Double?) -> UpdateRecord? {
        guard let last = history.last, case .update = last.input, last.input.time == record.time else { return nil }
        history.removeLast()
        filter.restore(last.before)
        stride = last.stride
        gnssBias = last.bias
        biasFamily = last.family
        accuracyScales = last.scales
        if recordEpochs { epochs.removeLast(epochs.count - last.epochCount) }
        uncount(record)
        return run(last.input, gate: gate)
    }

    private func uncount(_ r: UpdateRecord) {
        var c = counters[r.source, default: SourceCounters()]
        switch r.outcome {
        case .accepted: c.accepted -= 1
        case .gated: c.gated -= 1
        case .singular: c.singular -= 1
        case .notViolated, .uninitialized, .unobservable: break
        }
        if let n = r.nis, r.outcome == .accepted || r.outcome == .gated { c.nisSum -= n; c.dofSum -= r.dimension }
        counters[r.source] = c
        if logNIS, r.nis != nil { nisLog.removeLast() }
    }

    private func count(_ r: UpdateRecord) {
        var c = counters[r.source, default: SourceCounters()]
        switch r.outcome {
        case .accepted: c.accepted += 1
        case .gated: c.gated += 1
        case .singular: c.singular += 1
        case .notViolated, .uninitialized, .unobservable: break
        }
        if let n = r.nis, r.outcome == .accepted || r.outcome == .gated { c.nisSum += n; c.dofSum += r.dimension }
        counters[r.source] = c
        if logNIS, let n = r.nis { nisLog.append((r.time, r.source, r.dimension, n, r.accepted)) }
    }

    /// The position covariance to report: the filter's P_pp plus the GNSS bias block's
    /// unexplained fix–track disagreement W (`GNSSBias.excessCovariance`; nil/zero while μ = 1).
    func reportedFix(source: Source, subject: String) -> Fix {
        var f = filter.fix(source: source, subject: subject)
        if biasFamily == .gnss, let w = gnssBias?.excessCovariance {
            f.covariance = f.covariance + w
        }
        return f
    }

    /// The region of this phone's next GNSS fix (covariance Σ as its estimator reports it) under
    /// what the filter has learned online from the fixes before it: λΣ, λ the GNSS accuracy scale
    /// (the fixes' innovations against the filter's prediction, `AccuracyScale`), plus
    /// (μ − 1)U′, the bias estimate's excess over its model (`GNSSBias.fixExcess`, with the
    /// Σ_b = β α² λ Σ the filter will take for it). nil when neither has moved (λ = 1, μ = 1).
    func gnssFixRegion(_ sigma: Covariance2, time t: Double, inflation alpha: Double) -> Covariance2? {
        let lambda = accuracyScales[.gnss]?.value ?? 1
        var out = lambda > 1 ? sigma.scaled(lambda) : nil
        if biasFamily == .gnss, let b = gnssBias, let w = b.fixExcess(at: t, stationary: sigma.scaled(b.biasFraction * alpha * alpha * lambda)) {
            out = (out ?? sigma) + w
        }
        return out
    }

    /// Marks the last epoch as output; a particle filter's cloud is sealed there (its genealogy
    /// for `ParticleSmoother`).
    func markEmitted() {
        guard recordEpochs, !epochs.isEmpty else { return }
        let k = epochs.count - 1
        epochs[k].emitted = true
        if let pf = filter as? ParticleFilter { epochs[k].cloud = pf.seal(replacing: epochs[k].cloud) }
    }
}
