/// Pipeline stage `fingerprint`: a fix per WiFi scan from the reference data's fingerprint map,
/// and a loose position measurement for the filters. Traces whose reference data carry no
/// fingerprint map get nothing from it (no survey, nothing to match).
///
/// `method`: `wknn` (default, `defaultMethod`: `KNNFingerprintEstimator`, weighted kNN with
/// building and floor classified first, the representation and distance of Torres-Sospedra et
/// al. 2015) or `bayes` (`FingerprintEstimator`, the Horus grid posterior). Why wknn is the
/// default (measured on unseen ms-indoor walks): docs/radio.md, "The fingerprint default".
///
/// Options of `bayes`: `sigma_db` (4.6), `offset_invariant` (false), `temper` (false), `min_aps` (3),
/// `rss_min` (the trace header's `rss_threshold_dbm`, else −90 dBm), `max_age_s` (none).
/// Options of `wknn`: `k` (11), `class_k` (11), `representation` (powed; positive, exponential),
/// `distance` (sorensen; euclidean, manhattan, neyman), `weight_exponent` (1), `classify` (true),
/// `not_heard_dbm` (−105), `sigma0_m` (none: the survey's quantisation), `min_aps` (1), `max_age_s` (none); the building/floor
/// vote's `class_representation` (+ `binary`), `class_distance`, `class_not_heard_dbm` (default: the
/// position's), `class_shared_exponent` h (0: each voter weighs n^h by the scan APs it shares) and
/// `class_floor` (vote: weighted majority; mean: the surveyed floor nearest the voters' weighted mean); the fitted covariance `cov_k`, `cov_gamma`, `cov_a_m`, `cov_c_m`, `cov_e_m`,
/// `cov_distance_scale` (absent = spread + the survey's quantisation s²/12, or `sigma0_m`²).
public final class FingerprintStage: PipelineStage {
    public enum Method: String, Sendable, CaseIterable { case bayes, wknn }
    /// The method a pipeline uses when its `fingerprint` options name none.
    public static let defaultMethod = Method.wknn
    public let method: Method
    public let estimator: FingerprintEstimator
    public let knn: KNNFingerprintEstimator
    /// Explicit phone threshold (`rss_min`); nil = the header's.
    let phoneThreshold: Double?
    public init(estimator: FingerprintEstimator = FingerprintEstimator(), phoneThreshold: Double? = nil) {
        self.method = .bayes; self.estimator = estimator; self.knn = KNNFingerprintEstimator(); self.phoneThreshold = phoneThreshold
    }
    public init(knn: KNNFingerprintEstimator) {
        self.method = .wknn; self.estimator = FingerprintEstimator(); self.knn = knn; self.phoneThreshold = nil
    }
    public var sources: [Source] { [.fingerprint] }
    /// No per-trace state (every stored property is configuration).
    public func reset() {}
    /// Scans only.
    public var inputs: StageInputs { StageInputs(events: .wifi, upstream: false) }
    /// Whether a fix is followed by its `PositionMeasurement` (`PositionMeasurementEmission`).
    private var emission = PositionMeasurementEmission(.fingerprint)
    public var emitsPositionMeasurement: Bool { emission.isOn }
    public func link(_ stages: [any PipelineStage], at index: Int) { emission.link(stages, at: index) }
    public func fresh() -> any PipelineStage {
        method == .wknn ? FingerprintStage(knn: knn) : FingerprintStage(estimator: estimator, phoneThreshold: phoneThreshold)
    }

    public static func make(_ o: StageOptions) throws -> FingerprintStage {
        let name = try o.string("method", default: defaultMethod.rawValue)
        guard let method = Method(rawValue: name) else {
            throw ConfigurationError(path: "\(o.name).method", reason: "expected bayes or wknn, got '\(name)'")
        }
        if method == .wknn { return FingerprintStage(knn: try knnEstimator(o)) }
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

    /// The `wknn` options over `base`.
    public static func knnEstimator(_ o: StageOptions, base: KNNFingerprintEstimator = KNNFingerprintEstimator()) throws -> KNNFingerprintEstimator {
        var e = base
        e.k = try o.int("k", default: e.k)
        guard e.k >= 1 else { throw ConfigurationError(path: "\(o.name).k", reason: "must be ≥ 1") }
        e.classK = try o.int("class_k", default: e.classK)
        guard e.classK >= 1 else { throw ConfigurationError(path: "\(o.name).class_k", reason: "must be ≥ 1") }
        let r = try o.string("representation", default: e.representation.rawValue)
        guard let rep = RSSRepresentation(rawValue: r) else {
            throw ConfigurationError(path: "\(o.name).representation", reason: "expected positive, exponential or powed, got '\(r)'")
        }
        e.representation = rep
        let d = try o.string("distance", default: e.distance.rawValue)
        guard let dist = FingerprintDistance(rawValue: d) else {
            throw ConfigurationError(path: "\(o.name).distance", reason: "expected euclidean, manhattan, sorensen or neyman, got '\(d)'")
        }
        e.distance = dist
        e.weightExponent = try o.double("weight_exponent", default: e.weightExponent)
        guard e.weightExponent >= 0 else { throw ConfigurationError(path: "\(o.name).weight_exponent", reason: "must be ≥ 0") }
        e.classify = try o.bool("classify", default: e.classify)
        e.notHeard = try o.double("not_heard_dbm", default: e.notHeard)
        guard e.notHeard < 0 else { throw ConfigurationError(path: "\(o.name).not_heard_dbm", reason: "must be negative (dBm)") }
        if o.values["sigma0_m"] != nil {
            let s0 = try o.double("sigma0_m", default: 0)
            guard s0 >= 0 else { throw ConfigurationError(path: "\(o.name).sigma0_m", reason: "must be ≥ 0") }
            e.sigma0 = s0
        }
        e.minAPs = try o.int("min_aps", default: e.minAPs)
        guard e.minAPs >= 1 else { throw ConfigurationError(path: "\(o.name).min_aps", reason: "must be ≥ 1") }
        if o.values["max_age_s"] != nil { e.maxAge = try o.double("max_age_s", default: 0) }
        if o.values["class_representation"] != nil {
            let r = try o.string("class_representation", default: "")
            guard let rep = RSSRepresentation(rawValue: r) else {
                throw ConfigurationError(path: "\(o.name).class_representation", reason: "expected positive, exponential, powed or binary, got '\(r)'")
            }
            e.classRepresentation = rep
        }
        if o.values["class_distance"] != nil {
            let d = try o.string("class_distance", default: "")
            guard let dist = FingerprintDistance(rawValue: d) else {
                throw ConfigurationError(path: "\(o.name).class_distance", reason: "expected euclidean, manhattan, sorensen or neyman, got '\(d)'")
            }
            e.classDistance = dist
        }
        if o.values["class_not_heard_dbm"] != nil {
            let m = try o.double("class_not_heard_dbm", default: e.notHeard)
            guard m < 0 else { throw ConfigurationError(path: "\(o.name).class_not_heard_dbm", reason: "must be negative (dBm)") }
            e.classNotHeard = m
        }
        e.classSharedExponent = try o.double("class_shared_exponent", default: e.classSharedExponent)
        guard e.classSharedExponent >= 0 else { throw ConfigurationError(path: "\(o.name).class_shared_exponent", reason: "must be ≥ 0") }
        if o.values[Options.classFloor.key] != nil { e.classFloor = try o.choice(Options.classFloor) }
        // The covariance calibration (KNNFingerprintFit.calibrate): present when cov_k is given.
        if o.values["cov_k"] != nil {
            var t = RadioUncertaintyModel.Term()
            t.k = try o.double("cov_k", default: 1)
            t.gamma = try o.double("cov_gamma", default: 1)
            t.a = try o.double("cov_a_m", default: 0)
            t.c = try o.double("cov_c_m", default: 0)
            t.e = try o.double("cov_e_m", default: 0)
            for (key, v) in [("cov_k", t.k), ("cov_gamma", t.gamma), ("cov_a_m", t.a), ("cov_c_m", t.c), ("cov_e_m", t.e)] where !(v >= 0) {
                throw ConfigurationError(path: "\(o.name).\(key)", reason: "must be ≥ 0")
            }
            guard t.k > 0 else { throw ConfigurationError(path: "\(o.name).cov_k", reason: "must be positive") }
            e.calibration = t
            e.distanceScale = try o.double("cov_distance_scale", default: 1)
            guard e.distanceScale > 0 else { throw ConfigurationError(path: "\(o.name).cov_distance_scale", reason: "must be positive") }
        }
        return e
    }

    /// The `wknn` options of an estimator (what `knnEstimator` reads back to the same estimator).
    public static func options(_ e: KNNFingerprintEstimator, name: String = "fingerprint") -> StageOptions {
        var v: [String: ConfigValue] = [
            "method": .string(Method.wknn.rawValue), "k": .number(Double(e.k)), "class_k": .number(Double(e.classK)),
            "representation": .string(e.representation.rawValue), "distance": .string(e.distance.rawValue),
            "weight_exponent": .number(e.weightExponent), "classify": .bool(e.classify),
            "not_heard_dbm": .number(e.notHeard), "min_aps": .number(Double(e.minAPs)),
        ]
        if let s0 = e.sigma0 { v["sigma0_m"] = .number(s0) }
        if let a = e.maxAge { v["max_age_s"] = .number(a) }
        if let r = e.classRepresentation { v["class_representation"] = .string(r.rawValue) }
        if let d = e.classDistance { v["class_distance"] = .string(d.rawValue) }
        if let m = e.classNotHeard { v["class_not_heard_dbm"] = .number(m) }
        if e.classSharedExponent != 0 { v["class_shared_exponent"] = .number(e.classSharedExponent) }
        if e.classFloor != .vote { v["class_floor"] = .string(e.classFloor.rawValue) }
        if let t = e.calibration {
            v["cov_k"] = .number(t.k); v["cov_gamma"] = .number(t.gamma); v["cov_a_m"] = .number(t.a)
            v["cov_c_m"] = .number(t.c); v["cov_e_m"] = .number(t.e); v["cov_distance_scale"] = .number(e.distanceScale)
        }
        return StageOptions(name: name, values: v)
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .wifi(let scan) = event.payload, let map = context.reference.fingerprints, !map.isEmpty else { return [] }
        var e = estimator
        e.phoneThreshold = phoneThreshold ?? context.header.rssThreshold ?? estimator.phoneThreshold
        let result: Result<Fix, EstimationFailure>
        switch method {
        case .wknn: result = knn.estimate(scan, time: event.time, map: map, subject: event.device)
        case .bayes: result = e.estimate(scan, time: event.time, map: map, subject: event.device)
        }
        switch result {
        case .success(let x):
            let f = context.reference.wifiFix(x, scan: scan, rssMin: e.phoneThreshold, maxAge: method == .wknn ? knn.maxAge : e.maxAge)
            return emission.results(f, subject: event.device)
        case .failure(let r): return [.failure(source: .fingerprint, time: event.time, subject: event.device, reason: r)]
        }
    }
}
