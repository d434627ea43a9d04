import Testing
import Foundation
@testable import Positioning

@Suite struct FingerprintEstimatorTests {
    typealias P = FingerprintMap.Point
    func scan(_ rss: [String: Double]) -> WiFiScan {
        WiFiScan(accessPoints: rss.sorted { $0.key < $1.key }.map { WiFiObservation(bssid: $0.key, rss: $0.value) })
    }

    /// ℓ by hand: heard both (s − δ − F)², heard by the phone only max(0, s − δ − T_map)², heard
    /// in the survey only max(0, F + δ − T_phone)², over 2σ²; with and without the offset δ.
    @Test func logLikelihoodByHand() throws {
        let map = FingerprintMap(points: [P(position: SIMD2(0, 0), rss: ["a": -50, "b": -60]),
                                          P(position: SIMD2(10, 0), rss: ["a": -70, "c": -65])], threshold: -90)
        let s = scan(["a": -52, "c": -70, "x": -40])   // x: unknown to the map, ignored
        var e = FingerprintEstimator(sigma: 2, offsetInvariant: false, minAPs: 2, phoneThreshold: -90)
        let ll = try e.logLikelihoods(s, map: map).get()
        // Point 0: a 2² + c (phone only) 20² + b (survey only) 30² = 1304.
        #expect(abs(ll[0] - (-1304.0 / 8)) < 1e-12)
        // Point 1: a 18² + c 5² = 349.
        #expect(abs(ll[1] - (-349.0 / 8)) < 1e-12)
        e.offsetInvariant = true
        let li = try e.logLikelihoods(s, map: map).get()
        // Point 0: δ = −2 → a 0, c 22², b 28² = 1268. Point 1: δ = (18 − 5)/2 = 6.5 → a 11.5², c 11.5².
        #expect(abs(li[0] - (-1268.0 / 8)) < 1e-12)
        #expect(abs(li[1] - (-2 * 11.5 * 11.5 / 8)) < 1e-12)
    }

    /// A scan equal to one point's fingerprint puts the fix on that point; two equally likely
    /// points give their midpoint and their spread plus the grid quantisation.
    @Test func exactMatchAndPosteriorSpread() throws {
        let fp: [[String: Double]] = [["a": -40, "b": -70, "c": -80], ["a": -60, "b": -50, "c": -75], ["a": -75, "b": -65, "c": -45]]
        let map = FingerprintMap(points: fp.enumerated().map { P(position: SIMD2(Double($0.offset) * 4, 0), rss: $0.element) },
                                 threshold: -90, spacing: 4)
        let e = FingerprintEstimator(sigma: 2)
        let f = try e.estimate(scan(fp[1]), time: 3, map: map).get()
        #expect(simd_len(f.position - SIMD2(4, 0)) < 1e-9)
        #expect(abs(f.covariance.ee - 16.0 / 12) < 1e-9 && abs(f.covariance.nn - 16.0 / 12) < 1e-9)
        #expect(f.source == .fingerprint && f.usedCount == 3 && f.time == 3)
        // Two identical fingerprints 4 m apart: mean halfway, variance 2² + 4²/12 along E.
        let twin = FingerprintMap(points: [P(position: SIMD2(0, 0), rss: fp[0]), P(position: SIMD2(4, 0), rss: fp[0])],
                                  threshold: -90, spacing: 4)
        let g = try e.estimate(scan(fp[0]), time: 0, map: twin).get()
        #expect(simd_len(g.position - SIMD2(2, 0)) < 1e-12)
        #expect(abs(g.covariance.ee - (4 + 16.0 / 12)) < 1e-12 && abs(g.covariance.en) < 1e-12)
    }

    /// A phone 6 dB hotter than the surveying device: the offset-invariant match still finds its
    /// point; taking δ = 0 does not (the hotter signature resembles a point nearer the APs).
    @Test func deviceOffsetInvariance() throws {
        let near: [String: Double] = ["a": -44, "b": -44, "c": -74]
        let here: [String: Double] = ["a": -50, "b": -58, "c": -80]
        let map = FingerprintMap(points: [P(position: SIMD2(0, 0), rss: near), P(position: SIMD2(20, 0), rss: here)], threshold: -90)
        let hot = scan(here.mapValues { $0 + 6 })
        // δ = 0: near 8² = 64 < here 3·6² = 108. Offset-invariant: here 0 < near 42.7.
        let inv = try FingerprintEstimator(sigma: 1, offsetInvariant: true).estimate(hot, time: 0, map: map).get()
        let raw = try FingerprintEstimator(sigma: 1, offsetInvariant: false).estimate(hot, time: 0, map: map).get()
        #expect(simd_len(inv.position - SIMD2(20, 0)) < 1e-6)
        #expect(simd_len(raw.position - SIMD2(0, 0)) < 1e-6)
    }

    /// Tempering: a scan the best point explains within σ is unchanged; one that even the best
    /// point misses by 3σ per AP gets σ̂² = q_min/h, a wider posterior.
    @Test func temperingWidensOnlyPoorMatches() throws {
        let fp: [[String: Double]] = [["a": -40, "b": -70, "c": -80], ["a": -50, "b": -62, "c": -78], ["a": -60, "b": -55, "c": -70]]
        let map = FingerprintMap(points: fp.enumerated().map { P(position: SIMD2(Double($0.offset) * 2, 0), rss: $0.element) }, threshold: -95)
        let plain = FingerprintEstimator(sigma: 2), tempered = FingerprintEstimator(sigma: 2, temper: true)
        let good = scan(["a": -49, "b": -63, "c": -77])        // 1 dB from point 1 per AP: q/h = 1 < σ² = 4
        #expect(try plain.logLikelihoods(good, map: map).get() == tempered.logLikelihoods(good, map: map).get())
        let poor = scan(["a": -44, "b": -68, "c": -84])        // ≥ 6 dB from every point
        let lp = try plain.logLikelihoods(poor, map: map).get(), lt = try tempered.logLikelihoods(poor, map: map).get()
        let qmin = -(lp.max()!) * 2 * 4, scale = qmin / (4 * 3)
        #expect(scale > 1)
        for i in 0..<3 { #expect(abs(lt[i] - lp[i] / scale) < 1e-12) }
        let wp = try plain.estimate(poor, time: 0, map: map).get(), wt = try tempered.estimate(poor, time: 0, map: map).get()
        #expect(wt.covariance.ee > wp.covariance.ee)
    }

    /// Calibration recovers σ where the model is exact: truth drawn from the map's points (the
    /// flat prior), scans = F(truth) + N(0, σ²) with every AP heard, no grid term. At the true σ
    /// the posterior is the exact Bayesian one, so E[NEES] = tr(P⁻¹P) = 2; 3,000 seeded scans.
    @Test func calibrationRecoversTheTrueSigma() throws {
        var pts: [P] = []
        let aps: [SIMD2<Double>] = [SIMD2(0, 0), SIMD2(30, 0), SIMD2(0, 30), SIMD2(30, 30)]
        func model(_ x: SIMD2<Double>) -> [String: Double] {
            var r: [String: Double] = [:]
            for (k, a) in aps.enumerated() { r["ap\(k)"] = -40 - 30 * log10(max(1, ((x - a) * (x - a)).sum().squareRoot())) }
            return r
        }
        for i in 0..<16 { for j in 0..<16 { pts.append(P(position: SIMD2(Double(i) * 2, Double(j) * 2), rss: model(SIMD2(Double(i) * 2, Double(j) * 2)))) } }
        let map = FingerprintMap(points: pts, threshold: -300)
        let est = FingerprintEstimator(phoneThreshold: -300)
        var rng = SplitMix64(seed: 99)
        let sigmaTrue = 4.0
        var samples: [FingerprintCalibration.Sample] = []
        for _ in 0..<3000 {
            let truth = pts[Int(rng.uniform() * Double(pts.count)) % pts.count]
            let s = scan(truth.rss.mapValues { $0 + sigmaTrue * rng.gaussian() })
            samples += [FingerprintCalibration.Sample(scan: s, time: 0, truth: truth.position, map: map, estimator: est)].compactMap { $0 }
        }
        let r = try #require(FingerprintCalibration.fit(samples))
        let atTrue = FingerprintCalibration.score(samples, sigma: sigmaTrue)
        print("fingerprint calibration: σ̂ = \(r.sigma) dB (true 4), ANEES at the true σ \(atTrue.anees), inside95 \(atTrue.inside95)")
        #expect(abs(atTrue.anees - 2) < 0.2)
        #expect(abs(r.sigma / sigmaTrue - 1) < 0.08)
        #expect(abs(r.anees - 2) < 0.01 && r.count == 3000)
    }

    /// The posterior keeps to the most probable floor.
    @Test func mostProbableFloor() throws {
        let a: [String: Double] = ["a": -50, "b": -60, "c": -70]
        let map = FingerprintMap(points: [P(position: SIMD2(0, 0), floor: 0, rss: a),
                                          P(position: SIMD2(0, 0), floor: 1, rss: a.mapValues { $0 - 15 }),
                                          P(position: SIMD2(6, 0), floor: 1, rss: a.mapValues { $0 - 14 })], threshold: -95)
        let f = try FingerprintEstimator(sigma: 3, offsetInvariant: false).estimate(scan(a.mapValues { $0 - 14.5 }), time: 0, map: map).get()
        #expect(f.floor == 1)
        #expect(abs(f.position.x - 3) < 1e-9)   // equally far from both floor-1 points
    }

    /// Typed failures: no map, too few known APs; never NaN.
    @Test func failures() {
        let e = FingerprintEstimator()
        #expect(throws: EstimationFailure.missingInput("no fingerprint map in the reference data")) {
            try e.estimate(scan(["a": -50, "b": -60, "c": -70]), time: 0, map: FingerprintMap(points: [], threshold: -90)).get()
        }
        let map = FingerprintMap(points: [P(position: SIMD2(0, 0), rss: ["a": -50, "b": -60, "c": -70])], threshold: -90)
        #expect(throws: EstimationFailure.tooFewAnchors(needed: 3, got: 2)) {
            try e.estimate(scan(["a": -50, "b": -60, "z": -70]), time: 0, map: map).get()
        }
        // Extreme mismatch: weights stay finite (log domain).
        let spaced = FingerprintMap(points: map.points, threshold: -90, spacing: 2)
        let f = try? e.estimate(scan(["a": 0, "b": 0, "c": 0]), time: 0, map: spaced).get()
        #expect(f.map { $0.position.x.isFinite && $0.covariance.ee.isFinite } == true)
        // One point and no spacing_m: no resolution to report, a typed failure (not a zero covariance).
        #expect(throws: EstimationFailure.collinearGeometry) { try e.estimate(scan(["a": -50, "b": -60, "c": -70]), time: 0, map: map).get() }
    }
}

private func simd_len(_ v: SIMD2<Double>) -> Double { (v * v).sum().squareRoot() }
