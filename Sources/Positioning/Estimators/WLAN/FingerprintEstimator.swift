import Foundation

/// WLAN fingerprinting against a surveyed map (`FingerprintMap`): the Bayesian grid
/// posterior of Horus (Youssef & Agrawala, MobiSys 2005) with a Gaussian RSS likelihood, as
/// the single-phone step of Liu et al. (IEEE TMC 13(10), 2014; `docs/models.md` §4B).
///
/// Model, per reference point i and AP j (RSS in dBm): s_j = F_ij + δ + ε, ε ~ N(0, σ²), with
/// F_ij the surveyed mean and δ the phone's RSS offset against the surveying device.
/// σ (`sigma`, dB) lumps the scan's fading, the survey's own noise, the change of the radio
/// environment since the survey and the phone's motion during the scan.
///
/// Log-likelihood of point i (an AP missing on one side is censored at that side's detection
/// threshold and enters by its profile likelihood — the mean nearest to what was seen):
///
///     ℓ_i = −Σ_{heard both} (s_j − δ_i − F_ij)²/2σ²
///           −Σ_{heard by the phone only} max(0, s_j − δ_i − T_map)²/2σ²
///           −Σ_{heard in the survey only} max(0, F_ij + δ_i − T_phone)²/2σ²
///
/// δ_i = mean over the APs heard both of (s_j − F_ij) when `offsetInvariant` (for device
/// heterogeneity: phones differ from the surveying device by several dB), else 0 (default).
/// Measured (docs/radio.md): the free δ costs more than it gains — a point that shares few
/// APs with the scan fits any offset — on UJIIndoorLoc (25 phone models; mean 10.96 vs 5.22 m)
/// and on crowd-peers, whose surveying phone is 3 dB weaker. APs the map does not know are
/// ignored.
///
/// With a flat prior over the points, w_i ∝ exp(ℓ_i), restricted to the most probable floor;
/// the fix is the posterior mean p̂ = Σ w_i p_i and its covariance the posterior spread
/// Σ w_i (p_i − p̂)(p_i − p̂)ᵀ plus the grid quantisation spacing²/12 per axis.
///
/// With `temper`, a scan that even the best point misses by more than σ per AP (q_min > hσ²,
/// h = scan APs the map knows) is matched with σ̂² = q_min/h (measured in docs/radio.md; off).
///
/// Failures: no map → `.missingInput`; fewer than `minAPs` scan APs the map knows →
/// `.tooFewAnchors`. Cost: O(points × APs) per scan.
public struct FingerprintEstimator: Sendable {
    /// σ of one AP's RSS against the map, dB. The default 4.6 dB is calibrated so that the
    /// fixes' NEES averages 2 on training runs of crowd-peers (seeds 1001–1030: 4 dB → ANEES
    /// 3.9, 4.5 → 2.24, 4.6 → 2.03, 5 → 1.44, 6 → 0.84; docs/radio.md): the posterior
    /// narrows fast with 1/σ². Calibrate it per site on recordings with truth.
    public var sigma: Double
    /// Estimate the phone's RSS offset δ per point (true) or take δ = 0.
    public var offsetInvariant: Bool
    /// Minimum number of scan APs the map knows.
    public var minAPs: Int
    /// The phone's detection threshold, dBm (the trace header's `rss_threshold_dbm` when set).
    public var phoneThreshold: Double
    /// Scan entries last seen more than this before the scan's time are dropped (cached results
    /// from elsewhere), s; nil = keep all.
    public var maxAge: Double?
    /// Widen the likelihood when the best point's residual exceeds σ per AP (σ̂² = q_min/h).
    public var temper: Bool

    public init(sigma: Double = 4.6, offsetInvariant: Bool = false, minAPs: Int = 3, phoneThreshold: Double = -90,
                maxAge: Double? = nil, temper: Bool = false) {
        self.sigma = sigma; self.offsetInvariant = offsetInvariant; self.minAPs = minAPs; self.phoneThreshold = phoneThreshold
        self.maxAge = maxAge; self.temper = temper
    }

    /// ℓ_i for every point of the map (same order as `map.points`), or why there is none. With
    /// `time` (the scan's, s) entries older than `maxAge` are dropped first.
    public func logLikelihoods(_ scan: WiFiScan, time: Double? = nil, map: FingerprintMap) -> Result<[Double], EstimationFailure> {
        match(scan, time: time, map: map).map(\.ll)
    }

    /// ℓ_i and the number of scan APs the map knows.
    func match(_ scan: WiFiScan, time: Double?, map: FingerprintMap) -> Result<(ll: [Double], known: Int), EstimationFailure> {
        guard !map.isEmpty else { return .failure(.missingInput("no fingerprint map in the reference data")) }
        // Strongest report per BSSID the map knows (fresh ones only, with `maxAge` and a time).
        var heard: [Int: Double] = [:]
        for o in scan.accessPoints {
            if let a = maxAge, let t = time, t - (o.lastSeen ?? t) > a { continue }
            guard let j = map.index[o.bssid.lowercased()] else { continue }
            heard[j] = max(heard[j] ?? -.infinity, o.rss)
        }
        guard heard.count >= minAPs else { return .failure(.tooFewAnchors(needed: minAPs, got: heard.count)) }
        let cols = heard.keys.sorted()
        let s = cols.map { heard[$0]! }
        let m = map.bssids.count
        var isHeard = [Bool](repeating: false, count: m)
        for j in cols { isHeard[j] = true }
        let k = 1 / (2 * sigma * sigma)
        let tMap = map.threshold, tPhone = phoneThreshold, invariant = offsetInvariant
        var out = [Double](repeating: 0, count: map.points.count)
        // Unchecked buffers: the per-point loops are the whole cost (posfuse-bench fingerprint).
        map.values.withUnsafeBufferPointer { v in
        map.heardColumns.withUnsafeBufferPointer { hc in
        map.heardStart.withUnsafeBufferPointer { hs in
        isHeard.withUnsafeBufferPointer { ih in
        cols.withUnsafeBufferPointer { cj in
        s.withUnsafeBufferPointer { sv in
        out.withUnsafeMutableBufferPointer { o in
            for i in 0..<o.count {
                let row = i * m
                var delta = 0.0
                if invariant {
                    var sum = 0.0, n = 0
                    for c in 0..<cj.count where !v[row + cj[c]].isNaN { sum += sv[c] - v[row + cj[c]]; n += 1 }
                    if n > 0 { delta = sum / Double(n) }
                }
                var q = 0.0
                for c in 0..<cj.count {
                    let f = v[row + cj[c]]
                    let r = f.isNaN ? max(0, sv[c] - delta - tMap) : sv[c] - delta - f
                    q += r * r
                }
                for c in hs[i]..<hs[i + 1] {
                    let j = hc[c]
                    if !ih[j] { let r = max(0, v[row + j] + delta - tPhone); q += r * r }
                }
                o[i] = q
            }
        } } } } } } }
        // Tempering: when even the best point misses by more than σ per AP, σ under-states this
        // scan's mismatch (an unsurveyed place, a changed site): σ̂² = q_min/h replaces σ².
        var kt = k
        if temper, let qmin = out.min() { kt = k / max(1, qmin / (sigma * sigma * Double(cols.count))) }
        for i in out.indices { out[i] *= -kt }
        return .success((out, cols.count))
    }

    /// Posterior mean and covariance of a scan's position.
    public func estimate(_ scan: WiFiScan, time: Double, map: FingerprintMap, subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        match(scan, time: time, map: map).flatMap { m in
            let (mean, c0, floor) = Self.posterior(m.ll, map: map)
            var cov = c0
            if !Self.positiveDefinite(cov) {
                // A map without `spacing_m` adds no quantisation term, so a posterior on one point
                // or on a line of points had a singular covariance (exact along some direction:
                // NEES = ∞). Its resolution is then the distance from the most probable point to
                // its nearest neighbour on the same floor, d, as a uniform cell: d²/12 per axis
                // (the same term `spacing_m` gives). A map of one point has no resolution at all.
                guard let d = Self.nearestNeighbourDistance(m.ll, map: map, floor: floor), d > 0 else {
                    return .failure(.collinearGeometry)
                }
                cov = Covariance2(ee: cov.ee + d * d / 12, en: cov.en, nn: cov.nn + d * d / 12)
                guard Self.positiveDefinite(cov) else { return .failure(.collinearGeometry) }
            }
            return .success(Fix(time: time, position: mean, covariance: cov, source: .fingerprint, subject: subject,
                                usedCount: m.known, floor: floor))
        }
    }

    static func positiveDefinite(_ c: Covariance2) -> Bool {
        c.ee.isFinite && c.en.isFinite && c.nn.isFinite && c.ee > 0 && c.nn > 0 && c.ee * c.nn - c.en * c.en > 1e-9 * c.ee * c.nn
    }

    /// Distance from the most probable point to the nearest other place of its floor (nil: none;
    /// `FingerprintMap.nearestOtherPlaceDistance`).
    static func nearestNeighbourDistance(_ ll: [Double], map: FingerprintMap, floor: Int?) -> Double? {
        let floors = map.floors
        guard let best = ll.indices.filter({ floors[$0] == floor }).max(by: { ll[$0] < ll[$1] }) else { return nil }
        return map.nearestOtherPlaceDistance(from: best)
    }

    /// Posterior moments of log-weights `ll` over the map's points on the most probable floor,
    /// plus the grid quantisation.
    public static func posterior(_ ll: [Double], map: FingerprintMap) -> (SIMD2<Double>, Covariance2, Int?) {
        let top = ll.max() ?? 0
        let w = ll.map { exp($0 - top) }
        let pos = map.positions, floors = map.floors
        var floor = floors.first ?? nil
        if floors.contains(where: { $0 != floor }) {
            var byFloor: [Int?: Double] = [:]
            for i in w.indices { byFloor[floors[i], default: 0] += w[i] }
            floor = byFloor.max { a, b in a.value != b.value ? a.value < b.value : (a.key ?? .min) > (b.key ?? .min) }!.key
        }
        var sw = 0.0, mean = SIMD2<Double>(0, 0)
        for i in w.indices where floors[i] == floor { sw += w[i]; mean += w[i] * pos[i] }
        mean /= sw
        var ee = 0.0, en = 0.0, nn = 0.0
        for i in w.indices where floors[i] == floor {
            let d = pos[i] - mean
            ee += w[i] * d.x * d.x; en += w[i] * d.x * d.y; nn += w[i] * d.y * d.y
        }
        let q = (map.spacing ?? 0) * (map.spacing ?? 0) / 12
        return (mean, Covariance2(ee: ee / sw + q, en: en / sw, nn: nn / sw + q), floor)
    }

}
