import Testing
@testable import Positioning

@Suite struct LocalFrameTests {
    @Test func enuRoundTrip() {
        let f = LocalFrame(origin: Geodetic(latitude: 48.137, longitude: 11.575, height: 520))
        let g = f.geodetic(east: 1234.5, north: -987.25, up: 12)
        let v = f.enu(g)
        #expect(abs(v.x - 1234.5) < 1e-6 && abs(v.y + 987.25) < 1e-6 && abs(v.z - 12) < 1e-6)
    }
}
