/// Pipeline stage `wcl`: a weighted-centroid fix per WiFi scan (and a loose position
/// measurement for the filters).
public final class WCLStage: PipelineStage {
    public let estimator: WCLEstimator
    public init(estimator: WCLEstimator = WCLEstimator()) { self.estimator = estimator }
    public var sources: [Source] { [.wcl] }
    public func fresh() -> any PipelineStage { WCLStage(estimator: estimator) }
    /// The last scan's estimate (before `wifiFix`), kept only when a later stage of the same
    /// pipeline reads it (`keepsLast`, set by that stage's `link`): `HAPELStage`'s first epoch is
    /// plain WCL with the same estimator, so it takes this instead of computing it again.
    struct Last {
        var scan: WiFiScan, time: Double, device: String
        var result: Result<Fix, EstimationFailure>
    }
    var keepsLast = false
    private(set) var last: Last?
    /// The last scan's estimate (per-trace state); `keepsLast` is the pipeline's structure and stays.
    public func reset() { last = nil }
    /// Scans only (`process` returns [] for every other event).
    public var inputs: StageInputs { StageInputs(events: .wifi, upstream: false) }
    /// Whether a fix is followed by its `PositionMeasurement` (`PositionMeasurementEmission`).
    private var emission = PositionMeasurementEmission(.wcl)
    public var emitsPositionMeasurement: Bool { emission.isOn }
    public func link(_ stages: [any PipelineStage], at index: Int) { emission.link(stages, at: index) }

    /// The estimate of `scan` at `time` for `device` when it is the last one this stage made
    /// (the same scan, compared by value), else nil.
    func lastEstimate(of scan: WiFiScan, time: Double, device: String) -> Result<Fix, EstimationFailure>? {
        guard let l = last, l.time == time, l.device == device, l.scan == scan else { return nil }
        return l.result
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .wifi(let scan) = event.payload else { return [] }
        let estimate = estimator.estimate(scan, time: event.time, map: context.reference.accessPoints, subject: event.device)
        if keepsLast { last = Last(scan: scan, time: event.time, device: event.device, result: estimate) }
        switch estimate {
        case .success(let e):
            let f = context.reference.wifiFix(e, scan: scan, rssMin: estimator.rssMin, maxAge: estimator.maxAge)
            return emission.results(f, subject: event.device)
        case .failure(let r): return [.failure(source: .wcl, time: event.time, subject: event.device, reason: r)]
        }
    }

    /// The WCL options, shared by `wcl`, `rss` and `hapel`; defaults are `WCLEstimator()`'s
    /// (calibrated, docs/radio.md).
    public enum Options {
        static let d = WCLEstimator()
        public static let weightLaw = OptionSpec.choice("weight_law", d.weightLaw.rawValue, WeightLaw.allCases.map(\.rawValue),
            "power | distance | amplitude | db")
        public static let exponent = OptionSpec.number("exponent", d.exponent, "g of the weight law (calibrated on ms-indoor, docs/radio.md)")
        public static let k = OptionSpec.integer("k", d.maxAnchors, "strongest APs used")
        public static let rssMin = OptionSpec.number("rss_min", d.rssMin, unit: "dBm", "weaker APs are ignored")
        public static let dbReference = OptionSpec.number("db_reference", d.dbReference, unit: "dBm", "reference of the `db` law")
        public static let mergeRadios = OptionSpec.bool("merge_radios", d.mergeRadios, "merge BSSIDs of one multi-radio AP")
        public static let mergeNibble = OptionSpec.bool("merge_nibble", d.mergeNibble, advanced: true, "also merge BSSIDs differing in the last nibble")
        public static let excludeLocal = OptionSpec.bool("exclude_local", d.excludeLocallyAdministered, "drop locally administered (random) MACs")
        public static let maxAge = OptionSpec.number("max_age_s", d.maxAge, unit: "s", example: 5,
            "drop APs last seen longer ago (default: no limit)")
        public static let kappa = OptionSpec.number("kappa", d.kappa, "covariance scale (calibrated so NIS is χ²-consistent)")
        public static let sigma0 = OptionSpec.number("sigma0", d.sigma0, unit: "m", "covariance floor")
        public static let defaultP0 = OptionSpec.number("default_p0", d.defaultP0, unit: "dBm", "at 1 m, for APs the map gives no P0")
        public static let defaultN = OptionSpec.number("default_n", d.defaultPathLossExponent, "path-loss exponent for APs the map gives none")
        public static let table = OptionTable(stage: "wcl", doc: "WLAN weighted centroid", options: [
            weightLaw, exponent, k, rssMin, dbReference, mergeRadios, mergeNibble, excludeLocal, maxAge, kappa, sigma0, defaultP0, defaultN,
        ])
    }

    /// Parses the WCL options (`Options`) over `base`: an absent key keeps `base`'s value.
    public static func estimator(_ o: StageOptions, base: WCLEstimator = WCLEstimator()) throws -> WCLEstimator {
        typealias O = Options
        var e = base
        e.weightLaw = try o.values[O.weightLaw.key] == nil ? base.weightLaw : o.choice(O.weightLaw)
        e.exponent = try o.double(O.exponent.key, default: base.exponent)
        e.maxAnchors = try o.int(O.k.key, default: base.maxAnchors)
        guard e.maxAnchors >= 1 else { throw ConfigurationError(path: "\(o.name).k", reason: "must be ≥ 1") }
        e.rssMin = try o.double(O.rssMin.key, default: base.rssMin)
        e.dbReference = try o.double(O.dbReference.key, default: base.dbReference)
        e.mergeRadios = try o.bool(O.mergeRadios.key, default: base.mergeRadios)
        e.mergeNibble = try o.bool(O.mergeNibble.key, default: base.mergeNibble)
        e.excludeLocallyAdministered = try o.bool(O.excludeLocal.key, default: base.excludeLocallyAdministered)
        if let a = try o.optionalDouble(O.maxAge) { e.maxAge = a }
        e.kappa = try o.double(O.kappa.key, default: base.kappa)
        e.sigma0 = try o.double(O.sigma0.key, default: base.sigma0)
        guard e.kappa >= 0, e.sigma0 > 0 else { throw ConfigurationError(path: "\(o.name).kappa/sigma0", reason: "kappa ≥ 0 and sigma0 > 0 required") }
        e.defaultP0 = try o.double(O.defaultP0.key, default: base.defaultP0)
        e.defaultPathLossExponent = try o.double(O.defaultN.key, default: base.defaultPathLossExponent)
        guard e.defaultPathLossExponent > 0 else { throw ConfigurationError(path: "\(o.name).default_n", reason: "must be positive") }
        return e
    }

    public static func make(_ o: StageOptions) throws -> WCLStage { WCLStage(estimator: try estimator(o)) }
}
