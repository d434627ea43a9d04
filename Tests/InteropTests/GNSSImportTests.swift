import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

@Suite struct NMEAImportTests {
    @Test func epochsDatesAccuracyAndChecksums() throws {
        let r = try NMEAImporter.parse(ImportFixtures.nmea, file: "n.nmea", options: ImportOptions())
        // The wrong checksum leaves the sentence's data intact: kept and counted (fatal with --strict).
        #expect(r.report.tolerated == ["NMEA checksum mismatch in $GNGGA": 1])
        #expect(r.report.dropped["GSV sentence (not converted)"] == 1)
        #expect(r.report.dropped["epoch without fix (RMC status V / GGA quality 0)"] == 1)
        #expect(r.events.count == 3)
        #expect(r.report.summary().contains("tolerated NMEA checksum mismatch in $GNGGA: 1"))
        // 1994-03-23 23:59:59.50 UTC, then 00:00:00.50 on the 24th (date carried over midnight).
        let day = Double(UTCTime.daysFromCivil(1994, 3, 23) * 86400)
        #expect(r.events[0].time == day + 86399.5)
        #expect(r.events[1].time == day + 86400.5)
        guard case .gnss(let a) = r.events[0].payload, case .gnss(let b) = r.events[1].payload else { Issue.record("gnss"); return }
        #expect(abs(a.latitude - (48 + 7.038 / 60)) < 1e-12 && abs(a.longitude - (11 + 31.0 / 60)) < 1e-12)
        #expect(abs(a.altitude! - (545.4 + 46.9)) < 1e-9)   // ellipsoidal = MSL + geoid separation
        #expect(abs(a.accuracy - 0.9 * 3) < 1e-12)           // HDOP · UERE
        #expect(abs(b.accuracy - (1.5 * 1.5 + 2.0 * 2.0).squareRoot()) < 1e-12)   // from GST
        #expect(b.verticalAccuracy == 3.0)
        // RMC speed over ground 22.4 kn and course 84.4° true; the second epoch has no RMC.
        #expect(abs(a.speed! - 22.4 * 1852 / 3600) < 1e-12 && a.bearing == 84.4)
        #expect(b.speed == nil && b.bearing == nil)
        #expect(throws: TraceDataError.self) { _ = try NMEAImporter.parse(ImportFixtures.nmea, file: "n.nmea", options: ImportOptions(strict: true)) }
    }

    /// Sentence-level defects that leave the data intact, each counted under its own reason;
    /// every one is fatal with --strict and names the line.
    @Test func lenientDefectsAreCountedPerReason() throws {
        let text = """
        $XXGGA,120000.00,4807.038,N,01131.000,W,1,08,0.9,545.4,M,46.9,M,,
        $GPRMC,120000.00,A,4807.038,N,01131.000,W,022.4,084.4,230394,003.1,W*00
        $GPGGA,120001.00,4807.039,,01131.001,,1,08,1.0,545.5,M,46.9,M,,
        $GPRMC,120001.00,A,4807.039,,01131.001,,022.4,084.4,230394,003.1,W
        """
        let r = try NMEAImporter.parse(text, file: "d.nmea", options: ImportOptions())
        #expect(r.report.tolerated == ["unknown NMEA talker id 'XX'": 1, "NMEA checksum mismatch in $GPRMC": 1,
                                       "missing hemisphere letter in GGA": 1, "missing hemisphere letter in RMC": 1])
        #expect(r.events.count == 2)
        guard case .gnss(let b) = r.events[1].payload else { Issue.record("gnss"); return }
        // Hemispheres of the earlier sentences: N, W.
        #expect(abs(b.latitude - (48 + 7.039 / 60)) < 1e-12 && abs(b.longitude + (11 + 31.001 / 60)) < 1e-12)
        do {
            _ = try NMEAImporter.parse(text, file: "d.nmea", options: ImportOptions(strict: true))
            Issue.record("strict must fail")
        } catch let e as TraceDataError {
            #expect(e.description.contains("d.nmea:1") && e.description.contains("talker"))
        }
        // No letter anywhere in the file: the origin's hemispheres (the phone's, for a truth track).
        let bare = "$GPGGA,120001.00,3725.417,,12205.649,,1,08,1.0,5.5,M,0,M,,\n$GPRMC,120001.00,A,3725.417,,12205.649,,0,0,140520,,,A"
        #expect(throws: TraceDataError.self) { _ = try NMEAImporter.parse(bare, file: "b", options: ImportOptions(strict: true)) }
        #expect(try NMEAImporter.parse(bare, file: "b", options: ImportOptions()).events.isEmpty)   // no sign known: malformed
        let withOrigin = try NMEAImporter.parse(bare, file: "b", options: ImportOptions(origin: Geodetic(latitude: 37.4, longitude: -122.1, height: 0)))
        guard case .gnss(let c) = withOrigin.events.first?.payload else { Issue.record("gnss"); return }
        #expect(c.latitude > 37 && c.longitude < -122)
    }

    @Test func asTruthWritesGroundTruth() throws {
        let lines = ImportFixtures.nmea.split(separator: "\n").dropLast().joined(separator: "\n")
        let r = try NMEAImporter.parse(lines, file: "n", options: ImportOptions(strict: true, asTruth: true))
        #expect(r.events.allSatisfy { $0.typeName == "gt" } && r.events.count == 2)
    }
}

@Suite struct GnssLoggerImportTests {
    @Test func fixesSensorsAndVerbatimSideFiles() throws {
        let r = try GnssLoggerImporter.parse(ByteBuffer(string: ImportFixtures.gnssLogger), file: "g.txt", options: ImportOptions(strict: true))
        let gnss = r.events.filter { $0.typeName == "gnss" }
        #expect(gnss.count == 1)
        guard case .gnss(let f) = gnss[0].payload else { Issue.record("gnss"); return }
        #expect(gnss[0].time == 1600000000.999)
        #expect(f.latitude == 37.1 && f.longitude == -122.2 && f.altitude == -20.5 && f.accuracy == 3.9 && f.verticalAccuracy == 6.1)
        #expect(r.report.dropped["Fix from provider NLP (not GNSS)"] == 1)
        guard case .imu(let acc) = r.events.first(where: { $0.typeName == "acc" })!.payload else { Issue.record("acc"); return }
        #expect(abs(acc.x - 0.4) < 1e-12 && abs(acc.y - 9.8) < 1e-12 && abs(acc.z - 0.1) < 1e-12)
        #expect(r.side["gnsslogger-raw.csv"] == ["Raw,utcTimeMillis,TimeNanos,Svid", "Raw,1600000000000,123,5"])
        #expect(r.side["gnsslogger-status.csv"]?.count == 2)
        let unknown = ImportFixtures.gnssLogger + "\nMystery,1,2\n"
        #expect(throws: TraceDataError.self) { _ = try GnssLoggerImporter.parse(ByteBuffer(string: unknown), file: "g", options: ImportOptions(strict: true)) }
        let lenient = try GnssLoggerImporter.parse(ByteBuffer(string: unknown), file: "g", options: ImportOptions())
        #expect(lenient.report.unknownTypes == ["Mystery": 1])
    }
}

extension GnssLoggerImportTests {
    /// Speed and course of the Fix rows become `spd`/`brg`; a missing, empty or negative value is
    /// "not reported" (nil), and a positive speed without a course gives no velocity.
    @Test func fixSpeedAndBearing() throws {
        func fixes(_ text: String) throws -> [GNSSFix] {
            try GnssLoggerImporter.parse(ByteBuffer(string: text), file: "g.txt", options: ImportOptions(strict: true)).events
                .compactMap { if case .gnss(let f) = $0.payload { return f } else { return nil } }
        }
        let v3 = try fixes(ImportFixtures.gnssLoggerVelocity)
        #expect(v3.count == 3)
        #expect(v3[0].speed == 12.5 && v3[0].bearing == 271.3)
        let v = try #require(v3[0].velocity)
        let b = 271.3 * Double.pi / 180
        #expect(abs(v.x - 12.5 * sin(b)) < 1e-9 && abs(v.y - 12.5 * cos(b)) < 1e-9)   // (east, north)
        #expect(v3[1].speed == nil && v3[1].bearing == nil && v3[1].velocity == nil)
        #expect(v3[2].speed == nil && v3[2].bearing == 90 && v3[2].velocity == nil)
        let v14 = try fixes(ImportFixtures.gnssLoggerV14Speed)
        #expect(v14.count == 2)
        #expect(v14[0].speed == 0 && v14[0].bearing == nil && v14[0].velocity == .zero)   // at rest: no course needed
        #expect(v14[1].speed == 1.25 && v14[1].bearing == nil && v14[1].velocity == nil)
        // The v3 fixture of the test above (speed 0, course 0) now carries them too.
        let old = try GnssLoggerImporter.parse(ByteBuffer(string: ImportFixtures.gnssLogger), file: "g.txt", options: ImportOptions(strict: true))
        guard case .gnss(let f) = old.events.first(where: { $0.typeName == "gnss" })!.payload else { Issue.record("gnss"); return }
        #expect(f.speed == 0 && f.bearing == 0)
    }
}

@Suite struct GPXImportTests {
    @Test func pointsBecomeGroundTruth() throws {
        let r = try GPXImporter.parse(Data(ImportFixtures.gpx.utf8), file: "x.gpx", options: ImportOptions(strict: true))
        #expect(r.events.count == 2)
        #expect(r.report.dropped["point without time"] == 1)
        let t0 = Double(UTCTime.daysFromCivil(2020, 1, 1) * 86400) + 36000
        #expect(r.events[0].time == t0)
        #expect(r.events[1].time == t0 + 1.5)   // 11:00:01.5+01:00 = 10:00:01.5Z
        guard case .groundTruth(let w) = r.events[0].payload, case .groundTruth(let p) = r.events[1].payload else { Issue.record("gt"); return }
        #expect(w.kind == .checkpoint && p.kind == .continuous)
        #expect(p.position == .geodetic(Geodetic(latitude: 48.1001, longitude: 11.5001, height: 501.25)))
    }

    @Test func brokenXMLIsDataError() {
        #expect(throws: TraceDataError.self) { _ = try GPXImporter.parse(Data("<gpx><trk></gpx>".utf8), file: "x.gpx", options: ImportOptions()) }
        // Processing instructions crash Foundation's XMLParser on Linux; GPX has none, so they
        // are data errors, also one whose target starts like the declaration (fuzz findings).
        for pi in ["<gpx><?xm?></gpx>", "<?xmlapm?>\n<gpx></gpx>"] {
            #expect(throws: ImportDataError.self) { _ = try GPXImporter.parse(Data(pi.utf8), file: "x.gpx", options: ImportOptions()) }
        }
    }
}

@Suite struct GPXLargeFileTests {
    /// More than 1 MB of GPX (Linux `XMLParser(data:)` fails near that size).
    @Test func largeTrackParses() throws {
        var s = "<?xml version=\"1.0\"?><gpx version=\"1.1\" xmlns=\"http://www.topografix.com/GPX/1/1\"><trk><trkseg>\n"
        for i in 0..<12_000 {
            s += "<trkpt lat=\"48.\(100000 + i)\" lon=\"11.5\"><ele>500</ele><time>\(UTCTime.iso8601(1.6e9 + Double(i)))</time></trkpt>\n"
        }
        s += "</trkseg></trk></gpx>\n"
        #expect(s.utf8.count > 1_000_000)
        let r = try GPXImporter.parse(Data(s.utf8), file: "big.gpx", options: ImportOptions(strict: true))
        #expect(r.events.count == 12_000)
    }
}
