import Foundation

/// HAPEL — hidden-AP-estimation-based localisation with heading (Yoo, Kim, Kim 2014;
/// `docs/models.md` §3.2, a reconstruction [R]: the paper's full text was not read).
///
/// Per scan epoch t, with visible anchors V_t (the WCL selection), heading ψ_t and PDR
/// displacement Δp_t since the previous epoch:
/// 1. Prediction p̃_t = p̂_{t−1} + Δp_t (the first epoch is plain WCL). Consistency gate
///    (ours): hearing AP i at RSS_i places the phone within d_max,i = 10^((P0_i − (RSS_i −
///    2σ))/(10 n_i)) of it (2σ shadowing margin); if p̃_t is farther than that from any visible
///    AP, the prediction contradicts the scan and is reset to the plain WCL fix of the scan
///    (stops the recursion from drifting with an earlier bad estimate); that epoch selects no
///    hidden APs (step 3 needs a prediction, and the WCL fix is not one: selecting ahead of it
///    pushed the fix past the newly heard AP, e.g. mall-sparse-ap t = 22 s, 33 m vs WCL's 23 m).
/// 2. Hidden candidates H_t = map radios not heard in the scan with ‖a_j − p̃_t‖ ≤ R_sel.
/// 3. Heading selection (only when moving): S_t = { j ∈ H_t : (a_j − p̃_t)·u(ψ_t) ≥
///    ‖a_j − p̃_t‖ cos θ_sel }, θ_sel = 45° (APs ahead).
/// 4. Virtual RSS: V1 r̃_j = r_th − 1 dB; V2 r̃_j = min(r_th − 1, P0_j − 10 n log10‖a_j − p̃_t‖).
/// 5. WCL over V_t ∪ S_t with the WCL weight law.
/// Degenerate cases: not moving / no heading → plain WCL (flag none); no visible AP but a
/// previous estimate → the DR prediction p̃ with the `.extrapolated` flag and a covariance
/// grown by (0.1·distance walked)²; nothing at all → `.tooFewAnchors`.
/// Correlation caveat (§3.3): HAPEL reuses heading/PDR — filters should consume the WCL fix
/// and `HiddenAPMeasurement`, not HAPEL fixes, to avoid double counting.
public struct HAPELEstimator: Sendable {
    public enum Variant: String, Sendable, CaseIterable { case v1, v2 }

    public var wcl: WCLEstimator
    public var variant: Variant
    /// Device detection threshold r_th, dBm.
    public var rssThreshold: Double
    /// Selection radius R_sel, m; nil = 1.5 × median nearest-neighbour AP spacing of the map.
    public var selectionRadius: Double?
    /// Half-angle θ_sel of the heading cone, radians.
    public var selectionHalfAngle: Double
    /// Shadowing σ for the hidden-AP likelihood, dB.
    public var shadowingSigma: Double

    public init(wcl: WCLEstimator = WCLEstimator(), variant: Variant = .v2, rssThreshold: Double = -90,
                selectionRadius: Double? = nil, selectionHalfAngle: Double = Angle.radians(45), shadowingSigma: Double = 6) {
        self.wcl = wcl; self.variant = variant; self.rssThreshold = rssThreshold; self.selectionRadius = selectionRadius
        self.selectionHalfAngle = selectionHalfAngle; self.shadowingSigma = shadowingSigma
    }

    /// A radio of the map (BSSIDs merged by the WCL grouping rule).
    public struct MapRadio: Sendable {
        public var id: String
        public var bssid: String
        public var position: SIMD3<Double>
        public var p0: Double?
        public var pathLossExponent: Double?
        public var floor: Int?
    }

    /// Radios of the map, grouped like WCL groups BSSIDs.
    public func radios(_ map: [String: AccessPoint]) -> [MapRadio] {
        var g: [String: (sum: SIMD3<Double>, n: Int, ap: AccessPoint, bssid: String)] = [:]
        for (k, ap) in map.sorted(by: { $0.key < $1.key }) {
            let mac = MACAddress.normalize(k)
            if wcl.excludeLocallyAdministered, MACAddress.isLocallyAdministered(mac), (ap.radio ?? "").isEmpty { continue }
            let id = wcl.groupID(mac, ap: ap)
            if var e = g[id] { e.sum += ap.position; e.n += 1; g[id] = e } else { g[id] = (ap.position, 1, ap, mac) }
        }
        return g.map { MapRadio(id: $0.key, bssid: $0.value.bssid, position: $0.value.sum / Double($0.value.n),
                                p0: $0.value.ap.p0, pathLossExponent: $0.value.ap.pathLossExponent, floor: $0.value.ap.floor) }
            .sorted { $0.id < $1.id }
    }

    /// 1.5 × median nearest-neighbour spacing of the radios (10 m if fewer than two).
    public static func typicalSelectionRadius(_ radios: [MapRadio]) -> Double {
        guard radios.count >= 2 else { return 10 }
        var nn: [Double] = []
        for (i, a) in radios.enumerated() {
            var best = Double.infinity
            for (j, b) in radios.enumerated() where i != j {
                let d = SIMD2(a.position.x - b.position.x, a.position.y - b.position.y)
                best = min(best, (d * d).sum().squareRoot())
            }
            nn.append(best)
        }
        return 1.5 * (RadioStats.median(nn) ?? 10)
    }

    /// Step 1's gate: whether prediction p contradicts the visible anchors (see type doc).
    public func predictionContradicts(_ p: SIMD2<Double>, visible: [WCLAnchor]) -> Bool {
        visible.contains { a in
            let m = PathLossModel(anchor: SIMD3(a.position.x, a.position.y, 0), p0: a.p0 ?? wcl.defaultP0,
                                  exponent: a.pathLossExponent ?? wcl.defaultPathLossExponent)
            let dmax = m.range(forRSS: a.rss - 2 * shadowingSigma)
            let d = p - a.position
            return (d * d).sum() > dmax * dmax
        }
    }

    /// The path-loss model of a radio (map values or the WCL defaults).
    public func pathLoss(_ r: MapRadio, phoneUp: Double = 0) -> PathLossModel {
        PathLossModel(anchor: r.position, p0: r.p0 ?? wcl.defaultP0,
                      exponent: r.pathLossExponent ?? wcl.defaultPathLossExponent, phoneUp: phoneUp)
    }

    /// Steps 2–4: hidden candidates near the prediction and the heading-selected virtual anchors.
    public func hiddenAnchors(prediction p: SIMD2<Double>, heading: Double?, heard: Set<String>,
                              radios: [MapRadio], radius: Double) -> (candidates: [MapRadio], selected: [WCLAnchor]) {
        let cands = radios.filter { r in
            guard !heard.contains(r.id) else { return false }
            let d = SIMD2(r.position.x, r.position.y) - p
            return (d * d).sum() <= radius * radius
        }
        guard let psi = heading else { return (cands, []) }
        let u = Angle.unit(psi), c = cos(selectionHalfAngle)
        var sel: [WCLAnchor] = []
        for r in cands {
            let a = SIMD2(r.position.x, r.position.y), d = a - p
            let dist = (d * d).sum().squareRoot()
            guard (d * u).sum() >= dist * c else { continue }
            var rss = rssThreshold - 1
            if variant == .v2 { rss = min(rss, pathLoss(r).mean(p)) }
            sel.append(WCLAnchor(id: r.id, position: a, rss: rss, p0: r.p0, pathLossExponent: r.pathLossExponent,
                                 floor: r.floor, isVirtual: true))
        }
        return (cands, sel)
    }
}

/// Pipeline stage `hapel`: tracks heading and steps from the IMU, and at each WiFi scan emits
/// a HAPEL fix plus the hidden-AP "not heard" measurement for the particle filter.
public final class HAPELStage: PipelineStage {
    public let estimator: HAPELEstimator
    /// r_th from the stage options overrides the trace header's.
    let thresholdOverride: Double?
    private struct State {
        var tracker: PedestrianDeadReckoning
        var last: Fix?
    }
    /// Per device, boxed: a 100 Hz IMU stream updates its tracker in place through the last
    /// device's box without a hash look-up (measured with callgrind: 310 instructions per event).
    private final class StateBox { var state: State; init(_ s: State) { state = s } }
    private var states: [String: StateBox] = [:]
    private var lastState: (String, StateBox)?
    private var radiosCache: (count: Int, radios: [HAPELEstimator.MapRadio], radius: Double)?

    public init(estimator: HAPELEstimator = HAPELEstimator(), thresholdOverride: Double? = nil) {
        self.estimator = estimator; self.thresholdOverride = thresholdOverride
    }
    public var sources: [Source] { [.hapel] }
    /// The per-phone trackers and the map radios of the last reference data (keyed by count only).
    public func reset() { states = [:]; lastState = nil; radiosCache = nil }
    /// It never reads `upstream` (WCL's fix comes through `link`).
    public func readsPositionMeasurements(of source: Source) -> Bool { false }
    public func fresh() -> any PipelineStage { HAPELStage(estimator: estimator, thresholdOverride: thresholdOverride) }

    /// An earlier `wcl` stage of the same pipeline with the same WCL estimator (`link`), whose
    /// estimate of a scan is this stage's first-epoch fix (plain WCL) up to its source.
    private(set) var wcl: WCLStage?
    /// Takes the last `WCLStage` before this one whose estimator equals this one's WCL
    /// estimator (all options alike); none when they differ or there is none.
    public func link(_ stages: [any PipelineStage], at index: Int) {
        wcl = stages[..<index].compactMap { $0 as? WCLStage }.last.flatMap { $0.estimator == estimator.wcl ? $0 : nil }
        wcl?.keepsLast = true
    }

    /// The device's state, created (fresh tracker, no fix) on its first event.
    private func box(_ device: String, _ ctx: PipelineContext) -> StateBox {
        if let (d, b) = lastState, d == device { return b }
        let b: StateBox
        if let known = states[device] {
            b = known
        } else {
            b = StateBox(State(tracker: PedestrianDeadReckoning(declinationDegrees: ctx.header.declination), last: nil))
            states[device] = b
        }
        lastState = (device, b)
        return b
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        switch event.payload {
        case .imu(let s):
            // Updated in place: no copy of the state or the context per IMU sample.
            box(event.device, context).state.tracker.update(s, time: event.time)
            return []
        case .step(let s):
            box(event.device, context).state.tracker.step(s, time: event.time)
            return []
        case .wifi(let scan):
            let b = box(event.device, context)
            let out = estimate(scan, time: event.time, device: event.device, state: &b.state, context: context)
            guard context.reference.radioUncertainty != nil else { return out }
            return out.map { r in
                guard case .fix(let f) = r else { return r }
                return .fix(context.reference.wifiFix(f, scan: scan, rssMin: estimator.wcl.rssMin, maxAge: estimator.wcl.maxAge))
            }
        default:
            return []
        }
    }

    private func radios(_ ctx: PipelineContext) -> (radios: [HAPELEstimator.MapRadio], radius: Double) {
        if let c = radiosCache, c.count == ctx.reference.accessPoints.count { return (c.radios, c.radius) }
        let r = estimator.radios(ctx.reference.accessPoints)
        let rad = estimator.selectionRadius ?? HAPELEstimator.typicalSelectionRadius(r)
        radiosCache = (ctx.reference.accessPoints.count, r, rad)
        return (r, rad)
    }

    private func estimate(_ scan: WiFiScan, time: Double, device: String, state st: inout State,
                          context: PipelineContext) -> [StageResult] {
        var est = estimator
        est.rssThreshold = thresholdOverride ?? context.header.rssThreshold ?? estimator.rssThreshold
        let map = context.reference.accessPoints
        let dp = st.tracker.takeDisplacement()
        var out: [StageResult] = []
        guard let prev = st.last else {
            // First epoch: plain WCL (no map radios, no hidden APs: a one-scan report, e.g.
            // every geolocate request, ends here): the linked `wcl` stage's estimate of this scan
            // when it made one (same estimator, so the same fix but for its source), else our own.
            let first: Result<Fix, EstimationFailure>
            if let w = wcl?.lastEstimate(of: scan, time: time, device: device) {
                first = w.map { f in var f = f; f.source = .hapel; return f }
            } else {
                let visible = est.wcl.selectAnchors(merged: est.wcl.mergedAnchors(scan, time: time, map: map))
                first = est.wcl.fix(anchors: visible, time: time, source: .hapel, subject: device)
            }
            switch first {
            case .success(let f): st.last = f; out.append(.fix(f))
            case .failure(let r): out.append(.failure(source: .hapel, time: time, subject: device, reason: r))
            }
            return out
        }
        let merged = est.wcl.mergedAnchors(scan, time: time, map: map)
        let visible = est.wcl.selectAnchors(merged: merged)
        let heard = Set(merged.map(\.id))
        let (radios, radius) = self.radios(context)
        var pred = prev.position + dp
        var contradicted = false
        if est.predictionContradicts(pred, visible: visible), case .success(let w) = est.wcl.fix(anchors: visible, time: time) {
            pred = w.position; contradicted = true
        }
        let moving = st.tracker.isMoving(at: time)
        let heading = moving && !contradicted ? st.tracker.heading : nil
        let hidden = est.hiddenAnchors(prediction: pred, heading: heading, heard: heard, radios: radios, radius: radius)
        if !hidden.candidates.isEmpty {
            out.append(.measurement(HiddenAPMeasurement(time: time, bssids: hidden.candidates.map(\.bssid),
                                                        models: hidden.candidates.map { est.pathLoss($0) },
                                                        threshold: est.rssThreshold, sigma: est.shadowingSigma),
                                    subject: device))
        }
        if visible.isEmpty {
            // Dead reckoning only.
            let walked = (dp * dp).sum().squareRoot()
            let f = Fix(time: time, position: pred, covariance: prev.covariance + Covariance2(sigma: max(0.1 * walked, 0.5)),
                        source: .hapel, subject: device, usedCount: 0, flags: [.extrapolated])
            st.last = f
            out.insert(.fix(f), at: 0)
            return out
        }
        switch est.wcl.fix(anchors: visible + hidden.selected, time: time, source: .hapel, subject: device) {
        case .success(var f):
            f.usedCount = visible.count + hidden.selected.count
            st.last = f
            out.insert(.fix(f), at: 0)
        case .failure(let r):
            out.insert(.failure(source: .hapel, time: time, subject: device, reason: r), at: 0)
        }
        return out
    }

    /// The `hapel` options (defaults: `HAPELEstimator()`'s), plus every `wcl` option (same
    /// defaults; the weight law is shared).
    public enum Options {
        static let d = HAPELEstimator()
        public static let variant = OptionSpec.choice("variant", d.variant.rawValue, HAPELEstimator.Variant.allCases.map(\.rawValue),
            "v1 (RSS threshold) | v2 (model-based virtual RSS)")
        public static let selectionHalfAngle = OptionSpec.number("selection_half_angle_deg", Angle.degrees(d.selectionHalfAngle), unit: "deg",
            "hidden APs are searched ahead within this half-angle")
        public static let shadowingSigma = OptionSpec.number("shadowing_sigma_db", d.shadowingSigma, unit: "dB",
            "σ of the hidden-AP \"not heard\" likelihood")
        public static let rssThreshold = OptionSpec.number("rss_threshold", nil, unit: "dBm", example: d.rssThreshold,
            "default the trace header's detection threshold")
        public static let selectionRadius = OptionSpec.number("selection_radius_m", nil, unit: "m", example: 10,
            "default 1.5 × median AP spacing")
        public static let table = OptionTable(stage: "hapel", doc: "hidden-AP localisation with heading (all wcl options apply too)",
                                              options: [variant, selectionHalfAngle, shadowingSigma, rssThreshold, selectionRadius],
                                              includes: [WCLStage.Options.table])
    }

    public static func make(_ o: StageOptions) throws -> HAPELStage {
        let w = try WCLStage.estimator(o)
        let v: HAPELEstimator.Variant = try o.choice(Options.variant)
        let rsel = try o.optionalDouble(Options.selectionRadius)
        let th = try o.optionalDouble(Options.rssThreshold)
        let e = HAPELEstimator(wcl: w, variant: v, rssThreshold: th ?? Options.d.rssThreshold, selectionRadius: rsel,
                               selectionHalfAngle: Angle.radians(try o.double(Options.selectionHalfAngle)),
                               shadowingSigma: try o.double(Options.shadowingSigma))
        return HAPELStage(estimator: e, thresholdOverride: th)
    }
}
