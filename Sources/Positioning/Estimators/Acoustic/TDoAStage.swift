/// Pipeline stage `tdoa`: groups each phone's `acoustic` arrivals into emission epochs
/// and solves one TDoA fix per epoch (`TDoAEstimator`).
///
/// Epochs: arrivals are buffered per device; the buffer is solved when (a) every beacon
/// of the reference data has arrived, or before adding an arrival that (b) carries a
/// different emission index `k`, (c) repeats a beacon already buffered, or (d) comes more
/// than one period T_p after the first buffered arrival; and at the end of the trace.
/// The fix time is the mean **trace time** of the epoch's arrival events (the `toa` values
/// carry the unknown phone clock offset; the phone may move between the first and last
/// arrival and the mean minimises the resulting bias).
///
/// Emits `.fix` (source `tdoa`), `.measurement(TDoAMeasurement)` for filters, or
/// `.failure` with the typed reason.
public final class TDoAStage: PipelineStage {
    public let estimator: TDoAEstimator
    /// Phone height above its floor, m (nil: the trace header's `phone_height_m`, else 1.2 m).
    public let phoneHeight: Double?
    /// Floor index whose height (header `floor_heights_m`) the phone height is added to.
    public let floor: Int
    /// Air temperature override, °C (nil: the trace header's, else 20 °C).
    public let temperature: Double?
    public let emitMeasurements: Bool

    private var buffers: [String: [(time: Double, arrival: AcousticArrival)]] = [:]
    private var lastFix: [String: SIMD2<Double>] = [:]
    private let workspace = TDoALMWorkspace()
    /// The solutions of the run so far, in emission order (GDOP, CRLB, residuals for reports).
    public private(set) var solutions: [TDoASolution] = []

    public init(estimator: TDoAEstimator = TDoAEstimator(), phoneHeight: Double? = nil, floor: Int = 0,
                temperature: Double? = nil, emitMeasurements: Bool = true) {
        self.estimator = estimator; self.phoneHeight = phoneHeight; self.floor = floor
        self.temperature = temperature; self.emitMeasurements = emitMeasurements
    }

    /// The `tdoa` options (models: docs/acoustic-camloc.md).
    public enum Options {
        public static let mode = OptionSpec.choice("mode", TDoAEstimator.Mode.auto.rawValue, TDoAEstimator.Mode.allCases.map(\.rawValue),
            "auto | 2d | 3d")
        public static let refinement = OptionSpec.choice("refinement", TDoARefinement.levenbergMarquardt.rawValue,
            TDoARefinement.allCases.map(\.rawValue), "lm (GSL Levenberg-Marquardt) | gauss-newton | none")
        public static let toaSigma = OptionSpec.number("toa_sigma_s", 3e-5, unit: "s", "arrival-time noise (≈ 1 cm)")
        public static let nlosThreshold = OptionSpec.number("nlos_threshold", 3, "residual test for leave-one-out NLOS rejection (0 = off)")
        public static let nlosSelection = OptionSpec.choice("nlos_selection", TDoAEstimator.NLoSSelection.lateArrival.rawValue,
            TDoAEstimator.NLoSSelection.allCases.map(\.rawValue), advanced: true,
            "subset kept: late_arrival (smallest χ² among those whose\nleft-out beacon arrived > nlos_threshold σ late) | smallest_chi_square")
        public static let consistencySlack = OptionSpec.number("consistency_slack_m", 0.05, unit: "m", advanced: true)
        public static let degeneracyRatio = OptionSpec.number("degeneracy_ratio", 0.01, advanced: true, "σ_min/σ_max below which geometry is degenerate")
        public static let inflateByResiduals = OptionSpec.bool("inflate_by_residuals", true, advanced: true)
        public static let floor = OptionSpec.integer("floor", 0)
        public static let emitMeasurements = OptionSpec.bool("emit_measurements", true, "also emit the TDoA measurement model for the filters")
        public static let phoneHeight = OptionSpec.number("phone_height_m", nil, unit: "m", example: 1.2, "default the trace header's, else 1.2")
        public static let temperature = OptionSpec.number("temperature_c", nil, unit: "°C", example: 20, "speed of sound; default the header's, else 20")
        public static let table = OptionTable(stage: "tdoa", doc: "acoustic TDoA against synchronised beacons", options: [
            mode, refinement, toaSigma, nlosThreshold, nlosSelection, consistencySlack, degeneracyRatio, inflateByResiduals,
            floor, emitMeasurements, phoneHeight, temperature,
        ])
    }

    /// Build from pipeline options (`Options`).
    public convenience init(options o: StageOptions) throws {
        let mode: TDoAEstimator.Mode = try o.choice(Options.mode)
        let refinement: TDoARefinement = try o.choice(Options.refinement)
        let sigma = try o.double(Options.toaSigma)
        guard sigma > 0 else { throw ConfigurationError(path: "\(o.name).toa_sigma_s", reason: "must be > 0") }
        let solver = TDoASolver(refinement: refinement, degeneracyRatio: try o.double(Options.degeneracyRatio))
        var est = TDoAEstimator(solver: solver, mode: mode, toaSigma: sigma,
                                nlosThreshold: try o.double(Options.nlosThreshold),
                                consistencySlack: try o.double(Options.consistencySlack),
                                inflateByResiduals: try o.bool(Options.inflateByResiduals))
        est.nlosSelection = try o.choice(Options.nlosSelection)
        let ph = try o.optionalDouble(Options.phoneHeight)
        let tc = try o.optionalDouble(Options.temperature)
        self.init(estimator: est, phoneHeight: ph, floor: try o.int(Options.floor), temperature: tc,
                  emitMeasurements: try o.bool(Options.emitMeasurements))
    }

    public var sources: [Source] { [.tdoa] }
    /// The arrival buffers, last fixes and solutions. The GSL workspace is kept: it is scratch
    /// memory that `gsl_multifit_nlinear_init` sets up again for every solve.
    public func reset() { buffers = [:]; lastFix = [:]; solutions = [] }
    public func fresh() -> any PipelineStage {
        TDoAStage(estimator: estimator, phoneHeight: phoneHeight, floor: floor, temperature: temperature, emitMeasurements: emitMeasurements)
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .acoustic(let a) = event.payload else { return [] }
        let dev = event.device
        var out: [StageResult] = []
        var buf = buffers[dev] ?? []
        if let first = buf.first?.arrival {
            let period = context.reference.beacons[a.beacon]?.period ?? context.reference.beacons[first.beacon]?.period ?? 0
            let newEpoch = (a.emission != nil && first.emission != nil && a.emission != first.emission)
                || buf.contains { $0.arrival.beacon == a.beacon }
                || (period > 0 && a.arrivalTime - first.arrivalTime > period)
            if newEpoch {
                out += solve(buf, device: dev, context: context)
                buf = []
            }
        }
        buf.append((event.time, a))
        let known = Set(context.reference.beacons.keys)
        if !known.isEmpty, Set(buf.map(\.arrival.beacon)).isSuperset(of: known) {
            out += solve(buf, device: dev, context: context)
            buf = []
        }
        buffers[dev] = buf
        return out
    }

    public func finish(context: PipelineContext) -> [StageResult] {
        var out: [StageResult] = []
        for dev in buffers.keys.sorted() where !(buffers[dev] ?? []).isEmpty {
            out += solve(buffers[dev]!, device: dev, context: context)
        }
        buffers = [:]
        return out
    }

    private func solve(_ epoch: [(time: Double, arrival: AcousticArrival)], device: String, context: PipelineContext) -> [StageResult] {
        let t = epoch.map(\.time).reduce(0, +) / Double(epoch.count)
        let arrivals = epoch.map(\.arrival)
        let floorHeight = context.header.floorHeights.indices.contains(floor) ? context.header.floorHeights[floor] : 0
        let h = floorHeight + (phoneHeight ?? context.header.phoneHeight ?? 1.2)
        let temp = temperature ?? context.header.temperature ?? SpeedOfSound.defaultTemperature
        switch estimator.estimate(arrivals: arrivals, beacons: context.reference.beacons, time: t, subject: device,
                                  phoneHeight: h, temperature: temp, prior: lastFix[device], workspace: workspace) {
        case .success(let s):
            lastFix[device] = s.fix.position
            solutions.append(s)
            var r: [StageResult] = [.fix(s.fix)]
            if emitMeasurements { r.append(.measurement(TDoAMeasurement(solution: s), subject: device)) }
            return r
        case .failure(let f):
            return [.failure(source: .tdoa, time: t, subject: device, reason: f)]
        }
    }
}
