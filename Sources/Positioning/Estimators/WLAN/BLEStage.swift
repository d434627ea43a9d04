/// Pipeline stage `ble`: a weighted-centroid fix per Bluetooth LE scan (`ble` event) from the
/// beacon map (`ReferenceData.bleBeacons`), and a loose position measurement for the filters.
///
/// A beacon is a transmitter with a learned position, like a WiFi access point (Mozilla
/// ichnaea's model of `bluetoothBeacons`, docs/radio.md "Bluetooth beacons"): the scan goes
/// through the WCL estimator itself (`WCLEstimator`: stale entries dropped, K strongest above
/// r_min, the weight law, Σ̂ = κ·S + σ0²·I), with the same options and defaults as `wcl`. A scan
/// with no beacon in the map is the typed failure `tooFewAnchors(1, 0)`, counted as WiFi's are.
/// The radio map's novelty inflation (`RadioUncertaintyModel`) is fitted on WiFi fixes only and is
/// not applied to these.
public final class BLEStage: PipelineStage {
    public let estimator: WCLEstimator
    public init(estimator: WCLEstimator = WCLEstimator()) { self.estimator = estimator }
    public var sources: [Source] { [.ble] }
    public func fresh() -> any PipelineStage { BLEStage(estimator: estimator) }
    /// No per-trace state.
    public func reset() {}
    /// Bluetooth scans only.
    public var inputs: StageInputs { StageInputs(events: .ble, upstream: false) }
    /// Whether a fix is followed by its `PositionMeasurement` (`PositionMeasurementEmission`).
    private var emission = PositionMeasurementEmission(.ble)
    public var emitsPositionMeasurement: Bool { emission.isOn }
    public func link(_ stages: [any PipelineStage], at index: Int) { emission.link(stages, at: index) }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .ble(let scan) = event.payload else { return [] }
        let anchors = estimator.selectAnchors(scan.transmitters, time: event.time, map: context.reference.bleBeacons)
        switch estimator.fix(anchors: anchors, time: event.time, source: .ble, subject: event.device) {
        case .success(let f): return emission.results(f, subject: event.device)
        case .failure(let r): return [.failure(source: .ble, time: event.time, subject: event.device, reason: r)]
        }
    }

    public enum Options {
        /// Every `wcl` option, read by the same parser (`WCLStage.estimator`).
        public static let table = OptionTable(stage: "ble", doc: "Bluetooth LE beacons' weighted centroid (all wcl options apply)",
                                              options: [], includes: [WCLStage.Options.table])
    }

    public static func make(_ o: StageOptions) throws -> BLEStage { BLEStage(estimator: try WCLStage.estimator(o)) }
}
