import Foundation
import Testing
@testable import Positioning

/// The RTS smoother over the bias block in the step layout (PDR steps + WiFi fixes with a fitted
/// error correlation), the case of the ms-indoor walks (docs/fusion.md, "The smoother's region on
/// a walk with a constant WiFi offset"). `SmootherTests` and `RadioErrorCorrelationTests` check
/// the constant-velocity layout only.
@Suite struct SmootherBiasStepLayoutTests {
    /// One seeded walk of 120 steps (0.5 s apart, 0.7 m, small turns) whose truth follows the step
    /// model's own noise (`StepMotionModel`: length, heading and scale noise per step, diffusion
    /// between steps), and a WiFi fix every 4–6 steps (σ 8 m, β = 0.9 of it a bias). The bias is
    /// the model's Gauss–Markov process with τ = 25 s (`constantBias` false) or one offset for the
    /// whole walk (true: what the far ms-indoor walk shows), while the filter always carries the
    /// model (β 0.9, τ 25 s). Returns the ANEES over the fixes of the filtered and the smoothed
    /// track, and the largest ratio of a smoothed to its filtered position variance (trace).
    static func walk(seed: UInt64, constantBias: Bool) -> (filtered: Double, smoothed: Double, widest: Double) {
        let correlation = ErrorCorrelation(biasFraction: 0.9, correlationTime: 25)
        var motion = MotionConfiguration(layout: .step)
        motion.step.headingSigmaPerStep = Angle.radians(0.5)   // near-linear: the test is about the bias block
        let sm = motion.step
        let filter = ExtendedKalmanFilter(motion: motion)
        let track = FusionTrack(filter: filter, pdr: PedestrianDeadReckoning(declinationDegrees: 0), historySeconds: 10,
                                recordEpochs: true, logNIS: false)
        track.interpolatesStrides = false
        track.gnssBias = GNSSBias(correlationTime: correlation.correlationTime, biasFraction: correlation.biasFraction)
        var rng = SplitMix64(seed: seed)
        var p0 = Mat4.zero
        p0[0, 0] = 25; p0[1, 1] = 25; p0[2, 2] = pow(Angle.radians(5), 2); p0[3, 3] = 0.01
        let m0 = SIMD4<Double>(0, 0, 0.3, 1)
        track.initialize(mean: m0, covariance: p0, time: 0)
        var x = m0 + SIMD4(5 * rng.gaussian(), 5 * rng.gaussian(), Angle.radians(5) * rng.gaussian(), 0.1 * rng.gaussian())
        let sigma = 8.0, beta = correlation.biasFraction
        var b = sigma * beta.squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
        var lastFix = 0.0, nextFix = 4 + Int(rng.uniform() * 3)
        var fixes: [(epoch: Int, truth: SIMD2<Double>, mean: SIMD2<Double>, covariance: Covariance2)] = []
        for k in 1...120 {
            let t = 0.5 * Double(k), dt = 0.5
            let dpsi = Angle.radians(k % 20 < 10 ? 3 : -3)
            // Truth: the filter's own model (diffusion over dt, then the step with its noise).
            x[0] += (sm.positionDiffusion * dt).squareRoot() * rng.gaussian()
            x[1] += (sm.positionDiffusion * dt).squareRoot() * rng.gaussian()
            x[2] += (sm.headingDiffusion * dt).squareRoot() * rng.gaussian()
            x[3] += (sm.scaleDiffusion * dt).squareRoot() * rng.gaussian()
            let step = StepInput(time: t, length: 0.7, headingChange: dpsi)
            let psi = x[2] + dpsi
            let d = x[3] * (step.length + sm.lengthSigmaFraction * step.length * rng.gaussian())
            x = SIMD4(x[0] + d * sin(psi), x[1] + d * cos(psi), psi + sm.headingSigmaPerStep * rng.gaussian(),
                      x[3] + sm.scaleSigmaPerStep * rng.gaussian())
            track.apply(.step(step), gate: { _ in nil })
            guard k == nextFix else { continue }
            nextFix += 4 + Int(rng.uniform() * 3)
            if !constantBias {
                let phi = exp(-(t - lastFix) / correlation.correlationTime)
                b = phi * b + sigma * (beta * (1 - phi * phi)).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
            }
            lastFix = t
            let truth = SIMD2(x[0], x[1])
            var f = Fix(time: t, position: truth + b + sigma * (1 - beta).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian()),
                        covariance: Covariance2(sigma: sigma), source: .wcl)
            f.errorCorrelation = correlation
            track.apply(.update(PositionMeasurement(fix: f)), gate: { _ in nil })
            let out = track.filter.fix(source: .ekf, subject: "")
            fixes.append((track.epochs.count - 1, truth, out.position, out.covariance))
        }
        let smoothed = RTSSmoother.smooth(track.epochs, angleIndex: 2)
        var nf = 0.0, ns = 0.0, widest = 0.0
        for f in fixes {
            let s = smoothed[f.epoch]
            let ps = Covariance2(ee: s.covariance[0, 0], en: s.covariance[0, 1], nn: s.covariance[1, 1])
            nf += f.covariance.mahalanobis2(f.mean - f.truth) ?? .infinity
            ns += ps.mahalanobis2(SIMD2(s.mean[0], s.mean[1]) - f.truth) ?? .infinity
            widest = max(widest, (ps.ee + ps.nn) / (f.covariance.ee + f.covariance.nn))
        }
        return (nf / Double(fixes.count), ns / Double(fixes.count), widest)
    }

    static func meanAndLimit(_ v: [Double]) -> (mean: Double, limit: Double) {
        let m = v.reduce(0, +) / Double(v.count)
        let sd = (v.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(v.count - 1)).squareRoot()
        return (m, 3 * sd / Double(v.count).squareRoot())
    }

    /// Model-matched bias: filtered and smoothed ANEES within 3 standard errors of 2 over 300 seeded
    /// walks (each walk's average NEES has expectation 2 for a consistent filter), and the
    /// smoothed variance never above the filtered one. So in the step layout, as in the
    /// constant-velocity one, the smoothed covariance is the model's.
    @Test func smootherIsConsistentWithAModelMatchedBias() {
        let runs = (0..<300).map { Self.walk(seed: 9000 + UInt64($0), constantBias: false) }
        for (name, v) in [("filtered", runs.map(\.filtered)), ("smoothed", runs.map(\.smoothed))] {
            let (m, limit) = Self.meanAndLimit(v)
            #expect(abs(m - 2) < limit, "\(name) ANEES \(m), 2 ± \(limit)")
        }
        #expect(runs.allSatisfy { $0.widest <= 1 + 1e-9 }, "a smoothed variance above the filtered one")
    }

    /// One offset for the whole walk while the model lets the bias decorrelate over τ = 25 s (the
    /// far ms-indoor walk): the smoother is over-confident (ANEES above 2 by more than 3 standard
    /// errors) and more so than the filter, run by run (the mean paired difference above 3 of its
    /// standard errors); the filter, whose early epochs have seen few fixes, is not clearly so
    /// (measured 2.14 ± 0.30). The smoother rightly combines the fixes before and after each epoch,
    /// which under the model carry nearly independent biases: this is the model's misfit on such a
    /// walk, not a smoother defect (the test above; figures in docs/fusion.md).
    @Test func constantOffsetMakesTheSmootherMoreOverconfidentThanTheFilter() {
        let runs = (0..<300).map { Self.walk(seed: 9000 + UInt64($0), constantBias: true) }
        let (s, sl) = Self.meanAndLimit(runs.map(\.smoothed))
        let (d, dl) = Self.meanAndLimit(runs.map { $0.smoothed - $0.filtered })
        #expect(s > 2 + sl, "smoothed ANEES \(s) ± \(sl)")
        #expect(d > dl, "smoothed − filtered ANEES \(d) ± \(dl)")
        #expect(runs.allSatisfy { $0.widest <= 1 + 1e-9 }, "a smoothed variance above the filtered one")
    }
}
