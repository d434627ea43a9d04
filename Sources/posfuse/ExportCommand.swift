import ArgumentParser
import Foundation
import Positioning
import Replay

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export ground truth and estimates of a trace as GeoJSON, KML, GPX, TUM, CSV or NMEA.",
        discussion: """
        Reads TRACE (a trace.jsonl or a Traces/NAME/ folder), runs the default pipeline over it and
        writes ground truth (source `gt`) and the estimates of the chosen sources. TRACE may also be
        a finished run (`posfuse replay --json --epochs` output, .json): give --traces DIR (DIR/NAME/
        holds the trace, for its origin) or --origin, and --trace-name when the run has several traces. TUM and NMEA hold
        one trajectory per file: with several tracks, -o out.txt writes out.<track>.txt per track.
        Units and frames: docs/formats.md.
        """.reflowed
    )

    @Argument(help: "Output format: \(ExportFormat.allCases.map(\.rawValue).joined(separator: ", ")).") var format: String
    @Argument(help: "Trace file or Traces/NAME/ folder.") var trace: String
    @Option(name: .shortAndLong, help: "Output file (default: standard output).") var output: String?
    @Option(name: .customLong("source"), parsing: .singleValue,
            help: "Sources to export (repeatable or comma-separated): gt, gnss, ekf, … (default: all).")
    var sources: [String] = []
    @Option(name: .customLong("traces"), help: "Run input: folder holding the run's traces (NAME/trace.jsonl) for their origin.")
    var tracesDir: String?
    @Option(help: "Run input: ENU origin 'lat,lon[,h]' of the run's trace.") var origin: String?
    @Option(name: .customLong("trace-name"), help: "Run input: which trace of the run to export.") var traceName: String?
    @Flag(help: "Read the trace strictly (exit 65 on the first bad line).") var strict = false
    @Option(help: "Pipeline configuration (YAML, docs/pipeline.yaml); default: every stage with its defaults.")
    var pipeline: String?
    @Flag(name: .customLong("no-pipeline"), help: "Export only what the trace holds (gt and gnss events).") var noPipeline = false

    func validate() throws {
        guard ExportFormat(rawValue: format) != nil else {
            throw ValidationError("unknown format '\(format)'; known: \(ExportFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let known = Set(Source.allCases.map(\.rawValue) + ["gt"])
        for s in wanted ?? [] where !known.contains(s) { throw ValidationError("unknown source '\(s)'") }
    }

    var wanted: Set<String>? {
        let s = sources.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }.filter { !$0.isEmpty }
        return s.isEmpty ? nil : Set(s)
    }

    func run() throws {
        let fmt = ExportFormat(rawValue: format)!
        if trace.hasSuffix(".json") || SQLiteFile.isDatabase(path: trace) { return try exportRun(fmt) }
        try withExitCodes {
            let loc = try TraceLocation.resolve(trace)
            let reader = try TraceReader(url: loc.trace, mode: strict ? .strict : .lenient)
            let events = try reader.readAll()
            let header = reader.header
            var points = ExportBuilder.points(events: events, header: header, sources: (wanted ?? ["gt"]).intersection(["gt"]))
            let estimateSources = wanted.map { $0.subtracting(["gt"]) }
            if noPipeline {
                points += ExportBuilder.points(events: events, header: header, sources: (estimateSources ?? ["gnss"]).intersection(["gnss"]))
            } else if !(estimateSources?.isEmpty ?? false) {
                // Estimates: the default (or --pipeline) pipeline run through the Replayer.
                let stages = try pipeline.map { try loadPipelineStages($0) } ?? [:]
                let replayer = Replayer(options: ReplayOptions(mode: strict ? .strict : .lenient, stages: stages))
                let box = FixBox()
                replayer.onEstimate = { box.fixes.append($0.fix) }
                do { _ = try replayer.run(loc) } catch let e as ConfigurationError {
                    throw TraceDataError(file: pipeline ?? "pipeline", line: 0, reason: e.description)
                }
                points += ExportBuilder.points(fixes: box.fixes, header: header, sources: estimateSources)
            }
            try write(fmt, tracks: ExportBuilder.tracks(points), header: header)
        }
    }

    /// Export of a finished run: `posfuse replay --json --epochs` output or a results
    /// database (its latest run of the chosen trace).
    func exportRun(_ fmt: ExportFormat) throws {
        let run: RunResults
        do {
            run = SQLiteFile.isDatabase(path: trace) ? try ResultStore(path: trace).runResults() : try RunResults.load(url: URL(fileURLWithPath: trace))
        } catch let e as ResultsDataError {
            printError(e.description); throw ExitCode(ExitStatus.dataError)
        }
        let names = Array(Set(run.traces.map(\.trace))).sorted()
        guard let tr = traceName.flatMap({ n in run.traces.last { $0.trace == n } }) ?? (names.count == 1 ? run.traces.last : nil) else {
            throw ValidationError("the run holds traces \(names.joined(separator: ", ")): choose one with --trace-name")
        }
        try withExitCodes {
            let header: TraceHeader
            if let o = origin.flatMap(parseGeodetic) {
                header = TraceHeader(origin: o, name: tr.trace)
            } else if let dir = tracesDir {
                let loc = try TraceLocation.resolve((dir as NSString).appendingPathComponent(tr.trace))
                header = try TraceReader(url: loc.trace).header
            } else {
                throw ValidationError("a run has no origin: give --traces DIR or --origin lat,lon[,h]")
            }
            let points = ExportInput.points(run: tr, header: header, sources: wanted)
            guard !points.isEmpty else {
                throw TraceDataError(file: trace, line: 0, reason: "the run has no per-epoch estimates (replay with --epochs)")
            }
            try write(fmt, tracks: ExportBuilder.tracks(points), header: header)
        }
    }

    func write(_ fmt: ExportFormat, tracks: [ExportTrack], header: TraceHeader) throws {
        do {
            guard let out = output else {
                print(Exporter.render(fmt, tracks: tracks, header: header), terminator: "")
                return
            }
            let outURL = URL(fileURLWithPath: out)
            if fmt.singleTrack && tracks.count > 1 {
                for tr in tracks {
                    let safe = tr.name.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
                    let u = outURL.deletingPathExtension().appendingPathExtension(String(safe)).appendingPathExtension(outURL.pathExtension)
                    try Data(Exporter.render(fmt, tracks: [tr], header: header).utf8).write(to: u)
                    FileHandle.standardError.write(Data("wrote \(u.path): \(tr.points.count) positions\n".utf8))
                }
            } else {
                try Data(Exporter.render(fmt, tracks: tracks, header: header).utf8).write(to: outURL)
                let counts = tracks.map { "\($0.name) \($0.points.count)" }.joined(separator: ", ")
                FileHandle.standardError.write(Data("wrote \(out): \(counts.isEmpty ? "no positions" : counts)\n".utf8))
            }
        }
    }
}

/// Collects the Replayer's estimates.
final class FixBox { var fixes: [Fix] = [] }
