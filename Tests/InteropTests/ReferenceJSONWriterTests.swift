import Foundation
import Testing
import Positioning
import Replay
import TestSupport

/// The one reference.json writer: given members replaced, others kept, NSNull removes, a new
/// file (and its folder) created; the result reads back through ReferenceLoader.
@Suite struct ReferenceJSONWriterTests {
    @Test func setsGivenMembersAndKeepsTheRest() throws {
        let dir = PackagePaths.temporaryFolder("refwriter-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("sub/reference.json")
        try ReferenceJSONWriter.update(url: url, members: ["beacons": [[String: Any]](), "fingerprints": NSNull()])
        try ReferenceJSONWriter.update(url: url, members: [
            "aps": [["bssid": "00:aa:00:00:00:01", "lat": 48.0, "lon": 11.0, "h": 500.0]],
            "fingerprints": [String: Any](),
        ])
        try ReferenceJSONWriter.update(url: url, members: ["fingerprints": NSNull()])
        let o = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        #expect(Set(o.keys) == ["aps", "beacons"])
        #expect((o["aps"] as? [[String: Any]])?.first?["bssid"] as? String == "00:aa:00:00:00:01")
        let ref = try ReferenceLoader.load(url: url, frame: LocalFrame(origin: Geodetic(latitude: 48, longitude: 11, height: 500)))
        #expect(ref.accessPoints.count == 1)
        // No temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path) == ["reference.json"])
    }
}
