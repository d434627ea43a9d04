/// Every pipeline stage posfuse knows, in pipeline order (estimators before the
/// filters that consume their outputs). `posfuse replay` builds its default pipeline
/// from this list; a pipeline configuration file enables, disables and parameterises
/// stages by `name`. To add a stage, add one entry here.
public enum StageRegistry {
    public struct Entry: Sendable {
        /// Section name in the pipeline configuration (usually the source name).
        public let name: String
        /// Sources the stage emits.
        public let sources: [Source]
        /// Whether the stage runs when no configuration mentions it.
        public let enabledByDefault: Bool
        /// The stage's options (key, default, unit, doc): what `make` reads, and the source of
        /// docs/pipeline.yaml (`PipelineTemplate`).
        public let options: OptionTable
        public let make: @Sendable (StageOptions) throws -> any PipelineStage
        public init(name: String, sources: [Source], enabledByDefault: Bool = true, options: OptionTable,
                    make: @escaping @Sendable (StageOptions) throws -> any PipelineStage) {
            self.name = name; self.sources = sources; self.enabledByDefault = enabledByDefault; self.options = options; self.make = make
        }
    }

    public static let entries: [Entry] = [
        Entry(name: "gnss", sources: [.gnss], options: GNSSStage.Options.table) { try GNSSStage.make($0) },
        // Radio estimators (docs/radio.md): options and defaults in each stage's `Options` table.
        Entry(name: "cell", sources: [.cell], options: CellIDStage.Options.table) { try CellIDStage.make($0) },
        Entry(name: "cell-ta", sources: [.cellTA], options: CellTAStage.Options.table) { try CellTAStage.make($0) },
        Entry(name: "wcl", sources: [.wcl], options: WCLStage.Options.table) { try WCLStage.make($0) },
        Entry(name: "rss", sources: [.rss], options: RSSStage.Options.table) { try RSSStage.make($0) },
        Entry(name: "hapel", sources: [.hapel], options: HAPELStage.Options.table) { try HAPELStage.make($0) },
        // fingerprint: matching against a surveyed map; silent where the reference has none.
        Entry(name: "fingerprint", sources: [.fingerprint], options: FingerprintStage.Options.table) { try FingerprintStage.make($0) },
        // ble: Bluetooth LE beacons located like WiFi APs (the WCL estimator over the beacon map).
        Entry(name: "ble", sources: [.ble], options: BLEStage.Options.table) { try BLEStage.make($0) },
        // Acoustic and camera estimators (tdoa, peer, camloc) register here.
        // tdoa: acoustic TDoA against synchronised beacons (options: TDoAStage.init(options:)).
        Entry(name: "tdoa", sources: [.tdoa], options: TDoAStage.Options.table) { o in try TDoAStage(options: o) },
        // peer: cooperative positioning from anchor fixes + BeepBeep ranges (PeerStage.init(options:)).
        Entry(name: "peer", sources: [.peer], options: PeerStage.Options.table) { o in try PeerStage(options: o) },
        // camloc: two-photo object localisation (CamLocStage.init(options:)).
        Entry(name: "camloc", sources: [.camloc], options: CamLocStage.Options.table) { o in try CamLocStage(options: o) },
        // Fusion filters over PDR, after all estimators (FusionStage; options in docs/pipeline.yaml).
        Entry(name: "ekf", sources: [.ekf], options: FusionStage.Options.ekf) { o in try FusionStage(kind: .ekf, options: o) },
        // ukf and pf are alternatives to the ekf (each runs its own PDR): opt-in, so the default
        // replay stays fast (1 M-event benchmark with ekf, ukf, pf and smoother: 0.43 M events/s).
        Entry(name: "ukf", sources: [.ukf], enabledByDefault: false, options: FusionStage.Options.ukf) { o in try FusionStage(kind: .ukf, options: o) },
        Entry(name: "pf", sources: [.pf], enabledByDefault: false, options: FusionStage.Options.pf) { o in try FusionStage(kind: .pf, options: o) },
        // Offline RTS smoother over an EKF/UKF with the same options (SmootherStage). Opt-in: it
        // keeps the whole filter history, so memory grows with the trace (the default replay
        // streams in flat memory).
        Entry(name: "smoother", sources: [.smoother], enabledByDefault: false, options: FusionStage.Options.smoother) { o in try SmootherStage(options: o) },
    ]

    /// The entry named `name`.
    public static func entry(_ name: String) -> Entry? { entries.first { $0.name == name } }

    /// Build the pipeline: `options[name]` overrides defaults; a stage runs when its
    /// options say `enabled: true`, or it is enabled by default and not disabled.
    public static func pipeline(options: [String: StageOptions] = [:]) throws -> Pipeline {
        var stages: [any PipelineStage] = []
        for e in entries {
            let o = options[e.name] ?? StageOptions(name: e.name)
            let on = o.values["enabled"] == nil ? e.enabledByDefault : o.isEnabled
            if on { stages.append(try e.make(o)) }
        }
        return Pipeline(stages: stages)
    }

    /// The same configuration as `pipeline(options:)`, parsed once: `make()` on the result
    /// gives an equal, fresh pipeline per trace, report or request.
    public static func prototype(options: [String: StageOptions] = [:]) throws -> PipelinePrototype {
        PipelinePrototype(stages: try pipeline(options: options).stages)
    }
}
