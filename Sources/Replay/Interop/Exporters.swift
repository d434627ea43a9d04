import Foundation
import Positioning
import TraceIO

/// Output formats of `posfuse export` (see `docs/formats.md`).
public enum ExportFormat: String, CaseIterable, Sendable {
    case geojson, kml, gpx, tum, csv, nmea

    /// Formats that hold one trajectory per file: several tracks go to `<stem>.<track>.<ext>`.
    public var singleTrack: Bool { self == .tum || self == .nmea }
    public var fileExtension: String { self == .geojson ? "geojson" : rawValue == "tum" ? "txt" : rawValue }
}

/// Renders tracks in the export formats. Numbers are written as the shortest decimal that
/// reads back to the same Double (positions and times round-trip exactly), except where a
/// format fixes the precision (NMEA: 1e-7 minute ≈ 0.2 mm, 0.01 s; TUM: 1 µs).
public enum Exporter {
    public static func render(_ format: ExportFormat, tracks: [ExportTrack], header: TraceHeader) -> String {
        switch format {
        case .geojson: return geojson(tracks, header: header)
        case .kml: return kml(tracks, header: header)
        case .gpx: return gpx(tracks, header: header)
        case .tum: return tum(tracks, header: header)
        case .csv: return csv(tracks)
        case .nmea: return nmea(tracks)
        }
    }

    // MARK: GeoJSON (RFC 7946)

    /// A FeatureCollection: one `Point` feature per position, coordinates [lon, lat, h]
    /// (WGS84), properties `t` (trace s), `time` (ISO 8601 UTC), `source`, `subject`,
    /// `e`, `n`, `u` (ENU m), `floor`, `kind`, covariance `cov_ee`, `cov_en`, `cov_nn` (m²)
    /// and the 95 % ellipse `ellipse95_major_m`, `ellipse95_minor_m` (semi-axes) and
    /// `ellipse95_azimuth_deg` (major axis, clockwise from north); plus one `LineString`
    /// feature per track (`feature: "track"`). The header origin is a top-level member.
    public static func geojson(_ tracks: [ExportTrack], header: TraceHeader) -> String {
        var s = "{\"type\":\"FeatureCollection\",\"posfuse_origin\":{\"lat\":\(fmt(header.origin.latitude)),\"lon\":\(fmt(header.origin.longitude)),\"h\":\(fmt(header.origin.height))},\"features\":[\n"
        var first = true
        func add(_ f: String) { if !first { s += ",\n" }; first = false; s += f }
        for tr in tracks {
            if tr.points.count >= 2 {
                let coords = tr.points.map { "[\(fmt($0.geodetic.longitude)),\(fmt($0.geodetic.latitude)),\(fmt($0.geodetic.height))]" }.joined(separator: ",")
                add("{\"type\":\"Feature\",\"geometry\":{\"type\":\"LineString\",\"coordinates\":[\(coords)]},\"properties\":{\"feature\":\"track\",\"source\":\(jsonEscaped(tr.source)),\"subject\":\(jsonEscaped(tr.subject))}}")
            }
            for p in tr.points {
                var o = JSONLine()
                o.string("feature", "position")
                o.number("t", p.time); o.string("time", UTCTime.iso8601(p.time))
                o.string("source", p.source); o.string("subject", p.subject)
                o.number("e", p.enu.x); o.number("n", p.enu.y); o.number("u", p.enu.z)
                if let f = p.floor { o.int("floor", f) }
                if let k = p.kind { o.string("kind", k) }
                if let c = p.covariance { o.number("cov_ee", c.ee); o.number("cov_en", c.en); o.number("cov_nn", c.nn) }
                if let el = p.ellipse95 {
                    o.number("ellipse95_major_m", el.major); o.number("ellipse95_minor_m", el.minor); o.number("ellipse95_azimuth_deg", el.azimuthDeg)
                }
                add("{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[\(fmt(p.geodetic.longitude)),\(fmt(p.geodetic.latitude)),\(fmt(p.geodetic.height))]},\"properties\":\(o.finish())}")
            }
        }
        return s + "\n]}\n"
    }

    // MARK: KML 2.2

    /// One style per source (colour by source; ground truth white, GNSS yellow, fusion
    /// filters green shades, radio estimators blue/cyan, acoustic/camera magenta), one Folder
    /// per track with a `gx:Track` (when + coord) and a Point placemark per checkpoint.
    public static func kml(_ tracks: [ExportTrack], header: TraceHeader) -> String {
        var s = """
        <?xml version="1.0" encoding="UTF-8"?>
        <kml xmlns="http://www.opengis.net/kml/2.2" xmlns:gx="http://www.google.com/kml/ext/2.2">
        <Document>
        <name>\(XMLText.escape(header.name ?? "posfuse export"))</name>

        """
        let sources = Array(Set(tracks.map(\.source))).sorted()
        for src in sources {
            s += "<Style id=\"\(XMLText.escape(src))\"><IconStyle><color>\(kmlColor(src))</color><scale>0.6</scale></IconStyle>"
            s += "<LineStyle><color>\(kmlColor(src))</color><width>\(src == "gt" ? 3 : 2)</width></LineStyle></Style>\n"
        }
        for tr in tracks {
            s += "<Folder><name>\(XMLText.escape(tr.name))</name>\n"
            s += "<Placemark><name>\(XMLText.escape(tr.name))</name><styleUrl>#\(XMLText.escape(tr.source))</styleUrl><gx:Track><altitudeMode>absolute</altitudeMode>\n"
            for p in tr.points { s += "<when>\(UTCTime.iso8601(p.time))</when>\n" }
            for p in tr.points { s += "<gx:coord>\(fmt(p.geodetic.longitude)) \(fmt(p.geodetic.latitude)) \(fmt(p.geodetic.height))</gx:coord>\n" }
            s += "</gx:Track></Placemark>\n"
            for p in tr.points where p.kind == "checkpoint" || p.covariance != nil && tr.points.count == 1 {
                s += "<Placemark><name>\(XMLText.escape(tr.source)) \(UTCTime.iso8601(p.time))</name><styleUrl>#\(XMLText.escape(tr.source))</styleUrl>"
                s += "<TimeStamp><when>\(UTCTime.iso8601(p.time))</when></TimeStamp>"
                if let el = p.ellipse95 {
                    s += "<description>95 % ellipse: \(String(format: "%.2f", el.major)) x \(String(format: "%.2f", el.minor)) m, azimuth \(String(format: "%.1f", el.azimuthDeg)) deg</description>"
                }
                s += "<Point><altitudeMode>absolute</altitudeMode><coordinates>\(fmt(p.geodetic.longitude)),\(fmt(p.geodetic.latitude)),\(fmt(p.geodetic.height))</coordinates></Point></Placemark>\n"
            }
            s += "</Folder>\n"
        }
        return s + "</Document>\n</kml>\n"
    }

    /// KML colour `aabbggrr` of a source.
    static func kmlColor(_ source: String) -> String {
        switch source {
        case "gt": return "ffffffff"
        case "gnss": return "ff00ffff"
        case "ekf": return "ff00ff00"
        case "ukf": return "ff00c000"
        case "pf": return "ff80ff80"
        case "smoother": return "ff008000"
        case "cell", "cell-ta": return "ffff0000"
        case "wcl", "rss", "hapel", "fingerprint": return "ffffff00"
        case "tdoa", "peer", "camloc": return "ffff00ff"
        default: return "ff0080ff"
        }
    }

    // MARK: GPX 1.1

    /// One `trk` per track (`name` = source[/subject]), `trkpt lat lon` (deg, full precision),
    /// `ele` = WGS84 height (m), `time` = ISO 8601 UTC with microseconds.
    public static func gpx(_ tracks: [ExportTrack], header: TraceHeader) -> String {
        var s = """
        <?xml version="1.0" encoding="UTF-8"?>
        <gpx version="1.1" creator="posfuse" xmlns="http://www.topografix.com/GPX/1/1">
        <metadata><name>\(XMLText.escape(header.name ?? "posfuse export"))</name></metadata>

        """
        for tr in tracks {
            s += "<trk><name>\(XMLText.escape(tr.name))</name><src>\(XMLText.escape(tr.source))</src><trkseg>\n"
            for p in tr.points {
                s += "<trkpt lat=\"\(fmt(p.geodetic.latitude))\" lon=\"\(fmt(p.geodetic.longitude))\"><ele>\(fmt(p.geodetic.height))</ele><time>\(UTCTime.iso8601(p.time))</time></trkpt>\n"
            }
            s += "</trkseg></trk>\n"
        }
        return s + "</gpx>\n"
    }

    // MARK: TUM (evo)

    /// `timestamp tx ty tz qx qy qz qw` per line: trace time (s, 6 decimals), ENU position
    /// (m, shortest round-trip decimal) about the trace origin (a `# origin lat lon h` comment line), identity orientation
    /// (posfuse estimates no attitude). A comment line names the origin.
    public static func tum(_ tracks: [ExportTrack], header: TraceHeader) -> String {
        var s = "# origin \(fmt(header.origin.latitude)) \(fmt(header.origin.longitude)) \(fmt(header.origin.height))\n"
        for tr in tracks {
            s += "# posfuse \(tr.name): timestamp tx ty tz qx qy qz qw (ENU m)\n"
            for p in tr.points {
                s += "\(String(format: "%.6f", p.time)) \(fmt(p.enu.x)) \(fmt(p.enu.y)) \(fmt(p.enu.z)) 0 0 0 1\n"
            }
        }
        return s
    }

    // MARK: CSV

    public static let csvColumns = ["t", "time_utc", "source", "subject", "lat", "lon", "h", "e", "n", "u", "floor", "kind",
                                    "cov_ee", "cov_en", "cov_nn", "ellipse95_major_m", "ellipse95_minor_m", "ellipse95_azimuth_deg"]

    /// One row per position with `csvColumns` (empty cells where a value is absent).
    public static func csv(_ tracks: [ExportTrack]) -> String {
        var s = csvColumns.joined(separator: ",") + "\n"
        for tr in tracks {
            for p in tr.points {
                let el = p.ellipse95
                let cells: [String] = [
                    fmt(p.time), UTCTime.iso8601(p.time), csvField(p.source), csvField(p.subject),
                    fmt(p.geodetic.latitude), fmt(p.geodetic.longitude), fmt(p.geodetic.height),
                    fmt(p.enu.x), fmt(p.enu.y), fmt(p.enu.z), p.floor.map(String.init) ?? "", p.kind ?? "",
                    p.covariance.map { fmt($0.ee) } ?? "", p.covariance.map { fmt($0.en) } ?? "", p.covariance.map { fmt($0.nn) } ?? "",
                    el.map { fmt($0.major) } ?? "", el.map { fmt($0.minor) } ?? "", el.map { fmt($0.azimuthDeg) } ?? "",
                ]
                s += cells.joined(separator: ",") + "\n"
            }
        }
        return s
    }

    static func csvField(_ v: String) -> String {
        guard v.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return v }
        return "\"" + v.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: NMEA 0183

    /// `$GPGGA` + `$GPRMC` per position: UTC `hhmmss.ss`, latitude/longitude in degrees and
    /// minutes with 7 decimals (≈ 0.2 mm), altitude = WGS84 height with geoid separation 0,
    /// HDOP = σ/3 m (from the covariance, `--uere` 3 m convention of the importer).
    public static func nmea(_ tracks: [ExportTrack]) -> String {
        var s = ""
        for tr in tracks {
            for p in tr.points {
                let cs = (p.time * 100).rounded()
                let days = Int((cs / 8_640_000).rounded(.down))
                let sodc = Int(cs) - days * 8_640_000
                let (y, m, d) = UTCTime.civilFromDays(days)
                let hh = sodc / 360_000, mm = sodc / 6000 % 60, ss = sodc % 6000
                let time = String(format: "%02d%02d%02d.%02d", hh, mm, ss / 100, ss % 100)
                let date = String(format: "%02d%02d%02d", d, m, y % 100)
                let (lat, ns) = nmeaAngle(p.geodetic.latitude, degDigits: 2, pos: "N", neg: "S")
                let (lon, ew) = nmeaAngle(p.geodetic.longitude, degDigits: 3, pos: "E", neg: "W")
                let sigma = p.covariance.map { (($0.ee + $0.nn) / 2).squareRoot() } ?? 3
                let hdop = String(format: "%.3f", sigma * 1.5096 / 3)
                let alt = String(format: "%.4f", p.geodetic.height)
                s += sentence("GPGGA,\(time),\(lat),\(ns),\(lon),\(ew),1,08,\(hdop),\(alt),M,0.0,M,,")
                s += sentence("GPRMC,\(time),A,\(lat),\(ns),\(lon),\(ew),,,\(date),,,A")
            }
        }
        return s
    }

    static func nmeaAngle(_ v: Double, degDigits: Int, pos: String, neg: String) -> (String, String) {
        let a = abs(v)
        var deg = Int(a)
        var minutes = ((a - Double(deg)) * 60 * 1e7).rounded() / 1e7
        if minutes >= 60 { deg += 1; minutes -= 60 }
        let ms = String(format: "%010.7f", minutes)
        return (String(format: "%0\(degDigits)d", deg) + ms, v < 0 ? neg : pos)
    }

    static func sentence(_ body: String) -> String {
        var x: UInt8 = 0
        for b in body.utf8 { x ^= b }
        return "$" + body + String(format: "*%02X", x) + "\r\n"
    }
}
