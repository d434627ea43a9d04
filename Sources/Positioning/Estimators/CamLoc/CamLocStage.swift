import Foundation

/// Pipeline stage `camloc`: pairs each phone's photos (`pair` id, else the object id),
/// measures the displacement between the shots, takes the user's position from upstream
/// fixes, and emits the object's position (`CamLocEstimator`).
///
/// * Displacement: IMU integration with the zero-velocity correction (`IMUDisplacement`)
///   when `acc` samples cover the interval — attitude from `rotvec`, else strapdown from
///   `gyro` + `mag` (TRIAD at shot 1) — σ_d = √((rel·|d|)² + abs²);
///   otherwise steps × step length (event `len`, else `step_length_m`) along the camera
///   axis, σ_d = 10 %; otherwise `.failure(missingInput)`.
/// * User position at shot 2: the upstream fix (source in `userSources`) nearest in time to
///   the second shot, within `user_max_age_s`; if it is nearer the first shot, the
///   displacement is added.
/// * Camera azimuth: the photo's magnetic azimuth + header declination; else from the
///   attitude quaternion at exposure (back camera looks along −z_device).
/// * Output: `.fix` with subject "object:<id>"; when the object is a landmark of the
///   reference data, a `RangeBearingMeasurement` for the phone (and, with
///   `emit_user_fix`, a `camloc` fix of the phone located from the landmark).
public final class CamLocStage: PipelineStage {
    public var estimator: CamLocEstimator
    public var userSources: Set<Source>
    public var userMaxAge: Double
    public var stepLength: Double
    public var displacementSigmaRelative: Double
    public var displacementSigmaAbsolute: Double
    public var emitUserFix: Bool

    /// One phone's sample buffers. A buffer is never empty once appended to (`buffer`, `prune`
    /// keep the newest), so an empty one means "no such sample yet" (`nonEmpty`).
    private final class DeviceBuffers {
        var acc: [(Double, SIMD3<Double>)] = []
        var att: [(Double, SIMD4<Double>)] = []
        var gyro: [(Double, SIMD3<Double>)] = []
        var mag: [(Double, SIMD3<Double>)] = []
        var steps: [(Double, Double?)] = []
    }
    private var devices: [String: DeviceBuffers] = [:]
    /// The last device's buffers: a 100 Hz IMU stream of one phone skips the hash look-up
    /// (measured with callgrind: 310 instructions per event for the look-up alone).
    private var lastDevice: (String, DeviceBuffers)?
    private var userFixes: [String: [Fix]] = [:]
    private var pending: [String: [(Double, PhotoObservation)]] = [:]
    /// Solutions so far (range, bearing, relative σ) for reports and tests.
    public private(set) var solutions: [CamLocSolution] = []
    /// Buffer horizon, s.
    private let horizon = 60.0

    public init(estimator: CamLocEstimator = CamLocEstimator(), userSources: Set<Source> = [.gnss],
                userMaxAge: Double = 10, stepLength: Double = 0.7, displacementSigmaRelative: Double = 0.05,
                displacementSigmaAbsolute: Double = 0.02, emitUserFix: Bool = false) {
        self.estimator = estimator; self.userSources = userSources; self.userMaxAge = userMaxAge
        self.stepLength = stepLength; self.displacementSigmaRelative = displacementSigmaRelative
        self.displacementSigmaAbsolute = displacementSigmaAbsolute; self.emitUserFix = emitUserFix
    }

    /// The `camloc` options (model: docs/acoustic-camloc.md).
    public enum Options {
        public static let userSources = OptionSpec.sources("user_sources", ["gnss"], "sources of the user's own position")
        public static let userMaxAge = OptionSpec.number("user_max_age_s", 10, unit: "s")
        public static let stepLength = OptionSpec.number("step_length_m", 0.7, unit: "m", "displacement by steps when the IMU cannot integrate it")
        public static let displacementSigmaRelative = OptionSpec.number("displacement_sigma_rel", 0.05, "relative σ of the displacement")
        public static let displacementSigmaAbsolute = OptionSpec.number("displacement_sigma_m", 0.02, unit: "m", "absolute σ of the displacement")
        public static let pixelSigma = OptionSpec.number("pixel_sigma", 1, unit: "px", "σ of the object's image size")
        public static let headingSigma = OptionSpec.number("heading_sigma_deg", 5, unit: "deg", "compass σ")
        public static let minRatioExcess = OptionSpec.number("min_ratio_excess", 0.01, advanced: true, "scale ratio must differ from 1 by this")
        public static let minPixelChange = OptionSpec.number("min_pixel_change", 2, unit: "px", advanced: true)
        public static let minDisplacement = OptionSpec.number("min_displacement_m", 0.1, unit: "m", "below: `zeroDisplacement`")
        public static let minAxialFraction = OptionSpec.number("min_axial_fraction", 0.5, advanced: true, "below: lateral-only motion")
        public static let lensFocal = OptionSpec.number("lens_focal_mm", 0, unit: "mm", advanced: true, "0 = use the focal length in pixels")
        public static let emitUserFix = OptionSpec.bool("emit_user_fix", false)
        public static let table = OptionTable(stage: "camloc", doc: "object position from two photos", options: [
            userSources, userMaxAge, stepLength, displacementSigmaRelative, displacementSigmaAbsolute, pixelSigma, headingSigma,
            minRatioExcess, minPixelChange, minDisplacement, minAxialFraction, lensFocal, emitUserFix,
        ])
    }

    /// Build from pipeline options (`Options`).
    public convenience init(options o: StageOptions) throws {
        let sources = Set(try o.sourceList(Options.userSources))
        let est = CamLocEstimator(sigmaPixels: try o.double(Options.pixelSigma),
                                  sigmaHeadingDegrees: try o.double(Options.headingSigma),
                                  minRatioExcess: try o.double(Options.minRatioExcess),
                                  minPixelChange: try o.double(Options.minPixelChange),
                                  minDisplacement: try o.double(Options.minDisplacement),
                                  minAxialFraction: try o.double(Options.minAxialFraction),
                                  lensFocalMeters: try o.double(Options.lensFocal) / 1000)
        self.init(estimator: est, userSources: sources, userMaxAge: try o.double(Options.userMaxAge),
                  stepLength: try o.double(Options.stepLength),
                  displacementSigmaRelative: try o.double(Options.displacementSigmaRelative),
                  displacementSigmaAbsolute: try o.double(Options.displacementSigmaAbsolute),
                  emitUserFix: try o.bool(Options.emitUserFix))
    }

    public var sources: [Source] { [.camloc] }
    /// The sample buffers, user fixes, pending photos and solutions (the public `var`s are configuration).
    /// Upstream, only the user's fixes (`userSources`).
    public func readsPositionMeasurements(of source: Source) -> Bool { false }
    public func reset() {
        devices = [:]; lastDevice = nil; userFixes = [:]; pending = [:]; solutions = []
    }
    public func fresh() -> any PipelineStage {
        CamLocStage(estimator: estimator, userSources: userSources, userMaxAge: userMaxAge, stepLength: stepLength,
                    displacementSigmaRelative: displacementSigmaRelative, displacementSigmaAbsolute: displacementSigmaAbsolute,
                    emitUserFix: emitUserFix)
    }

    /// Appends a sample and prunes (`prune`, limit 20,000) with one dictionary access per sample.
    @inline(__always)
    private static func buffer<T>(_ a: inout [(Double, T)], _ sample: (Double, T), _ horizon: Double) {
        a.append(sample)
        prune(&a, limit: 20_000) { $0.0 < sample.0 - horizon }
    }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        let dev = event.device
        for r in upstream {
            if case .fix(let f) = r, userSources.contains(f.source), !Subject.isObject(f.subject) {
                userFixes[f.subject, default: []].append(f)
                Self.prune(&userFixes[f.subject]!, limit: 256) { $0.time < f.time - horizon }
            }
        }
        switch event.payload {
        // The buffer is modified in place.
        case .imu(let s) where s.kind == .accelerometer: let b = buffers(dev); Self.buffer(&b.acc, (event.time, s.vector), horizon)
        case .imu(let s) where s.kind == .gyroscope: let b = buffers(dev); Self.buffer(&b.gyro, (event.time, s.vector), horizon)
        case .imu(let s) where s.kind == .magnetometer: let b = buffers(dev); Self.buffer(&b.mag, (event.time, s.vector), horizon)
        case .imu(let s) where s.kind == .rotationVector:
            let b = buffers(dev); Self.buffer(&b.att, (event.time, SIMD4(s.x, s.y, s.z, s.w)), horizon)
        case .step(let s):
            let b = buffers(dev)
            b.steps.append((event.time, s.length))
            Self.prune(&b.steps, limit: 256) { $0.0 < event.time - horizon }
        case .photo(let p):
            let key = dev + "|" + (p.pair ?? p.object)
            pending[key, default: []].append((p.exposureTime ?? event.time, p))
            if pending[key]!.count >= 2 {
                let shots = pending.removeValue(forKey: key)!.sorted { $0.0 < $1.0 }
                return solve(shots[0], shots[shots.count - 1], device: dev, context: context)
            }
        default: break
        }
        return []
    }

    private func buffers(_ dev: String) -> DeviceBuffers {
        if let (d, b) = lastDevice, d == dev { return b }
        let b: DeviceBuffers
        if let known = devices[dev] { b = known } else { b = DeviceBuffers(); devices[dev] = b }
        lastDevice = (dev, b)
        return b
    }

    /// A device's buffer, nil when it has had no such sample (as a per-sensor dictionary gave it).
    private static func nonEmpty<T>(_ a: [T]?) -> [T]? { a.flatMap { $0.isEmpty ? nil : $0 } }
    private func acc(_ dev: String) -> [(Double, SIMD3<Double>)]? { Self.nonEmpty(devices[dev]?.acc) }
    private func att(_ dev: String) -> [(Double, SIMD4<Double>)]? { Self.nonEmpty(devices[dev]?.att) }
    private func gyro(_ dev: String) -> [(Double, SIMD3<Double>)]? { Self.nonEmpty(devices[dev]?.gyro) }
    private func mag(_ dev: String) -> [(Double, SIMD3<Double>)]? { Self.nonEmpty(devices[dev]?.mag) }
    private func steps(_ dev: String) -> [(Double, Double?)]? { Self.nonEmpty(devices[dev]?.steps) }

    /// Drops entries older than the horizon once a buffer exceeds `limit`, then keeps at most
    /// the `limit / 2` newest. Amortised O(1) per append, and memory stays bounded when many
    /// entries share one time (a trace whose events all carry one `t` was quadratic: every
    /// append rescanned every buffered entry). Consumers select entries by time, so entries
    /// older than the horizon that are still buffered change no result.
    private static func prune<T>(_ a: inout [T], limit: Int, older: (T) -> Bool) {
        guard a.count > limit else { return }
        a.removeAll(where: older)
        if a.count > limit / 2 { a.removeFirst(a.count - limit / 2) }
    }

    /// Camera optical-axis azimuth (true, rad) from the attitude at t: R·(0, 0, −1).
    private func attitudeAzimuth(_ dev: String, at t: Double) -> Double? {
        guard let a = att(dev), !a.isEmpty else { return nil }
        let q = (a.last { $0.0 <= t } ?? a[0]).1
        let v = IMUDisplacement.rotate(SIMD3(0, 0, -1), by: q)
        guard v.x * v.x + v.y * v.y > 1e-6 else { return nil }
        return atan2(v.x, v.y)
    }

    private func solve(_ s1: (Double, PhotoObservation), _ s2: (Double, PhotoObservation), device dev: String,
                       context: PipelineContext) -> [StageResult] {
        let (t1, p1) = s1, (t2, p2) = s2
        let subject = Subject.object(p2.object).id
        func fail(_ f: EstimationFailure) -> [StageResult] { [.failure(source: .camloc, time: t2, subject: subject, reason: f)] }
        var azimuths: (Double, Double)?
        if p1.cameraAzimuthMagnetic == nil || p2.cameraAzimuthMagnetic == nil,
           let a1 = attitudeAzimuth(dev, at: t1), let a2 = attitudeAzimuth(dev, at: t2) { azimuths = (a1, a2) }
        // Displacement.
        let disp: SIMD3<Double>, sigmaD: Double
        let a = acc(dev) ?? []
        let covered = a.contains(where: { $0.0 <= t1 + 0.05 }) && a.contains(where: { $0.0 >= t2 - 0.05 })
        var imu: SIMD3<Double>?
        if covered, let q = att(dev) {
            imu = IMUDisplacement.displacement(accelerometer: a, attitude: q, from: t1, to: t2)
        }
        if imu == nil, covered, let g = gyro(dev), let m = mag(dev) {
            imu = IMUDisplacement.displacement(accelerometer: a, gyroscope: g, magnetometer: m,
                                               declinationDegrees: context.header.declination, from: t1, to: t2)
        }
        if let d = imu {
            disp = d
            let n = (d.x * d.x + d.y * d.y).squareRoot()
            sigmaD = ((displacementSigmaRelative * n) * (displacementSigmaRelative * n)
                      + displacementSigmaAbsolute * displacementSigmaAbsolute).squareRoot()
        } else if let st = steps(dev)?.filter({ $0.0 > t1 && $0.0 <= t2 }), !st.isEmpty {
            let len = st.reduce(0) { $0 + ($1.1 ?? stepLength) }
            let psi: Double
            if let a1 = p1.cameraAzimuthMagnetic { psi = Angle.radians(a1 + context.header.declination) }
            else if let az = azimuths { psi = az.0 } else { return fail(.noHeading) }
            let u = Angle.unit(psi)
            disp = SIMD3(len * u.x, len * u.y, 0); sigmaD = 0.1 * len
        } else {
            return fail(.missingInput("displacement between photos (acc + rotvec, or steps)"))
        }
        // User position at shot 2.
        guard let fixes = userFixes[dev], let nearest = fixes.min(by: { abs($0.time - t2) < abs($1.time - t2) }),
              abs(nearest.time - t2) <= userMaxAge else {
            return fail(.missingInput("user position near the photos (\(userSources.map(\.rawValue).sorted().joined(separator: ",")))"))
        }
        var user = nearest
        if abs(nearest.time - t1) < abs(nearest.time - t2) { user.position += SIMD2(disp.x, disp.y) }
        switch estimator.estimate(first: p1, second: p2, displacement: disp, displacementSigma: sigmaD, user: user,
                                  declination: context.header.declination, cameraAzimuths: azimuths, time: t2) {
        case .failure(let f): return fail(f)
        case .success(let s):
            solutions.append(s)
            var out: [StageResult] = [.fix(s.fix)]
            if let lm = context.reference.landmarks[p2.object] {
                let l = SIMD2(lm.position.x, lm.position.y)
                let sigPsi = (Angle.radians(estimator.sigmaHeadingDegrees) * Angle.radians(estimator.sigmaHeadingDegrees)
                              + (estimator.sigmaPixels / p2.focalLength) * (estimator.sigmaPixels / p2.focalLength)).squareRoot()
                let m = RangeBearingMeasurement(time: t2, landmark: l, range: s.range, bearing: s.bearing,
                                                sigmaRange: s.relativeRangeSigma * s.range, sigmaBearing: sigPsi)
                out.append(.measurement(m, subject: dev))
                if emitUserFix {
                    let off = s.geometry.offsetCovariance(sigmaH: estimator.sigmaPixels, sigmaD: sigmaD,
                                                          sigmaAzimuth: Angle.radians(estimator.sigmaHeadingDegrees),
                                                          sigmaX: estimator.sigmaPixels)
                    out.append(.fix(Fix(time: t2, position: l - s.geometry.offset, covariance: off, source: .camloc,
                                        subject: dev, usedCount: 2)))
                }
            }
            return out
        }
    }
}
