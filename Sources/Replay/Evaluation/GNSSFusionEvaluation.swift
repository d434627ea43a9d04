import Foundation
import Positioning

/// GNSS recordings `posfuse evaluate radio` knows besides the radio datasets.
public enum GNSSRecordingKind: String, Sendable, CaseIterable {
    /// A GSDC 2020 drive folder (`*_chipset.nmea` phones, `SPAN_*_1Hz.nmea` truth).
    case gsdc
    /// Android GnssLogger logs (`Fix` records) of a static phone.
    case gnssLogger = "gnsslogger"

    /// From `--dataset` (if it names one of these) or the inputs: a folder holding a
    /// `SPAN_*.nmea` file is a GSDC drive; a file (or a folder's first `.txt`) whose header
    /// has GnssLogger's `# Fix,Provider,` line is a GnssLogger log. nil: not a GNSS recording.
    public static func detect(_ paths: [String], dataset: String?) -> GNSSRecordingKind? {
        if let d = dataset { return GNSSRecordingKind(rawValue: d) }
        guard let p = paths.first else { return nil }
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: p, isDirectory: &isDir) else { return nil }
        var file = URL(fileURLWithPath: p)
        if isDir.boolValue {
            let names = ((try? fm.contentsOfDirectory(atPath: p)) ?? []).sorted()
            if names.contains(where: { $0.hasPrefix("SPAN_") && $0.hasSuffix(".nmea") }) { return .gsdc }
            guard let t = names.first(where: { $0.hasSuffix(".txt") }) else { return nil }
            file = file.appendingPathComponent(t)
        }
        guard let h = try? FileHandle(forReadingFrom: file) else { return nil }
        defer { try? h.close() }
        let head = String(decoding: h.readData(ofLength: 8192), as: UTF8.self)
        return head.contains("# Fix,Provider,") ? .gnssLogger : nil
    }
}

/// The fusion filters over a phone's own GNSS fixes on real recordings (`posfuse evaluate radio
/// --dataset gsdc|gnsslogger`, docs/radio.md "GNSS recordings"): the default pipeline with the
/// offline smoother switched on replays each recording in memory, and every `gnss`, `ekf` and
/// `smoother` fix is scored against the recording's truth, interpolated at the fix time:
///
/// - `gsdc`: a drive folder of the Google Smartphone Decimeter Challenge 2020 layout, phones'
///   chipset fixes `*_chipset.nmea` against the NovAtel SPAN track `SPAN_*_1Hz.nmea` (matched
///   on UTC seconds, max truth gap 5 s). The chipset fixes are already filtered by the phone,
///   so the filter cannot be expected to beat them by much; it must not lag or lose them.
/// - `gnsslogger`: Android GnssLogger logs (`Fix` records) of a static phone against its
///   surveyed point (`--truth-point`). Convergence: the last fused fix lies within the
///   phone's own reported 95% radius (Android's accuracy is the 68% radius of a circular
///   Gaussian, so r95 = accuracy · √(−2 ln 0.05)/√(−2 ln 0.32) ≈ 1.616 · accuracy; median of
///   the log's fixes) and within the filter's own 95% radius.
public enum GNSSFusionEvaluation {
    /// Error figures of one source on one recording (m).
    public struct SourceSummary: Codable, Sendable, Equatable {
        public var errors: ErrorSummary
        /// Fraction of fixes whose truth lies inside their 95% ellipse.
        public var inside95: Double?
        /// Average NEES, Mahalanobis² of the error (2 when consistent, as `posfuse replay`'s `anees`).
        public var anees: Double?
        /// Error and 95% radius of the last fix of the recording (convergence of a static log).
        public var finalError_m: Double?
        public var finalR95_m: Double?

        enum CodingKeys: String, CodingKey {
            case errors, inside95, anees, finalError_m = "final_error_m", finalR95_m = "final_r95_m"
        }
    }

    /// One recording (one phone).
    public struct Recording: Codable, Sendable {
        public var name: String
        public var sources: [String: SourceSummary]
        /// Median reported accuracy of the phone's fixes (68% radius, m).
        public var reportedAccuracy_m: Double?
        /// Static logs: the last ekf and smoother fixes lie within the phone's reported 95% radius
        /// and their own 95% radius.
        public var converged: Bool?
        /// α̂ = √(ANEES_gnss / 2): the factor by which the phone's reported σ must be scaled for
        /// its own fixes to be χ²₂-consistent against this truth (`inflation: {gnss: α̂}` is that
        /// handset's calibration; 1 = calibrated).
        public var accuracyCalibration: Double?
        /// With training recordings: the handset whose training fixes calibrated this
        /// recording's reported accuracy (or "all training handsets"); the figures above are then
        /// after that calibration (α̂ is what remains).
        public var calibratedOn: String?

        enum CodingKeys: String, CodingKey {
            case name, sources, reportedAccuracy_m = "reported_accuracy_m", converged, accuracyCalibration = "accuracy_calibration_alpha"
            case calibratedOn = "calibrated_on"
        }
    }

    /// Android accuracy (68% radius) to a 95% radius for a circular Gaussian.
    public static let accuracyTo95 = (-2 * log(0.05)).squareRoot() / (-2 * log(0.32)).squareRoot()

    /// Sources scored.
    public static let sources: [Source] = [.gnss, .ekf, .smoother]

    /// Imports the GSDC drive folder `folder`: one recording per `*_chipset.nmea` phone file
    /// (strictly), with the folder's `SPAN_*_1Hz.nmea` as truth.
    public static func loadGSDC(_ folder: URL) throws -> [RecordedWalk] {
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let phones = files.filter { $0.lastPathComponent.hasSuffix("_chipset.nmea") }
        guard let span = files.first(where: { $0.lastPathComponent.hasPrefix("SPAN_") && $0.pathExtension == "nmea" }) else {
            throw ImportDataError(file: folder.path, line: 0, reason: "no SPAN_*.nmea truth track in the drive folder")
        }
        guard !phones.isEmpty else { throw ImportDataError(file: folder.path, line: 0, reason: "no *_chipset.nmea phone file in the drive folder") }
        return try phones.map { u in
            var phone = try importTrace(format: .nmea, urls: [u], options: ImportOptions(strict: true))
            var truthOptions = ImportOptions(strict: true, asTruth: true)
            truthOptions.origin = phone.header.origin
            phone = try mergeTruth(phone, try importTrace(format: .nmea, urls: [span], options: truthOptions))
            return RecordedWalk(name: folder.lastPathComponent + "/" + u.deletingPathExtension().lastPathComponent,
                                header: phone.header, events: phone.events)
        }
    }

    /// Imports a GnssLogger log of a static phone with `truth` as a `gt` event at every fix.
    public static func loadStatic(_ url: URL, truth: Geodetic) throws -> RecordedWalk {
        let t = try importTrace(format: .gnsslogger, urls: [url], options: ImportOptions(strict: true, staticTruth: truth))
        return RecordedWalk(name: url.deletingPathExtension().lastPathComponent, header: t.header, events: t.events)
    }

    /// Calibration samples of one recording (`GNSSAccuracyCalibration`): each gnss fix with truth
    /// as (reported accuracy, NEES under the uncalibrated covariance of `accuracyConfidence`).
    public static func calibrationSamples(_ walk: RecordedWalk, accuracyConfidence: Double = 0.68) -> [GNSSAccuracyCalibration.Sample] {
        let est = GNSSEstimator(accuracyConfidence: accuracyConfidence)
        var out: [GNSSAccuracyCalibration.Sample] = []
        walk.forEachEvent(withTruthIn: walk.header.frame, maxGap: 5, where: { if case .gnss = $0.payload { true } else { false } }) { e, p in
            guard case .gnss(let g) = e.payload, case .success(let f) = est.estimate(g, time: e.time, frame: walk.header.frame),
                  let s = GNSSAccuracyCalibration.Sample(fix: f, truth: p, accuracyConfidence: accuracyConfidence) else { return }
            out.append(s)
        }
        return out
    }

    /// The handset a recording comes from, for per-handset calibration: the header's device, else
    /// the recording's file name (GSDC: `Pixel4XLModded_chipset`).
    public static func handset(of walk: RecordedWalk) -> String {
        if let d = walk.header.device, !d.isEmpty { return d }
        return String(walk.name.split(separator: "/").last ?? Substring(walk.name))
    }

    /// Per-handset calibrations fitted on training recordings, plus one over all of them for
    /// handsets the training set does not have.
    public struct HandsetCalibrations: Sendable {
        public var byHandset: [String: GNSSAccuracyCalibration] = [:]
        public var pooled: GNSSAccuracyCalibration?
        /// The calibration for a test recording and what it was fitted on (nil: none could be fitted).
        public func calibration(for walk: RecordedWalk) -> (calibration: GNSSAccuracyCalibration, fittedOn: String)? {
            let h = handset(of: walk)
            if let c = byHandset[h] { return (c, h) }
            return pooled.map { ($0, "all training handsets") }
        }
    }

    public static func fitCalibrations(_ training: [RecordedWalk], accuracyConfidence: Double = 0.68,
                                       minPerBin: Int = 200) -> HandsetCalibrations {
        var samples: [String: [GNSSAccuracyCalibration.Sample]] = [:]
        for w in training { samples[handset(of: w), default: []] += calibrationSamples(w, accuracyConfidence: accuracyConfidence) }
        var out = HandsetCalibrations()
        for (h, s) in samples { out.byHandset[h] = GNSSAccuracyCalibration.fit(s, minPerBin: minPerBin)?.calibration }
        out.pooled = GNSSAccuracyCalibration.fit(samples.values.flatMap { $0 }, minPerBin: minPerBin)?.calibration
        return out
    }

    /// `stages` with the gnss stage calibrated by `c`.
    public static func stages(_ stages: [String: StageOptions], calibratedBy c: GNSSAccuracyCalibration) -> [String: StageOptions] {
        var out = stages
        var g = out["gnss"] ?? StageOptions(name: "gnss")
        g.values.merge(c.optionValues) { _, new in new }
        out["gnss"] = g
        return out
    }

    /// Replays one recording through the pipeline (`stages`, default the default pipeline) plus
    /// the smoother (unless configured) and scores it. `isStatic`: report convergence.
    public static func evaluate(_ walk: RecordedWalk, isStatic: Bool, stages: [String: StageOptions] = [:]) throws -> Recording {
        var stages = stages
        if stages["smoother"] == nil { stages["smoother"] = StageOptions(name: "smoother", values: ["enabled": .bool(true)]) }
        let pipeline = try StageRegistry.pipeline(options: stages)
        let context = PipelineContext(header: walk.header)
        let truth = TruthTrack(walk: walk, frame: walk.header.frame, maxGap: 5)
        var fixes: [Source: [Fix]] = [:]
        var accuracies: [Double] = []
        func collect(_ results: [StageResult]) {
            for r in results {
                if case .fix(let f) = r, sources.contains(f.source) { fixes[f.source, default: []].append(f) }
            }
        }
        for e in walk.events {
            if case .gnss(let g) = e.payload, g.accuracy > 0 { accuracies.append(g.accuracy) }
            collect(pipeline.process(e, context: context))
        }
        collect(pipeline.finish(context: context))
        var out = Recording(name: walk.name, sources: [:], reportedAccuracy_m: RadioStats.median(accuracies))
        for s in sources {
            var errors: [Double] = [], inside = 0, nees: [Double] = []
            var last: (Double, Double)?
            for f in fixes[s] ?? [] {
                guard let p = truth.position(at: f.time) else { continue }
                let e = norm(f.position - p)
                errors.append(e)
                if let m2 = f.covariance.mahalanobis2(f.position - p) {
                    nees.append(m2)
                    if m2 <= ChiSquare.quantile(0.95, dof: 2) { inside += 1 }
                }
                last = (e, f.covariance.circularRadius(probability: 0.95))
            }
            guard !errors.isEmpty else { continue }
            out.sources[s.rawValue] = SourceSummary(errors: ErrorSummary(errors),
                                                    inside95: nees.isEmpty ? nil : Double(inside) / Double(nees.count),
                                                    anees: RadioStats.mean(nees), finalError_m: last?.0, finalR95_m: last?.1)
        }
        out.accuracyCalibration = out.sources[Source.gnss.rawValue]?.anees.map { ($0 / 2).squareRoot() }
        if isStatic, let acc = out.reportedAccuracy_m {
            let reported95 = acc * accuracyTo95
            out.converged = [Source.ekf, .smoother].allSatisfy { s in
                guard let r = out.sources[s.rawValue], let e = r.finalError_m, let own = r.finalR95_m else { return false }
                return e <= reported95 && e <= own
            }
        }
        return out
    }
}
