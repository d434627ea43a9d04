import Foundation
import Positioning

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
            try PositionCSVImporter.parse(String(decoding: $0, as: UTF8.self), file: $1, options: options)
        }
    case .tum:
        return try ImportFormat.importWhole(urls, options: options) {
            try TUMImporter.parse(String(decoding: $0, as: UTF8.self), file: $1, options: options)
        }
    case .ujiindoorloc:
        throw ImportDataError(file: urls.first?.path ?? "-", line: 0, reason: "format \(format.rawValue) is not implemented yet")
    }
}

extension ImportFormat {
    /// File name extensions taken when a folder is given as input (files named explicitly are always taken).
    public var extensions: Set<String> {
        switch self {
        case .msIndoor, .gnsslogger: return ["txt"]
        case .nmea: return ["nmea", "txt", "log", "nma"]
        case .opencellidMeasurements, .csv, .ujiindoorloc: return ["csv"]
        case .gpx: return ["gpx"]
        case .geojson: return ["geojson", "json"]
        case .tum: return ["txt", "tum"]
        }
    }
}

/// Expands folders into their regular files with one of `extensions` (sorted by name,
/// hidden files skipped); files named explicitly are always kept.
public func expandInputs(_ paths: [String], extensions: Set<String> = []) throws -> [URL] {
    var out: [URL] = []
    let fm = FileManager.default
    for p in paths {
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: p, isDirectory: &isDir) else {
            throw TraceDataError(file: p, line: 0, reason: "no such file or folder", code: "io")
        }
        if isDir.boolValue {
            let names = try fm.contentsOfDirectory(atPath: p).filter { !$0.hasPrefix(".") }.sorted()
            for n in names {
                var d: ObjCBool = false
                let full = (p as NSString).appendingPathComponent(n)
                if fm.fileExists(atPath: full, isDirectory: &d), !d.boolValue,
                   extensions.isEmpty || extensions.contains((n as NSString).pathExtension.lowercased()) { out.append(URL(fileURLWithPath: full)) }
            }
        } else {
            out.append(URL(fileURLWithPath: p))
        }
    }
    return out
}

/// Adds the events of `truth` (imported as ground truth) to `trace` (its header is kept).
public func mergeTruth(_ trace: ImportedTrace, _ truth: ImportedTrace) -> ImportedTrace {
    var r = trace.report
    r.merge(truth.report)
    return assembleTrace(events: trace.events + truth.events, defaultOrigin: trace.header.origin, options: ImportOptions(),
                         name: trace.header.name, device: trace.header.device, report: r, sideFiles: trace.sideFiles)
}
