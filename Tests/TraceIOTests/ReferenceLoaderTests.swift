import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

@Suite struct ReferenceLoaderTests {
    let frame = LocalFrame(origin: Geodetic(latitude: 48.1, longitude: 11.5, height: 500))

    private func folder(_ files: [String: String]) throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-ref-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        for (name, text) in files { try Data(text.utf8).write(to: d.appendingPathComponent(name)) }
        return d
    }

    @Test func loadsEveryKindInBothPositionForms() throws {
        let d = try folder(["reference.json": """
        {"aps": [{"bssid": "02:00:00:00:00:0A", "e": 1.0, "n": 2.0, "u": 2.5, "floor": 0, "p0": -40, "n_exp": 2.5, "radio": "r1"},
                 {"bssid": "02:00:00:00:00:0b", "lat": 48.1, "lon": 11.5}],
         "cells": [{"rat": "lte", "mcc": 262, "mnc": 1, "area": 100, "cid": 5, "e": 10, "n": 20, "u": 30,
                    "azimuth": 120, "beamwidth": 120, "range": 2000}],
         "beacons": [{"id": "B1", "e": 0, "n": 0, "u": 3, "offset": 0.1, "period": 0.35}],
         "landmarks": [{"id": "L1", "lat": 48.1009, "lon": 11.5, "h": 502, "height": 2.0}],
         "floorplan": "floorplan.geojson"}
        """, "floorplan.geojson": """
        {"type": "FeatureCollection", "frame": "enu", "features": [
          {"type": "Feature", "properties": {"floor": 1}, "geometry": {"type": "Polygon", "coordinates": [[[0,0],[10,0],[10,5],[0,5],[0,0]]]}},
          {"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": [[2,0],[2,5]]}}]}
        """])
        defer { try? FileManager.default.removeItem(at: d) }
        let r = try ReferenceLoader.load(folder: d, frame: frame)
        #expect(r.accessPoints["02:00:00:00:00:0a"]?.position == SIMD3(1, 2, 2.5))
        #expect(r.accessPoints["02:00:00:00:00:0a"]?.pathLossExponent == 2.5)
        let b = try #require(r.accessPoints["02:00:00:00:00:0b"]).position
        #expect(abs(b.x) < 1e-6 && abs(b.y) < 1e-6 && abs(b.z) < 1e-6)   // the origin itself
        let cell = CellID(rat: .lte, mcc: 262, mnc: 1, area: 100, cid: 5)
        #expect(r.cells[cell]?.azimuth == 120 && r.cells[cell]?.provenance == "antenna")
        #expect(r.beacons["B1"]?.period == 0.35 && r.beacons["B1"]?.offset == 0.1)
        // 0.0009° of latitude north at 48.1° ≈ 100.04 m (meridian arc), 2 m up (minus curvature drop ~0.8 mm).
        let l = try #require(r.landmarks["L1"]).position
        #expect(abs(l.y - 100.04) < 0.05 && abs(l.x) < 1e-6 && abs(l.z - 2) < 0.01)
        #expect(r.walls.count == 5)
        #expect(r.walls.filter { $0.floor == 1 }.count == 4)
        #expect(r.walls.contains(Wall(a: SIMD2(10, 5), b: SIMD2(0, 5), floor: 1, bounds: true)))   // a polygon ring
        #expect(r.walls.filter(\.bounds).count == 4)                                                 // the LineString bounds nothing
    }

    /// A polygon ring given twice is one ring (ms-indoor repeats shop outlines), so the even–odd
    /// walkable area holds: inside the outline and outside the shop is walkable, inside the shop
    /// and outside the outline are not; a LineString wall bounds nothing.
    @Test func duplicateRingsCountOnceInTheWalkableArea() throws {
        let shop = "[[[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]]]"
        let json = #"{"floorplan": {"type": "FeatureCollection", "frame": "enu", "features": ["#
            + #"{"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]}},"#
            + #"{"type": "Feature", "geometry": {"type": "Polygon", "coordinates": \#(shop)}},"#
            + #"{"type": "Feature", "geometry": {"type": "Polygon", "coordinates": \#(shop)}},"#
            + #"{"type": "Feature", "geometry": {"type": "LineString", "coordinates": [[1, 1], [1, 9]]}}]}}"#
        let r = try ReferenceLoader.load(json: try JSONSerialization.jsonObject(with: Data(json.utf8)), url: URL(fileURLWithPath: "/x/reference.json"),
                                         frame: LocalFrame(origin: Geodetic(latitude: 48, longitude: 11)))
        #expect(r.walls.count == 4 + 4 + 1)
        let area = WalkableArea(walls: r.walls)
        #expect(area.contains(SIMD2(2, 2)) && area.contains(SIMD2(0.5, 5)) && area.contains(SIMD2(8, 5)))
        #expect(!area.contains(SIMD2(5, 5)) && !area.contains(SIMD2(-1, 5)) && !area.contains(SIMD2(11, 5)))
        #expect(WalkableArea(walls: [Wall(a: SIMD2(0, 0), b: SIMD2(1, 0))]).contains(SIMD2(50, 50)))    // no rings: no test
    }

    @Test func fingerprintSurveyLoadsAndErrorsNameThePoint() throws {
        let d = try folder(["reference.json": """
        {"fingerprints": {"threshold_dbm": -92, "spacing_m": 2, "points": [
          {"e": 0, "n": 2, "floor": 1, "scans": 5, "rss": {"02:00:00:00:00:0A": -55.5, "02:00:00:00:00:0b": -70}},
          {"lat": 48.1, "lon": 11.5, "rss": {"02:00:00:00:00:0b": -61}}]}}
        """])
        defer { try? FileManager.default.removeItem(at: d) }
        let m = try #require(try ReferenceLoader.load(folder: d, frame: frame).fingerprints)
        #expect(m.threshold == -92 && m.spacing == 2 && m.points.count == 2)
        #expect(m.points[0] == FingerprintMap.Point(position: SIMD2(0, 2), floor: 1, rss: ["02:00:00:00:00:0a": -55.5, "02:00:00:00:00:0b": -70], scans: 5))
        #expect(abs(m.points[1].position.x) < 1e-6 && m.points[1].floor == nil && m.bssids == ["02:00:00:00:00:0a", "02:00:00:00:00:0b"])
        for (bad, reason) in [(#"{"fingerprints": {"threshold_dbm": -90, "points": [{"e": 0, "n": 0, "rss": {"a": "x"}}]}}"#,
                               "fingerprints.points[0]: rss['a'] must be a number in [-300, 100] dBm"),
                              (#"{"fingerprints": {"threshold_dbm": -90, "points": [{"e": 0, "count": 0}]}}"#,
                               "fingerprints.points[0]: missing object 'rss' (bssid → dBm)"),
                              (#"{"fingerprints": {"points": []}}"#, "fingerprints: missing key 'threshold_dbm'")] {
            let b = try folder(["reference.json": bad])
            defer { try? FileManager.default.removeItem(at: b) }
            do { _ = try ReferenceLoader.load(folder: b, frame: frame); Issue.record("accepted \(bad)") } catch let e as TraceDataError {
                #expect(e.reason == reason)
            }
        }
    }

    /// `cell_coverage`: the areas by cell and TA in both position forms, and located errors for
    /// a malformed covariance, a count below 1, a duplicate area. A coverage area written by
    /// `CellCoverageRecord.referenceJSON` reads back to the same area.
    @Test func cellCoverageLoadsAndErrorsNameTheArea() throws {
        let d = try folder(["reference.json": """
        {"cell_coverage": [
          {"rat": "lte", "mcc": 302, "mnc": 720, "area": 1, "cid": 77, "e": 10, "n": -20, "cov_m2": [400, 30, 900], "count": 12},
          {"rat": "lte", "mcc": 302, "mnc": 720, "area": 1, "cid": 77, "ta": 3, "lat": 48.1, "lon": 11.5, "cov_m2": [100, 0, 100], "count": 4}]}
        """])
        defer { try? FileManager.default.removeItem(at: d) }
        let m = try #require(try ReferenceLoader.load(folder: d, frame: frame).cellCoverage)
        let cell = CellID(rat: .lte, mcc: 302, mnc: 720, area: 1, cid: 77)
        #expect(m.areas[.init(cell: cell, timingAdvance: nil)] == .init(mean: SIMD2(10, -20), covariance: Covariance2(ee: 400, en: 30, nn: 900), count: 12))
        let ta = try #require(m.areas[.init(cell: cell, timingAdvance: 3)])
        #expect(abs(ta.mean.x) < 1e-6 && abs(ta.mean.y) < 1e-6 && ta.count == 4)
        let back = CellCoverageRecord.map(CellCoverageRecord.records(m, frame: frame), frame: frame)
        for (k, a) in m.areas {
            let b = try #require(back.areas[k])
            #expect(abs(b.mean.x - a.mean.x) < 1e-6 && abs(b.mean.y - a.mean.y) < 1e-6 && b.covariance == a.covariance && b.count == a.count)
        }
        let id = #""rat": "lte", "mcc": 1, "mnc": 1, "area": 1, "cid": 1, "e": 0, "n": 0"#
        for (bad, reason) in [(#"{"cell_coverage": [{\#(id), "cov_m2": [1, 2], "count": 3}]}"#, "cell_coverage[0]: cov_m2 must be [ee, en, nn] in m², each within ±1e14"),
                              (#"{"cell_coverage": [{\#(id), "cov_m2": [1, 5, 1], "count": 3}]}"#,
                               "cell_coverage[0]: cov_m2 is not a covariance (needs ee ≥ 0, nn ≥ 0, ee·nn ≥ en²)"),
                              (#"{"cell_coverage": [{\#(id), "cov_m2": [1, 0, 1], "count": 0}]}"#, "cell_coverage[0]: count must be ≥ 1, got 0"),
                              (#"{"cell_coverage": [{\#(id), "cov_m2": [1, 0, 1], "count": 2}, {\#(id), "cov_m2": [1, 0, 1], "count": 2}]}"#,
                               "cell_coverage[1]: duplicate area for lte:1-1-1-1 ta none")] {
            let b = try folder(["reference.json": bad])
            defer { try? FileManager.default.removeItem(at: b) }
            do { _ = try ReferenceLoader.load(folder: b, frame: frame); Issue.record("accepted \(bad)") } catch let e as TraceDataError {
                #expect(e.reason == reason)
            }
        }
    }

    @Test func geoJSONInDegreesIsProjectedToENU() throws {
        let g: [String: Any] = ["type": "LineString", "coordinates": [[11.5, 48.1], [11.501, 48.1]]]
        let w = try ReferenceLoader.walls(geoJSON: g, frame: frame)
        #expect(w.count == 1)
        // 0.001° of longitude at 48.1°: (π/180)·N·cos φ / 1000 ≈ 74.4 m.
        #expect(abs(w[0].b.x - 74.44) < 0.05 && abs(w[0].b.y) < 0.01)
    }

    @Test func errorsNameTheEntry() throws {
        let d = try folder(["reference.json": #"{"aps": [{"e": 1, "count": 2}]}"#])
        defer { try? FileManager.default.removeItem(at: d) }
        do { _ = try ReferenceLoader.load(folder: d, frame: frame); Issue.record("accepted") } catch let e as TraceDataError {
            #expect(e.reason == "aps[0]: missing key 'bssid'")
            #expect(e.description.hasSuffix("reference.json: aps[0]: missing key 'bssid'"))
        }
        let none = try folder([:])
        defer { try? FileManager.default.removeItem(at: none) }
        #expect(try ReferenceLoader.load(folder: none, frame: frame).accessPoints.isEmpty)
    }

    @Test func traceLocationResolvesFilesAndFolders() throws {
        let d = try folder(["trace.jsonl": "", "reference.json": "{}"])
        defer { try? FileManager.default.removeItem(at: d) }
        let a = try TraceLocation.resolve(d.path)
        #expect(a.trace.lastPathComponent == "trace.jsonl" && a.reference?.lastPathComponent == "reference.json")
        #expect(a.name == d.lastPathComponent)
        let b = try TraceLocation.resolve(d.appendingPathComponent("trace.jsonl").path)
        #expect(b.reference != nil && b.name == d.lastPathComponent)
        let all = try TraceLocation.resolveAll(d.deletingLastPathComponent().path + "/" + d.lastPathComponent)
        #expect(all.count == 1)
        #expect(throws: TraceDataError.self) { _ = try TraceLocation.resolve(d.appendingPathComponent("missing").path) }
        let lone = try folder(["x.jsonl": "", "y.jsonl": ""])
        defer { try? FileManager.default.removeItem(at: lone) }
        #expect(try TraceLocation.resolveAll(lone.path).map(\.name) == ["x", "y"])
        #expect(try TraceLocation.resolve(lone.appendingPathComponent("x.jsonl").path).reference == nil)
    }

    /// `PreparedReference.data(in:)` (refine's per-tile conversion, the file read once) gives
    /// exactly what `load` gives in that frame, for every kind of entry in both position forms,
    /// geodetic and ENU floor plans, in frames with and without a height.
    @Test func preparedReferenceEqualsLoadInEveryFrame() throws {
        let text = """
        {"aps": [{"bssid": "02:00:00:00:00:0A", "e": 1.0, "n": 2.0, "u": 2.5, "floor": 0, "p0": -40, "n_exp": 2.5, "radio": "r1"},
                 {"bssid": "02:00:00:00:00:0b", "lat": 48.1, "lon": 11.5},
                 {"bssid": "02:00:00:00:00:0c", "lat": 48.1003, "lon": 11.5011, "h": 520},
                 {"bssid": "02:00:00:00:00:0B", "lat": 48.1001, "lon": 11.5002}],
         "cells": [{"rat": "lte", "mcc": 262, "mnc": 1, "area": 100, "cid": 5, "e": 10, "n": 20, "u": 30, "azimuth": 120},
                   {"rat": "gsm", "mcc": 262, "mnc": 2, "area": 7, "cid": 9, "lat": 48.12, "lon": 11.49, "range": 900}],
         "beacons": [{"id": "B1", "e": 0, "n": 0, "u": 3, "offset": 0.1, "period": 0.35},
                     {"id": "B2", "lat": 48.1002, "lon": 11.5003, "period": 0.5}],
         "landmarks": [{"id": "L1", "lat": 48.1009, "lon": 11.5, "h": 502, "height": 2.0}, {"id": "L2", "e": 3, "n": 4}],
         "fingerprints": {"threshold_dbm": -95, "spacing_m": 2, "points": [
            {"e": 0, "n": 0, "floor": 0, "scans": 3, "rss": {"02:00:00:00:00:0a": -50}},
            {"lat": 48.1004, "lon": 11.5004, "rss": {"02:00:00:00:00:0b": -61, "02:00:00:00:00:0c": -70}}]},
         "cell_coverage": [{"rat": "lte", "mcc": 262, "mnc": 1, "area": 100, "cid": 5, "ta": 3, "e": 10, "n": 20, "cov_m2": [100, 10, 200], "count": 5},
                           {"rat": "lte", "mcc": 262, "mnc": 1, "area": 100, "cid": 5, "lat": 48.101, "lon": 11.501, "cov_m2": [400, 0, 300], "count": 9, "walks": 2}],
         "floorplan": {"type": "FeatureCollection", "features": [
            {"type": "Feature", "properties": {"floor": 1}, "geometry": {"type": "Polygon", "coordinates": [[[11.5, 48.1], [11.5001, 48.1], [11.5001, 48.1001], [11.5, 48.1]]]}},
            {"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": [[11.5002, 48.1], [11.5002, 48.1], [11.5002, 48.1002]]}}]}}
        """
        let url = URL(fileURLWithPath: "/nonexistent/reference.json")
        let json = try JSONSerialization.jsonObject(with: Data(text.utf8))
        let prepared = try ReferenceLoader.prepare(json: json, url: url, frame: LocalFrame(origin: Geodetic(latitude: 0, longitude: 0)))
        for origin in [Geodetic(latitude: 48.1, longitude: 11.5), Geodetic(latitude: 48.15, longitude: 11.45),
                       Geodetic(latitude: -33.9, longitude: 151.2), Geodetic(latitude: 48.1, longitude: 11.5, height: 480)] {
            let frame = LocalFrame(origin: origin)
            let a = prepared.data(in: frame), b = try ReferenceLoader.load(json: json, url: url, frame: frame)
            #expect(a.accessPoints == b.accessPoints && a.cells == b.cells && a.beacons == b.beacons && a.landmarks == b.landmarks)
            #expect(a.fingerprints == b.fingerprints && a.cellCoverage == b.cellCoverage && a.walls == b.walls)
            #expect(a.accessPoints.count == 3 && a.walls.count == 4 && a.cellCoverage?.areas.count == 2)
        }
        // The ENU floor plan keeps its metres in every frame.
        let enu = try JSONSerialization.jsonObject(with: Data(#"{"floorplan": {"type": "LineString", "frame": "enu", "coordinates": [[0, 0], [4, 0]]}}"#.utf8))
        let p = try ReferenceLoader.prepare(json: enu, url: url, frame: frame)
        #expect(p.data(in: LocalFrame(origin: Geodetic(latitude: 10, longitude: 10))).walls == [Wall(a: SIMD2(0, 0), b: SIMD2(4, 0))])
    }
}
