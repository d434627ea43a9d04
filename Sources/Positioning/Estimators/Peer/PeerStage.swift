/// Pipeline stage `peer`: cooperative positioning of several phones from their own
/// fixes (any upstream sources, by default `fingerprint`, else `rss`, else `wcl`) and BeepBeep peer ranges
/// (`CooperativePositioning`, `BeepBeep`).
///
/// Flow per event:
/// * `peer_range` (recorded by `device` = A with `peer` = B): range D and σ from the sample
///   counters (or the phone's `d`), kept per unordered pair (latest wins). A
///   `PeerRangeMeasurement` for A is emitted when B has a recent position.
/// * an upstream `.fix` whose source is in `anchorSources`: stored as that phone's anchor (of
///   several such fixes for one phone in one event, the source listed first wins: `rss` has no
///   inward bias, `wcl` is the fallback where `rss` has too few or collinear APs);
///   then the phones linked to it by fresh ranges (breadth-first over the range graph)
///   and with fresh anchors are solved jointly and **that phone's** refined position is
///   emitted as a `peer` fix at the anchor's time (one peer fix per anchor fix, so the
///   availability is comparable with the anchor source). No fresh range → `.failure`.
///
/// Staleness: an anchor of age Δt is inflated by (v·Δt)² I and a range by (2v·Δt)²
/// (v = `motionSpeed`, m/s) — other phones may have moved since.
public final class PeerStage: PipelineStage {
    public var solver: CooperativePositioning
    /// Sources whose fixes serve as anchors, in order of preference.
    public var anchorSources: [Source]
    /// Maximum age of an anchor / a range used in a joint solve, s.
    public var anchorMaxAge: Double
    public var rangeMaxAge: Double
    /// Assumed pedestrian speed for staleness inflation, m/s.
    public var motionSpeed: Double
    /// Onset noise (samples) for ranges from sample counters; σ for `d` without `sigma`, m.
    public var onsetSigmaSamples: Double
    public var defaultRangeSigma: Double
    /// Extra range σ added in quadrature (body blocking, motion between beeps), m.
    public var rangeSigmaFloor: Double
    /// Temperature override, °C (nil: the header's, else 20 °C).
    public var temperature: Double?
    public var emitMeasurements: Bool

    private struct StoredRange { var time: Double; var range: Double; var sigma: Double }
    private var anchors: [String: Fix] = [:]
    private var lastPeerFix: [String: Fix] = [:]
    private var ranges: [String: [String: StoredRange]] = [:]

    public init(solver: CooperativePositioning = CooperativePositioning(anchorCorrelationDistance: CooperativePositioning.defaultAnchorCorrelationDistance), anchorSources: [Source] = [.fingerprint, .rss, .wcl],
                anchorMaxAge: Double = 5, rangeMaxAge: Double = 5, motionSpeed: Double = 0.5,
                onsetSigmaSamples: Double = 1, defaultRangeSigma: Double = 0.05, rangeSigmaFloor: Double = 0.05,
                temperature: Double? = nil, emitMeasurements: Bool = true) {
        self.solver = solver; self.anchorSources = anchorSources; self.anchorMaxAge = anchorMaxAge
        self.rangeMaxAge = rangeMaxAge; self.motionSpeed = motionSpeed; self.onsetSigmaSamples = onsetSigmaSamples
        self.defaultRangeSigma = defaultRangeSigma; self.rangeSigmaFloor = rangeSigmaFloor
        self.temperature = temperature; self.emitMeasurements = emitMeasurements
    }

    /// The `peer` options.
    public enum Options {
        public static let anchorSources = OptionSpec.sources("anchor_sources", ["fingerprint", "rss", "wcl"],
            "anchors of the phones, in order of preference")
        public static let anchorMaxAge = OptionSpec.number("anchor_max_age_s", 5, unit: "s")
        public static let rangeMaxAge = OptionSpec.number("range_max_age_s", 5, unit: "s")
        public static let motionSpeed = OptionSpec.number("motion_speed_mps", 0.5, unit: "m/s", "staleness inflation of old anchors and ranges")
        public static let onsetSigma = OptionSpec.number("onset_sigma_samples", 1, unit: "samples", "onset noise of the BeepBeep sample counters")
        public static let rangeSigma = OptionSpec.number("range_sigma_m", 0.05, unit: "m", "σ for ranges the phone reports without one")
        public static let rangeSigmaFloor = OptionSpec.number("range_sigma_floor_m", 0.05, unit: "m", "added in quadrature (body blocking, motion)")
        public static let anchorCorrelation = OptionSpec.number("anchor_correlation_m", CooperativePositioning.defaultAnchorCorrelationDistance,
            unit: "m", "phones' anchor errors correlate as exp(−d/d_c) (shared shadowing;\n3GPP TR 38.901 indoor NLOS 6 m); 0 = independent anchors")
        public static let anchorIndependentFraction = OptionSpec.number("anchor_independent_fraction", 0.1, advanced: true,
            "share of an anchor's error variance its own scan adds")
        public static let mdsInit = OptionSpec.bool("mds_init", true, advanced: true, "initialise by classical MDS")
        public static let emitMeasurements = OptionSpec.bool("emit_measurements", true)
        public static let temperature = OptionSpec.number("temperature_c", nil, unit: "°C", example: 20, "default the header's, else 20")
        public static let table = OptionTable(stage: "peer", doc: "cooperative positioning from peer-phone acoustic ranges", options: [
            anchorSources, anchorMaxAge, rangeMaxAge, motionSpeed, onsetSigma, rangeSigma, rangeSigmaFloor, anchorCorrelation,
            anchorIndependentFraction, mdsInit, emitMeasurements, temperature,
        ])
    }

    /// Build from pipeline options (`Options`).
    public convenience init(options o: StageOptions) throws {
        let sources = try o.sourceList(Options.anchorSources)
        let tc = try o.optionalDouble(Options.temperature)
        let dc = try o.double(Options.anchorCorrelation)
        let nu = try o.double(Options.anchorIndependentFraction)
        guard dc >= 0, dc.isFinite else { throw ConfigurationError(path: "\(o.name).anchor_correlation_m", reason: "expected a distance ≥ 0 m, got \(dc)") }
        guard nu > 0, nu <= 1 else { throw ConfigurationError(path: "\(o.name).anchor_independent_fraction", reason: "expected 0 < ν ≤ 1, got \(nu)") }
        self.init(solver: CooperativePositioning(useMDSInitialisation: try o.bool(Options.mdsInit),
                                                 anchorCorrelationDistance: dc, anchorIndependentFraction: nu),
                  anchorSources: sources, anchorMaxAge: try o.double(Options.anchorMaxAge),
                  rangeMaxAge: try o.double(Options.rangeMaxAge),
                  motionSpeed: try o.double(Options.motionSpeed),
                  onsetSigmaSamples: try o.double(Options.onsetSigma),
                  defaultRangeSigma: try o.double(Options.rangeSigma),
                  rangeSigmaFloor: try o.double(Options.rangeSigmaFloor),
                  temperature: tc, emitMeasurements: try o.bool(Options.emitMeasurements))
    }

    public var sources: [Source] { [.peer] }
    /// The anchors, last peer fixes and stored ranges (the public `var`s are configuration).
    public func reset() {
        anchors = [:]; lastPeerFix = [:]; ranges = [:]
    }
    /// Peer ranges, and the upstream fixes of its anchor sources (nothing else changes its state).
    public var inputs: StageInputs { StageInputs(events: .peerRange, upstream: true) }
    /// Upstream, only fixes (its anchors).
    public func readsPositionMeasurements(of source: Source) -> Bool { false }
    public func fresh() -> any PipelineStage {
        PeerStage(solver: solver, anchorSources: anchorSources, anchorMaxAge: anchorMaxAge, rangeMaxAge: rangeMaxAge,
                  motionSpeed: motionSpeed, onsetSigmaSamples: onsetSigmaSamples, defaultRangeSigma: defaultRangeSigma,
                  rangeSigmaFloor: rangeSigmaFloor, temperature: temperature, emitMeasurements: emitMeasurements)
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        var out: [StageResult] = []
        if case .peerRange(let pr) = event.payload {
            out += addRange(pr, device: event.device, time: event.time, context: context)
        }
        var preferred: [String: Fix] = [:]
        var order: [String] = []
        for r in upstream {
            guard case .fix(let f) = r, let rank = anchorSources.firstIndex(of: f.source) else { continue }
            if let g = preferred[f.subject] {
                if rank < anchorSources.firstIndex(of: g.source)! { preferred[f.subject] = f }
            } else {
                preferred[f.subject] = f; order.append(f.subject)
            }
        }
        for id in order {
            let f = preferred[id]!
            anchors[id] = f
            out += solve(for: id, at: f.time)
        }
        return out
    }

    private func addRange(_ pr: PeerRange, device: String, time: Double, context: PipelineContext) -> [StageResult] {
        let cs = SpeedOfSound.metersPerSecond(celsius: temperature ?? context.header.temperature ?? SpeedOfSound.defaultTemperature)
        switch BeepBeep.range(pr, speedOfSound: cs, onsetSigmaSamples: onsetSigmaSamples, defaultSigma: defaultRangeSigma) {
        case .failure(let f):
            return [.failure(source: .peer, time: time, subject: device, reason: f)]
        case .success(let (d, s)):
            guard pr.peer != device else { return [.failure(source: .peer, time: time, subject: device, reason: .inconsistentMeasurements("peer range to itself"))] }
            let sigma = (s * s + rangeSigmaFloor * rangeSigmaFloor).squareRoot()
            let stored = StoredRange(time: time, range: d, sigma: sigma)
            ranges[device, default: [:]][pr.peer] = stored
            ranges[pr.peer, default: [:]][device] = stored
            guard emitMeasurements, let peerFix = lastPeerFix[pr.peer] ?? anchors[pr.peer],
                  let own = lastPeerFix[device] ?? anchors[device] else { return [] }
            return [.measurement(PeerRangeMeasurement(time: time, peer: pr.peer, range: d, sigma: sigma,
                                                      peerPosition: peerFix.position, peerCovariance: peerFix.covariance,
                                                      linearisationPoint: own.position), subject: device)]
        }
    }

    private func solve(for device: String, at t: Double) -> [StageResult] {
        // Breadth-first over fresh ranges between phones with fresh anchors.
        func fresh(_ id: String) -> Bool { anchors[id].map { t - $0.time <= anchorMaxAge && $0.time <= t + 1e-9 } ?? false }
        var ids = [device], seen: Set<String> = [device], queue = [device]
        while let cur = queue.first {
            queue.removeFirst()
            // Sorted: dictionary order is randomised per process, and the order of the
            // least-squares terms must not change the result's last bits between runs.
            for (other, r) in (ranges[cur] ?? [:]).sorted(by: { $0.key < $1.key }) where !seen.contains(other) && abs(t - r.time) <= rangeMaxAge && fresh(other) {
                seen.insert(other); ids.append(other); queue.append(other)
            }
        }
        guard ids.count >= 2 else {
            return [.failure(source: .peer, time: t, subject: device, reason: .missingInput("no fresh peer range to a phone with a fix"))]
        }
        let index = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0) })
        let nodes = ids.map { id -> CooperativePositioning.Node in
            let f = anchors[id]!
            let age = max(0, t - f.time), infl = motionSpeed * age
            return .init(id: id, anchor: f.position, covariance: f.covariance + Covariance2(sigma: infl))
        }
        var edges: [CooperativePositioning.Edge] = []
        for a in ids {
            for (b, r) in (ranges[a] ?? [:]).sorted(by: { $0.key < $1.key }) where a < b && index[b] != nil && abs(t - r.time) <= rangeMaxAge {
                let age = abs(t - r.time), infl = 2 * motionSpeed * age
                edges.append(.init(a: index[a]!, b: index[b]!, range: r.range, sigma: (r.sigma * r.sigma + infl * infl).squareRoot()))
            }
        }
        switch solver.solve(nodes: nodes, edges: edges) {
        case .failure(let f):
            return [.failure(source: .peer, time: t, subject: device, reason: f)]
        case .success(let s):
            let fix = Fix(time: t, position: s.positions[0], up: anchors[device]?.up, covariance: s.covariances[0],
                          source: .peer, subject: device, usedCount: edges.count, floor: anchors[device]?.floor)
            lastPeerFix[device] = fix
            var out: [StageResult] = [.fix(fix)]
            if emitMeasurements { out.append(.measurement(PositionMeasurement(fix: fix), subject: device)) }
            return out
        }
    }
}
