import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

@Suite struct RealDataImportTests {
    func run(_ format: ImportFormat, _ rel: String, options: ImportOptions = ImportOptions(strict: true)) throws -> ImportedTrace? {
        guard let p = SharedData.path(rel) else { return nil }
        let t = try importTrace(format: format, urls: try expandInputs([p], extensions: format.extensions), options: options)
        print("[\(format.rawValue)] \(rel)\n" + t.report.summary())
        return t
    }

    @Test(.enabled(if: SharedData.path("ms-indoor") != nil)) func msIndoorWalks() throws {
        let t = try #require(try run(.msIndoor, "ms-indoor/site2/F3/path_data_files"))
        #expect(t.report.files == 22)
        #expect(t.report.events["gt"] == 143)
        #expect(t.report.events["wifi"] == 272)
        #expect(t.report.events["acc"] == 33820)
        #expect(t.report.unknownTypes.isEmpty)
        // Waypoints lie inside the floor plan (236.7 x 219.7 m).
        for e in t.events { if case .groundTruth(let g) = e.payload, case .local(let v) = g.position {
            #expect(v.x > 0 && v.x < 236.72 && v.y > 0 && v.y < 219.75); #expect(g.floor == 2)
        } }
    }

    @Test(.enabled(if: SharedData.path("lte-ta-walks") != nil)) func lteWalks() throws {
        let t = try #require(try run(.opencellidMeasurements, "lte-ta-walks/lacolyoc"))
        #expect(t.report.events["cell"] == 1900)
        #expect(t.report.events["gt"] == 1900)
        let withTA = t.events.filter { if case .cell(let c) = $0.payload { return c.timingAdvance != nil } else { return false } }.count
        #expect(withTA == 1781)
    }

    @Test(.enabled(if: SharedData.path("gnsslogger-static") != nil)) func gnssLogger() throws {
        let t = try #require(try run(.gnsslogger, "gnsslogger-static",
                                     options: ImportOptions(strict: true, staticTruth: Geodetic(latitude: 37.422578, longitude: -122.081678, height: -28))))
        #expect(t.report.events["gnss"] == 423)
        #expect(t.report.events["gt"] == 423)
        #expect(t.sideFiles["gnsslogger-raw.csv"]?.count == 6420 + 1)
    }

    @Test(.enabled(if: SharedData.path("gsdc2020") != nil)) func gsdcNMEA() throws {
        let phone = try #require(try run(.nmea, "gsdc2020/2020-05-14-US-MTV-1/Pixel4_chipset.nmea"))
        var o = ImportOptions(strict: true, asTruth: true); o.origin = phone.header.origin
        let truth = try #require(try run(.nmea, "gsdc2020/2020-05-14-US-MTV-1/SPAN_Pixel4_1Hz.nmea", options: o))
        #expect(phone.report.events["gnss"] == 1737)
        #expect(truth.report.events["gt"] ?? 0 > 2000)
        // Phone and truth epochs share UTC seconds: most phone times have a truth sample.
        let truthTimes = Set(truth.events.map(\.time))
        let matched = phone.events.filter { truthTimes.contains($0.time) }.count
        #expect(matched > 1600)
    }

    @Test(.enabled(if: SharedData.path("opencellid-sample") != nil)) func openCellIDTowers() throws {
        let p = try #require(SharedData.path("opencellid-sample"))
        let dbURL = FileManager.default.temporaryDirectory.appendingPathComponent("cells-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: dbURL) }
        let r = try importReference(format: .opencellid, urls: try expandInputs([p], extensions: ["csv"]), output: dbURL,
                                    options: ImportOptions(strict: true))
        print("[opencellid]\n" + r.summary())
        #expect(r.events["tower"] == 45729)
        #expect(try CellDatabase(path: dbURL.path).count() == 45729)
    }

    @Test(.enabled(if: SharedData.path("ujiindoorloc") != nil)) func ujiIndoorLoc() throws {
        let t = try #require(try run(.ujiindoorloc, "ujiindoorloc/trainingData.csv"))
        #expect(t.report.events["gt"] == 19937)
        #expect(t.report.events["wifi"] ?? 0 > 19800)
        // Campus of Universitat Jaume I, Castelló: about 39.99 N, 0.07 W.
        for e in t.events.prefix(200) { if case .groundTruth(let g) = e.payload, case .geodetic(let p) = g.position {
            #expect(abs(p.latitude - 39.993) < 0.01 && abs(p.longitude + 0.067) < 0.01)
        } }
    }
}

/// PDR + WiFi fusion against WiFi alone on the Microsoft indoor walks, on the *same* waypoints
/// (issue 6's real-data comparison; each source's own waypoint set differs: the filters emit at
/// every step, WCL only at scans). Four walks: radio map from three, scored on the fourth.
@Suite struct MSIndoorFusionTests {
    @Test(.enabled(if: SharedData.path("ms-indoor") != nil)) func sameWaypointsArePaired() throws {
        let dir = URL(fileURLWithPath: try #require(SharedData.path("ms-indoor/site2/F3/path_data_files")))
        let files = try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "txt" }.sorted { $0.path < $1.path }.prefix(4)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-msindoor-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let walks = try RadioWalkEvaluation.prepare(Array(files), dataset: .msIndoor, directory: scratch)
        let s = try RadioWalkEvaluation().trainTest(train: Array(walks.prefix(3)), test: [walks[3]], split: .walk, scratch: scratch)
        let wcl = try #require(s.checkpoints.first { $0.source == .wcl })
        let ekf = try #require(s.checkpoints.first { $0.source == .ekf })
        let (m, w, n) = try #require(s.sameCheckpoints(.ekf, .wcl))
        #expect(n > 0 && n <= min(wcl.scored, ekf.scored))
        // Every checkpoint of the walk is counted for every source, scored or missed.
        #expect(wcl.checkpoints == ekf.checkpoints && wcl.scored + wcl.missed == wcl.checkpoints)
        print("ms-indoor 4 walks, same checkpoints (n=\(n)): ekf \(m) m, wcl \(w) m")
        // The fold's map carries the PDR step length fitted on the three training walks; on the
        // fourth it puts the PDR's distance within 15 % of the truth, where the default K walks
        // about 1.5 times the truth (docs/fusion.md, "Step length on real phones").
        let fold = try #require(s.folds.first)
        #expect(fold.stepLength?.walks == 3)
        let pdr = s.pdrDiagnostics(defaultK: FusionStage.Options.weinbergK.number)
        let fitted = try #require(pdr["truth_over_pdr"] as? Double), plain = try #require(pdr["truth_over_pdr_default_k"] as? Double)
        #expect(abs(fitted - 1) < 0.15 && plain < 0.8, "truth/PDR \(fitted) fitted K, \(plain) default K")
        // The ekf's per-source counters came out of the replay.
        #expect((s.fusionCounters[.ekf] ?? [:]).values.reduce(0) { $0 + $1.accepted } > 0)
    }
}
