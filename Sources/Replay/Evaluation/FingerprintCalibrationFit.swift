import Foundation
import Positioning
import Survey
import TraceIO

/// Training samples for `FingerprintCalibration` (`posfuse calibrate fingerprint`): every WiFi
/// scan of the given recordings (or seeded simulator runs) whose phone has ground truth at the
/// scan time, matched against the recording's own fingerprint map (`reference.json`
/// `fingerprints`) with the `fingerprint` stage's options from `stages` (σ aside) under `method: bayes`, whose σ it is.
public enum FingerprintCalibrationFit {
    public static func samples(of location: TraceLocation, stages: [String: StageOptions] = [:]) throws -> [FingerprintCalibration.Sample] {
        let walk = try RecordedWalk.read(location.trace)
        let frame = walk.header.frame
        guard let map = try ReferenceLoader.load(folder: location.folder, frame: frame).fingerprints, !map.isEmpty else { return [] }
        // σ is the `bayes` method's parameter: its other options apply, whatever the default method.
        var options = stages["fingerprint"] ?? StageOptions(name: "fingerprint")
        options.values["method"] = .string(FingerprintStage.Method.bayes.rawValue)
        var est = try FingerprintStage.make(options).estimator
        if stages["fingerprint"]?.values["rss_min"] == nil { est.phoneThreshold = walk.header.rssThreshold ?? est.phoneThreshold }
        return samples(walk, frame: frame, maxGap: 5, map: map, estimator: est)
    }

    /// Samples of one walk's scans against `map` (truth in `frame`).
    public static func samples(_ walk: RecordedWalk, frame: LocalFrame, maxGap: Double = 30, map: FingerprintMap,
                               estimator: FingerprintEstimator) -> [FingerprintCalibration.Sample] {
        var out: [FingerprintCalibration.Sample] = []
        walk.forEachEvent(withTruthIn: frame, maxGap: maxGap, where: { if case .wifi = $0.payload { true } else { false } }) { e, p in
            guard case .wifi(let scan) = e.payload,
                  let s = FingerprintCalibration.Sample(scan: scan, time: e.time, truth: p, map: map, estimator: estimator) else { return }
            out.append(s)
        }
        return out
    }

    /// The fitted σ as a pipeline file (`--pipeline`).
    public static func pipelineYAML(_ r: FingerprintCalibration.Result, command: String) -> String {
        var s = "# Fingerprint σ calibration (docs/radio.md), fitted by:\n#   \(command)\n"
        s += String(format: "# %d scans with truth: at σ = %.2f dB the fixes' ANEES is %.2f, inside95 %.3f.\n", r.count, r.sigma, r.anees, r.inside95)
        s += "stages:\n  fingerprint:\n"
        s += "    method: bayes   # σ is the Horus posterior's (the stage's default method is wknn)\n"
        s += String(format: "    sigma_db: %.2f   # dB, σ of one AP's RSS against the map\n", r.sigma)
        return s
    }
}
