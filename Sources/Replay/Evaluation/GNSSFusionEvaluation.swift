import Foundation
import Positioning
import Interop
import Survey
import Scoring

/// GNSS recordings `posfuse evaluate radio` knows besides the radio datasets.
public enum GNSSRecordingKind: String, Sendable, CaseIterable {
    /// A GSDC 2020 drive folder (`<phone>_chipset.nmea` phones, `SPAN_<phone>_1Hz.nmea` or `_10Hz` truth).
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
/// offline smoother switched on replays each recording in memory through `Replayer` (the
/// pipeline → `Scorer` path of `posfuse replay`), so every `gnss`, `ekf` and `smoother` figure
/// is the one `posfuse replay` gives on the imported trace (CLI test `evaluateRadioEqualsReplay`):
///
/// - `gsdc`: a drive folder of the Google Smartphone Decimeter Challenge 2020 layout, phones'
///   chipset fixes `<phone>_chipset.nmea`, each against its own NovAtel SPAN track (`matchTruth`;
///   epochs matched on UTC seconds, max truth gap 5 s). The chipset fixes are already filtered by the phone,
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
        /// The handset's model family (`HandsetFamilies`), the truth file scored against and how
        /// it was matched to the phone (GSDC drives).
        public var family: String?
        public var truthFile: String?
        public var truthMatch: String?
        /// Sentences kept despite a defect that leaves the data intact, per reason, in the phone's
        /// file (`phone`) and the truth file (`truth`).
        public var tolerated: [String: [String: Int]]?

        enum CodingKeys: String, CodingKey {
            case name, sources, reportedAccuracy_m = "reported_accuracy_m", converged, accuracyCalibration = "accuracy_calibration_alpha"
            case calibratedOn = "calibrated_on", family, truthFile = "truth_file", truthMatch = "truth_match", tolerated
        }
    }

    /// Android accuracy (68% radius) to a 95% radius for a circular Gaussian.
    public static let accuracyTo95 = (-2 * log(0.05)).squareRoot() / (-2 * log(0.32)).squareRoot()

    /// Sources scored.
    public static let sources: [Source] = [.gnss, .ekf, .smoother]

    /// One phone of a GSDC drive with the truth track matched to it and what the import
    /// tolerated (per reason) in the phone's file and in the truth file.
    public struct DrivePhone: Sendable {
        public var walk: RecordedWalk
        /// The phone's name (file stem before `_chipset`) and its model family.
        public var phone: String, family: String
        /// The SPAN file used as its truth.
        public var truthFile: String
        /// How the truth was matched (`name`, `family`, `only track in the folder`).
        public var truthMatch: String
        public var phoneReport: ImportReport, truthReport: ImportReport
    }

    /// Truth files of a GSDC drive folder: `SPAN_<phone>_<rate>.nmea` (NovAtel SPAN track as
    /// NMEA; rate `1Hz` or `10Hz`, `1Hz` preferred), parsed into (phone, rate, file).
    static func spanFiles(_ files: [URL]) -> [(phone: String, rate: String, url: URL)] {
        files.compactMap { u in
            let n = u.lastPathComponent
            guard n.hasPrefix("SPAN_"), u.pathExtension == "nmea" else { return nil }
            let stem = n.dropFirst(5).dropLast(5)
            guard let us = stem.lastIndex(of: "_") else { return (String(stem), "", u) }
            return (String(stem[..<us]), String(stem[stem.index(after: us)...]), u)
        }
    }

    /// The truth track of phone `phone` among `spans`: the same phone name, else the same model
    /// family (`families`), each at 1 Hz before 10 Hz before any other rate; else, when the
    /// folder's SPAN files are all of one phone, that track (one car carries every phone: the
    /// dev drive has only `SPAN_Pixel4_1Hz.nmea`). nil: several phones' tracks, none of this one.
    static func matchTruth(phone: String, spans: [(phone: String, rate: String, url: URL)], families: HandsetFamilies)
        -> (url: URL, how: String)? {
        func rank(_ r: String) -> Int { r == "1Hz" ? 0 : r == "10Hz" ? 1 : 2 }
        func best(_ c: [(phone: String, rate: String, url: URL)]) -> URL? {
            c.min { (rank($0.rate), $0.url.lastPathComponent) < (rank($1.rate), $1.url.lastPathComponent) }?.url
        }
        if let u = best(spans.filter { $0.phone == phone }) { return (u, "name") }
        let f = families.family(of: phone)
        if let u = best(spans.filter { families.family(of: $0.phone) == f }) { return (u, "family \(f)") }
        if Set(spans.map(\.phone)).count == 1, let u = best(spans) { return (u, "only track in the folder") }
        return nil
    }

    /// Imports the GSDC drive folder `folder`: one recording per `*_chipset.nmea` phone file,
    /// each against the truth track matched to it (`matchTruth`). Lenient by default: sentence
    /// defects that leave the data intact (wrong checksums, unknown talkers, missing hemisphere
    /// letters: real SPAN files have them) are counted per reason in the reports; `strict`
    /// makes them fatal (`file:line: reason`).
    public static func loadGSDCDrive(_ folder: URL, strict: Bool = false, families: HandsetFamilies = HandsetFamilies()) throws -> [DrivePhone] {
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let phones = files.filter { $0.lastPathComponent.hasSuffix("_chipset.nmea") }
        let spans = spanFiles(files)
        guard !spans.isEmpty else {
            throw ImportDataError(file: folder.path, line: 0, reason: "no SPAN_<phone>_1Hz.nmea (or _10Hz) truth track in the drive folder")
        }
        guard !phones.isEmpty else { throw ImportDataError(file: folder.path, line: 0, reason: "no *_chipset.nmea phone file in the drive folder") }
        return try phones.map { u in
            let phone = String(u.lastPathComponent.dropLast("_chipset.nmea".count))
            guard let truth = matchTruth(phone: phone, spans: spans, families: families) else {
                throw ImportDataError(file: folder.path, line: 0, reason: "no truth track for phone \(phone): expected SPAN_\(phone)_1Hz.nmea "
                                      + "(or _10Hz, or a phone of family \(families.family(of: phone))) among "
                                      + spans.map(\.url.lastPathComponent).joined(separator: ", "))
            }
            let p = try importTrace(format: .nmea, urls: [u], options: ImportOptions(strict: strict))
            var truthOptions = ImportOptions(strict: strict, asTruth: true)
            truthOptions.origin = p.header.origin
            let t = try importTrace(format: .nmea, urls: [truth.url], options: truthOptions)
            let merged = try mergeTruth(p, t)
            return DrivePhone(walk: RecordedWalk(name: folder.lastPathComponent + "/" + u.deletingPathExtension().lastPathComponent,
                                                 header: merged.header, events: merged.events),
                              phone: phone, family: families.family(of: phone), truthFile: truth.url.lastPathComponent,
                              truthMatch: truth.how, phoneReport: p.report, truthReport: t.report)
        }
    }

    /// The recordings of `loadGSDCDrive`.
    public static func loadGSDC(_ folder: URL, strict: Bool = false, families: HandsetFamilies = HandsetFamilies()) throws -> [RecordedWalk] {
        try loadGSDCDrive(folder, strict: strict, families: families).map(\.walk)
    }

    /// Imports a GnssLogger log of a static phone with `truth` as a `gt` event at every fix.
    public static func loadStatic(_ url: URL, truth: Geodetic, strict: Bool = false) throws -> RecordedWalk {
        let t = try importTrace(format: .gnsslogger, urls: [url], options: ImportOptions(strict: strict, staticTruth: truth))
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

    /// The handset family a recording comes from, for per-family calibration: the header's
    /// device, else the recording's file name (GSDC: `Pixel4XLModded_chipset`), normalised by
    /// `families` (→ `Pixel4XL`).
    public static func handset(of walk: RecordedWalk, families: HandsetFamilies = HandsetFamilies()) -> String {
        if let d = walk.header.device, !d.isEmpty { return families.family(of: d) }
        return families.family(of: String(walk.name.split(separator: "/").last ?? Substring(walk.name)))
    }

    /// Per-family calibrations fitted on training recordings, plus one over all of them for
    /// families the training set does not have.
    public struct HandsetCalibrations: Sendable {
        public var byHandset: [String: GNSSAccuracyCalibration] = [:]
        public var pooled: GNSSAccuracyCalibration?
        public var families = HandsetFamilies()
        /// The calibration for a test recording and what it was fitted on (nil: none could be fitted).
        public func calibration(for walk: RecordedWalk) -> (calibration: GNSSAccuracyCalibration, fittedOn: String)? {
            let h = handset(of: walk, families: families)
            if let c = byHandset[h] { return (c, h) }
            return pooled.map { ($0, "all training handsets") }
        }
    }

    public static func fitCalibrations(_ training: [RecordedWalk], accuracyConfidence: Double = 0.68,
                                       minPerBin: Int = 200, families: HandsetFamilies = HandsetFamilies()) -> HandsetCalibrations {
        var samples: [String: [GNSSAccuracyCalibration.Sample]] = [:]
        for w in training { samples[handset(of: w, families: families), default: []] += calibrationSamples(w, accuracyConfidence: accuracyConfidence) }
        var out = HandsetCalibrations(families: families)
        for (h, s) in samples { out.byHandset[h] = GNSSAccuracyCalibration.fit(s, minPerBin: minPerBin)?.calibration }
        out.pooled = GNSSAccuracyCalibration.fit(samples.values.flatMap { $0 }, minPerBin: minPerBin)?.calibration
        return out
    }

    /// A training recording for `GNSSErrorModel.fit`: its family (`handset`) and the NEES of its
    /// fixes under the phone's own covariance.
    /// Also each fix's error over its own σ per axis, with its time, for the error correlation, and
    /// the error of each reported velocity (`GNSSFix.velocity`) against the truth's velocity L s
    /// earlier for each L of `GNSSErrorModel.velocityLatencies`: the difference
    /// p(t − L + 0.5 s) − p(t − L − 0.5 s) over 1 s of the truth track (linear between its samples,
    /// none across a gap over 5 s). None when the truth never moves more than 5 cm in 1 s (a static
    /// receiver's speed-0 reports carry no information on a moving receiver's velocity noise).
    public static func errorModelRecording(_ walk: RecordedWalk, accuracyConfidence: Double = 0.68,
                                           families: HandsetFamilies = HandsetFamilies()) -> GNSSErrorModel.Recording {
        let est = GNSSEstimator(accuracyConfidence: accuracyConfidence)
        var nees: [Double] = [], z: [(time: Double, error: SIMD2<Double>)] = []
        var ev = [[(time: Double, error: SIMD2<Double>)]](repeating: [], count: GNSSErrorModel.velocityLatencies.count)
        var truths: [String: TruthTrack] = [:]
        var truthMoves = false
        walk.forEachEvent(withTruthIn: walk.header.frame, maxGap: 5, where: { if case .gnss = $0.payload { true } else { false } }) { e, p in
            guard case .gnss(let g) = e.payload, case .success(let f) = est.estimate(g, time: e.time, frame: walk.header.frame),
                  let s = GNSSAccuracyCalibration.Sample(fix: f, truth: p, accuracyConfidence: accuracyConfidence) else { return }
            nees.append(s.nees)
            z.append((e.time, (f.position - p) / f.covariance.ee.squareRoot()))
            if let v = g.velocity {
                if truths[e.device] == nil { truths[e.device] = TruthTrack(walk: walk, frame: walk.header.frame, subject: e.device, maxGap: 5) }
                for (k, lag) in GNSSErrorModel.velocityLatencies.enumerated() {
                    let t = e.time - lag
                    if let a = truths[e.device]!.position(at: t - 0.5), let b = truths[e.device]!.position(at: t + 0.5) {
                        ev[k].append((e.time, v - (b - a)))
                        truthMoves = truthMoves || ((b - a) * (b - a)).sum() > 0.05 * 0.05
                    }
                }
            }
        }
        // A recording whose truth never moves (a surveyed point: a static logger) gives no velocity
        // errors: a receiver at rest reports speed 0 exactly (static hold), which says nothing about
        // the velocity noise of a moving one, and would pull the family's and the pooled σ_v to ~0.
        if !truthMoves { ev = ev.map { _ in [] } }
        return GNSSErrorModel.Recording(family: handset(of: walk, families: families), nees: nees, normalizedErrors: z, velocityErrors: ev)
    }

    /// The GNSS error model fitted on training recordings (`GNSSErrorModel.fit`).
    public static func fitErrorModel(_ training: [RecordedWalk], accuracyConfidence: Double = 0.68,
                                     families: HandsetFamilies = HandsetFamilies(), provenance: String = "") -> GNSSErrorModel? {
        GNSSErrorModel.fit(training.map { errorModelRecording($0, accuracyConfidence: accuracyConfidence, families: families) },
                           provenance: provenance)
    }

    /// `stages` with the gnss stage told the recording's handset family (the error model's key)
    /// and, unless they set one, the shipped error model.
    public static func stages(_ stages: [String: StageOptions], family: String) -> [String: StageOptions] {
        var out = stages
        var g = out["gnss"] ?? StageOptions(name: "gnss")
        if g.values[GNSSErrorModel.familyOption] == nil { g.values[GNSSErrorModel.familyOption] = .string(family) }
        if g.values[GNSSErrorModel.option] == nil { g.values[GNSSErrorModel.option] = .string("shipped") }
        out["gnss"] = g
        return out
    }

    /// `stages` with a fitted error model `m` applied to a phone of `family` as pipeline options,
    /// the same a user would write: the gnss stage calibrated by the family's (or pooled) factor
    /// with no other error model and the model's velocity noise and latency for that family
    /// (`velocity_sigma_mps`, 0 when it has none; `velocity_latency_s`), and the ekf's and smoother's GNSS bias block given the model's
    /// error correlation for that family (`gnss_bias_fraction`, `gnss_bias_tau_s`) unless set.
    public static func stages(_ stages: [String: StageOptions], model m: GNSSErrorModel, family: String) -> [String: StageOptions] {
        var out = self.stages(stages, calibratedBy: m.calibration(forFamily: family))
        out["gnss"]!.values[GNSSErrorModel.option] = .string("none")
        let v = m.velocity(forFamily: family)
        if out["gnss"]!.values[GNSSErrorModel.velocitySigmaOption] == nil {
            out["gnss"]!.values[GNSSErrorModel.velocitySigmaOption] = .number(v?.sigma ?? 0)
        }
        if out["gnss"]!.values[GNSSErrorModel.velocityLatencyOption] == nil {
            out["gnss"]!.values[GNSSErrorModel.velocityLatencyOption] = .number(v?.latency ?? 0)
        }
        guard let c = m.correlation(forFamily: family) else { return out }
        for name in ["ekf", "smoother"] {
            var o = out[name] ?? StageOptions(name: name, values: name == "smoother" ? ["enabled": .bool(true)] : [:])
            if o.values["gnss_bias_fraction"] == nil { o.values["gnss_bias_fraction"] = .number(c.biasFraction) }
            if o.values["gnss_bias_tau_s"] == nil { o.values["gnss_bias_tau_s"] = .number(c.correlationTime) }
            out[name] = o
        }
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
        // The one path from events to scores: `Replayer` (pipeline → `Scorer`, truth interpolated
        // with the replay's 5 s gap rule), so these figures are what `posfuse replay` gives.
        let replayer = Replayer(options: ReplayOptions(stages: stages))
        var last: [Source: (error: Double, r95: Double)] = [:]
        replayer.onEstimate = { e in
            guard Self.sources.contains(e.fix.source), let err = e.error else { return }
            last[e.fix.source] = (err, e.fix.covariance.circularRadius(probability: 0.95))
        }
        let result = try replayer.run(header: walk.header, events: walk.events, name: walk.name)
        var accuracies: [Double] = []
        for e in walk.events { if case .gnss(let g) = e.payload, g.accuracy > 0 { accuracies.append(g.accuracy) } }
        var out = Recording(name: walk.name, sources: [:], reportedAccuracy_m: RadioStats.median(accuracies))
        for s in sources {
            guard let st = result.scores.score(s.rawValue)?.statistics else { continue }
            out.sources[s.rawValue] = SourceSummary(errors: ErrorSummary(st), inside95: st.inside95, anees: st.anees,
                                                    finalError_m: last[s]?.error,
                                                    // nil, not NaN, for a covariance without a 95 % radius (a broken
                                                    // filter state): `--json` cannot encode NaN and exited on it.
                                                    finalR95_m: last[s].flatMap { $0.r95.isFinite ? $0.r95 : nil })
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
