import Testing
import Foundation
@testable import Positioning

/// Angular difference in degrees modulo 360.
private func angleDiff(_ a: Double, _ b: Double) -> Double { abs(remainder(a - b, 360)) }

/// Reference geodesics on WGS84: the 20 test cases of GeographicLib's test suite
/// (geographiclib/geographiclib, tests/geodtest.cpp and the C library's geodtest.c; taken
/// from Karney's GeodTest.dat, https://geographiclib.sourceforge.io/C++/doc/geodesic.html#testgeod).
/// Columns: lat1, lon1, azi1, lat2, lon2, azi2 (deg), s12 (m).
let geodTestCases: [[Double]] = [
    [35.60777, -139.44815, 111.098748429560326, -11.17491, -69.95921, 129.289270889708762, 8935244.5604818305],
    [55.52454, 106.05087, 22.020059880982801, 77.03196, 197.18234, 109.112041110671519, 4105086.1713924406],
    [-21.97856, 142.59065, -32.44456876433189, 41.84138, 98.56635, -41.84359951440466, 8394328.894657671],
    [-66.99028, 112.2363, 173.73491240878403, -12.70631, 285.90344, 2.512956620913668, 11150344.2312080241],
    [-17.42761, 173.34268, -159.033557661192928, -15.84784, 5.93557, -20.787484651536988, 16076603.1631180673],
    [32.84994, 48.28919, 150.492927788121982, -56.28556, 202.29132, 48.113449399816759, 16727068.9438164461],
    [6.96833, 52.74123, 92.581585386317712, -7.39675, 206.17291, 90.721692165923907, 17102477.2496958388],
    [-50.56724, -16.30485, -105.439679907590164, -33.56571, -94.97412, -47.348547835650331, 6455670.5118668696],
    [-58.93002, -8.90775, 140.965397902500679, -8.91104, 133.13503, 19.255429433416599, 11756066.0219864627],
    [-68.82867, -74.28391, 93.774347763114881, -50.63005, -8.36685, 34.65564085411343, 3956936.926063544],
    [-10.62672, -32.0898, -86.426713286747751, 5.883, -134.31681, -80.473780971034875, 11470869.3864563009],
    [-21.76221, 166.90563, 29.319421206936428, 48.72884, 213.97627, 43.508671946410168, 9098627.3986554915],
    [-19.79938, -174.47484, 71.167275780171533, -11.99349, -154.35109, 65.589099775199228, 2319004.8601169389],
    [-11.95887, -116.94513, 92.712619830452549, 4.57352, 7.16501, 78.64960934409585, 13834722.5801401374],
    [-87.85331, 85.66836, -65.120313040242748, 66.48646, 16.09921, -4.888658719272296, 17286615.3147144645],
    [1.74708, 128.32011, -101.584843631173858, -11.16617, 11.87109, -86.325793296437476, 12942901.1241347408],
    [-25.72959, -144.90758, -153.647468693117198, -57.70581, -269.17879, -48.343983158876487, 9413446.7452453107],
    [-41.22777, 122.32875, 14.285113402275739, -7.57291, 130.37946, 10.805303085187369, 3812686.035106021],
    [11.01307, 138.25278, 79.43682622782374, 6.62726, 247.05981, 103.708090215522657, 11911190.819018408],
    [-29.47124, 95.14681, -163.779130441688382, -27.46601, -69.15955, -15.909335945554969, 13487015.8381145492],
]

@Suite struct GeodesicTests {
    let g = Geodesic.wgs84

    /// Azimuth tolerance: 10⁻⁹ deg ≈ 0.02 mm of lateral offset at 1,000 km.
    static let azTol = 1e-9

    @Test func inverseMatchesGeographicLibTestCases() throws {
        for c in geodTestCases {
            let r = try #require(g.inverse(Geodetic(latitude: c[0], longitude: c[1]), Geodetic(latitude: c[3], longitude: c[4])))
            #expect(abs(r.distance - c[6]) < 1e-4, "s12 \(r.distance) vs \(c[6])")          // 0.1 mm
            #expect(angleDiff(r.azimuth1, c[2]) < Self.azTol, "azi1 \(r.azimuth1) vs \(c[2])")
            #expect(angleDiff(r.azimuth2, c[5]) < Self.azTol, "azi2 \(r.azimuth2) vs \(c[5])")
        }
    }

    @Test func directMatchesGeographicLibTestCases() throws {
        for c in geodTestCases {
            let r = try #require(g.direct(from: Geodetic(latitude: c[0], longitude: c[1]), azimuth: c[2], distance: c[6]))
            // 1e-9 deg of latitude ≈ 0.1 mm.
            #expect(abs(r.destination.latitude - c[3]) < 1e-9, "lat2 \(r.destination.latitude) vs \(c[3])")
            #expect(angleDiff(r.destination.longitude, c[4]) < 1e-9, "lon2 \(r.destination.longitude) vs \(c[4])")
            #expect(angleDiff(r.azimuth2, c[5]) < Self.azTol)
        }
    }

    /// Karney (2013), "Algorithms for geodesics", J. Geodesy 87:43–55, table 2 (direct problem):
    /// φ₁ = 40°, α₁ = 30°, s₁₂ = 10,000 km → φ₂ = 41.79331020506°, λ₁₂ = 137.84490004377°, α₂ = 149.09016931807°.
    @Test func karney2013DirectExample() throws {
        let r = try #require(g.direct(from: Geodetic(latitude: 40, longitude: 0), azimuth: 30, distance: 10_000_000))
        #expect(abs(r.destination.latitude - 41.79331020506) < 1e-10)
        #expect(abs(r.destination.longitude - 137.84490004377) < 1e-9)   // 1e-9 deg ≈ 0.08 mm here
        #expect(abs(r.azimuth2 - 149.09016931807) < 1e-10)
    }

    /// Karney (2013) table 3 (short line): φ₁ = −30.12345°, φ₂ = −30.12344°, λ₁₂ = 0.00005°
    /// → α₁ = 77.04353354237°, α₂ = 77.04350844913°, s₁₂ = 4.944208 m.
    @Test func karney2013ShortInverse() throws {
        let r = try #require(g.inverse(Geodetic(latitude: -30.12345, longitude: 0), Geodetic(latitude: -30.12344, longitude: 0.00005)))
        #expect(abs(r.distance - 4.944208) < 1e-6)
        #expect(abs(r.azimuth1 - 77.04353354237) < 1e-8)
        #expect(abs(r.azimuth2 - 77.04350844913) < 1e-8)
    }

    /// Karney (2013) tables 4–6 (nearly antipodal, where Vincenty's iteration fails):
    /// φ₁ = −30°, φ₂ = 29.9°, λ₁₂ = 179.8° → α₁ = 161.89052473633°, α₂ = 18.09073724574°,
    /// s₁₂ = 19,989,832.827610 m.
    @Test func karney2013NearlyAntipodalInverse() throws {
        let r = try #require(g.inverse(Geodetic(latitude: -30, longitude: 0), Geodetic(latitude: 29.9, longitude: 179.8)))
        #expect(abs(r.distance - 19_989_832.827610) < 1e-4)
        // Near the antipode dλ₁₂/dα₁ = 0.0109 (Karney table 5), so a 0.02 mm longitude error
        // of the series shows up as ~1.4e-8 deg of azimuth; the end point is still hit to 0.1 mm.
        #expect(abs(r.azimuth1 - 161.89052473633) < 3e-8)
        #expect(abs(r.azimuth2 - 18.09073724574) < 3e-8)
        let d = try #require(g.direct(from: Geodetic(latitude: -30, longitude: 0), azimuth: r.azimuth1, distance: r.distance))
        #expect(try #require(g.inverse(d.destination, Geodetic(latitude: 29.9, longitude: 179.8))).distance < 1e-4)
    }

    /// GeographicLib regression tests GeodSolve6, 9, 10, 11, 33 (geodtest.c): nearly antipodal
    /// and equatorial lines, distances to 0.5 mm, azimuths to 0.5e-5 deg where published.
    @Test func geographicLibAntipodalRegressions() throws {
        let cases: [(Double, Double, Double, Double, Double)] = [
            (88.202499451857, 0, -88.202499451857, 179.981022032992859592, 20003898.214),
            (89.262080389218, 0, -89.262080389218, 179.992207982775375662, 20003925.854),
            (89.333123580033, 0, -89.333123580032997687, 179.99295812360148422, 20003926.881),
            (56.320923501171, 0, -56.320923501171, 179.664747671772880215, 19993558.287),
            (52.784459512564, 0, -52.784459512563990912, 179.634407464943777557, 19991596.095),
            (48.522876735459, 0, -48.52287673545898293, 179.599720456223079643, 19989144.774),
        ]
        for c in cases {
            let r = try #require(g.inverse(Geodetic(latitude: c.0, longitude: c.1), Geodetic(latitude: c.2, longitude: c.3)))
            #expect(abs(r.distance - c.4) < 0.5e-3, "\(c): \(r.distance)")
        }
        // GeodSolve33: equatorial points.
        let e1 = try #require(g.inverse(Geodetic(latitude: 0, longitude: 0), Geodetic(latitude: 0, longitude: 179)))
        #expect(abs(e1.distance - 19926189) < 0.5 && abs(e1.azimuth1 - 90) < 0.5e-5 && abs(e1.azimuth2 - 90) < 0.5e-5)
        let e2 = try #require(g.inverse(Geodetic(latitude: 0, longitude: 0), Geodetic(latitude: 0, longitude: 179.5)))
        #expect(abs(e2.distance - 19980862) < 0.5)
        // Two mirror-image shortest lines exist here: α₁ = 55.96650° (north) or 124.03350° (south).
        #expect(min(angleDiff(e2.azimuth1, 55.96650), angleDiff(e2.azimuth1, 124.03350)) < 0.5e-5)
        let e3 = try #require(g.inverse(Geodetic(latitude: 0, longitude: 0), Geodetic(latitude: 0, longitude: 180)))
        #expect(abs(e3.distance - 20003931) < 0.5 && angleDiff(e3.azimuth1, 0) < 0.5e-5 && angleDiff(e3.azimuth2, 180) < 0.5e-5)
        let e4 = try #require(g.inverse(Geodetic(latitude: 0, longitude: 0), Geodetic(latitude: 1, longitude: 180)))
        #expect(angleDiff(e4.azimuth1, 0) < 0.5e-5 && angleDiff(e4.azimuth2, 180) < 0.5e-5)
        // GeodSolve0 / GeodSolve1: JFK → CDG (published to 0.5 m / 0.5e-5 deg).
        let jfk = try #require(g.inverse(Geodetic(latitude: 40.6, longitude: -73.8), Geodetic(latitude: 49.01666667, longitude: 2.55)))
        #expect(abs(jfk.distance - 5853226) < 0.5 && abs(jfk.azimuth1 - 53.47022) < 0.5e-5 && abs(jfk.azimuth2 - 111.59367) < 0.5e-5)
        let d = try #require(g.direct(from: Geodetic(latitude: 40.63972222, longitude: -73.77888889), azimuth: 53.5, distance: 5850e3))
        #expect(abs(d.destination.latitude - 49.01467) < 0.5e-5 && abs(d.destination.longitude - 2.56106) < 0.5e-5)
        #expect(abs(d.azimuth2 - 111.62947) < 0.5e-5)
        // GeodSolve4: a 7 cm line.
        let short = try #require(g.inverse(Geodetic(latitude: 36.493349428792, longitude: 0),
                                           Geodetic(latitude: 36.49334942879201, longitude: 0.0000008)))
        #expect(abs(short.distance - 0.072) < 0.5e-3)
    }

    /// Vincenty (1975), Survey Review 23(176), test line (a) on the Bessel ellipsoid
    /// (a = 6377397.155 m, 1/f = 299.1528128): φ₁ = 55°45′, φ₂ = −33°26′, L = 108°13′ →
    /// s = 14,110,526.170 m, α₁ = 96°36′08.79960″, α₂ (back azimuth) = 137°52′22.01454″.
    @Test func vincenty1975LineA() throws {
        let bessel = Geodesic(Ellipsoid(a: 6377397.155, f: 1 / 299.1528128))
        let r = try #require(bessel.inverse(Geodetic(latitude: 55.75, longitude: 0), Geodetic(latitude: -(33 + 26.0 / 60), longitude: 108 + 13.0 / 60)))
        #expect(abs(r.distance - 14_110_526.170) < 1e-3)
        #expect(abs(r.azimuth1 - (96 + 36.0 / 60 + 8.79960 / 3600)) < 1e-8)
        #expect(angleDiff(r.azimuth2, 137 + 52.0 / 60 + 22.01454 / 3600) < 1e-8)
    }

    /// The Vincenty iteration and the antipodal bisection fallback must agree where both work.
    @Test func fallbackAgreesWithVincentyIteration() throws {
        var rng = TestRNG(seed: 7)
        var compared = 0
        for _ in 0..<500 {
            let lat1 = rng.uniform(-89, 89), lat2 = rng.uniform(-89, 89), lon12 = rng.uniform(-179, 179)
            guard let v = g.vincentyInverse(lat1, lat2, lon12 * .pi / 180) else { continue }
            let k = try #require(g.antipodalInverse(lat1, lat2, lon12))
            #expect(abs(v.distance - k.distance) < 1e-4, "\(lat1) \(lat2) \(lon12): \(v.distance) vs \(k.distance)")
            #expect(angleDiff(v.azimuth1, k.azimuth1) < 1e-8 && angleDiff(v.azimuth2, k.azimuth2) < 1e-8)
            compared += 1
        }
        #expect(compared > 400)
    }

    /// Inverse then direct lands on the second point.
    @Test func inverseDirectRoundTrip() throws {
        var rng = TestRNG(seed: 99)
        for _ in 0..<500 {
            let p1 = Geodetic(latitude: rng.uniform(-89, 89), longitude: rng.uniform(-180, 180))
            let p2 = Geodetic(latitude: rng.uniform(-89, 89), longitude: rng.uniform(-180, 180))
            let a = try #require(g.inverse(p1, p2))
            // Round trip through the direct problem: lands on p2 within 0.1 mm.
            let d = try #require(g.direct(from: p1, azimuth: a.azimuth1, distance: a.distance))
            let back = try #require(g.inverse(d.destination, p2))
            #expect(back.distance < 1e-4, "\(p1) → \(p2): off by \(back.distance) m")
            #expect(angleDiff(d.azimuth2, a.azimuth2) < 1e-8)
        }
    }

    @Test func degenerateInputIsNilOrZero() throws {
        #expect(g.inverse(Geodetic(latitude: .nan, longitude: 0), Geodetic(latitude: 0, longitude: 0)) == nil)
        #expect(g.inverse(Geodetic(latitude: 91, longitude: 0), Geodetic(latitude: 0, longitude: 0)) == nil)
        #expect(g.direct(from: Geodetic(latitude: 0, longitude: 0), azimuth: .infinity, distance: 1) == nil)
        let z = try #require(g.inverse(Geodetic(latitude: 12, longitude: 34), Geodetic(latitude: 12, longitude: 394)))
        #expect(z.distance == 0)
        // Pole to pole: the meridian arc, twice the WGS84 quarter meridian 10,001,965.729 m.
        let pp = try #require(g.inverse(Geodetic(latitude: 90, longitude: 0), Geodetic(latitude: -90, longitude: 0)))
        #expect(abs(pp.distance - 2 * 10_001_965.729) < 1e-3)
    }
}

/// GeographicLib CartConvert(1) manual, EXAMPLES section
/// (https://geographiclib.sourceforge.io/C++/doc/CartConvert.1.html), WGS84:
/// `echo 33.3 44.4 6000 | CartConvert` → 3816209.60 3737108.55 3485109.57;
/// `… | CartConvert -l 33 44 20` → 37288.97 33374.29 5783.64.
@Suite struct ECEFReferenceTests {
    @Test func geodeticToECEF() {
        let e = ECEF(Geodetic(latitude: 33.3, longitude: 44.4, height: 6000))
        #expect(abs(e.x - 3816209.60) < 0.006 && abs(e.y - 3737108.55) < 0.006 && abs(e.z - 3485109.57) < 0.006)
        let g = e.geodetic
        #expect(abs(g.latitude - 33.3) < 1e-12 && abs(g.longitude - 44.4) < 1e-12 && abs(g.height - 6000) < 1e-6)
    }

    @Test func localCartesian() {
        let f = LocalFrame(origin: Geodetic(latitude: 33, longitude: 44, height: 20))
        let v = f.enu(Geodetic(latitude: 33.3, longitude: 44.4, height: 6000))
        // The exact rotation gives up = 5783.6466 m (reproduced independently in double
        // precision); the manual prints 5783.64, 6.6 mm lower, so up is checked to 1 cm.
        #expect(abs(v.x - 37288.97) < 0.006 && abs(v.y - 33374.29) < 0.006 && abs(v.z - 5783.64) < 0.01, "\(v)")
    }

    @Test func ecefToGeodeticFromPublishedCartesian() {
        // The manual's rounded output (cm) maps back to the input within that rounding.
        let g = ECEF(x: 3816209.60, y: 3737108.55, z: 3485109.57).geodetic
        #expect(abs(g.latitude - 33.3) < 1e-7 && abs(g.longitude - 44.4) < 1e-7 && abs(g.height - 6000) < 0.01, "\(g)")
    }
}

