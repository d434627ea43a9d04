/// Pipeline stage `wcl`: a weighted-centroid fix per WiFi scan (and a loose position
/// measurement for the filters).
public final class WCLStage: PipelineStage {
    public let estimator: WCLEstimator
    public init(estimator: WCLEstimator = WCLEstimator()) { self.estimator = estimator }
    public var sources: [Source] { [.wcl] }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .wifi(let scan) = event.payload else { return [] }
        switch estimator.estimate(scan, time: event.time, map: context.reference.accessPoints, subject: event.device) {
        case .success(let e):
            let f = context.reference.wifiFix(e, scan: scan, rssMin: estimator.rssMin, maxAge: estimator.maxAge)
            return [.fix(f), .measurement(PositionMeasurement(fix: f), subject: event.device)]
        case .failure(let r): return [.failure(source: .wcl, time: event.time, subject: event.device, reason: r)]
        }
    }

    /// Parses the WCL options shared by `wcl` and `hapel` (defaults in parentheses):
    /// `weight_law` (`power` | `distance` | `amplitude` | `db`; power), `exponent` (g, 1.0),
    /// `k` (4 strongest), `rss_min` (−90 dBm), `db_reference` (−100 dBm, `db` law),
    /// `merge_radios` (true), `merge_nibble` (false), `exclude_local` (false), `max_age_s`
    /// (none), `kappa` / `sigma0` (covariance scale and floor, m; calibrated defaults in
    /// docs/radio.md), `default_p0` (−40 dBm), `default_n` (3): P0, n for APs the map gives none.
    public static func estimator(_ o: StageOptions, base: WCLEstimator = WCLEstimator()) throws -> WCLEstimator {
        let lawName = try o.string("weight_law", default: base.weightLaw.rawValue)
        guard let law = WeightLaw(rawValue: lawName) else {
            throw ConfigurationError(path: "\(o.name).weight_law", reason: "expected one of distance, power, amplitude, db")
        }
        var e = base
        e.weightLaw = law
        e.exponent = try o.double("exponent", default: base.exponent)
        e.maxAnchors = try o.int("k", default: base.maxAnchors)
        guard e.maxAnchors >= 1 else { throw ConfigurationError(path: "\(o.name).k", reason: "must be ≥ 1") }
        e.rssMin = try o.double("rss_min", default: base.rssMin)
        e.dbReference = try o.double("db_reference", default: base.dbReference)
        e.mergeRadios = try o.bool("merge_radios", default: base.mergeRadios)
        e.mergeNibble = try o.bool("merge_nibble", default: base.mergeNibble)
        e.excludeLocallyAdministered = try o.bool("exclude_local", default: base.excludeLocallyAdministered)
        if o.values["max_age_s"] != nil { e.maxAge = try o.double("max_age_s", default: 0) }
        e.kappa = try o.double("kappa", default: base.kappa)
        e.sigma0 = try o.double("sigma0", default: base.sigma0)
        guard e.kappa >= 0, e.sigma0 > 0 else { throw ConfigurationError(path: "\(o.name).kappa/sigma0", reason: "kappa ≥ 0 and sigma0 > 0 required") }
        e.defaultP0 = try o.double("default_p0", default: base.defaultP0)
        e.defaultPathLossExponent = try o.double("default_n", default: base.defaultPathLossExponent)
        guard e.defaultPathLossExponent > 0 else { throw ConfigurationError(path: "\(o.name).default_n", reason: "must be positive") }
        return e
    }

    public static func make(_ o: StageOptions) throws -> WCLStage { WCLStage(estimator: try estimator(o)) }
}
