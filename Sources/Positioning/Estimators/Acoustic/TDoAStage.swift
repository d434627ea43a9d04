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

    /// Build from pipeline options (documented in `docs/acoustic-camloc.md` and `docs/pipeline.yaml`):
    /// `mode` (auto|2d|3d, auto), `refinement` (lm|gauss-newton|none, lm), `toa_sigma_s` (3e-5),
    /// `nlos_threshold` (3; 0 disables leave-one-out), `nlos_selection` (late_arrival), `consistency_slack_m` (0.05),
    /// `degeneracy_ratio` (0.01), `inflate_by_residuals` (true), `phone_height_m` (header, else 1.2), `floor` (0),
    /// `temperature_c` (header, else 20), `emit_measurements` (true).
    public convenience init(options o: StageOptions) throws {
        let modeName = try o.string("mode", default: "auto")
        guard let mode = TDoAEstimator.Mode(rawValue: modeName) else {
            throw ConfigurationError(path: "\(o.name).mode", reason: "expected auto, 2d or 3d")
        }
        let refName = try o.string("refinement", default: TDoARefinement.levenbergMarquardt.rawValue)
        guard let refinement = TDoARefinement(rawValue: refName) else {
            throw ConfigurationError(path: "\(o.name).refinement", reason: "expected lm, gauss-newton or none")
        }
        let sigma = try o.double("toa_sigma_s", default: 30e-6)
        guard sigma > 0 else { throw ConfigurationError(path: "\(o.name).toa_sigma_s", reason: "must be > 0") }
        let solver = TDoASolver(refinement: refinement, degeneracyRatio: try o.double("degeneracy_ratio", default: 1e-2))
        var est = TDoAEstimator(solver: solver, mode: mode, toaSigma: sigma,
                                nlosThreshold: try o.double("nlos_threshold", default: 3),
                                consistencySlack: try o.double("consistency_slack_m", default: 0.05),
                                inflateByResiduals: try o.bool("inflate_by_residuals", default: true))
        let selection = try o.string("nlos_selection", default: TDoAEstimator.NLoSSelection.lateArrival.rawValue)
        guard let sel = TDoAEstimator.NLoSSelection(rawValue: selection) else {
            throw ConfigurationError(path: "\(o.name).nlos_selection", reason: "expected late_arrival or smallest_chi_square")
        }
        est.nlosSelection = sel
        let ph: Double? = o.values["phone_height_m"] == nil ? nil : try o.double("phone_height_m", default: 1.2)
        let tc: Double? = o.values["temperature_c"] == nil ? nil : try o.double("temperature_c", default: 20)
        self.init(estimator: est, phoneHeight: ph, floor: try o.int("floor", default: 0), temperature: tc,
                  emitMeasurements: try o.bool("emit_measurements", default: true))
    }

    public var sources: [Source] { [.tdoa] }
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
