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

    public func run(train: [RecordedWalk], test: [RecordedWalk]) throws -> Raw {
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
        let coverage = CellCoverageMap(walks: train, frame: frame)
        // The one path (issue 19): each test walk is replayed by `Replayer` through the `cell` and
        // `cell-ta` stages (every other stage off) and scored by `Scorer`, twice: against the
        // training walks' coverage map alone (the stages' coverage rule, `coverageUse`), and
        // against the estimated towers alone (coverage off, β̂ and σ fraction as stage options).
        let sites = ReferenceData(cells: cells)
        let mapOnly = ReferenceData(cellCoverage: coverage)
        for w in test {
            let fromMap = try Self.replay(w, origin: origin, reference: mapOnly, options: [
                "coverage": .bool(coverageUse.enabled), "coverage_min_count": .number(Double(coverageUse.minCount))])
            let fromSites = try Self.replay(w, origin: origin, reference: sites, options: ["coverage": .bool(false)],
                                            cellTA: ["offset": .number(raw.beta), "sigma_fraction": .number(b.sigmaFraction)])
            for e in fromMap.epochs {
                // The stages' rule: cell-ta only for a report with a TA.
                if let r = e.cell { raw.locatedCell.record(r) }
                if e.obs.timingAdvance != nil, let r = e.cellTA { raw.locatedCellTA.record(r) }
                if let c = e.scored(.cell, fromMap) {
                    raw.coverageCell.append(c.error)
                    if let n = c.nees { raw.coverageCellNEES.append(n) }
                } else if e.hasTruth(fromMap) {
                    raw.noCoverage += 1
                }
                if e.obs.timingAdvance != nil, let c = e.scored(.cellTA, fromMap) {
                    raw.coverageCellTA.append(c.error)
                    if let n = c.nees { raw.coverageCellTANEES.append(n) }
                    if coverage.area(for: e.obs, useTA: true, minCount: coverageUse.minCount)?.usedTA == true { raw.coverageTAAreas += 1 }
                }
            }
            for (k, e) in fromSites.epochs.enumerated() {
                guard e.hasTruth(fromSites) else { continue }
                guard case .success? = e.cell else { raw.noSite += 1; continue }
                guard case .success? = e.cellTA else { raw.noTA += 1; continue }
                guard let f1 = e.scored(.cell, fromSites), let f2 = e.scored(.cellTA, fromSites) else { continue }
                raw.cell.append(f1.error); raw.cellTA.append(f2.error)
                let m = fromMap.epochs[k]
                if let c1 = m.scored(.cell, fromMap), let c2 = m.scored(.cellTA, fromMap) {
                    raw.coverageSameCell.append(c1.error); raw.coverageSameCellTA.append(c2.error)
                }
                if let ta = e.range, let p = f2.truth {
                    raw.radial.append(ta.z[0] - ta.predict(p)[0])
                    if case .success(let model) = CellTAEstimator(offset: raw.beta, sigmaFraction: b.sigmaFraction).model(for: e.obs) {
                        raw.step = model.stepLength
                    }
                }
            }
        }
        return raw
    }

    /// One serving-cell report of a replayed walk: what the `cell` and `cell-ta` stages answered
    /// (nil: no answer) and the TA range measurement `cell-ta` emitted.
    struct ReplayedEpoch {
        var time: Double, subject: String, obs: CellObservation
        var cell: Result<Fix, EstimationFailure>?
        var cellTA: Result<Fix, EstimationFailure>?
        var range: TimingAdvanceRangeMeasurement?
        struct Scored { var error: Double; var nees: Double?; var truth: SIMD2<Double>? }
        func key(_ s: Source) -> String { "\(s.rawValue)|\(subject)|\(time)" }
        /// The scorer's figures for this epoch's fix of `s` (nil: no fix, or not scored).
        func scored(_ s: Source, _ r: Replayed) -> Scored? {
            guard case .success? = (s == .cell ? cell : cellTA) else { return nil }
            return r.scored[key(s)]
        }
        /// Whether the report has truth: a `gt` of its phone at its time, or an estimate of it scored.
        func hasTruth(_ r: Replayed) -> Bool { r.truthAt.contains("\(subject)|\(time)") }
    }
    struct Replayed {
        var epochs: [ReplayedEpoch] = []
        var scored: [String: ReplayedEpoch.Scored] = [:]
        var truthAt: Set<String> = []
    }

    /// Replays walk `w` through `cell` and `cell-ta` alone (both with `options`, `cell-ta` also with
    /// `cellTA`) on `reference` (ENU of the training frame at `origin`: the walk is replayed in
    /// that frame), scored by `Scorer` (truth: the walk's `gt`, the phone's GNSS).
    static func replay(_ w: RecordedWalk, origin: Geodetic, reference: ReferenceData, options: [String: ConfigValue],
                       cellTA: [String: ConfigValue] = [:]) throws -> Replayed {
        var stages: [String: StageOptions] = [:]
        for e in StageRegistry.entries {
            switch e.name {
            case "cell": stages[e.name] = StageOptions(name: e.name, values: options)
            case "cell-ta": stages[e.name] = StageOptions(name: e.name, values: options.merging(cellTA) { _, n in n })
            default: stages[e.name] = StageOptions(name: e.name, values: ["enabled": .bool(false)])
            }
        }
        let replayer = Replayer(options: ReplayOptions(stages: stages))
        var out = Replayed()
        replayer.onResults = { event, results, _ in
            if case .groundTruth = event.payload { out.truthAt.insert("\(event.device)|\(event.time)") }
            guard case .cell(let o) = event.payload, o.serving else { return }
            var e = ReplayedEpoch(time: event.time, subject: event.device, obs: o)
            for r in results {
                switch r {
                case .fix(let f) where f.source == .cell: e.cell = .success(f)
                case .fix(let f) where f.source == .cellTA: e.cellTA = .success(f)
                case .failure(let src, _, _, let reason) where src == .cell: e.cell = .failure(reason)
                case .failure(let src, _, _, let reason) where src == .cellTA: e.cellTA = .failure(reason)
                case .measurement(let m, _): if let ta = m as? TimingAdvanceRangeMeasurement { e.range = ta }
                default: continue
                }
            }
            out.epochs.append(e)
        }
        replayer.onEstimate = { s in
            guard s.fix.source == .cell || s.fix.source == .cellTA, let err = s.error else { return }
            out.scored["\(s.fix.source.rawValue)|\(s.fix.subject)|\(s.fix.time)"] = .init(error: err, nees: s.nees, truth: s.truth)
            out.truthAt.insert("\(s.fix.subject)|\(s.fix.time)")
        }
        var header = w.header
        header.origin = origin
        _ = try replayer.run(header: header, events: w.events, reference: reference, name: w.name)
        return out
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

// MARK: - UJIIndoorLoc

/// The UJIIndoorLoc protocols of `evaluate radio`. The file is read by the importer's one
/// reader (`UJIIndoorLocImporter.rows`, strict: the first malformed row is an error), which
/// also needs `BUILDINGID` here. Positions are used as planar metres (Web-Mercator units, ≈ 1.30
/// ground m at 40° N, as the literature reports them).
public enum UJIIndoorLocReader {
    public typealias Row = UJIIndoorLocRow

    public static func read(_ url: URL) throws -> [Row] {
        try UJIIndoorLocImporter.rows(ByteBuffer(url: url), file: url.path, options: ImportOptions(strict: true),
                                      require: ["BUILDINGID"]).rows
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

/// `posfuse evaluate radio SCENARIO_FOLDER`: the trace replayed by `Replayer` (the product
/// path) with only the radio stages (`cell`, `cell-ta`, `wcl`, `rss`, `hapel`, `fingerprint`,
/// configured through `StageRegistry` options) and the trace's own `reference.json`; every
/// estimate scored by `Scorer`. Also the TA radial error z − ρ(p_true) of every LTE TA range
/// measurement (for the Δ/√12 check), against the same truth interpolated at the event time.
public enum RadioScenarioReplay {
    public static let stageNames = ["cell", "cell-ta", "wcl", "rss", "hapel", "fingerprint"]

    public struct Result: Sendable {
        public var replay: ReplayResult
        /// Errors and NEES of the scored estimates per source.
        public var errors: [Source: [Double]] = [:]
        public var nis: [Source: [Double]] = [:]
        /// Radial errors of TA range measurements by TA unit.
        public var radial: [TimingAdvanceUnit: [Double]] = [:]
    }

    public static func run(_ path: String, options: [String: StageOptions] = [:]) throws -> Result {
        let loc = try TraceLocation.resolve(path)
        var stages: [String: StageOptions] = [:]
        for e in StageRegistry.entries {
            stages[e.name] = stageNames.contains(e.name) ? (options[e.name] ?? StageOptions(name: e.name))
                                                         : StageOptions(name: e.name, values: ["enabled": .bool(false)])
        }
        let replayer = Replayer(options: ReplayOptions(stages: stages, scoring: ScoringOptions(keepEpochs: true)))
        var errors: [Source: [Double]] = [:], nis: [Source: [Double]] = [:]
        replayer.onEstimate = { s in
            guard let e = s.error else { return }
            errors[s.fix.source, default: []].append(e)
            if let n = s.nees { nis[s.fix.source, default: []].append(n) }
        }
        var truth: [String: GroundTruthTrack] = [:]
        var ranges: [(subject: String, time: Double, unit: TimingAdvanceUnit, m: TimingAdvanceRangeMeasurement)] = []
        replayer.onResults = { event, results, f in
            if case .groundTruth(let g) = event.payload {
                truth[event.device, default: GroundTruthTrack(subject: event.device)].append(time: event.time, position: Scorer.enu(g, frame: f))
            }
            for r in results {
                guard case .measurement(let m, let subject) = r, let ta = m as? TimingAdvanceRangeMeasurement,
                      case .cell(let o) = event.payload else { continue }
                let unit = o.timingAdvanceUnit ?? TimingAdvanceModel.defaultUnit(for: o.cell.rat) ?? .lte16Ts
                ranges.append((subject, event.time, unit, ta))
            }
        }
        let r = try replayer.run(loc)
        var out = Result(replay: r, errors: errors, nis: nis)
        for x in ranges {
            guard let p = try? truth[x.subject]?.position(at: x.time, maxGap: ScoringOptions.defaultMaxTruthGap).get() else { continue }
            out.radial[x.unit, default: []].append(x.m.z[0] - x.m.predict(p)[0])
        }
        return out
    }
}
