/// Looks a cell up in the reference data. Falls back, for LTE/NR, to a database entry of
/// the same site (eNB/gNB id = ECI >> 8, same RAT/MCC/MNC) when the exact sector is missing,
/// because a site-level database (e.g. `posfuse celldb build` pooling sectors) keys only
/// one of them. The fallback drops the sector geometry (it belongs to another sector).
public struct CellLookup: Sendable {
    struct SiteKey: Hashable { var rat: RAT; var mcc: Int; var mnc: Int; var site: Int }
    let cells: [CellID: CellSite]
    let bySite: [SiteKey: CellSite]

    /// Sites without a `range` get the distance to the nearest other site of the same RAT and
    /// operator (positions more than 50 m apart): a cell's coverage reaches about the
    /// inter-site distance, a better Cell-ID radius than a fixed per-RAT guess. Sites alone in
    /// their network within 40 km keep `range = nil` (the estimator's per-RAT default applies).
    public init(_ input: [CellID: CellSite]) {
        var cells = input
        // Spatial hash (2 km buckets per network) so large databases stay O(n): search rings
        // of buckets outwards up to 40 km.
        let bucket = 2000.0
        struct B: Hashable { var net: String; var i: Int; var j: Int }
        func net(_ id: CellID) -> String { "\(id.rat.rawValue):\(id.mcc)-\(id.mnc)" }
        var grid: [B: [SIMD2<Double>]] = [:]
        for s in input.values {
            let p = SIMD2(s.position.x, s.position.y)
            grid[B(net: net(s.cell), i: Int((p.x / bucket).rounded(.down)), j: Int((p.y / bucket).rounded(.down))), default: []].append(p)
        }
        for (id, s) in input where s.range == nil {
            let p = SIMD2(s.position.x, s.position.y), n = net(id)
            let i0 = Int((p.x / bucket).rounded(.down)), j0 = Int((p.y / bucket).rounded(.down))
            var best = Double.infinity
            for ring in 0...20 {
                if Double(ring - 1) * bucket > best { break }
                for di in -ring...ring {
                    for dj in -ring...ring where max(abs(di), abs(dj)) == ring {
                        for o in grid[B(net: n, i: i0 + di, j: j0 + dj)] ?? [] {
                            let d = ((o - p) * (o - p)).sum().squareRoot()
                            if d > 50 { best = min(best, d) }
                        }
                    }
                }
            }
            if best.isFinite { cells[id]?.range = best }
        }
        self.cells = cells
        var m: [SiteKey: CellSite] = [:]
        for (id, s) in cells where id.rat == .lte || id.rat == .nr {
            let k = SiteKey(rat: id.rat, mcc: id.mcc, mnc: id.mnc, site: id.cid >> 8)
            if let old = m[k], old.cell.cid <= id.cid { continue }
            m[k] = s
        }
        bySite = m
    }

    public func site(for cell: CellID) -> CellSite? {
        if let s = cells[cell] { return s }
        guard cell.rat == .lte || cell.rat == .nr,
              var m = bySite[SiteKey(rat: cell.rat, mcc: cell.mcc, mnc: cell.mnc, site: cell.cid >> 8)] else { return nil }
        m.azimuth = nil; m.beamwidth = nil
        return m
    }
}

/// Caches a `CellLookup` for the reference data of the trace being replayed.
final class CellLookupCache {
    private var lookup: CellLookup?
    private var count = -1
    func get(_ r: ReferenceData) -> CellLookup {
        if let l = lookup, count == r.cells.count { return l }
        let l = CellLookup(r.cells); lookup = l; count = r.cells.count
        return l
    }
    /// Forgets the lookup: it is keyed by the number of cells only, so a stage reused for
    /// another report (another tile's reference data) must build it again.
    func clear() { lookup = nil; count = -1 }
}

/// Whether and how the cell stages locate a report from the reference data's coverage map
/// (`CellCoverageMap`) before the tower geometry. Options `coverage` (true) and
/// `coverage_min_count` (3 positions per area).
public struct CellCoverageUse: Sendable {
    public var enabled: Bool
    public var minCount: Int
    public init(enabled: Bool = true, minCount: Int = CellCoverageMap.defaultMinCount) { self.enabled = enabled; self.minCount = minCount }

    /// The coverage options of `cell` and `cell-ta`.
    public enum Options {
        public static let coverage = OptionSpec.bool("coverage", CellCoverageUse().enabled,
            "locate from the reference data's cell_coverage (where phones were\nwhen they reported the cell) before the tower, when it has the cell")
        public static let coverageMinCount = OptionSpec.integer("coverage_min_count", CellCoverageUse().minCount, advanced: true,
            "positions an area needs (≥ 2)")
    }

    static func parse(_ o: StageOptions) throws -> CellCoverageUse {
        let u = CellCoverageUse(enabled: try o.bool(Options.coverage), minCount: try o.int(Options.coverageMinCount))
        guard u.minCount >= 2 else { throw ConfigurationError(path: "\(o.name).coverage_min_count", reason: "must be ≥ 2 (one position has no spread)") }
        return u
    }

    /// The coverage fix of a serving-cell report, when enabled and the map knows the area: the
    /// cell's (`cell`), or the (cell, TA) area else the cell's for a report with a TA (`cell-ta`;
    /// none without a TA, as the ring). `CellEvaluation` scores the same rule.
    public func fix(_ obs: CellObservation, source: Source, time: Double, subject: String, map: CellCoverageMap?) -> Fix? {
        guard case .success(let f)? = result(obs, source: source, time: time, subject: subject, map: map) else { return nil }
        return f
    }

    /// The coverage fix or why there is none (`unknownAnchor`: a cell the map never saw;
    /// `missingInput`: too few positions); nil when the rule does not apply (coverage off, no
    /// map, `cell-ta` for a report without TA).
    public func result(_ obs: CellObservation, source: Source, time: Double, subject: String, map: CellCoverageMap?)
        -> Result<Fix, EstimationFailure>? {
        guard enabled, let map, source == .cell || obs.timingAdvance != nil else { return nil }
        return map.fix(obs, useTA: source == .cellTA, minCount: minCount, time: time, source: source, subject: subject)
    }

    /// Why a report is not located when the tower fallback failed with `tower`: the coverage
    /// map's reason when it knew more (e.g. `missingInput`, an area with too few positions)
    /// than the tower database (`unknownAnchor`: no such site), else the tower's.
    public func reason(tower: EstimationFailure, coverage: Result<Fix, EstimationFailure>?) -> EstimationFailure {
        guard case .unknownAnchor = tower, case .failure(let c)? = coverage else { return tower }
        if case .unknownAnchor = c { return tower }
        return c
    }
}

/// Pipeline stage `cell`: a Cell-ID fix for every serving-cell record — from the coverage map
/// where the reference data has one for the cell (`CellCoverageMap`: where phones were when
/// they reported it), else from the tower (`CellIDEstimator`).
public final class CellIDStage: PipelineStage {
    public let estimator: CellIDEstimator
    public let coverage: CellCoverageUse
    private let cache = CellLookupCache()
    public init(estimator: CellIDEstimator = CellIDEstimator(), coverage: CellCoverageUse = CellCoverageUse()) {
        self.estimator = estimator; self.coverage = coverage
    }
    public var sources: [Source] { [.cell] }
    /// The cell lookup of the last reference data.
    public func reset() { cache.clear() }
    public func fresh() -> any PipelineStage { CellIDStage(estimator: estimator, coverage: coverage) }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .cell(let obs) = event.payload, obs.serving else { return [] }
        let cov = coverage.result(obs, source: .cell, time: event.time, subject: event.device, map: context.reference.cellCoverage)
        if case .success(let f)? = cov { return [.fix(f)] }
        let site = cache.get(context.reference).site(for: obs.cell)
        switch estimator.estimate(obs, site: site, time: event.time, subject: event.device) {
        case .success(let f): return [.fix(f)]
        case .failure(let r): return [.failure(source: .cell, time: event.time, subject: event.device, reason: coverage.reason(tower: r, coverage: cov))]
        }
    }

    /// The `cell` options.
    public enum Options {
        public static let useSector = OptionSpec.bool("use_sector", true, "use sector azimuth and beamwidth when the database has them")
        public static let defaultRange = OptionSpec.number("default_range_m", nil, unit: "m", example: 2000,
            "one coverage radius for every RAT (default per RAT when the\ndatabase has no range: gsm 5000, umts 2000, lte 2000, nr 1000,\nor the inter-site distance)")
        public static let table = OptionTable(stage: "cell", doc: "Cell-ID: the serving site's coverage disc / sector", options: [
            useSector, defaultRange, CellCoverageUse.Options.coverage, CellCoverageUse.Options.coverageMinCount,
        ])
    }

    public static func make(_ o: StageOptions) throws -> CellIDStage {
        var ranges = CellIDEstimator.standardRanges
        if let r = try o.optionalDouble(Options.defaultRange) {
            guard r > 0 else { throw ConfigurationError(path: "\(o.name).default_range_m", reason: "must be positive") }
            for k in ranges.keys { ranges[k] = r }
        }
        return CellIDStage(estimator: CellIDEstimator(defaultRange: ranges, useSector: try o.bool(Options.useSector)),
                           coverage: try CellCoverageUse.parse(o))
    }
}

/// Pipeline stage `cell-ta`: a ring-sector fix for every serving-cell record with a TA, plus
/// the tight-coupling TA measurement (annulus range or saturated lower bound) for filters.
/// When other serving cells (another RAT or SIM) of different sites reported a TA within
/// `ringWindow` s, the fix is the multi-ring posterior (`CellTAEstimator.multiRingFix`).
/// Where the reference data's coverage map knows the (cell, TA) area (else the cell's), the
/// fix is that area's (`CellCoverageMap`) instead of the ring; the TA measurement stays.
public final class CellTAStage: PipelineStage {
    public let estimator: CellTAEstimator
    /// Use simultaneous rings of other serving cells (default true) and how old they may be, s.
    public let multiRing: Bool
    public let ringWindow: Double
    public let coverage: CellCoverageUse
    private let cache = CellLookupCache()
    /// Latest ring per device and radio (RAT + MCC/MNC: one serving cell each).
    private var rings: [String: [String: TimingAdvanceRing]] = [:]

    public init(estimator: CellTAEstimator = CellTAEstimator(), multiRing: Bool = true, ringWindow: Double = 2.5,
                coverage: CellCoverageUse = CellCoverageUse()) {
        self.estimator = estimator; self.multiRing = multiRing; self.ringWindow = ringWindow; self.coverage = coverage
    }
    public var sources: [Source] { [.cellTA] }
    /// The cell lookup of the last reference data and the latest rings.
    public func reset() { cache.clear(); rings = [:] }
    public func fresh() -> any PipelineStage {
        CellTAStage(estimator: estimator, multiRing: multiRing, ringWindow: ringWindow, coverage: coverage)
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .cell(let obs) = event.payload, obs.serving else { return [] }
        let site = cache.get(context.reference).site(for: obs.cell)
        var out: [StageResult] = []
        let meas = site.flatMap { estimator.measurement(obs, site: $0, time: event.time) }
        let radio = "\(obs.cell.rat.rawValue):\(obs.cell.mcc)-\(obs.cell.mnc)"
        let cov = coverage.result(obs, source: .cellTA, time: event.time, subject: event.device, map: context.reference.cellCoverage)
        if case .success(let f)? = cov {
            rings[event.device]?[radio] = nil   // this report is no ring for the multi-ring fix of others
            out.append(.fix(f))
            if let meas { out.append(.measurement(meas, subject: event.device)) }
            return out
        }
        let single = estimator.estimate(obs, site: site, time: event.time, subject: event.device)
        var fix: Fix? = nil
        if case .success(let f) = single { fix = f }
        if multiRing {
            var mine = rings[event.device] ?? [:]
            if let site, let m = meas as? TimingAdvanceRangeMeasurement, fix != nil {
                mine[radio] = TimingAdvanceRing(site: site, measurement: m, time: event.time)
            } else {
                mine[radio] = nil
            }
            mine = mine.filter { event.time - $0.value.time <= ringWindow }
            rings[event.device] = mine
            if fix != nil, mine.count >= 2,
               let f = estimator.multiRingFix(mine.sorted { $0.key < $1.key }.map(\.value), time: event.time, subject: event.device) {
                fix = f
            }
        }
        switch single {
        case .success: out.append(.fix(fix!))
        case .failure(let r): out.append(.failure(source: .cellTA, time: event.time, subject: event.device, reason: coverage.reason(tower: r, coverage: cov)))
        }
        if let meas { out.append(.measurement(meas, subject: event.device)) }
        return out
    }

    /// The `cell-ta` options (model: docs/models.md §1).
    public enum Options {
        public static let speedOfLight = OptionSpec.number("speed_of_light", TimingAdvanceModel.exactSpeedOfLight, unit: "m/s",
            "3e8 reproduces literature tables")
        public static let quantizer = OptionSpec.choice("quantizer", TimingAdvanceModel.Quantizer.rounding.rawValue,
            TimingAdvanceModel.Quantizer.allCases.map(\.rawValue), "rounding | truncation (TA offset β = 0 or 0.5 steps)")
        public static let offset = OptionSpec.number("offset", nil, unit: "TA steps", example: 0.5,
            "β; overrides `quantizer` (e.g. a calibrated β̂)")
        public static let sigmaFraction = OptionSpec.number("sigma_fraction", 0.15, advanced: true, "model noise σ_m = fraction × Δ, m")
        public static let gsmMaxTA = OptionSpec.integer("gsm_max_ta", 63, "saturated GSM TA (219 for extended cells): a lower bound only")
        public static let nrUnit = OptionSpec.choice("nr_unit", TimingAdvanceUnit.nrMu0.rawValue, TimingAdvanceUnit.allCases.map(\.rawValue),
            "NR TA unit when the trace does not say (nr_mu0..nr_mu3)")
        public static let phoneUp = OptionSpec.number("phone_up_m", 0, unit: "m", advanced: true, "phone height above the ENU origin")
        public static let useSector = OptionSpec.bool("use_sector", true, "use sector azimuth and beamwidth when the database has them")
        public static let multiRing = OptionSpec.bool("multi_ring", true, "intersect simultaneous rings of several serving cells")
        public static let ringWindow = OptionSpec.number("ring_window_s", 2.5, unit: "s", "rings this close in time are intersected")
        public static let coverage = OptionSpec.bool("coverage", CellCoverageUse().enabled,
            "the (cell, TA) area of cell_coverage (else the cell's) before the ring")
        /// β of the default quantizer, steps.
        public static var defaultOffset: Double { TimingAdvanceModel.Quantizer(rawValue: quantizer.text)?.offset ?? 0 }
        public static let table = OptionTable(stage: "cell-ta", doc: "Cell-ID + timing advance (annulus-sector moments, multi-ring)", options: [
            speedOfLight, quantizer, offset, sigmaFraction, gsmMaxTA, nrUnit, phoneUp, useSector, multiRing, ringWindow,
            coverage, CellCoverageUse.Options.coverageMinCount,
        ])
    }

    public static func make(_ o: StageOptions) throws -> CellTAStage {
        let quant: TimingAdvanceModel.Quantizer = try o.choice(Options.quantizer)
        let nr: TimingAdvanceUnit = try o.choice(Options.nrUnit)
        let c = try o.double(Options.speedOfLight)
        guard c > 0 else { throw ConfigurationError(path: "\(o.name).speed_of_light", reason: "must be positive") }
        let sf = try o.double(Options.sigmaFraction)
        guard sf >= 0 else { throw ConfigurationError(path: "\(o.name).sigma_fraction", reason: "must be ≥ 0") }
        return CellTAStage(estimator: CellTAEstimator(
            speedOfLight: c, offset: try o.optionalDouble(Options.offset) ?? quant.offset, sigmaFraction: sf,
            gsmMaxIndex: try o.int(Options.gsmMaxTA), nrDefaultUnit: nr,
            phoneUp: try o.double(Options.phoneUp), useSector: try o.bool(Options.useSector)),
            multiRing: try o.bool(Options.multiRing), ringWindow: try o.double(Options.ringWindow),
            coverage: try CellCoverageUse.parse(o))
    }
}
