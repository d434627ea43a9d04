import Foundation
import Positioning
import Storage
import TraceIO

/// OpenCellID cell export CSV:
/// `radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal`.
///
/// `radio` GSM/UMTS/LTE/NR → `rat` (CDMA dropped and counted); `net` → `mnc`; `area` →
/// LAC/TAC; `cell` → CI/ECI/NCI; `unit` → PCI (LTE/NR) or PSC (UMTS) (not kept for GSM);
/// `lon`, `lat` (deg) with h = 0; `range` (m) and `samples` kept; `changeable` = 0 means an
/// operator-supplied exact position (`provenance` "antenna"), 1 a measurement centroid
/// ("centroid"); `updated` kept (Unix s); `created` and `averageSignal` dropped.
public enum OpenCellIDTowerImporter {
    public static func parse(_ buf: ByteBuffer, file: String, options: ImportOptions) throws -> (towers: [CellTower], report: ImportReport) {
        var ctx = ImportContext(options: options, file: file)
        ctx.report.files = 1
        var cols: [String: Int] = [:]
        var towers: [CellTower] = []
        try ctx.forEachRow(of: buf) { rec, ctx in
            let fields = rec.fields
            if cols.isEmpty {
                cols = columnIndex(fields.map { buf.string(buf.trimmed($0)) })
                for c in ["radio", "mcc", "net", "area", "cell", "lon", "lat"] where cols[c] == nil {
                    cols = [:]; try ctx.malformed("header lacks column \(c)"); return
                }
                return
            }
            // Integers outside the trace format's exact range (TraceDomain.exactInteger) count as
            // absent: reference.json could not carry them back (a 17-digit 'area' was written and
            // then refused by the loader; found by the import-opencellid fuzz target).
            func i(_ k: String) -> Int? {
                cols[k].flatMap { $0 < fields.count ? buf.int(fields[$0]) : nil }.flatMap { TraceDomain.exactInteger.contains($0) ? $0 : nil }
            }
            func d(_ k: String) -> Double? { cols[k].flatMap { $0 < fields.count ? buf.double(fields[$0]) : nil } }
            let radio = cols["radio"].flatMap { $0 < fields.count ? buf.string(buf.trimmed(fields[$0])) : nil } ?? ""   // a short row has no radio field
            guard let rat = OpenCellIDMeasurementsImporter.rat(forAct: radio) else {
                if radio.isEmpty { try ctx.malformed("empty radio") } else { ctx.drop("radio \(radio) (no RAT in trace format)") }
                return
            }
            guard let mcc = i("mcc"), let mnc = i("net"), let area = i("area"), let cid = i("cell"),
                  let lat = d("lat"), let lon = d("lon"), abs(lat) <= 90, abs(lon) <= 180 else {
                try ctx.malformed("bad mcc/net/area/cell/lat/lon"); return
            }
            let unit = i("unit")
            towers.append(CellTower(cell: CellID(rat: rat, mcc: mcc, mnc: mnc, area: area, cid: cid),
                                    position: Geodetic(latitude: lat, longitude: lon, height: 0), range: d("range").flatMap { (0...TraceDomain.localMetres.upperBound).contains($0) ? $0 : nil },
                                    samples: i("samples"), pci: rat == .gsm ? nil : unit,
                                    provenance: i("changeable") == 0 ? "antenna" : "centroid", updated: i("updated")))
            ctx.report.events["tower", default: 0] += 1
        }
        return (towers, ctx.report)
    }
}

/// An access point position estimated from WiGLE observations.
public struct APEstimate: Sendable, Equatable {
    public var bssid: String
    public var ssid: String
    public var position: Geodetic
    public var observations: Int
}

/// WiGLE CSV: the WigleWifi app export (`WigleWifi-1.x` pre-header line, then
/// `MAC,SSID,AuthMode,FirstSeen,Channel,[Frequency,]RSSI,CurrentLatitude,CurrentLongitude,AltitudeMeters,AccuracyMeters,…,Type`)
/// or a web export with `netid`/`trilat`/`trilong`.
///
/// App exports hold one row per observation (phone position + RSSI); an AP's position is
/// the RSSI-weighted centroid of its observations, weight 10^(RSSI/20) (field amplitude),
/// height the mean altitude. Web exports already hold one estimated position per AP.
/// Only `Type` WIFI (or no Type) rows are used; Bluetooth/cellular rows are dropped and counted.
/// BSSIDs are lower-cased.
public enum WiGLEImporter {
    public static func parse(_ text: String, file: String, options: ImportOptions) throws -> (aps: [APEstimate], report: ImportReport) {
        var ctx = ImportContext(options: options, file: file)
        ctx.report.files = 1
        var cols: [String: Int] = [:]
        struct Acc { var ssid = ""; var w = 0.0; var lat = 0.0; var lon = 0.0; var hSum = 0.0; var hN = 0; var n = 0; var order = 0 }
        var acc: [String: Acc] = [:]
        let buf = ByteBuffer(string: text)
        try ctx.forEachRow(of: buf) { rec, ctx in
            if rec.line == 1 && buf.hasPrefix(rec.range, "WigleWifi") { return }
            let f = buf.strings(rec)
            if cols.isEmpty {
                cols = columnIndex(f)
                guard cols["MAC"] != nil || cols["netid"] != nil,
                      (cols["CurrentLatitude"] != nil && cols["CurrentLongitude"] != nil) || (cols["trilat"] != nil && cols["trilong"] != nil) else {
                    cols = [:]; try ctx.malformed("header needs MAC/netid and CurrentLatitude,CurrentLongitude or trilat,trilong"); return
                }
                return
            }
            func s(_ k: String) -> String? { cols[k].flatMap { $0 < f.count ? f[$0].trimmingCharacters(in: .whitespaces) : nil } }
            func d(_ k: String) -> Double? { s(k).flatMap { Double($0) } }
            if let type = s("Type") ?? s("type"), !type.isEmpty, type.uppercased() != "WIFI" {
                ctx.drop("\(type) row (not WiFi)"); return
            }
            guard let mac = (s("MAC") ?? s("netid"))?.lowercased(), mac.count == 17,
                  let lat = d("CurrentLatitude") ?? d("trilat"), let lon = d("CurrentLongitude") ?? d("trilong"),
                  abs(lat) <= 90, abs(lon) <= 180 else { try ctx.malformed("row needs a MAC and a position"); return }
            if lat == 0 && lon == 0 { ctx.drop("row at 0,0 (no position)"); return }
            var w = 1.0
            if let r = s("RSSI"), !r.isEmpty {
                guard let v = Double(r), TraceDomain.power.contains(v) else {
                    try ctx.malformed("RSSI '\(r)' is not a power in [-300, 100] dBm"); return
                }
                w = pow(10, v / 20)
            }
            var a = acc[mac] ?? Acc(order: acc.count)
            a.ssid = s("SSID") ?? s("ssid") ?? a.ssid
            a.w += w; a.lat += w * lat; a.lon += w * lon; a.n += 1
            if let h = d("AltitudeMeters"), TraceDomain.height.contains(h) { a.hSum += h; a.hN += 1 }
            acc[mac] = a
        }
        let aps = acc.sorted { $0.value.order < $1.value.order }.map { k, a in
            APEstimate(bssid: k, ssid: a.ssid, position: Geodetic(latitude: a.lat / a.w, longitude: a.lon / a.w,
                                                                  height: a.hN > 0 ? a.hSum / Double(a.hN) : 0), observations: a.n)
        }
        ctx.report.events["ap", default: 0] += aps.count
        return (aps, ctx.report)
    }
}

/// One UJIIndoorLoc fingerprint row, as `UJIIndoorLocImporter.rows` reads it.
public struct UJIIndoorLocRow: Sendable {
    /// `LONGITUDE`, `LATITUDE`: EPSG:3857 Web-Mercator metres.
    public var position: SIMD2<Double>
    /// `FLOOR`.
    public var floor: Int
    /// `BUILDINGID`; 0 when the file lacks the column.
    public var building: Int
    /// (WAP column name as the header spells it, RSS dBm) of the APs heard, in column order: the
    /// negative values (100 is "not heard"; 0 dBm and above are not kept, `UJIIndoorLocImporter`).
    public var heard: [(String, Double)]
    /// `USERID`, `PHONEID`, `TIMESTAMP` (Unix s); 0 when the file lacks the column.
    public var user = 0
    public var phone = 0
    public var timestamp = 0
    public init(position: SIMD2<Double>, floor: Int, building: Int, heard: [(String, Double)]) {
        self.position = position; self.floor = floor; self.building = building; self.heard = heard
    }
}

/// UJIIndoorLoc fingerprints (`WAP001…WAP520` RSS dBm, 100 = not heard, the others integers
/// from −104 to 0 dBm; a reading of 0 dBm or more is not kept: no phone measures a WiFi level
/// that strong, the training file has 137 of them in 118 rows, and keeping them made every
/// estimator worse (docs/formats.md); `LONGITUDE`, `LATITUDE` in EPSG:3857 Web-Mercator metres; `FLOOR`,
/// `BUILDINGID`, `SPACEID`, `RELATIVEPOSITION`, `USERID`, `PHONEID`, `TIMESTAMP` Unix s;
/// Torres-Sospedra et al., IPIN 2014) into a trace of survey points.
///
/// `rows` is the one reader of the file (the importer and the dataset protocols of `evaluate
/// radio` both read through it). `parse` turns each row into one `wifi` scan (the APs heard;
/// BSSID = the column name lower-cased, e.g. `wap001`, since the data set publishes no MACs;
/// freq 0 = unknown) and one `gt` `checkpoint` at the same time with the position converted by
/// the inverse spherical Web-Mercator formulas (R = 6 378 137 m):
/// λ = x / R, φ = 2·atan(exp(y / R)) − π/2 (degrees out), h = 0, `floor` = FLOOR.
/// `device` = `phone<PHONEID>`; rows of one phone sharing a time stamp are spread by 1 ms
/// steps in file order so that every truth sample has its own time. BUILDINGID, SPACEID,
/// RELATIVEPOSITION and USERID are not kept. Default origin: the first row's position.
public enum UJIIndoorLocImporter {
    public static let earthRadius = 6_378_137.0

    /// Inverse spherical Web-Mercator (EPSG:3857 → WGS84 degrees).
    public static func geodetic(x: Double, y: Double) -> Geodetic {
        Geodetic(latitude: (2 * atan(exp(y / earthRadius)) - .pi / 2) * 180 / .pi,
                 longitude: x / earthRadius * 180 / .pi, height: 0)
    }

    /// The columns every file must have; `require` adds more (the importer needs `PHONEID`
    /// and `TIMESTAMP`, the building/floor protocols `BUILDINGID`).
    public static let requiredColumns = ["LONGITUDE", "LATITUDE", "FLOOR"]

    /// The rows of a UJIIndoorLoc CSV file (the one CSV reader, `ByteBuffer.forEachCSVRecord`).
    /// A header lacking a required column, or repeating one, is a data error; a row with the
    /// wrong number of fields or a value that is not a number (an integer for `FLOOR`, the
    /// ids, `TIMESTAMP` and the WAP columns) is malformed: an error under `options.strict`,
    /// else skipped and counted. Empty lines are skipped.
    public static func rows(_ buf: ByteBuffer, file: String, options: ImportOptions, require: [String] = [])
        throws -> (rows: [UJIIndoorLocRow], report: ImportReport) {
        var ctx = ImportContext(options: options, file: file)
        ctx.report.files = 1
        var wapCols: [(Int, String)] = []
        var cols: [String: Int] = [:]
        var columns = 0
        var rows: [UJIIndoorLocRow] = []
        try ctx.forEachRow(of: buf) { rec, ctx in
            let fields = rec.fields
            if cols.isEmpty {
                let names = buf.strings(rec).map { $0.trimmingCharacters(in: .whitespaces) }
                if let d = duplicateColumn(names) { try ctx.malformed("header repeats column \(d)"); return }
                for c in requiredColumns + require where !names.contains(c) { try ctx.malformed("header lacks column \(c)"); return }
                cols = columnIndex(names)
                columns = names.count
                wapCols = names.enumerated().filter { $0.element.hasPrefix("WAP") }.map { ($0.offset, $0.element) }
                return
            }
            guard fields.count == columns else { try ctx.malformed("expected \(columns) columns, found \(fields.count)"); return }
            guard let x = buf.double(fields[cols["LONGITUDE"]!]), let y = buf.double(fields[cols["LATITUDE"]!]),
                  let floor = buf.int(fields[cols["FLOOR"]!]) else { try ctx.malformed("bad LONGITUDE/LATITUDE/FLOOR"); return }
            var row = UJIIndoorLocRow(position: SIMD2(x, y), floor: floor, building: 0, heard: [])
            for (c, keyPath) in [("BUILDINGID", \UJIIndoorLocRow.building), ("USERID", \.user), ("PHONEID", \.phone), ("TIMESTAMP", \.timestamp)] {
                guard let i = cols[c] else { continue }
                guard let v = buf.int(fields[i]) else { try ctx.malformed("\(c) is not an integer"); return }
                row[keyPath: keyPath] = v
            }
            for (i, name) in wapCols {
                guard let v = buf.int(fields[i]) else { try ctx.malformed("\(name) is not an integer"); return }
                if v == 100 { continue }
                guard v < 0 else { ctx.drop("WAP reading of \(v >= 100 ? "over 100" : "0 to 99") dBm (not a level a phone measures; not kept)"); continue }
                row.heard.append((name, Double(v)))
            }
            rows.append(row)
        }
        if cols.isEmpty && options.strict {
            throw ImportDataError(file: file, line: max(ctx.line, 1), reason: "no header row naming \((requiredColumns + require).joined(separator: ", "))",
                                  code: .missingHeader)
        }
        return (rows, ctx.report)
    }

    public static func parse(_ buf: ByteBuffer, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, first: Geodetic?) {
        var (rows, report) = try self.rows(buf, file: file, options: options, require: ["PHONEID", "TIMESTAMP"])
        var ctx = ImportContext(options: options, file: file)
        var events: [TraceEvent] = []
        var first: Geodetic? = nil
        var lastTime: [String: (Int, Int)] = [:]   // device → (timestamp, duplicates so far)
        for r in rows {
            let device = "phone\(r.phone)"
            var dup = 0
            if let (t0, k) = lastTime[device], t0 == r.timestamp { dup = k + 1 }
            lastTime[device] = (r.timestamp, dup)
            let t = Double(r.timestamp) + Double(dup) * 0.001
            let g = geodetic(x: r.position.x, y: r.position.y)
            if first == nil { first = g }
            if r.heard.isEmpty { ctx.drop("fingerprint with no AP heard (scan not written)") } else {
                let aps = r.heard.map { WiFiObservation(bssid: $0.0.lowercased(), ssid: "", frequency: 0, rss: $0.1) }
                events.append(TraceEvent(time: t, device: device, payload: .wifi(WiFiScan(accessPoints: aps))))
            }
            events.append(TraceEvent(time: t, device: device, payload: .groundTruth(GroundTruth(position: .geodetic(g), floor: r.floor, kind: .checkpoint))))
        }
        report.merge(ctx.report)
        return (events, report, first)
    }

    public static func importFiles(_ urls: [URL], options: ImportOptions) throws -> ImportedTrace {
        try importEachFile(urls, options: options, originNote: "first survey point") { u in
            let r = try parse(ByteBuffer(url: u), file: u.path, options: options)
            return (r.events, r.report, r.first, [:])
        }
    }
}

/// The one `reference.json` writer (ReferenceLoader is the one reader): sets some members of the
/// file and keeps every other member, then writes it atomically (`OutputFile`: a killed run
/// leaves the old file or the new one). Positions are written as `lat`, `lon`, `h` (deg, deg, m).
public enum ReferenceJSONWriter {
    /// Sets `members` (a member given as `NSNull()` is removed) of the file at `url`, which may
    /// not exist yet.
    public static func update(url: URL, members: [String: Any]) throws {
        var root: [String: Any] = [:]
        if let d = try? Data(contentsOf: url), let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any] { root = o }
        for (k, v) in members { root[k] = v is NSNull ? nil : v }
        let data = try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys])
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try OutputFile.write(data, to: url)
    }

    /// Replaces the `aps`, `cells` and/or `cell_coverage` arrays that are given.
    public static func update(url: URL, aps: [APEstimate]? = nil, towers: [CellTower]? = nil, coverage: [CellCoverageRecord]? = nil) throws {
        var members: [String: Any] = [:]
        if let aps {
            members["aps"] = aps.map { a -> [String: Any] in
                ["bssid": a.bssid, "lat": a.position.latitude, "lon": a.position.longitude, "h": a.position.height]
            }
        }
        if let towers { members["cells"] = CellTower.referenceJSON(towers) }
        if let coverage { members["cell_coverage"] = CellCoverageRecord.referenceJSON(coverage) }
        try update(url: url, members: members)
    }
}
