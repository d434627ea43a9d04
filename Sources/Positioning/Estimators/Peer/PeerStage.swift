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

    /// Options: `anchor_sources` (source names in order of preference, [fingerprint, rss, wcl]), `anchor_max_age_s` (5),
    /// `range_max_age_s` (5), `motion_speed_mps` (0.5), `onset_sigma_samples` (1),
    /// `range_sigma_m` (0.05, for `d` without σ), `range_sigma_floor_m` (0.05),
    /// `anchor_correlation_m` (6, `CooperativePositioning.defaultAnchorCorrelationDistance`),
    /// `anchor_independent_fraction` (0.1), `mds_init` (true), `temperature_c` (header, else 20),
    /// `emit_measurements` (true).
    public convenience init(options o: StageOptions) throws {
        var sources: [Source] = [.fingerprint, .rss, .wcl]
        if let v = o.values["anchor_sources"] {
            guard case .list(let l) = v else { throw ConfigurationError(path: "\(o.name).anchor_sources", reason: "expected a list of source names") }
            sources = try (l.map { item -> Source in
                guard case .string(let s) = item, let src = Source(rawValue: s) else {
                    throw ConfigurationError(path: "\(o.name).anchor_sources", reason: "unknown source \(item)")
                }
                return src
            })
        }
        let tc: Double? = o.values["temperature_c"] == nil ? nil : try o.double("temperature_c", default: 20)
        let dc = try o.double("anchor_correlation_m", default: CooperativePositioning.defaultAnchorCorrelationDistance)
        let nu = try o.double("anchor_independent_fraction", default: 0.1)
        guard dc >= 0, dc.isFinite else { throw ConfigurationError(path: "\(o.name).anchor_correlation_m", reason: "expected a distance ≥ 0 m, got \(dc)") }
        guard nu > 0, nu <= 1 else { throw ConfigurationError(path: "\(o.name).anchor_independent_fraction", reason: "expected 0 < ν ≤ 1, got \(nu)") }
        self.init(solver: CooperativePositioning(useMDSInitialisation: try o.bool("mds_init", default: true),
                                                 anchorCorrelationDistance: dc, anchorIndependentFraction: nu),
                  anchorSources: sources, anchorMaxAge: try o.double("anchor_max_age_s", default: 5),
                  rangeMaxAge: try o.double("range_max_age_s", default: 5),
                  motionSpeed: try o.double("motion_speed_mps", default: 0.5),
                  onsetSigmaSamples: try o.double("onset_sigma_samples", default: 1),
                  defaultRangeSigma: try o.double("range_sigma_m", default: 0.05),
                  rangeSigmaFloor: try o.double("range_sigma_floor_m", default: 0.05),
                  temperature: tc, emitMeasurements: try o.bool("emit_measurements", default: true))
    }

    public var sources: [Source] { [.peer] }
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
