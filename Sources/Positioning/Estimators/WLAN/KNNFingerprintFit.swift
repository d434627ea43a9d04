/// Choice of the kNN fingerprint estimator's hyper-parameters (representation, distance, k,
/// classification k, weight exponent) on training data only, by a blocked inner split: each
/// training sample is matched against the map with every point of its own group (in
/// UJIIndoorLoc: its phone-and-user group) left out, so a configuration is judged as it would
/// do for a phone and a person the map has never seen. The configuration with the lowest mean
/// horizontal error wins (ties: the earlier in grid order). Distances are computed once per
/// (representation, distance) and sample; the (k, class k, g) grid reuses them.
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
        public var representations: [RSSRepresentation] = RSSRepresentation.allCases
        public var distances: [FingerprintDistance] = FingerprintDistance.allCases
        public var ks: [Int] = [1, 3, 5, 7, 11, 15]
        public var classKs: [Int] = [5, 11, 21]
        public var weightExponents: [Double] = [0, 1, 2]
        public init() {}
    }

    /// Every configuration of `grid` over `base` scored on `samples` against `map`, whose point i
    /// belongs to group `pointGroups[i]`; best first.
    public static func score(_ samples: [Sample], map: FingerprintMap, pointGroups: [Int], grid: Grid = Grid(),
                             base: KNNFingerprintEstimator = KNNFingerprintEstimator()) -> [Candidate] {
        precondition(pointGroups.count == map.points.count, "one group per map point")
        var out: [Candidate] = []
        let prefix = KNNFingerprintEstimator.prefixLength(k: grid.ks.max() ?? 1, classK: grid.classKs.max() ?? 1)
        for rep in grid.representations {
            for dist in grid.distances {
                var e = base
                e.representation = rep; e.distance = dist; e.classify = true
                var configs: [KNNFingerprintEstimator] = []
                for k in grid.ks { for ck in grid.classKs { for g in grid.weightExponents {
                    var c = e; c.k = k; c.classK = ck; c.weightExponent = g; configs.append(c)
                } } }
                var err = [Double](repeating: 0, count: configs.count), hit = [Int](repeating: 0, count: configs.count), n = 0
                for s in samples {
                    guard case .success(var r) = e.distances(s.scan, map: map) else { continue }
                    var any = false
                    for i in r.d.indices { if pointGroups[i] == s.group { r.d[i] = .infinity } else { any = true } }
                    guard any else { continue }
                    n += 1
                    let order = KNNFingerprintEstimator.nearest(r.d, count: prefix)
                    for (c, cfg) in configs.enumerated() {
                        let m = cfg.locate(r.d, known: r.known, heard: r.heard, map: map, order: order)
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
        return out.enumerated().sorted { a, b in
            a.element.meanError != b.element.meanError ? a.element.meanError < b.element.meanError : a.offset < b.offset
        }.map(\.element)
    }
}
