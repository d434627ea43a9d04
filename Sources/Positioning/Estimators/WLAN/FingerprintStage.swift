/// Pipeline stage `fingerprint`: a fix per WiFi scan from the reference data's fingerprint map
/// (`FingerprintEstimator`), and a loose position measurement for the filters. Traces whose
/// reference data carry no fingerprint map get nothing from it (no survey, nothing to match).
///
/// Options: `sigma_db` (4.6), `offset_invariant` (false), `temper` (false), `min_aps` (3), `rss_min` (the trace
/// header's `rss_threshold_dbm`, else −90 dBm), `max_age_s` (none).
public final class FingerprintStage: PipelineStage {
    public let estimator: FingerprintEstimator
    /// Explicit phone threshold (`rss_min`); nil = the header's.
    let phoneThreshold: Double?
    public init(estimator: FingerprintEstimator = FingerprintEstimator(), phoneThreshold: Double? = nil) {
        self.estimator = estimator; self.phoneThreshold = phoneThreshold
    }
    public var sources: [Source] { [.fingerprint] }

    public static func make(_ o: StageOptions) throws -> FingerprintStage {
        var e = FingerprintEstimator()
        e.sigma = try o.double("sigma_db", default: e.sigma)
        guard e.sigma > 0 else { throw ConfigurationError(path: "\(o.name).sigma_db", reason: "must be positive") }
        e.offsetInvariant = try o.bool("offset_invariant", default: e.offsetInvariant)
        e.minAPs = try o.int("min_aps", default: e.minAPs)
        guard e.minAPs >= 1 else { throw ConfigurationError(path: "\(o.name).min_aps", reason: "must be ≥ 1") }
        if o.values["max_age_s"] != nil { e.maxAge = try o.double("max_age_s", default: 0) }
        e.temper = try o.bool("temper", default: e.temper)
        let t: Double? = o.values["rss_min"] == nil ? nil : try o.double("rss_min", default: -90)
        return FingerprintStage(estimator: e, phoneThreshold: t)
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .wifi(let scan) = event.payload, let map = context.reference.fingerprints, !map.isEmpty else { return [] }
        var e = estimator
        e.phoneThreshold = phoneThreshold ?? context.header.rssThreshold ?? estimator.phoneThreshold
        switch e.estimate(scan, time: event.time, map: map, subject: event.device) {
        case .success(let x):
            let f = context.reference.wifiFix(x, scan: scan, rssMin: e.phoneThreshold, maxAge: e.maxAge)
            return [.fix(f), .measurement(PositionMeasurement(fix: f), subject: event.device)]
        case .failure(let r): return [.failure(source: .fingerprint, time: event.time, subject: event.device, reason: r)]
        }
    }
}
