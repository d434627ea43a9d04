import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

@Suite struct MSIndoorImportTests {
    func parse(_ text: String, strict: Bool = false) throws -> (events: [TraceEvent], report: ImportReport, meta: MSIndoorImporter.Metadata) {
        try MSIndoorImporter.parse(ByteBuffer(string: text), file: "walk.txt", options: ImportOptions(strict: strict))
    }

    @Test func mapsEveryDocumentedType() throws {
        let r = try parse(ImportFixtures.msIndoor, strict: true)
        #expect(r.report.events == [:])  // counted by assembleTrace
        let kinds = r.events.map(\.typeName)
        #expect(kinds.filter { $0 == "gt" }.count == 2)
        #expect(kinds.filter { $0 == "wifi" }.count == 2)
        #expect(kinds.filter { $0 == "acc" }.count == 1)
        #expect(kinds.filter { $0 == "gyro" }.count == 1)
        #expect(kinds.filter { $0 == "mag" }.count == 1)
        #expect(kinds.filter { $0 == "rotvec" }.count == 1)
        #expect(r.meta.device == "ACME P1")
        #expect(r.meta.floorName == "F2")
        // Waypoint: floor-plan metres as ENU, floor F2 = 1.
        let gt = r.events.first { $0.typeName == "gt" }!
        #expect(gt.time == 1600000000.005)
        guard case .groundTruth(let g) = gt.payload, case .local(let v) = g.position else { Issue.record("gt"); return }
        #expect(v == SIMD3(10.5, 20.25, 0)); #expect(g.floor == 1); #expect(g.kind == .checkpoint)
        // Rotation vector gets w = sqrt(1 - 0.36) = 0.8.
        guard case .imu(let q) = r.events.first(where: { $0.typeName == "rotvec" })!.payload else { Issue.record("rotvec"); return }
        #expect(abs(q.w - 0.8) < 1e-12)
        // WiFi scan: two APs, empty SSID kept, BSSID lower-cased, last_seen as the AP sample time.
        guard case .wifi(let scan) = r.events.first(where: { $0.typeName == "wifi" })!.payload else { Issue.record("wifi"); return }
        #expect(scan.accessPoints.count == 2)
        #expect(scan.accessPoints[0].bssid == "aa:bb:cc:00:00:01")
        #expect(scan.accessPoints[0].ssid == "Shop WiFi")
        #expect(scan.accessPoints[1].ssid == "")
        #expect(scan.accessPoints[1].lastSeen == 1599999999.0)
        #expect(scan.accessPoints[0].frequency == 2412 && scan.accessPoints[0].rss == -55)
        // Dropped, with reasons.
        #expect(r.report.dropped.keys.allSatisfy { !$0.contains("TYPE_BEACON") })
        #expect(kinds.filter { $0 == "ble" }.count == 1)
        #expect(r.report.dropped["TYPE_BLUE (undocumented)"] == 1)
        #expect(r.report.dropped["TYPE_BLU4 (undocumented)"] == 1)
        #expect(r.report.dropped["TYPE_DIST1 (undocumented)"] == 1)
        #expect(r.report.dropped["TYPE_SENSOR_MAGNETIC_FIELD_ACCURACY_CHANGED (undocumented)"] == 1)
        #expect(r.report.dropped["TYPE_ACCELEROMETER_UNCALIBRATED (calibrated stream kept)"] == 1)
        #expect(r.report.unknownTypes.isEmpty)
    }

    /// TYPE_BEACON rows → `ble` scans: rows with one unix_ms form one scan; MAC lower-cased as the
    /// id (the iBeacon key without a MAC); rss, tx exact; `distance` and the padding time stamp
    /// (the README: a copy of the row's time) not kept.
    @Test func beaconRowsBecomeBLEScans() throws {
        let text = """
            1574142063086\tTYPE_BEACON\tFB349B5F-8000-0080-0010-00003CFE0000\t17834\t10672\t-75\t-101\t9.03701275692385\t24:0A:C4:A7:E9:41\t1574142063080
            1574142063086\tTYPE_BEACON\tFB349B5F-8000-0080-0010-00003CFE0000\t3280\t41520\t-75\t-97\t6.6\t\t1574142063086
            1574142063100\tTYPE_WIFI\tShop\tAA:BB:CC:00:00:01\t-55\t2412\t1574142063090
            1574142079732\tTYPE_BEACON\t9195B3AD-A9D0-4500-85FF-9FB0F65A5201\t0\t0\t-54\t-93\t59.5\t78:A5:04:90:BA:10\t1574142079732
            1574142079800\tTYPE_BEACON\tU\t70000\t1\t-54\t-93\t1\tAA:AA:AA:AA:AA:AA\t1574142079800

            """
        let r = try parse(text)
        let scans = r.events.compactMap { e -> (Double, BLEScan)? in if case .ble(let s) = e.payload { return (e.time, s) } else { return nil } }
        #expect(scans.count == 2)
        #expect(scans[0].0 == 1574142063.086)
        #expect(scans[0].1 == BLEScan(beacons: [
            BLEObservation(id: "24:0a:c4:a7:e9:41", iBeacon: IBeaconID(uuid: "FB349B5F-8000-0080-0010-00003CFE0000", major: 17834, minor: 10672),
                           rss: -101, txPower: -75),
            BLEObservation(id: "fb349b5f-8000-0080-0010-00003cfe0000:3280:41520",
                           iBeacon: IBeaconID(uuid: "FB349B5F-8000-0080-0010-00003CFE0000", major: 3280, minor: 41520),
                           rss: -97, txPower: -75),
        ]))
        #expect(scans[1].0 == 1574142079.732)
        #expect(scans[1].1.beacons.map(\.id) == ["78:a5:04:90:ba:10"])
        // A major outside 0…65535 is a malformed row: dropped and counted, fatal with --strict (file:line).
        #expect(r.report.dropped.keys.contains { $0.hasPrefix("malformed") && $0.contains("TYPE_BEACON") })
        do { _ = try parse(text, strict: true); Issue.record("expected a failure") } catch let e as ImportDataError {
            #expect(e.description.hasPrefix("walk.txt:5: "))
        }
        // What the importer writes validates (the reader's own decoder).
        for e in r.events { #expect(TraceLineChecker().check(e) == nil) }
    }

    @Test func unknownTypeIsCountedLenientAndFatalStrict() throws {
        let text = ImportFixtures.msIndoor + "\n1600000000070\tTYPE_FANCY\t1\n"
        let r = try parse(text)
        #expect(r.report.unknownTypes == ["TYPE_FANCY": 1])
        #expect(throws: ImportDataError(file: "walk.txt", line: 20, reason: "unknown record type TYPE_FANCY")) {
            _ = try parse(text, strict: true)
        }
    }

    @Test func malformedLineStrictReportsFileAndLine() throws {
        let text = "1600000000010\tTYPE_ACCELEROMETER\t0.1\tx\t9.8\n"
        let r = try parse(text)
        #expect(r.events.isEmpty)
        #expect(r.report.dropped.keys.contains { $0.hasPrefix("malformed") })
        do { _ = try parse(text, strict: true); Issue.record("expected a failure") } catch let e as ImportDataError {
            #expect(e.description.hasPrefix("walk.txt:1: "))
        }
    }

    /// Two records glued by a missing newline are split at the 13-digit time stamp.
    @Test func gluedRecordsAreSplit() throws {
        let text = "1600000000010\tTYPE_ACCELEROMETER\t0.1\t0.2\t9.81600000000011\tTYPE_GYROSCOPE\t0.01\t-0.02\t0.03\t3\n"
        let r = try parse(text, strict: true)
        #expect(r.events.map(\.typeName) == ["acc", "gyro"])
        guard case .imu(let a) = r.events[0].payload, case .imu(let g) = r.events[1].payload else { Issue.record("imu"); return }
        #expect(a.z == 9.8 && g.x == 0.01)
        #expect(r.events[1].time == 1600000000.011)
        #expect(r.report.dropped["glued records split (missing newline repaired)"] == 1)
    }

    @Test func floorNames() {
        #expect(MSIndoorImporter.floorNumber("F1") == 0)
        #expect(MSIndoorImporter.floorNumber("F3") == 2)
        #expect(MSIndoorImporter.floorNumber("1F") == 0)
        #expect(MSIndoorImporter.floorNumber("B1") == -1)
        #expect(MSIndoorImporter.floorNumber("B2") == -2)
        #expect(MSIndoorImporter.floorNumber("X") == nil)
    }

    @Test func floorPlanOriginIsSouthWestCorner() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("msindoor-\(UUID().uuidString)")
        let sub = dir.appendingPathComponent("path_data_files")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let map = #"{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[[120.1,30.3],[120.2,30.3],[120.2,30.4],[120.1,30.35]]]},"properties":{}}]}"#
        try Data(map.utf8).write(to: dir.appendingPathComponent("geojson_map.json"))
        let f = sub.appendingPathComponent("w1.txt")
        try Data(ImportFixtures.msIndoor.utf8).write(to: f)
        let t = try MSIndoorImporter.importFiles([f], options: ImportOptions(strict: true))
        #expect(t.header.origin == Geodetic(latitude: 30.3, longitude: 120.1, height: 0))
        #expect(t.header.name == "w1")
        #expect(t.report.events["gt"] == 2)
        #expect(zip(t.events, t.events.dropFirst()).allSatisfy { $0.time <= $1.time })
    }
}

@Suite struct OpenCellIDMeasurementImportTests {
    @Test func cellsWithTimingAdvanceAndTruth() throws {
        let r = try OpenCellIDMeasurementsImporter.parse(ByteBuffer(string: ImportFixtures.opencellidMeasurements),
                                                         file: "m.csv", options: ImportOptions(strict: true))
        let cells = r.events.compactMap { e -> CellObservation? in if case .cell(let c) = e.payload { return c } else { return nil } }
        #expect(cells.count == 4)
        #expect(cells[0].cell == CellID(rat: .lte, mcc: 302, mnc: 720, area: 29101, cid: 9751830))
        #expect(cells[0].timingAdvance == 1 && cells[0].timingAdvanceUnit == .lte16Ts)
        #expect(cells[0].pci == 269 && cells[0].rsrp == -86 && cells[0].serving)
        #expect(cells[1].timingAdvance == nil && cells[1].timingAdvanceUnit == nil)
        #expect(cells[2].cell.rat == .gsm && cells[2].cell.area == 852 && cells[2].timingAdvanceUnit == .gsmBits)
        let gts = r.events.filter { $0.typeName == "gt" }
        #expect(gts.count == 3)
        #expect(gts[0].time == 1598796852)
        guard case .groundTruth(let g) = gts[0].payload, case .geodetic(let p) = g.position else { Issue.record("gt"); return }
        #expect(p.latitude == 45.4130222 && p.longitude == -75.6979319)
        #expect(r.report.dropped["act CDMA (no RAT in trace format)"] == 1)
        #expect(r.report.dropped["row without lat/lon (no ground truth)"] == 1)
        #expect(r.first == Geodetic(latitude: 45.4130222, longitude: -75.6979319, height: 0))
    }

    @Test func badRowIsFatalOnlyWhenStrict() throws {
        let text = "mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci\n302,720,1,x,45,-75,-80,1000,1,0,0,LTE,1,,1,1\n"
        let lenient = try OpenCellIDMeasurementsImporter.parse(ByteBuffer(string: text), file: "m.csv", options: ImportOptions())
        #expect(lenient.events.isEmpty)
        #expect(throws: ImportDataError.self) {
            _ = try OpenCellIDMeasurementsImporter.parse(ByteBuffer(string: text), file: "m.csv", options: ImportOptions(strict: true))
        }
    }
}
