/// The `gnss` stage options, declared once (`OptionTable`); the calibration and error-model keys
/// are those their types read (`GNSSAccuracyCalibration.from(options:)`,
/// `GNSSErrorModel.from(options:)`).
extension GNSSStage {
    public enum Options {
        static let d = GNSSEstimator()
        public static let accuracyConfidence = OptionSpec.number("accuracy_confidence", d.accuracyConfidence,
            "probability of the reported accuracy circle (Android: 0.68)")
        public static let inflation = OptionSpec.number("inflation", d.inflation, "factor on the reported accuracy (1 = trust it)")
        public static let calibrationEdges = OptionSpec.numbers(GNSSAccuracyCalibration.edgesOption, [], unit: "m",
            "upper edges of bins of reported accuracy (`posfuse calibrate gnss`)")
        public static let calibrationFactors = OptionSpec.numbers(GNSSAccuracyCalibration.factorsOption, [],
            "factor on σ per bin (one more than the edges); [] = no calibration")
        public static let errorModel = OptionSpec.string(GNSSErrorModel.option, GNSSErrorModel.stageDefault,
            "when no calibration is set: shipped (the GNSS error model posfuse ships,\nper handset family, pooled for others; docs/radio.md), none, or a model\nfile; `evaluate radio` on GNSS recordings uses shipped unless set")
        public static let handsetFamily = OptionSpec.string(GNSSErrorModel.familyOption, nil, example: "Pixel4",
            "family whose factor applies (default: from the trace header's device)")
        public static let velocitySigma = OptionSpec.number(GNSSErrorModel.velocitySigmaOption, nil, unit: "m/s", example: 0.3,
            "σ per axis of the receiver's reported velocity (speed and course over\nground) as a filter measurement; default: the error model's for the\nfamily (none: not used); 0 = not used")
        public static let velocityLatency = OptionSpec.number(GNSSErrorModel.velocityLatencyOption, nil, unit: "s", example: 0.5,
            "the reported velocity is the motion this long before the fix; default:\nthe error model's with its σ (else 0)")
        public static let widenFromFilter = OptionSpec.bool("widen_from_filter", true,
            "report each fix's region widened by what the ekf learned online from\nthe earlier fixes (accuracy scale λ, bias excess μ); the filters fuse\nthe unwidened fix")
        public static let table = OptionTable(stage: "gnss", doc: "the phone's own GNSS fixes, passed through with a covariance", options: [
            accuracyConfidence, inflation, calibrationEdges, calibrationFactors, errorModel, handsetFamily, velocitySigma, velocityLatency,
            widenFromFilter,
        ])
    }

    /// Builds the stage from its pipeline options (`Options`).
    public static func make(_ o: StageOptions) throws -> GNSSStage {
        GNSSStage(estimator: GNSSEstimator(accuracyConfidence: try o.double(Options.accuracyConfidence),
                                           inflation: try o.double(Options.inflation),
                                           calibration: try GNSSAccuracyCalibration.from(options: o)),
                  errorModel: try GNSSErrorModel.from(options: o),
                  handsetFamily: try o.optionalString(Options.handsetFamily),
                  velocitySigma: try velocitySigma(o), velocityLatency: try velocityLatency(o),
                  widensFromFilter: try o.bool(Options.widenFromFilter))
    }

    static func velocityLatency(_ o: StageOptions) throws -> Double? {
        guard let v = try o.optionalDouble(Options.velocityLatency) else { return nil }
        guard v >= 0, v <= 10 else {
            throw ConfigurationError(path: "\(o.name).\(Options.velocityLatency.key)", reason: "expected a latency in [0, 10] s, got \(v)")
        }
        return v
    }

    static func velocitySigma(_ o: StageOptions) throws -> Double? {
        guard let v = try o.optionalDouble(Options.velocitySigma) else { return nil }
        guard v >= 0, v.isFinite else {
            throw ConfigurationError(path: "\(o.name).\(Options.velocitySigma.key)", reason: "expected σ ≥ 0 m/s (0 = not used), got \(v)")
        }
        return v
    }
}
