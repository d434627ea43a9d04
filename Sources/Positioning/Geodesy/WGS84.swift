import Foundation

/// WGS84 ellipsoid constants (NIMA TR8350.2).
public enum WGS84 {
    /// Semi-major axis a, m.
    public static let a = 6_378_137.0
    /// Flattening f = 1/298.257223563.
    public static let f = 1 / 298.257223563
    /// Semi-minor axis b = a(1 − f), m.
    public static let b = a * (1 - f)
    /// First eccentricity squared e² = f(2 − f) ≈ 6.69437999014e-3.
    public static let e2 = f * (2 - f)
}

/// A WGS84 geodetic position: latitude and longitude in degrees, ellipsoidal height in m.
public struct Geodetic: Sendable, Equatable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double
    public var height: Double
    public init(latitude: Double, longitude: Double, height: Double = 0) {
        self.latitude = latitude; self.longitude = longitude; self.height = height
    }
}

/// Earth-centred, Earth-fixed Cartesian coordinates, m.
public struct ECEF: Sendable, Equatable {
    public var x: Double, y: Double, z: Double
    public init(x: Double, y: Double, z: Double) { self.x = x; self.y = y; self.z = z }

    /// Geodetic → ECEF (exact):
    /// X = (N + h) cos φ cos λ, Y = (N + h) cos φ sin λ, Z = (N(1 − e²) + h) sin φ,
    /// N = a / √(1 − e² sin² φ).
    public init(_ g: Geodetic) {
        let phi = g.latitude * .pi / 180, lam = g.longitude * .pi / 180
        let s = sin(phi), c = cos(phi)
        let n = WGS84.a / sqrt(1 - WGS84.e2 * s * s)
        x = (n + g.height) * c * cos(lam)
        y = (n + g.height) * c * sin(lam)
        z = (n * (1 - WGS84.e2) + g.height) * s
    }

    /// ECEF → geodetic by Bowring's initial value and Newton iteration on latitude
    /// (converges to < 1e-12 rad in ≤ 4 iterations for |h| < 1e7 m).
    public var geodetic: Geodetic {
        let p = sqrt(x * x + y * y)
        let lam = atan2(y, x)
        if p < 1e-9 {  // pole
            let lat = z >= 0 ? 90.0 : -90.0
            return Geodetic(latitude: lat, longitude: 0, height: abs(z) - WGS84.b)
        }
        let ep2 = (WGS84.a * WGS84.a - WGS84.b * WGS84.b) / (WGS84.b * WGS84.b)
        let th = atan2(z * WGS84.a, p * WGS84.b)
        var phi = atan2(z + ep2 * WGS84.b * pow(sin(th), 3), p - WGS84.e2 * WGS84.a * pow(cos(th), 3))
        var h = 0.0
        for _ in 0..<5 {
            let s = sin(phi)
            let n = WGS84.a / sqrt(1 - WGS84.e2 * s * s)
            h = p / cos(phi) - n
            let next = atan2(z, p * (1 - WGS84.e2 * n / (n + h)))
            if abs(next - phi) < 1e-14 { phi = next; break }
            phi = next
        }
        let s = sin(phi)
        let n = WGS84.a / sqrt(1 - WGS84.e2 * s * s)
        // Height formula stable at all latitudes.
        h = p * cos(phi) + z * s - WGS84.a * WGS84.a / n
        return Geodetic(latitude: phi * 180 / .pi, longitude: lam * 180 / .pi, height: h)
    }
}

/// A local East-North-Up tangent frame anchored at `origin` (the trace header's origin).
///
/// ENU = R·(X − X₀) with rows [−sin λ₀, cos λ₀, 0], [−sin φ₀ cos λ₀, −sin φ₀ sin λ₀, cos φ₀],
/// [cos φ₀ cos λ₀, cos φ₀ sin λ₀, sin φ₀]. Exact (no flat-earth shortcut), so it is valid
/// for cell sites kilometres away.
public struct LocalFrame: Sendable, Equatable {
    public let origin: Geodetic
    private let o: ECEF
    private let sl: Double, cl: Double, sp: Double, cp: Double

    public init(origin: Geodetic) {
        self.origin = origin
        o = ECEF(origin)
        let phi = origin.latitude * .pi / 180, lam = origin.longitude * .pi / 180
        sl = sin(lam); cl = cos(lam); sp = sin(phi); cp = cos(phi)
    }

    /// Geodetic → local ENU (m).
    public func enu(_ g: Geodetic) -> SIMD3<Double> { enu(ECEF(g)) }

    /// ECEF → local ENU (m): `enu` of a point whose ECEF is already known (serve's snapshot keeps
    /// each known radio's, computed once: the same doubles as `enu` of its geodetic position).
    public func enu(_ e: ECEF) -> SIMD3<Double> {
        let dx = e.x - o.x, dy = e.y - o.y, dz = e.z - o.z
        return SIMD3(-sl * dx + cl * dy,
                     -sp * cl * dx - sp * sl * dy + cp * dz,
                     cp * cl * dx + cp * sl * dy + sp * dz)
    }

    /// Horizontal ENU (m) of a latitude/longitude (deg) at height h (m).
    public func en(latitude: Double, longitude: Double, height: Double = 0) -> SIMD2<Double> {
        let v = enu(Geodetic(latitude: latitude, longitude: longitude, height: height))
        return SIMD2(v.x, v.y)
    }

    /// Local ENU (m) → geodetic.
    public func geodetic(_ v: SIMD3<Double>) -> Geodetic {
        // X = X₀ + Rᵀ·ENU
        let dx = -sl * v.x - sp * cl * v.y + cp * cl * v.z
        let dy = cl * v.x - sp * sl * v.y + cp * sl * v.z
        let dz = cp * v.y + sp * v.z
        return ECEF(x: o.x + dx, y: o.y + dy, z: o.z + dz).geodetic
    }

    public func geodetic(east: Double, north: Double, up: Double = 0) -> Geodetic {
        geodetic(SIMD3(east, north, up))
    }

    /// The ground point of a horizontal position (e, n): the latitude/longitude at the origin's
    /// height whose `en(latitude:longitude:height:)` is (e, n) — started below the tangent plane
    /// by the curvature drop (e² + n²)/2R and corrected twice (sub-millimetre at 80 km). The
    /// tangent-plane point stored without its height (`geodetic(east:north:)`, h dropped) would
    /// read back 6 m off there (its local vertical is tilted by d/R).
    public func groundGeodetic(east: Double, north: Double) -> Geodetic {
        let target = SIMD2(east, north)
        var p = target, g = origin
        for k in 0..<3 {
            let t = geodetic(east: p.x, north: p.y, up: -(p * p).sum() / (2 * 6_371_000))
            g = Geodetic(latitude: t.latitude, longitude: t.longitude, height: origin.height)
            if k < 2 { p += target - en(latitude: g.latitude, longitude: g.longitude, height: origin.height) }
        }
        return g
    }
}
