import Foundation

/// A surveyed WiFi fingerprint map — the "Wi-Fi signature map" that Liu et al. (IEEE TMC
/// 13(10), 2014) match the phones against (`docs/models.md` §4B), in the tradition of
/// RADAR (Bahl & Padmanabhan, INFOCOM 2000) and Horus (Youssef & Agrawala, MobiSys 2005).
///
/// Each reference point is a surveyed position (local ENU m, floor) with the mean RSS (dBm)
/// of every AP heard there; an AP absent from a point was below the survey's detection
/// threshold `threshold` (dBm) there. Positions are in the trace's ENU frame
/// (`reference.json` key `fingerprints`, docs/trace-format.md).
///
/// Stored as a dense points × APs matrix (NaN = not heard) for lookups by AP, and per point the
/// columns heard there, so that matching a scan costs O(points × (scan APs + APs per point))
/// also for maps of hundreds of APs (UJIIndoorLoc: 520).
public struct FingerprintMap: Sendable, Equatable {
    public struct Point: Sendable, Equatable {
        public var position: SIMD2<Double>
        public var floor: Int?
        /// Building (a site's own numbering), for maps of several buildings.
        public var building: Int?
        /// Mean RSS per BSSID (lower case), dBm.
        public var rss: [String: Double]
        /// Scans averaged into the means (0 = unknown).
        public var scans: Int
        public init(position: SIMD2<Double>, floor: Int? = nil, rss: [String: Double], scans: Int = 0, building: Int? = nil) {
            self.position = position; self.floor = floor; self.rss = rss; self.scans = scans; self.building = building
        }
    }

    public let points: [Point]
    /// Detection threshold of the survey, dBm: an AP not listed at a point was weaker.
    public let threshold: Double
    /// Grid spacing of the survey, m (nil for irregular surveys): the quantisation of a
    /// matched position, added to the covariance as spacing²/12 per axis.
    public let spacing: Double?
    /// Every BSSID the map knows, sorted; `index[bssid]` is its column.
    public let bssids: [String]
    let index: [String: Int]
    /// Row-major points × bssids mean RSS, NaN where the AP was not heard.
    let values: [Double]
    /// Positions and floors of the points, apart from their RSS dictionaries (the posterior's
    /// loops then touch no reference-counted storage).
    let positions: [SIMD2<Double>]
    let floors: [Int?]
    let buildings: [Int?]
    /// The floors surveyed in each building (nil key: points without a building), ascending;
    /// points without a floor are not counted.
    let buildingFloors: [Int?: [Int]]
    /// Columns heard at point i: `heardColumns[heardStart[i]..<heardStart[i + 1]]`.
    let heardColumns: [Int]
    let heardStart: [Int]

    public init(points: [Point], threshold: Double, spacing: Double? = nil) {
        self.points = points; self.threshold = threshold; self.spacing = spacing
        let names = Array(Set(points.flatMap { $0.rss.keys })).sorted()
        let idx = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        var v = [Double](repeating: .nan, count: points.count * names.count)
        var cols: [Int] = [], start = [0]
        for (i, p) in points.enumerated() {
            let js = p.rss.keys.map { idx[$0]! }.sorted()
            for j in js { v[i * names.count + j] = p.rss[names[j]]! }
            cols += js; start.append(cols.count)
        }
        bssids = names; index = idx
        positions = points.map(\.position); floors = points.map(\.floor); buildings = points.map(\.building)
        values = v; heardColumns = cols; heardStart = start
        var bf: [Int?: Set<Int>] = [:]
        for p in points { if let f = p.floor { bf[p.building, default: []].insert(f) } }
        buildingFloors = bf.mapValues { $0.sorted() }
    }

    public var isEmpty: Bool { points.isEmpty }

    /// Distance from point i to the nearest other surveyed place of its floor and building
    /// (points at the same position are one place), m; nil when there is none.
    public func nearestOtherPlaceDistance(from i: Int) -> Double? {
        let p = positions[i], f = floors[i], b = buildings[i]
        var d2 = Double.infinity
        for j in positions.indices where j != i && floors[j] == f && buildings[j] == b {
            let v = positions[j] - p
            let q = (v * v).sum()
            if q > 0 { d2 = Swift.min(d2, q) }
        }
        return d2.isFinite ? d2.squareRoot() : nil
    }

    /// Per-axis variance of a position quantised to the survey's places near point i: a matched
    /// position can only be one of the surveyed places (or their mean), while the truth lies
    /// anywhere in the cell around it, uniform over a cell of width s: s²/12. s = `spacing` for a
    /// grid survey, else the distance from point i to its nearest other place
    /// (`nearestOtherPlaceDistance`); nil when the map has no such place (one place per floor).
    public func quantisationVariance(near i: Int) -> Double? {
        if let s = spacing { return s * s / 12 }
        return nearestOtherPlaceDistance(from: i).map { $0 * $0 / 12 }
    }

    /// Maps are equal when their points, threshold and spacing are (the derived arrays and the
    /// kNN index cache follow from them).
    public static func == (a: FingerprintMap, b: FingerprintMap) -> Bool {
        a.points == b.points && a.threshold == b.threshold && a.spacing == b.spacing
    }

    /// The map's RSS in one representation (`KNNFingerprintEstimator`), as an inverted index:
    /// for AP column j, the points that heard it and their represented values
    /// (`point[start[j]..<start[j + 1]]`, `value[…]`), and per point Σ p and Σ p² over its APs.
    struct Represented: Sendable {
        var start: [Int]
        var point: [Int32]
        var value: [Double]
        var sum: [Double]
        var sumSquares: [Double]
    }

    /// Built once per (representation, not-heard level) and kept for the map's lifetime, so
    /// that matching a scan touches only the points that heard one of its APs.
    final class RepresentedCache: @unchecked Sendable {
        private let lock = NSLock()
        private var store: [String: Represented] = [:]
        /// The last signal-space distance asked for (`nearestSignalDistance`): the WiFi stages
        /// of one pipeline ask it for the same scan one after another.
        private var lastSignal: (heard: [String: Double], notHeard: Double, result: Double?)?
        func get(_ key: String, _ make: () -> Represented) -> Represented {
            lock.lock(); defer { lock.unlock() }
            if let r = store[key] { return r }
            let r = make()
            store[key] = r
            return r
        }
        func signal(_ heard: [String: Double], _ notHeard: Double, _ make: () -> Double?) -> Double? {
            lock.lock()
            if let l = lastSignal, l.notHeard == notHeard, l.heard == heard { lock.unlock(); return l.result }
            lock.unlock()
            let r = make()
            lock.lock(); lastSignal = (heard, notHeard, r); lock.unlock()
            return r
        }
    }
    let cache = RepresentedCache()

    /// Signal-space distance from a scan to its nearest point (`RadioUncertaintyModel`'s δ):
    /// min over points of the RMS difference in dB over the APs heard on either side, an AP
    /// missing on one side counting at `notHeard` dBm (points with no AP on either side are
    /// skipped); nil when no point is left.
    /// `heard`: RSS per BSSID (lower case). With q = r − m and v = value − m (m = `notHeard`):
    /// Σ over the union = Σ_scan q² + Σ_point v² − 2 Σ_shared q·v, so a point costs O(1) plus
    /// the APs it shares with the scan (the inverted index of v), not a dictionary walk.
    public func nearestSignalDistance(_ heard: [String: Double], notHeard m: Double) -> Double? {
        guard !points.isEmpty else { return nil }
        return cache.signal(heard, m) {
            let inv = inverted("offset|\(m)") { $0 - m }
            let n = points.count
            var base = 0.0
            var cross = [Double](repeating: 0, count: n), shared = [Int](repeating: 0, count: n)
            for (b, r) in heard {
                let q = r - m
                base += q * q
                guard let j = index[b] else { continue }
                for c in inv.start[j]..<inv.start[j + 1] {
                    let i = Int(inv.point[c])
                    cross[i] += q * inv.value[c]; shared[i] += 1
                }
            }
            var best = Double.infinity
            for i in 0..<n {
                let count = heard.count + (heardStart[i + 1] - heardStart[i]) - shared[i]
                guard count > 0 else { continue }
                best = Swift.min(best, Swift.max(0, base + inv.sumSquares[i] - 2 * cross[i]) / Double(count))
            }
            return best.isFinite ? best.squareRoot() : nil
        }
    }

    func represented(_ rep: RSSRepresentation, notHeard m: Double) -> Represented {
        inverted("\(rep.rawValue)|\(m)") { rep.value($0, notHeard: m) }
    }

    /// The inverted index of `transform(mean RSS)` over the heard entries, cached under `key`.
    func inverted(_ key: String, _ transform: (Double) -> Double) -> Represented {
        cache.get(key) {
            let w = bssids.count, n = points.count
            var count = [Int](repeating: 0, count: w + 1)
            for j in heardColumns { count[j + 1] += 1 }
            for j in 0..<w { count[j + 1] += count[j] }
            var fill = count
            var point = [Int32](repeating: 0, count: heardColumns.count), value = [Double](repeating: 0, count: heardColumns.count)
            var sum = [Double](repeating: 0, count: n), sq = [Double](repeating: 0, count: n)
            for i in 0..<n {
                for c in heardStart[i]..<heardStart[i + 1] {
                    let j = heardColumns[c]
                    let p = transform(values[i * w + j])
                    point[fill[j]] = Int32(i); value[fill[j]] = p; fill[j] += 1
                    sum[i] += p; sq[i] += p * p
                }
            }
            return Represented(start: count, point: point, value: value, sum: sum, sumSquares: sq)
        }
    }

    /// Averages the scans taken at one reference point into a `Point` — the survey rule used
    /// by the simulator's survey, `FingerprintMapBuilder` and the UJIIndoorLoc evaluation: the
    /// mean position of the scans, and each AP heard in at least half of them with the mean of
    /// its RSS over the scans that heard it.
    public struct PointAccumulator: Sendable {
        public private(set) var scans = 0
        private var positionSum = SIMD2<Double>(0, 0)
        private var sums: [String: (sum: Double, n: Int)] = [:]
        public init() {}

        /// One scan at `position`: RSS (dBm) per BSSID heard, one value per BSSID.
        public mutating func add(_ heard: [String: Double], at position: SIMD2<Double>) {
            scans += 1; positionSum += position
            for (b, v) in heard { let a = sums[b] ?? (0, 0); sums[b] = (a.sum + v, a.n + 1) }
        }

        /// Adds another accumulator's scans (the same point surveyed in another walk).
        public mutating func merge(_ o: PointAccumulator) {
            scans += o.scans; positionSum += o.positionSum
            for (b, v) in o.sums { let a = sums[b] ?? (0, 0); sums[b] = (a.sum + v.sum, a.n + v.n) }
        }

        public func point(floor: Int?) -> Point {
            Point(position: positionSum / Double(max(scans, 1)), floor: floor,
                  rss: sums.filter { 2 * $0.value.n >= scans }.mapValues { $0.sum / Double($0.n) }, scans: scans)
        }
    }
}
