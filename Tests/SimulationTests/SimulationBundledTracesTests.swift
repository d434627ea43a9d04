import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

/// Every bundled trace in Traces/ reads strictly, in time order, with ground truth for each
/// phone at ≥ 1 Hz and a loadable reference side file.
@Suite struct SimulationBundledTracesTests {
    static let names = ["open-street", "urban-canyon", "rural-cell", "mall-sparse-ap", "office-acoustic",
                        "crowd-peers", "photo-landmark", "photo-landmark-downtown"]

    @Test(arguments: names) func readsStrictlyInOrder(name: String) throws {
        let dir = PackagePaths.root.appendingPathComponent("Traces/\(name)")
        let r = try TraceReader(url: dir.appendingPathComponent("trace.jsonl"), mode: .strict)
        var lastT = -Double.infinity
        var gtTimes: [String: [Double]] = [:]
        var devices: Set<String> = []
        while let e = try r.next() {
            #expect(e.time >= lastT)
            lastT = e.time
            if case .groundTruth(let g) = e.payload {
                if g.kind == .continuous { gtTimes[e.device, default: []].append(e.time) }
            } else { devices.insert(e.device) }
            if name == "mall-sparse-ap", case .wifi(let w) = e.payload { #expect(w.accessPoints.count <= 2) }
        }
        #expect(r.stats.outOfOrder == 0)
        #expect(r.stats.skippedTotal == 0)
        #expect(r.stats.unknownTotal == 0)
        #expect(r.stats.events > 100)
        #expect(r.header.name == name)
        for d in devices {
            let ts = try #require(gtTimes[d], "no ground truth for \(d)")
            let gaps = zip(ts.dropFirst(), ts).map { $0 - $1 }
            #expect((gaps.max() ?? 0) <= 1.0 + 1e-9, "ground truth for \(d) must be ≥ 1 Hz")
        }
        let ref = try ReferenceLoader.load(folder: dir, frame: r.header.frame)
        let sc = try Scenario.load(url: dir.appendingPathComponent("scenario.yaml"))
        #expect(ref.accessPoints.count == (sc.wifi?.aps.count ?? 0))
        #expect(ref.cells.count == (sc.cell?.sites.count ?? 0))
        #expect(ref.beacons.count == (sc.acoustic?.beacons.count ?? 0))
        #expect(ref.landmarks.count == sc.landmarks.count)
        // A few MB at most.
        let size = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("trace.jsonl").path)[.size] as? Int ?? 0
        #expect(size < 5_000_000)
    }
}
