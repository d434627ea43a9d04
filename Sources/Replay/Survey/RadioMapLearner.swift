import Foundation
import Positioning
import Storage
import Scoring
import TraceIO

/// `posfuse radiomap build` as a library call: AP positions (`RadioMapBuilder`), the fingerprint
/// survey (`FingerprintMapBuilder`) and the uncertainty model (`RadioUncertaintyModel`) learned
/// from walks with ground truth, in the ENU frame of the first walk's origin, written to a
/// `RadioMapDatabase`. `posfuse evaluate radio` builds each fold's map with this same code and
/// replays the test walks with it (`ReplayOptions.radioMap`), so an evaluation figure is what a
/// user's map would give.
public struct RadioMapLearner: Sendable {
    /// Scan entries older than this at the scan time are dropped, s.
    public var maxAge: Double
    /// Fingerprint cell size, m.
    public var fingerprintCell: Double
    /// Fit the uncertainty model (needs at least two walks).
    public var fitUncertainty = true
    /// Fit the PDR step length (`StepLengthCalibration`; needs two walks with steps and truth).
    public var fitStepLength = true
    /// Inner folds of the uncertainty fit (walk i is in fold i mod K).
    public var innerFolds = 5
    /// Block radius of the uncertainty fit's inner folds, m (`RadioSplit.defaultRadius`).
    public var blockRadius = RadioMapLearner.defaultBlockRadius
    /// The inner folds are replayed once per multiple of `blockRadius` (duplicates and a zero
    /// radius collapse to one replay), so the residuals span scans from "just blocked" to far
    /// beyond the map's reach and the novelty width is fitted over that range instead of
    /// extrapolated to it (docs/radio.md, "Inner folds at several block radii"). `[1]`: the
    /// model before session 21 (for comparison).
    public var blockRadiusMultiples: [Double] = RadioMapLearner.defaultBlockRadiusMultiples
    /// How the model's coverage scale is taken from its inner folds: cautious over the folds of
    /// walks by default (one walk's WiFi errors are one bias, so walks, not fixes, are the
    /// exchangeable units; docs/radio.md, "The coverage scale over walks"); `.pooled`: the
    /// conformal quantile over all fixes, the rule before session 18 (for comparison).
    public var scaleRule: RadioUncertaintyModel.ScaleRule = .cautiousOverGroups
    /// The forms of the novelty width σₓ tried per source; the one with the smaller likelihood
    /// over the inner folds is kept (`RadioUncertaintyModel.fit`, docs/radio.md, "The exponential
    /// novelty form"). `[.linear]`: the model before session 19 (for comparison).
    public var forms: [RadioUncertaintyModel.Form] = [.linear, .exponential]
    /// Options of the WiFi stages whose fixes the model is fitted on (a pipeline file's).
    public var stages: [String: StageOptions] = [:]

    public static let defaultBlockRadius = 10.0
    public static let defaultBlockRadiusMultiples: [Double] = [1, 2, 3]
    /// The WiFi stages the model covers.
    public static let wifiStages = ["wcl", "rss", "hapel", "fingerprint"]

    public init(maxAge: Double = RadioMapBuilder.defaultMaxAge, fingerprintCell: Double = 2) {
        self.maxAge = maxAge; self.fingerprintCell = fingerprintCell
    }

    public struct Output: Sendable {
        public var frame: LocalFrame
        public var accessPoints: [APMapEstimator.Estimate]
        /// Bluetooth LE beacons located like the access points (`RadioMapBuilder.build(of: .ble)`).
        public var bleBeacons: [APMapEstimator.Estimate] = []
        public var fingerprints: FingerprintMap
        public var uncertainty: RadioUncertaintyModel?
        /// The residuals the uncertainty model was fitted on, per source (the inner folds').
        public var residuals: [Source: [RadioUncertaintyModel.Sample]] = [:]
        /// The PDR step length fitted on the walks (nil: too few walks with steps and truth).
        public var stepLength: StepLengthCalibration? = nil

        /// The map as reference data in `frame` (converted exactly through WGS84 when it differs).
        public func reference(in target: LocalFrame) -> ReferenceData {
            let same = target.origin == frame.origin
            func conv(_ v: SIMD3<Double>) -> SIMD3<Double> { same ? v : target.enu(frame.geodetic(v)) }
            var r = ReferenceData()
            for e in accessPoints { var a = e.ap; a.position = conv(a.position); r.accessPoints[a.bssid] = a }
            for e in bleBeacons { var a = e.ap; a.position = conv(a.position); r.bleBeacons[a.bssid] = a }
            if !fingerprints.isEmpty {
                r.fingerprints = FingerprintMap(points: fingerprints.points.map { p in
                    var q = p; let v = conv(SIMD3(p.position.x, p.position.y, 0)); q.position = SIMD2(v.x, v.y); return q
                }, threshold: fingerprints.threshold, spacing: fingerprints.spacing)
            }
            r.radioUncertainty = uncertainty
            r.stepLength = stepLength
            return r
        }
    }

    /// Learns the map; nil when there is no walk.
    public func build(_ walks: [RecordedWalk]) -> Output? {
        guard var out = buildMap(walks) else { return nil }
        if fitUncertainty && walks.count >= 2 {
            var terms: [String: RadioUncertaintyModel.Term] = [:]
            out.residuals = uncertaintySamples(walks)
            for (s, samples) in out.residuals {
                if let t = RadioUncertaintyModel.fit(samples, scaleRule: scaleRule, forms: forms) { terms[s.rawValue] = t }
            }
            if !terms.isEmpty { out.uncertainty = RadioUncertaintyModel(terms: terms) }
        }
        if fitStepLength { out.stepLength = StepLengthCalibration.fit(walks.map(Self.stepSegments)) }
        return out
    }

    /// The step-length segments of a walk (`StepLengthCalibration.segments`): its phone's IMU
    /// samples and truth samples in the walk's own frame.
    public static func stepSegments(_ w: RecordedWalk) -> [StepLengthCalibration.Segment] {
        var imu: [(time: Double, sample: IMUSample)] = []
        for e in w.events where e.device == Fix.defaultSubject { if case .imu(let s) = e.payload { imu.append((e.time, s)) } }
        let truth = TruthTrack(walk: w, frame: LocalFrame(origin: w.header.origin))
        return StepLengthCalibration.segments(imu: imu, truth: Array(zip(truth.times, truth.positions)).map { ($0.0, $0.1) })
    }

    /// APs and survey only.
    func buildMap(_ walks: [RecordedWalk]) -> Output? {
        guard let origin = walks.first?.header.origin else { return nil }
        let frame = LocalFrame(origin: origin)
        let builder = RadioMapBuilder(maxAge: maxAge)
        let aps = builder.build(walks, frame: frame)
        let fps = FingerprintMapBuilder(cellSize: fingerprintCell, maxAge: maxAge).build(walks, frame: frame)
        return Output(frame: frame, accessPoints: aps, bleBeacons: builder.build(walks, frame: frame, of: .ble),
                      fingerprints: fps, uncertainty: nil, residuals: [:])
    }

    /// Residuals of the WiFi stages on walks the map never saw: the walks are dealt into K
    /// inner folds; each fold's walks are replayed (WiFi stages only, the stages' own
    /// covariances) against the map of the other walks with every scan within `blockRadius` of
    /// a held-out walk's path removed (area-blocked), and each fix is compared with the truth
    /// interpolated at its time (waypoints up to 30 s apart). This is done once per radius of
    /// `blockRadii`; a fold's residuals keep the fold as their group at every radius (the coverage
    /// scale is cross-fitted over folds of walks), and each radius's replay of a walk counts as a
    /// walk of its own for the error correlation.
    public func uncertaintySamples(_ walks: [RecordedWalk]) -> [Source: [RadioUncertaintyModel.Sample]] {
        let k = min(innerFolds, walks.count)
        guard k >= 2 else { return [:] }
        var out: [Source: [RadioUncertaintyModel.Sample]] = [:]
        for (ri, radius) in blockRadii.enumerated() {
            for (s, samples) in uncertaintySamples(walks, folds: k, radius: radius, walkOffset: ri * walks.count) {
                out[s, default: []] += samples
            }
        }
        return out
    }

    /// The distinct inner block radii, m: `blockRadius` times each of `blockRadiusMultiples`.
    public var blockRadii: [Double] {
        var r: [Double] = []
        for m in blockRadiusMultiples.isEmpty ? [1] : blockRadiusMultiples where !r.contains(blockRadius * m) { r.append(blockRadius * m) }
        return r
    }

    func uncertaintySamples(_ walks: [RecordedWalk], folds k: Int, radius: Double,
                            walkOffset: Int) -> [Source: [RadioUncertaintyModel.Sample]] {
        var stageOptions: [String: StageOptions] = [:]
        for e in StageRegistry.entries {
            stageOptions[e.name] = Self.wifiStages.contains(e.name) ? (stages[e.name] ?? StageOptions(name: e.name))
                                                                   : StageOptions(name: e.name, values: ["enabled": .bool(false)])
        }
        var out: [Source: [RadioUncertaintyModel.Sample]] = [:]
        for fold in 0..<k {
            let held = walks.indices.filter { $0 % k == fold }.map { walks[$0] }
            let paths = held.map(Self.truthPath)
            let rest = walks.indices.filter { $0 % k != fold }.map { Self.block(walks[$0], paths: paths, radius: radius).walk }
            guard let map = buildMap(rest) else { continue }
            for (wi, w) in zip(walks.indices.filter { $0 % k == fold }, held) {
                let frame = LocalFrame(origin: w.header.origin)
                let reference = map.reference(in: frame)
                guard let pipeline = try? StageRegistry.pipeline(options: stageOptions) else { return [:] }
                let context = PipelineContext(header: w.header, reference: reference)
                let truth = TruthTrack(walk: w, frame: frame, maxGap: 30)
                var scans: [Double: WiFiScan] = [:]
                for e in w.events {
                    if case .wifi(let s) = e.payload { scans[e.time] = s }
                    for r in pipeline.process(e, context: context) {
                        guard case .fix(let f) = r, let p = truth.position(at: f.time), let scan = scans[e.time] else { continue }
                        let rssMin = stageOptions[f.source == .fingerprint ? "fingerprint" : "wcl"].flatMap { try? $0.double("rss_min", default: -90) } ?? -90
                        let feats = RadioUncertaintyModel.features(position: f.position, scan: scan, time: f.time, reference: reference,
                                                                   rssMin: rssMin, maxAge: maxAge)
                        out[f.source, default: []].append(.init(residual: f.position - p, covariance: f.covariance, features: feats,
                                                                 group: fold, walk: walkOffset + wi, time: f.time))
                    }
                }
            }
        }
        return out
    }

    /// Writes (replaces) the map in the SQLite file at `path`, in one transaction.
    public func write(_ o: Output, to path: String) throws {
        let db = try RadioMapDatabase(path: path)
        try db.replace(with: o.accessPoints, bleBeacons: o.bleBeacons, fingerprints: o.fingerprints.isEmpty ? nil : o.fingerprints,
                       uncertainty: o.uncertainty, stepLength: o.stepLength, frame: o.frame)
    }

    // MARK: Spatial blocking (shared with `RadioWalkEvaluation`)

    /// The walk's truth path: its phone's truth samples in time order, in the walk's own frame.
    public static func truthPath(_ w: RecordedWalk) -> [SIMD2<Double>] {
        TruthTrack(walk: w, frame: LocalFrame(origin: w.header.origin)).positions
    }

    /// Distance from p to a polyline (a single point when it has one vertex); ∞ for no vertex.
    public static func distance(_ p: SIMD2<Double>, to path: [SIMD2<Double>]) -> Double {
        guard let first = path.first else { return .infinity }
        var best = ((p - first) * (p - first)).sum()
        for (a, b) in zip(path, path.dropFirst()) {
            let d = b - a, l2 = (d * d).sum()
            let t = l2 > 0 ? min(1, max(0, ((p - a) * d).sum() / l2)) : 0
            let q = p - (a + t * d)
            best = min(best, (q * q).sum())
        }
        return best.squareRoot()
    }

    /// Removes the WiFi scans of `w` taken within `radius` m of any of `paths` (position = the
    /// walk's truth interpolated at the scan time, waypoints up to 30 s apart; scans without
    /// truth are kept: no builder uses them), and its Bluetooth scans by the same rule (the
    /// beacon map must not see the blocked area either). `removed` and `kept` count WiFi scans.
    /// Paths are in the walks' common frame.
    public static func block(_ w: RecordedWalk, paths: [[SIMD2<Double>]], radius: Double) -> (walk: RecordedWalk, removed: Int, kept: Int) {
        let truth = TruthTrack(walk: w, frame: LocalFrame(origin: w.header.origin), maxGap: 30)
        var out = w
        var removed = 0, kept = 0
        out.events = w.events.filter { e in
            let wifi: Bool
            switch e.payload {
            case .wifi: wifi = true
            case .ble: wifi = false
            default: return true
            }
            if let p = truth.position(at: e.time), paths.contains(where: { distance(p, to: $0) <= radius }) {
                if wifi { removed += 1 }
                return false
            }
            if wifi { kept += 1 }
            return true
        }
        return (out, removed, kept)
    }
}
