import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse refine`: better coordinates, with a calibrated radius, for submitted reports (docs/refine.md).
struct Refine: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Refine the coordinates of submitted reports from their attached evidence.",
        discussion: """
        Reads reports (JSON Lines: one report object or GeoJSON Feature per line; or one GeoJSON
        FeatureCollection) carrying the reported lat/lon/accuracy_m, the time t and an `evidence`
        array of trace-format v1 events (WiFi scans, cells, an IMU window, a photo pair, acoustic
        arrivals). Writes GeoJSON: per report the refined position, its 95 % ellipse and radius,
        the sources used and, for every input that could not be used, why. A malformed report
        becomes an error Feature (geometry null, properties.error = file:line: reason): records
        out = records in. Streaming: memory stays bounded for any number of JSON Lines reports.

        Examples:
          posfuse refine Traces/reports/sample-reports.jsonl \\
            --reference Traces/reports/reference.json
          posfuse refine reports.jsonl --reference ref.json --lines -o refined.geojsonl
          posfuse refine reports.geojson --reference ref.json --strict \\
            -o refined.geojson
          some-service | posfuse refine - --reference ref.json --lines --no-progress

        Exit codes: 0 done (error records counted on stderr), 64 usage error, 65 bad data in
        --strict mode (the first malformed report stops the run) or a bad --reference/--pipeline.
        """.reflowed
    )

    @Argument(help: "Reports: JSON Lines or a GeoJSON FeatureCollection; '-' reads standard input and writes each record as soon as it is refined (service use, with --lines).") var input: String
    @Option(name: [.short, .long], help: "Output file (default: stdout).") var output: String?
    @Option(help: "Reference data (reference.json: APs, cells, beacons, landmarks; docs/trace-format.md).") var reference: String?
    @Option(help: "Pipeline configuration (YAML, see docs/pipeline.yaml).") var pipeline: String?
    @Option(name: .customLong("cell-db"), help: "Cell database (SQLite: posfuse celldb build, posfuse import opencellid): its towers and coverage areas within 50 km of each report join the reference data.") var cellDB: String?
    @Flag(help: "One GeoJSON Feature per line (newline-delimited) instead of a FeatureCollection.") var lines = false
    @Flag(help: "Stop at the first malformed report (exit 65).") var strict = false
    @Flag(name: .customLong("no-progress"), help: "No progress line on stderr.") var noProgress = false

    func validate() throws {
        guard input == "-" || FileManager.default.fileExists(atPath: input) else { throw ValidationError("no such file: \(input)") }
        if let r = reference, !FileManager.default.fileExists(atPath: r) { throw ValidationError("no such file: \(r)") }
        if let p = pipeline, !FileManager.default.fileExists(atPath: p) { throw ValidationError("no such file: \(p)") }
        if let c = cellDB, !FileManager.default.fileExists(atPath: c) { throw ValidationError("no such file: \(c)") }
    }

    struct StrictStop: Error, CustomStringConvertible { var description: String }

    func run() throws {
        try withExitCodes {
            let stages = try pipeline.map { try loadPipelineStages($0) } ?? [:]
            let refiner = try ReportRefiner(referenceURL: reference.map { URL(fileURLWithPath: $0) }, stages: stages, cellDatabase: cellDB)
            let out: FileHandle
            if let o = output {
                guard FileManager.default.createFile(atPath: o, contents: nil) else { throw ValidationError("cannot write \(o)") }
                out = try FileHandle(forWritingTo: URL(fileURLWithPath: o))
            } else {
                out = FileHandle.standardOutput
            }
            var buffer = Data()
            func write(_ s: String) {
                buffer.append(contentsOf: s.utf8)
                if buffer.count > 1 << 16 { out.write(buffer); buffer.removeAll(keepingCapacity: true) }
            }
            let bar = Progress(label: "reports", enabled: !noProgress)
            var n = 0, refined = 0, errors = 0
            if !lines { write("{\"type\":\"FeatureCollection\",\"features\":[\n") }
            let file = input == "-" ? "stdin" : input
            let streaming = input == "-"
            do {
                try ReportStream(url: streaming ? nil : URL(fileURLWithPath: input)).forEach { record in
                    let outcome: ReportRefiner.Outcome
                    switch record {
                    case .object(let o, let line): outcome = refiner.refine(o, location: "\(file):\(line)")
                    case .malformed(let reason, let line): outcome = ReportRefiner.errorFeature(id: nil, reason: "\(file):\(line): \(reason)")
                    }
                    if !outcome.ok {
                        errors += 1
                        if strict {
                            throw StrictStop(description: (outcome.feature["properties"] as? [String: Any])?["error"] as? String ?? "malformed report")
                        }
                    } else if (outcome.feature["properties"] as? [String: Any])?["status"] as? String == "refined" {
                        refined += 1
                    }
                    if !lines && n > 0 { write(",\n") }
                    write(JSONText.string(outcome.feature))
                    if lines { write("\n") }
                    if streaming { out.write(buffer); buffer.removeAll(keepingCapacity: true) }   // one record out per record in, now
                    n += 1
                    if n % 1000 == 0 { bar.update(completed: Int64(n)) }
                }
            } catch let stop as StrictStop {
                out.write(buffer)
                bar.finish()
                FileHandle.standardError.write(Data("error: \(stop.description)\n".utf8))
                throw ExitCode(65)
            }
            if !lines { write("\n]}\n") }
            out.write(buffer)
            if output != nil { try out.close() }
            bar.finish()
            FileHandle.standardError.write(Data("\(n) reports in, \(n) records out: \(refined) refined, \(n - refined - errors) kept as reported (no usable evidence), \(errors) errors\n".utf8))
        }
    }
}
