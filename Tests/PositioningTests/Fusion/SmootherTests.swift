import Foundation
import Testing
@testable import Positioning

/// RTS smoother: unscented form, ψ wrapping in the step layout, and Monte Carlo accuracy and
/// consistency of the smoothed track on a model-matched constant-velocity problem.
@Suite struct SmootherTests {
    static let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))

    static func fixes(_ out: [StageResult]) -> [Fix] {
        out.compactMap { r -> Fix? in if case .fix(let f) = r { return f }; return nil }
    }

    /// One model-matched constant-velocity realisation: truth from the filter's own Q(Δt) and the
    /// initial speed prior, fixes with σ; returns truth positions and (filtered, smoothed) fixes.
    /// `bias`: the fixes' error is b + w with b the first-order Gauss–Markov bias of `GNSSBias`
    /// (Σ_b = βσ², τ_b) and w white ((1 − β)σ²); `modelBias` says whether the filter carries the
    /// bias states. Without `bias` the error is white and the filter has no bias states.
    static func run(kind: FusionStage.Kind, seed: UInt64, epochs n: Int = 60, sigma: Double = 3,
                    bias: GNSSBias? = nil, modelBias: Bool = true, particles: Int = 2000)
        -> (truth: [SIMD2<Double>], filtered: [Fix], smoothed: [Fix]) {
        var s = FusionStage.Settings(kind: kind)
        s.particles = particles
        s.inflation = [:]; s.gateProbability = nil; s.layout = .cv
        s.gnssBias = modelBias ? bias : nil
        s.adaptiveAccuracy = []                              // the model is known exactly here
        let filter = FusionStage(settings: s)
        let smoother = SmootherStage(settings: s)
        var rng = SplitMix64(seed: seed)
        let q = s.motion.constantVelocity.q, dt = 1.0
        // Q(Δt) per axis = q [[Δt³/3, Δt²/2], [Δt²/2, Δt]]; Cholesky by hand.
        let a = q * dt * dt * dt / 3, b = q * dt * dt / 2, c = q * dt
        let l11 = a.squareRoot(), l21 = b / l11, l22 = (c - l21 * l21).squareRoot()
        var p = SIMD2<Double>(10, -5)
        var v = SIMD2(s.initialSpeedSigma * rng.gaussian(), s.initialSpeedSigma * rng.gaussian())
        let beta = bias?.biasFraction ?? 0, sb = sigma * beta.squareRoot(), sw = sigma * (1 - beta).squareRoot()
        let phi = bias?.decay(dt) ?? 0
        var e = sb * SIMD2(rng.gaussian(), rng.gaussian())
        var truth: [SIMD2<Double>] = []
        var filtered: [Fix] = []
        for k in 0..<n {
            if k > 0 {
                let u = SIMD2(rng.gaussian(), rng.gaussian()), w = SIMD2(rng.gaussian(), rng.gaussian())
                p += dt * v + l11 * u
                v += l21 * u + l22 * w
                e = phi * e + sb * (1 - phi * phi).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
            }
            truth.append(p)
            let z = p + e + sw * SIMD2(rng.gaussian(), rng.gaussian())
            let f = Fix(time: Double(k) * dt, position: z, covariance: Covariance2(sigma: sigma), source: .gnss)
            let ev = TraceEvent(time: f.time, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: sigma)))
            filtered += fixes(filter.process(ev, upstream: [.fix(f)], context: context))
            _ = smoother.process(ev, upstream: [.fix(f)], context: context)
        }
        return (truth, filtered, fixes(smoother.finish(context: context)))
    }

    /// The unscented RTS (cross-covariance form) equals the extended RTS on a linear model
    /// (the UKF is exact there, D = P Fᵀ), hence the batch solution, to 1e-9.
    @Test func unscentedEqualsExtendedOnLinearModel() {
        let e = Self.run(kind: .ekf, seed: 11, epochs: 25), u = Self.run(kind: .ukf, seed: 11, epochs: 25)
        #expect(e.smoothed.count == 25 && u.smoothed.count == 25)
        for (a, b) in zip(e.smoothed, u.smoothed) {
            #expect(abs(a.position.x - b.position.x) < 1e-9 && abs(a.position.y - b.position.y) < 1e-9)
            #expect(abs(a.covariance.ee - b.covariance.ee) < 1e-9 * a.covariance.ee)
            #expect(abs(a.covariance.en - b.covariance.en) < 1e-9 * a.covariance.ee)
        }
    }

    /// Over 200 seeded runs: the smoothed RMSE is below the filtered one, and the smoothed NEES
    /// at a fixed epoch (independent across runs, so Σ ε ~ χ²_{2M} exactly) lies in its 95 %
    /// band [χ²₄₀₀(0.025), χ²₄₀₀(0.975)]/200 = [1.73, 2.29]; the filtered one too.
    @Test(arguments: [FusionStage.Kind.ekf, .ukf]) func smoothedTrackIsBetterAndConsistent(kind: FusionStage.Kind) {
        let x = Self.monteCarlo(kind: kind)
        #expect(x.rmse.smoothed < x.rmse.filtered, "smoothed RMSE \(x.rmse.smoothed) vs filtered \(x.rmse.filtered)")
        #expect(x.band.contains(x.anees.smoothed), "smoothed ANEES \(x.anees.smoothed) outside \(x.band)")
        #expect(x.band.contains(x.anees.filtered), "filtered ANEES \(x.anees.filtered) outside \(x.band)")
    }

    /// The same with a Gauss–Markov GNSS bias in the fixes (β = 0.75, τ_b = 30 s over a 60 s
    /// track) and the bias states in the filter: the smoother better, and filtered and
    /// smoothed NEES consistent. The statistic is the NEES averaged over all 60 epochs of a run:
    /// for a consistent filter its expectation is exactly 2 however the epochs correlate, and
    /// the runs are independent, so the mean of 400 run averages must lie within 3 standard
    /// errors of 2 (CLT; the standard error from the run averages themselves). (The single-epoch
    /// band of the white test was too weak here: at epoch 30 the 1000 runs on seeds 1000… gave
    /// 1.84, 2.6 standard errors low, while 3000 runs on other seeds gave 1.96 ± 0.04 — the
    /// filter itself is exact, `smootherEqualsBatchSolution`.) The same data through a filter
    /// without bias states (the fixes taken as white with their full σ) is over-confident:
    /// smoothed ANEES more than twice 2, filtered above the 3-standard-error limit — what
    /// docs/consistency.md diagnosed. EKF only: on this linear model the UKF is the same filter.
    @Test func biasStatesMakeFilterAndSmootherConsistent() {
        let bias = GNSSBias(correlationTime: 30, biasFraction: 0.75)
        let runs = 400
        func averages(modelBias: Bool) -> (rmse: (filtered: Double, smoothed: Double), filtered: [Double], smoothed: [Double]) {
            var se = (filtered: 0.0, smoothed: 0.0, count: 0)
            var f: [Double] = [], sm: [Double] = []
            for r in 0..<runs {
                let x = Self.run(kind: .ekf, seed: 1000 + UInt64(r), bias: bias, modelBias: modelBias)
                var a = (0.0, 0.0)
                for k in x.truth.indices {
                    let df = x.filtered[k].position - x.truth[k], ds = x.smoothed[k].position - x.truth[k]
                    se.filtered += (df * df).sum(); se.smoothed += (ds * ds).sum(); se.count += 1
                    a.0 += x.filtered[k].covariance.mahalanobis2(df) ?? .infinity
                    a.1 += x.smoothed[k].covariance.mahalanobis2(ds) ?? .infinity
                }
                f.append(a.0 / Double(x.truth.count)); sm.append(a.1 / Double(x.truth.count))
            }
            let n = Double(se.count)
            return (((se.filtered / n).squareRoot(), (se.smoothed / n).squareRoot()), f, sm)
        }
        func meanAndLimit(_ v: [Double]) -> (mean: Double, limit: Double) {
            let m = v.reduce(0, +) / Double(v.count)
            let sd = (v.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(v.count - 1)).squareRoot()
            return (m, 3 * sd / Double(v.count).squareRoot())
        }
        let x = averages(modelBias: true)
        #expect(x.rmse.smoothed < x.rmse.filtered, "smoothed RMSE \(x.rmse.smoothed) vs filtered \(x.rmse.filtered)")
        for (name, v) in [("filtered", x.filtered), ("smoothed", x.smoothed)] {
            let (m, limit) = meanAndLimit(v)
            #expect(abs(m - 2) < limit, "\(name) ANEES \(m), 2 ± \(limit)")
        }
        let white = averages(modelBias: false)
        let (wf, wfLimit) = meanAndLimit(white.filtered), ws = meanAndLimit(white.smoothed).mean
        #expect(ws > 4, "without bias states: smoothed ANEES \(ws)")
        #expect(wf > 2 + wfLimit, "without bias states: filtered ANEES \(wf)")
    }

    /// White fixes: RMSE over all epochs and ANEES at epoch 30 over seeded runs, with the 95 % band.
    static func monteCarlo(kind: FusionStage.Kind, runs: Int = 200)
        -> (rmse: (filtered: Double, smoothed: Double), anees: (filtered: Double, smoothed: Double), band: ClosedRange<Double>) {
        let epoch = 30
        var se = (filtered: 0.0, smoothed: 0.0, count: 0)
        var nees = (filtered: 0.0, smoothed: 0.0)
        for r in 0..<runs {
            let x = run(kind: kind, seed: 1000 + UInt64(r))
            #expect(x.filtered.count == x.truth.count && x.smoothed.count == x.truth.count)
            for k in x.truth.indices {
                let df = x.filtered[k].position - x.truth[k], ds = x.smoothed[k].position - x.truth[k]
                se.filtered += (df * df).sum(); se.smoothed += (ds * ds).sum(); se.count += 1
            }
            nees.filtered += x.filtered[epoch].covariance.mahalanobis2(x.filtered[epoch].position - x.truth[epoch]) ?? .infinity
            nees.smoothed += x.smoothed[epoch].covariance.mahalanobis2(x.smoothed[epoch].position - x.truth[epoch]) ?? .infinity
        }
        let n = Double(se.count), m = Double(runs)
        let lo = ChiSquare.quantile(0.025, dof: 2 * runs) / m, hi = ChiSquare.quantile(0.975, dof: 2 * runs) / m
        return (((se.filtered / n).squareRoot(), (se.smoothed / n).squareRoot()), (nees.filtered / m, nees.smoothed / m), lo...hi)
    }

    /// Step layout: walking due south (ψ ≈ π, the filter's ψ crosses ±π) smooths to exactly the
    /// track of the same walk rotated by π (ψ ≈ 0, no wrap): (E, N) → (−E, −N), ψ → ψ − π.
    @Test(arguments: [FusionStage.Kind.ekf, .ukf]) func headingWrapsInStepLayout(kind: FusionStage.Kind) throws {
        func smoothed(rotated: Bool) throws -> [SIMD4<Double>] {
            let motion = MotionConfiguration(layout: .step)
            let filter: any FusionFilter = kind == .ekf ? ExtendedKalmanFilter(motion: motion) : UnscentedKalmanFilter(motion: motion)
            let track = FusionTrack(filter: filter, pdr: PedestrianDeadReckoning(declinationDegrees: 0), historySeconds: 10,
                                    recordEpochs: true, logNIS: false)
            let sign = rotated ? -1.0 : 1.0
            var p0 = Mat4.zero
            p0[0, 0] = 4; p0[1, 1] = 4; p0[2, 2] = pow(Angle.radians(20), 2); p0[3, 3] = 0.02
            track.initialize(mean: SIMD4(0, 0, rotated ? 0.05 : Angle.wrap(.pi + 0.05), 1), covariance: p0, time: 0)
            var rng = SplitMix64(seed: 5)
            var truth = SIMD2<Double>(0, 0)
            for k in 1...40 {
                let t = 0.5 * Double(k)
                // Alternating small turns make the heading cross ±π in the unrotated walk.
                let dpsi = (k % 2 == 0 ? 1 : -1) * Angle.radians(6)
                track.apply(.step(StepInput(time: t, length: 0.7, headingChange: dpsi)), gate: { _ in nil })
                truth += sign * SIMD2(0.7 * sin(0.05), -0.7 * cos(0.05))
                if k % 4 == 0 {
                    let z = truth + sign * 2 * SIMD2(rng.gaussian(), rng.gaussian())
                    let m = PositionMeasurement(fix: Fix(time: t, position: z, covariance: Covariance2(sigma: 2), source: .gnss))
                    track.apply(.update(m), gate: { _ in nil })
                }
            }
            return RTSSmoother.smooth(track.epochs, angleIndex: 2).map(\.mean)
        }
        let a = try smoothed(rotated: false), b = try smoothed(rotated: true)
        try #require(a.count == b.count && a.count > 40)
        var crossed = (positive: false, negative: false)
        for (x, y) in zip(a, b) {
            #expect(abs(x[0] + y[0]) < 1e-7 && abs(x[1] + y[1]) < 1e-7, "\(x) vs rotated \(y)")
            #expect(abs(Angle.wrap(x[2] - .pi - y[2])) < 1e-9, "ψ \(x[2]) vs rotated \(y[2])")
            #expect(abs(x[3] - y[3]) < 1e-9)
            if x[2] > 3 { crossed.positive = true }
            if x[2] < -3 { crossed.negative = true }
        }
        #expect(crossed.positive && crossed.negative, "the smoothed heading should visit both sides of ±π")
    }
}
