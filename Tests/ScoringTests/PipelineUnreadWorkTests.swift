import Testing
import Foundation
@testable import Replay
import Positioning

/// Work a pipeline skips because nothing reads it (docs/refine.md, session 22): the GNSS stage's
/// `PositionMeasurement` when no later stage couples GNSS tightly, and `finish` of the stages not
/// called since the last reset. Each test shows the skipped work would have changed no result.
@Suite struct PipelineUnreadWorkTests {
    /// A stage that reads every upstream result and returns nothing: by the protocol's default it
    /// may read position measurements, so a GNSS stage before it builds them.
    final class Listener: PipelineStage {
        var measurements = 0
        var sources: [Source] { [] }
        func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
            for case .measurement(let m, _) in upstream where m is PositionMeasurement { measurements += 1 }
            return []
        }
        func fresh() -> any PipelineStage { Listener() }
        func reset() { measurements = 0 }
    }

    static func gnssTrace() throws -> (header: TraceHeader, reference: ReferenceData, events: [TraceEvent])? {
        try PipelinePrototypeTests.load("open-street")
    }

    /// The default pipeline's GNSS stage builds no position measurement (its ekf couples GNSS
    /// loosely), one whose ekf has `tight: [gnss]` does, a stage outside a pipeline does; and the
    /// default pipeline's fixes and failures are exactly those of the same pipeline with a
    /// `Listener` at its end (where the GNSS stage builds every measurement) on a GNSS trace.
    @Test func gnssMeasurementOnlyForReaders() throws {
        guard let t = try Self.gnssTrace() else { return }
        func gnss(_ p: Pipeline) -> GNSSStage { p.stages.compactMap { $0 as? GNSSStage }.first! }
        let plain = try StageRegistry.pipeline(options: [:])
        #expect(!gnss(plain).emitsPositionMeasurement)
        let tight = try StageRegistry.pipeline(options: ["ekf": StageOptions(name: "ekf", values: ["tight": .list([.string("gnss")])])])
        #expect(gnss(tight).emitsPositionMeasurement)
        #expect(GNSSStage().emitsPositionMeasurement)

        let listener = Listener()
        let listened = Pipeline(stages: try StageRegistry.pipeline(options: [:]).stages + [listener])
        #expect(gnss(listened).emitsPositionMeasurement)
        func withoutMeasurements(_ r: [String]) -> [String] { r.filter { !$0.hasPrefix("measurement") } }
        let a = PipelinePrototypeTests.run(plain, header: t.header, reference: t.reference, events: t.events)
        let b = PipelinePrototypeTests.run(listened, header: t.header, reference: t.reference, events: t.events)
        let gnssFixes = a.filter { $0.hasPrefix("fix gnss") }.count
        #expect(gnssFixes > 50)                                   // open-street: 66 fixes
        #expect(listener.measurements == gnssFixes)               // each with its measurement
        #expect(!a.contains { $0.hasPrefix("measurement PositionMeasurement") })
        #expect(a.filter { $0.hasPrefix("fix ekf") }.count > 50)
        #expect(withoutMeasurements(a) == withoutMeasurements(b))
    }

    /// The same for the WiFi stages (session 23): `wcl`, `rss` and `fingerprint` build a scan's
    /// position measurement only when a later stage may read it. The default pipeline's build
    /// none, one whose ekf has `tight: [wcl]` gets wcl's, a stage outside a pipeline builds them;
    /// on a WiFi trace the default pipeline's fixes and failures are exactly those of the same
    /// pipeline with a `Listener` at its end (which reads one measurement per WiFi fix).
    @Test func wifiMeasurementsOnlyForReaders() throws {
        guard let t = try PipelinePrototypeTests.load("mall-sparse-ap") else { return }
        func wcl(_ p: Pipeline) -> WCLStage { p.stages.compactMap { $0 as? WCLStage }.first! }
        func rss(_ p: Pipeline) -> RSSStage { p.stages.compactMap { $0 as? RSSStage }.first! }
        func fingerprint(_ p: Pipeline) -> FingerprintStage { p.stages.compactMap { $0 as? FingerprintStage }.first! }
        let plain = try StageRegistry.pipeline(options: [:])
        #expect(!wcl(plain).emitsPositionMeasurement && !rss(plain).emitsPositionMeasurement && !fingerprint(plain).emitsPositionMeasurement)
        let tight = try StageRegistry.pipeline(options: ["ekf": StageOptions(name: "ekf", values: ["tight": .list([.string("wcl")])])])
        #expect(wcl(tight).emitsPositionMeasurement && !rss(tight).emitsPositionMeasurement)
        #expect(WCLStage().emitsPositionMeasurement && RSSStage().emitsPositionMeasurement && FingerprintStage().emitsPositionMeasurement)
        // The same rule for Bluetooth beacon fixes (`PositionMeasurementEmission`, session 25).
        func ble(_ p: Pipeline) -> BLEStage { p.stages.compactMap { $0 as? BLEStage }.first! }
        let tightBLE = try StageRegistry.pipeline(options: ["ekf": StageOptions(name: "ekf", values: ["tight": .list([.string("ble")])])])
        #expect(!ble(plain).emitsPositionMeasurement && ble(tightBLE).emitsPositionMeasurement && !wcl(tightBLE).emitsPositionMeasurement)
        #expect(BLEStage().emitsPositionMeasurement)

        let listener = Listener()
        let listened = Pipeline(stages: try StageRegistry.pipeline(options: [:]).stages + [listener])
        #expect(wcl(listened).emitsPositionMeasurement && rss(listened).emitsPositionMeasurement && fingerprint(listened).emitsPositionMeasurement)
        func withoutMeasurements(_ r: [String]) -> [String] { r.filter { !$0.hasPrefix("measurement") } }
        let a = PipelinePrototypeTests.run(plain, header: t.header, reference: t.reference, events: t.events)
        let b = PipelinePrototypeTests.run(listened, header: t.header, reference: t.reference, events: t.events)
        let wifiFixes = a.filter { $0.hasPrefix("fix wcl") || $0.hasPrefix("fix rss") || $0.hasPrefix("fix fingerprint") }.count
        #expect(a.filter { $0.hasPrefix("fix wcl") }.count > 20)
        #expect(listener.measurements == wifiFixes)               // each with its measurement
        #expect(!a.contains { $0.hasPrefix("measurement PositionMeasurement") })
        #expect(a.filter { $0.hasPrefix("fix ekf") }.count > 20)
        #expect(withoutMeasurements(a) == withoutMeasurements(b))
    }

    /// `Pipeline.finish` calls only the stages called since the last reset: every stage of the
    /// registry (the opt-in ones too) finishes with nothing when fresh and after a trace and a
    /// reset, so skipping them changes no result. Each bundled trace, so every stage has run.
    @Test(arguments: PipelinePrototypeTests.bundled)
    func unusedStagesFinishWithNothing(trace: String) throws {
        guard let t = try PipelinePrototypeTests.load(trace) else { return }
        let context = PipelineContext(header: t.header, reference: t.reference)
        let prototype = try StageRegistry.prototype(options: PipelinePrototypeTests.allStages)
        for s in prototype.make().stages { #expect(s.finish(context: context).isEmpty, "fresh \(s.sources)") }
        let used = prototype.make()
        for e in t.events { _ = used.process(e, context: context) }
        used.reset()
        for s in used.stages { #expect(s.finish(context: context).isEmpty, "\(trace): reset \(s.sources)") }
    }
}
