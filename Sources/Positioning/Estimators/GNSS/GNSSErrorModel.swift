import Foundation

/// The GNSS error model posfuse applies by default to every phone's fix (docs/radio.md, "The
/// shipped GNSS error model"): a factor α on the σ derived from the phone's reported accuracy,
/// one per handset *family* (`HandsetFamilies`) the training recordings had, and a pooled one
/// for every other phone (a simulated phone included).
///
/// **Heavy tails: a phone's error changes between days.** Each training recording i gives the
/// NEES of its fixes under the phone's own covariance (σ = r / 1.5096, `GNSSEstimator`). On a new
/// day the same phone's errors are those of a training day scaled by an unknown day factor δ,
/// ln δ ~ N(0, s²) (the same phone's error-to-reported-accuracy ratio changes between days: the
/// two GnssLogger logs of one static phone differ 2.1× in it; a held-back drive is said to double
/// a phone's error). The predictive coverage of a factor α over a set of recordings R is
///
///     C(α) = (1/|R|) Σᵢ E_δ[ Fᵢ(α² χ²₂,₀.₉₅ / δ²) ],
///
/// with Fᵢ the empirical CDF of recording i's NEES (each recording weighted equally, as one
/// phone-day) and E_δ a 161-point normal quadrature over ±4 s. α solves C(α) = 0.95 (bisection in
/// ln α), so the truth falls inside the 95 % ellipse 95 % of the time *over days and phones*,
/// not on the training day: on the training day itself the model is deliberately wide. This is
/// the GNSS counterpart of the cell coverage areas' Student-t predictive (a scale mixture mapped
/// to the equal-95 % Gaussian covariance). The quantile, not a mean, sets α, so multipath tails
/// count at the level the 95 % region is judged.
///
/// - family entry: R = that family's recordings;
/// - pooled entry (a phone the model has not met): R = all recordings — a random phone-day;
/// - s: the within-family standard deviation of ln α₉₅ᵢ over families with ≥ 2 recordings
///   (α₉₅ᵢ = √(q₀.₉₅(NEESᵢ) / χ²₂,₀.₉₅), pooled variance with Σ(n_f − 1) degrees of freedom);
///   without such a family, the standard deviation over all recordings (between phones stands
///   in for between days); with one recording, 0.
///
/// **Online part.** The filters' `AccuracyScale` widens R further when the fixes disagree with
/// the motion model and other evidence (NIS-driven), and the GNSS bias states carry the error
/// the fixes share (docs/fusion.md).
public struct GNSSErrorModel: Sendable, Equatable, Codable {
    public struct Entry: Sendable, Equatable, Codable {
        /// α, factor on the per-axis σ from the reported accuracy.
        public var factor: Double
        public var recordings: Int
        public var fixes: Int
        /// β and τ of the fixes' error (`fitCorrelation`), handed to the filters' GNSS bias block
        /// with every fix; nil (a model file without them, or too short recordings): the filter's defaults.
        public var correlation: ErrorCorrelation?
        /// σ_v, per-axis noise of the receiver's reported velocity (m/s, `fitVelocitySigma`), and the
        /// number of fixes with a velocity it was fitted on; nil: the training recordings report no velocity.
        public var velocitySigma: Double?
        public var velocityFixes: Int?
        /// L, s: the reported velocity is the motion L s before the fix's time (`fitVelocity`); nil = 0.
        public var velocityLatency: Double?
        /// g, the integrated autocorrelation of the velocity error (σ_v above already includes √g).
        public var velocityCorrelationIntegral: Double?
        enum CodingKeys: String, CodingKey {
            case factor, recordings, fixes, correlation, velocitySigma = "velocity_sigma_mps", velocityFixes = "velocity_fixes"
            case velocityLatency = "velocity_latency_s", velocityCorrelationIntegral = "velocity_correlation_integral"
        }
        public init(factor: Double, recordings: Int, fixes: Int, correlation: ErrorCorrelation? = nil,
                    velocitySigma: Double? = nil, velocityFixes: Int? = nil, velocityLatency: Double? = nil,
                    velocityCorrelationIntegral: Double? = nil) {
            self.factor = factor; self.recordings = recordings; self.fixes = fixes; self.correlation = correlation
            self.velocitySigma = velocitySigma; self.velocityFixes = velocityFixes; self.velocityLatency = velocityLatency
            self.velocityCorrelationIntegral = velocityCorrelationIntegral
        }
    }
    /// Per handset family.
    public var families: [String: Entry]
    /// For every family not in `families`.
    public var pooled: Entry
    /// s, the between-day standard deviation of ln α.
    public var daySpread: Double
    /// What the model was fitted on and how (kept in the shipped file).
    public var provenance: String

    enum CodingKeys: String, CodingKey { case families, pooled, daySpread = "day_spread_log_sd", provenance }

    public init(families: [String: Entry], pooled: Entry, daySpread: Double, provenance: String) {
        self.families = families; self.pooled = pooled; self.daySpread = daySpread; self.provenance = provenance
    }

    /// α for a family, and which entry gave it (the family, or "pooled").
    public func factor(forFamily f: String) -> (factor: Double, entry: String) {
        if let e = families[f] { return (e.factor, f) }
        return (pooled.factor, "pooled")
    }

    /// The error correlation of a family's fixes (the family's entry, else the pooled one).
    public func correlation(forFamily f: String) -> ErrorCorrelation? {
        (families[f] ?? pooled).correlation
    }

    /// σ_v and latency L of a family's reported velocity: the family's entry's when it has a σ_v,
    /// else (a family the model has not met, or one whose training recordings report no velocity)
    /// the pooled one's; nil: none.
    public func velocity(forFamily f: String) -> (sigma: Double, latency: Double)? {
        let e = families[f]?.velocitySigma != nil ? families[f]! : pooled
        return e.velocitySigma.map { ($0, e.velocityLatency ?? 0) }
    }

    /// The calibration applied to a family's fixes (one bin).
    public func calibration(forFamily f: String) -> GNSSAccuracyCalibration {
        GNSSAccuracyCalibration(edges: [], factors: [factor(forFamily: f).factor])!
    }

    /// One training recording: its family, the NEES of its fixes under the phone's own covariance
    /// and, for the error correlation, each fix's time (s) and error over its own σ per axis
    /// ((ê − e)/σ, E and N; empty: no correlation from this recording).
    public struct Recording: Sendable {
        public var family: String
        public var nees: [Double]
        public var normalizedErrors: [(time: Double, error: SIMD2<Double>)]
        /// Error of each reported velocity against the truth's velocity L s earlier, for each L of
        /// `velocityLatencies` (m/s, E and N; empty: none reported).
        public var velocityErrors: [[(time: Double, error: SIMD2<Double>)]]
        public init(family: String, nees: [Double], normalizedErrors: [(time: Double, error: SIMD2<Double>)] = [],
                    velocityErrors: [[(time: Double, error: SIMD2<Double>)]] = []) {
            self.family = family; self.nees = nees.filter { $0.isFinite && $0 >= 0 }
            self.normalizedErrors = normalizedErrors.filter { $0.time.isFinite && $0.error.x.isFinite && $0.error.y.isFinite }
            self.velocityErrors = velocityErrors.map { $0.filter { $0.time.isFinite && $0.error.x.isFinite && $0.error.y.isFinite } }
        }
    }

    // MARK: error correlation

    /// Lags (s) at which the autocorrelation is measured for `fitCorrelation`.
    public static let correlationLags: [Double] = [1, 2, 5, 10, 20, 30, 60]

    /// Autocorrelation of a recording's normalised errors at lag `lag` s: Σ zᵢ·zⱼ / Σ|z|² over the
    /// pairs exactly `lag` apart (±0.25 s), both axes; nil with fewer than 20 pairs. Uncentred:
    /// the model's bias is zero-mean over phones and days, so a recording's mean error is part of it.
    public static func autocorrelation(_ z: [(time: Double, error: SIMD2<Double>)], lag: Double) -> Double? {
        guard z.count > 1 else { return nil }
        let v0 = z.reduce(0.0) { $0 + ($1.error * $1.error).sum() } / Double(z.count)
        guard v0 > 0 else { return nil }
        var byTime: [Int64: Int] = [:]
        for (i, p) in z.enumerated() { byTime[Int64((p.time * 4).rounded())] = i }
        var s = 0.0, n = 0
        for p in z {
            guard let j = byTime[Int64(((p.time + lag) * 4).rounded())] else { continue }
            s += (p.error * z[j].error).sum(); n += 1
        }
        return n >= 20 ? s / Double(n) / v0 : nil
    }

    /// β and τ of a group of recordings: the autocorrelation ρ(ℓ) at `correlationLags`, averaged
    /// over the recordings (each one phone-day, weighted equally), fitted by least squares as
    /// ln ρ(ℓ) = ln β − ℓ/τ over the lags with ρ > 0.05 (the first-order Gauss–Markov bias plus white
    /// noise of `GNSSBias`: the white part decorrelates within one fix interval, so β is the
    /// extrapolation of ρ to lag 0⁺ and τ its decay). β is kept in [0.5, 0.99] (at 0.99 the filter
    /// still sees 1 % white noise and stays well conditioned), τ in [5, 3600] s. nil with fewer
    /// than two usable lags.
    public static func fitCorrelation(_ recordings: [[(time: Double, error: SIMD2<Double>)]]) -> ErrorCorrelation? {
        var curve: [(lag: Double, rho: Double)] = []
        for lag in correlationLags {
            let r = recordings.compactMap { autocorrelation($0, lag: lag) }
            guard !r.isEmpty else { continue }
            curve.append((lag, r.reduce(0, +) / Double(r.count)))
        }
        return ErrorCorrelation.fit(curve)
    }

    static let chi2_95 = -2 * log(0.05)

    /// α₉₅ of one recording: the factor giving inside95 = 0.95 on its own fixes.
    public static func alpha95(_ nees: [Double]) -> Double? {
        let s = nees.sorted()
        guard !s.isEmpty else { return nil }
        let q = s[min(s.count - 1, Int((0.95 * Double(s.count)).rounded(.down)))]
        return max(q / chi2_95, 1e-12).squareRoot()
    }

    /// s from the recordings (above); nil when there is nothing to estimate it from.
    public static func daySpread(_ recordings: [Recording]) -> Double? {
        let a = recordings.compactMap { r in alpha95(r.nees).map { (r.family, log($0)) } }
        let groups = Dictionary(grouping: a, by: \.0).values.filter { $0.count >= 2 }
        let dof = groups.reduce(0) { $0 + $1.count - 1 }
        if dof > 0 {
            let ss = groups.reduce(0.0) { acc, g in
                let m = g.reduce(0.0) { $0 + $1.1 } / Double(g.count)
                return acc + g.reduce(0.0) { $0 + ($1.1 - m) * ($1.1 - m) }
            }
            return (ss / Double(dof)).squareRoot()
        }
        guard a.count >= 2 else { return a.isEmpty ? nil : 0 }
        let m = a.reduce(0.0) { $0 + $1.1 } / Double(a.count)
        return (a.reduce(0.0) { $0 + ($1.1 - m) * ($1.1 - m) } / Double(a.count - 1)).squareRoot()
    }

    /// Predictive coverage C(α) of the 95 % ellipse over `recordings` with day spread s.
    public static func coverage(_ alpha: Double, recordings: [[Double]], daySpread s: Double) -> Double {
        let sorted = recordings.filter { !$0.isEmpty }.map { $0.sorted() }
        guard !sorted.isEmpty else { return .nan }
        let n = 161
        var total = 0.0, wsum = 0.0
        for k in 0..<n {
            let z = -4 + 8 * Double(k) / Double(n - 1)
            let w = exp(-z * z / 2)
            let bound = alpha * alpha * chi2_95 / exp(2 * s * z)
            var c = 0.0
            for r in sorted {
                // upper bound: count of values ≤ bound
                var lo = 0, hi = r.count
                while lo < hi { let mid = (lo + hi) / 2; if r[mid] <= bound { lo = mid + 1 } else { hi = mid } }
                c += Double(lo) / Double(r.count)
            }
            total += w * c / Double(sorted.count); wsum += w
            if s == 0 { return c / Double(sorted.count) }
        }
        return total / wsum
    }

    /// α with C(α) = `target` (bisection on ln α over [10⁻³, 10³]).
    public static func solve(recordings: [[Double]], daySpread s: Double, target: Double = 0.95) -> Double? {
        guard recordings.contains(where: { !$0.isEmpty }) else { return nil }
        var lo = log(1e-3), hi = log(1e3)
        for _ in 0..<60 {
            let m = (lo + hi) / 2
            if coverage(exp(m), recordings: recordings, daySpread: s) < target { lo = m } else { hi = m }
        }
        return exp(hi)
    }

    // MARK: velocity noise

    /// σ_v and L of a group of recordings' reported velocities: the per-axis σ whose 95 % circle holds
    /// the velocity error with predictive coverage 0.95 over the recordings and days — the same
    /// `solve` as α with each error's NEES under σ = 1 m/s (|e_v|²), so α is σ_v in m/s and the
    /// day spread s widens it as it widens α (a receiver's velocity error, like its position
    /// error, is that of a day). The 95 % level, not the mean square, sets it: the errors have
    /// heavy tails (GSDC 2020-05-14 Pixel4XLModded: P50 0.108 m/s, P95 0.728 m/s), so a σ from the
    /// RMS would be dominated by the few turns and stops where the chipset's course lags.
    /// nil when no recording reports a velocity.
    ///
    /// The latency L: a receiver reports with each fix the velocity it measured over the epoch that
    /// ends there, so its velocity is the motion of about half a fix interval earlier (on the
    /// GSDC 2020-05-14 drive the reported velocity's P95 error against the SPAN track is 0.74 m/s
    /// at L = 0 and 0.39–0.42 m/s at L = 0.4–0.5 s on the Pixel4XLModded, 0.61 and 0.33–0.34 m/s on
    /// the Pixel4). L is the value of `velocityLatencies` with the smallest σ_v (the first of equals).
    ///
    /// Time correlation: the filters take each reported velocity as an independent measurement, but
    /// the receiver's velocity error persists over seconds (its own filter; on the drive above
    /// ρ(1 s) ≈ 0.5–0.7 at the fitted L). n correlated measurements carry the information of
    /// n / g independent ones, g = 1 + 2 Σ_{k ≥ 1} ρ(k) (the integrated autocorrelation, the variance
    /// of a mean of a correlated series; Bartlett 1946), so the σ the filters use is σ_v √g: ρ(k) at
    /// k = 1…10 s, averaged over the recordings (`autocorrelation`, uncentred), summed up to the
    /// first lag where it is not positive. Returned: σ = σ_v √g, L, and g.
    public static func fitVelocity(_ recordings: [Recording], daySpread s: Double) -> (sigma: Double, latency: Double, integral: Double)? {
        var best: (sigma: Double, latency: Double, k: Int)?
        for (k, lag) in velocityLatencies.enumerated() {
            let v = recordings.map { k < $0.velocityErrors.count ? $0.velocityErrors[k].map { ($0.error * $0.error).sum() } : [] }.filter { !$0.isEmpty }
            guard !v.isEmpty, let sigma = solve(recordings: v, daySpread: s) else { continue }
            if best == nil || sigma < best!.sigma { best = (sigma, lag, k) }
        }
        guard let b = best else { return nil }
        var g = 1.0
        for lag in 1...10 {
            let r = recordings.compactMap { b.k < $0.velocityErrors.count ? autocorrelation($0.velocityErrors[b.k], lag: Double(lag)) : nil }
            guard !r.isEmpty else { break }
            let rho = r.reduce(0, +) / Double(r.count)
            guard rho > 0 else { break }
            g += 2 * rho
        }
        return (b.sigma * g.squareRoot(), b.latency, g)
    }

    /// Latencies L (s) tried by `fitVelocity`: 0 to 1 s in steps of 0.1 s.
    public static let velocityLatencies: [Double] = (0...10).map { Double($0) / 10 }

    /// Fixes with a reported velocity and truth (at L = 0).
    static func velocityFixCount(_ rs: [Recording]) -> Int { rs.reduce(0) { $0 + ($1.velocityErrors.first?.count ?? 0) } }

    /// Fits the model (above) on training recordings; `daySpread` nil = estimated from them.
    public static func fit(_ recordings: [Recording], daySpread: Double? = nil, provenance: String = "") -> GNSSErrorModel? {
        let rs = recordings.filter { !$0.nees.isEmpty }
        guard let s = daySpread ?? Self.daySpread(rs), let pooled = solve(recordings: rs.map(\.nees), daySpread: s) else { return nil }
        var fam: [String: Entry] = [:]
        for (f, g) in Dictionary(grouping: rs, by: \.family) {
            guard let a = solve(recordings: g.map(\.nees), daySpread: s) else { continue }
            let v = fitVelocity(g, daySpread: s)
            fam[f] = Entry(factor: a, recordings: g.count, fixes: g.reduce(0) { $0 + $1.nees.count },
                           correlation: fitCorrelation(g.map(\.normalizedErrors)),
                           velocitySigma: v?.sigma, velocityFixes: v.map { _ in velocityFixCount(g) }, velocityLatency: v?.latency,
                           velocityCorrelationIntegral: v?.integral)
        }
        let v = fitVelocity(rs, daySpread: s)
        return GNSSErrorModel(families: fam, pooled: Entry(factor: pooled, recordings: rs.count, fixes: rs.reduce(0) { $0 + $1.nees.count },
                                                           correlation: fitCorrelation(rs.map(\.normalizedErrors)),
                                                           velocitySigma: v?.sigma, velocityFixes: v.map { _ in velocityFixCount(rs) },
                                                           velocityLatency: v?.latency, velocityCorrelationIntegral: v?.integral),
                              daySpread: s, provenance: provenance)
    }

    /// Reads a model file (the shipped file's JSON form).
    public static func decode(_ data: Data) throws -> GNSSErrorModel { try JSONDecoder().decode(GNSSErrorModel.self, from: data) }

    /// The model as the shipped file's JSON (sorted keys, stable).
    public func encoded() throws -> Data {
        let e = JSONEncoder(); e.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try e.encode(self)
    }

    // MARK: the gnss stage options

    /// `gnss` stage option: `shipped`, `none`, or a path to a model file. Default `stageDefault`.
    public static let option = "error_model"
    /// The pipeline's default for `error_model`. `evaluate radio` on GNSS recordings always uses
    /// `shipped` unless its `--pipeline` says otherwise; `replay` uses this default: `none`
    /// (the phone's reported accuracy) until the change of the bundled simulated scenarios'
    /// figures under `shipped` is accepted (docs/fusion.md, "The shipped error model on the
    /// bundled scenarios").
    public static let stageDefault = "none"
    /// `gnss` stage option: the handset family of the trace's phone (default: from the trace
    /// header's `device`, else the event's device, by `HandsetFamilies`).
    public static let familyOption = "handset_family"
    /// `gnss` stage option: σ_v of the reported velocity (m/s; default the model's, 0 = not used).
    public static let velocitySigmaOption = "velocity_sigma_mps"
    /// `gnss` stage option: the reported velocity's latency L (s; default the model's).
    public static let velocityLatencyOption = "velocity_latency_s"

    /// The model the options select; nil = none.
    public static func from(options o: StageOptions) throws -> GNSSErrorModel? {
        let v = try o.string(option, default: stageDefault)
        switch v {
        case "shipped": return shipped
        case "none": return nil
        default:
            do { return try decode(try Data(contentsOf: URL(fileURLWithPath: v))) } catch {
                throw ConfigurationError(path: "\(o.name).\(option)", reason: "expected shipped, none or a GNSS error model file: \(v): \(error)")
            }
        }
    }
}
