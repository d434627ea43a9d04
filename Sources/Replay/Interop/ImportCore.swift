import Foundation
import Positioning
import TraceIO

/// A malformed record in a foreign file: the project's data error, printed as
/// `file:line: reason` (CLI exit 65; code `io` on line 0 → exit 64).
public typealias ImportDataError = TraceDataError

/// Options shared by every importer.
public struct ImportOptions: Sendable {
    /// Stop at the first malformed record or unknown record type (`--strict`).
    public var strict: Bool
    /// ENU origin of the written trace; nil = the importer's documented default.
    public var origin: Geodetic?
    /// Write positions as ground truth (`gt`) instead of phone fixes (`nmea --as-truth`).
    public var asTruth: Bool
    /// Device id of the events (trace format `device`).
    public var device: String
    /// A static ground-truth position added at every fix time (`--static-truth`).
    public var staticTruth: Geodetic?
    /// Assumed user-equivalent range error for NMEA accuracy (acc = HDOP · uere), m.
    public var uere: Double
    public init(strict: Bool = false, origin: Geodetic? = nil, asTruth: Bool = false, device: String = Fix.defaultSubject,
                staticTruth: Geodetic? = nil, uere: Double = 3.0) {
        self.strict = strict; self.origin = origin; self.asTruth = asTruth; self.device = device
        self.staticTruth = staticTruth; self.uere = uere
    }
}

/// What an import kept, dropped and did not know; printed by `posfuse import`.
public struct ImportReport: Sendable, Equatable {
    public var files = 0
    public var lines = 0
    /// Written events per trace `type`.
    public var events: [String: Int] = [:]
    /// Records not converted, per reason.
    public var dropped: [String: Int] = [:]
    /// Record types the importer does not know, per type name.
    public var unknownTypes: [String: Int] = [:]
    /// Records converted despite a defect that leaves their data intact (a wrong NMEA checksum,
    /// an unknown talker id, a missing hemisphere letter), per defect. Fatal with `--strict`.
    public var tolerated: [String: Int] = [:]
    /// Notes (origin choice, side files written).
    public var notes: [String] = []
    public init() {}

    public mutating func merge(_ o: ImportReport) {
        files += o.files; lines += o.lines
        for (k, v) in o.events { events[k, default: 0] += v }
        for (k, v) in o.dropped { dropped[k, default: 0] += v }
        for (k, v) in o.unknownTypes { unknownTypes[k, default: 0] += v }
        for (k, v) in o.tolerated { tolerated[k, default: 0] += v }
        notes += o.notes
    }

    public var totalEvents: Int { events.values.reduce(0, +) }

    /// Human-readable summary, one count per line, sorted by key.
    public func summary() -> String {
        var s = "files: \(files)  lines: \(lines)  events: \(totalEvents)\n"
        for (k, v) in events.sorted(by: { $0.key < $1.key }) { s += "  event \(k): \(v)\n" }
        for (k, v) in dropped.sorted(by: { $0.key < $1.key }) { s += "  dropped \(k): \(v)\n" }
        for (k, v) in unknownTypes.sorted(by: { $0.key < $1.key }) { s += "  unknown type \(k): \(v)\n" }
        for (k, v) in tolerated.sorted(by: { $0.key < $1.key }) { s += "  tolerated \(k): \(v)\n" }
        for n in notes { s += "  note: \(n)\n" }
        return s
    }
}

/// The result of importing one or more files.
public struct ImportedTrace: Sendable {
    public var header: TraceHeader
    /// Events sorted by time (stable).
    public var events: [TraceEvent]
    public var report: ImportReport
    /// Lines the trace format cannot hold but the importer keeps verbatim (e.g. GnssLogger
    /// `Raw`), written beside the trace as `<trace stem>.<suffix>`: suffix → lines.
    public var sideFiles: [String: [String]]
    /// A floor plan (GeoJSON, WGS84 lon/lat, integer `floor` properties) to write beside the
    /// trace with a reference.json naming it (ms-indoor).
    public var floorplanGeoJSON: Data? = nil
    public init(header: TraceHeader, events: [TraceEvent], report: ImportReport, sideFiles: [String: [String]] = [:]) {
        self.header = header; self.events = events; self.report = report; self.sideFiles = sideFiles
    }
}

/// Per-file bookkeeping an importer uses while parsing: counts and strict-mode failures.
public struct ImportContext {
    public let options: ImportOptions
    public var report = ImportReport()
    public var file: String
    public var line = 0
    public init(options: ImportOptions, file: String) { self.options = options; self.file = file }

    /// A record that cannot be read. Strict: throws `file:line: reason`; lenient: counted.
    public mutating func malformed(_ reason: String) throws {
        if options.strict { throw ImportDataError(file: file, line: line, reason: reason) }
        report.dropped["malformed (\(reason))", default: 0] += 1
    }
    /// A record whose defect leaves its data intact (kept and converted). Strict: throws
    /// `file:line: reason`; lenient: counted per reason in `report.tolerated`.
    public mutating func tolerate(_ reason: String) throws {
        if options.strict { throw ImportDataError(file: file, line: line, reason: reason) }
        report.tolerated[reason, default: 0] += 1
    }
    /// A well-formed record the trace format cannot hold (never fatal).
    public mutating func drop(_ reason: String) { report.dropped[reason, default: 0] += 1 }
    /// A record type the importer does not know. Strict: throws; lenient: counted.
    public mutating func unknown(_ type: String) throws {
        report.unknownTypes[type, default: 0] += 1
        if options.strict { throw ImportDataError(file: file, line: line, reason: "unknown record type \(type)") }
    }
    public mutating func emitted(_ e: TraceEvent) { report.events[e.typeName, default: 0] += 1 }
}

/// The importers `posfuse import` knows, by format name.
public enum ImportFormat: String, CaseIterable, Sendable {
    case msIndoor = "ms-indoor"
    case gnsslogger
    case nmea
    case opencellidMeasurements = "opencellid-measurements"
    case gpx
    case geojson
    case tum
    case csv
    case ujiindoorloc
    /// Reference data: OpenCellID tower CSV → cell database (SQLite) or reference.json `cells`.
    case opencellid
    /// Reference data: WiGLE CSV → reference.json `aps`.
    case wigle

    /// Reference-data formats write a database or reference.json, not a trace.
    public var isReference: Bool { self == .opencellid || self == .wigle }
}

/// What an importer's per-file parser returns.
typealias ParsedFile = (events: [TraceEvent], report: ImportReport, first: Geodetic?, side: [String: [String]])

/// Imports several files of one format into one trace: parses each with `parse`, merges
/// the reports and side files (a side file's header line is kept once), adds the static
/// truth point when one is given, and takes the first file's first position as the origin
/// unless `options.origin` is set (`originNote` says which position that is).
func importEachFile(_ urls: [URL], options: ImportOptions, originNote: String, addsStaticTruth: Bool = false,
                    parse: (URL) throws -> ParsedFile) throws -> ImportedTrace {
    var events: [TraceEvent] = []
    var report = ImportReport()
    var first: Geodetic? = nil
    var side: [String: [String]] = [:]
    for u in urls {
        let r = try parse(u)
        events += r.events; report.merge(r.report)
        if first == nil { first = r.first }
        for (k, v) in r.side { if side[k] == nil { side[k] = v } else { side[k]! += v.dropFirst() } }
    }
    if addsStaticTruth { addStaticTruth(&events, truth: options.staticTruth, device: options.device) }
    let name = urls.count == 1 ? urls[0].deletingPathExtension().lastPathComponent : nil
    return try assembleTrace(events: events, defaultOrigin: first ?? Geodetic(latitude: 0, longitude: 0), options: options,
                             name: name, device: nil, report: report, sideFiles: side,
                             extraNotes: options.origin == nil ? ["origin = \(originNote)"] : [], file: urls.first?.path ?? "import")
}

/// Assembles an `ImportedTrace`: sorts events stably by time, picks the origin
/// (`options.origin`, else the importer's default) and counts events per type.
///
/// Every event is checked by the trace reader's own rules before it is kept (it is encoded
/// as the line the writer would write and decoded by `TraceLineDecoder`, the decoder of
/// `posfuse validate`), so an importer never writes a trace its validator rejects: an event
/// outside the format's domain (`TraceDomain`: a NaN, a time of 1e300 s, an accuracy < 0) is
/// a malformed record (strict: `file: reason`, exit 65; lenient: dropped and counted).
public func assembleTrace(events: [TraceEvent], defaultOrigin: Geodetic, options: ImportOptions, name: String?,
                          device: String?, report: ImportReport, sideFiles: [String: [String]] = [:],
                          extraNotes: [String] = [], file: String = "import") throws -> ImportedTrace {
    var r = report
    var notes = extraNotes
    let checker = TraceLineChecker()
    var kept: [TraceEvent] = []
    kept.reserveCapacity(events.count)
    for e in events {
        if let reason = checker.check(e) {
            if options.strict {
                throw ImportDataError(file: file, line: 0, reason: "a \(e.typeName) event at t=\(e.time) s would be invalid: \(reason)")
            }
            r.dropped["malformed (\(e.typeName): \(TraceLineChecker.generic(reason)))", default: 0] += 1
            continue
        }
        kept.append(e)
    }
    var origin = options.origin ?? defaultOrigin
    if options.origin == nil, checker.check(TraceHeader(origin: origin, device: device, name: name)) != nil {
        // The importer's default origin (its first position) is outside the domain: take the
        // first position that is inside it (that event passed the same check).
        origin = kept.lazy.compactMap { e -> Geodetic? in
            switch e.payload {
            case .gnss(let g): return Geodetic(latitude: g.latitude, longitude: g.longitude, height: g.altitude ?? 0)
            case .groundTruth(let t): if case .geodetic(let g) = t.position { return g } else { return nil }
            default: return nil
            }
        }.first ?? Geodetic(latitude: 0, longitude: 0)
        notes.append("the first position is outside the trace format's domain: origin = \(origin.latitude), \(origin.longitude), \(origin.height)")
    }
    let header = TraceHeader(origin: origin, device: device, name: name)
    if let reason = checker.check(header) {
        throw ImportDataError(file: file, line: 0, reason: "the trace header would be invalid: \(reason)")
    }
    let sorted = kept.enumerated().sorted { a, b in
        a.element.time < b.element.time || (a.element.time == b.element.time && a.offset < b.offset)
    }.map(\.element)
    r.events = [:]
    for e in sorted { r.events[e.typeName, default: 0] += 1 }
    r.notes += notes
    return ImportedTrace(header: header, events: sorted, report: r, sideFiles: sideFiles)
}

/// Writes an imported trace (and its side files) to `url`.
public func writeImportedTrace(_ t: ImportedTrace, to url: URL) throws -> [URL] {
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    let w = try TraceWriter(url: url, header: t.header)
    for e in t.events { w.write(e) }
    try w.close()
    var written: [URL] = []
    let stem = url.deletingPathExtension()
    for (suffix, lines) in t.sideFiles.sorted(by: { $0.key < $1.key }) where !lines.isEmpty {
        let side = URL(fileURLWithPath: stem.path + "." + suffix)
        var data = Data()
        data.reserveCapacity(lines.reduce(0) { $0 + $1.utf8.count + 1 })
        for l in lines { data.append(contentsOf: Array(l.utf8)); data.append(0x0A) }
        try data.write(to: side)
        written.append(side)
    }
    if let fp = t.floorplanGeoJSON {
        // Scenario folder (trace.jsonl): reference.json + floorplan.geojson; else <stem>.reference.json.
        let isFolder = url.lastPathComponent == "trace.jsonl"
        let dir = url.deletingLastPathComponent()
        let fpName = isFolder ? "floorplan.geojson" : stem.lastPathComponent + ".floorplan.geojson"
        let ref = dir.appendingPathComponent(isFolder ? "reference.json" : stem.lastPathComponent + ".reference.json")
        try fp.write(to: dir.appendingPathComponent(fpName))
        var root: [String: Any] = [:]
        if let d = try? Data(contentsOf: ref), let o = try? JSONSerialization.jsonObject(with: d) as? [String: Any] { root = o }
        root["floorplan"] = fpName
        try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys]).write(to: ref)
        written.append(dir.appendingPathComponent(fpName)); written.append(ref)
    }
    return written
}

/// Adds a `gt` event at every `gnss` fix time for a known static position (`--static-truth`).
func addStaticTruth(_ events: inout [TraceEvent], truth: Geodetic?, device: String) {
    guard let truth else { return }
    let times = events.compactMap { e -> Double? in if case .gnss = e.payload { return e.time } else { return nil } }
    for t in times {
        events.append(TraceEvent(time: t, device: device, payload: .groundTruth(GroundTruth(position: .geodetic(truth), kind: .continuous))))
    }
}
