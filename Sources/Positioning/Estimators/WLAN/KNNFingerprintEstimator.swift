import Foundation

/// How an RSS value (dBm) is represented before two fingerprints are compared, after
/// Torres-Sospedra, Montoliu, Trilles, Belmonte & Huerta, "Comprehensive analysis of distance
/// and similarity measures for Wi-Fi fingerprinting indoor positioning systems", Expert Systems
/// with Applications 42(23), 9263–9278, 2015 (docs/radio.md, "Fingerprint kNN").
///
/// With `m` the not-heard level (dBm, below the weakest RSS in the data) and
/// pos(s) = s − m (> 0 for a heard AP), a heard AP maps to
/// - `positive`: pos(s);
/// - `exponential`: exp(pos(s)/α) / exp(−m/α), α = 24;
/// - `powed`: pos(s)^β / (−m)^β, β = e;
/// - `binary`: 1 (the AP-set view: with the Sørensen distance, 1 − the Dice coefficient of the
///   two sets of APs heard above m, which orders neighbours as the Jaccard distance does; it ignores
///   every level, so a phone's RSS offset cannot move it, only which APs it hears above m);
/// and an AP not heard maps to 0 in every representation (the paper's exponential maps it to
/// exp(0)/exp(−m/α) ≈ 0.013; 0 here keeps every distance a sum over the heard APs only).
/// `exponential` and `powed` shrink the differences between weak signals, which vary most
/// between phones and over time, and lie in [0, 1].
public enum RSSRepresentation: String, Sendable, CaseIterable, Codable {
    case positive, exponential, powed, binary

    public static let exponentialAlpha = 24.0
    public static let powedBeta = M_E

    /// The represented value of RSS `s` (dBm) heard, with not-heard level `m` (dBm, < 0).
    @inline(__always)
    public func value(_ s: Double, notHeard m: Double) -> Double {
        let p = Swift.max(s - m, 0)
        switch self {
        case .positive: return p
        case .exponential: return exp((p + m) / Self.exponentialAlpha)
        case .powed: return pow(p / -m, Self.powedBeta)
        case .binary: return p > 0 ? 1 : 0
        }
    }
}

/// Dissimilarity of two represented fingerprints p (the map's point) and q (the scan), each a
/// vector over every AP with 0 where not heard (Torres-Sospedra et al. 2015, Table 2):
/// - `euclidean`: √Σ (p_j − q_j)²
/// - `manhattan` (city block): Σ |p_j − q_j|
/// - `sorensen` (Bray–Curtis): Σ |p_j − q_j| / Σ (p_j + q_j)
/// - `neyman` (Neyman χ²): Σ (p_j − q_j)² / p_j, with p_j = 0 replaced by ε = 10⁻⁴ on the
///   `positive` scale (10⁻⁴/104 on the [0, 1] scales), as the paper's reference code does.
/// Every one is a sum of per-AP terms f(p_j, q_j) with f(0, 0) = 0, so a point is compared
/// with a scan in O(APs heard at the point + APs in the scan): Σ_j f(p_j, q_j) =
/// Σ_{j heard at the point} f(p_j, 0) + Σ_{j in the scan} [f(p_j, q_j) − f(p_j, 0)].
public enum FingerprintDistance: String, Sendable, CaseIterable, Codable {
    case euclidean, manhattan, sorensen, neyman

    /// The per-AP term f(p, q); `eps` is Neyman's stand-in for p = 0.
    @inline(__always)
    func term(_ p: Double, _ q: Double, eps: Double) -> Double {
        switch self {
        case .euclidean: return (p - q) * (p - q)
        case .manhattan, .sorensen: return abs(p - q)
        case .neyman: return (p - q) * (p - q) / (p == 0 ? eps : p)
        }
    }

    /// The distance from the summed terms and the sums Σp, Σq (Sørensen's denominator).
    @inline(__always)
    func finish(_ sum: Double, sumP: Double, sumQ: Double) -> Double {
        switch self {
        case .euclidean: return Swift.max(sum, 0).squareRoot()
        case .manhattan, .neyman: return sum
        case .sorensen: let s = sumP + sumQ; return s > 0 ? sum / s : 1
        }
    }

    /// Distance between two dense represented vectors (0 = not heard). Reference form for
    /// tests; the estimator uses the sparse form.
    public func callAsFunction(_ p: [Double], _ q: [Double], representation: RSSRepresentation) -> Double {
        let eps = representation == .positive ? 1e-4 : 1e-4 / 104
        var s = 0.0
        for j in p.indices { s += term(p[j], q[j], eps: eps) }
        return finish(s, sumP: p.reduce(0, +), sumQ: q.reduce(0, +))
    }
}

/// How the floor is chosen from the weighted votes of the nearest points of the voted building
/// (`KNNFingerprintEstimator.classFloor`; docs/radio.md, "Fingerprint kNN"):
/// - `vote`: the floor with the largest total weight (weighted majority);
/// - `mean`: the floor numbers read as ordered values: the building's surveyed floor nearest to
///   the weighted mean f̄ = Σ wᵢ fᵢ / Σ wᵢ of the voters' floors (kNN regression of the floor
///   number, rounded; ties go to the floor with more vote weight, then the nearer voter's). Voters split
///   between the floors below and above a place no one surveyed (floor 0 and floor 2 around a
///   floor-1 scan) give the floor between them, which no majority can.
public enum FloorRule: String, Sendable, CaseIterable, Codable {
    case vote, mean
}

/// Weighted k-nearest-neighbour WLAN fingerprinting on a `FingerprintMap`, with the building
/// and then the floor classified before the position (docs/radio.md, "Fingerprint kNN"):
///
/// 1. d_i = distance(point i, scan) under `representation` and `distance` for every point;
/// 2. building: the `classK` nearest points vote with weight w_i = n_i^h/(d_i + ε)^g, n_i the
///    number of the scan's APs that point i heard too and h = `classSharedExponent` (0: the
///    distance weight alone);
/// 3. floor: the `classK` nearest points of that building vote likewise (`classFloor`: the
///    weighted majority, or the surveyed floor nearest to the voters' weighted mean floor);
/// 4. position: the `k` nearest points of that building and floor, p̂ = Σ w_i p_i / Σ w_i.
/// g = `weightExponent` (0 = plain average, the kNN of RADAR), ε = 10⁻⁹ of the distance scale.
/// With `classify` off, steps 2–3 are skipped: p̂ is the mean of the k nearest points over all
/// buildings and floors, and the floor their majority (plain kNN).
///
/// Covariance without a fitted calibration: the weighted spread of the k neighbours about p̂,
/// S = Σ w_i (p_i − p̂)(p_i − p̂)ᵀ/Σ w_i, plus the survey's quantisation q per axis. With the
/// weights read as a posterior over the neighbours' places, S is the posterior covariance of the
/// truth about its mean p̂; the truth lies anywhere in the cell around a surveyed place, which
/// adds s²/12 (`FingerprintMap.quantisationVariance`: s the grid spacing, or the distance from
/// the nearest neighbour to its nearest other place) — the same two terms as the `bayes`
/// posterior (`FingerprintEstimator`). `sigma0` (m), when set, replaces q by σ0².
/// It grows with how far apart the matching places are.
/// `Match.features` carries the evidence that the scan is unlike the map (nearest signal
/// distance, neighbour spread, share of the scan's APs the map knows) for a novelty model.
///
/// Defaults are the configuration Torres-Sospedra et al. (2015) found best on UJIIndoorLoc
/// (powed representation, Sørensen distance); k, `classK` and g are refitted per site by
/// `KNNFingerprintFit` on training data (docs/radio.md gives the measured choice).
///
/// Failures: an empty map → `.missingInput`; fewer than `minAPs` scan APs the map knows →
/// `.tooFewAnchors`. Cost: O(points × (APs per point + scan APs)) per scan.
public struct KNNFingerprintEstimator: Sendable, Equatable, Codable {
    public var k: Int
    /// Neighbours voting for the building and the floor.
    public var classK: Int
    public var representation: RSSRepresentation
    public var distance: FingerprintDistance
    /// Weight exponent g of w = 1/(d + ε)^g; 0 = unweighted.
    public var weightExponent: Double
    /// Classify building, then floor, then locate within them.
    public var classify: Bool
    /// Level that stands for "not heard", dBm (below every RSS in the data).
    public var notHeard: Double
    /// Floor of the position standard deviation per axis, m; nil = the survey's quantisation
    /// (`FingerprintMap.quantisationVariance`).
    public var sigma0: Double?
    public var minAPs: Int
    /// Scan entries last seen more than this before the scan's time are dropped, s; nil = keep all.
    public var maxAge: Double?
    /// Representation, distance and not-heard level (dBm) of the building and floor votes; nil =
    /// the position's. A vote over which APs are heard (`binary`, Sørensen) is not moved by a
    /// phone's RSS offset, which moves the levels the position match compares.
    public var classRepresentation: RSSRepresentation?
    public var classDistance: FingerprintDistance?
    public var classNotHeard: Double?
    /// Exponent h of the shared-AP factor n_i^h in the building and floor votes (0 = off).
    public var classSharedExponent: Double
    /// How the voters of the building choose the floor: weighted majority or nearest to their
    /// weighted mean floor (`FloorRule`).
    public var classFloor: FloorRule
    /// Covariance calibration fitted on a blocked inner split (`KNNFingerprintFit.calibrate`);
    /// nil = the neighbour spread + the quantisation (or `sigma0`²) per axis.
    public var calibration: RadioUncertaintyModel.Term?
    /// Signal distance (the position distance's units) that the calibration's novelty feature
    /// counts as 10: δ = 10 · d_nearest / `distanceScale`.
    public var distanceScale: Double

    public init(k: Int = 11, classK: Int = 11, representation: RSSRepresentation = .powed, distance: FingerprintDistance = .sorensen,
                weightExponent: Double = 1, classify: Bool = true, notHeard: Double = -105, sigma0: Double? = nil,
                minAPs: Int = 1, maxAge: Double? = nil, classRepresentation: RSSRepresentation? = nil,
                classDistance: FingerprintDistance? = nil, classNotHeard: Double? = nil, classSharedExponent: Double = 0,
                classFloor: FloorRule = .vote, calibration: RadioUncertaintyModel.Term? = nil, distanceScale: Double = 1) {
        self.k = k; self.classK = classK; self.representation = representation; self.distance = distance
        self.weightExponent = weightExponent; self.classify = classify; self.notHeard = notHeard
        self.sigma0 = sigma0; self.minAPs = minAPs; self.maxAge = maxAge
        self.classRepresentation = classRepresentation; self.classDistance = classDistance; self.classNotHeard = classNotHeard
        self.classSharedExponent = classSharedExponent; self.classFloor = classFloor
        self.calibration = calibration; self.distanceScale = distanceScale
    }

    /// The estimator whose distances the building and floor votes use.
    public var classMatcher: KNNFingerprintEstimator {
        var c = self
        c.representation = classRepresentation ?? representation; c.distance = classDistance ?? distance
        c.notHeard = classNotHeard ?? notHeard
        c.classRepresentation = nil; c.classDistance = nil; c.classNotHeard = nil
        return c
    }

    /// Whether the votes use other distances than the position.
    public var separateClassDistances: Bool {
        classify && (classMatcher.representation != representation || classMatcher.distance != distance || classMatcher.notHeard != notHeard)
    }

    /// The plain kNN of the UJIIndoorLoc literature: k = 3, Euclidean on raw RSS with
    /// not-heard = −105 dBm (the `positive` representation is a shift of it, which Euclidean
    /// distance ignores), unweighted, no building/floor step.
    public static let plain = KNNFingerprintEstimator(k: 3, classK: 3, representation: .positive, distance: .euclidean,
                                                       weightExponent: 0, classify: false)

    /// Evidence that a scan is unlike the map, for a novelty (covariance) model.
    public struct Features: Sendable, Equatable {
        /// Signal-space distance to the nearest point (in `distance`'s units).
        public var nearestDistance: Double
        /// √(trace of the neighbours' weighted spread), m.
        public var neighbourSpread: Double
        /// Share of the scan's APs that the map knows (0…1).
        public var knownShare: Double
        /// Scan APs the map knows.
        public var knownAPs: Int
    }

    /// The result of one match.
    public struct Match: Sendable, Equatable {
        public var position: SIMD2<Double>
        public var covariance: Covariance2
        /// The neighbours' weighted spread alone (before the quantisation, `sigma0` or the calibration).
        public var spread: Covariance2
        public var building: Int?
        public var floor: Int?
        /// Map point indices of the position neighbours, nearest first, and their distances.
        public var neighbours: [Int]
        public var distances: [Double]
        public var features: Features
    }

    /// Distances from the scan to every point of the map (map order), and the scan APs known.
    public func distances(_ scan: WiFiScan, time: Double? = nil, map: FingerprintMap) -> Result<(d: [Double], known: Int, heard: Int), EstimationFailure> {
        guard !map.isEmpty else { return .failure(.missingInput("no fingerprint map in the reference data")) }
        var strongest: [String: Double] = [:]
        for o in scan.accessPoints {
            if let a = maxAge, let t = time, t - (o.lastSeen ?? t) > a { continue }
            let b = o.bssid.lowercased()
            strongest[b] = Swift.max(strongest[b] ?? -.infinity, o.rss)
        }
        var heard: [Int: Double] = [:]
        for (b, v) in strongest { if let j = map.index[b] { heard[j] = v } }
        guard heard.count >= minAPs, !heard.isEmpty else { return .failure(.tooFewAnchors(needed: Swift.max(minAPs, 1), got: heard.count)) }
        let cols = heard.keys.sorted()
        let rep = representation, m = notHeard, dist = distance
        let q = cols.map { rep.value(heard[$0]!, notHeard: m) }
        let sumQ = q.reduce(0, +)
        let eps = rep == .positive ? 1e-4 : 1e-4 / 104
        // Σ_j f(0, q_j): the scan's APs at a point that heard none of them.
        var qOnly = 0.0
        for v in q { qOnly += dist.term(0, v, eps: eps) }
        let index = map.represented(rep, notHeard: m)
        // Σ_{j heard at i} f(p_ij, 0): Σp² for Euclidean, Σp otherwise (Neyman: p²/p).
        var acc = dist == .euclidean ? index.sumSquares : index.sum
        let n = acc.count
        index.start.withUnsafeBufferPointer { st in
        index.point.withUnsafeBufferPointer { pt in
        index.value.withUnsafeBufferPointer { pv in
        acc.withUnsafeMutableBufferPointer { a in
            for i in 0..<n { a[i] += qOnly }
            for (c, j) in cols.enumerated() {
                let qj = q[c], f0q = dist.term(0, qj, eps: eps)
                for e in st[j]..<st[j + 1] {
                    let p = pv[e]
                    a[Int(pt[e])] += dist.term(p, qj, eps: eps) - dist.term(p, 0, eps: eps) - f0q
                }
            }
        } } } }
        var out = [Double](repeating: 0, count: n)
        for i in 0..<n { out[i] = dist.finish(acc[i], sumP: index.sum[i], sumQ: sumQ) }
        return .success((out, cols.count, strongest.count))
    }

    /// Indices of the `count` smallest `d[i]` among `candidates` (all points when nil), nearest
    /// first; ties keep map order.
    public static func nearest(_ d: [Double], count: Int, where keep: ((Int) -> Bool)? = nil) -> [Int] {
        guard count > 0 else { return [] }
        var best: [Int] = []
        best.reserveCapacity(count + 1)
        for i in d.indices where d[i].isFinite {
            if let keep, !keep(i) { continue }
            if best.count == count, d[i] >= d[best[count - 1]] { continue }
            var at = best.count
            while at > 0, d[best[at - 1]] > d[i] { at -= 1 }
            best.insert(i, at: at)
            if best.count > count { best.removeLast() }
        }
        return best
    }

    /// How many nearest points `locate` sorts first.
    public static func prefixLength(k: Int, classK: Int) -> Int { Swift.max(64, 4 * Swift.max(k, classK)) }

    @inline(__always) func weight(_ d: Double) -> Double {
        weightExponent == 0 ? 1 : 1 / pow(d + 1e-9, weightExponent)
    }

    /// Building, floor and position of a scan.
    public func match(_ scan: WiFiScan, time: Double? = nil, map: FingerprintMap) -> Result<Match, EstimationFailure> {
        distances(scan, time: time, map: map).map { r in
            // Vote distances of their own; a scan with no AP above the votes' level votes on the position's.
            var dc: [Double]? = nil
            if separateClassDistances, case .success(let c) = classMatcher.distances(scan, time: time, map: map) { dc = c.d }
            var shared: ((Int) -> Int)? = nil
            if classSharedExponent > 0 { shared = sharedCounter(scan, time: time, map: map) }
            return locate(r.d, known: r.known, heard: r.heard, map: map, classDistances: dc, shared: shared)
        }
    }

    /// n_i of the votes' shared-AP factor: how many of the scan's APs (fresh entries, as
    /// `distances` takes them) point i heard too.
    public func sharedCounter(_ scan: WiFiScan, time: Double? = nil, map: FingerprintMap) -> (Int) -> Int {
        var names = Set<String>()
        for o in scan.accessPoints {
            if let a = maxAge, let t = time, t - (o.lastSeen ?? t) > a { continue }
            names.insert(o.bssid.lowercased())
        }
        let keys = Array(names), points = map.points
        return { i in keys.reduce(0) { $0 + (points[i].rss[$1] != nil ? 1 : 0) } }
    }

    /// Steps 2–3: the building voted by the `classK` nearest points (by `d`, nearest first in
    /// `order`), then the floor voted by the `classK` nearest points of that building.
    /// `shared`: n_i of the shared-AP factor (`sharedCounter`), used when `classSharedExponent` > 0.
    public func classifyBuildingFloor(_ d: [Double], order: [Int], map: FingerprintMap,
                                      shared: ((Int) -> Int)? = nil) -> (building: Int?, floor: Int?) {
        let buildings = map.buildings, floors = map.floors
        let h = classSharedExponent
        func w(_ i: Int) -> Double {
            guard h > 0, let shared else { return weight(d[i]) }
            return weight(d[i]) * pow(Double(Swift.max(shared(i), 1)), h)
        }
        let near = Array(order.prefix(Swift.max(classK, 1)))
        let building = vote(near.map { buildings[$0] }, near.map(w))
        let inBuilding = Self.first(Swift.max(classK, 1), d: d, order: order) { buildings[$0] == building }
        let labels = inBuilding.map { floors[$0] }, weights = inBuilding.map(w)
        let floor: Int?
        switch classFloor {
        case .vote: floor = vote(labels, weights)
        case .mean: floor = meanFloor(labels, weights, surveyed: map.buildingFloors[building] ?? []) ?? vote(labels, weights)
        }
        return (building, floor)
    }

    /// `FloorRule.mean`: the floor of `surveyed` nearest to the weighted mean of `labels` (nearest
    /// voter first); ties go to the floor with more weight among the voters, then to the floor of
    /// the nearer voter (as `vote` does), then the lower. nil (the caller falls back to the
    /// majority) when a voter has no floor, the weights sum to 0 or nothing was surveyed.
    func meanFloor(_ labels: [Int?], _ weights: [Double], surveyed: [Int]) -> Int? {
        var sw = 0.0, sf = 0.0, byFloor: [Int: Double] = [:], seen: [Int: Int] = [:]
        for (n, (l, w)) in zip(labels, weights).enumerated() {
            guard let f = l else { return nil }
            sw += w; sf += w * Double(f); byFloor[f, default: 0] += w
            if seen[f] == nil { seen[f] = n }
        }
        guard sw > 0, sw.isFinite, !surveyed.isEmpty else { return nil }
        let mean = sf / sw
        // Ascending floors; a floor replaces the best only when strictly preferred, so the lower wins the last tie.
        func rank(_ f: Int) -> (Double, Double, Int) { (abs(Double(f) - mean), -(byFloor[f] ?? 0), seen[f] ?? Int.max) }
        var best = surveyed[0]
        for f in surveyed.dropFirst() {
            let a = rank(f), b = rank(best)
            if a.0 < b.0 - 1e-12 || (abs(a.0 - b.0) <= 1e-12 && (a.1 < b.1 || (a.1 == b.1 && a.2 < b.2))) { best = f }
        }
        return best
    }

    /// The `count` nearest points that `keep` accepts, from `order` (the nearest points, nearest
    /// first), or from every point when that prefix holds too few.
    static func first(_ count: Int, d: [Double], order: [Int], _ keep: @escaping (Int) -> Bool) -> [Int] {
        var out: [Int] = []
        for i in order where keep(i) { out.append(i); if out.count == count { return out } }
        let finite = d.reduce(0) { $0 + ($1.isFinite ? 1 : 0) }
        return order.count >= finite ? out : nearest(d, count: count, where: keep)
    }

    /// Steps 2–4 from the distances to every point (+∞ = left out).
    /// `order`: the indices of the nearest points, nearest first (`nearest(d, count:)`), when the
    /// caller has them (the fit reuses one per scan); a class step that needs more points than
    /// this prefix holds scans every point again. `classDistances` (and their `classOrder`): the
    /// votes' own distances (`classMatcher`), nil = `d`; `classified`: a building and floor
    /// already voted (the fit votes once per scan and class configuration).
    public func locate(_ d: [Double], known: Int, heard: Int, map: FingerprintMap, order given: [Int]? = nil,
                       classDistances dc: [Double]? = nil, classOrder: [Int]? = nil,
                       classified: (building: Int?, floor: Int?)? = nil, shared: ((Int) -> Int)? = nil) -> Match {
        let buildings = map.buildings, floors = map.floors
        var building: Int? = nil, floor: Int? = nil
        let prefix = Self.prefixLength(k: k, classK: classK)
        let order = given ?? Self.nearest(d, count: prefix)
        let sel: [Int]
        if classify {
            if let c = classified {
                building = c.building; floor = c.floor
            } else if let dc {
                (building, floor) = classifyBuildingFloor(dc, order: classOrder ?? Self.nearest(dc, count: prefix), map: map, shared: shared)
            } else {
                (building, floor) = classifyBuildingFloor(d, order: order, map: map, shared: shared)
            }
            let b = building, f = floor
            sel = Self.first(Swift.max(k, 1), d: d, order: order) { buildings[$0] == b && floors[$0] == f }
        } else {
            sel = Array(order.prefix(Swift.max(k, 1)))
            building = vote(sel.map { buildings[$0] }, sel.map { _ in 1 })
            floor = vote(sel.map { floors[$0] }, sel.map { _ in 1 })
        }
        let pos = map.positions
        var sw = 0.0, mean = SIMD2<Double>(0, 0)
        for i in sel { let w = weight(d[i]); sw += w; mean += w * pos[i] }
        mean /= Swift.max(sw, .leastNormalMagnitude)
        var ee = 0.0, en = 0.0, nn = 0.0
        for i in sel {
            let w = weight(d[i]), e = pos[i] - mean
            ee += w * e.x * e.x; en += w * e.x * e.y; nn += w * e.y * e.y
        }
        if sw > 0 { ee /= sw; en /= sw; nn /= sw }
        let features = Features(nearestDistance: sel.first.map { d[$0] } ?? .infinity, neighbourSpread: (ee + nn).squareRoot(),
                                knownShare: heard == 0 ? 0 : Double(known) / Double(heard), knownAPs: known)
        let spread = Covariance2(ee: ee, en: en, nn: nn)
        let q = calibration == nil ? quantisation(near: sel.first, map: map) : 0
        return Match(position: mean, covariance: covariance(spread: spread, features: features, quantisation: q), spread: spread,
                     building: building, floor: floor, neighbours: sel, distances: sel.map { d[$0] }, features: features)
    }

    /// The per-axis floor of an uncalibrated covariance: σ0² when `sigma0` is set, else the
    /// map's quantisation near the nearest neighbour `i` (0 when there is none).
    public func quantisation(near i: Int?, map: FingerprintMap) -> Double {
        if let s = sigma0 { return s * s }
        guard let i else { return 0 }
        return map.quantisationVariance(near: i) ?? 0
    }

    /// The fix's covariance: without a calibration, the neighbour spread S + q I (q =
    /// `quantisation(near:map:)`); with one (`RadioUncertaintyModel.Term`), k · (γ² S + σₓ² I)
    /// with σₓ = a + c · (1 − u) + e · δ/10, u the share of the scan's APs the map knows and
    /// δ = 10 · d_nearest / `distanceScale` (docs/radio.md, "Fingerprint kNN"); q is then unused.
    public func covariance(spread: Covariance2, features: Features, quantisation q: Double) -> Covariance2 {
        guard let t = calibration else {
            return Covariance2(ee: spread.ee + q, en: spread.en, nn: spread.nn + q)
        }
        return t.covariance(spread, noveltyFeatures(features))
    }

    /// The calibration's features of a match: no survey distance (the fix is a mean of survey
    /// points), the known share, and the nearest signal distance scaled by `distanceScale`.
    public func noveltyFeatures(_ f: Features) -> RadioUncertaintyModel.Features {
        let nd = f.nearestDistance.isFinite ? f.nearestDistance : 0
        return RadioUncertaintyModel.Features(surveyDistance: 0, knownShare: f.knownShare,
                                              signalDistance: 10 * nd / Swift.max(distanceScale, .leastNormalMagnitude))
    }

    /// Weighted majority; ties go to the label seen first (the nearer point).
    func vote(_ labels: [Int?], _ weights: [Double]) -> Int? {
        var total: [Int?: Double] = [:], order: [Int?] = []
        for (l, w) in zip(labels, weights) {
            if total[l] == nil { order.append(l) }
            total[l, default: 0] += w
        }
        var best: Int?? = nil, bestW = -Double.infinity
        for l in order where total[l]! > bestW { best = .some(l); bestW = total[l]! }
        return best ?? nil
    }

    /// The fix of a scan; `.collinearGeometry` when its covariance is singular (neighbours on one
    /// place or a line, and no quantisation: a map of one place per floor).
    public func estimate(_ scan: WiFiScan, time: Double, map: FingerprintMap, subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        match(scan, time: time, map: map).flatMap { m in
            guard FingerprintEstimator.positiveDefinite(m.covariance) else { return .failure(.collinearGeometry) }
            return .success(Fix(time: time, position: m.position, covariance: m.covariance, source: .fingerprint, subject: subject,
                                usedCount: m.features.knownAPs, floor: m.floor, building: m.building))
        }
    }
}
