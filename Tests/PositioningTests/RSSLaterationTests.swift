import Testing
import Foundation
@testable import Positioning

/// `rss`: posterior mean and covariance of the position under the log-distance model.
@Suite struct RSSLaterationTests {
    static let grid: [SIMD2<Double>] = [SIMD2(0, 0), SIMD2(20, 0), SIMD2(40, 0), SIMD2(0, 20), SIMD2(20, 20), SIMD2(40, 20)]

    static func map(_ points: [SIMD2<Double>]) -> [String: AccessPoint] {
        var m: [String: AccessPoint] = [:]
        for (i, p) in points.enumerated() {
            let mac = String(format: "02:00:00:00:00:%02x", i + 1)
            m[mac] = AccessPoint(bssid: mac, position: SIMD3(p.x, p.y, 3), p0: -40, pathLossExponent: 3)
        }
        return m
    }

    /// RSS of every AP at p (phone height 1.2 m), plus seeded N(0, σ²) shadowing.
    static func scan(at p: SIMD2<Double>, map: [String: AccessPoint], sigma: Double, rng: inout Xoshiro256) -> WiFiScan {
        let normal = ZigguratNormal.shared
        return WiFiScan(accessPoints: map.values.sorted { $0.bssid < $1.bssid }.map { ap in
            let m = PathLossModel(anchor: ap.position, p0: -40, exponent: 3, phoneUp: 1.2)
            return WiFiObservation(bssid: ap.bssid, rss: m.mean(p) + sigma * normal.next(&rng))
        })
    }

    /// Noise-free RSS and a tiny σ: the posterior collapses on the true grid node.
    @Test func exactOnNoiseFreeGeometry() throws {
        let map = Self.map(Self.grid)
        var rng = Xoshiro256(seed: 1)
        let est = RSSLaterationEstimator(wcl: WCLEstimator(rssMin: -200), shadowingSigma: 0.05, margin: 10)   // 1 m grid from (−10, −10)
        for truth in [SIMD2(13.0, 7.0), SIMD2(-4.0, 22.0), SIMD2(35.0, 12.0)] {       // −4: outside the APs' hull
            let f = try est.estimate(Self.scan(at: truth, map: map, sigma: 0, rng: &rng), time: 0, map: map).get()
            #expect(abs(f.position.x - truth.x) < 1e-9 && abs(f.position.y - truth.y) < 1e-9, "\(f.position) vs \(truth)")
            #expect(f.source == .rss && f.usedCount == 6)
        }
    }

    /// The node loop over plain arrays gives bit-identical fixes to the posterior written with
    /// `PathLossModel.mean` per node and anchor (the direct form below), on 100 seeded scans of
    /// 3–40 anchors with mixed P0, n and heights, tempered or not.
    @Test func posteriorBitIdenticalToModelMean() throws {
        var rng = Xoshiro256(seed: 9)
        let est = RSSLaterationEstimator(shadowingSigma: 6)
        for _ in 0..<100 {
            let n = 3 + Int(rng.uniform() * 38)
            let anchors = (0..<n).map { i in
                WCLAnchor(id: "a\(i)", position: SIMD2(120 * rng.uniform(), 90 * rng.uniform()), rss: -95 + 60 * rng.uniform(),
                          p0: rng.uniform() < 0.5 ? -35 - 10 * rng.uniform() : nil, pathLossExponent: rng.uniform() < 0.5 ? 2 + 2 * rng.uniform() : nil,
                          up: 4 * rng.uniform())
            }
            guard case .success(let f) = est.fix(anchors: anchors, time: 0) else { continue }
            // Direct form.
            let m = est.models(anchors)
            var lo = SIMD2(Double.infinity, .infinity), hi = -lo
            for a in anchors { lo = pointwiseMin(lo, a.position); hi = pointwiseMax(hi, a.position) }
            lo -= est.margin; hi += est.margin
            let cell = max(1, max(hi.x - lo.x, hi.y - lo.y) / 80)
            let nx = Int(((hi.x - lo.x) / cell).rounded(.up)) + 1, ny = Int(((hi.y - lo.y) / cell).rounded(.up)) + 1
            let half = -0.5 / (est.shadowingSigma * est.shadowingSigma)
            var logL = [Double](repeating: 0, count: nx * ny), best = -Double.infinity
            for iy in 0..<ny {
                for ix in 0..<nx {
                    let p = lo + SIMD2(Double(ix), Double(iy)) * cell
                    var l = 0.0
                    for (k, a) in anchors.enumerated() { let r = a.rss - m[k].mean(p); l += half * r * r }
                    logL[iy * nx + ix] = l; best = max(best, l)
                }
            }
            let chi2 = -2 * best
            let temper = chi2 > ChiSquare.quantile(0.99, dof: n - 2) ? chi2 / Double(n - 2) : 1
            var wSum = 0.0, mu = SIMD2<Double>.zero
            for iy in 0..<ny {
                for ix in 0..<nx {
                    let w = exp((logL[iy * nx + ix] - best) / temper)
                    wSum += w; mu += w * (lo + SIMD2(Double(ix), Double(iy)) * cell)
                }
            }
            mu /= wSum
            #expect(f.position == mu, "\(f.position) vs \(mu)")
        }
    }

    /// Truth drawn from the estimator's own prior (uniform over the APs' box + margin) and RSS from
    /// the model with σ = 6 dB: the posterior covariance is then exact, E[NEES] = 2; over 300
    /// seeded runs the average NEES lies in its 99 % χ² band [χ²₆₀₀(0.005), χ²₆₀₀(0.995)]/300.
    /// WCL on the same scans is worse (inward bias).
    @Test func posteriorIsConsistent() throws {
        let map = Self.map(Self.grid)
        var rng = Xoshiro256(seed: 42)
        let est = RSSLaterationEstimator(wcl: WCLEstimator(rssMin: -200), shadowingSigma: 6)
        let runs = 300
        var nees = 0.0, errRSS = 0.0, errWCL = 0.0
        for _ in 0..<runs {
            let truth = SIMD2(-15 + 70 * rng.uniform(), -15 + 50 * rng.uniform())
            let s = Self.scan(at: truth, map: map, sigma: 6, rng: &rng)
            let f = try est.estimate(s, time: 0, map: map).get()
            let e = f.position - truth
            nees += try #require(f.covariance.mahalanobis2(e))
            errRSS += (e * e).sum().squareRoot()
            let w = try WCLEstimator(rssMin: -200).estimate(s, time: 0, map: map).get()
            errWCL += ((w.position - truth) * (w.position - truth)).sum().squareRoot()
        }
        let anees = nees / Double(runs)
        let lo = ChiSquare.quantile(0.005, dof: 2 * runs) / Double(runs), hi = ChiSquare.quantile(0.995, dof: 2 * runs) / Double(runs)
        #expect(anees > lo && anees < hi, "ANEES \(anees) outside [\(lo), \(hi)]")
        #expect(errRSS < errWCL, "rss mean \(errRSS / Double(runs)) m, wcl \(errWCL / Double(runs)) m")
    }

    @Test func degenerateGeometryIsTyped() {
        var rng = Xoshiro256(seed: 3)
        let two = Self.map(Array(Self.grid.prefix(2)))
        let r2 = RSSLaterationEstimator().estimate(Self.scan(at: SIMD2(5, 5), map: two, sigma: 0, rng: &rng), time: 0, map: two)
        #expect(r2 == .failure(.tooFewAnchors(needed: 3, got: 2)))
        let line = Self.map([SIMD2(0, 0), SIMD2(10, 10), SIMD2(20, 20), SIMD2(30, 30)])
        let rl = RSSLaterationEstimator().estimate(Self.scan(at: SIMD2(5, 12), map: line, sigma: 0, rng: &rng), time: 0, map: line)
        #expect(rl == .failure(.collinearGeometry))
    }
}

/// `RSSLaterationEstimator.logLikelihoodGrid` (the flat-buffer hot loop) gives the same bits as
/// the plain sum of `PathLossModel.mean` over the anchors at every node, on seeded random
/// anchors, heights, P0, n and RSS (including nodes closer than `minDistance`).
@Suite struct RSSGridIdentityTests {
    @Test func gridMatchesPathLossModelBitForBit() {
        var rng = Xoshiro256(seed: 22)
        func u(_ a: Double, _ b: Double) -> Double { a + (b - a) * Double(rng.next() >> 11) / Double(1 << 53) }
        for _ in 0..<40 {
            let k = 3 + Int(rng.next() % 10)
            let m = (0..<k).map { _ in
                PathLossModel(anchor: SIMD3(u(-80, 80), u(-80, 80), u(0, 6)), p0: u(-50, -30), exponent: u(1.5, 4.5),
                              phoneUp: u(0.5, 2), minDistance: u(0.5, 3))
            }
            let rss = (0..<k).map { _ in u(-95, -30) }
            let lo = SIMD2(u(-100, -60), u(-100, -60)), cell = u(0.3, 3)
            let nx = 1 + Int(rng.next() % 50), ny = 1 + Int(rng.next() % 50)
            let half = -0.5 / pow(u(1, 9), 2)
            var got = [Double](repeating: 0, count: nx * ny)
            let best = RSSLaterationEstimator.logLikelihoodGrid(m, rss: rss, lo: lo, cell: cell, nx: nx, ny: ny, half: half, into: &got)
            var want = -Double.infinity
            for iy in 0..<ny {
                for ix in 0..<nx {
                    let p = lo + SIMD2(Double(ix), Double(iy)) * cell
                    var l = 0.0
                    for j in 0..<k { let r = rss[j] - m[j].mean(p); l += half * r * r }
                    #expect(got[iy * nx + ix].bitPattern == l.bitPattern)
                    want = max(want, l)
                }
            }
            #expect(best.bitPattern == want.bitPattern)
        }
    }
}
