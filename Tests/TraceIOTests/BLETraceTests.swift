import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

/// The `ble` event (Bluetooth LE scan, docs/trace-format.md): exact line, round trip, bad input,
/// and what a reader that does not know the type does with it.
@Suite struct BLETraceTests {
    static let scan = BLEScan(beacons: [
        BLEObservation(id: "24:0a:c4:a7:e9:41", iBeacon: IBeaconID(uuid: "FB349B5F-8000-0080-0010-00003CFE0000", major: 17834, minor: 10672),
                       rss: -101, txPower: -75, lastSeen: 1574142063.086),
        BLEObservation(id: "fb349b5f-8000-0080-0010-00003cfe0000:3280:41520", rss: -97),
    ])

    @Test func lineIsExactAndRoundTrips() throws {
        let e = TraceEvent(time: 1574142063.086, payload: .ble(Self.scan))
        let line = TraceLineEncoder().encode(e)
        #expect(line == #"{"t":1574142063.086,"type":"ble","beacons":[{"id":"24:0a:c4:a7:e9:41","uuid":"FB349B5F-8000-0080-0010-00003CFE0000","major":17834,"minor":10672,"rss":-101,"tx":-75,"t_seen":1574142063.086},{"id":"fb349b5f-8000-0080-0010-00003cfe0000:3280:41520","rss":-97}]}"#)
        let u = try TempTrace.write([line])
        defer { try? FileManager.default.removeItem(at: u) }
        let r = try TraceReader(url: u, mode: .strict)
        #expect(try r.readAll() == [e])
        #expect(r.stats.eventsByType["ble"] == 1)
        #expect(r.stats.unknownTotal == 0)
    }

    @Test func idsAreLowerCased() throws {
        let u = try TempTrace.write([#"{"t":1,"type":"ble","beacons":[{"id":"AA:BB:CC:DD:EE:FF","rss":-80}]}"#])
        defer { try? FileManager.default.removeItem(at: u) }
        let r = try TraceReader(url: u, mode: .strict)
        #expect(try r.readAll().first?.payload == .ble(BLEScan(beacons: [BLEObservation(id: "aa:bb:cc:dd:ee:ff", rss: -80)])))
    }

    private func strictError(_ line: String) -> String? {
        do {
            let u = try TempTrace.write([line])
            defer { try? FileManager.default.removeItem(at: u) }
            _ = try TraceReader(url: u, mode: .strict).readAll()
            return nil
        } catch let e as TraceDataError { return "\(e.line): \(e.reason)" } catch { return "\(error)" }
    }

    @Test func badBeaconsNameLineAndReason() {
        #expect(strictError(#"{"t":1,"type":"ble"}"#) == "2: missing key 'beacons'")
        #expect(strictError(#"{"t":1,"type":"ble","beacons":[{"rss":-80}]}"#) == "2: missing key 'beacons[0].id'")
        #expect(strictError(#"{"t":1,"type":"ble","beacons":[{"id":"a","rss":"x"}]}"#) == "2: key 'beacons[0].rss' must be a number, got a string")
        #expect(strictError(#"{"t":1,"type":"ble","beacons":[{"id":"","rss":-80}]}"#) == "2: beacons[0].id must not be empty")
        #expect(strictError(#"{"t":1,"type":"ble","beacons":[{"id":"a","uuid":"U","major":1,"rss":-80}]}"#) == "2: missing key 'beacons[0].minor'")
        #expect(strictError(#"{"t":1,"type":"ble","beacons":[{"id":"a","uuid":"U","major":70000,"minor":1,"rss":-80}]}"#)
                == "2: beacons[0].major 70000 outside [0, 65535]")
        #expect(strictError(#"{"t":1,"type":"ble","beacons":[{"id":"a","rss":-80,"tx":1e9}]}"#)?.hasPrefix("2: beacons[0].tx 1000000000.0 outside") == true)
    }

    /// Additive in v1: a reader that does not know `ble` counts it as an unknown type and goes
    /// on; here the same rule, proven with a type this reader does not know either.
    @Test func unknownTypesAreCountedNotFatal() throws {
        let u = try TempTrace.write([#"{"t":1,"type":"ble2","beacons":[]}"#, #"{"t":2,"type":"step"}"#])
        defer { try? FileManager.default.removeItem(at: u) }
        let r = try TraceReader(url: u, mode: .strict)
        #expect(try r.readAll().count == 1)
        #expect(r.stats.unknownTotal == 1)
    }

    @Test func referenceBeaconsLoadLikeAccessPoints() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-ble-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(#"{"ble":[{"id":"24:0A:C4:A7:E9:41","e":3,"n":4,"u":2.5,"floor":0,"p0":-75}]}"#.utf8)
            .write(to: dir.appendingPathComponent("reference.json"))
        let r = try ReferenceLoader.load(folder: dir, frame: LocalFrame(origin: Geodetic(latitude: 48, longitude: 11, height: 0)))
        #expect(r.bleBeacons["24:0a:c4:a7:e9:41"] == AccessPoint(bssid: "24:0a:c4:a7:e9:41", position: SIMD3(3, 4, 2.5), floor: 0, p0: -75))
        #expect(r.accessPoints.isEmpty)
        try Data(#"{"ble":[{"e":3,"n":4}]}"#.utf8).write(to: dir.appendingPathComponent("reference.json"))
        #expect(throws: TraceDataError.self) {
            _ = try ReferenceLoader.load(folder: dir, frame: LocalFrame(origin: Geodetic(latitude: 48, longitude: 11, height: 0)))
        }
    }
}
