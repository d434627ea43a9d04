import Testing
import Foundation
@testable import Positioning

@Suite struct KNNFingerprintTests {
    typealias P = FingerprintMap.Point
    func scan(_ rss: [String: Double]) -> WiFiScan {
        WiFiScan(accessPoints: rss.sorted { $0.key < $1.key }.map { WiFiObservation(bssid: $0.key, rss: $0.value) })
    }

    /// Representations by hand, not-heard level −105 dBm: RSS −60 → pos 45.
    @Test func representationsByHand() {
        #expect(RSSRepresentation.positive.value(-60, notHeard: -105) == 45)
        #expect(abs(RSSRepresentation.exponential.value(-60, notHeard: -105) - exp(-60.0 / 24)) < 1e-15)
        #expect(abs(RSSRepresentation.powed.value(-60, notHeard: -105) - pow(45.0 / 105, M_E)) < 1e-15)
        // The strongest possible signal (0 dBm) is 1 on both [0, 1] scales.
        #expect(RSSRepresentation.exponential.value(0, notHeard: -105) == 1)
        #expect(abs(RSSRepresentation.powed.value(0, notHeard: -105) - 1) < 1e-15)
        // At or below the not-heard level: 0 on the positive scale.
        #expect(RSSRepresentation.positive.value(-110, notHeard: -105) == 0)
    }

    /// Distances by hand on p = (1, 0, 3), q = (2, 2, 0).
    @Test func distancesByHand() {
        let p = [1.0, 0, 3], q = [2.0, 2, 0]
        #expect(abs(FingerprintDistance.euclidean(p, q, representation: .positive) - 14.0.squareRoot()) < 1e-12)
        #expect(FingerprintDistance.manhattan(p, q, representation: .positive) == 6)
        // Sørensen: Σ|p − q| / Σ(p + q) = 6 / 8.
        #expect(FingerprintDistance.sorensen(p, q, representation: .positive) == 0.75)
        // Neyman: (1 − 2)²/1 + (0 − 2)²/10⁻⁴ + (3 − 0)²/3 = 1 + 40 000 + 3.
        #expect(abs(FingerprintDistance.neyman(p, q, representation: .positive) - 40_004) < 1e-6)
    }

    /// The sparse distances of the estimator (inverted index) equal the dense definitions for
    /// every representation and distance, APs heard on one side only included.
    @Test func sparseEqualsDense() throws {
        var rng = SplitMix64(seed: 7)
        let aps = (0..<12).map { String(format: "ap%02d", $0) }
        var points: [P] = []
        for i in 0..<40 {
            var rss: [String: Double] = [:]
            for a in aps where Double.random(in: 0..<1, using: &rng) < 0.4 { rss[a] = -Double(Int.random(in: 30...100, using: &rng)) }
            points.append(P(position: SIMD2(Double(i), 0), rss: rss))
        }
        let map = FingerprintMap(points: points, threshold: -100)
        let s: [String: Double] = ["ap01": -45, "ap03": -80, "ap07": -99, "ap11": -62, "zz": -50]
        for rep in RSSRepresentation.allCases {
            for dist in FingerprintDistance.allCases {
                let e = KNNFingerprintEstimator(representation: rep, distance: dist)
                let d = try e.distances(scan(s), map: map).get().d
                let q = map.bssids.map { b in s[b].map { rep.value($0, notHeard: -105) } ?? 0 }
                for (i, pt) in points.enumerated() {
                    let p = map.bssids.map { b in pt.rss[b].map { rep.value($0, notHeard: -105) } ?? 0 }
                    let ref = dist(p, q, representation: rep)
                    #expect(abs(d[i] - ref) <= 1e-9 * max(1, abs(ref)), "\(rep) \(dist) point \(i): \(d[i]) vs \(ref)")
                }
            }
        }
    }

    /// Noise-free survey of two buildings × two floors (log-distance path loss from APs per
    /// building and floor): a scan equal to a point's fingerprint is located exactly at that
    /// point, in its building and on its floor, for every representation and distance.
    func survey() -> FingerprintMap {
        var points: [P] = []
        for b in 0..<2 {
            for f in 0..<2 {
                for x in stride(from: 0.0, through: 40, by: 5) {
                    for y in stride(from: 0.0, through: 20, by: 5) {
                        var rss: [String: Double] = [:]
                        for (n, ap) in [SIMD2(0.0, 0), SIMD2(40, 0), SIMD2(20, 20)].enumerated() {
                            let d = max(1, ((SIMD2(x, y) - ap) * (SIMD2(x, y) - ap)).sum().squareRoot())
                            rss["b\(b)f\(f)ap\(n)"] = -40 - 25 * log10(d)
                            // Leakage from the other floor of the same building, 15 dB weaker.
                            rss["b\(b)f\(1 - f)ap\(n)"] = -55 - 25 * log10(d)
                        }
                        points.append(P(position: SIMD2(x + 1000 * Double(b), y), floor: f, rss: rss, building: b))
                    }
                }
            }
        }
        return FingerprintMap(points: points, threshold: -100)
    }

    @Test func exactOnNoiseFreeSurvey() throws {
        let map = survey()
        for rep in RSSRepresentation.allCases {
            for dist in FingerprintDistance.allCases {
                for k in [1, 5] {
                    let e = KNNFingerprintEstimator(k: k, classK: 7, representation: rep, distance: dist, weightExponent: 2)
                    for i in [0, 17, 60, 99, 150, 179] {
                        let p = map.points[i]
                        let m = try e.match(scan(p.rss), map: map).get()
                        #expect(m.building == p.building && m.floor == p.floor, "\(rep) \(dist) point \(i)")
                        // The exact match has distance 0 and weight 10¹⁸ against ≤ 10⁻² for the others.
                        #expect(((m.position - p.position) * (m.position - p.position)).sum().squareRoot() < 1e-6, "\(rep) \(dist) k=\(k) point \(i)")
                        #expect(m.neighbours.first == i && m.features.knownShare == 1 && m.features.knownAPs == 6)
                    }
                }
            }
        }
    }

    /// Unweighted k = 4 around a point midway between four grid points: the mean of the four,
    /// and the covariance their spread (6.25 m² per axis for a 5 m square) plus σ0².
    @Test func unweightedMeanAndSpread() throws {
        let pts = [SIMD2(0.0, 0), SIMD2(5, 0), SIMD2(0, 5), SIMD2(5, 5), SIMD2(40, 40)].map { p in
            P(position: p, floor: 0, rss: ["a": -50 - p.x, "b": -50 - p.y], building: 0)
        }
        let map = FingerprintMap(points: pts, threshold: -100)
        let e = KNNFingerprintEstimator(k: 4, classK: 4, representation: .positive, distance: .euclidean, weightExponent: 0, sigma0: 1)
        let m = try e.match(scan(["a": -52.5, "b": -52.5]), map: map).get()
        #expect(m.position == SIMD2(2.5, 2.5))
        #expect(abs(m.covariance.ee - 7.25) < 1e-12 && abs(m.covariance.nn - 7.25) < 1e-12 && abs(m.covariance.en) < 1e-12)
        #expect(abs(m.features.neighbourSpread - 12.5.squareRoot()) < 1e-12)
    }

    /// Building first: the three nearest points of the wrong building are outvoted by the
    /// classification neighbours, and the position comes from the chosen building only.
    @Test func buildingThenFloorThenPosition() throws {
        var pts: [P] = []
        // Building 1: five points close in signal space; building 0: three slightly closer ones.
        for i in 0..<5 { pts.append(P(position: SIMD2(100 + Double(i), 0), floor: 2, rss: ["a": -60, "b": -70 - Double(i) * 0.1], building: 1)) }
        for i in 0..<3 { pts.append(P(position: SIMD2(Double(i), 0), floor: 0, rss: ["a": -60, "b": -69.5 + Double(i) * 0.01], building: 0)) }
        let map = FingerprintMap(points: pts, threshold: -100)
        let s = scan(["a": -60, "b": -69.6])
        let plain = KNNFingerprintEstimator(k: 3, classK: 3, representation: .positive, distance: .euclidean, weightExponent: 0, classify: false)
        #expect(try plain.match(s, map: map).get().building == 0)
        let classified = KNNFingerprintEstimator(k: 3, classK: 8, representation: .positive, distance: .euclidean, weightExponent: 0)
        let m = try classified.match(s, map: map).get()
        #expect(m.building == 1 && m.floor == 2)
        #expect(m.neighbours.allSatisfy { map.points[$0].building == 1 })
        #expect(m.position == SIMD2(101, 0))
    }

    @Test func failures() {
        let e = KNNFingerprintEstimator(minAPs: 2)
        let empty = FingerprintMap(points: [], threshold: -100)
        guard case .failure(.missingInput) = e.match(scan(["a": -50]), map: empty) else { Issue.record("expected missingInput"); return }
        let map = FingerprintMap(points: [P(position: .zero, rss: ["a": -50, "b": -60])], threshold: -100)
        guard case .failure(.tooFewAnchors(needed: 2, got: 1)) = e.match(scan(["a": -50, "x": -40]), map: map) else {
            Issue.record("expected tooFewAnchors"); return
        }
    }

    /// The stage with `method: wknn` gives the estimator's fix with building and floor; bad
    /// options are configuration errors naming the option.
    @Test func stageOptions() throws {
        let o = StageOptions(name: "fingerprint", values: ["method": .string("wknn"), "k": .number(1), "representation": .string("exponential"),
                                                          "distance": .string("manhattan"), "weight_exponent": .number(2)])
        let st = try FingerprintStage.make(o)
        #expect(st.method == .wknn && st.knn.k == 1 && st.knn.representation == .exponential && st.knn.distance == .manhattan)
        for (key, v) in [("representation", ConfigValue.string("log")), ("distance", .string("cosine")), ("k", .number(0)), ("method", .string("svm"))] {
            var bad = o; bad.values[key] = v
            #expect(throws: ConfigurationError.self) { try FingerprintStage.make(bad) }
        }
        #expect(try FingerprintStage.make(StageOptions(name: "fingerprint")).method == .bayes)
    }

    /// The fit on noise-free data surveyed twice (two groups at the same places): leaving a
    /// sample's group out still finds its place exactly, so the best configuration scores 0 m
    /// and every building and floor right; candidates come best first.
    @Test func fitFindsExactConfiguration() {
        let one = survey()
        let map = FingerprintMap(points: one.points + one.points, threshold: -100)
        let groups = Array(repeating: 0, count: one.points.count) + Array(repeating: 1, count: one.points.count)
        let samples = [3, 40, 77, 120, 170].map { i in
            KNNFingerprintFit.Sample(scan: scan(one.points[i].rss), truth: one.points[i].position, building: one.points[i].building,
                                     floor: one.points[i].floor, group: i % 2)
        }
        var grid = KNNFingerprintFit.Grid()
        grid.ks = [1, 7]; grid.classKs = [5]; grid.weightExponents = [0, 1]
        let c = KNNFingerprintFit.score(samples, map: map, pointGroups: groups, grid: grid)
        #expect(c.count == 3 * 4 * 2 * 1 * 2)
        #expect(c[0].meanError < 1e-6 && c[0].buildingFloorHit == 1 && c[0].count == 5)
        #expect(zip(c, c.dropFirst()).allSatisfy { $0.meanError <= $1.meanError })
        // Unweighted k = 7 averages several places: worse than the best.
        #expect(c.contains { $0.estimator.k == 7 && $0.estimator.weightExponent == 0 && $0.meanError > 1 })
    }
}
