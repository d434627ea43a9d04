import Foundation
import Testing
@testable import Replay
import Positioning
import TestSupport

/// The Bluetooth beacons of the Microsoft walks (`$POSFUSE_DATA/ms-indoor`), end to end: the
/// importer's `ble` scans, the beacon map learned from the other walks (leave-one-walk-out, the
/// `radiomap build` code), and the default pipeline's `ble` fixes against the walk's truth.
/// Skips when the recordings are absent.
@Suite struct BLERealDataTests {
    @Test(.enabled(if: SharedData.path("ms-indoor/site2/F3/path_data_files") != nil)) func msIndoorBeacons() throws {
        let dir = try #require(SharedData.path("ms-indoor/site2/F3/path_data_files"))
        let urls = try expandInputs([dir], extensions: ["txt"])
        let walks = try RadioWalkLoader.load(urls, dataset: .msIndoor)
        #expect(walks.count == 22)
        func scans(_ w: RecordedWalk) -> [(Double, BLEScan)] {
            w.events.compactMap { e in if case .ble(let s) = e.payload { return (e.time, s) } else { return nil } }
        }
        let readings = walks.reduce(0) { $0 + scans($1).reduce(0) { $0 + $1.1.beacons.count } }
        let events = walks.reduce(0) { $0 + scans($1).count }
        #expect(readings == 125)                      // every TYPE_BEACON row is kept
        var learner = RadioMapLearner()
        learner.fitUncertainty = false; learner.fitStepLength = false
        var fixes = 0, failures = 0, errors: [Double] = []
        var options: [String: StageOptions] = [:]
        for e in StageRegistry.entries where e.name != "ble" { options[e.name] = StageOptions(name: e.name, values: ["enabled": .bool(false)]) }
        for (i, w) in walks.enumerated() where !scans(w).isEmpty {
            let map = try #require(learner.build(walks.enumerated().filter { $0.offset != i }.map(\.element)))
            let frame = LocalFrame(origin: w.header.origin)
            let context = PipelineContext(header: w.header, reference: map.reference(in: frame))
            let pipeline = try StageRegistry.pipeline(options: options)
            let truth = TruthTrack(walk: w, frame: frame)
            for e in w.events {
                guard case .ble = e.payload else { continue }
                let out = pipeline.process(e, context: context)
                for r in out {
                    switch r {
                    case .fix(let f):
                        fixes += 1
                        #expect(f.source == .ble && f.covariance.ee.isFinite && f.covariance.ee > 0)
                        if let p = truth.position(at: f.time) { errors.append(((f.position - p) * (f.position - p)).sum().squareRoot()) }
                    case .failure(let s, _, _, let reason):
                        failures += 1
                        #expect(s == .ble && reason == .tooFewAnchors(needed: 1, got: 0))
                    case .measurement: break
                    }
                }
            }
        }
        #expect(fixes + failures == events)           // one answer per scan
        let sorted = errors.sorted()
        let median = sorted.isEmpty ? Double.nan : sorted[sorted.count / 2]
        print("[ble] ms-indoor site2/F3: \(readings) beacon readings in \(events) ble scans; leave-one-walk-out: \(fixes) ble fixes, "
              + "\(failures) scans without a known beacon; \(errors.count) fixes with truth, error median \(String(format: "%.1f", median)) m, "
              + "mean \(String(format: "%.1f", errors.reduce(0, +) / Double(max(1, errors.count)))) m")
        #expect(fixes > 0)                            // the beacon heard on 9 walks is learned from the others
    }
}
