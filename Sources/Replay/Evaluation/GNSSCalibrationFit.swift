import Foundation
import Positioning
import Survey
import TraceIO

/// Training samples for `GNSSAccuracyCalibration` (`posfuse calibrate gnss`): every `gnss` fix
/// of the given recordings (or seeded simulator runs) that has ground truth, as (reported
/// accuracy r, NEES under the uncalibrated covariance) — `GNSSFusionEvaluation.calibrationSamples`
/// with the `gnss` stage's `accuracy_confidence` from `stages` and neither `inflation` nor a
/// calibration, so the samples describe the phone's own reports.
public enum GNSSCalibrationFit {
    /// Samples of one recording.
    public static func samples(of location: TraceLocation, stages: [String: StageOptions] = [:]) throws -> [GNSSAccuracyCalibration.Sample] {
        let confidence = try stages["gnss"]?.double("accuracy_confidence", default: 0.68) ?? 0.68
        return GNSSFusionEvaluation.calibrationSamples(try RecordedWalk.read(location.trace), accuracyConfidence: confidence)
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
