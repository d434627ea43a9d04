import Foundation

/// Pipeline stages `ekf`, `ukf` and `pf`: one recursive filter per phone over pedestrian dead
/// reckoning, fed by the upstream estimators (`docs/models.md` §6–7).
///
/// **State.** S1 step-driven x = [E, N, ψ, s] (m, m, rad clockwise from true north, step-length
/// scale) when the phone has an accelerometer; S2 constant velocity x = [E, N, v_E, v_N] otherwise
/// (`layout: auto|step|cv`). S1 predicts once per detected step with L̂ (Weinberg) and Δψ
/// (gyroscope), S2 by time; the magnetometer's absolute heading (clean field only, ≤ one update
/// per `heading_interval_s`) updates ψ with σ = max(`heading_sigma_deg`, atan(σ_d / |m_h|)): the
/// PDR's running disturbance level σ_d (µT per axis, from the deviations of the field's magnitude
/// and dip) over the horizontal field |m_h| (`heading_sigma_from_field`; a 6 µT disturbance in a
/// 20 µT horizontal field, Manhattan, is 17°, which a fixed 10° under-stated).
///
/// **Measurements.** Every upstream `.fix` of a source in `inputs` for this phone becomes a loose
/// position update z = p̂, R = α²Σ (`PositionMeasurement`, α = `inflation.<source>`, defaults
/// `Settings.defaultInflation`);
/// for the sources listed in `tight` the stage uses their `.measurement` models instead (TA range,
/// TDoA vector, peer range, CamLoc range-bearing, hidden-AP likelihood) and ignores their fixes,
/// so no information is used twice. For the same reason a fix that contains another fix of the
/// same evidence replaces it (`superseding`: cell-ta over cell, peer over the scan's fixes), and
/// a repeated observation counts less each time (`repeatInflation`: the k-th identical fix, or
/// the k-th unchanged tight measurement of one cell, enters with R × k). Object subjects
/// (`object:…`, CamLoc) are never phones.
///
/// **Gating and health.** χ² gate at the model's probability (default 0.99 → 9.21 for m = 2);
/// accepted/gated counts and Σ NIS per source (`counters`). `divergence_rejections` (5)
/// consecutive refused loose fixes of one source (gated, or refused as singular) re-initialise
/// the filter at the latest of them (§7.5). Late inputs rewind and replay within `history_s` (§7.1).
///
/// **Initialisation.** At the first loose fix: p = fix, P_pp = Σ_fix; S1: ψ from the PDR heading
/// with σ `initial_heading_sigma_deg` (no heading yet: waits up to 10 s, then starts at 0 with
/// σ = 180° for the particle filter or waits for the EKF/UKF), s = 1 ± `initial_scale_sigma`;
/// S2: v = 0 ± `initial_speed_sigma_mps`; if the next fix is gated under that (a vehicle), and
/// after a divergence, two-point initiation from the last two fixes. S2 fixes gated under q₀ are re-tested as a manoeuvre (`retestAsManoeuvre`);
/// before that, a GNSS fix gated while the receiver reports a zero velocity with it is re-tested
/// with its bias re-drawn (`retestAsResolution`: at rest only the error can have moved).
///
/// **Output.** A fix after each event's measurement updates (one per phone and time: the
/// posterior after all of them), and after steps at most every `output_interval_s`; covariance = P_pp (the filter's own, so NEES/inside95 measure its
/// consistency), plus, while the GNSS bias estimate is larger than its model explains, that
/// excess (`GNSSBias.excessCovariance`, option `gnss_bias_adaptive_window`).
public final class FusionStage: PipelineStage {
    public enum Kind: String, Sendable { case ekf, ukf, pf }
    public enum LayoutChoice: String, Sendable, CaseIterable { case auto, step, cv }

    public struct Settings: Sendable {
        public var kind: Kind
        public var layout: LayoutChoice = .auto
        /// The constant-velocity motion model's platform (`MotionPlatform`): its q is
        /// `motion.constantVelocity.q` for a pedestrian, `vehicleQ` for a vehicle.
        public var platform = MotionPlatform(rawValue: Options.platform.text) ?? .auto
        public var vehicleQ = Options.cvVehicleQ.number
        public var vehicleSpeed = Options.vehicleSpeed.number
        public var motion = MotionConfiguration(layout: .step)
        public var inputs: Set<Source> = Set(Options.inputs.strings.compactMap(Source.init(rawValue:)))
        public var tight: Set<Source> = []
        /// A loose fix of a key source supersedes, for the same phone and time, the fixes of the
        /// listed sources, because it already contains their measurements: `cell-ta` is the
        /// serving-cell report of `cell` plus its timing advance; `peer` is the phone's scan
        /// fix (`fingerprint`, else `rss`, else `wcl`; `hapel` is the same scan) refined by ranges. Fusing both would
        /// count one measurement twice (measured in docs/fusion.md). Not listed: `hapel` over
        /// `wcl` — their errors differ enough (hidden APs pull HAPEL ahead, WCL to the AP
        /// centroid) that fusing both is better (mall-sparse-ap ekf 4.87 m vs 6.09 m with hapel
        /// alone, 50 runs); α = 1.5 on each carries their correlation. Option `supersede` (true).
        public var superseding: [Source: Set<Source>] = Self.defaultSuperseding
        public static let defaultSuperseding: [Source: Set<Source>] = [.cellTA: [.cell], .peer: [.fingerprint, .rss, .wcl, .hapel]]
        /// Sources whose loose fixes of one scan (same phone, same time) enter as ONE update, the
        /// fast covariance intersection of their R = α²Σ (`CovarianceIntersection`): they read the
        /// same RSS values against the same map, so their errors are correlated by an unknown
        /// amount and adding them counts the scan several times (measured in docs/fusion.md,
        /// "One WiFi update per scan"). Option `combine_scan_fixes` (false until its effect on real
        /// walks is measured: it changes every WiFi trace's ekf); true = `scanCombinable`.
        public var scanCombined: Set<Source> = []
        public static let scanCombinable: Set<Source> = [.wcl, .hapel, .fingerprint, .rss]
        /// Of a scan's group of radio-map WiFi fixes (those carrying the map's error
        /// correlation), fuse only the members whose source has the smallest held-out mean error
        /// in the map's uncertainty model (`RadioUncertaintyModel.Term.heldOutMeanError`; ties
        /// within 1 mm kept together, their covariance intersection); the others count as
        /// `combined`. Groups where a member's source has no such error are intersected whole.
        /// Why: the members read the same RSS against the same map, so their errors are strongly
        /// correlated, and the intersection, weighted by the members' covariances, follows a
        /// worse source whenever it reports the smaller one (measured on the ms-indoor walks,
        /// docs/fusion.md, "Which WiFi source the filters fuse"). Option `best_wifi_source`.
        public var bestWiFiSource = Options.bestWiFiSource.flag
        /// α per source (R = α²Σ). Defaults: WCL, HAPEL and fingerprint 1.5 (consecutive scans
        /// share the shadowing, and a fingerprint the survey's error at that place); Cell-ID and Cell-ID + TA 1.5 as well (consecutive reports of one serving
        /// cell share its geometry error, also when the TA steps; identical repeats are handled
        /// apart by `repeat_inflation`; session 8: rural-cell ekf ANEES 4.04 → 2.22, mean 158.6 →
        /// 145.8 m over 200 fresh seeds); GNSS 1 where its bias is a state (`gnssBias`), else 3
        /// (α² ≈ τ/Δt stands in for an error correlation time τ ≈ 10 s at 1 Hz); others 1.
        /// Measured effect in docs/fusion.md and docs/consistency.md.
        public var inflation: [Source: Double]
        /// α of a loose fix that carries its radio map's fitted error correlation
        /// (`Fix.errorCorrelation`, `RadioUncertaintyModel`) when the bias states are on and not
        /// taken by GNSS fixes: the fix then enters through the bias block, which models the
        /// scan-to-scan correlation that `inflation`'s α² ≈ τ/Δt stands in for, and the map's
        /// covariance is already calibrated on held-out walks (k), so 1.5 would count the
        /// correlation twice (the GNSS analogue: α 1 with the bias states, 3 without). Option
        /// `radio_map_inflation` (1); measured in docs/fusion.md, "The WiFi inflation under the
        /// bias block".
        public var radioMapInflation = Options.radioMapInflation.number
        public static let defaultInflation: [Source: Double] = Options.inflationBySource.merging([.gnss: Options.whiteNoiseGNSSInflation]) { $1 }
        /// The GNSS bias states (the Kalman filters' `GNSSBias` block, the particles' own bias in
        /// the particle filter); nil = off.
        public var gnssBias: GNSSBias? = GNSSBias(adaptiveWindow: Options.gnssBiasAdaptiveWindow.number > 0 ? Options.gnssBiasAdaptiveWindow.number : nil)
        /// Sources whose reported accuracy is calibrated online from their NIS (`AccuracyScale`).
        public var adaptiveAccuracy: Set<Source> = Set(Options.adaptiveAccuracy.strings.compactMap(Source.init(rawValue:)))
        /// Fixes over which an accuracy scale follows a change.
        public var adaptiveAccuracyWindow = Options.adaptiveAccuracyWindow.number
        /// R × k for the k-th identical fix of a source in a row (option `repeat_inflation`).
        public var repeatInflation = Options.repeatInflation.flag
        /// Fuse a GNSS fix equal to the phone's previous GNSS fix (option `gnss_hold_updates`).
        public var gnssHoldUpdates = Options.gnssHolds.flag
        public var gateProbability: Double? = Options.gateProbability.number
        public var headingSigma = Angle.radians(Options.headingSigma.number)
        /// σ of a compass heading = max(`headingSigma`, the PDR's atan(σ_d / |m_h|) from the
        /// measured field disturbance) when true; `headingSigma` alone when false.
        public var headingSigmaFromField = Options.headingSigmaFromField.flag
        public var headingInterval = Options.headingInterval.number
        public var initialHeadingSigma = Angle.radians(Options.initialHeadingSigma.number)
        public var initialScaleSigma = Options.initialScaleSigma.number
        public var initialSpeedSigma = Options.initialSpeedSigma.number
        /// σ_ω of the S2 manoeuvre hypothesis (`retestAsManoeuvre`), rad/s (0 = off).
        public var cvTurnRateSigma = Angle.radians(Options.cvTurnRateSigma.number)
        /// σ_a of the S2 manoeuvre hypothesis, m/s² (0 = none).
        public var cvManoeuvreAcceleration = Options.cvManoeuvreAcceleration.number
        public var weinbergK = Options.weinbergK.number
        /// Use the reference data's fitted step length (`ReferenceData.stepLength`, from the radio
        /// map's training walks) instead of `weinbergK` when there is one: K̂ for the PDR and its
        /// spread as the prior σ of the step scale s. False when the pipeline sets `weinberg_k`.
        public var calibratedStepLength = true
        public var outputInterval = Options.outputInterval.number
        /// S1: walk the state between heel strikes at the last stride's speed (`StrideInterpolation`).
        public var strideInterpolation = Options.strideInterpolation.flag
        public var divergenceRejections = Options.divergenceRejections.integer
        public var historySeconds = Options.history.number
        public var particles = Options.particles.integer
        public var seed = UInt64(Options.seed.integer)
        public var resampleThreshold = Options.resampleThreshold.number
        public var roughening = Options.roughening.number
        /// Kernel bandwidth factor of the regularised particle filter (`ParticleFilter.regularization`):
        /// 0.5, half of Musso's Gaussian-optimal bandwidth as Musso, Oudjane and Le Gland (2001)
        /// advise for multimodal posteriors. Measured (docs/fusion.md): office-acoustic pf ANEES
        /// 10³⁴ → 1.8, mall-sparse-ap 2.8 → 1.8, open-street mean 2.16 → 1.99 m.
        public var regularization = Options.regularization.number
        /// Particle filter: a particle whose move crosses a wall of the trace's floor plan
        /// (reference `floorplan`, GeoJSON) gets weight 0 (`walls`).
        public var useWalls = Options.walls.flag
        public var sigmaPoints = SigmaPointParameters()
        public init(kind: Kind) {
            self.kind = kind
            inflation = Options.inflationBySource
        }
    }

    public let settings: Settings
    public let source: Source
    public var sources: [Source] { [source] }
    public func fresh() -> any PipelineStage {
        let s = FusionStage(settings: settings, emitting: source, recordEpochs: recordEpochs)
        s.logNIS = logNIS
        return s
    }
    /// The per-phone filters; `settings`, `source`, `recordEpochs` and `logNIS` are configuration.
    /// An ekf's tracks are kept (up to `spareLimit`) and reused, their state returned to a new
    /// track's, by the next trace's phones (`track`).
    public func reset() {
        if settings.kind == .ekf {
            // Any order: every reused track is returned to the same state.
            for t in tracks.values where spare.count < Self.spareLimit { spare.append(t) }
        }
        tracks.removeAll(keepingCapacity: true); deviceOrder.removeAll(keepingCapacity: true); lastTrack = nil
    }
    /// Tracks of earlier traces kept for reuse: a report or request has one phone, a trace a few.
    private(set) var spare: [FusionTrack] = []
    static let spareLimit = 4
    /// Keep per-epoch filter history for the RTS smoother (`SmootherStage`).
    let recordEpochs: Bool
    /// Keep every update's NIS (consistency evaluation).
    public var logNIS = false
    /// One filter per phone (read by tests through `@testable`).
    private(set) var tracks: [String: FusionTrack] = [:]
    private var deviceOrder: [String] = []
    private var lastTrack: (String, FusionTrack)?

    public init(settings: Settings, emitting source: Source? = nil, recordEpochs: Bool = false) {
        self.settings = settings
        looseMask = Self.mask(settings.inputs.filter { !settings.tight.contains($0) && !$0.isFusion })
        tightMask = Self.mask(settings.tight)
        supersedingMask = Self.mask(Set(settings.superseding.filter { !$0.value.isEmpty }.keys))
        for (s, a) in settings.inflation { inflation[s] = a }
        groupableMask = Self.mask(settings.scanCombined.union(settings.gnssBias != nil ? Settings.scanCombinable : []))
        self.source = source ?? Source(rawValue: settings.kind.rawValue)!
        self.recordEpochs = recordEpochs
    }

    // MARK: diagnostics

    /// Per-source update counters, summed over phones.
    public var counters: [Source: SourceCounters] { sourceCounters.dictionary }
    /// The same counters by source, in declaration order (no dictionary built).
    public var sourceCounters: SourceMap<SourceCounters> {
        // One phone (a report): its own counters, the same values as the sum below gives.
        // (The last phone looked up is usually it: no hashed look-up.)
        if deviceOrder.count == 1, let (d, t) = lastTrack, d == deviceOrder[0] { return t.counters }
        if deviceOrder.count == 1, let t = tracks[deviceOrder[0]] { return t.counters }
        var sum = SourceMap<SourceCounters>()
        for t in deviceOrder.compactMap({ tracks[$0] }) {
            for (s, c) in t.counters { sum[s, default: SourceCounters()].add(c) }
        }
        return sum
    }
    public var reinitializations: Int { tracks.values.reduce(0) { $0 + $1.reinitializations } }
    public var rewinds: Int { tracks.values.reduce(0) { $0 + $1.rewinds } }
    public var droppedLate: Int { tracks.values.reduce(0) { $0 + $1.tooLate } }
    /// Every update's (time, source, m, NIS, accepted) per phone, when `logNIS` is set.
    public var nisLog: [String: [(time: Double, source: Source, dimension: Int, nis: Double, accepted: Bool)]] {
        tracks.mapValues(\.nisLog)
    }
    /// State layout of each phone's filter.
    var layouts: [String: StateLayout] { tracks.mapValues { $0.filter.motion.layout } }
    /// Epoch logs per phone (for the smoother), in order of the phones' first appearance.
    var epochLogs: [(device: String, epochs: [FilterEpoch])] { deviceOrder.compactMap { d in tracks[d].map { (d, $0.epochs) } } }

    /// The reported region of a phone's GNSS fix from this filter's online consistency before it
    /// (`FusionTrack.gnssFixRegion`; read by `GNSSStage` before this stage sees the fix): nil when
    /// the phone has no track yet or nothing widens it.
    public func gnssFixRegion(subject: String, time: Double, covariance: Covariance2) -> Covariance2? {
        guard let t = tracks[subject], t.filter.isInitialized else { return nil }
        return t.gnssFixRegion(covariance, time: time, inflation: inflation[.gnss] ?? 1)
    }

    // MARK: processing

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        var out: [StageResult] = []
        let device = event.device
        switch event.payload {
        case .imu(let s):
            let t = track(device, context)
            t.seenIMU = true
            t.pdr.update(s, time: event.time)
            drainPDR(t, device: device, into: &out)
        case .step(let e):
            let t = track(device, context)
            t.seenIMU = true
            t.pdr.step(e, time: event.time)
            drainPDR(t, device: device, into: &out)
        default: break
        }
        // Nothing upstream (an IMU sample, most of a trace): the loop below has nothing to do.
        if upstream.isEmpty { return out.count > 1 ? Self.lastPerSubjectAndTime(out) : out }
        // The receiver's own velocity (`VelocityMeasurement`, from the gnss stage when its error model
        // gives a velocity noise) first: it refers to its fix's time or earlier (the velocity's
        // latency), so applied before the fix it needs no rewind. (A rewind would re-apply the fix
        // without its manoeuvre re-test and lose the fixes of every turn.) An update of the
        // constant-velocity state's v, without an output of its own (the fix's follows); the step
        // state has no velocity (`.unobservable`, skipped); before the filter starts, skipped.
        // The particle filter does not take it (measured on the GSDC dev drive, Pixel4XLModded under
        // the shipped model: pf mean 2.09 → 2.41 m, P95 3.81 → 4.65 m with it: a likelihood sharper
        // than the cloud's velocity spread under the vehicle q concentrates the weights on few
        // particles; docs/fusion.md). `ParticleFilter.update` itself handles a velocity model.
        // A GNSS velocity of exactly zero, accepted: the receiver reports itself at rest with this
        // event's fix (the phone whose fix may get the re-solution re-test, `update(fix:)`).
        var atRest: String?
        for case .measurement(let m, let subject) in upstream
        where m.observedBlock == .velocity && settings.kind != .pf && settings.inputs.contains(m.source) && !Subject.isObject(subject) {
            let t = track(subject, context)
            guard t.filter.isInitialized, m.time >= t.filter.time else { continue }
            if let r = t.apply(.update(m), gate: gate) {
                if r.outcome == .gated { _ = retestAsManoeuvre(t, r) }
                if r.outcome == .accepted, m.source == .gnss, m.z.allSatisfy({ $0 == 0 }) { atRest = subject }
            }
        }
        // The sources of the loose fixes upstream: the superseding and scan-group passes (each a
        // set or dictionary built per event) run only when a fix of theirs is there (a report's
        // one GNSS fix needs neither).
        var looseSources: UInt16 = 0
        for r in upstream { if case .fix(let f) = r, isLooseInput(f) { looseSources |= Self.bit(f.source) } }
        let superseded = looseSources & supersedingMask != 0 ? supersededFixes(upstream) : []
        let scans = looseSources & groupableMask != 0 ? scanGroups(upstream, superseded: superseded) : [:]
        for r in upstream {
            // One pattern per case, the conditions inside: each `case … where` that fails copied
            // the result once more (a `StageResult` copy is ≈ 150 instructions).
            switch r {
            case .fix(let reported):
                guard isLooseInput(reported) else { continue }
                let f = reported.filterInput
                let key = SourceAt(source: f.source, subject: f.subject, time: f.time)
                if superseded.contains(key) {
                    track(f.subject, context).counters[f.source, default: SourceCounters()].superseded += 1
                } else if let group = scans[ScanKey(subject: f.subject, time: f.time)] {
                    // The group's one update is made at its first member; the members other than
                    // the one it is credited to count as combined.
                    if group.first == f {
                        let c = intersect(group, context)
                        if let c { update(fix: c, context, prescaled: true, into: &out) }
                        for g in group where g.source != c?.source {
                            track(g.subject, context).counters[g.source, default: SourceCounters()].combined += 1
                        }
                    }
                } else {
                    update(fix: f, context, atRest: atRest == f.subject, into: &out)
                }
            case .measurement(let m, let subject):
                if m.observedBlock == .velocity { continue }     // applied above
                guard tightMask & Self.bit(m.source) != 0 && !Subject.isObject(subject) else { continue }
                let t = track(subject, context)
                guard t.filter.isInitialized else { continue }
                var model = m
                if settings.repeatInflation, let id = m.repeatIdentity, m.asInequality == nil {
                    let k = t.repeatCount(of: .measurement(id), value: m.z)
                    if k > 1 { model = RepeatedMeasurement(m, repeat: k) }
                }
                if let r = t.apply(.update(model), gate: gate), r.outcome == .gated { _ = retestAsManoeuvre(t, r) }
                out.append(emit(t, device: subject))
            default: continue
            }
        }
        return out.count > 1 ? Self.lastPerSubjectAndTime(out) : out
    }

    /// A source's position measurements are read only when it is coupled tightly (`tight`);
    /// the velocity measurements of the loop above are not position measurements.
    public func readsPositionMeasurements(of source: Source) -> Bool { tightMask & Self.bit(source) != 0 }

    private func isLooseInput(_ f: Fix) -> Bool {
        looseMask & Self.bit(f.source) != 0 && !Subject.isObject(f.subject)
    }

    /// `settings.inputs` minus `settings.tight` and the fusion sources, and `settings.tight`, one bit
    /// per source (`Source.ordinal`): tested for every upstream result, where a `Set<Source>`
    /// look-up hashed the source each time.
    private let looseMask: UInt16, tightMask: UInt16
    /// The sources whose fixes may supersede others (`Settings.superseding`'s keys), and those
    /// `scanGroups` may group (`scanCombined`, and the combinable WiFi sources when the bias block is on).
    private let supersedingMask: UInt16, groupableMask: UInt16
    /// `settings.inflation` by case (a look-up per fix hashed the source: ≈ 370 instructions).
    private var inflation = SourceMap<Double>()
    @inline(__always) private static func bit(_ s: Source) -> UInt16 { 1 << UInt16(s.ordinal) }
    private static func mask(_ sources: Set<Source>) -> UInt16 { sources.reduce(0) { $0 | bit($1) } }

    private struct SourceAt: Hashable { var source: Source; var subject: String; var time: Double }
    private struct ScanKey: Hashable { var subject: String; var time: Double }

    /// The loose fixes of `scanCombined` sources of this event with at least one other such fix
    /// of the same phone and time (not superseded), grouped, in upstream order. Fixes of the
    /// combinable WiFi sources that carry an error correlation are grouped whatever
    /// `scanCombined` says when the bias block is on: they share its one bias state, and two
    /// fixes of one scan that differ by more than their small white parts would contradict each
    /// other through it (the second gated, a run of them a divergence restart).
    private func scanGroups(_ upstream: [StageResult], superseded: Set<SourceAt>) -> [ScanKey: [Fix]] {
        guard upstream.count > 1 else { return [:] }
        let byCorrelation = settings.gnssBias != nil
        guard !settings.scanCombined.isEmpty || byCorrelation else { return [:] }
        var groups: [ScanKey: [Fix]] = [:]
        for case .fix(let f) in upstream where isLooseInput(f)
            && (settings.scanCombined.contains(f.source)
                || (byCorrelation && f.errorCorrelation != nil && Settings.scanCombinable.contains(f.source)))
            && !superseded.contains(SourceAt(source: f.source, subject: f.subject, time: f.time)) {
            groups[ScanKey(subject: f.subject, time: f.time), default: []].append(f)
        }
        return groups.isEmpty ? groups : groups.filter { $0.value.count > 1 }
    }

    /// One fix for a scan's group: the fast covariance intersection of the members' R = α²Σ
    /// (α with the repeat factor, as `update` would apply it), credited to the member with the
    /// smallest trace of R (its counters, gate run and divergence restart).
    private func intersect(_ scan: [Fix], _ context: PipelineContext) -> Fix? {
        let group = settings.bestWiFiSource ? Self.bestHeldOut(scan, model: context.reference.radioUncertainty) : scan
        let t = track(group[0].subject, context)
        var members: [(position: SIMD2<Double>, covariance: Covariance2)] = []
        var lead: (Fix, Double)?
        for f in group where f.covariance.determinant > 0 && f.position.x.isFinite && f.position.y.isFinite {
            // As `update`: the fix that starts the filter is not counted as a repeat.
            let a = t.filter.isInitialized ? alpha(f, t) : baseInflation(f, t, starting: true), r = f.covariance.scaled(a * a)
            members.append((f.position, r))
            if lead == nil || r.trace < lead!.1 { lead = (f, r.trace) }
        }
        guard let (l, _) = lead, let c = CovarianceIntersection.fast(members) else { return nil }
        var out = Fix(time: l.time, position: c.position, covariance: c.covariance, source: l.source, subject: l.subject)
        out.errorCorrelation = l.errorCorrelation
        return out
    }

    /// The members of a scan's group to fuse (`Settings.bestWiFiSource`): when every member
    /// carries an error correlation (a radio-map WiFi fix) and its source a held-out mean error
    /// in `model`, those whose error is within 1 mm of the smallest; else the whole group.
    static func bestHeldOut(_ group: [Fix], model: RadioUncertaintyModel?) -> [Fix] {
        guard let model, group.count > 1 else { return group }
        var errors: [Double] = []
        for f in group {
            guard f.errorCorrelation != nil, Settings.scanCombinable.contains(f.source),
                  let e = model.terms[f.source.rawValue]?.heldOutMeanError, e.isFinite else { return group }
            errors.append(e)
        }
        let best = errors.min()!
        return zip(group, errors).filter { $0.1 <= best + 0.001 }.map(\.0)
    }

    /// α of a loose fix: the source's inflation, × √k for the k-th identical fix in a row
    /// (`repeat_inflation`; counts the fix, so call once per fix).
    private func alpha(_ f: Fix, _ t: FusionTrack) -> Double {
        var alpha = baseInflation(f, t)
        if settings.repeatInflation {
            // The k-th identical fix in a row (a serving cell, a TA that has not changed) carries no
            // new information about the position: R × k, so n repeats add ≈ ln n, not n, fixes' worth.
            let c = f.covariance
            let k = t.repeatCount(of: .fix(f.source), value: [f.position.x, f.position.y, c.ee, c.en, c.nn])
            alpha *= Double(k).squareRoot()
        }
        return alpha
    }

    /// α of a loose fix before the repeat factor: `radioMapInflation` for a fix carrying its radio
    /// map's error correlation that the bias block will take (the block is on and not serving
    /// GNSS fixes; `starting`: the fix (re)starts the filter, which primes the block with its
    /// family), else the source's `inflation`.
    private func baseInflation(_ f: Fix, _ t: FusionTrack, starting: Bool = false) -> Double {
        if settings.gnssBias != nil, FusionTrack.biasFamily(source: f.source, correlation: f.errorCorrelation) == .radio,
           starting || t.biasFamily != .gnss {
            return settings.radioMapInflation
        }
        return inflation[f.source] ?? 1
    }

    /// α²·λ of a fix without the repeat factor: the scale its R enters with (1 when `prescaled`:
    /// a scan's intersection is already R), `baseInflation` squared times the source's adaptive
    /// accuracy scale. The one expression of it for the start, the updates' uninformative-fix
    /// tests and the platform evidence.
    private func scale2(_ f: Fix, _ t: FusionTrack, prescaled: Bool, starting: Bool = false) -> Double {
        prescaled ? 1 : pow(baseInflation(f, t, starting: starting), 2) * (t.accuracyScales[f.source]?.value ?? 1)
    }

    /// The loose fixes of this event that a fix of a superseding source (`Settings.superseding`)
    /// for the same phone and time makes redundant.
    private func supersededFixes(_ upstream: [StageResult]) -> Set<SourceAt> {
        guard !settings.superseding.isEmpty, upstream.count > 1 else { return [] }
        var out: Set<SourceAt> = []
        for case .fix(let g) in upstream where isLooseInput(g) {
            for s in settings.superseding[g.source] ?? [] { out.insert(SourceAt(source: s, subject: g.subject, time: g.time)) }
        }
        return out
    }

    /// One output per phone and time: when one event brings several fixes (a scan's wcl and
    /// hapel, a peer round's ranges), the posterior after all of them, not the intermediate
    /// states (which would weigh that epoch several times in the scores).
    static func lastPerSubjectAndTime(_ results: [StageResult]) -> [StageResult] {
        var out: [StageResult] = []
        out.reserveCapacity(results.count)
        for r in results {
            if case .fix(let f) = r, case .fix(let g)? = out.last, g.subject == f.subject, g.time == f.time {
                out[out.count - 1] = r
            } else if case .fix(let f) = r,
                      let i = out.lastIndex(where: { if case .fix(let g) = $0 { return g.subject == f.subject && g.time == f.time } else { return false } }) {
                out.remove(at: i); out.append(r)
            } else {
                out.append(r)
            }
        }
        return out
    }

    private func gate(_ m: any MeasurementModel) -> Double? {
        guard let p = m.gateProbability, let g = settings.gateProbability else { return nil }
        return ChiSquare.quantile(min(p, g), dof: m.dimension)
    }

    private func track(_ device: String, _ context: PipelineContext) -> FusionTrack {
        if let (d, t) = lastTrack, d == device { return t }        // 100 Hz IMU: skip the hash lookup
        if let t = tracks[device] { lastTrack = (device, t); return t }
        let calibration = stepLength(context)
        let t: FusionTrack
        if let old = spare.popLast(), let ekf = old.filter as? ExtendedKalmanFilter {
            // A reset trace's track (ekf only, `reset`): the state of a new one, without allocating
            // the track, its filter and its source maps again (`FusionTrack.recycle`). The filter's
            // motion is `makeFilter`'s for `settings.motion.layout`: `settings.motion` itself.
            ekf.restart(motion: settings.motion)
            old.recycle(declinationDegrees: context.header.declination, logNIS: logNIS)
            t = old
        } else {
            t = FusionTrack(filter: makeFilter(layout: settings.motion.layout, device: device, walls: context.reference.walls),
                            pdr: PedestrianDeadReckoning(declinationDegrees: context.header.declination),
                            historySeconds: settings.historySeconds, recordEpochs: recordEpochs, logNIS: logNIS)
        }
        t.pdr.weinbergK = calibration?.weinbergK ?? settings.weinbergK
        t.interpolatesStrides = settings.strideInterpolation
        t.stepScaleSigma = calibration?.scaleSigma
        if settings.platform == .vehicle { t.filter.motion.constantVelocity.q = settings.vehicleQ }
        t.platform = settings.platform == .auto ? PlatformEvidence(threshold: settings.vehicleSpeed) : nil
        if let pf = t.filter as? ParticleFilter { pf.gnssBias = settings.gnssBias } else { t.gnssBias = settings.gnssBias }
        for s in settings.adaptiveAccuracy { t.accuracyScales[s] = AccuracyScale(window: settings.adaptiveAccuracyWindow) }
        tracks[device] = t
        deviceOrder.append(device)
        lastTrack = (device, t)
        return t
    }

    /// The fitted step length that applies (`Settings.calibratedStepLength`), if any.
    private func stepLength(_ context: PipelineContext) -> StepLengthCalibration? {
        settings.calibratedStepLength ? context.reference.stepLength : nil
    }

    private func makeFilter(layout: StateLayout, device: String, walls: [Wall]) -> any FusionFilter {
        var motion = settings.motion
        motion.layout = layout
        switch settings.kind {
        case .ekf: return ExtendedKalmanFilter(motion: motion)
        case .ukf: return UnscentedKalmanFilter(motion: motion, sigma: settings.sigmaPoints)
        case .pf:
            // One stream per phone: the seed mixed with the phone id, so phones are independent
            // and the result does not depend on the order phones appear in.
            var h: UInt64 = 0xcbf2_9ce4_8422_2325
            for b in device.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            let pf = ParticleFilter(motion: motion, count: settings.particles, seed: SplitMix64.finalize(settings.seed ^ h))
            pf.resampleThreshold = settings.resampleThreshold
            pf.roughening = settings.roughening
            pf.regularization = settings.regularization
            if settings.useWalls { pf.walls = walls }
            pf.tracksLineage = recordEpochs                     // the particle smoother's genealogy
            return pf
        }
    }

    /// Steps and absolute headings from the phone's PDR into the filter.
    /// Appends to `out` (no array per IMU sample); most samples complete no step and no heading.
    private func drainPDR(_ t: FusionTrack, device: String, into out: inout [StageResult]) {
        let steps = t.pdr.takeSteps()
        let heading = t.pdr.takeHeading()
        if steps.isEmpty && heading == nil { return }
        guard t.filter.isInitialized, t.filter.motion.layout == .step else { return }
        for s in steps {
            t.apply(.step(StepInput(time: s.time, length: s.length, headingChange: s.headingChange)), gate: gate)
            if s.time - t.lastEmitTime >= settings.outputInterval { out.append(emit(t, device: device)) }
        }
        if let h = heading, h.time - t.lastHeadingUpdate >= settings.headingInterval {
            t.lastHeadingUpdate = h.time
            let floor = settings.headingSigma * settings.headingSigma
            let variance = settings.headingSigmaFromField ? max(floor, h.variance ?? floor) : floor
            t.apply(.heading(time: h.time, value: h.heading, variance: variance), gate: gate)
        }
    }

    /// `prescaled`: the fix's covariance is already R (a scan's intersection): no α, no repeat factor.
    /// Appends the output, if any, to `out` (an array returned per fix and appended cost ≈ 1k
    /// instructions per report).
    /// `atRest`: the receiver reported a zero velocity with this fix (the re-solution re-test).
    private func update(fix f: Fix, _ context: PipelineContext, prescaled: Bool = false, atRest: Bool = false, into out: inout [StageResult]) {
        if let r = update(fix: f, context, prescaled: prescaled, atRest: atRest) { out.append(r) }
    }

    private func update(fix f: Fix, _ context: PipelineContext, prescaled: Bool, atRest: Bool) -> StageResult? {
        let t = track(f.subject, context)
        guard f.covariance.determinant > 0, f.covariance.determinant.isFinite, f.position.x.isFinite, f.position.y.isFinite else { return nil }
        // The hold test and its memory only where holds are not fused (`gnss_hold_updates: false`):
        // the default fuses every fix, and this runs once per fix of every report.
        var held = false
        if !settings.gnssHoldUpdates && f.source == .gnss && !prescaled {
            held = t.isGNSSHold(f); t.lastGNSS = (f.position, f.covariance)
        }
        if !t.filter.isInitialized {
            guard initialize(t, at: f, prescaled: prescaled) else { return nil }
            return emit(t, device: f.subject)
        }
        if let s = t.start, s.source == f.source {
            // The start fix carried no information at the scale of this one (a receiver's first fix
            // reporting σ 10⁸ m, "position unknown"), and neither does the filter now (no informative
            // fix since, e.g. a second such fix): start again here instead of updating. Updating
            // would pin only p + b of the GNSS bias block primed from the absurd fix's Σ_b and leave p
            // and b each ≈ Σ_start, correlated to −1: the joint covariance then loses positive
            // definiteness to rounding (docs/fusion.md, "An absurd reported accuracy"). Dropping the
            // start fix changes the posterior by less than its share of the information, < 1/ratio.
            // Both the start fix's and the filter's variance must exceed it: after a good fix the
            // filter's is small, and a long outage alone (a large P, a good start) never restarts.
            let r = Self.uninformativeRatio * scale2(f, t, prescaled: prescaled, starting: true) * f.covariance.trace
            if r < s.trace, case let p = t.filter.covariance, r < p[0, 0] + p[1, 1] {
                guard initialize(t, at: f, keepingHeading: true, prescaled: prescaled) else { return nil }
                return emit(t, device: f.subject)
            }
        }
        if f.source == .gnss, !prescaled, case let p = t.filter.covariance, case let prior = p[0, 0] + p[1, 1], prior > 0,
           Self.uninformativeRatio * prior < scale2(f, t, prescaled: false) * f.covariance.trace {
            // A GNSS fix 100× less certain (in σ) than the filter: it would get no weight, but its Σ_b
            // would become the bias's stationary covariance and spend the next good fix on the
            // bias (a mid-track fix reporting σ 10⁸ m: 20 s of a track up to 3× worse, docs/fusion.md).
            // It carries less than 10⁻⁴ of the information: the filter predicts to its time, no update.
            t.apply(.predict(time: f.time), gate: gate)
            t.counters[f.source, default: SourceCounters()].uninformative += 1
            return emit(t, device: f.subject)
        }
        if held {
            t.apply(.predict(time: f.time), gate: gate)
            t.counters[f.source, default: SourceCounters()].held += 1
            return emit(t, device: f.subject)
        }
        let alpha = prescaled ? 1 : alpha(f, t)
        let m = PositionMeasurement(fix: f, inflation: alpha, gateProbability: 0.99)
        guard var r = t.apply(.update(m), gate: gate) else { return nil }
        if r.outcome == .gated, let start = t.startFix, start.source == f.source, t.filter.motion.layout == .constantVelocity {
            // The one-point start assumed rest (v = 0 ± initial_speed_sigma_mps) and the next fix
            // says otherwise (a car): start again from the two fixes (§7.5 track initiation).
            _ = initialize(t, at: f, keepingHeading: true, previous: start, prescaled: prescaled)
            return emit(t, device: f.subject)
        }
        t.startFix = nil
        if r.outcome == .gated, atRest, let again = retestAsResolution(t, r) { r = again }
        if r.outcome == .gated, let again = retestAsManoeuvre(t, r) { r = again }
        if r.outcome == .gated || r.outcome == .singular {
            // A fix refused as singular (S not positive definite: the filter's covariance is broken)
            // counts like a gated one: otherwise a broken state that refuses every fix is never
            // restarted (FusionStageTests.singularUpdatesCountTowardTheRestart).
            t.consecutiveGated[f.source, default: 0] += 1
            if t.consecutiveGated[f.source]! >= settings.divergenceRejections {
                // Divergence (§7.5): the filter disagrees with a run of this source's fixes.
                t.reinitializations += 1
                let previous = t.previousGated[f.source]
                t.consecutiveGated.removeAll()
                t.previousGated.removeAll()
                _ = initialize(t, at: f, keepingHeading: true, previous: previous, prescaled: prescaled)
            } else {
                t.previousGated[f.source] = f
            }
        } else if r.outcome == .accepted {
            // An absent source counts 0 (`default: 0` above): removing it is the reset, and with
            // nothing gated (most tracks) neither dictionary is touched.
            t.consecutiveGated[f.source] = nil
            t.previousGated[f.source] = nil
            if f.source == .gnss, t.platform != nil {
                // `platform: auto`: an accepted fix's R (α² λ Σ, without the repeat factor) bounds
                // the speed it shows (`PlatformEvidence`); gated outliers never count.
                let a2 = scale2(f, t, prescaled: prescaled)
                if t.platform!.observe(time: f.time, position: SIMD2(f.position.x, f.position.y), variance: a2 * (f.covariance.ee + f.covariance.nn)) {
                    t.filter.motion.constantVelocity.q = settings.vehicleQ
                }
            }
        }
        return emit(t, device: f.subject)
    }

    /// A filter started at a fix whose variance (tr R) is more than this many times a later fix of
    /// the same source's is started again at that fix when its position variance (tr P_pp) is too
    /// (σ 100× larger: the start holds < 10⁻⁴ of the information, and nothing better came since);
    /// a GNSS fix whose variance is more than this many times the filter's position
    /// variance (tr P_pp) is not fused (counted `uninformative`). Only an absurd accuracy does that;
    /// no bundled trace or recording has one.
    static let uninformativeRatio = 1e4

    /// S2 manoeuvre test. The constant-velocity q₀ describes cruising; real vehicles turn and
    /// brake in bursts (GSDC drive, SPAN truth: yaw rate RMS 2.4°/s, but up to 35°/s in turns),
    /// which a Gaussian q₀ cannot hold: the filter, confident in its velocity, gates the fixes of
    /// a turn and drifts off (42 m on that drive). A gated fix is therefore tested once more
    /// from the same prior epoch under the manoeuvre hypothesis: braking or accelerating at
    /// σ_a = `cv_manoeuvre_accel_mps2` and turning at σ_ω = `cv_turn_rate_sigma_deg_per_s` at the
    /// filter's speed add acceleration PSD σ_a² + σ_ω² |v|² (m²/s³ over a 1 s correlation time;
    /// |v|² estimated without its noise bias, |v̂|² − tr P_vv). The fix is
    /// accepted if it passes the gate under it (a one-step hard-decision form of manoeuvre
    /// detection, Bar-Shalom, Li & Kirubarajan 2001, §11.2–11.3); a walker at 1.4 m/s or a
    /// filter with an uncertain velocity gains little, so outliers stay gated. Both 0 = off.
    ///
    /// S1 has the same test for the start of walking: a fix gated under the stationary diffusion
    /// (the IMU showed the phone still) is tested once more under the walking diffusion — the
    /// first centimetres of a start, or a slow arm movement, are below the detector's thresholds.
    /// Fixes and tight-coupled measurements (TA range, TDoA, peer range…) get the re-test alike.
    private func retestAsManoeuvre(_ t: FusionTrack, _ r: UpdateRecord) -> UpdateRecord? {
        if t.filter.motion.layout == .step {
            guard t.lastPredictionStill else { return nil }
            t.allowStill = false
            defer { t.allowStill = true }
            return t.reapplyLast(r, gate: gate)
        }
        guard t.filter.motion.layout == .constantVelocity, settings.cvTurnRateSigma > 0 || settings.cvManoeuvreAcceleration > 0 else { return nil }
        let v: SIMD4<Double> = t.filter.mean, p = t.filter.covariance
        let speed2 = max(0, v[2] * v[2] + v[3] * v[3] - p[2, 2] - p[3, 3])
        let along = settings.cvManoeuvreAcceleration, across2 = settings.cvTurnRateSigma * settings.cvTurnRateSigma * speed2
        return t.filter.withMotion({ $0.constantVelocity.q += along * along + across2 }) { t.reapplyLast(r, gate: gate) }
    }

    /// Re-solution test of a GNSS fix gated while the receiver reports itself at rest (its
    /// velocity with this fix is exactly zero, and the filter accepted it). At rest the fix cannot
    /// have moved by its innovation, so the only explanation inside the model is its error: a
    /// receiver that re-computes its solution (a held solution released, another satellite set)
    /// starts a new error, which the Gauss–Markov bias (continuous over τ) does not allow as a step.
    /// The fix is tested once more with the bias re-drawn (`GNSSBias.redraw`: a new bias
    /// independent of the old one, B = Σ_b). Accepted, the position moves by
    /// P_pp (P_pp + Σ_b + R_w)⁻¹ ν: the filter averages the receiver's independent solutions instead
    /// of gating the new one until a divergence restart jumps to it. Not accepted, the first
    /// update is applied once more, so nothing differs from a fix without the re-test (nil is
    /// returned and the manoeuvre re-test follows as before). GNSS bias block only (ekf, ukf,
    /// their smoother; the particle filter keeps its own biases).
    private func retestAsResolution(_ t: FusionTrack, _ r: UpdateRecord) -> UpdateRecord? {
        guard t.gnssBias?.isPrimed == true else { return nil }
        t.redrawsBias = true
        let again = t.reapplyLast(r, gate: gate)
        t.redrawsBias = false
        guard let again else { return nil }
        if again.outcome == .accepted { return again }
        _ = t.reapplyLast(again, gate: gate)
        return nil
    }

    /// Starts the phone's filter at a fix. Returns false while waiting for a heading (S1, Kalman).
    ///
    /// S2 with the `previous` fix of a gated run: two-point differencing initiation (Bar-Shalom,
    /// Li & Kirubarajan 2001, §5.5.3), v = (z − z₋)/Δt, P_vv = (R + R₋)/Δt², P_pv = R/Δt, so a
    /// filter that lost a vehicle restarts at its speed instead of at rest (at rest ± 1.5 m/s it
    /// would gate the next fixes again and cycle through re-initialisations).
    private func initialize(_ t: FusionTrack, at f: Fix, keepingHeading: Bool = false, previous: Fix? = nil, prescaled: Bool = false) -> Bool {
        let alpha2 = scale2(f, t, prescaled: prescaled, starting: true)
        let c = f.covariance.scaled(alpha2)
        let layout: StateLayout
        switch settings.layout {
        case .step: layout = .step
        case .cv: layout = .constantVelocity
        case .auto: layout = t.seenIMU ? .step : .constantVelocity
        }
        if t.filter.motion.layout != layout { t.filter.motion.layout = layout }
        var x = SIMD4<Double>(f.position.x, f.position.y, 0, 0)
        var p = Mat4.zero
        var differenced: Double?
        p[0, 0] = c.ee; p[0, 1] = c.en; p[1, 0] = c.en; p[1, 1] = c.nn
        switch layout {
        case .step:
            let previous = t.filter.isInitialized ? t.filter.mean[2] : nil
            let psi = (keepingHeading ? previous : nil) ?? t.pdr.heading
            if let psi {
                x[2] = psi; p[2, 2] = pow(settings.initialHeadingSigma, 2)
            } else if settings.kind == .pf {
                x[2] = 0; p[2, 2] = .pi * .pi
            } else {
                return false
            }
            x[3] = t.filter.isInitialized && keepingHeading ? t.filter.mean[3] : 1
            p[3, 3] = pow(t.stepScaleSigma ?? settings.initialScaleSigma, 2)
        case .constantVelocity:
            if let g = previous, case let dt = f.time - g.time, dt > 0, g.covariance.determinant > 0 {
                let cg = g.covariance.scaled(alpha2)
                x[2] = (f.position.x - g.position.x) / dt; x[3] = (f.position.y - g.position.y) / dt
                p[2, 2] = (c.ee + cg.ee) / (dt * dt); p[2, 3] = (c.en + cg.en) / (dt * dt)
                p[3, 2] = p[2, 3]; p[3, 3] = (c.nn + cg.nn) / (dt * dt)
                p[0, 2] = c.ee / dt; p[0, 3] = c.en / dt; p[1, 2] = c.en / dt; p[1, 3] = c.nn / dt
                p[2, 0] = p[0, 2]; p[3, 0] = p[0, 3]; p[2, 1] = p[1, 2]; p[3, 1] = p[1, 3]
                differenced = dt
            } else {
                p[2, 2] = pow(settings.initialSpeedSigma, 2); p[3, 3] = p[2, 2]
            }
        }
        let family = FusionTrack.biasFamily(source: f.source, correlation: f.errorCorrelation)
        t.initialize(mean: x, covariance: p, time: f.time,
                     correlatedFix: family.map { ($0, c) }, errorCorrelation: family != nil ? f.errorCorrelation : nil,
                     differencedOver: differenced)
        t.startFix = layout == .constantVelocity && previous == nil ? f : nil
        t.start = (f.source, c.trace)
        t.counters[f.source, default: SourceCounters()].initializations += 1
        _ = t.pdr.takeSteps()
        return true
    }

    private func emit(_ t: FusionTrack, device: String) -> StageResult {
        t.lastEmitTime = t.filter.time
        t.markEmitted()
        return .fix(t.reportedFix(source: source, subject: device))
    }
}

extension FusionStage {
    /// Builds the stage from its pipeline options (`Options`: keys, units and defaults; the
    /// ukf reads `Options.ukf`, the pf `Options.pf` on top of `Options.ekf`).
    public convenience init(kind: Kind, options o: StageOptions, emitting source: Source? = nil, recordEpochs: Bool = false) throws {
        typealias O = Options
        var s = Settings(kind: kind)
        s.layout = try o.choice(O.layout)
        s.inputs = try Self.sources(o, O.inputs)
        s.tight = try Self.sources(o, O.tight)
        s.adaptiveAccuracy = try Self.sources(o, O.adaptiveAccuracy)
        s.adaptiveAccuracyWindow = try o.double(O.adaptiveAccuracyWindow)
        s.repeatInflation = try o.bool(O.repeatInflation)
        s.gnssHoldUpdates = try o.bool(O.gnssHolds)
        if !(try o.bool(O.supersede)) { s.superseding = [:] }
        s.scanCombined = try o.bool(O.combineScanFixes) ? Settings.scanCombinable : []
        s.bestWiFiSource = try o.bool(O.bestWiFiSource)
        s.radioMapInflation = try o.double(O.radioMapInflation)
        guard s.radioMapInflation > 0, s.radioMapInflation.isFinite else {
            throw ConfigurationError(path: "\(o.name).\(O.radioMapInflation.key)", reason: "expected a number > 0, got \(s.radioMapInflation)")
        }
        if try o.bool(O.gnssBias) {
            let tau = try o.double(O.gnssBiasTau), beta = try o.double(O.gnssBiasFraction)
            guard tau > 0, tau.isFinite else { throw ConfigurationError(path: "\(o.name).\(O.gnssBiasTau.key)", reason: "expected a time > 0 s, got \(tau)") }
            guard beta > 0, beta < 1 else { throw ConfigurationError(path: "\(o.name).\(O.gnssBiasFraction.key)", reason: "expected 0 < β < 1, got \(beta)") }
            let window = try o.double(O.gnssBiasAdaptiveWindow)
            guard window == 0 || (window >= 1 && window.isFinite) else { throw ConfigurationError(path: "\(o.name).\(O.gnssBiasAdaptiveWindow.key)", reason: "expected 0 (off) or a window ≥ 1 fix, got \(window)") }
            s.gnssBias = GNSSBias(correlationTime: tau, biasFraction: beta, adaptiveWindow: window > 0 ? window : nil)
        } else {
            s.gnssBias = nil
            s.inflation[.gnss] = Settings.defaultInflation[.gnss]
        }
        if let v = o.values[O.inflation.key] {
            guard case .map(let m) = v else { throw ConfigurationError(path: "\(o.name).inflation", reason: "expected a map source: factor") }
            for (k, val) in m {
                guard let src = Source(rawValue: k) else { throw ConfigurationError(path: "\(o.name).inflation.\(k)", reason: "unknown source") }
                guard case .number(let a) = val, a > 0 else { throw ConfigurationError(path: "\(o.name).inflation.\(k)", reason: "expected a number > 0") }
                s.inflation[src] = a
            }
        }
        let g = try o.double(O.gateProbability)
        guard g > 0, g <= 1 else { throw ConfigurationError(path: "\(o.name).gate_probability", reason: "expected 0 < p ≤ 1 (1 = no gate)") }
        s.gateProbability = g < 1 ? g : nil
        s.headingSigma = Angle.radians(try o.double(O.headingSigma))
        s.headingSigmaFromField = try o.bool(O.headingSigmaFromField)
        s.headingInterval = try o.double(O.headingInterval)
        s.initialHeadingSigma = Angle.radians(try o.double(O.initialHeadingSigma))
        s.initialScaleSigma = try o.double(O.initialScaleSigma)
        s.initialSpeedSigma = try o.double(O.initialSpeedSigma)
        s.weinbergK = try o.double(O.weinbergK)
        s.calibratedStepLength = o.values[O.weinbergK.key] == nil
        s.outputInterval = try o.double(O.outputInterval)
        s.divergenceRejections = try o.int(O.divergenceRejections)
        s.historySeconds = try o.double(O.history)
        var step = StepMotionModel()
        step.lengthSigmaFraction = try o.double(O.stepLengthSigmaFraction)
        step.headingSigmaPerStep = Angle.radians(try o.double(O.stepHeadingSigma))
        step.scaleSigmaPerStep = try o.double(O.stepScaleSigma)
        step.positionDiffusion = try o.double(O.positionDiffusion)
        step.stationaryPositionDiffusion = try o.double(O.stationaryPositionDiffusion)
        s.strideInterpolation = try o.bool(O.strideInterpolation)
        step.headingDiffusion = pow(Angle.radians(try o.double(O.headingDiffusion)), 2)
        s.motion.step = step
        s.motion.constantVelocity.q = try o.double(O.cvQ)
        s.platform = try o.choice(O.platform)
        s.vehicleQ = try o.double(O.cvVehicleQ)
        s.vehicleSpeed = try o.double(O.vehicleSpeed)
        s.cvTurnRateSigma = Angle.radians(try o.double(O.cvTurnRateSigma))
        s.cvManoeuvreAcceleration = try o.double(O.cvManoeuvreAcceleration)
        if kind == .pf {
            s.particles = try o.int(O.particles)
            s.seed = UInt64(try o.int(O.seed))
            s.resampleThreshold = try o.double(O.resampleThreshold)
            s.roughening = try o.double(O.roughening)
            s.regularization = try o.double(O.regularization)
            s.useWalls = try o.bool(O.walls)
        }
        if kind == .ukf {
            s.sigmaPoints = SigmaPointParameters(alpha: try o.double(O.ukfAlpha), beta: try o.double(O.ukfBeta), kappa: try o.double(O.ukfKappa))
        }
        for (spec, value, ok) in [(O.divergenceRejections, Double(s.divergenceRejections), s.divergenceRejections >= 1),
                                  (O.particles, Double(s.particles), s.particles >= 10),
                                  (O.regularization, s.regularization, s.regularization >= 0 && s.regularization.isFinite),
                                  (O.headingSigma, s.headingSigma, s.headingSigma > 0),
                                  (O.cvTurnRateSigma, s.cvTurnRateSigma, s.cvTurnRateSigma >= 0),
                                  (O.cvVehicleQ, s.vehicleQ, s.vehicleQ >= 0 && s.vehicleQ.isFinite),
                                  (O.vehicleSpeed, s.vehicleSpeed, s.vehicleSpeed > 0 && s.vehicleSpeed.isFinite),
                                  (O.cvManoeuvreAcceleration, s.cvManoeuvreAcceleration, s.cvManoeuvreAcceleration >= 0),
                                  (O.outputInterval, s.outputInterval, s.outputInterval >= 0),
                                  (O.history, s.historySeconds, s.historySeconds >= 0),
                                  (O.adaptiveAccuracyWindow, s.adaptiveAccuracyWindow, s.adaptiveAccuracyWindow >= 1)] where !ok {
            throw ConfigurationError(path: "\(o.name).\(spec.key)", reason: "out of range: \(value)")
        }
        self.init(settings: s, emitting: source, recordEpochs: recordEpochs)
    }

    static func sources(_ o: StageOptions, _ spec: OptionSpec) throws -> Set<Source> {
        try sources(o, spec.key, default: Set(spec.strings.compactMap(Source.init(rawValue:))))
    }

    static func sources(_ o: StageOptions, _ key: String, default d: Set<Source>) throws -> Set<Source> {
        guard let v = o.values[key] else { return d }
        guard case .list(let l) = v else { throw ConfigurationError(path: "\(o.name).\(key)", reason: "expected a list of source names") }
        return try Set(l.map { item -> Source in
            guard case .string(let s) = item, let src = Source(rawValue: s), !src.isFusion else {
                throw ConfigurationError(path: "\(o.name).\(key)", reason: "unknown estimator source \(item)")
            }
            return src
        })
    }
}
