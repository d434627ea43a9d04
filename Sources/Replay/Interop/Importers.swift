import Foundation
import Positioning
import Storage
import TraceIO

/// Runs the importer for `format` over `urls` (already expanded) into one trace.
public func importTrace(format: ImportFormat, urls: [URL], options: ImportOptions) throws -> ImportedTrace {
    switch format {
    case .msIndoor: return try MSIndoorImporter.importFiles(urls, options: options)
    case .opencellidMeasurements: return try OpenCellIDMeasurementsImporter.importFiles(urls, options: options)
    case .nmea: return try NMEAImporter.importFiles(urls, options: options)
    case .gpx: return try GPXImporter.importFiles(urls, options: options)
    case .gnsslogger: return try GnssLoggerImporter.importFiles(urls, options: options)
    case .geojson: return try ImportFormat.importWhole(urls, options: options) { try GeoJSONImporter.parse($0, file: $1, options: options) }
    case .csv:
        return try ImportFormat.importWhole(urls, options: options) {
            try PositionCSVImporter.parse(try InputFile.decode($0, file: $1), file: $1, options: options)
        }
    case .tum:
        return try ImportFormat.importWhole(urls, options: options) {
            try TUMImporter.parse(try InputFile.decode($0, file: $1), file: $1, options: options)
        }
    case .ujiindoorloc: return try UJIIndoorLocImporter.importFiles(urls, options: options)
    case .opencellid, .wigle:
        throw TraceDataError(file: urls.first?.path ?? "-", line: 0, reason: "\(format.rawValue) is reference data: use importReference", code: .usage)
    }
}

extension ImportFormat {
    /// File name extensions taken when a folder is given as input (files named explicitly are always taken).
    public var extensions: Set<String> {
        switch self {
        case .msIndoor, .gnsslogger: return ["txt"]
        case .nmea: return ["nmea", "txt", "log", "nma"]
        case .opencellidMeasurements, .csv, .ujiindoorloc, .opencellid, .wigle: return ["csv"]
        case .gpx: return ["gpx"]
        case .geojson: return ["geojson", "json"]
        case .tum: return ["txt", "tum"]
        }
    }
}

/// Expands folders into their regular files with one of `extensions` (sorted by name,
/// hidden files skipped); files named explicitly are always kept.
public func expandInputs(_ paths: [String], extensions: Set<String> = [], recursive: Bool = false) throws -> [URL] {
    var out: [URL] = []
    let fm = FileManager.default
    for p in paths {
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: p, isDirectory: &isDir) else {
            throw TraceDataError(file: p, line: 0, reason: "no such file or folder", code: .io)
        }
        if isDir.boolValue {
            // With `recursive`, subfolders are searched too (depth first, names sorted), so that a
            // dataset's site or floor folder works like the folder of its files.
            func scan(_ dir: String) throws {
                let names = try fm.contentsOfDirectory(atPath: dir).filter { !$0.hasPrefix(".") }.sorted()
                for n in names {
                    var d: ObjCBool = false
                    let full = (dir as NSString).appendingPathComponent(n)
                    guard fm.fileExists(atPath: full, isDirectory: &d) else { continue }
                    if d.boolValue {
                        if recursive { try scan(full) }
                    } else if extensions.isEmpty || extensions.contains((n as NSString).pathExtension.lowercased()) {
                        out.append(URL(fileURLWithPath: full))
                    }
                }
            }
            try scan(p)
        } else {
            out.append(URL(fileURLWithPath: p))
        }
    }
    return out
}

/// Adds the events of `truth` (imported as ground truth) to `trace` (its header is kept).
public func mergeTruth(_ trace: ImportedTrace, _ truth: ImportedTrace) throws -> ImportedTrace {
    var r = trace.report
    r.merge(truth.report)
    return try assembleTrace(events: trace.events + truth.events, defaultOrigin: trace.header.origin, options: ImportOptions(),
                         name: trace.header.name, device: trace.header.device, report: r, sideFiles: trace.sideFiles)
}

/// Imports reference data (`opencellid`, `wigle`) into `output`: a `.json` file is a
/// reference.json whose `cells`/`aps` member is replaced (other members kept); any other
/// name is the SQLite cell database (`opencellid` only).
public func importReference(format: ImportFormat, urls: [URL], output: URL, options: ImportOptions) throws -> ImportReport {
    var report = ImportReport()
    let json = output.pathExtension.lowercased() == "json"
    switch format {
    case .opencellid:
        var towers: [CellTower] = []
        for u in urls {
            let r = try OpenCellIDTowerImporter.parse(ByteBuffer(url: u), file: u.path, options: options)
            towers += r.towers; report.merge(r.report)
        }
        if json {
            try ReferenceJSONWriter.update(url: output, towers: towers)
        } else {
            let db = try CellDatabase(path: output.path)
            try db.insert(towers)
            report.notes.append("cell database now holds \(try db.count()) towers")
        }
    case .wigle:
        guard json else { throw TraceDataError(file: output.path, line: 0, reason: "wigle writes a reference.json (-o NAME.json)", code: .io) }
        var aps: [APEstimate] = []
        for u in urls {
            let r = try WiGLEImporter.parse(try InputFile.text(u), file: u.path, options: options)
            aps += r.aps; report.merge(r.report)
        }
        try ReferenceJSONWriter.update(url: output, aps: aps)
    default:
        throw TraceDataError(file: output.path, line: 0, reason: "\(format.rawValue) is not reference data", code: .io)
    }
    return report
}
