/// The `fingerprint` stage options, declared once (`OptionTable`): `FingerprintStage.make` and
/// `knnEstimator` read these keys; defaults are `KNNFingerprintEstimator()`'s (method `wknn`, the
/// default) and `FingerprintEstimator()`'s (method `bayes`). Models: docs/radio.md.
extension FingerprintStage {
    public enum Options {
        static let bayes = FingerprintEstimator(), knn = KNNFingerprintEstimator()
        public static let method = OptionSpec.choice("method", defaultMethod.rawValue, Method.allCases.map(\.rawValue),
            "wknn (weighted kNN, building and floor first) | bayes (Horus grid\nposterior; its options below)")
        public static let sigma = OptionSpec.number("sigma_db", bayes.sigma, unit: "dB", "σ of one AP's RSS against the map (calibrated, docs/radio.md)")
        public static let offsetInvariant = OptionSpec.bool("offset_invariant", bayes.offsetInvariant, advanced: true,
            "estimate the phone's RSS offset per point (lost on both data sets)")
        public static let temper = OptionSpec.bool("temper", bayes.temper, advanced: true, "widen the likelihood of scans no point explains within σ")
        public static let maxAge = OptionSpec.number("max_age_s", bayes.maxAge, unit: "s", example: 5,
            "drop scan entries last seen longer ago (cached results); default keep all")
        public static let minAPs = OptionSpec.integer("min_aps", bayes.minAPs, "fewer scan APs known to the map: no fix, a typed failure")
        public static let rssMin = OptionSpec.number("rss_min", nil, unit: "dBm", example: bayes.phoneThreshold,
            "the phone's detection threshold, default the trace header's")

        // method: wknn
        public static let k = OptionSpec.integer("k", knn.k, "neighbours averaged")
        public static let classK = OptionSpec.integer("class_k", knn.classK, "neighbours of the building/floor vote")
        public static let representation = OptionSpec.choice("representation", knn.representation.rawValue,
            RSSRepresentation.allCases.map(\.rawValue), "RSS representation of the position match")
        public static let distance = OptionSpec.choice("distance", knn.distance.rawValue, FingerprintDistance.allCases.map(\.rawValue),
            "distance of the position match")
        public static let weightExponent = OptionSpec.number("weight_exponent", knn.weightExponent, "neighbour weight 1/d^exponent")
        public static let classify = OptionSpec.bool("classify", knn.classify, "vote building and floor before the position")
        public static let notHeard = OptionSpec.number("not_heard_dbm", knn.notHeard, unit: "dBm", "RSS of an AP not heard")
        public static let sigma0 = OptionSpec.number("sigma0_m", knn.sigma0, unit: "m", example: 2,
            "covariance floor σ0 without cov_k (spread + σ0²); default the\nsurvey's quantisation: spacing²/12, or nearest other place's distance²/12")
        public static let knnMinAPs = OptionSpec.integer("min_aps", knn.minAPs, "fewer scan APs known to the map: no fix")
        public static let knnMaxAge = OptionSpec.number("max_age_s", knn.maxAge, unit: "s", example: 5, "drop older scan entries")
        public static let classRepresentation = OptionSpec.choice("class_representation", nil, RSSRepresentation.allCases.map(\.rawValue),
            example: RSSRepresentation.binary.rawValue, "the building/floor vote's representation (default: the position's)")
        public static let classDistance = OptionSpec.choice("class_distance", nil, FingerprintDistance.allCases.map(\.rawValue),
            example: knn.distance.rawValue, "the vote's distance (default: the position's)")
        public static let classNotHeard = OptionSpec.number("class_not_heard_dbm", nil, unit: "dBm", example: knn.notHeard,
            "the vote's not-heard RSS (default: the position's)")
        public static let classSharedExponent = OptionSpec.number("class_shared_exponent", knn.classSharedExponent,
            "each voter's weight times (scan APs it heard too)^exponent; 0 = off")
        public static let classFloor = OptionSpec.choice("class_floor", knn.classFloor.rawValue, FloorRule.allCases.map(\.rawValue),
            "floor from the building's voters: vote (weighted majority) | mean\n(surveyed floor nearest their weighted mean floor)")
        public static let covK = OptionSpec.number("cov_k", nil, example: 1,
            "the fitted covariance (KNNFingerprintFit), used when cov_k is set;\nthe other cov_ keys then default to gamma 1, a/c/e 0, scale 1")
        public static let covGamma = OptionSpec.number("cov_gamma", nil, example: 1)
        public static let covA = OptionSpec.number("cov_a_m", nil, unit: "m", example: 0)
        public static let covC = OptionSpec.number("cov_c_m", nil, unit: "m", example: 0)
        public static let covE = OptionSpec.number("cov_e_m", nil, unit: "m", example: 0)
        public static let covDistanceScale = OptionSpec.number("cov_distance_scale", nil, example: 1)

        /// The options of `method: bayes` (`min_aps` and `max_age_s` with the Horus defaults).
        public static let bayesTable = OptionTable(stage: "with method: bayes", doc: "Horus grid posterior (docs/radio.md)",
                                                   options: [sigma, offsetInvariant, temper, maxAge, minAPs, rssMin])
        /// The default method's (`wknn`) options first, uncommented, so that the template replays
        /// as the default does; `bayes`' options follow, commented out.
        public static let table = OptionTable(stage: "fingerprint",
                                              doc: "WiFi fingerprinting against the reference's survey (silent without one)",
                                              options: [method, k, classK, representation, distance, weightExponent, classify, notHeard, sigma0,
                                                        knnMinAPs, knnMaxAge, classRepresentation, classDistance, classNotHeard,
                                                        classSharedExponent, classFloor, covK, covGamma, covA, covC, covE, covDistanceScale],
                                              includes: [bayesTable])
    }
}
