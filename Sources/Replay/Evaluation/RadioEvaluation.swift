import Foundation
import Positioning
import Interop
import Survey
import TraceIO
import Scoring

/// Error statistics of one estimator on one evaluation (m; percentiles Hyndman–Fan type 7).
public struct ErrorSummary: Codable, Sendable, Equatable {
    public var count: Int
    public var mean_m: Double?
    public var median_m: Double?
    public var p75_m: Double?
    public var p95_m: Double?
    public var rmse_m: Double?

    /// The replay scorer's statistics (`posfuse replay`'s figures, the same quantile rule).
    public init(_ st: ErrorStatistics) {
        count = st.count; mean_m = st.mean; median_m = st.median; p75_m = st.p75; p95_m = st.p95; rmse_m = st.rmse
    }

    public init(_ e: [Double]) {
        count = e.count
        mean_m = RadioStats.mean(e)
        median_m = RadioStats.median(e)
        p75_m = RadioStats.quantile(e, 0.75)
        p95_m = RadioStats.quantile(e, 0.95)
        rmse_m = e.isEmpty ? nil : (e.reduce(0) { $0 + $1 * $1 } / Double(e.count)).squareRoot()
    }
}

/// Which kind of recordings an evaluation input holds.
public enum RadioDataset: String, Codable, Sendable, CaseIterable {
    /// OpenCellID measurement CSV walks with LTE TA (lte-ta-walks).
    case lteWalks = "lte-walks"
    /// Microsoft Indoor Location Competition path files (ms-indoor).
    case msIndoor = "ms-indoor"
    /// UJIIndoorLoc fingerprint CSV.
    case ujiIndoorLoc = "ujiindoorloc"
    /// posfuse trace files (`.jsonl`).
    case traces

    /// Guesses the dataset from the first bytes of the first file.
    public static func detect(_ urls: [URL]) -> RadioDataset? {
        guard let u = urls.first, let h = try? FileHandle(forReadingFrom: u) else { return nil }
        defer { try? h.close() }
        let head = String(decoding: h.readData(ofLength: 4096), as: UTF8.self)
        if u.pathExtension == "jsonl" { return .traces }
        if head.hasPrefix("mcc,mnc,") { return .lteWalks }
        if head.hasPrefix("WAP001") { return .ujiIndoorLoc }
        if head.contains("TYPE_") || head.hasPrefix("#\tSiteID") || head.hasPrefix("#") { return .msIndoor }
        return nil
    }

    /// File extensions of the dataset's recordings (when a folder is given).
    public var extensions: Set<String> {
        switch self {
        case .lteWalks, .ujiIndoorLoc: return ["csv"]
        case .msIndoor: return ["txt"]
        case .traces: return ["jsonl"]
        }
    }
}

/// Loading recordings as `RecordedWalk`s through the interop importers (one walk per file).
public enum RadioWalkLoader {
    public static func load(_ urls: [URL], dataset: RadioDataset) throws -> [RecordedWalk] {
        try urls.map { u in
            switch dataset {
            case .lteWalks:
                let t = try importTrace(format: .opencellidMeasurements, urls: [u], options: ImportOptions())
                return RecordedWalk(name: u.deletingPathExtension().lastPathComponent, header: t.header, events: t.events)
            case .msIndoor:
                let t = try importTrace(format: .msIndoor, urls: [u], options: ImportOptions())
                return RecordedWalk(name: u.deletingPathExtension().lastPathComponent, header: t.header, events: t.events)
            case .traces:
                return try RecordedWalk.read(u)
            case .ujiIndoorLoc:
                throw ImportDataError(file: u.path, line: 0, reason: "UJIIndoorLoc rows are not walks")
            }
        }
    }
}

// MARK: - Cell (LTE TA walks)

/// Evaluation of `cell` and `cell-ta` on test walks with a tower database estimated from the
/// training walks (`CellSiteBuilder`), against the phone's own GNSS (the walks' `gt`); and of
/// the same two from a coverage map of the training walks (`CellCoverageMap`: where phones
/// were when they reported the cell and TA) instead of the tower positions.
/// How many epochs a source located, and why the others were not (`EstimationFailure.code`):
/// the share-located report of a run (stderr and `--json`), with `--min-located` failing a run
/// that locates too little. A run that locates almost nothing must say so, not print a
/// one-sample median.
public struct LocatedShare: Codable, Sendable, Equatable {
    public var epochs = 0
    public var located = 0
    /// Epochs not located, per failure code.
    public var notLocated: [String: Int] = [:]
    public init() {}

    public var share: Double? { epochs > 0 ? Double(located) / Double(epochs) : nil }

    public mutating func record<T>(_ r: Result<T, EstimationFailure>) {
        epochs += 1
        switch r {
        case .success: located += 1
        case .failure(let f): notLocated[f.code, default: 0] += 1
        }
    }
    public mutating func merge(_ o: LocatedShare) {
        epochs += o.epochs; located += o.located
        for (k, v) in o.notLocated { notLocated[k, default: 0] += v }
    }
    /// `located 1568 of 1734 (90.4 %); not located: unknown_anchor 120, missing_input 46`.
    public var summary: String {
        var s = "located \(located) of \(epochs)" + (share.map { String(format: " (%.1f %%)", 100 * $0) } ?? "")
        if !notLocated.isEmpty {
            s += "; not located: " + notLocated.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
        return s
    }
    /// Below this share a run "locates almost nothing" and says so even without `--min-located`.
    public static let warnBelow = 0.5

    enum CodingKeys: String, CodingKey { case epochs, located, share, notLocated = "not_located" }
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(epochs, forKey: .epochs); try c.encode(located, forKey: .located)
        try c.encodeIfPresent(share, forKey: .share); try c.encode(notLocated, forKey: .notLocated)
    }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        epochs = try c.decode(Int.self, forKey: .epochs); located = try c.decode(Int.self, forKey: .located)
        notLocated = try c.decode([String: Int].self, forKey: .notLocated)
    }
}

public struct CellEvaluation: Sendable {
    public var builder: CellSiteBuilder
    /// Calibrate β on the training walks against the estimated sites (β̂ = median(d/Δ − TA)).
    public var calibrateOffset: Bool

    public init(builder: CellSiteBuilder = CellSiteBuilder(), calibrateOffset: Bool = true) {
        self.builder = builder; self.calibrateOffset = calibrateOffset
    }

    public struct Report: Codable, Sendable {
        public var trainWalks: [String]
        public var testWalks: [String]
        public var sitesEstimated: Int
        public var sitesFailed: Int
        public var offsetBeta: Double
        /// Errors on epochs where both estimators produced a fix.
        public var cell: ErrorSummary
        public var cellTA: ErrorSummary
        /// Std of (d̂ − d) with d the horizontal distance from the truth to the estimated site, m,
        /// and the quantisation floor Δ/√12.
        public var radialStd_m: Double?
        public var radialBias_m: Double?
        public var quantizationSigma_m: Double
        public var epochsWithoutSite: Int
        public var epochsWithoutTA: Int
        /// The same reports located from the training walks' coverage map (`CellCoverageMap`).
        public var coverage: CoverageReport
        enum CodingKeys: String, CodingKey {
            case trainWalks = "train_walks", testWalks = "test_walks", sitesEstimated = "sites_estimated"
            case sitesFailed = "sites_failed", offsetBeta = "offset_beta", cell, cellTA = "cell-ta"
            case radialStd_m = "radial_std_m", radialBias_m = "radial_bias_m"
            case quantizationSigma_m = "quantization_sigma_m", epochsWithoutSite = "epochs_without_site"
            case epochsWithoutTA = "epochs_without_ta", coverage
        }
    }

    public struct CoverageReport: Codable, Sendable {
        /// Every serving-cell epoch the coverage map locates (cell: the cell's area; cell-ta,
        /// for epochs with a TA: the (cell, TA) area, else the cell's).
        public var cell: ErrorSummary
        public var cellTA: ErrorSummary
        public var cellInside95: Double?
        public var cellTAInside95: Double?
        public var cellANEES: Double?
        public var cellTAANEES: Double?
        /// Share of the cell-ta fixes from a (cell, TA) area.
        public var taAreaShare: Double?
        /// On the epochs the tower-based pair is scored on (`cell`, `cell-ta` above).
        public var sameEpochsCell: ErrorSummary
        public var sameEpochsCellTA: ErrorSummary
        public var epochsWithoutCoverage: Int
        /// Serving-cell epochs located by the coverage map, and why not (`cell`: every serving
        /// epoch; `cell-ta`: those with a TA).
        public var locatedCell: LocatedShare
        public var locatedCellTA: LocatedShare
        enum CodingKeys: String, CodingKey {
            case cell, cellTA = "cell-ta", cellInside95 = "cell_inside95", cellTAInside95 = "cell-ta_inside95"
            case cellANEES = "cell_anees", cellTAANEES = "cell-ta_anees", taAreaShare = "ta_area_share"
            case sameEpochsCell = "same_epochs_cell", sameEpochsCellTA = "same_epochs_cell-ta"
            case epochsWithoutCoverage = "epochs_without_coverage", locatedCell = "located_cell", locatedCellTA = "located_cell-ta"
        }
    }

    /// Errors and radial residuals, for pooling across folds.
    public struct Raw: Sendable {
        public var cell: [Double] = []
        public var cellTA: [Double] = []
        public var radial: [Double] = []
        public var noSite = 0
        public var noTA = 0
        public var sitesOK = 0
        public var sitesFailed = 0
        public var beta = 0.0
        public var step = TimingAdvanceModel(unit: .lte16Ts).stepLength
        /// Coverage-map fixes: errors and NEES on every located epoch, errors on the tower pair's epochs.
        public var coverageCell: [Double] = []
        public var coverageCellTA: [Double] = []
        public var coverageCellNEES: [Double] = []
        public var coverageCellTANEES: [Double] = []
        public var coverageTAAreas = 0
        public var coverageSameCell: [Double] = []
        public var coverageSameCellTA: [Double] = []
        public var noCoverage = 0
        public var locatedCell = LocatedShare(), locatedCellTA = LocatedShare()
        public init() {}

        /// Pools another fold (β: the caller's choice; step: the other's).
        public mutating func merge(_ r: Raw) {
            cell += r.cell; cellTA += r.cellTA; radial += r.radial
            noSite += r.noSite; noTA += r.noTA; sitesOK += r.sitesOK; sitesFailed += r.sitesFailed; step = r.step
            coverageCell += r.coverageCell; coverageCellTA += r.coverageCellTA
            coverageCellNEES += r.coverageCellNEES; coverageCellTANEES += r.coverageCellTANEES
            coverageTAAreas += r.coverageTAAreas; coverageSameCell += r.coverageSameCell
            coverageSameCellTA += r.coverageSameCellTA; noCoverage += r.noCoverage
            locatedCell.merge(r.locatedCell); locatedCellTA.merge(r.locatedCellTA)
        }
    }

    /// How the coverage map is used: the `cell` and `cell-ta` stages' rule and defaults.
    public var coverageUse = CellCoverageUse()

    public func run(train: [RecordedWalk], test: [RecordedWalk]) -> Raw {
        var raw = Raw()
        guard let origin = train.first?.header.origin else { return raw }
        let frame = LocalFrame(origin: origin)
        var b = builder
        let built = b.build(train, frame: frame)
        raw.sitesOK = built.sites.filter { if case .success = $0.result { return true } else { return false } }.count
        raw.sitesFailed = built.sites.count - raw.sitesOK
        var cells: [CellID: CellSite] = [:]
        for r in built.records { cells[r.cell] = r.site(frame: frame) }
        let lookup = CellLookup(cells)
        // β calibration on the training samples against the estimated sites.
        if calibrateOffset {
            let samples = b.samples(train, frame: frame)
            let pairs: [(ta: Int, trueRange: Double)] = samples.compactMap { s in
                guard let site = lookup.site(for: s.cell) else { return nil }
                let d = s.position - SIMD2(site.position.x, site.position.y)
                return (s.ta, (d * d).sum().squareRoot())
            }
            if let beta = TimingAdvanceModel(unit: .lte16Ts).calibrateOffset(pairs) { raw.beta = beta }
            b.offset = raw.beta
        }
        let cid = CellIDEstimator()
        let cta = CellTAEstimator(offset: raw.beta, sigmaFraction: b.sigmaFraction)
        let coverage = CellCoverageMap(walks: train, frame: frame)
        for w in test {
            let truth = TruthTrack(walk: w, frame: frame, gnssFallback: true)
            for e in w.events {
                guard case .cell(let o) = e.payload, o.serving, let p = truth.position(at: e.time) else { continue }
                // The stages' rule: cell-ta only for a report with a TA.
                let r1 = coverageUse.result(o, source: .cell, time: e.time, subject: w.name, map: coverage)
                let r2 = coverageUse.result(o, source: .cellTA, time: e.time, subject: w.name, map: coverage)
                if let r1 { raw.locatedCell.record(r1) }
                if let r2 { raw.locatedCellTA.record(r2) }
                let c1 = try? r1?.get(), c2 = try? r2?.get()
                if let c1 {
                    raw.coverageCell.append(norm(c1.position - p))
                    if let n = c1.covariance.mahalanobis2(c1.position - p) { raw.coverageCellNEES.append(n) }
                } else {
                    raw.noCoverage += 1
                }
                if let c2 {
                    raw.coverageCellTA.append(norm(c2.position - p))
                    if let n = c2.covariance.mahalanobis2(c2.position - p) { raw.coverageCellTANEES.append(n) }
                    if coverage.area(for: o, useTA: true, minCount: coverageUse.minCount)?.usedTA == true { raw.coverageTAAreas += 1 }
                }
                guard let site = lookup.site(for: o.cell) else { raw.noSite += 1; continue }
                guard case .success(let f1) = cid.estimate(o, site: site, time: e.time) else { continue }
                guard case .success(let f2) = cta.estimate(o, site: site, time: e.time) else { raw.noTA += 1; continue }
                raw.cell.append(norm(f1.position - p)); raw.cellTA.append(norm(f2.position - p))
                if let c1, let c2 { raw.coverageSameCell.append(norm(c1.position - p)); raw.coverageSameCellTA.append(norm(c2.position - p)) }
                if case .success(let m) = cta.model(for: o), let ta = o.timingAdvance {
                    raw.radial.append(m.range(ta) - norm(SIMD2(site.position.x, site.position.y) - p))
                    raw.step = m.stepLength
                }
            }
        }
        return raw
    }

    public func report(_ raw: Raw, train: [String], test: [String]) -> Report {
        Report(trainWalks: train, testWalks: test, sitesEstimated: raw.sitesOK, sitesFailed: raw.sitesFailed,
               offsetBeta: raw.beta, cell: ErrorSummary(raw.cell), cellTA: ErrorSummary(raw.cellTA),
               radialStd_m: RadioStats.standardDeviation(raw.radial), radialBias_m: RadioStats.mean(raw.radial),
               quantizationSigma_m: raw.step / 12.0.squareRoot(), epochsWithoutSite: raw.noSite, epochsWithoutTA: raw.noTA,
               coverage: CoverageReport(
                cell: ErrorSummary(raw.coverageCell), cellTA: ErrorSummary(raw.coverageCellTA),
                cellInside95: RadioStats.inside95(raw.coverageCellNEES), cellTAInside95: RadioStats.inside95(raw.coverageCellTANEES),
                cellANEES: RadioStats.mean(raw.coverageCellNEES), cellTAANEES: RadioStats.mean(raw.coverageCellTANEES),
                taAreaShare: raw.coverageCellTA.isEmpty ? nil : Double(raw.coverageTAAreas) / Double(raw.coverageCellTA.count),
                sameEpochsCell: ErrorSummary(raw.coverageSameCell), sameEpochsCellTA: ErrorSummary(raw.coverageSameCellTA),
                epochsWithoutCoverage: raw.noCoverage, locatedCell: raw.locatedCell, locatedCellTA: raw.locatedCellTA))
    }
}

@inline(__always) func norm(_ v: SIMD2<Double>) -> Double { (v * v).sum().squareRoot() }

// MARK: - WLAN (walks with an AP map learned from other walks)

/// Evaluation of `wcl`, `hapel`, `rss` and `fingerprint` on test walks with a radio map (AP
/// positions) and a fingerprint map built from training walks.
/// Scored (a) at ground-truth waypoints: the fix nearest in time within `waypointWindow` s;
/// (b) at every fix against truth interpolated between waypoints.
public struct WLANEvaluation: Sendable {
    public var mapBuilder: RadioMapBuilder
    public var wcl: WCLEstimator
    public var hapelVariant: HAPELEstimator.Variant
    public var waypointWindow: Double
    /// Calibrate κ, σ0 on the training walks (WCL run on them with their own map).
    public var calibrateCovariance: Bool
    /// The fingerprint estimator (its thresholds and `maxAge` are set from the map and `mapBuilder`).
    public var fingerprint = FingerprintEstimator()
    /// Fit the fingerprint σ on the training walks (`FingerprintCalibration`, each training walk
    /// matched against the map of the other training walks) instead of `fingerprint.sigma`.
    public var calibrateFingerprintSigma = true
    /// The PDR + WiFi filter (`ekf` and its `smoother`); its only position input is `wcl`.
    public var fusion: FusionStage.Settings = {
        var s = FusionStage.Settings(kind: .ekf)
        s.inputs = [.wcl]
        return s
    }()

    public init(mapBuilder: RadioMapBuilder = RadioMapBuilder(), wcl: WCLEstimator = WCLEstimator(),
                hapelVariant: HAPELEstimator.Variant = .v2, waypointWindow: Double = 2, calibrateCovariance: Bool = false) {
        self.mapBuilder = mapBuilder; self.wcl = wcl; self.hapelVariant = hapelVariant
        self.waypointWindow = waypointWindow; self.calibrateCovariance = calibrateCovariance
    }

    public struct Raw: Sendable {
        public var wclWaypoint: [Double] = []
        public var hapelWaypoint: [Double] = []
        public var rssWaypoint: [Double] = []
        /// `fingerprint` against the map of the training walks' scans (`FingerprintMapBuilder`).
        public var fingerprintWaypoint: [Double] = []
        public var fingerprintNEES: [Double] = []
        public var fingerprintPoints = 0
        /// σ fitted per fold on the training walks, dB.
        public var fingerprintSigmas: [Double] = []
        /// PDR + WiFi fusion (`ekf` over `wcl` fixes, and its RTS `smoother`) at the waypoints.
        public var ekfWaypoint: [Double] = []
        public var smootherWaypoint: [Double] = []
        public var wclAll: [Double] = []
        public var hapelAll: [Double] = []
        public var rssAll: [Double] = []
        public var rssNEES: [Double] = []
        public var wclNIS: [Double] = []
        /// Waypoints where `wcl`, `ekf` and `smoother` all have a fix: their errors, paired.
        public var sameWCL: [Double] = [], sameEKF: [Double] = [], sameSmoother: [Double] = []
        public var aps = 0
        public var calibration: [WCLCalibration.Sample] = []
        public init() {}

        /// Pools another fold's samples into these (leave-one-walk-out).
        public mutating func merge(_ r: Raw) {
            wclWaypoint += r.wclWaypoint; hapelWaypoint += r.hapelWaypoint; rssWaypoint += r.rssWaypoint
            fingerprintWaypoint += r.fingerprintWaypoint; fingerprintNEES += r.fingerprintNEES
            fingerprintPoints = max(fingerprintPoints, r.fingerprintPoints); fingerprintSigmas += r.fingerprintSigmas
            ekfWaypoint += r.ekfWaypoint; smootherWaypoint += r.smootherWaypoint
            wclAll += r.wclAll; hapelAll += r.hapelAll; rssAll += r.rssAll; rssNEES += r.rssNEES; wclNIS += r.wclNIS
            sameWCL += r.sameWCL; sameEKF += r.sameEKF; sameSmoother += r.sameSmoother
            aps = max(aps, r.aps); calibration += r.calibration
        }
    }

    /// Fusion and WiFi alone on the same waypoints (each source's own waypoints differ: a
    /// waypoint counts for a source only with a fix of it within the window, and the filters
    /// emit at every step while WCL only at scans).
    public struct SameWaypoints: Codable, Sendable {
        public var wcl: ErrorSummary, ekf: ErrorSummary, smoother: ErrorSummary
    }

    public struct Report: Codable, Sendable {
        public var trainWalks: Int
        public var testWalks: Int
        public var apsInMap: Int
        public var wclAtWaypoints: ErrorSummary
        public var hapelAtWaypoints: ErrorSummary
        /// `rss` (posterior under the learned map's path-loss model, docs/radio.md).
        public var rssAtWaypoints: ErrorSummary
        public var rssInside95: Double?
        /// `fingerprint` against the training walks' scans binned into 2 m cells.
        public var fingerprintAtWaypoints: ErrorSummary
        public var fingerprintInside95: Double?
        public var fingerprintPoints: Int
        /// Median over folds of the σ fitted on the training walks (nil when not calibrated).
        public var fingerprintSigma: Double?
        public var ekfAtWaypoints: ErrorSummary
        public var smootherAtWaypoints: ErrorSummary
        public var fusionAndWCLAtSameWaypoints: SameWaypoints
        public var wclAllFixes: ErrorSummary
        public var hapelAllFixes: ErrorSummary
        public var wclMedianNIS: Double?
        public var wclInside95: Double?
        /// κ, σ0 fitted on these (out-of-fold) errors, for use as defaults on other data.
        public var calibration: WCLCalibrationReport?
        enum CodingKeys: String, CodingKey {
            case trainWalks = "train_walks", testWalks = "test_walks", apsInMap = "aps_in_map"
            case wclAtWaypoints = "wcl_at_waypoints", hapelAtWaypoints = "hapel_at_waypoints"
            case rssAtWaypoints = "rss_at_waypoints", rssInside95 = "rss_inside95"
            case fingerprintAtWaypoints = "fingerprint_at_waypoints", fingerprintInside95 = "fingerprint_inside95"
            case fingerprintPoints = "fingerprint_points", fingerprintSigma = "fingerprint_sigma_db"
            case ekfAtWaypoints = "ekf_at_waypoints", smootherAtWaypoints = "smoother_at_waypoints"
            case fusionAndWCLAtSameWaypoints = "same_waypoints"
            case wclAllFixes = "wcl_all_fixes", hapelAllFixes = "hapel_all_fixes"
            case wclMedianNIS = "wcl_median_nis", wclInside95 = "wcl_inside95", calibration
        }
    }

    public struct WCLCalibrationReport: Codable, Sendable {
        public var kappa: Double, sigma0_m: Double, median_nis: Double, inside95: Double, samples: Int
    }

    /// Fixes of `wcl`, `hapel`, and of PDR + WiFi fusion — the `ekf` stage and its RTS
    /// `smoother` with `wcl` fixes as their only position input (default fusion options) — on
    /// one walk with an AP map.
    func fixes(_ w: RecordedWalk, map: [String: AccessPoint], fingerprints: FingerprintMap, fingerprint fp: FingerprintEstimator,
               wcl: WCLEstimator) -> [Fix] {
        let ctx = PipelineContext(header: w.header, reference: ReferenceData(accessPoints: map, fingerprints: fingerprints))
        let pipe = Pipeline(stages: [WCLStage(estimator: wcl), FingerprintStage(estimator: fp),
                                     HAPELStage(estimator: HAPELEstimator(wcl: wcl, variant: hapelVariant,
                                                                          rssThreshold: w.header.rssThreshold ?? -90)),
                                     RSSStage(estimator: RSSLaterationEstimator(wcl: wcl)),
                                     FusionStage(settings: fusion), SmootherStage(settings: fusion)])
        var out: [Fix] = []
        for e in w.events {
            for r in pipe.process(e, context: ctx) { if case .fix(let f) = r { out.append(f) } }
        }
        for r in pipe.finish(context: ctx) { if case .fix(let f) = r { out.append(f) } }
        return out
    }

    public func run(train: [RecordedWalk], test: [RecordedWalk]) -> Raw {
        var raw = Raw()
        guard let origin = (train.first ?? test.first)?.header.origin else { return raw }
        let frame = LocalFrame(origin: origin)
        let est = mapBuilder.build(train, frame: frame)
        let map = Dictionary(est.map { ($0.ap.bssid, $0.ap) }, uniquingKeysWith: { a, _ in a })
        raw.aps = map.count
        let fpBuilder = FingerprintMapBuilder(maxAge: mapBuilder.maxAge)
        let walkCells = train.map { fpBuilder.cells($0, frame: frame) }
        let fingerprints = fpBuilder.build(merging: walkCells)
        raw.fingerprintPoints = fingerprints.points.count
        var fp = fingerprint
        fp.phoneThreshold = fingerprints.threshold; fp.maxAge = mapBuilder.maxAge
        if calibrateFingerprintSigma && train.count >= 2 {
            // Each training walk against the map of the other training walks (nested leave-one-out).
            var samples: [FingerprintCalibration.Sample] = []
            for (k, w) in train.enumerated() {
                let inner = fpBuilder.build(merging: walkCells.enumerated().filter { $0.offset != k }.map(\.element))
                var e = fp
                e.phoneThreshold = inner.threshold
                samples += FingerprintCalibrationFit.samples(w, frame: frame, map: inner, estimator: e)
            }
            if let r = FingerprintCalibration.fit(samples), r.count > 0 { fp.sigma = r.sigma; raw.fingerprintSigmas.append(r.sigma) }
        }
        raw.calibration += calibrationSamples(test, map: map, frame: frame)
        for w in test {
            let truth = TruthTrack(walk: w, frame: frame)
            let fx = fixes(w, map: map, fingerprints: fingerprints, fingerprint: fp, wcl: wcl)
            for f in fx {
                guard let p = truth.position(at: f.time) else { continue }
                let e = norm(f.position - p)
                if f.source == .wcl {
                    raw.wclAll.append(e)
                    if let n = f.covariance.mahalanobis2(f.position - p) { raw.wclNIS.append(n) }
                } else if f.source == .fingerprint {
                    if let n = f.covariance.mahalanobis2(f.position - p) { raw.fingerprintNEES.append(n) }
                } else if f.source == .hapel { raw.hapelAll.append(e) } else if f.source == .rss {
                    raw.rssAll.append(e)
                    if let n = f.covariance.mahalanobis2(f.position - p) { raw.rssNEES.append(n) }
                }
            }
            // Waypoints: nearest fix in time per source.
            for (t, truthPosition) in zip(truth.times, truth.positions) {
                var here: [Source: Double] = [:]
                for src in [Source.wcl, .hapel, .rss, .fingerprint, .ekf, .smoother] {
                    let c = fx.filter { $0.source == src && abs($0.time - t) <= waypointWindow }
                    guard let n = c.min(by: { abs($0.time - t) < abs($1.time - t) }) else { continue }
                    let e = norm(n.position - truthPosition)
                    here[src] = e
                    switch src {
                    case .wcl: raw.wclWaypoint.append(e)
                    case .hapel: raw.hapelWaypoint.append(e)
                    case .rss: raw.rssWaypoint.append(e)
                    case .fingerprint: raw.fingerprintWaypoint.append(e)
                    case .ekf: raw.ekfWaypoint.append(e)
                    default: raw.smootherWaypoint.append(e)
                    }
                }
                if let w = here[.wcl], let k = here[.ekf], let s = here[.smoother] {
                    raw.sameWCL.append(w); raw.sameEKF.append(k); raw.sameSmoother.append(s)
                }
            }
        }
        return raw
    }

    /// Calibration samples (estimate, spread, truth) of WCL on walks with a map.
    public func calibrationSamples(_ walks: [RecordedWalk], map: [String: AccessPoint], frame: LocalFrame) -> [WCLCalibration.Sample] {
        var out: [WCLCalibration.Sample] = []
        for w in walks {
            let truth = TruthTrack(walk: w, frame: frame)
            for e in w.events {
                guard case .wifi(let s) = e.payload, let p = truth.position(at: e.time) else { continue }
                let a = wcl.selectAnchors(s, time: e.time, map: map)
                guard let c = wcl.centroid(a) else { continue }
                out.append(.init(estimate: c.position, spread: c.spread, anchorCount: a.count, truth: p))
            }
        }
        return out
    }

    public func report(_ raw: Raw, train: Int, test: Int) -> Report {
        Report(trainWalks: train, testWalks: test, apsInMap: raw.aps, wclAtWaypoints: ErrorSummary(raw.wclWaypoint),
               hapelAtWaypoints: ErrorSummary(raw.hapelWaypoint), rssAtWaypoints: ErrorSummary(raw.rssWaypoint),
               rssInside95: RadioStats.inside95(raw.rssNEES),
               fingerprintAtWaypoints: ErrorSummary(raw.fingerprintWaypoint),
               fingerprintInside95: RadioStats.inside95(raw.fingerprintNEES),
               fingerprintPoints: raw.fingerprintPoints, fingerprintSigma: RadioStats.median(raw.fingerprintSigmas),
               ekfAtWaypoints: ErrorSummary(raw.ekfWaypoint),
               smootherAtWaypoints: ErrorSummary(raw.smootherWaypoint),
               fusionAndWCLAtSameWaypoints: SameWaypoints(wcl: ErrorSummary(raw.sameWCL), ekf: ErrorSummary(raw.sameEKF),
                                                          smoother: ErrorSummary(raw.sameSmoother)),
               wclAllFixes: ErrorSummary(raw.wclAll),
               hapelAllFixes: ErrorSummary(raw.hapelAll), wclMedianNIS: RadioStats.median(raw.wclNIS),
               wclInside95: RadioStats.inside95(raw.wclNIS),
               calibration: WCLCalibration.calibrate(raw.calibration, estimator: wcl).map {
                   WCLCalibrationReport(kappa: $0.kappa, sigma0_m: $0.sigma0, median_nis: $0.medianNIS, inside95: $0.inside95, samples: $0.count)
               })
    }
}

// MARK: - UJIIndoorLoc

/// Minimal UJIIndoorLoc reader (the interop importer is not on main yet): `WAP001..WAP520`
/// RSS dBm with 100 = not heard, `LONGITUDE`/`LATITUDE` in EPSG:3857 metres, `FLOOR`,
/// `BUILDINGID`. Positions are used as planar metres (Web-Mercator units, ≈ 1.30 ground m at
/// 40° N, as the literature reports them).
public enum UJIIndoorLocReader {
    public struct Row: Sendable {
        public var position: SIMD2<Double>
        public var floor: Int
        public var building: Int
        /// (WAP column name, RSS dBm) of heard APs.
        public var heard: [(String, Double)]
        /// USERID, PHONEID, TIMESTAMP (Unix s); 0 when the file lacks the column.
        public var user = 0
        public var phone = 0
        public var timestamp = 0
        public init(position: SIMD2<Double>, floor: Int, building: Int, heard: [(String, Double)]) {
            self.position = position; self.floor = floor; self.building = building; self.heard = heard
        }
    }

    public static func read(_ url: URL) throws -> [Row] {
        let text = try InputFile.text(url)
        var lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" })
        guard !lines.isEmpty else { throw ImportDataError(file: url.path, line: 1, reason: "empty file") }
        let header = lines.removeFirst().split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
        var idx: [String: Int] = [:]
        for (i, h) in header.enumerated() { idx[h] = i }
        guard let lon = idx["LONGITUDE"], let lat = idx["LATITUDE"], let fl = idx["FLOOR"], let bi = idx["BUILDINGID"] else {
            throw ImportDataError(file: url.path, line: 1, reason: "header lacks LONGITUDE/LATITUDE/FLOOR/BUILDINGID")
        }
        let waps = header.enumerated().filter { $0.element.hasPrefix("WAP") }
        var rows: [Row] = []
        rows.reserveCapacity(lines.count)
        for (n, l) in lines.enumerated() {
            let f = l.split(separator: ",", omittingEmptySubsequences: false)
            guard f.count >= header.count, let x = Double(f[lon]), let y = Double(f[lat]),
                  let floor = Int(f[fl]), let b = Int(f[bi]) else {
                throw ImportDataError(file: url.path, line: n + 2, reason: "malformed row")
            }
            var heard: [(String, Double)] = []
            for (i, name) in waps { if let v = Double(f[i]), v != 100, v < 0 { heard.append((name, v)) } }
            var row = Row(position: SIMD2(x, y), floor: floor, building: b, heard: heard)
            func int(_ c: String) throws -> Int {
                guard let i = idx[c] else { return 0 }
                guard let v = Int(f[i]) else { throw ImportDataError(file: url.path, line: n + 2, reason: "\(c) is not an integer") }
                return v
            }
            row.user = try int("USERID"); row.phone = try int("PHONEID"); row.timestamp = try int("TIMESTAMP")
            rows.append(row)
        }
        return rows
    }

    /// AP positions from `train` rows (`APMapEstimator`, linear-mW centroid + model), WCL on
    /// `test` rows; returns errors (Mercator m) and the floor hit rate of the fix's floor vote.
    public static func evaluate(train: [Row], test: [Row], wcl: WCLEstimator,
                                estimator: APMapEstimator = APMapEstimator()) -> (errors: [Double], floorHits: Double, aps: Int) {
        var samples: [String: [APMapEstimator.Sample]] = [:]
        for r in train { for (w, v) in r.heard { samples[w, default: []].append(.init(position: r.position, rss: v, floor: r.floor)) } }
        var map: [String: AccessPoint] = [:]
        for (w, s) in samples {
            // WAP names stand in for MACs: key them as a fake universally administered MAC.
            if let e = estimator.estimate(bssid: "00:00:00:00:" + w, samples: s) { map[w.lowercased()] = AccessPoint(bssid: w.lowercased(), position: e.ap.position, floor: e.ap.floor, p0: e.ap.p0, pathLossExponent: e.ap.pathLossExponent) }
        }
        var errs: [Double] = [], hits = 0, n = 0
        for r in test {
            let scan = WiFiScan(accessPoints: r.heard.map { WiFiObservation(bssid: $0.0.lowercased(), rss: $0.1) })
            guard case .success(let f) = wcl.estimate(scan, time: 0, map: map) else { continue }
            errs.append(norm(f.position - r.position))
            if let fl = f.floor { n += 1; if fl == r.floor { hits += 1 } }
        }
        return (errs, n == 0 ? 0 : Double(hits) / Double(n), map.count)
    }
}

extension UJIIndoorLocReader {
    /// Fingerprinting (`FingerprintEstimator`) on UJIIndoorLoc: the map's points are the `train`
    /// rows averaged per reference point (building, floor, position; an AP enters a point when
    /// heard in at least half of its rows, as a survey keeps it), the map and phone
    /// thresholds the weakest RSS in the data; each `test` row is matched against it. A point's
    /// floor is encoded as 100·building + floor so that the posterior's floor never mixes
    /// buildings. Returns errors (Mercator m), the floor hit rate and the number of points.
    public static func evaluateFingerprint(train: [Row], test: [Row], estimator base: FingerprintEstimator = FingerprintEstimator())
        -> (errors: [Double], floorHits: Double, points: Int) {
        struct Key: Hashable { var b: Int, f: Int, x: Double, y: Double }
        var cells: [Key: FingerprintMap.PointAccumulator] = [:]
        var order: [Key] = []
        var weakest = 0.0
        for r in train {
            let k = Key(b: r.building, f: r.floor, x: r.position.x, y: r.position.y)
            if cells[k] == nil { cells[k] = .init(); order.append(k) }
            var heard: [String: Double] = [:]
            for (w, v) in r.heard { heard[w.lowercased()] = v; weakest = min(weakest, v) }
            cells[k]!.add(heard, at: r.position)
        }
        for r in test { for (_, v) in r.heard { weakest = min(weakest, v) } }
        let points = order.map { cells[$0]!.point(floor: 100 * $0.b + $0.f) }
        let map = FingerprintMap(points: points, threshold: weakest)
        var est = base
        est.phoneThreshold = weakest
        var errs: [Double] = [], hits = 0
        for r in test {
            let scan = WiFiScan(accessPoints: r.heard.map { WiFiObservation(bssid: $0.0.lowercased(), rss: $0.1) })
            guard case .success(let f) = est.estimate(scan, time: 0, map: map) else { continue }
            errs.append(norm(f.position - r.position))
            if f.floor == 100 * r.building + r.floor { hits += 1 }
        }
        return (errs, errs.isEmpty ? 0 : Double(hits) / Double(errs.count), points.count)
    }
}

// MARK: - Scenario traces (own reference.json)

/// Runs the radio stages (`cell`, `cell-ta`, `wcl`, `rss`, `hapel`, `fingerprint`, configured through
/// `StageRegistry` options) over one trace with its own `reference.json`, and scores every fix
/// against the ground truth interpolated at the fix time (the subject's `gt` events). Also
/// the TA radial error z − ρ(p_true) of every LTE TA range measurement (for the Δ/√12 check).
/// A stand-in for `posfuse replay` on the radio sources, used by `posfuse evaluate radio
/// TRACE_FOLDER` and the acceptance tests.
public enum RadioScenarioCheck {
    public struct Result: Sendable {
        public var errors: [Source: [Double]] = [:]
        public var nis: [Source: [Double]] = [:]
        /// Radial errors of TA range measurements by TA unit.
        public var radial: [TimingAdvanceUnit: [Double]] = [:]
    }

    public static func run(_ path: String, options: [String: StageOptions] = [:]) throws -> Result {
        let loc = try TraceLocation.resolve(path)
        let reader = try TraceReader(url: loc.trace, mode: .lenient)
        let header = reader.header
        let reference = try ReferenceLoader.load(folder: loc.folder, frame: header.frame)
        var events: [TraceEvent] = []
        while let e = try reader.next() { events.append(e) }
        let walk = RecordedWalk(name: loc.name, header: header, events: events)
        var stages: [any PipelineStage] = []
        for name in ["cell", "cell-ta", "wcl", "rss", "hapel", "fingerprint"] {
            guard let entry = StageRegistry.entries.first(where: { $0.name == name }) else { continue }
            stages.append(try entry.make(options[name] ?? StageOptions(name: name)))
        }
        let pipe = Pipeline(stages: stages)
        let ctx = PipelineContext(header: header, reference: reference)
        var truths: [String: TruthTrack] = [:]
        func truth(_ s: String) -> TruthTrack {
            if let t = truths[s] { return t }
            let t = TruthTrack(walk: walk, frame: header.frame, subject: s, maxGap: 5)
            truths[s] = t
            return t
        }
        var out = Result()
        for e in events {
            for r in pipe.process(e, context: ctx) {
                switch r {
                case .fix(let f):
                    guard let p = truth(f.subject).position(at: f.time) else { continue }
                    out.errors[f.source, default: []].append(norm(f.position - p))
                    if let n = f.covariance.mahalanobis2(f.position - p) { out.nis[f.source, default: []].append(n) }
                case .measurement(let m, let subject):
                    guard let ta = m as? TimingAdvanceRangeMeasurement, case .cell(let o) = e.payload,
                          let p = truth(subject).position(at: e.time) else { continue }
                    let unit = o.timingAdvanceUnit ?? TimingAdvanceModel.defaultUnit(for: o.cell.rat) ?? .lte16Ts
                    out.radial[unit, default: []].append(ta.z[0] - ta.predict(p)[0])
                default: continue
                }
            }
        }
        return out
    }
}
