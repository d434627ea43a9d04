import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

/// trace → export → import keeps positions to 1 mm and times to 1 µs where the format can
/// hold them (NMEA holds 0.01 s).
@Suite struct RoundTripTests {
    static let header = TraceHeader(origin: Geodetic(latitude: 37.4236, longitude: -122.0941, height: -30), name: "rt")

    /// Ground truth (geodetic and local, southern/western and northern/eastern hemispheres
    /// near the origin) and GNSS fixes with microsecond time stamps.
    static var events: [TraceEvent] {
        var ev: [TraceEvent] = []
        let frame = header.frame
        for i in 0..<20 {
            let t = 1589494246.0 + Double(i) * 0.731 + 0.000123 * Double(i % 7)
            let v = SIMD3(12.3456789 * Double(i) - 100, 7.654321 * Double(i) + 3.25, 0.5 * Double(i % 3))
            ev.append(TraceEvent(time: t, payload: .groundTruth(GroundTruth(position: .geodetic(frame.geodetic(v)), kind: .continuous))))
            ev.append(TraceEvent(time: t + 0.25, payload: .gnss(GNSSFix(latitude: frame.geodetic(v + 3).latitude,
                                                                        longitude: frame.geodetic(v + 3).longitude,
                                                                        altitude: -28.5, accuracy: 4.5))))
        }
        return ev
    }

    static func positions(_ events: [TraceEvent], _ frame: LocalFrame) -> [(Double, String, SIMD3<Double>)] {
        events.compactMap { e in
            switch e.payload {
            case .groundTruth(let g):
                switch g.position { case .geodetic(let p): return (e.time, "gt", frame.enu(p)); case .local(let l): return (e.time, "gt", l) }
            case .gnss(let f): return (e.time, "gnss", frame.enu(Geodetic(latitude: f.latitude, longitude: f.longitude, height: f.altitude ?? 0)))
            default: return nil
            }
        }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
    }

    func check(_ format: ExportFormat, importAs: ImportFormat, sources: Set<String>, timeTol: Double = 1e-6,
               horizontalOnly: Bool = false) throws {
        let pts = ExportBuilder.points(events: Self.events, header: Self.header, sources: sources)
        let text = Exporter.render(format, tracks: ExportBuilder.tracks(pts), header: Self.header)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("x.\(format.fileExtension)")
        try Data(text.utf8).write(to: url)
        let back = try importTrace(format: importAs, urls: [url], options: ImportOptions(strict: true, origin: Self.header.origin))
        let frame = Self.header.frame
        let a = Self.positions(Self.events.filter { sources.contains($0.typeName) }, frame)
        let b = Self.positions(back.events, frame)
        #expect(a.count == b.count, "\(format): \(a.count) → \(b.count)")
        for (x, y) in zip(a, b) {
            #expect(abs(x.0 - y.0) <= timeTol, "\(format) time \(x.0) → \(y.0)")
            let d = x.2 - y.2
            let err = horizontalOnly ? (d.x * d.x + d.y * d.y).squareRoot() : (d * d).sum().squareRoot()
            #expect(err <= 0.001, "\(format) position error \(err) m")
        }
    }

    @Test func gpx() throws { try check(.gpx, importAs: .gpx, sources: ["gt"]) }
    @Test func geojson() throws { try check(.geojson, importAs: .geojson, sources: ["gt", "gnss"]) }
    @Test func csv() throws { try check(.csv, importAs: .csv, sources: ["gt", "gnss"]) }
    @Test func tum() throws { try check(.tum, importAs: .tum, sources: ["gt"]) }
    /// NMEA: times to 0.01 s (hhmmss.ss); positions to 0.2 mm; height to 0.1 mm.
    @Test func nmeaFixes() throws { try check(.nmea, importAs: .nmea, sources: ["gnss"], timeTol: 0.005) }

    @Test func gnssAccuracySurvivesGeoJSON() throws {
        let pts = ExportBuilder.points(events: Self.events, header: Self.header, sources: ["gnss"])
        let text = Exporter.geojson(ExportBuilder.tracks(pts), header: Self.header)
        let r = try GeoJSONImporter.parse(Data(text.utf8), file: "x", options: ImportOptions(strict: true))
        guard case .gnss(let g) = r.events[0].payload else { Issue.record("gnss"); return }
        #expect(abs(g.accuracy - 4.5) < 1e-9)
        #expect(r.origin == Self.header.origin)
        #expect(r.report.dropped["LineString feature (only Points carry times)"] == 1)
    }

    @Test func ellipse95IsScaledPrincipalAxes() {
        let p = ExportPoint(time: 0, source: "ekf", subject: "phone", geodetic: Self.header.origin, enu: .zero,
                            covariance: Covariance2(ee: 1, en: 0, nn: 4))
        let e = p.ellipse95!
        #expect(abs(e.major - 2 * 2.4477468) < 1e-6)
        #expect(abs(e.minor - 2.4477468) < 1e-6)
        #expect(abs(e.azimuthDeg - 0) < 1e-9)   // major axis along north
    }

    @Test func kmlIsEscapedAndStyledBySource() {
        var h = Self.header; h.name = "a<b & \"c\""
        let pts = ExportBuilder.points(events: Self.events, header: h)
        let k = Exporter.kml(ExportBuilder.tracks(pts), header: h)
        #expect(k.contains("<name>a&lt;b &amp; &quot;c&quot;</name>"))
        #expect(k.contains("<Style id=\"gt\">") && k.contains("<Style id=\"gnss\">"))
        #expect(k.contains("<styleUrl>#gnss</styleUrl>"))
        let parser = XMLParserCheck(k)
        #expect(parser.ok)
    }

    @Test func isoTimesRoundTrip() {
        for t in [0.0, 1589494246.123456, 951782400.5, -1.25, 4102444800.000001] {
            let s = UTCTime.iso8601(t)
            #expect(abs(UTCTime.parseISO8601(s)! - t) < 1e-6, "\(s)")
        }
        #expect(UTCTime.iso8601(1589494246.5) == "2020-05-14T22:10:46.500000Z")
        #expect(UTCTime.parseISO8601("2020-05-14T23:10:46+01:00") == 1589494246)
        #expect(UTCTime.parseISO8601("2020-13-14T23:10:46Z") == nil)
    }
}
