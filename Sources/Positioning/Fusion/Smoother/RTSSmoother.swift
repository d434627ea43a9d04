import Foundation

/// Rauch–Tung–Striebel fixed-interval smoother (Rauch, Tung & Striebel 1965; Särkkä,
/// "Bayesian Filtering and Smoothing", 2013, Thm 8.2, §9.1 for the extended and Thm 9.3 for the
/// unscented form) over the epochs a Kalman-type filter logged (`FilterEpoch`): with x⁻ₖ, P⁻ₖ
/// the prediction into epoch k, Dₖ = Cov(x⁺ₖ₋₁, x⁻ₖ) its cross-covariance (EKF: P⁺ₖ₋₁Fₖᵀ; UKF:
/// Σ Wᶜ (χᵢ − x⁺ₖ₋₁)(f(χᵢ) − x⁻ₖ)ᵀ) and x⁺ₖ, P⁺ₖ the posterior,
///
///     Cₖ = Dₖ₊₁ (P⁻ₖ₊₁)⁻¹                      (= P⁺ₖ Fₖ₊₁ᵀ (P⁻ₖ₊₁)⁻¹ for the EKF)
///     xˢₖ = x⁺ₖ + Cₖ (xˢₖ₊₁ − x⁻ₖ₊₁)          (ψ differences wrapped to (−π, π])
///     Pˢₖ = P⁺ₖ + Cₖ (Pˢₖ₊₁ − P⁻ₖ₊₁) Cₖᵀ
///
/// starting from xˢ_N = x⁺_N. Epochs with `startsSegment` (filter (re)initialisations) begin
/// an independent segment. A singular P⁻ₖ₊₁ leaves epoch k at its filtered value. On a
/// linear-Gaussian model this is the batch (information-form) solution exactly.
///
/// With the GNSS bias states (`GNSSBias`) the recursion runs over the augmented y = [x; b]
/// (n = 6) wherever both epochs of a pair carry a primed bias; Cov(y⁺ₖ, y⁻ₖ₊₁) =
/// [[D, φC⁺ₖ], [(F C⁺ₖ)ᵀ, φB⁺ₖ]]. Where epoch k has no bias state yet (before the first GNSS fix,
/// or the fix that introduced it), the pair runs over x alone (n = 4): a bias introduced
/// independent of x (C = 0) makes the marginal recursion exact.
public enum RTSSmoother {
    /// Smoothed (mean, covariance) of x for every epoch, in order.
    public static func smooth(_ epochs: [FilterEpoch], angleIndex: Int?) -> [(mean: SIMD4<Double>, covariance: Mat4)] {
        var out = epochs.map { $0.posterior(dimension: $0.posteriorBias?.isPrimed == true ? 6 : 4) }
        if epochs.count > 1 {
            for k in stride(from: epochs.count - 2, through: 0, by: -1) {
                let (this, next) = (epochs[k], epochs[k + 1])
                guard !next.startsSegment else { continue }
                let n = this.posteriorBias?.isPrimed == true && next.priorBias?.isPrimed == true ? 6 : 4
                let prior = next.prior(dimension: n)
                guard let pinv = prior.covariance.spdInverse else { continue }
                let c = next.crossCovariance(from: this, dimension: n) * pinv
                var dx = (0..<n).map { out[k + 1].mean[$0] - prior.mean[$0] }
                if let a = angleIndex { dx[a] = Angle.wrap(dx[a]) }
                let post = this.posterior(dimension: n)
                var x = zip(post.mean, c * dx).map { $0 + $1 }
                if let a = angleIndex { x[a] = Angle.wrap(x[a]) }
                let ps = out[k + 1].covariance.block(n)
                out[k] = (x, (post.covariance + c * (ps - prior.covariance) * c.transposed).symmetrized)
            }
        }
        return out.map { g in
            var p = Mat4.zero
            for i in 0..<4 { for j in 0..<4 { p[i, j] = g.covariance[i, j] } }
            return (SIMD4(g.mean[0], g.mean[1], g.mean[2], g.mean[3]), p)
        }
    }
}

extension FilterEpoch {
    /// (x⁻, P⁻) of the epoch over the first n = 4 (x) or 6 ([x; b]) states.
    func prior(dimension n: Int) -> (mean: [Double], covariance: Matrix) {
        Self.gaussian(priorMean, priorCovariance, priorBias, n)
    }
    /// (x⁺, P⁺) of the epoch over n = 4 or 6 states.
    func posterior(dimension n: Int) -> (mean: [Double], covariance: Matrix) {
        Self.gaussian(posteriorMean, posteriorCovariance, posteriorBias, n)
    }
    /// Cov(y⁺ of `previous`, y⁻ of this epoch) over n states.
    func crossCovariance(from previous: FilterEpoch, dimension n: Int) -> Matrix {
        var d = Matrix(rows: n, cols: n)
        for i in 0..<4 { for j in 0..<4 { d[i, j] = crossCovariance[i, j] } }
        guard n == 6, let b = previous.posteriorBias else { return d }
        let fe = transition * b.crossE, fn = transition * b.crossN
        for i in 0..<4 {
            d[i, 4] = biasDecay * b.crossE[i]; d[i, 5] = biasDecay * b.crossN[i]
            d[4, i] = fe[i]; d[5, i] = fn[i]
        }
        d[4, 4] = biasDecay * b.covariance.ee; d[4, 5] = biasDecay * b.covariance.en
        d[5, 4] = biasDecay * b.covariance.en; d[5, 5] = biasDecay * b.covariance.nn
        return d
    }
    private static func gaussian(_ x: SIMD4<Double>, _ p: Mat4, _ b: GNSSBias?, _ n: Int) -> (mean: [Double], covariance: Matrix) {
        var mean = [x[0], x[1], x[2], x[3]]
        guard n == 6, let b else {
            var m = Matrix(rows: 4, cols: 4)
            for i in 0..<4 { for j in 0..<4 { m[i, j] = p[i, j] } }
            return (mean, m)
        }
        mean += [b.bias.x, b.bias.y]
        return (mean, b.augmented(p))
    }
}

extension Matrix {
    /// The leading n×n block.
    func block(_ n: Int) -> Matrix {
        guard n != rows || n != cols else { return self }
        var m = Matrix(rows: n, cols: n)
        for i in 0..<n { for j in 0..<n { m[i, j] = self[i, j] } }
        return m
    }
}

extension UnscentedKalmanFilter {
    /// Cross-covariance D = Cov(x, x⁻) of one UKF step prediction from (x, P) (the unscented
    /// RTS smoother's Dₖ₊₁, Särkkä 2008). The filter first diffuses by Q_d(Δt) with f = identity
    /// and then propagates sigma points of (x, P + Q_d) through the step model; with
    /// y = x + w_d Gaussian, Cov(x, f(y)) = P (P + Q_d)⁻¹ Cov(y, f(y)) exactly, and
    /// Cov(y, f(y)) = Σ Wᶜ (χᵢ − x)(f(χᵢ) − x⁻)ᵀ (ψ differences wrapped). Nil when a covariance
    /// is not positive definite (the filter then used its EKF fallback: D = P Fᵀ).
    func stepCrossCovariance(mean x: SIMD4<Double>, covariance p: Mat4, dt: Double, step: StepInput,
                             prior: SIMD4<Double>) -> Mat4? {
        let qd = motion.step.diffusion(dt: dt)
        let py = (p + qd).symmetrized
        guard let pts = sigmaPoints(mean: x, covariance: py) else { return nil }
        let (w0, wi) = sigma.covarianceWeights
        var dy = Mat4.zero
        for (i, chi) in pts.enumerated() {
            let moved = motion.step.propagate(chi, step)
            dy = dy + (i == 0 ? w0 : wi) * Mat4.outer(stateDiff(chi, x), stateDiff(moved, prior))
        }
        guard dt > 0 else { return dy }
        guard let pyi = py.spdInverse else { return nil }
        return p * pyi * dy
    }
}

/// Pipeline stage `smoother`: runs an EKF, UKF or particle filter (`filter: ekf|ukf|pf`) exactly
/// as the `ekf`/`ukf`/`pf` stage does (same options, one per phone), logs its epochs, and at the
/// end of the trace emits the smoothed estimate at every epoch where the filter emitted a fix
/// (offline replay only: nothing is emitted before `finish`): RTS for the Kalman filters, the
/// genealogy particle smoother (`ParticleSmoother`) for the pf, which keeps the pf's floor-plan
/// walls. The smoothed covariance is reported, so NEES and inside95 measure the smoother's own
/// consistency; plus, for the Kalman filters as for the filter's output, the GNSS bias block's
/// unexplained disagreement W of that epoch (`GNSSBias.excessCovariance`).
public final class SmootherStage: PipelineStage {
    public var sources: [Source] { [.smoother] }
    public func fresh() -> any PipelineStage { SmootherStage(settings: filter.settings) }
    public func reset() { filter.reset() }
    let filter: FusionStage
    /// The smoothed filter's per-source update counters (its forward pass: NIS of the filtered prior).
    public var counters: [Source: SourceCounters] { filter.counters }

    public init(settings: FusionStage.Settings) {
        filter = FusionStage(settings: settings, emitting: .smoother, recordEpochs: true)
    }

    /// Options: `FusionStage.Options.smoother` (those of the filter it smooths and `filter: ekf|ukf`).
    public convenience init(options o: StageOptions) throws {
        let name = try o.string(FusionStage.Options.filter.key, default: FusionStage.Options.filter.text)
        guard let kind = FusionStage.Kind(rawValue: name) else {
            throw ConfigurationError(path: "\(o.name).filter", reason: "the smoother runs over ekf, ukf or pf (got \(name))")
        }
        let stage = try FusionStage(kind: kind, options: o)
        self.init(settings: stage.settings)
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        _ = filter.process(event, upstream: upstream, context: context)
        return []
    }

    public func finish(context: PipelineContext) -> [StageResult] {
        var out: [StageResult] = []
        for (device, epochs) in filter.epochLogs {
            if filter.settings.kind == .pf {
                let smoothed = ParticleSmoother.smooth(epochs.map { $0.emitted ? $0.cloud : nil })
                for (e, s) in zip(epochs, smoothed) where e.emitted {
                    guard let s else { continue }
                    out.append(.fix(Fix(time: e.time, position: s.mean, covariance: s.covariance, source: .smoother, subject: device)))
                }
                continue
            }
            let layout = filter.layouts[device] ?? .step
            let smoothed = RTSSmoother.smooth(epochs, angleIndex: layout.angleIndex)
            for (e, s) in zip(epochs, smoothed) where e.emitted {
                let p = s.covariance
                // The filter's unexplained GNSS fix–track disagreement at this epoch widens the
                // smoothed region as it widens the filter's (`GNSSBias.excessCovariance`).
                let w = e.posteriorBias?.excessCovariance ?? .zero
                out.append(.fix(Fix(time: e.time, position: SIMD2(s.mean[0], s.mean[1]),
                                    covariance: Covariance2(ee: p[0, 0], en: 0.5 * (p[0, 1] + p[1, 0]), nn: p[1, 1]) + w,
                                    source: .smoother, subject: device)))
            }
        }
        return out
    }
}
