import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

@Suite struct ReferenceImportTests {
    @Test func openCellIDTowersIntoDatabase() throws {
        let r = try OpenCellIDTowerImporter.parse(ByteBuffer(string: ImportFixtures.opencellidTowers), file: "c.csv",
                                                  options: ImportOptions(strict: true))
        #expect(r.towers.count == 3)
        #expect(r.report.dropped["radio CDMA (no RAT in trace format)"] == 1)
        let lte = r.towers[1]
        #expect(lte.cell == CellID(rat: .lte, mcc: 262, mnc: 1, area: 40100, cid: 26683137))
        #expect(lte.pci == 212 && lte.provenance == "antenna" && lte.range == 1000 && lte.samples == 12)
        #expect(r.towers[0].pci == nil && r.towers[0].provenance == "centroid")
        let db = try CellDatabase(path: ":memory:")
        try db.insert(r.towers)
        try db.insert(r.towers)   // replace, not duplicate
        #expect(try db.count() == 3)
        #expect(try db.tower(lte.cell) == lte)
        let near = try db.towers(near: Geodetic(latitude: 48.1, longitude: 11.5), radius: 20_000)
        #expect(near.count == 2)   // the UMTS tower is 13.4 km away
        let frame = LocalFrame(origin: Geodetic(latitude: 48.1, longitude: 11.5))
        let sites = try db.cellSites(frame: frame, radius: 1000)
        #expect(sites.count == 1)
        let v = sites[lte.cell]!.position; #expect((v * v).sum() < 1e-12)
    }

    @Test func nearQueryUsesTrueDistance() throws {
        let db = try CellDatabase(path: ":memory:")
        let a = CellTower(cell: CellID(rat: .lte, mcc: 1, mnc: 1, area: 1, cid: 1), position: Geodetic(latitude: 60, longitude: 10))
        let b = CellTower(cell: CellID(rat: .lte, mcc: 1, mnc: 1, area: 1, cid: 2), position: Geodetic(latitude: 60, longitude: 10.02))  // 1.11 km east
        try db.insert([a, b])
        #expect(try db.towers(near: a.position, radius: 1000).count == 1)
        #expect(try db.towers(near: a.position, radius: 1200).count == 2)
    }

    @Test func wigleWeightedCentroid() throws {
        let r = try WiGLEImporter.parse(ImportFixtures.wigle, file: "w.csv", options: ImportOptions(strict: true))
        #expect(r.aps.count == 2)
        #expect(r.report.dropped["BLE row (not WiFi)"] == 1)
        let a = r.aps[0]
        #expect(a.bssid == "aa:bb:cc:dd:ee:01" && a.ssid == "Cafe, Free" && a.observations == 2)
        #expect(abs(a.position.latitude - 48.0001) < 1e-12 && abs(a.position.longitude - 11.0001) < 1e-12)
        #expect(a.position.height == 501)
    }

    @Test func wigleIntoReferenceJSONKeepsOtherMembers() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ref-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ref = dir.appendingPathComponent("reference.json")
        try Data(#"{"beacons":[{"id":"B1","e":0,"n":0,"u":3,"offset":0,"period":0.35}]}"#.utf8).write(to: ref)
        let w = dir.appendingPathComponent("w.csv")
        try Data(ImportFixtures.wigle.utf8).write(to: w)
        _ = try importReference(format: .wigle, urls: [w], output: ref, options: ImportOptions(strict: true))
        let data = try ReferenceLoader.load(url: ref, frame: LocalFrame(origin: Geodetic(latitude: 48, longitude: 11)))
        #expect(data.accessPoints.count == 2)
        #expect(data.beacons.count == 1)
        #expect(data.accessPoints["aa:bb:cc:dd:ee:02"] != nil)
    }

    @Test func ujiFingerprintsAndInverseWebMercator() throws {
        let r = try UJIIndoorLocImporter.parse(ByteBuffer(string: ImportFixtures.uji), file: "u.csv", options: ImportOptions(strict: true))
        let scans = r.events.filter { $0.typeName == "wifi" }
        let gts = r.events.filter { $0.typeName == "gt" }
        #expect(scans.count == 2 && gts.count == 3)
        #expect(r.report.dropped["fingerprint with no AP heard (scan not written)"] == 1)
        guard case .wifi(let s) = scans[1].payload else { Issue.record("wifi"); return }
        #expect(s.accessPoints.map(\.bssid) == ["wap001", "wap003"])
        #expect(s.accessPoints.map(\.rss) == [-50, -99])
        // Duplicate time stamps of one phone are spread by 1 ms.
        #expect(gts[0].time == 1371713733 && gts[1].time == 1371713733.001)
        #expect(gts[0].device == "phone23" && gts[2].device == "phone13")
        guard case .groundTruth(let g) = gts[0].payload, case .geodetic(let p) = g.position else { Issue.record("gt"); return }
        // Forward Web-Mercator of the result gives the input back.
        let R = UJIIndoorLocImporter.earthRadius
        #expect(abs(p.longitude * .pi / 180 * R - (-7541.2643)) < 1e-6)
        #expect(abs(R * log(tan(.pi / 4 + p.latitude * .pi / 360)) - 4864920.7782) < 1e-6)
        #expect(abs(p.latitude - 39.9929) < 1e-3 && g.floor == 2)
    }
}
