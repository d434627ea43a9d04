import Testing
import Foundation
@testable import Replay
import Positioning

@Suite struct NMEAImportTests {
    @Test func epochsDatesAccuracyAndChecksums() throws {
        let r = try NMEAImporter.parse(ImportFixtures.nmea, file: "n.nmea", options: ImportOptions())
        #expect(r.report.dropped["malformed (NMEA checksum mismatch)"] == 1)
        #expect(r.report.dropped["GSV sentence (not converted)"] == 1)
        #expect(r.report.dropped["epoch without fix (RMC status V / GGA quality 0)"] == 1)
        #expect(r.events.count == 2)
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
        #expect(throws: TraceDataError.self) { _ = try NMEAImporter.parse(ImportFixtures.nmea, file: "n.nmea", options: ImportOptions(strict: true)) }
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
