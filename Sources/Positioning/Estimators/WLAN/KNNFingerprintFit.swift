/// Choice of the kNN fingerprint estimator's hyper-parameters on training data only, by a
/// blocked inner split: each training sample is matched against the map with every point of its
/// own group (in UJIIndoorLoc: its phone-and-user group) left out, so a configuration is judged
/// as it would do for a phone and a person the map has never seen. Three steps:
/// 1. the building and floor vote: every `Grid.classMatchers` × class k × weight exponent ×
///    shared-AP exponent × floor rule (`Grid.classFloorRules`); the highest share of samples with building and floor right wins (ties:
///    the earlier in grid order);
/// 2. the position: every representation × distance × k × weight exponent, with step 1's vote;
///    the lowest mean horizontal error wins (ties: the earlier);
/// 3. the covariance (`calibrate`): `RadioUncertaintyModel.fit` on the winner's inner residuals.
/// Distances are computed once per (representation, distance, not-heard level) and sample.
public enum KNNFingerprintFit {
    public struct Sample: Sendable {
        public var scan: WiFiScan
        public var truth: SIMD2<Double>
        public var building: Int?
        public var floor: Int?
        /// The group whose map points are left out when this sample is matched.
        public var group: Int
        public init(scan: WiFiScan, truth: SIMD2<Double>, building: Int?, floor: Int?, group: Int) {
            self.scan = scan; self.truth = truth; self.building = building; self.floor = floor; self.group = group
        }
    }

    /// One configuration's inner-split score.
    public struct Candidate: Sendable, Equatable {
        public var estimator: KNNFingerprintEstimator
        public var meanError: Double
        /// Share of samples with building and floor right.
        public var buildingFloorHit: Double
        public var count: Int
    }

    public struct Grid: Sendable {
        public var representations: [RSSRepresentation] = [.positive, .exponential, .powed]
        public var distances: [FingerprintDistance] = FingerprintDistance.allCases
        public var ks: [Int] = [1, 3, 5, 7, 11, 15]
        public var classKs: [Int] = [5, 11, 21]
        public var weightExponents: [Double] = [0, 1, 2]
        /// Shared-AP exponents h of the vote tried in step 1 (`classSharedExponent`).
        public var classSharedExponents: [Double] = [0, 1, 2]
        /// Floor rules of the vote tried in step 1 (`classFloor`). Default the majority alone: with
        /// `mean` in the grid the UJIIndoorLoc phone/user split gained 0.16 points of building+floor
        /// hit and lost 1.3 % of mean error (docs/radio.md, "The floor as an ordered number").
        public var classFloorRules: [FloorRule] = [.vote]
        /// Vote distances tried in step 1: (representation, distance, not-heard dBm): the
        /// representations and distances Torres-Sospedra et al. (2015) compared, and the AP-set view.
        public var classMatchers: [(representation: RSSRepresentation, distance: FingerprintDistance, notHeard: Double)] = [
            (.powed, .sorensen, -105), (.exponential, .sorensen, -105), (.positive, .sorensen, -105), (.binary, .sorensen, -105),
            (.powed, .euclidean, -105), (.exponential, .euclidean, -105), (.positive, .euclidean, -105),
            (.powed, .manhattan, -105), (.exponential, .manhattan, -105), (.positive, .manhattan, -105),
            (.powed, .neyman, -105), (.exponential, .neyman, -105), (.positive, .neyman, -105),
        ]
        /// Fit the covariance calibration (step 3).
        public var calibrate = true
        public init() {}
    }

    /// Every position configuration of `grid` over `base`, with the best vote of step 1 and, for
    /// the winner, the calibration of step 3, scored on `samples` against `map`, whose point i
    /// belongs to group `pointGroups[i]`; best first.
    public static func score(_ samples: [Sample], map: FingerprintMap, pointGroups: [Int], grid: Grid = Grid(),
                             base: KNNFingerprintEstimator = KNNFingerprintEstimator()) -> [Candidate] {
        precondition(pointGroups.count == map.points.count, "one group per map point")
        let prefix = KNNFingerprintEstimator.prefixLength(k: grid.ks.max() ?? 1, classK: grid.classKs.max() ?? 1)
        /// Distances of every sample under `e`, its own group left out (nil: no usable match).
        func leaveGroupOut(_ e: KNNFingerprintEstimator) -> [(d: [Double], order: [Int], known: Int, heard: Int)?] {
            samples.map { s in
                guard case .success(var r) = e.distances(s.scan, map: map) else { return nil }
                var any = false
                for i in r.d.indices { if pointGroups[i] == s.group { r.d[i] = .infinity } else { any = true } }
                guard any else { return nil }
                return (r.d, KNNFingerprintEstimator.nearest(r.d, count: prefix), r.known, r.heard)
            }
        }
        // Step 1: the vote. n_i of the shared-AP factor per sample.
        let shared = samples.map { base.sharedCounter($0.scan, map: map) }
        var bestVote: (hits: Int, estimator: KNNFingerprintEstimator, votes: [(building: Int?, floor: Int?)?])? = nil
        for c in grid.classMatchers {
            var e = base
            e.representation = c.representation; e.distance = c.distance; e.notHeard = c.notHeard; e.classify = true
            let ds = leaveGroupOut(e)
            for ck in grid.classKs { for g in grid.weightExponents { for h in grid.classSharedExponents { for fr in grid.classFloorRules {
                var v = e; v.classK = ck; v.weightExponent = g; v.classSharedExponent = h; v.classFloor = fr
                var hits = 0
                let votes = samples.indices.map { i -> (building: Int?, floor: Int?)? in
                    guard let r = ds[i] else { return nil }
                    let s = samples[i]
                    let bf = v.classifyBuildingFloor(r.d, order: r.order, map: map, shared: shared[i])
                    if bf.building == s.building && bf.floor == s.floor { hits += 1 }
                    return bf
                }
                if bestVote == nil || hits > bestVote!.hits { bestVote = (hits, v, votes) }
            } } } }
        }
        guard let vote = bestVote else { return [] }
        // Step 2: the position, with that vote.
        var out: [Candidate] = []
        for rep in grid.representations {
            for dist in grid.distances {
                var e = base
                e.representation = rep; e.distance = dist; e.classify = true
                e.classK = vote.estimator.classK
                e.classSharedExponent = vote.estimator.classSharedExponent
                e.classFloor = vote.estimator.classFloor
                e.classRepresentation = vote.estimator.representation; e.classDistance = vote.estimator.distance
                e.classNotHeard = vote.estimator.notHeard
                var configs: [KNNFingerprintEstimator] = []
                for k in grid.ks { for g in grid.weightExponents { var c = e; c.k = k; c.weightExponent = g; configs.append(c) } }
                // The vote's weight exponent is its own; the position's g may differ, so the vote is
                // passed in as classified (`locate(classified:)`).
                var err = [Double](repeating: 0, count: configs.count), hit = [Int](repeating: 0, count: configs.count), n = 0
                let ds = leaveGroupOut(e)
                for (i, s) in samples.enumerated() {
                    guard let r = ds[i], let bf = vote.votes[i] else { continue }
                    n += 1
                    for (c, cfg) in configs.enumerated() {
                        let m = cfg.locate(r.d, known: r.known, heard: r.heard, map: map, order: r.order, classified: bf)
                        let v = m.position - s.truth
                        err[c] += (v * v).sum().squareRoot()
                        if m.building == s.building && m.floor == s.floor { hit[c] += 1 }
                    }
                }
                guard n > 0 else { continue }
                for (c, cfg) in configs.enumerated() {
                    out.append(Candidate(estimator: cfg, meanError: err[c] / Double(n), buildingFloorHit: Double(hit[c]) / Double(n), count: n))
                }
            }
        }
        // Stable: ties keep grid order.
        out = out.enumerated().sorted { a, b in
            a.element.meanError != b.element.meanError ? a.element.meanError < b.element.meanError : a.offset < b.offset
        }.map(\.element)
        if grid.calibrate, !out.isEmpty {
            out[0].estimator = calibrate(out[0].estimator, samples: samples, map: map, pointGroups: pointGroups)
        }
        return out
    }

    /// Step 3: the covariance of `e` fitted on its leave-group-out residuals
    /// (`RadioUncertaintyModel.fit`: maximum likelihood of γ, a, c, e, then k for 95 % coverage,
    /// cross-fitted over the samples' groups),
    /// with `distanceScale` the median nearest signal distance of the samples. `e` unchanged when
    /// fewer than `RadioUncertaintyModel.minSamples` samples match.
    public static func calibrate(_ e: KNNFingerprintEstimator, samples: [Sample], map: FingerprintMap, pointGroups: [Int]) -> KNNFingerprintEstimator {
        var plain = e
        plain.calibration = nil
        let prefix = KNNFingerprintEstimator.prefixLength(k: e.k, classK: e.classK)
        var matches: [(m: KNNFingerprintEstimator.Match, truth: SIMD2<Double>, group: Int)] = []
        for s in samples {
            guard case .success(var r) = plain.distances(s.scan, map: map) else { continue }
            var any = false
            for i in r.d.indices { if pointGroups[i] == s.group { r.d[i] = .infinity } else { any = true } }
            guard any else { continue }
            var dc: [Double]? = nil
            if plain.separateClassDistances, case .success(var c) = plain.classMatcher.distances(s.scan, map: map) {
                for i in c.d.indices where pointGroups[i] == s.group { c.d[i] = .infinity }
                dc = c.d
            }
            let order = KNNFingerprintEstimator.nearest(r.d, count: prefix)
            var shared: ((Int) -> Int)? = nil
            if plain.classSharedExponent > 0 { shared = plain.sharedCounter(s.scan, map: map) }
            matches.append((plain.locate(r.d, known: r.known, heard: r.heard, map: map, order: order, classDistances: dc, shared: shared),
                            s.truth, s.group))
        }
        let nearest = matches.map(\.m.features.nearestDistance).filter(\.isFinite).sorted()
        guard !nearest.isEmpty else { return e }
        var out = plain
        out.distanceScale = Swift.max(nearest[nearest.count / 2], 1e-9)
        let fitSamples = matches.map { x in
            RadioUncertaintyModel.Sample(residual: x.m.position - x.truth, covariance: x.m.spread, features: out.noveltyFeatures(x.m.features),
                                         group: x.group)
        }
        guard let t = RadioUncertaintyModel.fit(fitSamples) else { return e }
        out.calibration = t
        return out
    }
}
