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
        // The level representations (`binary` keeps only which APs are heard: every point of this
        // survey hears the same six, so it cannot tell them apart; binaryIsAPSetDice covers it).
        for rep in RSSRepresentation.allCases where rep != .binary {
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

    /// Without `sigma0` or a calibration the floor is the survey's quantisation: spacing²/12 per
    /// axis for a grid survey, else the distance from the nearest neighbour to its nearest other
    /// place (of its floor and building) squared over 12. k = 1 on a survey point: zero spread, so
    /// the covariance is exactly that floor; a map of one place per floor has none (typed failure).
    @Test func quantisationFloorWithoutCalibration() throws {
        // Irregular survey: places at x = 0, 3, 10 (y = 0), floor 0; point 3 repeats place 0;
        // point 4 is on floor 1 at x = 1 (another floor: not a neighbour place of floor 0's).
        let pts = [0.0, 3, 10, 0].map { x in P(position: SIMD2(x, 0), floor: 0, rss: ["a": -50 - 2 * x, "b": -80 + 2 * x], building: 0) }
            + [P(position: SIMD2(1, 0), floor: 1, rss: ["a": -50, "b": -80, "c": -60], building: 0)]
        let e = KNNFingerprintEstimator(k: 1, classK: 1, representation: .positive, distance: .euclidean, weightExponent: 0)
        #expect(e.sigma0 == nil)
        let irregular = FingerprintMap(points: pts, threshold: -100)
        // Nearest to place x = 10 is x = 3: d = 7 → 49/12.
        let m = try e.match(scan(["a": -70, "b": -60]), map: irregular).get()
        #expect(m.position == SIMD2(10, 0) && m.spread.ee == 0)
        #expect(abs(m.covariance.ee - 49.0 / 12) < 1e-12 && abs(m.covariance.nn - 49.0 / 12) < 1e-12 && m.covariance.en == 0)
        // Place x = 0 (two points there): its nearest other place is x = 3, not its twin.
        #expect(irregular.nearestOtherPlaceDistance(from: 0) == 3 && irregular.nearestOtherPlaceDistance(from: 3) == 3)
        #expect(irregular.nearestOtherPlaceDistance(from: 4) == nil)
        // A grid survey: spacing²/12 whatever the neighbours.
        let grid = FingerprintMap(points: pts, threshold: -100, spacing: 2)
        let g = try e.match(scan(["a": -70, "b": -60]), map: grid).get()
        #expect(abs(g.covariance.ee - 4.0 / 12) < 1e-12)
        // σ0 replaces the quantisation.
        var s0 = e; s0.sigma0 = 1.5
        #expect(abs(try s0.match(scan(["a": -70, "b": -60]), map: irregular).get().covariance.nn - 2.25) < 1e-12)
        // Floor 1 holds one place: no resolution there, a typed failure rather than a singular fix.
        let one = FingerprintMap(points: [pts[4]], threshold: -100)
        guard case .failure(.collinearGeometry) = e.estimate(scan(["a": -50, "c": -60]), time: 0, map: one) else {
            Issue.record("expected collinearGeometry"); return
        }
        #expect(throws: Never.self) { try e.estimate(scan(["a": -70, "b": -60]), time: 0, map: irregular).get() }
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
        #expect(try FingerprintStage.make(StageOptions(name: "fingerprint")).method == .wknn)
        #expect(FingerprintStage.defaultMethod == .wknn)
        #expect(try FingerprintStage.make(StageOptions(name: "fingerprint", values: ["method": .string("bayes")])).method == .bayes)
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
        #expect(c.count == 3 * 4 * 2 * 2)
        #expect(c[0].meanError < 1e-6 && c[0].buildingFloorHit == 1 && c[0].count == 5)
        #expect(zip(c, c.dropFirst()).allSatisfy { $0.meanError <= $1.meanError })
        // Unweighted k = 7 averages several places: worse than the best.
        #expect(c.contains { $0.estimator.k == 7 && $0.estimator.weightExponent == 0 && $0.meanError > 1 })
    }

    /// `binary` with Sørensen is 1 − the Dice coefficient of the two AP sets: {a, b, c} against
    /// {a, b} is 1 − 2·2/(3 + 2) = 0.2, whatever the levels.
    @Test func binaryIsAPSetDice() throws {
        #expect(RSSRepresentation.binary.value(-60, notHeard: -105) == 1 && RSSRepresentation.binary.value(-110, notHeard: -105) == 0)
        let map = FingerprintMap(points: [P(position: .zero, rss: ["a": -40, "b": -90, "c": -70]), P(position: SIMD2(1, 0), rss: ["a": -50, "b": -50])],
                                 threshold: -100)
        let e = KNNFingerprintEstimator(representation: .binary, distance: .sorensen)
        let d = try e.distances(scan(["a": -80, "b": -60]), map: map).get().d
        #expect(abs(d[0] - 0.2) < 1e-12 && abs(d[1]) < 1e-12)
    }

    /// The vote uses its own distances: a phone 15 dB weaker than the survey's on floor 0 is
    /// nearer in levels (positive, Euclidean: 5 vs 23.5) to floor 1, which hears only A and B;
    /// the AP-set vote (binary, Sørensen: 0 vs 0.2) puts it on floor 0, and the position follows.
    @Test func voteOnAPSetsResistsPhoneOffset() throws {
        let map = FingerprintMap(points: [P(position: .zero, floor: 0, rss: ["a": -50, "b": -50, "c": -90], building: 0),
                                          P(position: SIMD2(10, 0), floor: 1, rss: ["a": -65, "b": -65], building: 0)], threshold: -100)
        let s = scan(["a": -65, "b": -65, "c": -100])
        let levels = KNNFingerprintEstimator(k: 1, classK: 1, representation: .positive, distance: .euclidean, weightExponent: 0)
        let m0 = try levels.match(s, map: map).get()
        #expect(m0.floor == 1 && m0.position == SIMD2(10, 0))
        var sets = levels
        sets.classRepresentation = .binary; sets.classDistance = .sorensen
        #expect(sets.separateClassDistances && !levels.separateClassDistances)
        let m1 = try sets.match(s, map: map).get()
        #expect(m1.floor == 0 && m1.position == SIMD2(0, 0))
    }

    /// The shared-AP factor of the vote (h = `classSharedExponent`): the scan hears a, b, c
    /// (positive levels 45, 15, 15); point A (floor 0) heard a alone (45): Euclidean distance
    /// √(15² + 15²) = 21.2; point B (floor 1) heard all three at −70 dBm (35 each): √(10² + 20² + 20²)
    /// = 30. With class_k = 2 and weights 1/d, h = 0 gives floor 0 (1/21.2 > 1/30); h = 1 weighs A
    /// by 1 shared AP and B by 3: 3/30 > 1/21.2, floor 1, and the k = 1 position follows the floor.
    @Test func sharedAPsWeighTheVote() throws {
        let map = FingerprintMap(points: [P(position: .zero, floor: 0, rss: ["a": -60], building: 0),
                                          P(position: SIMD2(10, 0), floor: 1, rss: ["a": -70, "b": -70, "c": -70], building: 0)],
                                 threshold: -100)
        let s = scan(["a": -60, "b": -90, "c": -90])
        var e = KNNFingerprintEstimator(k: 1, classK: 2, representation: .positive, distance: .euclidean, weightExponent: 1)
        #expect(e.sharedCounter(s, map: map)(0) == 1 && e.sharedCounter(s, map: map)(1) == 3)
        let m0 = try e.match(s, map: map).get()
        #expect(abs(m0.distances[0] - (450.0).squareRoot()) < 1e-9)
        #expect(m0.floor == 0 && m0.position == SIMD2(0, 0))
        e.classSharedExponent = 1
        let m1 = try e.match(s, map: map).get()
        #expect(m1.floor == 1 && m1.position == SIMD2(10, 0))
        var bad = FingerprintStage.options(e); bad.values["class_shared_exponent"] = .number(-1)
        #expect(throws: ConfigurationError.self) { try FingerprintStage.knnEstimator(bad) }
    }

    /// `FloorRule.mean` by hand: floor 1 was surveyed elsewhere (point C, 50 m away, hearing
    /// only c); a scan between floors 0 and 2 (a, b at −65 dBm) is √50 from A (floor 0) and B
    /// (floor 2) alike and √(40² + 40² + 55²) from C. With class_k 2 and plain votes the majority
    /// is a tie that the nearer-first rule gives to floor 0; the mean rule gives the weighted mean
    /// floor (0 + 2)/2 = 1, and the k = 1 position follows the floor to C.
    @Test func meanFloorRuleGivesTheFloorBetween() throws {
        let map = FingerprintMap(points: [P(position: .zero, floor: 0, rss: ["a": -60, "b": -70], building: 0),
                                          P(position: .zero, floor: 2, rss: ["a": -70, "b": -60], building: 0),
                                          P(position: SIMD2(50, 0), floor: 1, rss: ["c": -50], building: 0)], threshold: -100)
        #expect(map.buildingFloors[0] == [0, 1, 2])
        let s = scan(["a": -65, "b": -65])
        var e = KNNFingerprintEstimator(k: 1, classK: 2, representation: .positive, distance: .euclidean, weightExponent: 0)
        let m0 = try e.match(s, map: map).get()
        #expect(m0.floor == 0 && m0.position == SIMD2(0, 0))
        e.classFloor = .mean
        let m1 = try e.match(s, map: map).get()
        #expect(m1.floor == 1 && m1.position == SIMD2(50, 0) && m1.building == 0)
        // Ties between two floors go to the one with more weight, then the nearer voter's, then the
        // lower; a voter without a floor, or no surveyed floor, leaves the choice to the majority (nil).
        #expect(e.meanFloor([0, 1], [1, 1], surveyed: [0, 1, 2]) == 0 && e.meanFloor([1, 0], [1, 1], surveyed: [0, 1, 2]) == 1)
        #expect(e.meanFloor([0, 2, 2, 2], [1, 1, 1, 1], surveyed: [0, 1, 2]) == 2)   // mean 1.5: floor 2 has weight 3, floor 1 none
        #expect(e.meanFloor([0, 2], [1, 3], surveyed: [0, 2, 3]) == 2)               // mean 1.5, floor 1 not surveyed
        #expect(e.meanFloor([2, 0], [1, 1], surveyed: [0, 2, 3]) == 2)               // mean 1, 0 and 2 tie in weight: the nearer
        #expect(e.meanFloor([0, nil], [1, 1], surveyed: [0, 1]) == nil && e.meanFloor([0], [1], surveyed: []) == nil)
        // The option reads back; an unknown rule is a configuration error.
        #expect(try FingerprintStage.knnEstimator(FingerprintStage.options(e)) == e)
        var bad = FingerprintStage.options(e); bad.values["class_floor"] = .string("median")
        #expect(throws: ConfigurationError.self) { try FingerprintStage.knnEstimator(bad) }
    }

    /// The fit chooses the floor rule on its inner split (when the grid holds both; the default
    /// grid holds the majority alone, `Grid.classFloorRules`): a building of three floors, 11 places
    /// each 5 m apart, two APs per floor (RSS −40 − 20 log₁₀ d − 10 dB per floor between AP and
    /// place, seeded 1 dB noise). Group 0 surveyed every floor, group 1 floors 0 and 2 only, so a
    /// group-0 sample on floor 1, its own group left out, has only floor-0 and floor-2 neighbours at
    /// its place: the majority picks one of them, the mean rule the floor between. With both rules
    /// in the grid the fit picks `mean`; with the majority alone it misses the floor-1 samples.
    @Test func fitChoosesMeanFloorWhereAFloorIsUnsurveyed() {
        var rng = SplitMix64(seed: 23)
        var points: [P] = [], groups: [Int] = []
        func rss(x: Double, floor f: Int) -> [String: Double] {
            var r: [String: Double] = [:]
            for af in 0..<3 { for (n, ax) in [0.0, 50].enumerated() {
                let v = -40 - 20 * log10(max(1, abs(x - ax))) - 10 * Double(abs(f - af)) + rng.gaussian()
                if v > -100 { r["f\(af)a\(n)"] = v }
            } }
            return r
        }
        for g in 0..<2 { for f in 0..<3 where g == 0 || f != 1 { for x in stride(from: 0.0, through: 50, by: 5) {
            points.append(P(position: SIMD2(x, 0), floor: f, rss: rss(x: x, floor: f), building: 0)); groups.append(g)
        } } }
        let map = FingerprintMap(points: points, threshold: -100)
        let samples = points.indices.map { i in
            KNNFingerprintFit.Sample(scan: scan(points[i].rss), truth: points[i].position, building: 0, floor: points[i].floor, group: groups[i])
        }
        var grid = KNNFingerprintFit.Grid()
        grid.classMatchers = [(.positive, .euclidean, -105)]; grid.classKs = [2]; grid.weightExponents = [0]
        grid.classSharedExponents = [0]; grid.representations = [.positive]; grid.distances = [.euclidean]; grid.ks = [1]
        grid.calibrate = false; grid.classFloorRules = [.vote, .mean]
        let both = KNNFingerprintFit.score(samples, map: map, pointGroups: groups, grid: grid)
        grid.classFloorRules = [.vote]
        let majority = KNNFingerprintFit.score(samples, map: map, pointGroups: groups, grid: grid)
        #expect(both[0].estimator.classFloor == .mean && majority[0].estimator.classFloor == .vote)
        // 11 of the 55 samples stand on floor 1, where only their own group surveyed: the majority
        // misses them all (44/55); the mean rule gets 52/55 (3 misses among the other floors' samples).
        #expect(majority[0].buildingFloorHit <= 44.0 / 55 + 1e-12)
        #expect(both[0].buildingFloorHit >= 50.0 / 55 && both[0].buildingFloorHit - majority[0].buildingFloorHit >= 6.0 / 55)
    }

    /// The wknn options written by `FingerprintStage.options` read back to the same estimator,
    /// vote distances and calibration included; the calibrated covariance is
    /// k · (γ² S + (a + c·(1 − u) + e·δ/10)² I) with δ = 10 · d_nearest / distanceScale.
    @Test func optionsRoundTripAndCalibratedCovariance() throws {
        var e = KNNFingerprintEstimator(k: 5, classK: 7, representation: .exponential, distance: .manhattan, weightExponent: 2)
        e.classRepresentation = .binary; e.classDistance = .sorensen; e.classNotHeard = -90; e.classSharedExponent = 2
        e.calibration = RadioUncertaintyModel.Term(gamma: 2, a: 1, b: 0, c: 3, e: 0.5, k: 1.5)
        e.distanceScale = 4
        #expect(try FingerprintStage.knnEstimator(FingerprintStage.options(e)) == e)
        var bad = FingerprintStage.options(e); bad.values["cov_k"] = .number(0)
        #expect(throws: ConfigurationError.self) { try FingerprintStage.knnEstimator(bad) }
        bad = FingerprintStage.options(e); bad.values["class_representation"] = .string("log")
        #expect(throws: ConfigurationError.self) { try FingerprintStage.knnEstimator(bad) }
        // S = diag(1, 4), u = 0.5, d_nearest = 8 → δ = 20; σₓ = 1 + 1.5 + 1 = 3.5.
        let f = KNNFingerprintEstimator.Features(nearestDistance: 8, neighbourSpread: 5.0.squareRoot(), knownShare: 0.5, knownAPs: 2)
        let c = e.covariance(spread: Covariance2(ee: 1, en: 0.5, nn: 4), features: f, quantisation: 100)
        #expect(abs(c.ee - 1.5 * (4 * 1 + 12.25)) < 1e-12 && abs(c.nn - 1.5 * (4 * 4 + 12.25)) < 1e-12 && abs(c.en - 1.5 * 4 * 0.5) < 1e-12)
    }

    /// Calibration on seeded data whose position error grows with the signal distance to the
    /// nearest point (the map was surveyed by one group; samples of another group carry a
    /// position error of σ = 1 m + 0.5 m per dB of offset): fitted on one seeded set, the 95 %
    /// ellipses hold 90–99 % of a second, independently seeded set, and the mean NEES is near 2.
    @Test func calibrationCoversFreshSamples() {
        var rng = SplitMix64(seed: 11)
        var points: [P] = []
        for x in stride(from: 0.0, through: 60, by: 3) { for y in stride(from: 0.0, through: 30, by: 3) {
            points.append(P(position: SIMD2(x, y), floor: 0, rss: ["a": -40 - x, "b": -40 - y, "c": -100 + x, "d": -100 + y], building: 0))
        } }
        let map = FingerprintMap(points: points, threshold: -110)
        let groups = Array(repeating: 0, count: points.count)
        func samples(_ n: Int) -> [KNNFingerprintFit.Sample] {
            (0..<n).map { _ in
                let t = SIMD2(rng.uniform(0, 60), rng.uniform(0, 30))
                let offset = rng.uniform(0, 10)
                let sigma = 1 + 0.5 * offset
                let truth = t + SIMD2(rng.gaussian() * sigma, rng.gaussian() * sigma)
                let rss = ["a": -40 - t.x - offset, "b": -40 - t.y - offset, "c": -100 + t.x - offset, "d": -100 + t.y - offset]
                return KNNFingerprintFit.Sample(scan: scan(rss), truth: truth, building: 0, floor: 0, group: 1)
            }
        }
        let base = KNNFingerprintEstimator(k: 3, classK: 3, representation: .positive, distance: .euclidean, weightExponent: 1)
        let e = KNNFingerprintFit.calibrate(base, samples: samples(400), map: map, pointGroups: groups)
        #expect(e.calibration != nil)
        var nees: [Double] = []
        for s in samples(400) {
            guard case .success(let m) = e.match(s.scan, map: map), let n = m.covariance.mahalanobis2(m.position - s.truth) else { continue }
            nees.append(n)
        }
        let inside = Double(nees.filter { $0 <= RadioUncertaintyModel.chi2Two95 }.count) / Double(nees.count)
        let anees = nees.reduce(0, +) / Double(nees.count)
        #expect(nees.count == 400 && inside >= 0.90 && inside <= 0.99 && anees < 3)
    }
}
