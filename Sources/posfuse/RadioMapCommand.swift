import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse radiomap build`: AP positions from walks with ground truth.
struct RadioMap: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "radiomap",
        abstract: "Build the WLAN radio map (AP positions, P0, n) from walks with ground truth.",
        subcommands: [RadioMapBuild.self]
    )
}

struct RadioMapBuild: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Estimate AP positions (+P0, n where the data allows) from walks with ground truth into SQLite.",
        discussion: "Inputs: posfuse traces (.jsonl) or ms-indoor path files (folders are searched recursively). The database holds the APs, the fingerprint survey (the walks' scans binned into --fingerprint-cell cells), the PDR step length (the Weinberg K fitted on the walks' steps and truth: docs/fusion.md) and the uncertainty model (how much the WiFi fixes' covariances grow where the map is blind, fitted on the walks with a blocked protocol: docs/radio.md); give it to posfuse replay --radio-map. --reference-json writes an 'aps' section for reference.json (positions in the ENU frame of the first walk's origin); with --fingerprints also a 'fingerprints' section (docs/radio.md).\n\nExample:\n  posfuse radiomap build ms-indoor/site2/F3 --db site.sqlite\n  posfuse import ms-indoor walk.txt -o walk/trace.jsonl\n  posfuse replay walk/ --radio-map site.sqlite"
    )
    @Argument(help: "Walks (files or folders).") var inputs: [String]
    @Option(name: .customLong("db"), help: "Radio map database (SQLite) to write.") var db: String
    @Option(name: .customLong("reference-json"), help: "Also write the \"aps\" (and with --fingerprints \"fingerprints\") members of this reference.json (its other members are kept).") var referenceJSON: String?
    @Option(name: .customLong("max-age"), help: "Drop scan entries last seen more than this before the scan, s (the survey's limit; positioning has its own, the WiFi stages' max_age_s).") var maxAge: Double = RadioMapBuilder.defaultMaxAge
    @Flag(help: "With --reference-json: also write a 'fingerprints' section, the walks' scans binned into --fingerprint-cell cells (the fingerprint stage's map).") var fingerprints = false
    @Option(name: .customLong("fingerprint-cell"), help: "Fingerprint cell size, m.") var fingerprintCell: Double = 2
    @Option(help: "Pipeline configuration (YAML): the WiFi stages' options the uncertainty model is fitted for (the file you will replay with).") var pipeline: String?
    @Flag(name: .customLong("no-uncertainty"), help: "Do not fit the uncertainty model (the WiFi fixes keep their own covariances).") var noUncertainty = false

    @Option(help: "Write the residuals the uncertainty model is fitted on (one CSV row per WiFi fix of the inner folds: source, inner fold, walk, time, residual east/north m, the fix's own covariance m², and the novelty features) to this file, to study which features predict large errors.") var residuals: String?
    @Option(name: .customLong("inner-folds"), help: "Inner folds of the uncertainty fit (walk i in fold i mod K).") var innerFolds: Int = RadioMapLearner().innerFolds
    @Option(name: .customLong("block-radius"), help: "Block radius of the uncertainty fit's inner folds, m (0: walk-blocked only).") var blockRadius: Double = RadioMapLearner.defaultBlockRadius
    @Option(name: .customLong("radius-multiples"), parsing: .upToNextOption, help: "The inner folds are replayed once per multiple of --block-radius (1 2 3: blocked at 10, 20 and 30 m), so the model is fitted over scans from near to far from the map; 1 alone: once.") var radiusMultiples: [Double] = RadioMapLearner.defaultBlockRadiusMultiples

    func validate() throws {
        if innerFolds < 2 { throw ValidationError("--inner-folds must be ≥ 2") }
        if !(blockRadius >= 0) { throw ValidationError("--block-radius must be ≥ 0 m") }
        try RadioMapBuild.validateRadiusMultiples(radiusMultiples)
        if fingerprints && referenceJSON == nil { throw ValidationError("--fingerprints writes into --reference-json; give that file") }
        if !(fingerprintCell > 0) { throw ValidationError("--fingerprint-cell must be > 0 m") }
    }

    /// `--radius-multiples` (here and in `evaluate radio`): at least one, each finite and ≥ 0.
    static func validateRadiusMultiples(_ m: [Double]) throws {
        if m.isEmpty || !m.allSatisfy({ $0 >= 0 && $0.isFinite }) { throw ValidationError("--radius-multiples must be finite and ≥ 0") }
    }

    /// The `--residuals` CSV, written atomically.
    /// `radii`: the learner's inner block radii (`RadioMapLearner.blockRadii`); a sample of walk
    /// index i was replayed at radius `radii[i / walks.count]`.
    static func writeResiduals(_ r: [Source: [RadioUncertaintyModel.Sample]], walks: [String], radii: [Double], to path: String) throws {
        var out = "source,fold,walk,time,res_e_m,res_n_m,cov_ee_m2,cov_en_m2,cov_nn_m2,survey_distance_m,known_share,signal_distance_db,block_radius_m\n"
        for src in r.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            for v in r[src]! {
                let ri = walks.isEmpty ? 0 : v.walk / walks.count
                let w = walks.isEmpty ? String(v.walk) : walks[v.walk % walks.count]
                let radius = ri < radii.count ? String(radii[ri]) : ""
                out += "\(src.rawValue),\(v.group),\(w),\(v.time),\(v.residual.x),\(v.residual.y),\(v.covariance.ee),\(v.covariance.en),\(v.covariance.nn),"
                    + "\(v.features.surveyDistance),\(v.features.knownShare),\(v.features.signalDistance),\(radius)\n"
            }
        }
        do { try Data(out.utf8).write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
            printError("\(path): cannot write: \(error.localizedDescription)")
            throw ExitCode(ExitStatus.ioError)
        }
    }

    func run() throws {
        for p in inputs where !FileManager.default.fileExists(atPath: p) { throw ValidationError("no such file or folder: \(p)") }
        let urls = try expandInputs(inputs, extensions: ["txt", "jsonl"], recursive: true)
        guard let ds = RadioDataset.detect(urls), ds == .msIndoor || ds == .traces else {
            throw ValidationError("inputs must be posfuse traces (.jsonl) or ms-indoor path files")
        }
        do {
            let walks = try RadioWalkLoader.load(urls, dataset: ds)
            var b = RadioMapLearner(maxAge: maxAge, fingerprintCell: fingerprintCell)
            b.fitUncertainty = !noUncertainty
            b.innerFolds = innerFolds
            b.blockRadius = blockRadius
            b.blockRadiusMultiples = radiusMultiples
            if let pipeline { b.stages = try loadPipelineStages(pipeline) }
            guard let map = b.build(walks) else { throw ValidationError("no walks") }
            try b.write(map, to: db)
            if let residuals { try Self.writeResiduals(map.residuals, walks: walks.map(\.name), radii: b.blockRadii, to: residuals) }
            let est = map.accessPoints
            let points = map.fingerprints.points.count
            if let r = referenceJSON {
                // The radio map's members as a set: without --fingerprints an older 'fingerprints' goes.
                try ReferenceJSONWriter.update(url: URL(fileURLWithPath: r), members: [
                    "aps": RadioMapDatabase.referenceJSON(est.map(\.ap)),
                    "ble": RadioMapDatabase.referenceJSON(map.bleBeacons.map(\.ap), key: "id"),
                    "fingerprints": fingerprints ? RadioMapDatabase.referenceJSON(map.fingerprints) : NSNull(),
                ])
            }
            let model = map.uncertainty.map { m in
                "; uncertainty model for " + m.terms.keys.sorted().map { k in
                    let t = m.terms[k]!
                    var c = t.correlation.map { String(format: ", error correlation β %.2f τ %.0f s", $0.biasFraction, $0.correlationTime) } ?? ""
                    if let g = t.noveltyCorrelation {
                        c += ", by novelty σₓ " + g.map { String(format: "%.0f m: τ %.0f s", $0.sigmaX, $0.correlation.correlationTime) }.joined(separator: ", ")
                    }
                    return "\(k) (\((t.form ?? .linear).rawValue), \(t.samples) residuals\(c))"
                }.joined(separator: ", ")
            } ?? "; no uncertainty model (needs two or more walks with truth)"
            let steps = map.stepLength.map {
                String(format: "; PDR step length: Weinberg K %.3f (scale σ %.3f; %d walks, %d segments, %.0f m)",
                       $0.weinbergK, $0.scaleSigma, $0.walks, $0.segments, $0.distance)
            } ?? "; no PDR step length (needs two or more walks with steps and truth)"
            print("\(walks.count) walk(s): \(est.count) AP(s) (\(est.filter(\.modelFitted).count) with fitted P0, n), \(map.bleBeacons.count) Bluetooth beacon(s) and \(points) fingerprint point(s) written to \(db)"
                  + (referenceJSON.map { " and \($0)" } ?? "") + model + steps)
        } catch let e as ImportDataError {
            printError(e.description)
            throw ExitCode(ExitStatus.dataError)
        }
    }
}
