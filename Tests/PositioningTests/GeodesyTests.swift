import Testing
@testable import Positioning

@Suite struct LocalFrameTests {
    @Test func enuRoundTrip() {
        let f = LocalFrame(origin: Geodetic(latitude: 48.137, longitude: 11.575, height: 520))
        let g = f.geodetic(east: 1234.5, north: -987.25, up: 12)
        let v = f.enu(g)
        #expect(abs(v.x - 1234.5) < 1e-6 && abs(v.y + 987.25) < 1e-6 && abs(v.z - 12) < 1e-6)
    }

    /// A horizontal position stored as latitude/longitude at the origin's height reads back to
    /// itself when it is the ground point (`groundGeodetic`): within 1 mm at 80 km east and
    /// north-east, while the tangent-plane point with its height dropped is 6 m off at 80 km.
    @Test func groundPointRoundTrip() {
        let f = LocalFrame(origin: Geodetic(latitude: 52.3, longitude: 9.8, height: 100))
        for (e, n) in [(80_000.0, 0.0), (56_569.0, 56_569.0), (-3_000.0, 1_500.0)] {
            let back = f.en(latitude: f.groundGeodetic(east: e, north: n).latitude, longitude: f.groundGeodetic(east: e, north: n).longitude, height: 100)
            #expect(abs(back.x - e) < 0.001 && abs(back.y - n) < 0.001, "\(e), \(n) → \(back)")
        }
        let t = f.geodetic(east: 80_000, north: 0)
        let tangent = f.en(latitude: t.latitude, longitude: t.longitude, height: 100)
        #expect(abs(tangent.x - 80_000) > 5)
    }
}
