import ArgumentParser
import Foundation
import Positioning
import Replay

struct EvaluateRadio: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "radio",
        abstract: "Cell/cell-ta, WCL/HAPEL and fusion on real recordings: maps built from --train, scored on --test.",
        discussion: """
        Datasets (detected from the files, or --dataset): lte-walks (OpenCellID measurement CSV with TA):
        towers estimated from the training walks (posfuse celldb build), cell and cell-ta scored on the
        test walks against the phone GNSS (median, P95, radial std vs Δ/√12); ms-indoor (path files): radio
        map from the training walks, wcl, hapel, rss and fingerprint scored at the test walks' waypoints;
        ujiindoorloc (trainingData.csv; --train trainingData.csv --test validationData.csv): a fingerprint
        map of the training rows, the kNN fingerprint estimator's representation, distance, k and weights
        fitted on the training rows alone (leave one phone/user group out), the test rows replayed through
        the fingerprint stage and scored, beside plain kNN (k = 3, Euclidean, not heard = -105 dBm) on the
        same rows; wcl from an AP map of the same training rows. Errors in ground metres (EPSG:3857 metres
        are about 1.30 times larger). One file: --split device (default), day or random (leaky).
        Given one folder (or file) instead of --train/--test: leave-one-walk-out (UJI: --split).
        Given a scenario folder (trace.jsonl + reference.json, e.g. Traces/rural-cell): the radio stages run
        with the trace's own reference data (no learning); errors per source and the TA radial error std.
        GNSS recordings (--test or FOLDER alone; --train optional): gsdc (a GSDC 2020 drive folder,
        each <phone>_chipset.nmea against its own truth: SPAN_<phone>_1Hz.nmea, else SPAN_<phone>_10Hz.nmea, else the
        same for a phone of its model family, else the folder's only SPAN track; sentence defects that leave the data
        intact, e.g. wrong $GPRMC checksums, are counted per reason and fatal only with --strict): gnss, ekf and
        smoother P50/P95, inside95, ANEES per phone; gnsslogger (GnssLogger logs of a static phone, --truth-point LAT,LON[,H]): the same,
        and whether the last fused fix converged within the phone's reported 95% radius. The phone's
        reported accuracy is scaled by the GNSS error model (default: the one posfuse ships, per handset
        family, pooled for others; docs/radio.md); with --train, by a model of the same kind fitted on the
        training recordings instead.

        Examples:
          posfuse evaluate radio --train F3/a --test F3/b --json  # ms-indoor walks
          posfuse evaluate radio ujiindoorloc/trainingData.csv --split device
          posfuse evaluate radio --test gsdc2020/2020-05-14-US-MTV-1
          posfuse evaluate radio --test gnsslogger-static \\
            --truth-point 37.422578,-122.081678,-28
        """.reflowed
    )

    @Argument(help: "One folder for leave-one-walk-out (instead of --train/--test).") var folder: String?
    @Option(parsing: .upToNextOption, help: "Training recordings (files or folders).") var train: [String] = []
    @Option(parsing: .upToNextOption, help: "Test recordings (files or folders).") var test: [String] = []
    @Option(help: "lte-walks, ms-indoor, ujiindoorloc, gsdc, gnsslogger (default: detected).") var dataset: String?
    @Option(name: .customLong("truth-point"), help: "gnsslogger: the static phone's surveyed position 'lat,lon[,h]' (WGS84 degrees, m).") var truthPoint: String?
    @Option(help: "gsdc, gnsslogger: pipeline configuration (YAML, docs/pipeline.yaml) the phone's fixes are replayed through, e.g. a handset's inflation.gnss; ms-indoor, traces: the pipeline the test walks are replayed through, as with `posfuse replay --pipeline` (without it: the default pipeline with the smoother enabled; with it, the smoother runs only if the file enables it); ujiindoorloc: its fingerprint section sets the fingerprint estimator.") var pipeline: String?
    @Flag(help: "Machine-readable JSON on stdout.") var json = false
    @Flag(help: "gsdc, gnsslogger: fail (exit 65, file:line: reason) on a sentence defect that leaves the data intact (wrong checksum, unknown talker id, missing hemisphere letter); by default such sentences are kept and counted per reason.") var strict = false
    @Option(name: .customLong("handset-family"), parsing: .singleValue, help: "gsdc: NAME=FAMILY, the model family of a phone name (repeatable; default rules: text after the first '_' and a trailing Modded/Modified/Mod/Custom/Rooted dropped, e.g. Pixel4XLModded -> Pixel4XL). Calibrations learned with --train apply per family; truth is matched by name, then family.") var handsetFamily: [String] = []
    @Option(name: .customLong("min-located"), help: "lte-walks: fail (exit 1) when the coverage map locates less than this share (0-1) of the test epochs, for cell or cell-ta; walks (ms-indoor, traces): when the share of epochs located, pooled over the test walks, is below it. The share located and the reasons for the rest are always printed (stderr; --json: coverage.located_cell, located_cell-ta).") var minLocated: Double?
    @Option(help: "Split. UJIIndoorLoc (one file): device = leave one USERID/PHONEID group out (default), day = leave one day out, random = seeded random rows (leaky; comparison only). Walks (ms-indoor, traces): walk (leave-one-walk-out), area (also drop training scans within --block-radius of the test walk), or both (default).") var split: String?
    @Option(name: .customLong("train-fraction"), help: "UJIIndoorLoc --split random: fraction of rows in the map.") var trainFraction: Double = 0.7
    @Option(help: "Seed of the UJIIndoorLoc random split and of the fitting sample.") var seed: UInt64 = 1
    @Option(help: "HAPEL variant v1 or v2.") var variant: String = HAPELStage.Options.variant.text
    @Flag(name: .customLong("estimate-sectors"), help: "celldb: estimate sector azimuths from the walks.") var estimateSectors = false
    @Option(name: .customLong("block-radius"), help: "Area-blocked split: radius around the test walk's path, m.") var blockRadius: Double = RadioSplit.defaultRadius
    @Option(name: .customLong("radius-multiples"), parsing: .upToNextOption, help: "Walks: the maps' uncertainty fit replays its inner folds once per multiple of --block-radius (radiomap build --radius-multiples); 1 alone: once, the model before session 21, for comparison.") var radiusMultiples: [Double] = RadioMapLearner.defaultBlockRadiusMultiples
    @Flag(name: .customLong("no-uncertainty"), help: "Walks: build the maps without the uncertainty model (radiomap build --no-uncertainty), for comparison.") var noUncertainty = false
    @OptionGroup var wcl: WCLCommandOptions

    func validate() throws {
        if let s = split, !["walk", "area", "both"].contains(s), UJISplit(rawValue: s) == nil {
            throw ValidationError("--split: expected walk, area or both (walks), or device, day or random (UJIIndoorLoc)")
        }
        if !(blockRadius > 0 && blockRadius.isFinite) { throw ValidationError("--block-radius must be > 0 m") }
        try RadioMapBuild.validateRadiusMultiples(radiusMultiples)
        let gnss = GNSSRecordingKind.detect(folder.map { [$0] } ?? test, dataset: dataset) != nil
        if folder == nil && test.isEmpty { throw ValidationError("give FOLDER, or --train and --test") }
        if folder == nil && train.isEmpty && !gnss { throw ValidationError("give FOLDER, or both --train and --test") }
        if folder != nil && (!train.isEmpty || !test.isEmpty) { throw ValidationError("give FOLDER or --train/--test, not both") }
        if let d = dataset, RadioDataset(rawValue: d) == nil, GNSSRecordingKind(rawValue: d) == nil {
            throw ValidationError("--dataset: expected lte-walks, ms-indoor, ujiindoorloc, gsdc or gnsslogger")
        }
        if let t = truthPoint, parseGeodetic(t) == nil { throw ValidationError("--truth-point must be 'lat,lon[,h]'") }
        if HAPELEstimator.Variant(rawValue: variant) == nil { throw ValidationError("--variant: expected v1 or v2") }
        if !(trainFraction > 0 && trainFraction < 1) { throw ValidationError("--train-fraction must be in (0, 1)") }
        if let m = minLocated, !(m >= 0 && m <= 1) { throw ValidationError("--min-located must be a share in [0, 1]") }
    }

    func urls(_ paths: [String], _ ds: RadioDataset?) throws -> [URL] {
        for p in paths where !FileManager.default.fileExists(atPath: p) { throw ValidationError("no such file or folder: \(p)") }
        var exts: Set<String> = ds?.extensions ?? ["csv", "txt", "jsonl"]
        if ds == nil { exts = ["csv", "txt", "jsonl"] }
        return try expandInputs(paths, extensions: exts, recursive: true).filter { !$0.lastPathComponent.hasPrefix("bbox") }
    }

    func run() throws {
        let w = try wcl.estimator()
        var out: [String: Any] = [:]
        var text: [String] = []
        var belowMinimum: [String] = []
        if let f = folder, FileManager.default.fileExists(atPath: (f as NSString).appendingPathComponent("trace.jsonl")) {
            try runScenario(f)
            return
        }
        if let kind = GNSSRecordingKind.detect(folder.map { [$0] } ?? test, dataset: dataset) {
            try runGNSS(kind, folder.map { [$0] } ?? test)
            return
        }
        do {
            let all = try urls(folder.map { [$0] } ?? train + test, dataset.flatMap(RadioDataset.init))
            guard let ds = dataset.flatMap(RadioDataset.init) ?? RadioDataset.detect(all) else {
                throw ValidationError("cannot tell the dataset of \(all.first?.path ?? "the input"); use --dataset")
            }
            let trainURLs = folder == nil ? try urls(train, ds) : []
            let testURLs = folder == nil ? try urls(test, ds) : []
            let lowoURLs = folder == nil ? [] : all
            out["dataset"] = ds.rawValue
            out["protocol"] = folder == nil ? "train/test" : (ds == .ujiIndoorLoc ? "split: " + uji.label : "leave-one-walk-out")
            switch ds {
            case .lteWalks:
                let ev = CellEvaluation(builder: CellSiteBuilder(estimateSectors: estimateSectors))
                let report: CellEvaluation.Report
                if folder == nil {
                    let tr = try RadioWalkLoader.load(trainURLs, dataset: ds), te = try RadioWalkLoader.load(testURLs, dataset: ds)
                    report = ev.report(try ev.run(train: tr, test: te), train: tr.map(\.name), test: te.map(\.name))
                } else {
                    let walks = try RadioWalkLoader.load(lowoURLs, dataset: ds)
                    report = ev.report(try ev.leaveOneWalkOut(walks), train: ["leave-one-out"], test: walks.map(\.name))
                }
                out["cell"] = try jsonObject(report)
                text.append(String(format: "cell    median %.1f m  P95 %.1f m  (n=%d)", report.cell.median_m ?? .nan, report.cell.p95_m ?? .nan, report.cell.count))
                text.append(String(format: "cell-ta median %.1f m  P95 %.1f m  (n=%d)", report.cellTA.median_m ?? .nan, report.cellTA.p95_m ?? .nan, report.cellTA.count))
                text.append(String(format: "radial std %.1f m (Δ/√12 = %.1f m), bias %.1f m, β = %.3f", report.radialStd_m ?? .nan,
                                   report.quantizationSigma_m, report.radialBias_m ?? .nan, report.offsetBeta))
                let c = report.coverage
                text.append(String(format: "coverage map: cell    median %.1f m  P95 %.1f m  inside95 %.3f  (n=%d)", c.cell.median_m ?? .nan,
                                   c.cell.p95_m ?? .nan, c.cellInside95 ?? .nan, c.cell.count))
                text.append(String(format: "coverage map: cell-ta median %.1f m  P95 %.1f m  inside95 %.3f  (n=%d, %.0f%% from a TA area)",
                                   c.cellTA.median_m ?? .nan, c.cellTA.p95_m ?? .nan, c.cellTAInside95 ?? .nan, c.cellTA.count,
                                   100 * (c.taAreaShare ?? .nan)))
                text.append(String(format: "coverage map: ANEES cell %.2f  cell-ta %.2f", c.cellANEES ?? .nan, c.cellTAANEES ?? .nan))
                for (name, l) in [("cell", c.locatedCell), ("cell-ta", c.locatedCellTA)] {
                    let line = "coverage map: \(name) \(l.summary)"
                    text.append(line)
                    printError(line)
                    if let sh = l.share, sh < LocatedShare.warnBelow {
                        printError("coverage map: \(name) located almost nothing (\(String(format: "%.1f", 100 * sh)) %): the training walks do not cover the test walks' cells; the figures above describe \(l.located) epoch(s)")
                    }
                    if let min = minLocated, (l.share ?? 0) < min {
                        belowMinimum.append(String(format: "%@ located %.3f < --min-located %.3f", name, l.share ?? 0, min))
                    }
                }
            case .msIndoor, .traces:
                try runWalks(ds, train: trainURLs, test: testURLs, all: lowoURLs)
                return
            case .ujiIndoorLoc:
                try runUJI(trainURLs: trainURLs, testURLs: testURLs, allURLs: lowoURLs, out: &out, text: &text, wcl: w)
            }
        } catch let e as ImportDataError {
            printError(e.description)
            throw ExitCode(ExitStatus.dataError)
        }
        if json {
            let d = try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: d, as: UTF8.self))
        } else {
            print(text.joined(separator: "\n"))
        }
        if !belowMinimum.isEmpty {
            printError("evaluate radio: " + belowMinimum.joined(separator: "; "))
            throw ExitCode(ExitStatus.regression)
        }
    }
}

extension EvaluateRadio {
    var uji: UJISplit { split.flatMap(UJISplit.init(rawValue:)) ?? .device }
    /// The walks split (default both).
    var walkSplit: String { split.flatMap { ["walk", "area", "both"].contains($0) ? $0 : nil } ?? "both" }

    /// UJIIndoorLoc: the kNN fingerprint estimator (fitted on the training rows) and plain kNN
    /// through the replayer and scorer on the split's folds, and wcl from an AP map.
    func runUJI(trainURLs: [URL], testURLs: [URL], allURLs: [URL], out: inout [String: Any], text: inout [String], wcl w: WCLEstimator) throws {
        let (rows, folds, splitName) = try UJIIndoorLocReader.folds(train: trainURLs, test: testURLs, all: allURLs, split: uji,
                                                                    trainFraction: trainFraction, seed: seed)
        var fixed: KNNFingerprintEstimator? = nil
        if let pipeline, let o = try loadPipelineStages(pipeline)["fingerprint"], o.values["k"] != nil {
            fixed = try FingerprintStage.knnEstimator(o)   // a given configuration is used as given
        }
        printError("ujiindoorloc: \(rows.count) rows, split \(splitName), \(folds.count) fold(s)")
        let r = try UJIIndoorLocEvaluation.run(rows: rows, folds: folds, split: uji, fixed: fixed, seed: seed,
                                               progress: { printError("  " + $0) })
        let (wclErrors, wclFloorHitRate) = UJIIndoorLocReader.evaluate(rows: rows, folds: folds, wcl: w)
        func summary(_ o: UJIIndoorLocEvaluation.Outcome) throws -> [String: Any] {
            var d = try jsonObject(ErrorSummary(o.errors)) as? [String: Any] ?? [:]
            d["building_hit"] = o.buildingHitRate; d["building_floor_hit"] = o.buildingFloorHitRate
            d["floor_hit"] = o.buildingFloorHitRate   // the floor is right only inside the right building
            d["scans"] = o.scans; d["located"] = o.located
            d["inside95"] = RadioStats.inside95(o.nees); d["anees"] = RadioStats.mean(o.nees)
            return d
        }
        let p = ErrorSummary(r.posfuse.errors), k = ErrorSummary(r.plain.errors)
        let ratio = (p.mean_m ?? .nan) / (k.mean_m ?? .nan)
        out["split"] = splitName
        out["uji"] = [
            "units": "m, local ENU (ground); EPSG:3857 m are about 1.30 x larger",
            "split": splitName, "folds": r.folds, "rows": rows.count,
            "fingerprint": try summary(r.posfuse), "plain_knn": try summary(r.plain),
            "fingerprint_to_plain_knn_mean": ratio,
            "fitted": r.fitted.map { e in FingerprintStage.options(e).values.mapValues { v -> Any in
                switch v { case .number(let x): return x; case .string(let x): return x; case .bool(let x): return x; default: return "\(v)" }
            } },
            "wcl": try jsonObject(ErrorSummary(wclErrors)), "wcl_units": "EPSG:3857 m (the AP-map evaluation works in the data set's coordinates)",
            "wcl_floor_hit_rate": wclFloorHitRate,
        ] as [String: Any]
        text.append("split: \(splitName), \(folds.count) fold(s), \(rows.count) rows; errors in ground m (EPSG:3857 m ≈ 1.30×)")
        for (name, o) in [("fingerprint (wknn)", r.posfuse), ("plain kNN k=3    ", r.plain)] {
            let s = ErrorSummary(o.errors)
            text.append(String(format: "%@ mean %.2f m median %.2f m P75 %.2f m P95 %.2f m (n=%d of %d scans), building hit %.3f, building+floor hit %.3f, inside95 %.3f",
                               name, s.mean_m ?? Double.nan, s.median_m ?? Double.nan, s.p75_m ?? Double.nan, s.p95_m ?? Double.nan, s.count, o.scans,
                               o.buildingHitRate ?? Double.nan, o.buildingFloorHitRate ?? Double.nan, RadioStats.inside95(o.nees) ?? Double.nan))
        }
        text.append(String(format: "fingerprint / plain kNN mean: %.3f", ratio))
        let ws = ErrorSummary(wclErrors)
        text.append(String(format: "wcl (AP map, EPSG:3857 m) mean %.2f m median %.2f m P95 %.2f m (n=%d)", ws.mean_m ?? .nan, ws.median_m ?? .nan, ws.p95_m ?? .nan, ws.count))
    }

    /// The handset families of `--handset-family` overrides.
    func handsetFamilies() throws -> HandsetFamilies {
        switch HandsetFamilies.parse(handsetFamily) {
        case .success(let f): return f
        case .failure(let e): throw ValidationError(e.description)
        }
    }

    /// GSDC drive folders or GnssLogger logs as recordings (static: GnssLogger, scored for
    /// convergence; GSDC: with the matched truth file and the import's tolerated defects).
    func loadGNSSRecordings(_ kind: GNSSRecordingKind, _ paths: [String])
        throws -> [(walk: RecordedWalk, isStatic: Bool, drive: GNSSFusionEvaluation.DrivePhone?)] {
        for p in paths where !FileManager.default.fileExists(atPath: p) { throw ValidationError("no such file or folder: \(p)") }
        switch kind {
        case .gsdc:
            let families = try handsetFamilies()
            return try paths.flatMap { try GNSSFusionEvaluation.loadGSDCDrive(URL(fileURLWithPath: $0), strict: strict, families: families) }
                .map { ($0.walk, false, $0) }
        case .gnssLogger:
            guard let tp = truthPoint, let truth = parseGeodetic(tp) else {
                throw ValidationError("gnsslogger: give the static phone's surveyed point with --truth-point lat,lon[,h]")
            }
            return try expandInputs(paths, extensions: ["txt"]).map {
                (try GNSSFusionEvaluation.loadStatic($0, truth: truth, strict: strict), true, nil)
            }
        }
    }

    /// Walks (ms-indoor path files, traces): maps built per fold by the `radiomap build` code, test
    /// walks replayed through the product pipeline with them, scored by the product scorer.
    func runWalks(_ ds: RadioDataset, train: [URL], test: [URL], all: [URL]) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-evaluate-\(getpid())-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var ev = RadioWalkEvaluation()
        if let pipeline { ev.stages = try loadPipelineStages(pipeline) }
        ev.learner.fitUncertainty = !noUncertainty
        ev.learner.blockRadius = blockRadius
        ev.learner.blockRadiusMultiples = radiusMultiples
        let started = Date()
        ev.progress = { sp, done, n, walk in
            printError(String(format: "%@: fold %d/%d (test walk %@) done, %.0f s", sp.name, done, n, walk, Date().timeIntervalSince(started)))
        }
        let splits: [RadioSplit] = walkSplit == "walk" ? [.walk] : walkSplit == "area" ? [.area(radius: blockRadius)] : [.walk, .area(radius: blockRadius)]
        var summaries: [RadioWalkEvaluation.Summary] = []
        try withExitCodes {
            do {
                if all.isEmpty {
                    let tr = try RadioWalkEvaluation.prepare(train, dataset: ds, directory: scratch.appendingPathComponent("train"))
                    let te = try RadioWalkEvaluation.prepare(test, dataset: ds, directory: scratch.appendingPathComponent("test"))
                    for sp in splits { summaries.append(try ev.trainTest(train: tr, test: te, split: sp, scratch: scratch)) }
                } else {
                    let walks = try RadioWalkEvaluation.prepare(all, dataset: ds, directory: scratch.appendingPathComponent("walks"))
                    guard walks.count >= 2 else { throw ValidationError("leave-one-walk-out needs at least two walks, found \(walks.count)") }
                    for sp in splits { summaries.append(try ev.leaveOneOut(walks, split: sp, scratch: scratch)) }
                }
            } catch let e as ImportDataError {
                printError(e.description)
                throw ExitCode(ExitStatus.dataError)
            }
        }
        let sources: [Source] = [.wcl, .hapel, .rss, .fingerprint, .ble, .ekf, .ukf, .pf, .smoother]
        var out: [String: Any] = ["dataset": ds.rawValue, "protocol": all.isEmpty ? "train/test" : "leave-one-walk-out",
                                  "pipeline": pipeline ?? "default + smoother (smoother: {enabled: true})"]
        var lines: [String] = []
        var splitsJSON: [[String: Any]] = []
        for s in summaries {
            let cps = s.checkpoints.reduce(0) { max($0, $1.checkpoints) }
            var o: [String: Any] = ["split": s.split.name, "description": s.split.description, "folds": s.folds.count,
                                    "checkpoints": s.checkpoints.map { $0.json() },
                                    "training_scans_kept": s.folds.reduce(0) { $0 + $1.keptScans },
                                    "training_scans_blocked": s.folds.reduce(0) { $0 + $1.removedScans }].merging(s.located.jsonMembers) { a, _ in a }
            if case .area(let r) = s.split { o["block_radius_m"] = r }
            // Per test walk: its checkpoint scores per source (as the pooled `checkpoints`), so a
            // figure's misses can be traced to walks.
            o["test_walks"] = s.folds.map { f -> [String: Any] in
                ["walk": f.test, "training_scans_kept": f.keptScans, "training_scans_blocked": f.removedScans,
                 "checkpoints": f.result.scores.checkpoints.map { $0.json() }]
                    .merging(f.result.located.jsonMembers) { a, _ in a }
            }
            var est: [String: Any] = [:]
            for src in sources { let e = s.estimateSummary(src); if !e.isEmpty { est[src.rawValue] = e } }
            o["per_estimate"] = est
            var same: [String: Any] = [:]
            lines.append("split \(s.split.description) (\(s.folds.count) test walk(s), \(cps) checkpoints)")
            lines.append(ScoreReport.checkpointTable(s.checkpoints).trimmingCharacters(in: .newlines))
            for f in [Source.ekf, .ukf, .pf, .smoother] {
                guard let (m, w, n) = s.sameCheckpoints(f, .wcl) else { continue }
                same[f.rawValue] = ["mean_m": m, "wcl_mean_m": w, "ratio": m / w, "count": n]
                lines.append(String(format: "  same checkpoints (n=%d): %@ mean %.2f m vs wcl %.2f m, ratio %.3f", n, f.rawValue, m, w, m / w))
            }
            o["same_checkpoints_vs_wcl"] = same
            // Per-source NIS of the fusion stages (ANIS = Σ NIS / Σ m, ≈ 1 when the source's R and
            // the filter's prior are consistent; heading updates count under the stage's source).
            var nis: [String: Any] = [:]
            for (stage, m) in s.fusionCounters.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                var per: [String: Any] = [:]
                var parts: [String] = []
                for (src, c) in m.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where c.accepted + c.gated + c.combined > 0 {
                    var e: [String: Any] = ["accepted": c.accepted, "gated": c.gated, "combined": c.combined, "initializations": c.initializations]
                    if let a = c.averageNIS { e["anis"] = a }
                    per[src.rawValue] = e
                    parts.append("\(src.isFusion ? "heading" : src.rawValue) " + (c.averageNIS.map { String(format: "ANIS %.2f", $0) } ?? "no NIS")
                                 + " (\(c.accepted) accepted, \(c.gated) gated\(c.combined > 0 ? ", \(c.combined) combined" : ""))")
                }
                nis[stage.rawValue] = per
                if !parts.isEmpty { lines.append("  \(stage.rawValue) updates: " + parts.joined(separator: "; ")) }
            }
            o["fusion_updates"] = nis
            let pdr = s.pdrDiagnostics(defaultK: FusionStage.Options.weinbergK.number)
            if !pdr.isEmpty {
                o["pdr_test_walks"] = pdr
                let h = (pdr["heading_error_deg"] as? [String: Any]).map { h in
                    String(format: "; heading error (truth − PDR, segments ≥ 5 m, n=%d) mean %.1f°, RMS %.1f°", h["segments"] as? Int ?? 0,
                           h["mean"] as? Double ?? 0, h["rms"] as? Double ?? 0)
                } ?? ""
                lines.append(String(format: "  PDR on the test walks: truth %.0f m between checkpoints, PDR %.0f m with the fold's fitted K (truth/PDR %.2f), %.0f m with weinberg_k %.2f (%.2f)",
                                    pdr["truth_m"] as? Double ?? 0, pdr["pdr_m"] as? Double ?? 0, pdr["truth_over_pdr"] as? Double ?? 0,
                                    pdr["pdr_default_k_m"] as? Double ?? 0, FusionStage.Options.weinbergK.number, pdr["truth_over_pdr_default_k"] as? Double ?? 0) + h)
            }
            let per = sources.compactMap { src -> String? in
                guard let a = s.estimates[src], !a.errors.isEmpty else { return nil }
                let e = ErrorSummary(a.errors)
                let i = RadioStats.inside95(a.nees).map { String(format: " inside95 %.3f", $0) } ?? ""
                return String(format: "%@ n=%d mean %.2f m", src.rawValue, e.count, e.mean_m ?? 0) + i
            }
            if !per.isEmpty { lines.append("  per estimate (truth interpolated within \(Int(ev.scoring.maxTruthGap)) s): " + per.joined(separator: "; ")) }
            lines.append("  " + s.located.summary)
            splitsJSON.append(o)
        }
        out["splits"] = splitsJSON
        if json {
            print(String(decoding: try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self))
        } else {
            print(lines.joined(separator: "\n"))
        }
        var failed = false
        for s in summaries {
            let sh = s.located.share ?? 0
            if let m = minLocated, sh < m {
                printError("error: \(s.split.name): \(s.located.summary), below --min-located \(m)"); failed = true
            } else if sh < LocatedShare.warnBelow {
                printError("warning: \(s.split.name): \(s.located.summary)")
            }
        }
        if failed { throw ExitCode(ExitStatus.regression) }
    }

    /// GSDC drives and static GnssLogger logs: the filters over the phone's own fixes.
    func runGNSS(_ kind: GNSSRecordingKind, _ paths: [String]) throws {
        var recordings: [GNSSFusionEvaluation.Recording] = []
        let stages = try pipeline.map { try loadPipelineStages($0) } ?? [:]
        let confidence = try stages["gnss"]?.double("accuracy_confidence", default: 0.68) ?? 0.68
        do {
            // Training recordings (optional): the GNSS error model fitted on them replaces the
            // shipped one (per family, pooled for families they lack; GNSSErrorModel).
            let families = try handsetFamilies()
            let trained = train.isEmpty ? nil
                : GNSSFusionEvaluation.fitErrorModel(try train.flatMap { p in
                    // Each training path of its own kind: drives and static logs may train one model.
                    try loadGNSSRecordings(GNSSRecordingKind.detect([p], dataset: nil) ?? kind, [p]).map(\.walk)
                }, accuracyConfidence: confidence,
                                                     families: families)
            if !train.isEmpty && trained == nil {
                printError("error: no GNSS fix with truth in the --train recordings: no error model could be fitted")
                throw ExitCode(ExitStatus.dataError)
            }
            let own = try stages["gnss"].map { try GNSSAccuracyCalibration.from(options: $0) != nil } ?? false
            let shipped = try GNSSErrorModel.from(options: GNSSFusionEvaluation.stages(stages, family: "")["gnss"]!)
            for (walk, isStatic, drive) in try loadGNSSRecordings(kind, paths) {
                var r: GNSSFusionEvaluation.Recording
                let family = GNSSFusionEvaluation.handset(of: walk, families: families)
                let withFamily = GNSSFusionEvaluation.stages(stages, family: family)
                if let m = trained, !own {
                    let (a, entry) = m.factor(forFamily: family)
                    r = try GNSSFusionEvaluation.evaluate(walk, isStatic: isStatic,
                                                          stages: GNSSFusionEvaluation.stages(stages, model: m, family: family))
                    r.calibratedOn = (entry == "pooled" ? "--train error model, pooled over \(m.pooled.recordings) recording(s)"
                                      : "--train error model, family \(entry)") + String(format: " (α %.3f)", a)
                } else {
                    r = try GNSSFusionEvaluation.evaluate(walk, isStatic: isStatic, stages: withFamily)
                    if !own, let m = shipped {
                        let (a, entry) = m.factor(forFamily: family)
                        r.calibratedOn = (entry == "pooled" ? "error model, pooled" : "error model, family \(entry)") + String(format: " (α %.3f)", a)
                    }
                }
                r.family = GNSSFusionEvaluation.handset(of: walk, families: families)
                if let d = drive {
                    r.truthFile = d.truthFile; r.truthMatch = d.truthMatch
                    r.tolerated = ["phone": d.phoneReport.tolerated, "truth": d.truthReport.tolerated]
                }
                recordings.append(r)
            }
        } catch let e as ImportDataError {
            printError(e.description)
            throw ExitCode(ExitStatus.dataError)
        }
        if json {
            let o: [String: Any] = ["dataset": kind.rawValue,
                                    "protocol": train.isEmpty ? "test only: the pipeline's GNSS error model (default: the shipped one)" : "train/test: GNSS error model fitted on --train (per handset family, pooled for others), applied to --test",
                                    "recordings": try jsonObject(recordings)]
            print(String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self))
            return
        }
        var lines: [String] = []
        for r in recordings {
            var head = r.name
            if let a = r.reportedAccuracy_m { head += String(format: "  (reported accuracy median %.2f m, 95%% radius %.2f m)", a, a * GNSSFusionEvaluation.accuracyTo95) }
            if let c = r.calibratedOn { head += "  [accuracy: \(c)]" }
            lines.append(head)
            if let f = r.family { lines.append("  handset family \(f)" + (r.truthFile.map { ", truth \($0) (matched by \(r.truthMatch ?? "?"))" } ?? "")) }
            for (file, counts) in (r.tolerated ?? [:]).sorted(by: { $0.key < $1.key }) {
                for (reason, n) in counts.sorted(by: { $0.key < $1.key }) {
                    lines.append("  \(file) file: tolerated \(reason): \(n) (data intact; --strict makes this fatal)")
                }
            }
            lines.append("  source       n     P50_m    P95_m   mean_m  inside95   anees  final_m  final_r95_m")
            for s in GNSSFusionEvaluation.sources {
                guard let x = r.sources[s.rawValue] else { continue }
                lines.append("  " + s.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0) + String(format: " %5d  %8.2f %8.2f %8.2f  %8.3f %7.2f %8.2f %12.2f", x.errors.count,
                                    x.errors.median_m ?? .nan, x.errors.p95_m ?? .nan, x.errors.mean_m ?? .nan, x.inside95 ?? .nan,
                                    x.anees ?? .nan, x.finalError_m ?? .nan, x.finalR95_m ?? .nan))
            }
            if let c = r.converged { lines.append("  converged within the reported 95% radius and the filter's own: " + (c ? "yes" : "no")) }
            if let a = r.accuracyCalibration {
                lines.append(String(format: "  reported accuracy calibration against this truth: α̂ = %.2f (pipeline option inflation: {gnss: α̂})", a))
            }
        }
        print(lines.joined(separator: "\n"))
    }

    func runScenario(_ path: String) throws {
        let wo = wcl.stageOptions
        var ho = wo; ho.name = "hapel"; ho.values[HAPELStage.Options.variant.key] = .string(variant)
        let r = try withExitCodes { try RadioScenarioReplay.run(path, options: ["wcl": wo, "hapel": ho]) }
        var out: [String: Any] = ["protocol": "scenario", "trace": path]
        var lines: [String] = []
        var scores: [[String: Any]] = []
        for (src, e) in r.errors.sorted(by: { $0.key < $1.key }) {
            var d = try jsonObject(ErrorSummary(e)) as? [String: Any] ?? [:]
            d["source"] = src.rawValue
            if let n = r.nis[src] { d["median_nis"] = RadioStats.median(n) }
            scores.append(d)
            let s = ErrorSummary(e)
            lines.append(String(format: "%-8@ n=%4d mean %8.2f m  median %8.2f m  P95 %8.2f m", src.rawValue as NSString, s.count,
                                s.mean_m ?? .nan, s.median_m ?? .nan, s.p95_m ?? .nan))
        }
        out["scores"] = scores
        var radial: [[String: Any]] = []
        for (u, v) in r.radial.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let q = TimingAdvanceModel(unit: u).quantizationSigma
            let sd = RadioStats.standardDeviation(v)
            radial.append(["ta_unit": u.rawValue, "count": v.count, "std_m": sd as Any, "bias_m": RadioStats.mean(v) as Any,
                           "quantization_sigma_m": q, "ratio": (sd ?? .nan) / q])
            lines.append(String(format: "TA %@ radial std %.2f m vs Δ/√12 %.2f m (ratio %.3f, n=%d)", u.rawValue as NSString,
                                sd ?? .nan, q, (sd ?? .nan) / q, v.count))
        }
        out["ta_radial"] = radial
        if json {
            print(String(decoding: try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self))
        } else { print(lines.joined(separator: "\n")) }
    }
}
