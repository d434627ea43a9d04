import Foundation
import Positioning

/// Training samples for `GNSSAccuracyCalibration` (`posfuse calibrate gnss`): every `gnss` fix
/// of the given recordings (or seeded simulator runs) that has ground truth, as (reported
/// accuracy r, NEES under the uncalibrated covariance). Only the `gnss` stage runs, with its
/// `accuracy_confidence` from `stages` and neither `inflation` nor a calibration, so the
/// samples describe the phone's own reports.
public enum GNSSCalibrationFit {
    /// The stage options for collecting: every stage off but `gnss`, which keeps only its
    /// accuracy confidence.
    static func collectingStages(from stages: [String: StageOptions]) -> [String: StageOptions] {
        var out: [String: StageOptions] = [:]
        for e in StageRegistry.entries where e.name != "gnss" {
            out[e.name] = StageOptions(name: e.name, values: ["enabled": .bool(false)])
        }
        var g = StageOptions(name: "gnss")
        if let c = stages["gnss"]?.values["accuracy_confidence"] { g.values["accuracy_confidence"] = c }
        out["gnss"] = g
        return out
    }

    /// Samples of one replayed trace.
    public static func samples(of location: TraceLocation, stages: [String: StageOptions] = [:],
                               mode: TraceReadMode = .lenient) throws -> [GNSSAccuracyCalibration.Sample] {
        let collecting = collectingStages(from: stages)
        let confidence = try collecting["gnss"]!.double("accuracy_confidence", default: 0.68)
        let replayer = Replayer(options: ReplayOptions(mode: mode, stages: collecting))
        var out: [GNSSAccuracyCalibration.Sample] = []
        replayer.onEstimate = { e in
            guard e.fix.source == .gnss, let p = e.truth,
                  let s = GNSSAccuracyCalibration.Sample(fix: e.fix, truth: p, accuracyConfidence: confidence) else { return }
            out.append(s)
        }
        _ = try replayer.run(location)
        return out
    }

    /// The fitted calibration as a pipeline file (`--pipeline`), with the bins as comments.
    public static func pipelineYAML(_ c: GNSSAccuracyCalibration, bins: [GNSSAccuracyCalibration.Bin], command: String) -> String {
        func list(_ v: [Double]) -> String { "[" + v.map { String(format: "%.4g", $0) }.joined(separator: ", ") + "]" }
        var s = "# GNSS accuracy calibration (docs/consistency.md), fitted by:\n#   \(command)\n"
        s += "# \(bins.reduce(0) { $0 + $1.count }) fixes with truth; per bin of reported accuracy r:"
        s += " α² = median NEES / (2 ln 2), σ ← α σ.\n"
        for b in bins {
            s += String(format: "#   r %.2f–%.2f m: %d fixes, median NEES %.2f → α %.3f\n", b.lowerAccuracy, b.upperAccuracy,
                        b.count, b.medianNEES, b.factor)
        }
        s += "stages:\n  gnss:\n"
        s += "    \(GNSSAccuracyCalibration.edgesOption): \(list(c.edges))   # m, upper edges of the bins of reported accuracy\n"
        s += "    \(GNSSAccuracyCalibration.factorsOption): \(list(c.factors))   # α per bin, factor on σ\n"
        return s
    }
}
