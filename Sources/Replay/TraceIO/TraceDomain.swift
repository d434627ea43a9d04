import Foundation

/// The domain of every number the trace format carries: one rule per quantity, used by the
/// trace line decoder (`validate`, `replay`), the reference.json loader, `refine` and the
/// importers (which run every event they write through the decoder). What validates also
/// replays: a value inside these bounds cannot overflow the arithmetic downstream (squares of
/// positions stay far below `Double.greatestFiniteMagnitude`, `Int(e / cell size)` fits).
///
/// The bounds are physical, not statistical: they reject values no sensor or frame can
/// produce (docs/trace-format.md, "Domains"), never a merely unlikely one.
public enum TraceDomain {
    /// |t| in seconds: Unix time in seconds up to the year 2286, GPS and boot clocks are smaller.
    public static let time: ClosedRange<Double> = -1e10...1e10
    /// |e|, |n|, |u| in metres of the trace's ENU frame: half the Earth's circumference
    /// (no point on Earth is farther from the origin along a chord).
    public static let localMetres: ClosedRange<Double> = -2e7...2e7
    /// Ellipsoidal height, m: below the deepest ocean trench to above any aircraft or balloon.
    public static let height: ClosedRange<Double> = -2e4...1e5
    /// Reported horizontal or vertical accuracy (1σ or 68 %), m.
    public static let accuracy: ClosedRange<Double> = 0...2e7
    /// Reported speed over ground, m/s (up to orbital speed).
    public static let speed: ClosedRange<Double> = 0...1e4
    /// Received power (WiFi RSS, cell RSRP), dBm; RSRQ and SNR in dB.
    public static let power: ClosedRange<Double> = -300...100
    /// Carrier frequency, MHz (WiFi 2.4/5/6 GHz; up to 100 GHz); 0 = unknown (UJIIndoorLoc).
    public static let frequencyMHz: ClosedRange<Double> = 0...100_000
    /// IMU components (m/s², rad/s, µT, unitless quaternion) and barometric pressure (hPa).
    public static let imu: ClosedRange<Double> = -1e6...1e6
    /// Timing-advance index (LTE: 0…1282; NR extended ranges stay far below this).
    public static let timingAdvance: ClosedRange<Int> = 0...1_000_000
    /// iBeacon major and minor numbers (16-bit unsigned in the advertisement).
    public static let iBeaconNumber: ClosedRange<Int> = 0...65_535
    /// Floor index.
    public static let floor: ClosedRange<Int> = -1000...1000
    /// Step length, m.
    public static let stepLength: ClosedRange<Double> = 0...100
    /// Image size, px.
    public static let pixels: ClosedRange<Int> = 1...1_000_000
    /// Image coordinates and focal lengths, px.
    public static let pixelCoordinate: ClosedRange<Double> = -1e7...1e7
    /// Sample counters and sample rates of acoustic ranging (samples, Hz).
    public static let samples: ClosedRange<Double> = -1e15...1e15
    /// Angles in degrees (declination, azimuth, beamwidth, GNSS course).
    public static let degrees: ClosedRange<Double> = -720...720
    /// Temperature, °C.
    public static let temperature: ClosedRange<Double> = -100...100
    /// Integers (identifiers such as MCC, MNC, LAC/TAC, cell id, counts): those a JSON number,
    /// read as a Double, carries exactly, |v| ≤ 2^53. A larger one would be written in a form the
    /// readers cannot read back as the same integer.
    public static let exactInteger: ClosedRange<Int> = -9_007_199_254_740_992...9_007_199_254_740_992

    /// nil when `v` lies in `range`; otherwise the reason, e.g. `t 1e+300 outside [-1e10, 1e10] s`.
    public static func violation(_ name: String, _ v: Double, _ range: ClosedRange<Double>, _ unit: String) -> String? {
        guard v.isFinite else { return "\(name) is not a finite number" }
        guard range.contains(v) else {
            return "\(name) \(v) outside [\(format(range.lowerBound)), \(format(range.upperBound))]\(unit.isEmpty ? "" : " " + unit)"
        }
        return nil
    }

    /// Integer form of `violation`.
    public static func violation(_ name: String, _ v: Int, _ range: ClosedRange<Int>, _ unit: String = "") -> String? {
        range.contains(v) ? nil : "\(name) \(v) outside [\(range.lowerBound), \(range.upperBound)]\(unit.isEmpty ? "" : " " + unit)"
    }

    /// Latitude and longitude in degrees.
    public static func latLonViolation(_ lat: Double, _ lon: Double) -> String? {
        guard lat.isFinite, (-90...90).contains(lat) else { return "lat \(lat) outside [-90, 90] deg" }
        guard lon.isFinite, (-180...180).contains(lon) else { return "lon \(lon) outside [-180, 180] deg" }
        return nil
    }

    private static func format(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e6 { return String(Int(v)) }
        return String(format: "%g", v)
    }
}
