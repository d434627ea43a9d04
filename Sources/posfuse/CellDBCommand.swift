import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse celldb …`: the cell-tower database (SQLite).
struct CellDB: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "celldb",
        abstract: "Build the cell-tower database (SQLite) from walks (OpenCellID towers: posfuse import opencellid).",
        subcommands: [CellDBBuild.self]
    )
}

struct CellDBBuild: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Estimate cell-site positions from recorded walks with TA and GNSS/ground truth (robust least squares), and learn each cell's coverage.",
        discussion: """
        Inputs: posfuse traces (.jsonl) or OpenCellID measurement CSV walks. Sites are written with provenance 'estimated'.

        The coverage map (where phones were when they reported each serving cell and TA index: mean and covariance per area, docs/radio.md) goes into the table cell_coverage of the same database, in the same transaction. The cell and cell-ta stages locate a report from it before the tower ring: give the database to posfuse replay/refine with --cell-db, or write both as WGS84 members of a reference.json with --reference-json.

        With walks on 3 or more days the coverage map is calibrated on its own walks: each day's walks are located from the map of the other days; the tail weight of the predictive (prior degrees ν₀) is fitted so that 95 % of those reports fall inside their 95 % ellipse, then a scale s that holds on the worst of the days; one (ν₀, s) for whole-cell areas, one for (cell, TA) areas (docs/radio.md, "Coverage calibration"). Every area stores the resulting factor on its covariance (column scale; reference.json "scale"); replay, refine and serve use it without an option.

        Examples:
          posfuse celldb build lte-walks/lacolyoc \\
            --db cells.sqlite --reference-json cells.json
          posfuse refine reports.jsonl --cell-db cells.sqlite --lines
          posfuse replay my-walk/ --cell-db cells.sqlite
        """
    )
    @Argument(help: "Walks (files or folders).") var inputs: [String]
    @Option(name: .customLong("db"), help: "Cell database (SQLite) to write.") var db: String
    @Option(name: .customLong("reference-json"), help: "Also write the \"cells\" and \"cell_coverage\" members (WGS84) of this reference.json (its other members are kept).") var referenceJSON: String?
    @Option(help: "TA quantiser offset β in steps (0 rounding, 0.5 truncation).") var offset: Double = CellTAStage.Options.defaultOffset
    @Flag(name: .customLong("pool-site"), help: "Pool the LTE/NR cells of one eNB/gNB into one site fit (default: per cell).") var poolSite = false
    @Flag(name: .customLong("estimate-sectors"), help: "Estimate sector azimuths from the walks (biased to the walked area).") var estimateSectors = false
    @Flag(help: "Machine-readable JSON summary.") var json = false

    func run() throws {
        for p in inputs where !FileManager.default.fileExists(atPath: p) { throw ValidationError("no such file or folder: \(p)") }
        let urls = try expandInputs(inputs, extensions: ["csv", "jsonl"]).filter { !$0.lastPathComponent.hasPrefix("bbox") }
        guard let ds = RadioDataset.detect(urls), ds == .lteWalks || ds == .traces else {
            throw ValidationError("inputs must be posfuse traces (.jsonl) or OpenCellID measurement CSV")
        }
        do {
            let walks = try RadioWalkLoader.load(urls, dataset: ds)
            guard let origin = walks.first?.header.origin else { throw ValidationError("no walks") }
            let frame = LocalFrame(origin: origin)
            let b = CellSiteBuilder(offset: offset, groupBySite: poolSite, estimateSectors: estimateSectors)
            let built = b.build(walks, frame: frame)
            let (map, fit) = CellCoverageMap.calibrated(walks: walks, frame: frame)
            let coverage = CellCoverageRecord.records(map, frame: frame)
            let database = try CellDatabase(path: db)
            try database.insert(built.records, coverage: coverage)
            if let r = referenceJSON { try ReferenceJSONWriter.update(url: URL(fileURLWithPath: r), towers: built.records, coverage: coverage) }
            var sites: [[String: Any]] = []
            for s in built.sites {
                var d: [String: Any] = ["site": s.key, "cells": s.cells.count, "samples": s.samples]
                switch s.result {
                case .success(let r):
                    d["rms_residual_m"] = r.rmsResidual; d["inlier_fraction"] = r.inlierFraction
                    d["sigma_e_m"] = r.covariance.ee.squareRoot(); d["sigma_n_m"] = r.covariance.nn.squareRoot()
                case .failure(let f): d["failure"] = f.code
                }
                sites.append(d)
            }
            if json {
                let o: [String: Any] = ["walks": walks.count, "records": built.records.count, "sites": sites,
                                        "coverage_areas": coverage.count, "coverage_cells": coverage.filter { $0.ta == nil }.count,
                                        "coverage_scale": ["cell": fit.cell, "cell_ta": fit.timingAdvance, "cell_prior_degrees": fit.cellPriorDegrees,
                                                           "cell_ta_prior_degrees": fit.taPriorDegrees,
                                                           "cell_residuals": fit.cellResiduals, "cell_ta_residuals": fit.taResiduals]]
                print(String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self))
            } else {
                print("\(walks.count) walk(s): \(built.sites.count) site(s), \(built.records.count) cell record(s), "
                      + "\(coverage.count) coverage area(s) of \(coverage.filter { $0.ta == nil }.count) cell(s) written to \(db)"
                      + (referenceJSON.map { " and \($0)" } ?? ""))
                print("  coverage scale (inner leave-one-day-out, docs/radio.md): cell ν₀ \(String(format: "%.3g", fit.cellPriorDegrees)) s \(String(format: "%.3f", fit.cell)) "
                      + "(\(fit.cellResiduals) d²), cell-ta ν₀ \(String(format: "%.3g", fit.taPriorDegrees)) s \(String(format: "%.3f", fit.timingAdvance)) (\(fit.taResiduals) d²)")
                for s in sites { print("  \(s)") }
            }
        } catch let e as ImportDataError {
            printError(e.description)
            throw ExitCode(ExitStatus.dataError)
        }
    }
}
