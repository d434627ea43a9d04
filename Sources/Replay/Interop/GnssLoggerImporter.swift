import Foundation
import Positioning

/// Importer for Android GnssLogger text logs (v1.4 … v3: comma-separated records, one
/// `# Type,col,col,…` header line per record type describing its columns).
///
/// - `Fix` with provider `gps`/`GPS` → `gnss` at `t` = UTC time ms / 1000 (Unix s):
///   `Latitude[Degrees]`, `Longitude[Degrees]`, `Altitude[Meters]` (WGS84 ellipsoidal),
///   `Accuracy[Meters]` (68 %), `VerticalAccuracyMeters`, the receiver's speed `Speed`/`SpeedMps`
///   (m/s) and course `Bearing`/`BearingDegrees` (° true; v1.4 logs have no course, so only a speed
///   of 0 gives a velocity) → `spd`/`brg`, nil when the column is missing or empty. The speed and
///   course accuracies of newer logs (`SpeedAccuracyMps`, `BearingAccuracyDegrees`) are not carried
///   (trace v1 has no key for them; the error model supplies the velocity's σ). Fixes from other providers
///   (network, FLP/fused) are dropped and counted: they are not GNSS.
/// - `Accel`/`Gyro`/`Mag` and `UncalAccel`/`UncalGyro`/`UncalMag` → `acc`/`gyro`/`mag` at
///   `utcTimeMillis`; uncalibrated values have their bias/drift columns subtracted.
/// - `Raw`, `Nav`, `Status`, `OrientationDeg`, `GameRot`, `Agc` and every other record type
///   that has a header line are kept as-is: written verbatim (header first) into side files
///   `<trace>.gnsslogger-<type>.csv` beside the trace (trace format v1 has no raw-measurement
///   event), so nothing of the log is lost.
/// - Records of a type without header line → unknown type (fatal with `--strict`).
/// Default origin: the first GNSS fix.
public enum GnssLoggerImporter {
    static let sensorKinds: [String: IMUKind] = [
        "Accel": .accelerometer, "UncalAccel": .accelerometer, "Gyro": .gyroscope, "UncalGyro": .gyroscope,
        "Mag": .magnetometer, "UncalMag": .magnetometer,
    ]

    public static func parse(_ buf: ByteBuffer, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, first: Geodetic?, side: [String: [String]]) {
        var ctx = ImportContext(options: options, file: file)
        var headers: [String: [String: Int]] = [:]
        var headerLines: [String: String] = [:]
        var side: [String: [String]] = [:]
        var events: [TraceEvent] = []
        var first: Geodetic? = nil
        let device = options.device
        try ctx.forEachRow(of: buf, comment: UInt8(ascii: "#")) { rec, ctx in
            let tl = buf.trimmed(rec.range)
            if rec.isComment {
                var body = buf.string(tl).dropFirst().trimmingCharacters(in: .whitespaces)
                if body.hasPrefix("Version:") || !body.contains(",") { return }
                body = body.replacingOccurrences(of: " ", with: "")
                let names = body.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                headers[names[0]] = columnIndex(names)
                headerLines[names[0]] = body
                return
            }
            let fields = rec.fields
            let type = buf.string(buf.trimmed(fields[0]))
            guard let cols = headers[type] else { try ctx.unknown(type); return }
            func f(_ names: String...) -> Range<Int>? {
                for nm in names { if let i = cols[nm], i < fields.count { let r = buf.trimmed(fields[i]); return r.isEmpty ? nil : r } }
                return nil
            }
            func d(_ names: String...) -> Double? {
                for nm in names { if let i = cols[nm], i < fields.count, let v = buf.double(fields[i]) { return v } }
                return nil
            }
            if type == "Fix" {
                let provider = f("Provider").map { buf.string($0) } ?? ""
                guard provider.lowercased() == "gps" else { ctx.drop("Fix from provider \(provider) (not GNSS)"); return }
                guard let lat = d("Latitude", "LatitudeDegrees"), let lon = d("Longitude", "LongitudeDegrees"),
                      let ms = d("(UTC)TimeInMs", "UnixTimeMillis", "utcTimeMillis"), abs(lat) <= 90, abs(lon) <= 180 else {
                    try ctx.malformed("Fix needs latitude, longitude and UTC time"); return
                }
                let acc = d("Accuracy", "AccuracyMeters") ?? 0
                let alt = d("Altitude", "AltitudeMeters")
                // Speed (v1.4 `Speed`, v2+ `SpeedMps`) and course (`Bearing`/`BearingDegrees`, absent in
                // v1.4): an empty or missing column, or a value out of range, is "not reported" (nil).
                let speed = d("SpeedMps", "Speed").flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
                let bearing = d("BearingDegrees", "Bearing").flatMap { $0.isFinite && $0 >= 0 && $0 <= 360 ? $0 : nil }
                let g = GNSSFix(latitude: lat, longitude: lon, altitude: alt, accuracy: acc,
                                verticalAccuracy: d("VerticalAccuracyMeters"), speed: speed, bearing: bearing)
                if first == nil { first = Geodetic(latitude: lat, longitude: lon, height: alt ?? 0) }
                events.append(TraceEvent(time: ms / 1000, device: device, payload: .gnss(g)))
                return
            }
            if let kind = sensorKinds[type] {
                guard let ms = d("utcTimeMillis", "UnixTimeMillis"), let ti = cols["utcTimeMillis"] ?? cols["UnixTimeMillis"] else {
                    try ctx.malformed("\(type) needs utcTimeMillis"); return
                }
                let v0 = (cols["elapsedRealtimeNanos"] ?? ti) + 1
                guard fields.count >= v0 + 3, let x = buf.double(fields[v0]), let y = buf.double(fields[v0 + 1]),
                      let z = buf.double(fields[v0 + 2]) else { try ctx.malformed("\(type) needs x y z"); return }
                var b = SIMD3<Double>(0, 0, 0)
                if type.hasPrefix("Uncal"), fields.count >= v0 + 6, let bx = buf.double(fields[v0 + 3]),
                   let by = buf.double(fields[v0 + 4]), let bz = buf.double(fields[v0 + 5]) { b = SIMD3(bx, by, bz) }
                events.append(TraceEvent(time: ms / 1000, device: device,
                                         payload: .imu(IMUSample(kind: kind, x: x - b.x, y: y - b.y, z: z - b.z))))
                return
            }
            let key = "gnsslogger-\(type.lowercased()).csv"
            if side[key] == nil { side[key] = [headerLines[type] ?? type] }
            side[key]!.append(buf.string(tl))
            ctx.drop("\(type) (kept as-is in side file .\(key))")
        }
        ctx.report.files = 1
        return (events, ctx.report, first, side)
    }

    public static func importFiles(_ urls: [URL], options: ImportOptions) throws -> ImportedTrace {
        try importEachFile(urls, options: options, originNote: "first GNSS fix", addsStaticTruth: true) { u in
            let r = try parse(ByteBuffer(url: u), file: u.path, options: options)
            return (r.events, r.report, r.first, r.side)
        }
    }
}
