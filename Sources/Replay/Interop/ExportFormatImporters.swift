import Foundation
import Positioning
import TraceIO

/// Importers for the formats `posfuse export` writes (GeoJSON, CSV, TUM), so exported
/// tracks can be read back (round trip) and third-party tracks in these formats used as
/// ground truth.
///
/// Rule for every position: `source` `gnss` → a `gnss` event (acc = 1.5096·σ from the
/// covariance, 68 % radius); `gt` or no source → `gt`; any other source (an estimate) is
/// dropped and counted unless `--as-truth` makes every position ground truth.
enum PositionRows {
    static func event(time: Double, source: String?, subject: String?, geodetic: Geodetic?, local: SIMD3<Double>?,
                      floor: Int?, kind: String?, covariance: Covariance2?, options: ImportOptions,
                      ctx: inout ImportContext) -> TraceEvent? {
        let dev = subject ?? options.device
        let src = source ?? "gt"
        if src == "gnss" && !options.asTruth {
            guard let g = geodetic else { ctx.drop("gnss row without lat/lon"); return nil }
            let sigma = covariance.map { (($0.ee + $0.nn) / 2).squareRoot() }
            let acc = sigma.map { $0 * sqrt(-2 * log(1 - 0.68)) } ?? 0
            return TraceEvent(time: time, device: dev, payload: .gnss(GNSSFix(latitude: g.latitude, longitude: g.longitude,
                                                                             altitude: g.height, accuracy: acc)))
        }
        guard src == "gt" || options.asTruth else { ctx.drop("position of source \(src) (an estimate; use --as-truth)"); return nil }
        let k = GroundTruth.Kind(rawValue: kind ?? "") ?? .continuous
        let pos: GroundTruthPosition
        if let g = geodetic { pos = .geodetic(g) } else if let l = local { pos = .local(l) } else { ctx.drop("row without position"); return nil }
        return TraceEvent(time: time, device: dev, payload: .groundTruth(GroundTruth(position: pos, floor: floor, kind: k)))
    }
}

/// GeoJSON FeatureCollection (as written by `posfuse export geojson`, or any with Point
/// features whose properties carry `t` (s) or `time` (ISO 8601)). Coordinates [lon, lat, h?].
/// `LineString` track overviews are skipped (counted). Origin: `posfuse_origin`, else the first point.
public enum GeoJSONImporter {
    public static func parse(_ data: Data, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, origin: Geodetic?) {
        var ctx = ImportContext(options: options, file: file)
        ctx.report.files = 1
        guard let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ImportDataError(file: file, line: 1, reason: "not a JSON object")
        }
        var origin: Geodetic? = nil
        if let o = obj["posfuse_origin"] as? [String: Any], let la = (o["lat"] as? NSNumber)?.doubleValue,
           let lo = (o["lon"] as? NSNumber)?.doubleValue {
            let h = (o["h"] as? NSNumber)?.doubleValue ?? 0
            if TraceDomain.latLonViolation(la, lo) == nil, TraceDomain.height.contains(h) {
                origin = Geodetic(latitude: la, longitude: lo, height: h)
            } else {
                ctx.line = 1; try ctx.malformed("posfuse_origin outside lat [-90, 90], lon [-180, 180], h [-2e4, 1e5]")
            }
        }
        let features = (obj["features"] as? [[String: Any]]) ?? (obj["type"] as? String == "Feature" ? [obj] : [])
        var events: [TraceEvent] = []
        for (i, f) in features.enumerated() {
            ctx.line = i + 1
            ctx.report.lines += 1
            guard let g = f["geometry"] as? [String: Any], let type = g["type"] as? String else { try ctx.malformed("feature \(i) without geometry"); continue }
            guard type == "Point" else { ctx.drop("\(type) feature (only Points carry times)"); continue }
            let p = (f["properties"] as? [String: Any]) ?? [:]
            guard let c = g["coordinates"] as? [Any], c.count >= 2, let lon = (c[0] as? NSNumber)?.doubleValue,
                  let lat = (c[1] as? NSNumber)?.doubleValue, abs(lat) <= 90, abs(lon) <= 180 else {
                try ctx.malformed("feature \(i): bad coordinates"); continue
            }
            let h = c.count >= 3 ? (c[2] as? NSNumber)?.doubleValue ?? 0 : 0
            guard TraceDomain.height.contains(h) else { try ctx.malformed("feature \(i): height \(h) outside [-2e4, 1e5] m"); continue }
            guard let t = (p["t"] as? NSNumber)?.doubleValue ?? (p["time"] as? String).flatMap(UTCTime.parseISO8601) else {
                ctx.drop("Point without t/time"); continue
            }
            let geo = Geodetic(latitude: lat, longitude: lon, height: h)
            if origin == nil { origin = geo }
            var floor: Int? = nil
            if let fl = p["floor"], !(fl is NSNull) {
                guard let v = (fl as? NSNumber)?.doubleValue, v == v.rounded(), abs(v) <= 1000 else {
                    try ctx.malformed("feature \(i): floor must be an integer in [-1000, 1000]"); continue
                }
                floor = Int(v)
            }
            var cov: Covariance2? = nil
            if let a = (p["cov_ee"] as? NSNumber)?.doubleValue, let b = (p["cov_en"] as? NSNumber)?.doubleValue,
               let d = (p["cov_nn"] as? NSNumber)?.doubleValue { cov = Covariance2(ee: a, en: b, nn: d) }
            if let e = PositionRows.event(time: t, source: p["source"] as? String, subject: p["subject"] as? String, geodetic: geo,
                                          local: nil, floor: floor, kind: p["kind"] as? String,
                                          covariance: cov, options: options, ctx: &ctx) { events.append(e) }
        }
        return (events, ctx.report, origin)
    }
}

/// CSV with a header row naming at least `t` (s) or `time_utc` (ISO 8601) and either
/// `lat`,`lon`[,`h`] (deg, m) or `e`,`n`[,`u`] (ENU m); optional `source`, `subject`,
/// `floor`, `kind`, `cov_ee`, `cov_en`, `cov_nn` (the columns `posfuse export csv` writes).
public enum PositionCSVImporter {
    public static func parse(_ text: String, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, origin: Geodetic?) {
        var ctx = ImportContext(options: options, file: file)
        ctx.report.files = 1
        var cols: [String: Int] = [:]
        var events: [TraceEvent] = []
        var origin: Geodetic? = nil
        let buf = ByteBuffer(string: text)
        try ctx.forEachRow(of: buf, comment: UInt8(ascii: "#")) { rec, ctx in
            if rec.isComment { return }
            let f = buf.strings(rec)
            if cols.isEmpty {
                cols = columnIndex(f)
                guard cols["t"] != nil || cols["time_utc"] != nil,
                      (cols["lat"] != nil && cols["lon"] != nil) || (cols["e"] != nil && cols["n"] != nil) else {
                    cols = [:]; try ctx.malformed("header needs t or time_utc and lat,lon or e,n"); return
                }
                return
            }
            func s(_ k: String) -> String? { cols[k].flatMap { $0 < f.count && !f[$0].isEmpty ? f[$0] : nil } }
            func d(_ k: String) -> Double? { s(k).flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } }
            // A numeric cell that holds something else is a malformed row, not an absent value.
            if let bad = ["t", "lat", "lon", "h", "e", "n", "u", "cov_ee", "cov_en", "cov_nn"].first(where: { s($0) != nil && d($0) == nil }) {
                try ctx.malformed("\(bad) '\(s(bad)!)' is not a number"); return
            }
            if let fl = s("floor"), Int(fl.trimmingCharacters(in: .whitespaces)) == nil {
                try ctx.malformed("floor '\(fl)' is not an integer"); return
            }
            guard let t = d("t") ?? s("time_utc").flatMap(UTCTime.parseISO8601) else { try ctx.malformed("row without time"); return }
            var geo: Geodetic? = nil, loc: SIMD3<Double>? = nil
            if let la = d("lat"), let lo = d("lon") {
                guard abs(la) <= 90, abs(lo) <= 180 else { try ctx.malformed("lat/lon out of range"); return }
                geo = Geodetic(latitude: la, longitude: lo, height: d("h") ?? 0)
                if origin == nil { origin = geo }
            } else if let e = d("e"), let nn = d("n") { loc = SIMD3(e, nn, d("u") ?? 0) }
            else { try ctx.malformed("row without position"); return }
            var cov: Covariance2? = nil
            if let a = d("cov_ee"), let b = d("cov_en"), let c = d("cov_nn") { cov = Covariance2(ee: a, en: b, nn: c) }
            if let e = PositionRows.event(time: t, source: s("source"), subject: s("subject"), geodetic: geo, local: loc,
                                          floor: s("floor").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }, kind: s("kind"), covariance: cov,
                                          options: options, ctx: &ctx) { events.append(e) }
        }
        return (events, ctx.report, origin)
    }
}

/// TUM trajectories (`timestamp tx ty tz qx qy qz qw`, `#` comments) as local ENU ground
/// truth (`gt` with `e`, `n`, `u`); orientation is dropped. The origin comes from
/// `--origin`, else from a `# origin lat lon h` comment (written by `posfuse export tum`),
/// else (0, 0, 0).
public enum TUMImporter {
    public static func parse(_ text: String, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, origin: Geodetic?) {
        var ctx = ImportContext(options: options, file: file)
        ctx.report.files = 1
        var events: [TraceEvent] = []
        var origin: Geodetic? = nil
        var n = 0
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            n += 1; ctx.line = n; ctx.report.lines += 1
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let w = line.dropFirst().split(separator: " ")
                if w.count >= 4, w[0] == "origin" {
                    guard let la = Double(w[1]), let lo = Double(w[2]), let h = Double(w[3]),
                          TraceDomain.latLonViolation(la, lo) == nil, TraceDomain.height.contains(h) else {
                        try ctx.malformed("origin comment must be '# origin lat lon h' (deg, deg, m)"); continue
                    }
                    origin = Geodetic(latitude: la, longitude: lo, height: h)
                }
                continue
            }
            let v = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," }).map { Double($0) }
            guard v.count == 8 || v.count == 4, v.allSatisfy({ $0 != nil && $0!.isFinite }) else {
                try ctx.malformed("expected timestamp tx ty tz qx qy qz qw"); continue
            }
            events.append(TraceEvent(time: v[0]!, device: options.device, payload: .groundTruth(
                GroundTruth(position: .local(SIMD3(v[1]!, v[2]!, v[3]!)), kind: .continuous))))
        }
        return (events, ctx.report, origin)
    }
}

extension ImportFormat {
    /// Runs a whole-file parser over `urls` and assembles the trace.
    static func importWhole(_ urls: [URL], options: ImportOptions,
                            _ parse: (Data, String) throws -> (events: [TraceEvent], report: ImportReport, origin: Geodetic?)) throws -> ImportedTrace {
        var events: [TraceEvent] = []
        var report = ImportReport()
        var origin: Geodetic? = nil
        for u in urls {
            let r = try parse(try InputFile.data(u), u.path)
            events += r.events; report.merge(r.report)
            if origin == nil { origin = r.origin }
        }
        let name = urls.count == 1 ? urls[0].deletingPathExtension().lastPathComponent : nil
        return try assembleTrace(events: events, defaultOrigin: origin ?? Geodetic(latitude: 0, longitude: 0), options: options,
                                 name: name, device: nil, report: report, file: urls.first?.path ?? "import")
    }
}
