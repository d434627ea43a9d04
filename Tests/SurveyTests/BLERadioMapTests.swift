import Testing
import Foundation
@testable import Replay
@testable import Positioning
import TestSupport

/// Beacons in the radio map: learned from walks with truth by the AP builder, stored in table
/// `ble`, merged into reference data beside (never into) the AP map.
@Suite struct BLERadioMapTests {
    static let origin = Geodetic(latitude: 48, longitude: 11, height: 0)

    /// A beacon heard at equal level at three truth positions sits at their centroid, exactly; a
    /// beacon heard twice (below the 3-sample minimum) is not placed; WiFi APs are not beacons.
    @Test func beaconsAreLearnedLikeAccessPoints() throws {
        var events: [TraceEvent] = []
        for (k, x) in [0.0, 2.0, 4.0].enumerated() {
            let t = Double(10 * k)
            events.append(TraceEvent(time: t, payload: .groundTruth(GroundTruth(position: .local(SIMD3(x, 0, 0)), kind: .checkpoint))))
            var beacons = [BLEObservation(id: "6f:1f:6c:b5:b1:4c", rss: -80, txPower: -59)]   // locally administered bit set: kept
            if k < 2 { beacons.append(BLEObservation(id: "aa:00:00:00:00:09", rss: -70)) }
            events.append(TraceEvent(time: t, payload: .ble(BLEScan(beacons: beacons))))
            events.append(TraceEvent(time: t, payload: .wifi(WiFiScan(accessPoints: [WiFiObservation(bssid: "02:00:00:00:00:01", rss: -60)]))))
        }
        let walk = RecordedWalk(name: "w", header: TraceHeader(origin: Self.origin), events: events)
        let frame = LocalFrame(origin: Self.origin)
        let ble = RadioMapBuilder().build([walk], frame: frame, of: .ble)
        #expect(ble.map(\.ap.bssid) == ["6f:1f:6c:b5:b1:4c"])
        #expect(ble.first?.ap.position == SIMD3(2, 0, 0) && ble.first?.samples == 3)
        #expect(RadioMapBuilder().build([walk], frame: frame).isEmpty)       // the WiFi AP is locally administered: not learned
        var learner = RadioMapLearner()
        learner.fitUncertainty = false; learner.fitStepLength = false
        let out = try #require(learner.build([walk]))
        #expect(out.reference(in: frame).bleBeacons["6f:1f:6c:b5:b1:4c"]?.position == SIMD3(2, 0, 0))
        #expect(out.reference(in: frame).accessPoints.isEmpty)
    }

    @Test func tableBleRoundTripsAndMerges() throws {
        let db = try RadioMapDatabase()
        let frame = LocalFrame(origin: Self.origin)
        let b = APMapEstimator.Estimate(ap: AccessPoint(bssid: "24:0a:c4:a7:e9:41", position: SIMD3(3, 4, 0), floor: 2, p0: -75, pathLossExponent: 2.5),
                                        samples: 5, modelFitted: false)
        let a = APMapEstimator.Estimate(ap: AccessPoint(bssid: "00:11:22:33:44:55", position: SIMD3(1, 1, 0)), samples: 3, modelFitted: false)
        try db.replace(with: [a], bleBeacons: [b], fingerprints: nil, frame: frame)
        #expect(try db.bleBeacons() == ["24:0a:c4:a7:e9:41": b.ap])
        #expect(try db.accessPoints() == ["00:11:22:33:44:55": a.ap])
        var r = ReferenceData()
        try db.merge(into: &r, frame: frame)
        #expect(r.bleBeacons == ["24:0a:c4:a7:e9:41": b.ap] && r.accessPoints == ["00:11:22:33:44:55": a.ap])
        #expect(RadioMapDatabase.referenceJSON([b.ap], key: "id").first?["id"] as? String == "24:0a:c4:a7:e9:41")
    }
}
