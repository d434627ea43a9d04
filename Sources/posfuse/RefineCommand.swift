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
            // -o: written beside the target and renamed when complete (a run killed midway leaves
            // the old file or none, never half a file); write errors exit 74 (OutputFile).
            let out = try output.map { try OutputFile(path: $0) } ?? OutputFile.standardOutput()
            // One output buffer, reused: each Feature is appended to it, written out every 64 KiB.
            var buffer: [UInt8] = []
            buffer.reserveCapacity(1 << 17)
            func flush() { if !buffer.isEmpty { out.write(buffer); buffer.removeAll(keepingCapacity: true) } }
            let bar = Progress(label: "reports", enabled: !noProgress)
            var n = 0, refined = 0, errors = 0
            if !lines { buffer.append(contentsOf: "{\"type\":\"FeatureCollection\",\"features\":[\n".utf8) }
            let file = input == "-" ? "stdin" : input
            let streaming = input == "-"
            do {
                try ReportStream(url: streaming ? nil : URL(fileURLWithPath: input)).forEach { record in
                    let mark = buffer.count
                    if !lines && n > 0 { buffer.append(contentsOf: ",\n".utf8) }
                    let outcome: ReportRefiner.Outcome
                    switch record {
                    case .bytes(let bytes, let line): outcome = refiner.refine(bytes, file: file, line: line, into: &buffer)
                    case .malformed(let reason, let line): outcome = ReportRefiner.writeError(id: nil, reason: "\(file):\(line): \(reason)", into: &buffer)
                    }
                    if outcome.status == .error {
                        errors += 1
                        if strict {                            // the records before it, not this one
                            buffer.removeSubrange(mark...)
                            throw StrictStop(description: outcome.error ?? "malformed report")
                        }
                    } else if outcome.status == .refined {
                        refined += 1
                    }
                    if lines { buffer.append(0x0A) }
                    if streaming || buffer.count > 1 << 16 { flush() }   // stdin: one record out per record in, now
                    n += 1
                    if n % 1000 == 0 { bar.update(completed: Int64(n)) }
                }
            } catch let stop as StrictStop {
                flush()
                try out.commit()   // the records before the bad one, as documented
                bar.finish()
                FileHandle.standardError.write(Data("error: \(stop.description)\n".utf8))
                throw ExitCode(65)
            }
            if !lines { buffer.append(contentsOf: "\n]}\n".utf8) }
            flush()
            try out.commit()
            bar.finish()
            FileHandle.standardError.write(Data("\(n) reports in, \(n) records out: \(refined) refined, \(n - refined - errors) kept as reported (no usable evidence), \(errors) errors\n".utf8))
        }
    }
}
