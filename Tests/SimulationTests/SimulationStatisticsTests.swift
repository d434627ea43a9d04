import Testing
import Foundation
import CGSL
@testable import Replay
import Positioning
@testable import Simulation
import TestSupport

/// Statistical checks of the generator: the noise that comes out is the noise that was
/// configured. Bounds are derived in the comments (3σ of the estimator unless stated).
@Suite struct SimulationStatisticsTests {

    /// Simulates a YAML scenario into a temp file and reads it back (strict reader).
    static func simulate(_ yaml: String, name: String) throws -> (header: TraceHeader, events: [TraceEvent]) {
        let sc = try Scenario.parse(yaml: yaml)
        let u = PackagePaths.temporaryFolder(name).appendingPathComponent("trace.jsonl")
        _ = try Simulator.run(scenario: sc, trace: u)
        let r = try TraceReader(url: u, mode: .strict)
        var ev: [TraceEvent] = []
        while let e = try r.next() { ev.append(e) }
        return (r.header, ev)
    }

    /// Ordinary least squares y = X β via GSL QR (gsl_linalg_QR_decomp / QR_lssolve).
    /// Returns β, the residual standard deviation s = √(RSS/(m − p)) and the standard errors
    /// SE(β_j) = s·√((XᵀX)⁻¹_jj) (from R: (XᵀX)⁻¹ = R⁻¹R⁻ᵀ).
    static func leastSquares(_ X: [[Double]], _ y: [Double]) -> (beta: [Double], s: Double, se: [Double]) {
        let m = y.count, p = X[0].count
        let A = gsl_matrix_alloc(m, p)!, b = gsl_vector_alloc(m)!, x = gsl_vector_alloc(p)!, res = gsl_vector_alloc(m)!
        let tau = gsl_vector_alloc(p)!
        defer { gsl_matrix_free(A); gsl_vector_free(b); gsl_vector_free(x); gsl_vector_free(res); gsl_vector_free(tau) }
        for i in 0..<m { for j in 0..<p { gsl_matrix_set(A, i, j, X[i][j]) }; gsl_vector_set(b, i, y[i]) }
        gsl_linalg_QR_decomp(A, tau)
        gsl_linalg_QR_lssolve(A, tau, b, x, res)
        var rss = 0.0
        for i in 0..<m { rss += pow(gsl_vector_get(res, i), 2) }
        let s = (rss / Double(m - p)).squareRoot()
        // (XᵀX)⁻¹ = R⁻¹ R⁻ᵀ; R is the upper triangle of A.
        var rinv = [[Double]](repeating: [Double](repeating: 0, count: p), count: p)
        for j in 0..<p {
            // Solve R · col = e_j by back substitution.
            for i in stride(from: p - 1, through: 0, by: -1) {
                var v = i == j ? 1.0 : 0.0
                for k in (i + 1)..<p { v -= gsl_matrix_get(A, i, k) * rinv[k][j] }
                rinv[i][j] = v / gsl_matrix_get(A, i, i)
            }
        }
        let se = (0..<p).map { j in s * (0..<p).reduce(0.0) { $0 + rinv[j][$1] * rinv[j][$1] }.squareRoot() }
        return ((0..<p).map { gsl_vector_get(x, $0) }, s, se)
    }

    // MARK: - WiFi: path-loss exponent and shadowing σ

    /// RSS = P0 − 10 n log10(d) + X + J, quantised to 1 dB, at 6000 random points 2–300 m from
    /// one AP (far apart compared with d_c = 3 m, so nearly independent). OLS on
    /// [1, −10 log10 d] recovers P0 and n within 3 SE; the residual σ̂ estimates
    /// √(σ_sh² + σ_j² + 1/12) (quantisation), whose SE is σ/√(2m) ≈ 0.06 dB; we allow 3 SE plus
    /// 0.15 dB for the finite-component field (its spatial variance is σ²(1 ± O(1/√M))).
    @Test func pathLossExponentAndShadowingAreRecovered() throws {
        let yaml = """
        origin: {lat: 0, lon: 0}
        duration_s: 1
        phones: [{path: {mode: static, waypoints: [[0, 0]]}}]
        wifi:
          threshold_dbm: -300
          shadowing_sigma_db: 6
          shadowing_corr_m: 3
          jitter_sigma_db: 2
          aps: [{e: 0, n: 0, u: 0, p0_dbm: -40, exponent: 3.2}]
        """
        let sc = try Scenario.parse(yaml: yaml)
        let w = WiFiSimulator(spec: sc.wifi!, seed: 42)
        let rng = SimRNG(seed: 42, stream: "test/positions")
        var X: [[Double]] = [], y: [Double] = []
        for _ in 0..<6000 {
            let r = 2 * pow(150, rng.uniform()), a = rng.uniform(0, 2 * .pi)   // log-uniform 2–300 m
            let e = r * sin(a), n = r * cos(a)
            let rss = quantise(w.meanRSS(0, e: e, n: n, u: 0, floor: 0) + rng.gaussian(2), 1)
            X.append([1, -10 * log10(max(1, r))]); y.append(rss)
        }
        let fit = Self.leastSquares(X, y)
        let sigmaTrue = (36 + 4 + 1.0 / 12).squareRoot()
        print("WiFi fit: P0 = \(fit.beta[0]) ± \(fit.se[0]) dBm, n = \(fit.beta[1]) ± \(fit.se[1]), σ̂ = \(fit.s) dB (configured √(6²+2²+1/12) = \(sigmaTrue))")
        #expect(abs(fit.beta[1] - 3.2) < 3 * fit.se[1])
        #expect(abs(fit.beta[0] + 40) < 3 * fit.se[0])
        #expect(abs(fit.s - sigmaTrue) < 3 * sigmaTrue / (2.0 * 6000).squareRoot() + 0.15)
    }

    /// Gudmundson: corr(X(p), X(p + d·u)) = exp(−d/d_c). At lag d_c the empirical correlation
    /// over 4000 independent pairs is 1/e = 0.368 ± 3·(1 − ρ²)/√N ≈ ±0.04.
    @Test func shadowingAutocorrelationIsExponential() {
        let f = CorrelatedField(sigma: 6, correlationDistance: 5, rng: SimRNG(seed: 7, stream: "test/field"))
        let rng = SimRNG(seed: 8, stream: "test/pairs")
        for (lag, expected) in [(5.0, exp(-1.0)), (10.0, exp(-2.0))] {
            var sxy = 0.0, sxx = 0.0, syy = 0.0
            let n = 4000
            for _ in 0..<n {
                let e = rng.uniform(-3000, 3000), nn = rng.uniform(-3000, 3000), a = rng.uniform(0, 2 * .pi)
                let x = f.value(e, nn), y = f.value(e + lag * sin(a), nn + lag * cos(a))
                sxy += x * y; sxx += x * x; syy += y * y
            }
            let rho = sxy / (sxx * syy).squareRoot()
            print("shadowing autocorrelation at \(lag) m: \(rho) (expected \(expected))")
            #expect(abs(rho - expected) < 3 * (1 - expected * expected) / Double(n).squareRoot() + 0.02)
        }
    }

    // MARK: - Timing advance

    /// LTE, rounding, no BTS noise/NLOS: TA·Δ − d is uniform on [−Δ/2, Δ/2] with Δ = 78.07 m
    /// (exact c). Check the support, the std Δ/√12 = 22.54 m (±5 %), and a χ² test of uniformity of
    /// the fractional part over 10 bins (df 9, 99.9 % quantile 27.9). With truncation the error
    /// moves to [−Δ, 0] (mean −Δ/2).
    @Test(arguments: ["round", "truncate"]) func timingAdvanceMatchesQuantisation(rounding: String) throws {
        let yaml = """
        name: ta
        origin: {lat: 52, lon: 10}
        duration_s: 1200
        phones: [{path: {mode: drive, speed_mps: 13.9, waypoints: [[100, 0], [16000, 0]]}}]
        cell:
          interval_s: 1
          ta_rounding: \(rounding)
          bts_sigma_m: 0
          shadowing_sigma_db: 0
          sites: [{rat: lte, e: 0, n: 0, height_m: 1.2, p0_dbm: 40}]
        """
        let (h, ev) = try Self.simulate(yaml, name: "ta-\(rounding)")
        _ = h
        var truth: [Double: Double] = [:]
        for e in ev { if case .groundTruth(let g) = e.payload, case .local(let p) = g.position { truth[e.time] = p.x } }
        let delta = 299_792_458.0 * 16 / (15_000 * 2048) / 2
        #expect(abs(delta - 78.07) < 0.005)
        var errs: [Double] = [], bins = [Int](repeating: 0, count: 10)
        for e in ev {
            guard case .cell(let c) = e.payload, let ta = c.timingAdvance, let x = truth[e.time] else { continue }
            #expect(c.timingAdvanceUnit == .lte16Ts)
            let d = x.magnitude   // antenna at the phone height, on the path's line
            let err = Double(ta) * delta - d
            errs.append(err)
            let frac = d / delta - (d / delta).rounded(.down)
            bins[min(9, Int(frac * 10))] += 1
        }
        #expect(errs.count > 1000)
        let mean = errs.reduce(0, +) / Double(errs.count)
        let sd = (errs.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(errs.count - 1)).squareRoot()
        let expectedMean = rounding == "round" ? 0 : -delta / 2
        print("TA \(rounding): n = \(errs.count), error mean \(mean) m (expected \(expectedMean)), std \(sd) m (Δ/√12 = \(delta / 12.0.squareRoot()))")
        if rounding == "round" { #expect(errs.allSatisfy { abs($0) <= delta / 2 + 1e-6 }) }
        else { #expect(errs.allSatisfy { $0 <= 1e-6 && $0 >= -delta - 1e-6 }) }
        #expect(abs(sd - delta / 12.0.squareRoot()) < 0.05 * delta / 12.0.squareRoot())
        #expect(abs(mean - expectedMean) < 3 * delta / 12.0.squareRoot() / Double(errs.count).squareRoot() * 3)
        let expected = Double(errs.count) / 10
        let chi2 = bins.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
        #expect(chi2 < 27.9)
    }

    /// GSM step Δ = c·(48/13 µs)/2 = 553.46 m; NR μ = 1: 39.04 m.
    @Test func timingAdvanceSteps() {
        let c = 299_792_458.0
        let gsm = CellSimulator.taStep(rat: .gsm, nrMu: 0), nr = CellSimulator.taStep(rat: .nr, nrMu: 1)
        #expect(abs(c * gsm.step / 2 - 553.46) < 0.005)
        #expect(abs(c * nr.step / 2 - 39.04) < 0.005)
        #expect(gsm.max == 63 && nr.max == 3846 && nr.unit == .nrMu1)
    }

    // MARK: - IMU steps

    /// Walking 300 m at 1.5 m/s with 1.9 steps/s: a Navigine-style detector (estimators.md §6:
    /// |a| minus a 2.5 s running mean, 0.2 s moving average, upward crossing of +0.05 g, ≥ 0.3 s
    /// apart) on the simulated 50 Hz accelerometer finds the configured cadence within 2 % and
    /// steps × (v/f) within 3 % of the distance walked.
    @Test func stepFrequencyMatchesPath() throws {
        let yaml = """
        origin: {lat: 0, lon: 0}
        phones: [{path: {mode: walk, speed_mps: 1.5, step_frequency_hz: 1.9, waypoints: [[0, 0], {e: 300, n: 0, pause_s: 3}]}}]
        imu: {rate_hz: 50}
        """
        let (_, ev) = try Self.simulate(yaml, name: "steps")
        var t: [Double] = [], mag: [Double] = []
        for e in ev { if case .imu(let s) = e.payload, s.kind == .accelerometer { t.append(e.time); mag.append((s.x * s.x + s.y * s.y + s.z * s.z).squareRoot()) } }
        let fs = 50.0, wMean = Int(2.5 * fs), wMA = Int(0.2 * fs)
        var hp = [Double](repeating: 0, count: mag.count)
        for i in mag.indices {
            let lo = max(0, i - wMean + 1)
            hp[i] = mag[i] - mag[lo...i].reduce(0, +) / Double(i - lo + 1)
        }
        var sm = [Double](repeating: 0, count: mag.count)
        for i in mag.indices { let lo = max(0, i - wMA + 1); sm[i] = hp[lo...i].reduce(0, +) / Double(i - lo + 1) }
        var steps: [Double] = []
        let th = 0.05 * 9.80665
        for i in 1..<sm.count where sm[i - 1] < th && sm[i] >= th {
            if let last = steps.last, t[i] - last < 0.3 { continue }
            steps.append(t[i])
        }
        let walk = steps.last! - steps.first!
        let cadence = Double(steps.count - 1) / walk
        let distance = Double(steps.count) * 1.5 / 1.9
        print("IMU steps: \(steps.count) steps, cadence \(cadence) Hz (configured 1.9), distance \(distance) m (walked 300)")
        #expect(abs(cadence - 1.9) < 0.02 * 1.9)
        #expect(abs(distance - 300) < 0.03 * 300)
    }

    /// A still phone: accelerometer mean ≈ (0, 0, g) + bias, std of each axis ≈ N·√f_s.
    @Test func stillPhoneAccelerometerNoise() throws {
        let yaml = """
        origin: {lat: 0, lon: 0}
        duration_s: 200
        phones: [{path: {mode: static, waypoints: [[0, 0]]}}]
        imu: {rate_hz: 100, acc_noise_density: 0.003, acc_bias_instability_mps2: 0, acc_resolution_mps2: 0.0001}
        """
        let (_, ev) = try Self.simulate(yaml, name: "still")
        var z: [Double] = []
        for e in ev { if case .imu(let s) = e.payload, s.kind == .accelerometer { z.append(s.z) } }
        let m = z.reduce(0, +) / Double(z.count)
        let sd = (z.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(z.count - 1)).squareRoot()
        // σ = 0.003·√100 = 0.03 m/s²; SE of the sample std ≈ σ/√(2N) = 0.00015.
        #expect(abs(sd - 0.03) < 0.0015)
        #expect(abs(m - 9.80665) < 0.25)   // turn-on bias σ 0.05 m/s²: 5σ
    }

    // MARK: - GNSS

    /// Open-sky preset with a short bias correlation time (τ_b = 5 s) over 4 h of 1 Hz fixes, no
    /// outliers: the E/N errors have mean 0 and std √(σ_w² + σ_b²) = 2.0 m. The bias makes the
    /// samples correlated: effective N ≈ T/(2τ_b)·(σ_b²/σ²) + … ≥ 1000 ⇒ the std estimate is
    /// within ≈ 3/√(2·1000) ≈ 7 %; the mean within 3·2.0/√1000 ≈ 0.19 m. The reported accuracy
    /// is the 68 % radius of that distribution: about 68 % (60–76 %) of the errors fall inside it.
    @Test func gnssErrorsFollowTheConfiguredDistribution() throws {
        let yaml = """
        name: gnss
        origin: {lat: 48, lon: 11, h: 500}
        duration_s: 14400
        phones: [{path: {mode: static, waypoints: [[0, 0]]}}]
        gnss: {profile: open-sky, bias_tau_s: 5, outlier_prob: 0}
        """
        let (h, ev) = try Self.simulate(yaml, name: "gnss")
        let frame = h.frame
        var de: [Double] = [], dn: [Double] = [], inside = 0
        for e in ev {
            guard case .gnss(let g) = e.payload else { continue }
            let p = frame.enu(Geodetic(latitude: g.latitude, longitude: g.longitude, height: g.altitude ?? 0))
            de.append(p.x); dn.append(p.y)
            if (p.x * p.x + p.y * p.y).squareRoot() <= g.accuracy { inside += 1 }
        }
        #expect(de.count == 14400)
        func stats(_ v: [Double]) -> (Double, Double) {
            let m = v.reduce(0, +) / Double(v.count)
            return (m, (v.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(v.count - 1)).squareRoot())
        }
        let (me, se) = stats(de), (mn, sn) = stats(dn)
        let coverage = Double(inside) / Double(de.count)
        print("GNSS open-sky: mean E \(me) N \(mn), std E \(se) N \(sn) (configured 2.0), inside reported accuracy \(coverage)")
        #expect(abs(me) < 0.19 && abs(mn) < 0.19)
        #expect(abs(se - 2.0) < 0.14 && abs(sn - 2.0) < 0.14)
        #expect(coverage > 0.60 && coverage < 0.76)
    }

    /// Urban-canyon availability: stationary fraction A = 0.9 with mean outage 8 s; over 4 h the
    /// fraction of epochs with a fix is within ±0.03 (≈ 3 SE for ≈ 180 independent on/off cycles).
    @Test func gnssAvailabilityMatchesUrbanPreset() throws {
        let yaml = """
        origin: {lat: 48, lon: 11}
        duration_s: 14400
        phones: [{path: {mode: static, waypoints: [[0, 0]]}}]
        gnss: {profile: urban-canyon}
        """
        let (_, ev) = try Self.simulate(yaml, name: "avail")
        let n = ev.filter { if case .gnss = $0.payload { return true }; return false }.count
        let a = Double(n) / 14400
        print("GNSS urban-canyon availability \(a) (configured 0.9)")
        #expect(abs(a - 0.9) < 0.03)
    }

    // MARK: - Acoustic

    /// Static phone, no NLOS/misses/sync error: c_s·(toa_i − toa_1) equals r_i − r_1 within the
    /// sample quantisation (7.2 mm step at 48 kHz, σ 2.1 mm) plus σ_toa = 10 µs (3.4 mm):
    /// std of the residual ≈ √2·√(2.1² + 3.4²) ≈ 5.7 mm; require < 8 mm and |mean| < 1 mm.
    @Test func acousticRangeDifferencesMatchGeometry() throws {
        let yaml = """
        origin: {lat: 0, lon: 0}
        temperature_c: 25
        duration_s: 60
        phones: [{height_m: 1.2, path: {mode: static, waypoints: [[4, 3]]}}]
        acoustic:
          toa_sigma_us: 10
          sync_sigma_us: 0
          nlos_prob: 0
          miss_prob: 0
          beacons: [{id: A, e: 0, n: 0, u: 3}, {id: B, e: 10, n: 0, u: 2.5}]
        """
        let (_, ev) = try Self.simulate(yaml, name: "acoustic")
        let cs = 331.3 * (1 + 25 / 273.15).squareRoot()
        let p = SIMD3(4.0, 3.0, 1.2)
        let rA = (p - SIMD3(0, 0, 3)).magnitude, rB = (p - SIMD3(10, 0, 2.5)).magnitude
        var byK: [Int: [String: Double]] = [:]
        for e in ev { if case .acoustic(let a) = e.payload { byK[a.emission!, default: [:]][a.beacon] = a.arrivalTime } }
        let res = byK.values.compactMap { m -> Double? in
            guard let a = m["A"], let b = m["B"] else { return nil }
            return cs * (b - a) - (rB - rA)
        }
        let mean = res.reduce(0, +) / Double(res.count)
        let sd = (res.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(res.count - 1)).squareRoot()
        print("acoustic: \(res.count) range differences, residual mean \(mean * 1000) mm, std \(sd * 1000) mm")
        #expect(res.count > 150)
        #expect(abs(mean) < 0.001 && sd < 0.008)
    }
}

extension SIMD3 where Scalar == Double {
    var magnitude: Double { (x * x + y * y + z * z).squareRoot() }
}
