import Testing
import Foundation
@testable import Positioning

/// The `ble` stage: beacons located like WiFi APs (the WCL estimator over the beacon map).
@Suite struct BLEStageTests {
    static let origin = Geodetic(latitude: 48, longitude: 11, height: 0)
    static func context(_ beacons: [String: SIMD2<Double>]) -> PipelineContext {
        var r = ReferenceData()
        for (id, p) in beacons { r.bleBeacons[id] = AccessPoint(bssid: id, position: SIMD3(p.x, p.y, 0)) }
        return PipelineContext(header: TraceHeader(origin: origin), reference: r)
    }
    static let square: [String: SIMD2<Double>] = ["aa:00:00:00:00:01": [0, 0], "aa:00:00:00:00:02": [10, 0],
                                                  "aa:00:00:00:00:03": [0, 10], "fb34:1:2": [10, 10]]

    /// Four beacons on a square heard equally: the centroid is the square's centre exactly, and
    /// the covariance is κ·S + σ0²·I with S the beacons' spread (25 m² per axis, no cross term).
    @Test func equalLevelsGiveTheCentroidExactly() throws {
        let scan = BLEScan(beacons: Self.square.keys.sorted().map { BLEObservation(id: $0, rss: -80, txPower: -59) })
        let out = BLEStage().process(TraceEvent(time: 7, payload: .ble(scan)), upstream: [], context: Self.context(Self.square))
        guard case .fix(let f)? = out.first else { Issue.record("no fix: \(out)"); return }
        let e = WCLEstimator()
        #expect(f.source == .ble && f.time == 7 && f.usedCount == 4)
        #expect(f.position == SIMD2(5, 5))
        #expect(f.covariance == Covariance2(ee: 25, en: 0, nn: 25).scaled(e.kappa) + Covariance2(sigma: e.sigma0))
        // The loose position measurement for the filters, through the one seam.
        guard case .measurement(let m, let subject)? = out.dropFirst().first else { Issue.record("no measurement"); return }
        #expect(m.asPosition?.source == .ble && subject == Fix.defaultSubject)
    }

    /// Stronger beacons pull the centroid: with the `power` law w ∝ 10^(g·RSS/10), two beacons
    /// 10 dB apart weigh 10^(0.3) : 1.
    @Test func weightsFollowTheWCLLaw() throws {
        let map: [String: SIMD2<Double>] = ["aa:00:00:00:00:01": [0, 0], "aa:00:00:00:00:02": [10, 0]]
        let scan = BLEScan(beacons: [BLEObservation(id: "aa:00:00:00:00:01", rss: -70), BLEObservation(id: "aa:00:00:00:00:02", rss: -80)])
        let out = BLEStage().process(TraceEvent(time: 1, payload: .ble(scan)), upstream: [], context: Self.context(map))
        guard case .fix(let f)? = out.first else { Issue.record("no fix"); return }
        let w = pow(10, 0.3)
        #expect(abs(f.position.x - 10 / (1 + w)) < 1e-12 && f.position.y == 0)
        #expect(f.flags.contains(.degenerate))            // two anchors: collinear
    }

    /// No beacon of the scan in the map: the typed failure WiFi gives, under source `ble`; a WiFi
    /// scan is not this stage's input.
    @Test func unknownBeaconsAreATypedFailure() {
        let scan = BLEScan(beacons: [BLEObservation(id: "ff:ff:ff:ff:ff:ff", rss: -60)])
        let out = BLEStage().process(TraceEvent(time: 3, payload: .ble(scan)), upstream: [], context: Self.context(Self.square))
        guard case .failure(let s, let t, _, let r)? = out.first, out.count == 1 else { Issue.record("expected one failure: \(out)"); return }
        #expect(s == .ble && t == 3 && r == .tooFewAnchors(needed: 1, got: 0))
        let wifi = TraceEvent(time: 3, payload: .wifi(WiFiScan(accessPoints: [WiFiObservation(bssid: "aa:00:00:00:00:01", rss: -50)])))
        #expect(BLEStage().process(wifi, upstream: [], context: Self.context(Self.square)).isEmpty)
    }

    /// The default pipeline runs the stage, and the ekf takes its fix (`inputs` lists `ble`).
    @Test func defaultPipelineLocatesFromBeacons() throws {
        let p = try StageRegistry.pipeline()
        #expect(p.sources.contains(.ble))
        let scan = BLEScan(beacons: Self.square.keys.sorted().map { BLEObservation(id: $0, rss: -80) })
        let out = p.process(TraceEvent(time: 1, payload: .ble(scan)), context: Self.context(Self.square))
        let sources = out.compactMap { r -> Source? in if case .fix(let f) = r { return f.source } else { return nil } }
        #expect(sources.contains(.ble))
        #expect(FusionStage.Options.inputs.strings.contains("ble"))
        #expect(FusionStage.Options.inflationBySource[.ble] == FusionStage.Options.inflationBySource[.wcl])
    }
}
