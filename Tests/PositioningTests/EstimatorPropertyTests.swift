import Testing
import Foundation
@testable import Positioning

/// Property tests over seeded random inputs (valid, degenerate and hostile: coincident
/// anchors, collinear geometry, extreme but in-domain values): every estimator returns either
/// a fix with a finite position and a finite, symmetric, positive-definite covariance, or a
/// typed failure (`EstimationFailure`) — never NaN, never a crash.
@Suite struct EstimatorPropertyTests {
    static let runs = 3000

    struct Gen {
        var rng: SplitMix64
        mutating func u() -> Double { Double(rng.next() >> 11) / Double(1 << 53) }
        mutating func d(_ lo: Double, _ hi: Double) -> Double { lo + (hi - lo) * u() }
        mutating func i(_ lo: Int, _ hi: Int) -> Int { lo + Int(rng.next() % UInt64(hi - lo + 1)) }
        mutating func bool() -> Bool { rng.next() & 1 == 0 }
        mutating func pick<T>(_ a: [T]) -> T { a[i(0, a.count - 1)] }
        /// A coordinate: usually local, sometimes far, sometimes exactly repeated.
        mutating func coord() -> Double {
            switch i(0, 9) {
            case 0: return 0
            case 1: return d(-2e7, 2e7)
            case 2: return Double(i(-3, 3))
            default: return d(-200, 200)
            }
        }
        mutating func rss() -> Double { i(0, 9) == 0 ? pick([-300, 100, 0, -90, -90.0001]) : d(-100, -30) }
    }

    /// The property every successful estimate must have.
    static func check(_ f: Fix, _ what: String) {
        let c = f.covariance
        let ok = f.time.isFinite && f.position.x.isFinite && f.position.y.isFinite
            && c.ee.isFinite && c.en.isFinite && c.nn.isFinite
            && c.ee > 0 && c.nn > 0 && c.ee * c.nn - c.en * c.en > 0
        if !ok { Issue.record("\(what): fix \(f.position) cov (\(c.ee), \(c.en), \(c.nn)) is not finite positive-definite") }
    }

    @Test func wlanEstimators() {
        var g = Gen(rng: SplitMix64(seed: 11))
        let wcl = WCLEstimator(), rss = RSSLaterationEstimator(), fp = FingerprintEstimator()
        var fixes = 0, failures = 0
        for run in 0..<Self.runs {
            let n = g.i(0, 7)
            var map: [String: AccessPoint] = [:]
            var aps: [WiFiObservation] = []
            var points: [FingerprintMap.Point] = []
            for k in 0..<n {
                let b = "02:00:00:00:00:0\(k)"
                let p = SIMD3(g.coord(), g.coord(), g.d(0, 5))
                map[b] = AccessPoint(bssid: b, position: g.i(0, 5) == 0 && k > 0 ? map["02:00:00:00:00:00"]!.position : p,
                                     p0: g.bool() ? g.d(-60, -20) : nil, pathLossExponent: g.bool() ? g.d(1, 6) : nil)
                aps.append(WiFiObservation(bssid: b, frequency: g.bool() ? 2412 : 0, rss: g.rss()))
                points.append(.init(position: SIMD2(g.coord(), g.coord()), rss: [b: g.rss(), "02:00:00:00:01:0\(k)": g.rss()]))
            }
            let scan = WiFiScan(accessPoints: aps)
            for (name, r) in [("wcl", wcl.estimate(scan, time: 1, map: map)), ("rss", rss.estimate(scan, time: 1, map: map)),
                              ("fingerprint", fp.estimate(scan, time: 1, map: FingerprintMap(points: points, threshold: -95, spacing: g.bool() ? 2 : nil)))] {
                switch r {
                case .success(let f): Self.check(f, "\(name) run \(run)"); fixes += 1
                case .failure: failures += 1
                }
            }
        }
        #expect(fixes > 1000 && failures > 100)   // both branches exercised
    }

    @Test func cellEstimators() {
        var g = Gen(rng: SplitMix64(seed: 12))
        let id = CellIDEstimator(), ta = CellTAEstimator()
        var fixes = 0, failures = 0
        for run in 0..<Self.runs {
            let rat = RAT.allCases[g.i(0, RAT.allCases.count - 1)]
            let cell = CellID(rat: rat, mcc: 262, mnc: 1, area: 1, cid: g.i(0, 1 << 28))
            let site: CellSite? = g.i(0, 9) == 0 ? nil : CellSite(cell: cell, position: SIMD3(g.coord(), g.coord(), g.d(0, 60)),
                azimuth: g.bool() ? g.d(-720, 720) : nil, beamwidth: g.bool() ? g.pick([0, 360, g.d(0, 360)]) : nil,
                range: g.bool() ? g.pick([0, 1e-9, g.d(0, 2e7)]) : nil)
            let units = TimingAdvanceUnit.allCases
            let obs = CellObservation(cell: cell, serving: g.bool(), timingAdvance: g.bool() ? g.i(0, 1_000_000) : nil,
                                      timingAdvanceUnit: g.bool() ? units[g.i(0, units.count - 1)] : nil,
                                      rsrp: g.bool() ? g.d(-300, 100) : nil)
            for (name, r) in [("cell", id.estimate(obs, site: site, time: 1)), ("cell-ta", ta.estimate(obs, site: site, time: 1))] {
                switch r {
                case .success(let f): Self.check(f, "\(name) run \(run)"); fixes += 1
                case .failure: failures += 1
                }
            }
        }
        #expect(fixes > 1000 && failures > 100)
    }

    @Test func gnssEstimator() {
        var g = Gen(rng: SplitMix64(seed: 13))
        let frame = LocalFrame(origin: Geodetic(latitude: 48, longitude: 11, height: 500))
        var fixes = 0
        for run in 0..<Self.runs {
            let fix = GNSSFix(latitude: g.d(-90, 90), longitude: g.d(-180, 180), altitude: g.bool() ? g.d(-2e4, 1e5) : nil,
                              accuracy: [0, 1e-9, 2e7, g.d(0, 100)][g.i(0, 3)], verticalAccuracy: g.bool() ? g.d(0, 50) : nil)
            if case .success(let f) = GNSSEstimator().estimate(fix, time: g.d(-1e10, 1e10), frame: frame) {
                Self.check(f, "gnss run \(run)"); fixes += 1
            }
        }
        #expect(fixes > 100)
    }

    @Test func tdoaEstimator() {
        var g = Gen(rng: SplitMix64(seed: 14))
        let est = TDoAEstimator()
        var fixes = 0, failures = 0
        for run in 0..<600 {
            var beacons: [String: AcousticBeacon] = [:]
            var arrivals: [AcousticArrival] = []
            let n = g.i(0, 6)
            let phone = SIMD3(g.d(-10, 10), g.d(-10, 10), 1.2)
            for k in 0..<n {
                let p = g.i(0, 6) == 0 ? SIMD3(0.0, 0, 2.5) : SIMD3(g.d(-15, 15), g.bool() ? 0 : g.d(-15, 15), g.d(0, 3))
                beacons["B\(k)"] = AcousticBeacon(id: "B\(k)", position: p, offset: 0.01 * Double(k), period: 0.35)
                let range = ((p - phone) * (p - phone)).sum().squareRoot()
                arrivals.append(AcousticArrival(beacon: "B\(k)", arrivalTime: 10 + 0.01 * Double(k) + range / 343 + (g.bool() ? g.d(-1e-3, 1e-3) : 0),
                                                emission: g.bool() ? 0 : nil))
            }
            switch est.estimate(arrivals: arrivals, beacons: beacons, time: 10, phoneHeight: 1.2) {
            case .success(let s): Self.check(s.fix, "tdoa run \(run)"); fixes += 1
            case .failure: failures += 1
            }
        }
        #expect(fixes > 50 && failures > 50)
    }
}
