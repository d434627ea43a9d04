import Foundation

/// GNSS pass-through: the phone's own fix, in the local ENU frame, with a covariance
/// derived from its reported accuracy.
///
/// Model: Android's `Location.getAccuracy()` is the radius of 68 % confidence of a
/// circular Gaussian. For a circular 2-D Gaussian P(‖e‖ ≤ r) = 1 − exp(−r²/2σ²), so
/// σ = r / √(−2 ln(1 − 0.68)) = r / 1.5096 per axis. `accuracyConfidence` can be set
/// for loggers that report another confidence (e.g. 0.5 for CEP, 0.95 for R95).
///
/// Degenerate cases: a non-positive or non-finite reported accuracy → typed failure
/// (`inconsistentMeasurements`); the fix is not guessed.
public struct GNSSEstimator: Sendable {
    /// Confidence level of the reported accuracy radius (Android: 0.68).
    public var accuracyConfidence: Double
    /// Extra multiplicative inflation of σ (1 = trust the phone).
    public var inflation: Double
    /// Factor on σ by reported accuracy, fitted against ground truth (`posfuse calibrate gnss`);
    /// nil: none. Applied on top of `inflation`.
    public var calibration: GNSSAccuracyCalibration?
    /// The time correlation of the fixes' error (the error model's, per family), carried on each
    /// fix for the filters' GNSS bias block; nil: the filters' defaults.
    public var errorCorrelation: ErrorCorrelation?
    /// Per-axis σ of the receiver's reported velocity (speed and course, `GNSSFix.velocity`), m/s:
    /// the error model's for the phone's family; nil: the velocity is not used.
    public var velocitySigma: Double?
    /// L, s: the reported velocity is the motion L s before the fix (`GNSSErrorModel.fitVelocity`).
    public var velocityLatency = 0.0

    public init(accuracyConfidence: Double = 0.68, inflation: Double = 1, calibration: GNSSAccuracyCalibration? = nil) {
        self.accuracyConfidence = accuracyConfidence; self.inflation = inflation; self.calibration = calibration
    }

    /// Per-axis σ (m) for a reported accuracy radius r (m).
    public func sigma(forAccuracy r: Double) -> Double {
        r / sqrt(-2 * log(1 - accuracyConfidence)) * inflation * (calibration?.factor(forAccuracy: r) ?? 1)
    }

    public func estimate(_ g: GNSSFix, time: Double, subject: String = Fix.defaultSubject,
                         frame: LocalFrame) -> Result<Fix, EstimationFailure> {
        guard g.latitude.isFinite, g.longitude.isFinite, abs(g.latitude) <= 90, abs(g.longitude) <= 180 else {
            return .failure(.inconsistentMeasurements("latitude/longitude out of range"))
        }
        guard g.accuracy.isFinite, g.accuracy > 0 else {
            return .failure(.inconsistentMeasurements("reported accuracy \(g.accuracy) m is not positive"))
        }
        let v = frame.enu(Geodetic(latitude: g.latitude, longitude: g.longitude, height: g.altitude ?? frame.origin.height))
        let s = sigma(forAccuracy: g.accuracy)
        var f = Fix(time: time, position: SIMD2(v.x, v.y), up: g.altitude == nil ? nil : v.z,
                    covariance: Covariance2(sigma: s), source: .gnss, subject: subject, usedCount: 1)
        f.errorCorrelation = errorCorrelation
        return .success(f)
    }

    /// The fix's reported velocity as a measurement with noise `velocitySigma` at the fix's time −
    /// `velocityLatency` (the filters take it as a late input, `FusionTrack`); nil when the fix
    /// reports none (`GNSSFix.velocity`) or no velocity noise is known.
    public func velocityMeasurement(_ g: GNSSFix, time: Double) -> VelocityMeasurement? {
        guard let s = velocitySigma, s > 0, s.isFinite, let v = g.velocity else { return nil }
        return VelocityMeasurement(velocity: v, sigma: s, time: time - velocityLatency)
    }
}

/// Pipeline stage emitting `gnss` fixes (and loose position measurements for filters).
///
/// The phone's reported accuracy is scaled by a calibration: the estimator's own when the
/// pipeline gives one (`calibration_edges_m` / `calibration_factors`), else the error model's
/// (`error_model`, default the shipped `GNSSErrorModel`) factor for the phone's handset family:
/// the `handset_family` option, else the family of the trace header's `device`, else of the
/// event's device (`HandsetFamilies`); a family the model lacks gets its pooled factor.
/// When the fix reports a velocity (speed and course) and a velocity noise is known (option
/// `velocity_sigma_mps`, else the error model's for the family), the stage also emits it as a
/// `VelocityMeasurement` for the filters.
///
/// **Online widening (`widen_from_filter`, default on).** The reported accuracy, even calibrated,
/// can be optimistic on a given day or street (a street canyon's multipath bias). The pipeline's
/// `ekf` learns that online from the phone's earlier fixes: its GNSS accuracy scale λ (the fixes'
/// innovations against its prediction) and the excess μ of its GNSS bias estimate over the bias
/// model (the fixes against the motion model, `GNSSBias`). Before the ekf sees a fix, this stage
/// reports the fix's region as λΣ + (μ − 1)U′ (`FusionStage.gnssFixRegion`): causal, since the
/// filter's state then holds only earlier fixes. The filters still fuse the estimator's own Σ
/// (`Fix.filterCovariance`): fed back, the widening would count the disagreement twice.
/// Without an ekf, before its first fix, or while λ = μ = 1, the fix is reported as estimated.
public final class GNSSStage: PipelineStage {
    public let estimator: GNSSEstimator
    public let errorModel: GNSSErrorModel?
    public let handsetFamily: String?
    public let families: HandsetFamilies
    /// σ_v of the reported velocity (m/s): nil = the error model's for the family, 0 = the velocity is not used.
    public let velocitySigma: Double?
    /// Its latency L (s): nil = the error model's with its σ_v, else 0.
    public let velocityLatency: Double?
    /// Report each fix's region widened by the ekf's online consistency (see the type's doc).
    public let widensFromFilter: Bool
    /// The pipeline's ekf (`link`), when `widensFromFilter`. A strong reference: the ekf holds
    /// nothing of this stage, so there is no cycle. (A weak one gave the ekf a side table, and
    /// every retain and release of it, one of each per `Pipeline.process` call, then took the
    /// runtime's slow path: ≈ 4 % of a replay's time under perf, docs/refine.md, session 25.)
    private var filter: FusionStage?
    /// Whether a fix is followed by its `PositionMeasurement` (`PositionMeasurementEmission`).
    private var emission = PositionMeasurementEmission(.gnss)
    public var emitsPositionMeasurement: Bool { emission.isOn }
    public init(estimator: GNSSEstimator = GNSSEstimator(), errorModel: GNSSErrorModel? = nil, handsetFamily: String? = nil,
                families: HandsetFamilies = HandsetFamilies(), velocitySigma: Double? = nil, velocityLatency: Double? = nil,
                widensFromFilter: Bool = Options.widenFromFilter.flag) {
        self.estimator = estimator; self.errorModel = errorModel; self.handsetFamily = handsetFamily; self.families = families
        self.velocitySigma = velocitySigma; self.velocityLatency = velocityLatency; self.widensFromFilter = widensFromFilter
    }
    /// Links the first later `ekf` stage that fuses GNSS fixes loosely: its state before an event
    /// is read, never changed (a feedback of earlier fixes only; `reset()` keeps the link).
    public func link(_ stages: [any PipelineStage], at index: Int) {
        emission.link(stages, at: index)
        guard widensFromFilter else { return }
        filter = stages[(index + 1)...].lazy.compactMap { $0 as? FusionStage }
            .first { $0.source == .ekf && $0.settings.inputs.contains(.gnss) && !$0.settings.tight.contains(.gnss) }
    }
    public var sources: [Source] { [.gnss] }
    /// No per-trace state.
    public func reset() {}
    /// GNSS fixes only.
    public var inputs: StageInputs { StageInputs(events: .gnss, upstream: false) }
    public func fresh() -> any PipelineStage {
        GNSSStage(estimator: estimator, errorModel: errorModel, handsetFamily: handsetFamily, families: families, velocitySigma: velocitySigma,
                  velocityLatency: velocityLatency, widensFromFilter: widensFromFilter)
    }

    /// The estimator for a phone: `estimator` with the error model's calibration of its family
    /// when the pipeline set no calibration.
    /// The error model also gives the fixes its error correlation (β, τ) for that family, unless
    /// the estimator has one.
    public func estimator(device: String, header: TraceHeader) -> GNSSEstimator {
        var e = estimator
        if let s = velocitySigma { e.velocitySigma = s > 0 ? s : nil }
        if let l = velocityLatency { e.velocityLatency = l }
        guard let m = errorModel, e.calibration == nil || e.errorCorrelation == nil || velocitySigma == nil else { return e }
        let name = handsetFamily ?? header.device.flatMap { $0.isEmpty ? nil : $0 } ?? device
        let family = handsetFamily ?? families.family(of: name)
        if e.calibration == nil { e.calibration = m.calibration(forFamily: family) }
        if e.errorCorrelation == nil { e.errorCorrelation = m.correlation(forFamily: family) }
        if velocitySigma == nil, let v = m.velocity(forFamily: family) {
            e.velocitySigma = v.sigma
            if velocityLatency == nil { e.velocityLatency = v.latency }
        }
        return e
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .gnss(let g) = event.payload else { return [] }
        let e = estimator(device: event.device, header: context.header)
        switch e.estimate(g, time: event.time, subject: event.device, frame: context.frame) {
        case .success(let f):
            var reported = f
            if let region = filter?.gnssFixRegion(subject: f.subject, time: f.time, covariance: f.covariance) {
                reported.covariance = region; reported.filterCovariance = f.covariance
            }
            let v = e.velocityMeasurement(g, time: event.time)
            guard emission.isOn else {
                guard let v else { return [.fix(reported)] }
                return [.fix(reported), .measurement(v, subject: event.device)]
            }
            // The measurement of the unwidened fix (the filter fuses that one), then the velocity.
            guard let v else {
                return [.fix(reported), .measurement(PositionMeasurement(fix: f), subject: event.device)]
            }
            return [.fix(reported), .measurement(PositionMeasurement(fix: f), subject: event.device), .measurement(v, subject: event.device)]
        case .failure(let r):
            return [.failure(source: .gnss, time: event.time, subject: event.device, reason: r)]
        }
    }
}
