import Testing
import Foundation
@testable import Positioning

/// A linear scalar measurement z = a·E + b·N with variance r (exercises the generic update path).
struct LinearTestMeasurement: MeasurementModel {
    let source: Source
    let time: Double
    let z: [Double]
    let noise: Matrix
    let a: Double, b: Double
    init(time: Double, z: Double, a: Double, b: Double, r: Double, source: Source = .tdoa) {
        self.time = time; self.z = [z]; self.a = a; self.b = b; self.source = source
        noise = Matrix(rows: 1, cols: 1, data: [r])
    }
    func predict(_ p: SIMD2<Double>) -> [Double] { [a * p.x + b * p.y] }
    func jacobian(_ p: SIMD2<Double>) -> Matrix { Matrix(rows: 1, cols: 2, data: [a, b]) }
    func isAngleComponent(_ i: Int) -> Bool { false }
}

/// Textbook KF with general matrices (standard form P = (I − KH)P), the reference.
struct ReferenceKF {
    var x: [Double]; var p: Matrix
    mutating func predict(f: Matrix, q: Matrix) { x = f * x; p = f * p * f.transposed + q }
    mutating func update(h: Matrix, z: [Double], r: Matrix) {
        let s = h * p * h.transposed + r
        let k = p * h.transposed * s.inverse!
        let y = zip(z, h * x).map { $0 - $1 }
        let ky = k * y
        x = zip(x, ky).map(+)
        p = (Matrix.identity(x.count) - k * h) * p
    }
}

@Suite struct FilterAgreementTests {
    /// A seeded linear-Gaussian CV scenario: 60 steps of dt = 0.5 s, alternating 2-D fixes
    /// (correlated R) and scalar linear measurements.
    func scenario() -> [(dt: Double, m: any MeasurementModel)] {
        var g = Xoshiro256(seed: 42)
        let z = ZigguratNormal()
        var out: [(Double, any MeasurementModel)] = []
        var t = 0.0
        var truth = SIMD4<Double>(0, 0, 1.0, 0.4)
        for k in 0..<60 {
            t += 0.5
            truth = SIMD4(truth[0] + 0.5 * truth[2], truth[1] + 0.5 * truth[3], truth[2], truth[3])
            if k % 3 == 2 {
                out.append((0.5, LinearTestMeasurement(time: t, z: 0.6 * truth[0] - 0.8 * truth[1] + 0.7 * z.next(&g), a: 0.6, b: -0.8, r: 0.49)))
            } else {
                let e = SIMD2(2 * z.next(&g), 1.5 * z.next(&g))
                let fix = Fix(time: t, position: SIMD2(truth[0], truth[1]) + e, covariance: Covariance2(ee: 4, en: 0.9, nn: 2.25), source: .gnss)
                out.append((0.5, PositionMeasurement(fix: fix)))
            }
        }
        return out
    }

    let x0 = SIMD4<Double>(1, -1, 0, 0)
    let p0 = Mat4.diagonal(SIMD4(25, 25, 4, 4))
    let cv = MotionConfiguration(layout: .constantVelocity, constantVelocity: ConstantVelocityModel(q: 0.3))

    func runReference() -> ReferenceKF {
        var kf = ReferenceKF(x: [1, -1, 0, 0], p: p0.matrix)
        var t = 0.0
        for (dt, m) in scenario() {
            t += dt
            kf.predict(f: cv.constantVelocity.transition(dt: dt).matrix, q: cv.constantVelocity.noise(dt: dt).matrix)
            let jac = m.jacobian(.zero)
            var h = Matrix(rows: m.dimension, cols: 4)
            for i in 0..<m.dimension { h[i, 0] = jac[i, 0]; h[i, 1] = jac[i, 1] }
            kf.update(h: h, z: m.z, r: m.noise)
        }
        return kf
    }

    func run(_ f: any FusionFilter) {
        f.initialize(mean: x0, covariance: p0, time: 0)
        var t = 0.0
        for (dt, m) in scenario() {
            t += dt
            f.predict(to: t)
            #expect(f.update(m, gate: nil).accepted)
        }
    }

    /// KF, EKF and UKF agree to 1e-9 (mean, m and m/s; covariance entries) on a linear-Gaussian problem.
    @Test func kalmanFamilyAgrees() {
        let ref = runReference()
        let ekf = ExtendedKalmanFilter(motion: cv)
        let ukf = UnscentedKalmanFilter(motion: cv, sigma: SigmaPointParameters(alpha: 0.5))
        run(ekf); run(ukf)
        var worstMean = 0.0, worstCov = 0.0
        for f in [ekf as any FusionFilter, ukf] {
            for i in 0..<4 {
                worstMean = max(worstMean, abs(f.mean[i] - ref.x[i]))
                for j in 0..<4 { worstCov = max(worstCov, abs(f.covariance[i, j] - ref.p[i, j])) }
            }
        }
        #expect(worstMean < 1e-9, "mean disagreement \(worstMean)")
        #expect(worstCov < 1e-9, "covariance disagreement \(worstCov)")
        // The filter actually moved away from its prior.
        #expect(abs(ekf.mean[2] - 1.0) < 0.5)
    }

    /// UKF sigma-point parameters: α = 1 and α = 0.5 both exact on linear problems.
    @Test(arguments: [0.5, 1.0]) func ukfAlphaInvariance(alpha: Double) {
        let ref = runReference()
        let ukf = UnscentedKalmanFilter(motion: cv, sigma: SigmaPointParameters(alpha: alpha))
        run(ukf)
        for i in 0..<4 { #expect(abs(ukf.mean[i] - ref.x[i]) < 1e-9) }
    }

    /// Particle filter within Monte Carlo error of the KF. The Monte Carlo error is measured,
    /// not assumed: 10 seeds × 2000 particles; σ_MC = sample std of the PF mean across seeds.
    /// Pass when |mean over seeds − KF| < 4 σ_MC/√10 + 1 mm and the PF variance is within 15 %.
    @Test func particleFilterAgreesWithinMonteCarloError() {
        let ref = runReference()
        let seeds: [UInt64] = Array(1...10)
        var means: [SIMD4<Double>] = [], vars: [SIMD4<Double>] = []
        var resamples = 0
        for seed in seeds {
            let pf = ParticleFilter(motion: cv, count: 2000, seed: seed)
            pf.initialize(mean: x0, covariance: p0, time: 0)
            var t = 0.0
            for (dt, m) in scenario() { t += dt; pf.predict(to: t); _ = pf.update(m, gate: nil) }
            let (mu, p) = pf.estimate()
            means.append(mu); vars.append(p.diagonal); resamples += pf.resampleCount
        }
        let (k, avg, sd, avgVar) = Self.summary(means: means, variances: vars)
        for i in 0..<4 {
            #expect(abs(avg[i] - ref.x[i]) < 4 * sd[i] / k.squareRoot() + 1e-3, "component \(i): pf \(avg[i]) kf \(ref.x[i]) σ_MC \(sd[i])")
            #expect(abs(avgVar[i] / ref.p[i, i] - 1) < 0.15, "variance \(i): pf \(avgVar[i]) kf \(ref.p[i, i])")
            // The Monte Carlo error itself is small against the posterior spread.
            #expect(sd[i] < 0.5 * ref.p[i, i].squareRoot())
        }
        #expect(resamples > 0)
    }

    /// With the GNSS bias (τ_b 20 s, β 0.7): the Rao–Blackwellised particle filter within Monte
    /// Carlo error of the Kalman filter with the bias block (`GNSSBias`, itself equal to the
    /// dense 6-state filter to 1e-9, `GNSSBiasTests`), same criteria as above. Both run through
    /// `FusionTrack`, as in the stage. (Checked to fail when the particle filter ignores the
    /// bias: component 0 off by 0.26 m against a 0.12 m limit, variance off by 36 %.)
    @Test func particleFilterWithGNSSBiasAgreesWithinMonteCarloError() {
        let model = GNSSBias(correlationTime: 20, biasFraction: 0.7)
        func run(_ f: any FusionFilter) -> FusionTrack {
            let t = FusionTrack(filter: f, pdr: PedestrianDeadReckoning(declinationDegrees: 0), historySeconds: 10, recordEpochs: false, logNIS: false)
            if let pf = f as? ParticleFilter { pf.gnssBias = model } else { t.gnssBias = model }
            t.initialize(mean: x0, covariance: p0, time: 0)
            for (_, m) in scenario() { #expect(t.apply(.update(m), gate: { _ in nil })?.accepted == true) }
            return t
        }
        let ref = run(ExtendedKalmanFilter(motion: cv)).filter
        let seeds: [UInt64] = Array(1...10)
        var means: [SIMD4<Double>] = [], vars: [SIMD4<Double>] = []
        for seed in seeds {
            let pf = ParticleFilter(motion: cv, count: 2000, seed: seed)
            _ = run(pf)
            let (mu, p) = pf.estimate()
            means.append(mu); vars.append(p.diagonal)
        }
        let (k, avg, sd, avgVar) = Self.summary(means: means, variances: vars)
        for i in 0..<4 {
            #expect(abs(avg[i] - ref.mean[i]) < 4 * sd[i] / k.squareRoot() + 1e-3, "component \(i): pf \(avg[i]) kf \(ref.mean[i]) σ_MC \(sd[i])")
            #expect(abs(avgVar[i] / ref.covariance[i, i] - 1) < 0.15, "variance \(i): pf \(avgVar[i]) kf \(ref.covariance[i, i])")
        }
        // The bias mattered: the filter without it (fixes white) ends much tighter.
        let plain = ExtendedKalmanFilter(motion: cv)
        self.run(plain)
        #expect(plain.covariance[0, 0] < 0.8 * ref.covariance[0, 0])
    }

    /// Over seeds: their count k, the mean of the PF means, the sample std of the PF means (σ_MC)
    /// and the mean PF variance.
    static func summary(means: [SIMD4<Double>], variances: [SIMD4<Double>])
        -> (k: Double, mean: SIMD4<Double>, sd: SIMD4<Double>, variance: SIMD4<Double>) {
        let k = Double(means.count)
        let avg = means.reduce(SIMD4<Double>.zero, +) / k
        let sd = (means.map { ($0 - avg) * ($0 - avg) }.reduce(SIMD4<Double>.zero, +) / (k - 1)).squareRoot()
        return (k, avg, sd, variances.reduce(SIMD4<Double>.zero, +) / k)
    }

    /// Same seed ⇒ identical particle filter output.
    @Test func particleFilterIsDeterministic() {
        func once() -> SIMD4<Double> {
            let pf = ParticleFilter(motion: cv, count: 500, seed: 99)
            pf.initialize(mean: x0, covariance: p0, time: 0)
            var t = 0.0
            for (dt, m) in scenario() { t += dt; pf.predict(to: t); _ = pf.update(m, gate: nil) }
            return pf.mean
        }
        #expect(once() == once())
    }

    /// Systematic resampling gives particle j either ⌊N·wⱼ⌋ or ⌈N·wⱼ⌉ copies (Douc & Cappé 2005),
    /// for normalised and unnormalised weights, and the copies keep their ancestor's full state
    /// through the lazy gather (read back via `particles`, and via a CV prediction with q = 0).
    @Test func systematicResamplingCopyCounts() {
        for (n, seed, scale) in [(1000, UInt64(1), 1.0), (997, UInt64(2), 37.5), (64, UInt64(3), 1e-3)] {
            let pf = ParticleFilter(motion: MotionConfiguration(layout: .constantVelocity, constantVelocity: ConstantVelocityModel(q: 0)),
                                    count: n, seed: seed)
            pf.initialize(mean: .zero, covariance: .identity, time: 0)
            for i in 0..<n { pf.a0[i] = Double(i); pf.a1[i] = -Double(i); pf.a2[i] = 0.5 * Double(i); pf.a3[i] = 2 }
            var g = Xoshiro256(seed: seed + 100)
            var weights = (0..<n).map { _ in pow(g.uniform(), 4) }              // skewed, some near 0
            weights[n / 2] = 0
            let total = weights.reduce(0, +)
            for i in 0..<n { pf.w[i] = scale * weights[i] }
            pf.resample(weightSum: scale * total)
            let copies = pf.particles.reduce(into: [Int: Int]()) { $0[Int($1.position.x), default: 0] += 1 }
            #expect(copies.values.reduce(0, +) == n)
            for j in 0..<n {
                let expected = Double(n) * weights[j] / total
                let c = copies[j] ?? 0
                #expect(Double(c) >= expected.rounded(.down) - 1e-9 && Double(c) <= expected.rounded(.up) + 1e-9,
                        "n \(n) particle \(j): \(c) copies for N·w = \(expected)")
            }
            #expect(copies[n / 2] == nil)
            #expect(pf.particles.allSatisfy { $0.weight == 1 / Double(n) })
            // Resample again, then predict 1 s with q = 0: every slot moves by its ancestor's velocity.
            for i in 0..<n { pf.w[i] = weights[i] }
            pf.resample(weightSum: total)
            pf.predict(to: 1)
            for (p, _) in pf.particles {                                       // E = j + 0.5 j, N = −j + 2
                let j = (p.x / 1.5).rounded()
                #expect(abs(p.x - 1.5 * j) < 1e-9 && abs(p.y - (2 - j)) < 1e-9, "\(p)")
            }
        }
    }

    /// Joseph form keeps P symmetric positive definite and the χ² gate rejects a 50 σ outlier.
    @Test func gatingRejectsOutlier() {
        let ekf = ExtendedKalmanFilter(motion: cv)
        ekf.initialize(mean: x0, covariance: p0, time: 0)
        let bad = PositionMeasurement(fix: Fix(time: 0, position: SIMD2(500, 500), covariance: Covariance2(sigma: 2), source: .wcl))
        let r = ekf.update(bad, gate: ChiSquare.quantile(0.99, dof: 2))
        #expect(r.outcome == .gated)
        #expect(r.nis! > 1000)
        #expect(ekf.mean == x0)
        #expect(ekf.covariance.cholesky != nil)
    }
}

@Suite struct FusionMathTests {
    @Test func mat4CholeskyAndInverseMatchGSL() {
        let a = Mat4(rowMajor: [4, 1, 0.5, 0.2, 1, 3, 0.3, 0.1, 0.5, 0.3, 2, 0.4, 0.2, 0.1, 0.4, 1])
        let inv = a.spdInverse!
        let ref = a.matrix.spdInverse!
        for i in 0..<4 { for j in 0..<4 { #expect(abs(inv[i, j] - ref[i, j]) < 1e-12) } }
        let l = a.cholesky!
        let back = l * l.transposed
        for i in 0..<4 { for j in 0..<4 { #expect(abs(back[i, j] - a[i, j]) < 1e-12) } }
        #expect(Mat4.diagonal(SIMD4(1, 1, -1, 1)).cholesky == nil)
    }

    /// Ziggurat normals: mean 0, variance 1, skewness 0, kurtosis 3, and the tail beyond R
    /// (P(|x| > 3.4426) = 5.76e-4) within 5 standard errors, from 10⁶ seeded draws.
    @Test func zigguratMoments() {
        var g = Xoshiro256(seed: 1)
        let z = ZigguratNormal()
        let n = 1_000_000
        var s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, tail = 0
        for _ in 0..<n {
            let x = z.next(&g)
            s1 += x; s2 += x * x; s3 += x * x * x; s4 += x * x * x * x
            if abs(x) > 3.442619855899 { tail += 1 }
        }
        let m = s1 / Double(n), v = s2 / Double(n) - m * m
        #expect(abs(m) < 5 / Double(n).squareRoot())
        #expect(abs(v - 1) < 5 * (2 / Double(n)).squareRoot())
        #expect(abs(s3 / Double(n)) < 5 * (15 / Double(n)).squareRoot())
        #expect(abs(s4 / Double(n) - 3) < 5 * (96 / Double(n)).squareRoot())
        let pTail = 5.7643e-4
        #expect(abs(Double(tail) / Double(n) - pTail) < 5 * (pTail / Double(n)).squareRoot())
    }
}
