import Foundation

/// Rauch–Tung–Striebel fixed-interval smoother (Rauch, Tung & Striebel 1965; Särkkä,
/// "Bayesian Filtering and Smoothing", 2013, Thm 8.2 and §9.1 for the extended form) over the
/// epochs an extended Kalman filter logged (`FilterEpoch`): with x⁻ₖ, P⁻ₖ the prediction into
/// epoch k by Fₖ and x⁺ₖ, P⁺ₖ its posterior,
///
///     Cₖ = P⁺ₖ Fₖ₊₁ᵀ (P⁻ₖ₊₁)⁻¹
///     xˢₖ = x⁺ₖ + Cₖ (xˢₖ₊₁ − x⁻ₖ₊₁)          (ψ differences wrapped to (−π, π])
///     Pˢₖ = P⁺ₖ + Cₖ (Pˢₖ₊₁ − P⁻ₖ₊₁) Cₖᵀ
///
/// starting from xˢ_N = x⁺_N. Epochs with `startsSegment` (filter (re)initialisations) begin
/// an independent segment. A singular P⁻ₖ₊₁ leaves epoch k at its filtered value.
public enum RTSSmoother {
    /// Smoothed (mean, covariance) for every epoch, in order.
    public static func smooth(_ epochs: [FilterEpoch], angleIndex: Int?) -> [(mean: SIMD4<Double>, covariance: Mat4)] {
        var out = epochs.map { (mean: $0.posteriorMean, covariance: $0.posteriorCovariance) }
        guard epochs.count > 1 else { return out }
        for k in stride(from: epochs.count - 2, through: 0, by: -1) {
            let next = epochs[k + 1]
            guard !next.startsSegment, let pinv = next.priorCovariance.spdInverse else { continue }
            let c = epochs[k].posteriorCovariance * next.transition.transposed * pinv
            var dx = out[k + 1].mean - next.priorMean
            if let a = angleIndex { dx[a] = Angle.wrap(dx[a]) }
            var x = epochs[k].posteriorMean + c * dx
            if let a = angleIndex { x[a] = Angle.wrap(x[a]) }
            let p = epochs[k].posteriorCovariance + c * (out[k + 1].covariance - next.priorCovariance) * c.transposed
            out[k] = (x, p.symmetrized)
        }
        return out
    }
}

/// Pipeline stage `smoother`: runs an EKF exactly as the `ekf` stage does (same options,
/// one per phone), logs its epochs, and at the end of the trace emits the RTS-smoothed
/// estimate at every epoch where the filter emitted a fix (offline replay only: nothing is
/// emitted before `finish`). The smoothed covariance Pˢ is reported, so NEES and inside95
/// measure the smoother's own consistency.
public final class SmootherStage: PipelineStage {
    public var sources: [Source] { [.smoother] }
    let filter: FusionStage

    public init(settings: FusionStage.Settings) {
        filter = FusionStage(settings: settings, emitting: .smoother, recordEpochs: true)
    }

    /// Options: those of the `ekf` stage (`docs/pipeline.yaml`); `filter` must be `ekf`.
    public convenience init(options o: StageOptions) throws {
        let kind = try o.string("filter", default: "ekf")
        guard kind == "ekf" else {
            throw ConfigurationError(path: "\(o.name).filter", reason: "the RTS smoother runs over the EKF (got \(kind))")
        }
        let stage = try FusionStage(kind: .ekf, options: o)
        self.init(settings: stage.settings)
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        _ = filter.process(event, upstream: upstream, context: context)
        return []
    }

    public func finish(context: PipelineContext) -> [StageResult] {
        var out: [StageResult] = []
        for (device, epochs) in filter.epochLogs {
            let layout = filter.layouts[device] ?? .step
            let smoothed = RTSSmoother.smooth(epochs, angleIndex: layout.angleIndex)
            for (e, s) in zip(epochs, smoothed) where e.emitted {
                let p = s.covariance
                out.append(.fix(Fix(time: e.time, position: SIMD2(s.mean[0], s.mean[1]),
                                    covariance: Covariance2(ee: p[0, 0], en: 0.5 * (p[0, 1] + p[1, 0]), nn: p[1, 1]),
                                    source: .smoother, subject: device)))
            }
        }
        return out
    }
}
