import Testing
import Foundation
@testable import Replay
@testable import Positioning
import TestSupport

/// Checkpoint (waypoint) scoring, share located and the radio map's fingerprint survey
/// (issue 20 items 2, 6, 7): exact answers on hand-made geometry.
@Suite struct CheckpointScoringTests {
    static let frame = LocalFrame(origin: Geodetic(latitude: 48, longitude: 11, height: 0))

    static func gt(_ t: Double, _ e: Double, _ n: Double, floor: Int? = 2, kind: GroundTruth.Kind = .checkpoint,
                   device: String = Fix.defaultSubject) -> TraceEvent {
        TraceEvent(time: t, device: device, payload: .groundTruth(GroundTruth(position: .local(SIMD3(e, n, 0)), floor: floor, kind: kind)))
    }

    static func fix(_ t: Double, _ e: Double, _ n: Double, _ source: Source = .wcl, sigma: Double = 1, floor: Int? = nil) -> StageResult {
        .fix(Fix(time: t, position: SIMD2(e, n), covariance: Covariance2(sigma: sigma), source: source, floor: floor))
    }

    /// Checkpoints at t = 10 (0, 0) and t = 20 (10, 0), 30 (20, 0), floor 2; hold 5 s.
    /// wcl at 8 (1, 0) and 12 (3, 0): interpolated at 10 → (2, 0), error 2 (NEES 4 with σ 1 m);
    /// at 20: the last estimate (12) is 8 s old → missed; at 30: fix at 27 (20, 3) on floor 3 is
    /// held (3 s old) → error 3, one floor off. IPIN: P75 of {2, 3 + 15} = 2 + 0.75·16 = 14.
    @Test func interpolatedHeldAndMissed() throws {
        var o = ScoringOptions()
        o.checkpointHold = 5
        let s = Scorer(frame: Self.frame, options: o)
        let events = [Self.gt(10, 0, 0), Self.gt(20, 10, 0), Self.gt(30, 20, 0)]
        try s.add([Self.fix(8, 1, 0, floor: 2)])
        try s.add([Self.fix(12, 3, 0, floor: 2)])
        for e in events { try s.add(event: e) }
        try s.add([Self.fix(27, 20, 3, floor: 3)])
        let r = try s.finish()
        let c = try #require(r.checkpoints.first { $0.source == .wcl })
        #expect(c.checkpoints == 3 && c.scored == 2 && c.missed == 1)
        #expect(c.samples.map(\.interpolated) == [true, false])
        #expect(abs(c.samples[0].error - 2) < 1e-12 && abs(c.samples[1].error - 3) < 1e-12)
        #expect(abs((c.samples[0].nees ?? 0) - 4) < 1e-12)
        #expect(c.floorHitRate == 0.5)
        #expect(abs((c.ipin ?? 0) - 14) < 1e-12)
        #expect(abs((c.statistics?.mean ?? 0) - 2.5) < 1e-12)
    }

    /// A subject with continuous truth is scored per estimate only; objects never at checkpoints.
    @Test func continuousTruthHasNoCheckpointScores() throws {
        let s = Scorer(frame: Self.frame)
        try s.add(event: Self.gt(0, 0, 0, kind: .continuous))
        try s.add(event: Self.gt(1, 1, 0, kind: .continuous))
        try s.add(event: Self.gt(1, 5, 5, kind: .checkpoint, device: "object:tower"))
        try s.add([Self.fix(0.5, 0.5, 0)])
        #expect(try s.finish().checkpoints.isEmpty)
    }

    /// Pooling adds up checkpoints and samples per source.
    @Test func pooling() {
        let a = CheckpointSample(subject: "phone", time: 1, errorE: 3, errorN: 4, nees: nil, floorError: nil, interpolated: false)
        let p = CheckpointScore.pooled([[CheckpointScore(source: .wcl, checkpoints: 2, samples: [a])],
                                        [CheckpointScore(source: .wcl, checkpoints: 3, samples: [a, a])]])
        #expect(p.count == 1 && p[0].checkpoints == 5 && p[0].scored == 3 && p[0].statistics?.mean == 5)
        #expect(p[0].floorHitRate == nil)
    }

    /// Share located: an event answered by an estimator (fix or failure) is an epoch; fusion
    /// outputs do not count.
    @Test func locatedShare() {
        var l = LocatedShare()
        l.add([Self.fix(1, 0, 0)])
        l.add([.failure(source: .wcl, time: 2, subject: "phone", reason: .tooFewAnchors(needed: 1, got: 0))])
        l.add([Self.fix(3, 0, 0, .ekf)])
        l.add([])
        #expect(l.epochs == 2 && l.located == 1 && l.share == 0.5)
        #expect(LocatedShare().share == nil && LocatedShare().summary.contains("no epoch"))
    }

    /// The radio map keeps the fingerprint survey; merged into another frame, positions move by
    /// the origins' offset (WGS84 round trip) and the trace's own survey wins.
    @Test func radioMapFingerprintsRoundTripAndMerge() throws {
        let db = try RadioMapDatabase()
        let fp = FingerprintMap(points: [.init(position: SIMD2(10, 20), floor: 2, rss: ["aa:bb:cc:dd:ee:01": -60.5], scans: 3)],
                                threshold: -95, spacing: 2)
        let ap = APMapEstimator.Estimate(ap: AccessPoint(bssid: "aa:bb:cc:dd:ee:01", position: SIMD3(1, 2, 3)), samples: 5, modelFitted: false)
        try db.replace(with: [ap], fingerprints: fp, frame: Self.frame)
        #expect(try db.fingerprints() == fp)
        var same = ReferenceData()
        try db.merge(into: &same, frame: Self.frame)
        #expect(same.fingerprints == fp && same.accessPoints["aa:bb:cc:dd:ee:01"]?.position == SIMD3(1, 2, 3))
        let shifted = LocalFrame(origin: Self.frame.geodetic(SIMD3(100, -50, 0)))
        var other = ReferenceData()
        try db.merge(into: &other, frame: shifted)
        let p = try #require(other.fingerprints?.points.first?.position)
        #expect(abs(p.x - (10 - 100)) < 0.01 && abs(p.y - (20 + 50)) < 0.01)
        var own = ReferenceData(fingerprints: FingerprintMap(points: [], threshold: -90))
        try db.merge(into: &own, frame: Self.frame)
        #expect(own.fingerprints?.points.isEmpty == true)
    }
}
