import Foundation
import Positioning
import Scoring
import Storage
import TraceIO

/// A recorded walk as the radio builders and evaluators see it: header + events in time order.
public struct RecordedWalk: Sendable {
    public var name: String
    public var header: TraceHeader
    public var events: [TraceEvent]
    public init(name: String, header: TraceHeader, events: [TraceEvent]) {
        self.name = name; self.header = header; self.events = events
    }

    /// Reads a trace file (trace format v1) leniently.
    public static func read(_ url: URL) throws -> RecordedWalk {
        let r = try TraceReader(url: url, mode: .lenient)
        var ev: [TraceEvent] = []
        while let e = try r.next() { ev.append(e) }
        return RecordedWalk(name: url.deletingPathExtension().lastPathComponent, header: r.header, events: ev)
    }

    /// Calls `body` for each event that `include` selects and whose device has ground truth at
    /// its time (`TruthTrack` per device in `frame`, at most `maxGap` s between samples), with
    /// that truth — the training samples of the calibrations and evaluations.
    public func forEachEvent(withTruthIn frame: LocalFrame, maxGap: Double = 30, where include: (TraceEvent) -> Bool,
                             _ body: (TraceEvent, SIMD2<Double>) throws -> Void) rethrows {
        var truths: [String: TruthTrack] = [:]
        for e in events where include(e) {
            if truths[e.device] == nil { truths[e.device] = TruthTrack(walk: self, frame: frame, subject: e.device, maxGap: maxGap) }
            if let p = truths[e.device]!.position(at: e.time) { try body(e, p) }
        }
    }
}

/// Ground-truth track of one subject of a recorded walk in a given ENU frame, for the
/// radio evaluations: the scorer's `GroundTruthTrack` (linear interpolation between samples
/// no more than `maxGap` s apart, never extrapolating) plus the floor of each sample.
///
/// Truth comes from `gt` events (geodetic positions are converted to `frame`; `local`
/// positions are taken as already in the frame, as for floor-plan data) or, when a walk has
/// no `gt` for the subject and `gnssFallback` is set, from the phone's `gnss` fixes.
public struct TruthTrack: Sendable {
    public private(set) var track: GroundTruthTrack
    /// Floor of each sample of `track` (nil when the source gives none).
    public private(set) var floors: [Int?]
    public var maxGap: Double

    public init(walk: RecordedWalk, frame: LocalFrame, subject: String = Fix.defaultSubject,
                gnssFallback: Bool = false, maxGap: Double = 30) {
        self.maxGap = maxGap
        var s: [(Double, SIMD2<Double>, Int?)] = []
        for e in walk.events where e.device == subject {
            if case .groundTruth(let g) = e.payload {
                switch g.position {
                case .geodetic(let q): let v = frame.enu(q); s.append((e.time, SIMD2(v.x, v.y), g.floor))
                case .local(let v): s.append((e.time, SIMD2(v.x, v.y), g.floor))
                }
            }
        }
        if s.isEmpty && gnssFallback {
            for e in walk.events where e.device == subject {
                if case .gnss(let g) = e.payload {
                    s.append((e.time, frame.en(latitude: g.latitude, longitude: g.longitude), nil))
                }
            }
        }
        // Stable time order; of samples at the same time the last one counts (as in GroundTruthTrack).
        s = s.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element)
        track = GroundTruthTrack(subject: subject)
        floors = []
        for (t, p, f) in s {
            if track.lastTime == t { floors[floors.count - 1] = f } else { floors.append(f) }
            track.append(time: t, position: p)
        }
    }

    public var isEmpty: Bool { track.isEmpty }
    public var times: [Double] { track.times }
    public var positions: [SIMD2<Double>] { zip(track.east, track.north).map { SIMD2($0, $1) } }

    /// Position at time t, or nil outside the track or across a gap longer than `maxGap`.
    public func position(at t: Double) -> SIMD2<Double>? { try? track.position(at: t, maxGap: maxGap).get() }

    /// Floor of the sample nearest in time to t.
    public func floor(at t: Double) -> Int? {
        let times = track.times
        guard !times.isEmpty else { return nil }
        var lo = 0, hi = times.count
        while lo < hi { let m = (lo + hi) / 2; if times[m] < t { lo = m + 1 } else { hi = m } }   // first time ≥ t
        if lo == times.count { return floors[lo - 1] }
        if lo > 0 && t - times[lo - 1] <= times[lo] - t { return floors[lo - 1] }
        return floors[lo]
    }
}

/// `posfuse celldb build`: cell-site positions from walks that carry TA and ground truth (or
/// GNSS), by robust least squares on TA ranges (`RangeTrilateration`).
///
/// 1. Every serving-cell record with a valid, unsaturated TA at a time with truth gives a
///    sample (truth position in the build frame, horizontal range (TA + β)Δ).
/// 2. Samples are fitted per cell (default), or pooled per eNB/gNB (ECI >> 8) with
///    `groupBySite` — off by default: on the real LTE walks the cells of one eNB id are not
///    co-located (per-cell rms residual 56 m vs 148 m pooled for the busiest eNB).
/// 3. Huber-IRLS LM fit per site with σ_k = √(Δ²/12 + σ_m² + σ_truth²).
/// 4. Each cell of the site gets a record (provenance "estimated", range = P95 of its sample
///    ranges + Δ). With `estimateSectors`, a cell whose sample bearings from the site
///    are concentrated (mean resultant length ≥ 0.7, ≥ 10 samples) gets azimuth = their
///    circular mean and beamwidth 120° — a data-driven sector, biased towards the walked area.
public struct CellSiteBuilder: Sendable {
    public var offset: Double
    public var sigmaFraction: Double
    public var truthSigma: Double
    public var groupBySite: Bool
    public var estimateSectors: Bool
    public var minSamples: Int

    public init(offset: Double = 0, sigmaFraction: Double = 0.15, truthSigma: Double = 10, groupBySite: Bool = false,
                estimateSectors: Bool = false, minSamples: Int = 5) {
        self.offset = offset; self.sigmaFraction = sigmaFraction; self.truthSigma = truthSigma
        self.groupBySite = groupBySite; self.estimateSectors = estimateSectors; self.minSamples = minSamples
    }

    public struct Sample: Sendable {
        public var cell: CellID
        public var position: SIMD2<Double>
        public var ta: Int
        public var range: Double
        public var sigma: Double
    }

    public struct SiteResult: Sendable {
        public var key: String
        public var cells: [CellID]
        public var samples: Int
        public var result: Result<RangeTrilateration.Result, EstimationFailure>
    }

    /// Step 1: TA samples of walks in `frame`.
    public func samples(_ walks: [RecordedWalk], frame: LocalFrame) -> [Sample] {
        var out: [Sample] = []
        let est = CellTAEstimator(offset: offset, sigmaFraction: sigmaFraction)
        for w in walks {
            let truth = TruthTrack(walk: w, frame: frame, gnssFallback: true)
            for e in w.events {
                guard case .cell(let o) = e.payload, o.serving, let ta = o.timingAdvance,
                      case .success(let m) = est.model(for: o), m.validate(ta) == nil, !m.isSaturated(ta),
                      let p = truth.position(at: e.time) else { continue }
                let sm = sigmaFraction * m.stepLength
                out.append(Sample(cell: o.cell, position: p, ta: ta, range: m.range(ta),
                                  sigma: (m.stepLength * m.stepLength / 12 + sm * sm + truthSigma * truthSigma).squareRoot()))
            }
        }
        return out
    }

    func key(_ c: CellID) -> String {
        if groupBySite && (c.rat == .lte || c.rat == .nr) { return "\(c.rat.rawValue):\(c.mcc)-\(c.mnc)-site\(c.cid >> 8)" }
        return c.description
    }

    /// Steps 2–4.
    public func build(_ walks: [RecordedWalk], frame: LocalFrame) -> (records: [CellTower], sites: [SiteResult]) {
        let all = samples(walks, frame: frame)
        var groups: [String: [Sample]] = [:]
        for s in all { groups[key(s.cell), default: []].append(s) }
        var records: [CellTower] = []
        var sites: [SiteResult] = []
        for (k, ss) in groups.sorted(by: { $0.key < $1.key }) {
            let cells = Array(Set(ss.map(\.cell))).sorted { $0.description < $1.description }
            guard ss.count >= minSamples else {
                sites.append(SiteResult(key: k, cells: cells, samples: ss.count, result: .failure(.tooFewAnchors(needed: minSamples, got: ss.count))))
                continue
            }
            let r = RangeTrilateration.fit(points: ss.map(\.position), ranges: ss.map(\.range), sigmas: ss.map(\.sigma))
            sites.append(SiteResult(key: k, cells: cells, samples: ss.count, result: r))
            guard case .success(let fit) = r else { continue }
            for c in cells {
                let mine = ss.filter { $0.cell == c }
                let step = mine.first.map { $0.range / max(Double($0.ta) + offset, 0.5) } ?? 0
                let rng = (RadioStats.quantile(mine.map { d in ((d.position - fit.position) * (d.position - fit.position)).sum().squareRoot() }, 0.95) ?? 0) + step
                var az: Double? = nil, bw: Double? = nil
                if estimateSectors, mine.count >= 10 {
                    var sx = 0.0, sy = 0.0
                    for d in mine { let v = d.position - fit.position; let a = atan2(v.x, v.y); sx += sin(a); sy += cos(a) }
                    let rbar = (sx * sx + sy * sy).squareRoot() / Double(mine.count)
                    if rbar >= 0.7 { az = (Angle.degrees(atan2(sx, sy)) + 360).truncatingRemainder(dividingBy: 360); bw = 120 }
                }
                records.append(CellTower(cell: c, position: frame.groundGeodetic(east: fit.position.x, north: fit.position.y),
                                         range: rng > 0 ? rng : nil, samples: mine.count, azimuth: az, beamwidth: bw,
                                         provenance: "estimated"))
            }
        }
        return (records, sites)
    }
}

/// `posfuse radiomap build`: AP positions (+ P0, n where the data allows) from walks with
/// ground truth (`APMapEstimator`), and Bluetooth LE beacon positions by the same rule. A scan entry becomes a sample at the truth position
/// interpolated at its own `t_seen` (else the scan time), if it is at most `maxAge` s older
/// than the scan (stale cached entries are dropped).
public struct RadioMapBuilder: Sendable {
    public var estimator: APMapEstimator
    public var maxAge: Double
    /// The survey's scan-entry age limit, s: the one default of every map builder
    /// (`RadioMapBuilder`, `FingerprintMapBuilder`, `RadioMapLearner`, `radiomap build --max-age`,
    /// the geolocation API's submissions). A map is built from entries whose position is known;
    /// an entry cached longer than this was heard elsewhere. Positioning is a separate knob: the
    /// WiFi stages' `max_age_s` (`WCLStage.Options.maxAge`, default no limit).
    public static let defaultMaxAge = 5.0
    public init(estimator: APMapEstimator = APMapEstimator(), maxAge: Double = RadioMapBuilder.defaultMaxAge) {
        self.estimator = estimator; self.maxAge = maxAge
    }

    /// The transmitters an event carries: a WiFi scan's access points (`.wifi`) or a Bluetooth
    /// scan's beacons (`.ble`, `BLEScan.transmitters`); nil for every other event.
    public static func transmitters(_ e: TraceEvent, _ kind: TransmitterKind) -> WiFiScan? {
        switch (kind, e.payload) {
        case (.wifi, .wifi(let s)): return s
        case (.ble, .ble(let s)): return s.transmitters
        default: return nil
        }
    }

    public func samples(_ walks: [RecordedWalk], frame: LocalFrame, of kind: TransmitterKind = .wifi) -> [String: [APMapEstimator.Sample]] {
        var out: [String: [APMapEstimator.Sample]] = [:]
        for w in walks {
            let truth = TruthTrack(walk: w, frame: frame)
            for e in w.events {
                guard let scan = Self.transmitters(e, kind) else { continue }
                for o in scan.accessPoints {
                    let t = o.lastSeen ?? e.time
                    guard e.time - t <= maxAge, o.rss.isFinite, let p = truth.position(at: t) else { continue }
                    out[MACAddress.normalize(o.bssid), default: []].append(.init(position: p, rss: o.rss, floor: truth.floor(at: t)))
                }
            }
        }
        return out
    }

    /// The map of `kind`'s transmitters: access points (WiFi) or beacons (Bluetooth LE), by the
    /// same estimator. Beacons skip the locally-administered rule: the IEEE U/L bit means nothing
    /// in a Bluetooth address (random addresses are marked by the address type, which Android's
    /// scan record does not carry), so a beacon is kept whatever its first octet.
    public func build(_ walks: [RecordedWalk], frame: LocalFrame, of kind: TransmitterKind = .wifi) -> [APMapEstimator.Estimate] {
        let est = mapEstimator(of: kind)
        return samples(walks, frame: frame, of: kind).sorted { $0.key < $1.key }.compactMap { est.estimate(bssid: $0.key, samples: $0.value) }
    }

    /// The estimator of `kind`'s transmitters: `estimator`, without the locally-administered rule
    /// for beacons (see `build`). The one place of that rule (`posfuse serve` learns with it too).
    public func mapEstimator(of kind: TransmitterKind) -> APMapEstimator {
        var est = estimator
        if kind == .ble { est.excludeLocallyAdministered = false }
        return est
    }

    /// The kinds of transmitter a radio map locates.
    public enum TransmitterKind: Sendable { case wifi, ble }
}

/// A fingerprint map (`FingerprintMap`) from walks with ground truth — the crowdsourced
/// counterpart of a site survey. Every scan whose truth is known at its time is binned into a
/// `cellSize` grid cell per floor; a cell becomes one reference point by the survey rule
/// (`FingerprintMap.PointAccumulator`: mean truth position, APs heard in at least half of the
/// cell's scans with their mean RSS). Entries older than `maxAge` s at the scan time are
/// dropped (cached results from elsewhere). The detection threshold is the weakest RSS kept.
public struct FingerprintMapBuilder: Sendable {
    public var cellSize: Double
    public var maxAge: Double
    public init(cellSize: Double = 2, maxAge: Double = RadioMapBuilder.defaultMaxAge) { self.cellSize = cellSize; self.maxAge = maxAge }

    public func build(_ walks: [RecordedWalk], frame: LocalFrame) -> FingerprintMap {
        build(merging: walks.map { cells($0, frame: frame) })
    }

    /// One walk's scans binned into cells (first-seen order) and the weakest RSS kept: maps of
    /// several subsets of walks (the nested σ fit of `evaluate radio`) merge these instead of
    /// binning every walk again.
    public struct WalkCells: Sendable {
        struct Cell: Hashable { var floor: Int?; var i: Int; var j: Int }
        fileprivate var cells: [Cell: FingerprintMap.PointAccumulator] = [:]
        fileprivate var order: [Cell] = []
        fileprivate var weakest = Double.infinity
    }

    public func cells(_ w: RecordedWalk, frame: LocalFrame) -> WalkCells {
        var out = WalkCells()
        let truth = TruthTrack(walk: w, frame: frame)
        for e in w.events {
            guard case .wifi(let scan) = e.payload, let p = truth.position(at: e.time) else { continue }
            let c = WalkCells.Cell(floor: truth.floor(at: e.time), i: Int((p.x / cellSize).rounded(.down)), j: Int((p.y / cellSize).rounded(.down)))
            if out.cells[c] == nil { out.cells[c] = .init(); out.order.append(c) }
            var seen: [String: Double] = [:]
            for o in scan.accessPoints where o.rss.isFinite && e.time - (o.lastSeen ?? e.time) <= maxAge {
                let b = MACAddress.normalize(o.bssid)
                seen[b] = max(seen[b] ?? -.infinity, o.rss)
                out.weakest = min(out.weakest, o.rss)
            }
            out.cells[c]!.add(seen, at: p)
        }
        return out
    }

    /// The map of several walks' cells (a cell visited by several walks pools their scans).
    public func build(merging parts: [WalkCells]) -> FingerprintMap {
        var cells: [WalkCells.Cell: FingerprintMap.PointAccumulator] = [:]
        var order: [WalkCells.Cell] = []
        var weakest = Double.infinity
        for part in parts {
            for c in part.order {
                if cells[c] == nil { cells[c] = part.cells[c]!; order.append(c) } else { cells[c]!.merge(part.cells[c]!) }
            }
            weakest = min(weakest, part.weakest)
        }
        let points = order.map { cells[$0]!.point(floor: $0.floor) }
        return FingerprintMap(points: points, threshold: weakest.isFinite ? weakest : -100, spacing: cellSize)
    }
}

extension CellCoverageMap {
    /// The coverage map of walks: every serving-cell report at the walk's ground truth (else
    /// its GNSS), with its TA index when reported, and per area the number of walks that saw
    /// it, calibrated on those walks by inner leave-one-day-out (`CoverageScale`; `calibrate:
    /// false`, the model alone) — what `posfuse celldb build` stores.
    public init(walks: [RecordedWalk], frame: LocalFrame, calibrate: Bool = true) {
        self = Self.calibrated(walks: walks, frame: frame, calibrate: calibrate).map
    }

    /// The same map with the fitted scales (`CoverageScale.Fit`).
    public static func calibrated(walks: [RecordedWalk], frame: LocalFrame, calibrate: Bool = true) -> (map: CellCoverageMap, fit: CoverageScale.Fit) {
        CoverageScale.map(coverageReports(walks: walks, frame: frame), calibrate: calibrate)
    }

    /// Every serving-cell report of `walks` at its true position (walk = the index in `walks`;
    /// inner fold = the walk's UTC day when its times are Unix times, `CoverageScale.day`, else the walk).
    public static func coverageReports(walks: [RecordedWalk], frame: LocalFrame) -> [CoverageScale.Report] {
        var out: [CoverageScale.Report] = []
        var folds: [Int: Int] = [:]
        for (i, w) in walks.enumerated() {
            let fold = w.events.first.flatMap { CoverageScale.day(walkStart: $0.time) }.map { day in
                folds[day] ?? { folds[day] = -1 - folds.count; return folds[day]! }()
            } ?? i
            let truth = TruthTrack(walk: w, frame: frame, gnssFallback: true)
            for e in w.events {
                guard case .cell(let o) = e.payload, o.serving, let p = truth.position(at: e.time) else { continue }
                out.append(.init(cell: o.cell, timingAdvance: o.timingAdvance, position: p, walk: i, fold: fold))
            }
        }
        return out
    }
}
