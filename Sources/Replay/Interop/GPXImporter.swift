import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Positioning
import TraceIO

/// Importer for GPX 1.0/1.1 (`trk/trkseg/trkpt`, `rte/rtept`, `wpt`) as ground truth.
///
/// Parsed with Foundation's `XMLParser` (libxml2 SAX). Every point with a `time` becomes a
/// `gt` event at `lat`, `lon` (deg) and `h` = `ele` (m; GPX calls it elevation — posfuse
/// writes and reads the WGS84 height there), `kind` = `continuous` for track and route points
/// and `checkpoint` for waypoints. Points without `time` are dropped and counted. The `<name>`
/// of a track (`<source>` written by `posfuse export gpx` as `source/subject`) is not used;
/// `--device` names the subject. Extensions are ignored.
public enum GPXImporter {
    final class Handler: NSObject, XMLParserDelegate {
        struct Point { var lat: Double; var lon: Double; var ele: Double?; var time: Double?; var kind: GroundTruth.Kind; var line: Int }
        var points: [Point] = []
        var current: Point? = nil
        var text = ""
        var badPoints: [(Int, String)] = []
        var error: (Int, String)? = nil

        // On Linux `parse()` can return true for malformed XML and report it only here
        // (swift-corelibs-foundation issue 5281): keep the first error.
        func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
            if error == nil { error = (parser.lineNumber, "\(parseError)") }
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            let local = name.split(separator: ":").last.map(String.init) ?? name
            text = ""
            if local == "trkpt" || local == "rtept" || local == "wpt" {
                guard let la = attributes["lat"].flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }),
                      let lo = attributes["lon"].flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }),
                      abs(la) <= 90, abs(lo) <= 180 else {
                    badPoints.append((parser.lineNumber, "\(local) without valid lat/lon")); current = nil; return
                }
                current = Point(lat: la, lon: lo, ele: nil, time: nil, kind: local == "wpt" ? .checkpoint : .continuous,
                                line: parser.lineNumber)
            }
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }
        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            let local = name.split(separator: ":").last.map(String.init) ?? name
            switch local {
            case "ele": if current != nil { current!.ele = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) }
            case "time":
                if current != nil {
                    if let t = UTCTime.parseISO8601(text) { current!.time = t } else { badPoints.append((parser.lineNumber, "bad time '\(text)'")) }
                }
            case "trkpt", "rtept", "wpt": if let c = current { points.append(c) }; current = nil
            default: break
            }
            text = ""
        }
    }

    public static func parse(_ data: Data, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, first: Geodetic?) {
        var ctx = ImportContext(options: options, file: file)
        // GPX is UTF-8 (GPX 1.1 schema). Checked here because Foundation's XMLParser stops the
        // process on an element or attribute name that is not valid UTF-8.
        _ = try InputFile.decode(data, file: file)
        // Foundation's XMLParser also stops the process (SEGV in strlen) on a processing
        // instruction without data inside the document (`<?xm?>`; found by the import-gpx fuzz
        // target). GPX needs none besides the leading XML declaration: any other is a data error.
        let bytes = [UInt8](data)
        var start = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        while start < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start]) { start += 1 }
        // The declaration is `<?xml` and then white space (`<?xmlfoo?>` is a processing
        // instruction, and crashed the parser the same way: fuzz finding, CI seed 1).
        if bytes.count - start >= 6, bytes[start..<(start + 5)].elementsEqual(Array("<?xml".utf8)),
           [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start + 5]),
           let end = bytes[start...].firstIndex(of: UInt8(ascii: ">")) { start = end + 1 }
        var line = 1
        for i in 0..<bytes.count {
            if bytes[i] == 0x0A { line += 1 }
            if i >= start, bytes[i] == UInt8(ascii: "<"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "?") {
                throw ImportDataError(file: file, line: line, reason: "XML processing instruction inside the document (GPX has none)")
            }
        }
        // A stream, not `XMLParser(data:)`: on Linux the data initialiser fails on inputs of
        // about 1 MB (swift-corelibs-foundation issue 4851).
        let p = XMLParser(stream: InputStream(data: data))
        let h = Handler()
        p.delegate = h
        let ok = withExtendedLifetime(h) { p.parse() }
        if !ok || h.error != nil {
            let line = h.error?.0 ?? p.lineNumber
            throw ImportDataError(file: file, line: line, reason: "XML: \(h.error?.1 ?? p.parserError.map { "\($0)" } ?? "parse error")")
        }
        for (line, reason) in h.badPoints { ctx.line = line; try ctx.malformed(reason) }
        var events: [TraceEvent] = []
        var first: Geodetic? = nil
        for pt in h.points {
            guard let t = pt.time else { ctx.drop("point without time"); continue }
            let g = Geodetic(latitude: pt.lat, longitude: pt.lon, height: pt.ele ?? 0)
            if first == nil { first = g }
            events.append(TraceEvent(time: t, device: options.device, payload: .groundTruth(GroundTruth(position: .geodetic(g), kind: pt.kind))))
        }
        ctx.report.lines = data.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) } + 1
        ctx.report.files = 1
        return (events, ctx.report, first)
    }

    public static func importFiles(_ urls: [URL], options: ImportOptions) throws -> ImportedTrace {
        try importEachFile(urls, options: options, originNote: "first point") { u in
            let r = try parse(try InputFile.data(u), file: u.path, options: options)
            return (r.events, r.report, r.first, [:])
        }
    }
}
