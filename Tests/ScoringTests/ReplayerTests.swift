import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

/// Replayer: reader → pipeline → scorer on small written traces.
@Suite struct ReplayerTests {
    let origin = Geodetic(latitude: 48.137, longitude: 11.575, height: 520)

    func tempTrace(_ events: [TraceEvent], extraLines: [String] = []) throws -> TraceLocation {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-replayer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let url = dir.appendingPathComponent("trace.jsonl")
        let w = try TraceWriter(url: url, header: TraceHeader(origin: origin))
        for e in events { w.write(e) }
        for l in extraLines { w.write(line: l) }
        try w.close()
        return try TraceLocation.resolve(url.path)
    }

    /// Two phones walk east at 1 m/s, one 10 m north of the other; each reports GNSS fixes
    /// exactly 3 m east of its own truth. Scores are per subject's own truth: every error
    /// is 3 m (bias E = 3), and both subjects count.
    @Test func multiDeviceTraceScoresEachSubjectAgainstItsOwnTruth() throws {
        let frame = LocalFrame(origin: origin)
        var ev: [TraceEvent] = []
        for k in 0...20 {
            let t = Double(k)
            for (dev, north) in [("phone", 0.0), ("peer2", 10.0)] {
                ev.append(TraceEvent(time: t, device: dev, payload: .groundTruth(GroundTruth(position: .local(SIMD3(t, north, 0))))))
                if k > 0 && k < 20 {
                    let g = frame.geodetic(east: t + 0.5 + 3, north: north)     // fix at t + 0.5 s: truth interpolated
                    ev.append(TraceEvent(time: t + 0.5, device: dev, payload: .gnss(GNSSFix(latitude: g.latitude, longitude: g.longitude, accuracy: 3))))
                }
            }
        }
        ev.sort { $0.time < $1.time }
        let r = try Replayer().run(try tempTrace(ev))
        let g = try #require(r.scores.score("gnss"))
        #expect(g.count == 38 && g.fixes == 38)
        let s = try #require(g.statistics)
        #expect(abs(s.mean - 3) < 1e-6 && abs(s.max - 3) < 1e-6 && abs(s.biasE - 3) < 1e-6 && abs(s.biasN) < 1e-6)
        #expect(r.scores.truthSubjects == ["peer2", "phone"])
        #expect(abs(r.scores.truthSeconds - 40) < 1e-9)
    }

    /// Lenient replay skips a malformed line and an event beyond the reorder window, and
    /// repairs one within it; strict replay throws at the malformed line.
    @Test func orderingAndBadLines() throws {
        let frame = LocalFrame(origin: origin)
        var ev: [TraceEvent] = []
        for k in 0...10 { ev.append(TraceEvent(time: Double(k), payload: .groundTruth(GroundTruth(position: .local(SIMD3(0, 0, 0)))))) }
        let g = frame.geodetic(east: 1, north: 0)
        let fix = { (t: Double) in TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: g.latitude, longitude: g.longitude, accuracy: 3))) }
        ev.append(fix(9.5))
        ev.sort { $0.time < $1.time }
        let loc = try tempTrace(ev, extraLines: [
            "{\"t\": 8.9, \"type\": \"gnss\", \"lat\": \(g.latitude), \"lon\": \(g.longitude), \"acc\": 3}",   // 0.6 s late: reordered
            "{\"t\": 2.0, \"type\": \"gnss\", \"lat\": \(g.latitude), \"lon\": \(g.longitude), \"acc\": 3}",   // 8 s late: skipped
            "{\"t\": 9.7, \"type\": \"gnss\", \"lat\": ",                                                    // malformed
        ])
        let r = try Replayer().run(loc)
        #expect(r.scores.score("gnss")?.count == 2)
        #expect(r.stats.skipped == ["out_of_order": 1, "invalid_json": 1])
        #expect(r.stats.outOfOrder == 2)
        #expect(throws: TraceDataError.self) { try Replayer(options: ReplayOptions(mode: .strict)).run(loc) }
    }

    @Test func progressHookIsCalled() throws {
        var ev: [TraceEvent] = []
        for k in 0..<10_000 { ev.append(TraceEvent(time: Double(k) * 0.01, payload: .imu(IMUSample(kind: .accelerometer, x: 0, y: 0, z: 9.8)))) }
        let r = Replayer()
        var calls: [(Int64, Int64?)] = []
        r.progress = { calls.append(($0, $1)) }
        _ = try r.run(try tempTrace(ev))
        #expect(calls.count >= 3)
        #expect(calls.last!.0 == calls.last!.1)
    }
}
