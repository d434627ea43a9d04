import Foundation

/// One anchor of a weighted centroid: a (merged) radio with its map position and RSS.
public struct WCLAnchor: Sendable, Equatable {
    /// Group id (radio group, MAC or nibble group).
    public var id: String {
        get { key.macPrefix ? "mac:" + key.text : key.text }
        set { key = Key(text: newValue, macPrefix: false) }
    }
    /// How `id` is kept: as given, or (`mergedAnchors`' one-MAC groups) the normalized MAC of
    /// the id "mac:" + MAC, which is only spelled out when `id` is read: most scans never read
    /// it (ties in RSS and HAPEL's later epochs do), and the 21-byte String was a heap
    /// allocation per AP per scan. (A struct, not an enum of the two: copying the anchors in the
    /// sort stays a retain.)
    struct Key: Sendable {
        var text: String, macPrefix: Bool
        static func text(_ s: String) -> Key { Key(text: s, macPrefix: false) }
        static func mac(_ m: String) -> Key { Key(text: m, macPrefix: true) }
    }
    var key: Key
    public var position: SIMD2<Double>
    /// RSS, dBm (strongest BSSID of the group; virtual for HAPEL hidden APs).
    public var rss: Double
    public var p0: Double?
    public var pathLossExponent: Double?
    public var floor: Int?
    /// True for HAPEL's hidden APs with a virtual RSS.
    public var isVirtual: Bool
    /// Antenna height (ENU up, m; the map's, 0 when it gives none).
    public var up: Double
    public init(id: String, position: SIMD2<Double>, rss: Double, p0: Double? = nil, pathLossExponent: Double? = nil,
                floor: Int? = nil, isVirtual: Bool = false, up: Double = 0) {
        self.init(key: .text(id), position: position, rss: rss, p0: p0, pathLossExponent: pathLossExponent,
                  floor: floor, isVirtual: isVirtual, up: up)
    }
    init(key: Key, position: SIMD2<Double>, rss: Double, p0: Double?, pathLossExponent: Double?,
         floor: Int?, isVirtual: Bool, up: Double) {
        self.key = key; self.position = position; self.rss = rss; self.p0 = p0
        self.pathLossExponent = pathLossExponent; self.floor = floor; self.isVirtual = isVirtual; self.up = up
    }
    /// Equal as the public members are (the id by its text, however it is kept).
    public static func == (a: WCLAnchor, b: WCLAnchor) -> Bool {
        a.position == b.position && a.rss == b.rss && a.p0 == b.p0 && a.pathLossExponent == b.pathLossExponent
            && a.floor == b.floor && a.isVirtual == b.isVirtual && a.up == b.up && a.id == b.id
    }
}

/// WLAN RSS weighted-centroid localisation (`docs/models.md` §2).
///
/// Algorithm:
/// 1. Scan hygiene: drop stale entries (last seen before the scan start, or older than
///    `maxAge` before the scan end) and APs missing from the map. Locally administered MACs
///    (bit 0x02 of the first octet: mobile hotspots, randomised MACs) are kept out of learned
///    maps by `APMapEstimator`; at fix time they are dropped only with
///    `excludeLocallyAdministered` (option `exclude_local`, default false: an AP that is in the
///    map was vetted — surveyed or learned — and secondary BSSIDs of multi-BSSID radios are
///    locally administered by design), and never when the map lists them in a radio group.
/// 2. Merge BSSIDs of one physical radio (same `radio` group in the AP map; optionally MACs
///    that differ only in the last hex digit): one anchor at the mean member position with
///    the strongest RSS, so a multi-SSID radio is not counted several times.
/// 3. Keep the K strongest anchors with RSS ≥ r_min.
/// 4. p̂ = Σ w̄_i a_i with w̄ the normalised weights of `weightLaw` (log domain).
/// 5. Σ̂ = κ·S + σ0²·I with the weighted spread S = Σ w̄_i (a_i − p̂)(a_i − p̂)ᵀ. A single
///    anchor gives p̂ = a_1 and S = (d̂²/2)·I, d̂ = 10^((P0 − RSS)/(10 n)) the model range of the
///    heard RSS (the phone is on a ring of radius ≈ d̂ in an unknown direction:
///    E‖e‖² = d̂², i.e. d̂²/2 per axis). κ and σ0 are calibrated on ground truth so that NIS is
///    χ²₂-consistent (`WCLCalibration`).
///
/// Degenerate cases: 0 anchors → `.tooFewAnchors(1, 0)`; 1–2 anchors or collinear anchors →
/// `.degenerate` flag (Σ regularised by σ0²I). WCL cannot extrapolate outside the anchors'
/// hull (inward bias).
public struct WCLEstimator: Sendable, Equatable {
    public var weightLaw: WeightLaw
    /// Exponent g of the weight law.
    public var exponent: Double
    /// K, the number of strongest anchors used.
    public var maxAnchors: Int
    /// r_min, dBm: weaker APs are ignored.
    public var rssMin: Double
    /// Reference level of the `db` law, dBm (must be below every weighted RSS, incl. HAPEL's virtual RSS).
    public var dbReference: Double
    public var mergeRadios: Bool
    public var mergeNibble: Bool
    public var excludeLocallyAdministered: Bool
    /// Maximum age of a scan entry (scan end − last seen), s; nil = no limit.
    public var maxAge: Double?
    /// Covariance scale κ and floor σ0 (m).
    public var kappa: Double
    public var sigma0: Double
    /// Path-loss model for the `distance` law when the map has none.
    public var defaultP0: Double
    public var defaultPathLossExponent: Double

    /// Defaults (docs/radio.md, "Calibration"): chosen on training data only — ms-indoor
    /// leave-one-walk-out: power law g = 0.3 (≈ W1 with g ≈ 1 at n ≈ 3.3), K = 8 gave the lowest
    /// waypoint error (16.2 m vs 17.1 m for g = 1, K = 4); κ = 0.03, σ0 = 11 m are the
    /// `WCLCalibration` fit on its out-of-fold errors (median NIS 1.27).
    public init(weightLaw: WeightLaw = .power, exponent: Double = 0.3, maxAnchors: Int = 8, rssMin: Double = -90,
                dbReference: Double = -100, mergeRadios: Bool = true, mergeNibble: Bool = false,
                excludeLocallyAdministered: Bool = false, maxAge: Double? = nil, kappa: Double = 0.03, sigma0: Double = 11,
                defaultP0: Double = -40, defaultPathLossExponent: Double = 3) {
        self.weightLaw = weightLaw; self.exponent = exponent; self.maxAnchors = maxAnchors; self.rssMin = rssMin
        self.dbReference = dbReference; self.mergeRadios = mergeRadios; self.mergeNibble = mergeNibble
        self.excludeLocallyAdministered = excludeLocallyAdministered; self.maxAge = maxAge
        self.kappa = kappa; self.sigma0 = sigma0
        self.defaultP0 = defaultP0; self.defaultPathLossExponent = defaultPathLossExponent
    }

    /// The group id under which a BSSID is merged.
    public func groupID(_ bssid: String, ap: AccessPoint) -> String {
        groupID(normalized: MACAddress.normalize(bssid), ap: ap)
    }

    /// `groupID` of a BSSID already `MACAddress.normalize`d (normalizing is idempotent).
    func groupID(normalized mac: String, ap: AccessPoint) -> String {
        if mergeRadios, let r = ap.radio, !r.isEmpty { return "radio:" + r }
        if mergeNibble { return "mac:" + MACAddress.nibbleGroup(mac) }
        return "mac:" + mac
    }

    /// Steps 1–2: usable, merged anchors of a scan, strongest first (no r_min / K cut).
    /// Groups are kept in a list in order of first appearance (`SmallIndex` finds a group in it);
    /// the result's order (RSS, then id; ids are unique) does not depend on that order.
    ///
    /// A group of one MAC ("mac:" + MAC, no radio group, no nibble merging) whose entries were
    /// found in the map under that normalized MAC is found by the map entry (its dictionary
    /// index) instead of its id: two such entries have equal ids exactly when they found the same
    /// map entry, and no other group can have their id (an entry found under its spelling as
    /// given has a normalized MAC that is no map key; "radio:" ids never equal "mac:" ids). Same
    /// groups, without comparing id strings (callgrind: a fifth of the merge for 8 APs).
    ///
    /// A one-MAC group's anchor keeps its MAC rather than the id String (`WCLAnchor.Key`): the
    /// sort reads ids only for anchors of equal RSS.
    public func mergedAnchors(_ scan: WiFiScan, time: Double, map: [String: AccessPoint]) -> [WCLAnchor] {
        struct Group { var id: WCLAnchor.Key; var sum: SIMD3<Double>; var count: Int; var best: Double; var ap: AccessPoint }
        var groups: [Group] = []
        groups.reserveCapacity(scan.accessPoints.count)
        var byID = SmallIndex<String>(), byEntry = SmallIndex<Dictionary<String, AccessPoint>.Index>()
        for o in scan.accessPoints {
            guard o.rss.isFinite else { continue }
            if let seen = o.lastSeen {
                if let s = scan.start, seen < s { continue }
                if let a = maxAge, time - seen > a { continue }
            }
            let mac = MACAddress.normalize(o.bssid)
            let entry = map.index(forKey: mac)
            let ap: AccessPoint
            if let entry { ap = map[entry].value } else if mac != o.bssid, let a = map[o.bssid] { ap = a } else { continue }
            if excludeLocallyAdministered, MACAddress.isLocallyAdministered(mac), (ap.radio ?? "").isEmpty { continue }
            let oneMAC = !mergeNibble && !(mergeRadios && !(ap.radio ?? "").isEmpty)
            let p = ap.position
            var id: String?                                    // made once, and for an entry-found group only when new
            let found: Int?
            if oneMAC, let entry { found = byEntry.find(entry) } else { id = groupID(normalized: mac, ap: ap); found = byID.find(id!) }
            if let i = found {
                groups[i].sum += p; groups[i].count += 1
                if o.rss > groups[i].best { groups[i].best = o.rss; groups[i].ap = ap }
            } else {
                let g: WCLAnchor.Key
                if oneMAC, let entry { byEntry.append(entry, at: groups.count); g = .mac(mac) } else {
                    let text = id ?? groupID(normalized: mac, ap: ap)
                    byID.append(text, at: groups.count); g = .text(text)
                }
                groups.append(Group(id: g, sum: p, count: 1, best: o.rss, ap: ap))
            }
        }
        var anchors = groups.map { v in
            let mean = v.sum / Double(v.count)
            return WCLAnchor(key: v.id, position: SIMD2(mean.x, mean.y), rss: v.best, p0: v.ap.p0,
                             pathLossExponent: v.ap.pathLossExponent, floor: v.ap.floor, isVirtual: false, up: mean.z)
        }
        anchors.sort { $0.rss != $1.rss ? $0.rss > $1.rss : $0.id < $1.id }    // in place (`sorted` copied the list)
        return anchors
    }

    /// Step 3: the K strongest anchors above r_min.
    public func selectAnchors(_ scan: WiFiScan, time: Double, map: [String: AccessPoint]) -> [WCLAnchor] {
        selectAnchors(merged: mergedAnchors(scan, time: time, map: map))
    }
    /// Step 3 on anchors `mergedAnchors` already gave.
    public func selectAnchors(merged: [WCLAnchor]) -> [WCLAnchor] {
        // `Array(merged.filter { $0.rss >= rssMin }.prefix(max(1, maxAnchors)))` in one list.
        let k = max(1, maxAnchors)
        var out: [WCLAnchor] = []
        out.reserveCapacity(Swift.min(k, merged.count))
        for a in merged where a.rss >= rssMin {
            out.append(a)
            if out.count == k { break }
        }
        return out
    }

    /// Normalised weights w̄ of anchors (log domain, max subtracted). Falls back to equal
    /// weights when every weight is zero (all W4 weights at the reference level).
    ///
    /// Up to 64 anchors (a bit each marks a weight the law gives), in one array: the log weights,
    /// then the weights, then the normalised weights, with the same operations in the same order
    /// as the general form below (its four arrays were most of the cost for a scan's 8 anchors).
    public func normalizedWeights(_ anchors: [WCLAnchor]) -> [Double] {
        guard anchors.count <= 64 else { return normalizedWeightsGeneral(anchors) }
        var w = [Double](repeating: 0, count: anchors.count)
        var given: UInt64 = 0, mx = 0.0
        for (i, a) in anchors.enumerated() {
            guard let l = weightLaw.logWeight(rss: a.rss, exponent: exponent, p0: a.p0 ?? defaultP0,
                                              n: a.pathLossExponent ?? defaultPathLossExponent, dbReference: dbReference) else { continue }
            if given == 0 || mx < l { mx = l }                     // `max()`: the first, then each larger one
            given |= 1 << UInt64(i)
            w[i] = l
        }
        guard given != 0 else { return anchors.map { _ in 1 / Double(anchors.count) } }
        var s = 0.0
        for i in w.indices {
            w[i] = given & (1 << UInt64(i)) != 0 ? exp(w[i] - mx) : 0
            s += w[i]                                              // `reduce(0, +)`: in order from 0
        }
        for i in w.indices { w[i] /= s }
        return w
    }

    /// `normalizedWeights` of any number of anchors.
    func normalizedWeightsGeneral(_ anchors: [WCLAnchor]) -> [Double] {
        let lw = anchors.map {
            weightLaw.logWeight(rss: $0.rss, exponent: exponent, p0: $0.p0 ?? defaultP0,
                                n: $0.pathLossExponent ?? defaultPathLossExponent, dbReference: dbReference)
        }
        let finite = lw.compactMap { $0 }
        guard let mx = finite.max() else { return anchors.map { _ in 1 / Double(anchors.count) } }
        let w = lw.map { $0.map { exp($0 - mx) } ?? 0 }
        let s = w.reduce(0, +)
        return w.map { $0 / s }
    }

    /// Step 4: weighted centroid p̂ and the weighted spread S = Σ w̄ (a − p̂)(a − p̂)ᵀ
    /// (a single anchor: S = d̂²/2·I, see step 5).
    public func centroid(_ anchors: [WCLAnchor]) -> (position: SIMD2<Double>, spread: Covariance2)? {
        guard !anchors.isEmpty else { return nil }
        if anchors.count == 1, let a = anchors.first {
            let m = PathLossModel(anchor: .zero, p0: a.p0 ?? defaultP0, exponent: a.pathLossExponent ?? defaultPathLossExponent)
            let d = min(max(m.range(forRSS: a.rss), 1), 200)
            return (a.position, Covariance2(sigma: d / 2.0.squareRoot()))
        }
        let w = normalizedWeights(anchors)
        var p = SIMD2<Double>(0, 0)
        for (a, wi) in zip(anchors, w) { p += wi * a.position }
        var s = Covariance2.zero
        for (a, wi) in zip(anchors, w) {
            let d = a.position - p
            s = s + Covariance2(ee: wi * d.x * d.x, en: wi * d.x * d.y, nn: wi * d.y * d.y)
        }
        return (p, s)
    }

    /// Step 5: Σ̂ = κ·S + σ0²·I.
    public func covariance(spread: Covariance2, anchorCount: Int) -> Covariance2 {
        spread.scaled(kappa) + Covariance2(sigma: sigma0)
    }

    /// A fix from given anchors (also used by HAPEL with virtual anchors).
    public func fix(anchors: [WCLAnchor], time: Double, source: Source = .wcl,
                    subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        guard let c = centroid(anchors) else { return .failure(.tooFewAnchors(needed: 1, got: 0)) }
        var flags: FixFlags = []
        let ax = c.spread.principalAxes
        if anchors.count <= 2 || ax.minor < 1e-6 * max(ax.major, 1e-9) { flags.insert(.degenerate) }
        // Floor: weighted majority of the anchors' floors (no weights needed when no anchor has one).
        var floorVotes: [Int: Double] = [:]
        if anchors.contains(where: { $0.floor != nil }) {
            for (a, w) in zip(anchors, normalizedWeights(anchors)) { if let f = a.floor { floorVotes[f, default: 0] += w } }
        }
        let floor = floorVotes.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key
        return .success(Fix(time: time, position: c.position, covariance: covariance(spread: c.spread, anchorCount: anchors.count),
                            source: source, subject: subject, usedCount: anchors.count, flags: flags, floor: floor))
    }

    public func estimate(_ scan: WiFiScan, time: Double, map: [String: AccessPoint],
                         subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        fix(anchors: selectAnchors(scan, time: time, map: map), time: time, subject: subject)
    }
}
