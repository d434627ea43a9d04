import ArgumentParser
import Foundation
import Positioning
import Replay

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Convert foreign recordings and reference data into trace format v1.",
        discussion: """
        Trace formats: ms-indoor, gnsslogger, nmea, opencellid-measurements, gpx, geojson, tum, csv, ujiindoorloc.
        Reference data: opencellid (-o cells.sqlite for the cell database, or -o reference.json),
        wigle (-o reference.json: the `aps` member is replaced, other members kept).
        Folders are expanded to their files. With -o ending in '/' (or an existing folder) every
        input file becomes its own <folder>/<name>/trace.jsonl; otherwise all inputs merge into one trace.
        Lenient by default: malformed records and unknown record types are counted and reported.
        --strict stops at the first one with `file:line: reason` and exit 65.
        Units, frames and what each format keeps or drops: docs/formats.md.
        """.reflowed
    )

    @Argument(help: "Input format.") var format: String
    @Argument(help: "Input files or folders.") var files: [String]
    @Option(name: .shortAndLong, help: "Output trace (.jsonl), or a folder ending in '/' for one trace per input.")
    var output: String
    @Flag(help: "Stop at the first malformed record or unknown record type (exit 65).") var strict = false
    @Option(help: "ENU origin 'lat,lon[,h]' (deg, deg, m); default: the format's documented choice.") var origin: String?
    @Flag(name: .customLong("as-truth"), help: "Positions become ground truth (gt) instead of phone fixes (nmea).")
    var asTruth = false
    @Option(help: "Device id of the imported events.") var device: String = Fix.defaultSubject
    @Option(name: .customLong("static-truth"), help: "Known static position 'lat,lon,h': a gt event at every fix.")
    var staticTruth: String?
    @Option(help: "NMEA: user-equivalent range error in m; acc = HDOP * uere.") var uere: Double = 3
    @Option(parsing: .upToNextOption, help: "Reference files in the same format, added as ground truth (e.g. a SPAN NMEA track).")
    var truth: [String] = []

    func validate() throws {
        if ImportFormat(rawValue: format) == nil {
            throw ValidationError("unknown format '\(format)'; known: \(ImportFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let o = origin, parseGeodetic(o) == nil { throw ValidationError("--origin must be 'lat,lon[,h]'") }
        if let s = staticTruth, parseGeodetic(s) == nil { throw ValidationError("--static-truth must be 'lat,lon[,h]'") }
        if uere <= 0 || !uere.isFinite { throw ValidationError("--uere must be positive") }
    }

    func run() throws {
        let fmt = ImportFormat(rawValue: format)!
        let options = ImportOptions(strict: strict, origin: origin.flatMap(parseGeodetic), asTruth: asTruth, device: device,
                                    staticTruth: staticTruth.flatMap(parseGeodetic), uere: uere)
        try withExitCodes {
            let urls = try expandInputs(files, extensions: fmt.extensions)
            guard !urls.isEmpty else { throw ValidationError("no input files") }
            if fmt.isReference {
                let r = try importReference(format: fmt, urls: urls, output: URL(fileURLWithPath: output), options: options)
                print("imported \(urls.count) file(s) into \(output)")
                print(r.summary(), terminator: "")
                return
            }
            var isDir: ObjCBool = false
            let perFile = output.hasSuffix("/") || (FileManager.default.fileExists(atPath: output, isDirectory: &isDir) && isDir.boolValue)
            if perFile {
                var total = ImportReport()
                var sideCount = 0
                let progress = Progress(label: "import \(fmt.rawValue)", total: Int64(urls.count), enabled: Progress.shouldShow(json: false))
                defer { progress.finish() }
                for (i, u) in urls.enumerated() {
                    progress.update(completed: Int64(i))
                    let t = try importTrace(format: fmt, urls: [u], options: options)
                    let dir = URL(fileURLWithPath: output).appendingPathComponent(u.deletingPathExtension().lastPathComponent)
                    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                    let side = try writeImportedTrace(t, to: dir.appendingPathComponent("trace.jsonl"))
                    total.merge(t.report)
                    sideCount += side.count
                }
                total.notes = Array(Set(total.notes)).sorted()
                if sideCount > 0 { total.notes.append("\(sideCount) side files (reference.json, floor plans, raw records) beside the traces") }
                print("imported \(urls.count) file(s) into \(output) (one trace each)")
                print(total.summary(), terminator: "")
            } else {
                var t = try importTrace(format: fmt, urls: urls, options: options)
                if !truth.isEmpty {
                    var to = options; to.asTruth = true
                    if to.origin == nil { to.origin = t.header.origin }
                    t = try mergeTruth(t, try importTrace(format: fmt, urls: try expandInputs(truth, extensions: fmt.extensions), options: to))
                }
                var r = t.report
                let side = try writeImportedTrace(t, to: URL(fileURLWithPath: output))
                for s in side { r.notes.append("side file \(s.path)") }
                print("imported \(urls.count) file(s) into \(output)")
                print(r.summary(), terminator: "")
            }
        }
    }
}
