import CGSL
import Foundation

/// Covariance of WiFi fixes that grows where the radio map is blind (docs/radio.md,
/// "Uncertainty where the map is blind").
///
/// A WiFi estimator's own covariance (WCL's spread, the posterior spread of `rss` and
/// `fingerprint`) describes the scatter *given the map*. Where the query is unlike anything the
/// map was learned from, the map's answer can be wrong by tens of metres while the estimator is
/// sure of it. The model adds an isotropic term driven by evidence of novelty, and rescales:
///
///   P′ = k · (γ² P + σₓ² I),   σₓ = a + b·d + c·(1 − u) + e·δ/10 dB          (`Form.linear`)
///                             or σₓ = a · exp(b·d/10 m + c·(1 − u) + e·δ/10 dB)   (`Form.exponential`)
///
/// * d: distance from the fix to the nearest surveyed place (a point of the map's fingerprint
///   survey: where the training walks' scans were taken), m; 0 when the map has no survey;
/// * u: share of the scan's heard APs (fresh entries above the stage's `rss_min`) that the map
///   knows (AP map or survey);
/// * δ: signal-space distance from the scan to the nearest survey point: RMS difference in dB
///   over the APs either heard (an AP missing on one side counts at −100 dBm), 0 without a survey.
///
/// The exponential form grows the width by a constant factor per unit of evidence (its σₓ is
/// convex in the features), the linear form by a constant step; which of the two a source gets is
/// chosen on the training walks by cross-validated likelihood over the inner folds (`fit`,
/// `forms`; docs/radio.md, "The exponential novelty form").
/// γ, a, b, c, e ≥ 0 are fitted per source by maximum likelihood of the residuals under
/// N(0, γ²P + σₓ²I) (GSL Nelder–Mead simplex); then k scales the whole covariance so that 95 % of
/// residuals the shape was NOT fitted on fall inside their 95 % ellipse (NEES ≤ χ²₂(0.95)):
/// cross-fitted by the samples' groups (the inner folds), as split-conformal calibration does
/// (`fit`). The residuals come
/// from training walks matched against maps that never saw them (the blocked protocol of
/// `posfuse radiomap build`, docs/radio.md); the fitted model is stored in the radio map and the
/// WiFi stages apply it whenever their reference data carries it.
public struct RadioUncertaintyModel: Sendable, Equatable, Codable {
    /// How σₓ grows with the novelty features (formulas above).
    public enum Form: String, Sendable, Equatable, Codable, CaseIterable {
        case linear
        case exponential
    }

    public struct Term: Sendable, Equatable, Codable {
        public var gamma: Double
        public var a: Double
        public var b: Double
        public var c: Double
        public var e: Double
        public var k: Double
        /// Training residuals the term was fitted on.
        public var samples: Int
        /// How the source's errors are correlated from scan to scan along a walk (β, τ of the
        /// filters' bias block, `GNSSBias`), fitted on the same training residuals; nil: not
        /// fitted (too few pairs, or a map written before it existed). `inflate` puts it on the fix.
        public var correlation: ErrorCorrelation?
        /// The error correlation as it changes with the fix's novelty width σₓ (`correlation(for:)`):
        /// β and τ fitted on the training walks grouped by their σₓ (`correlationByNovelty`), in
        /// increasing σₓ; nil: `correlation` for every fix (too few walks, or a map written before
        /// session 21). docs/fusion.md, "A correlation time that grows with novelty".
        public var noveltyCorrelation: [NoveltyCorrelation]?
        /// Mean horizontal error (m) of the source's fixes on walks the map never saw: the mean
        /// |r| of the residuals the term was fitted on (the learner's inner blocked folds). The
        /// fusion stages fuse, of one scan's WiFi fixes, only the sources with the smallest
        /// (docs/fusion.md, "Which WiFi source the filters fuse"); nil in maps written before it.
        public var heldOutMeanError: Double?
        /// The form of σₓ; nil (maps written before it) = linear.
        public var form: Form?
        /// Out-of-inner-fold negative log-likelihood per residual of each form tried (Σ(ln det P′ + NEES)/n
        /// with k = 1, `fit`): the evidence the form was chosen on; nil when one form was fitted.
        public var crossValidatedNLL: [String: Double]?
        public init(gamma: Double = 1, a: Double = 0, b: Double = 0, c: Double = 0, e: Double = 0, k: Double = 1, samples: Int = 0,
                    correlation: ErrorCorrelation? = nil, heldOutMeanError: Double? = nil, form: Form? = nil) {
            self.gamma = gamma; self.a = a; self.b = b; self.c = c; self.e = e; self.k = k; self.samples = samples
            self.correlation = correlation; self.heldOutMeanError = heldOutMeanError; self.form = form
        }

        public func sigmaX(_ f: Features) -> Double {
            switch form ?? .linear {
            case .linear: return a + b * f.surveyDistance + c * (1 - f.knownShare) + e * f.signalDistance / 10
            case .exponential: return a * exp(b * f.surveyDistance / 10 + c * (1 - f.knownShare) + e * f.signalDistance / 10)
            }
        }

        /// The error correlation of a fix with features `f`: with `noveltyCorrelation`, β and τ
        /// interpolated linearly in σₓ between the groups' σₓ (held at the first and last group's
        /// outside them); else `correlation`.
        public func correlation(for f: Features) -> ErrorCorrelation? {
            guard let g = noveltyCorrelation, let first = g.first, let last = g.last else { return correlation }
            let x = sigmaX(f)
            guard x.isFinite else { return correlation }
            if x <= first.sigmaX { return first.correlation }
            if x >= last.sigmaX { return last.correlation }
            let i = g.firstIndex { $0.sigmaX > x }!
            let (lo, hi) = (g[i - 1], g[i])
            let w = hi.sigmaX > lo.sigmaX ? (x - lo.sigmaX) / (hi.sigmaX - lo.sigmaX) : 0
            return ErrorCorrelation(biasFraction: lo.correlation.biasFraction + w * (hi.correlation.biasFraction - lo.correlation.biasFraction),
                                    correlationTime: lo.correlation.correlationTime + w * (hi.correlation.correlationTime - lo.correlation.correlationTime))
        }

        public func covariance(_ p: Covariance2, _ f: Features) -> Covariance2 {
            let s2 = sigmaX(f) * sigmaX(f), g2 = gamma * gamma
            return Covariance2(ee: k * (g2 * p.ee + s2), en: k * g2 * p.en, nn: k * (g2 * p.nn + s2))
        }
    }

    /// One group of training walks' error correlation and where it sits in novelty: the median
    /// over the group's walks of each walk's median σₓ (m).
    public struct NoveltyCorrelation: Sendable, Equatable, Codable {
        public var sigmaX: Double
        public var correlation: ErrorCorrelation
        public init(sigmaX: Double, correlation: ErrorCorrelation) { self.sigmaX = sigmaX; self.correlation = correlation }
        enum CodingKeys: String, CodingKey { case sigmaX = "sigma_x_m", correlation }
    }

    /// Source raw value (`wcl`, `rss`, `fingerprint`, `hapel`) → term.
    public var terms: [String: Term]
    public init(terms: [String: Term] = [:]) { self.terms = terms }

    public struct Features: Sendable, Equatable {
        public var surveyDistance: Double
        public var knownShare: Double
        public var signalDistance: Double
        public init(surveyDistance: Double, knownShare: Double, signalDistance: Double) {
            self.surveyDistance = surveyDistance; self.knownShare = knownShare; self.signalDistance = signalDistance
        }
    }

    /// RSS standing for "not heard" in the signal-space distance, dBm.
    public static let notHeard = -100.0

    /// The novelty features of a fix at `position` from `scan` (entries heard at or above
    /// `rssMin` and not older than `maxAge` at `time`).
    public static func features(position: SIMD2<Double>, scan: WiFiScan, time: Double, reference: ReferenceData,
                                rssMin: Double = -90, maxAge: Double? = nil) -> Features {
        var heard: [String: Double] = [:]
        for o in scan.accessPoints where o.rss >= rssMin {
            if let m = maxAge, let t = o.lastSeen, time - t > m { continue }
            let b = o.bssid.lowercased()
            heard[b] = max(heard[b] ?? -.infinity, o.rss)
        }
        let fps = reference.fingerprints
        let known = heard.keys.filter { reference.accessPoints[$0] != nil || (fps?.index[$0] != nil) }.count
        let u = heard.isEmpty ? 0 : Double(known) / Double(heard.count)
        guard let fps, !fps.isEmpty else { return Features(surveyDistance: 0, knownShare: u, signalDistance: 0) }
        var d2 = Double.infinity
        for q in fps.positions {
            let v = q - position
            d2 = min(d2, (v * v).sum())
        }
        // δ over integer AP columns, once per scan (`FingerprintMap.nearestSignalDistance`).
        let delta = fps.nearestSignalDistance(heard, notHeard: notHeard) ?? 0
        return Features(surveyDistance: d2.squareRoot(), knownShare: u, signalDistance: delta)
    }

    /// The fix with its covariance inflated (unchanged when the model has no term for its source).
    public func inflate(_ f: Fix, scan: WiFiScan, reference: ReferenceData, rssMin: Double = -90, maxAge: Double? = nil) -> Fix {
        guard let t = terms[f.source.rawValue] else { return f }
        var out = f
        let features = Self.features(position: f.position, scan: scan, time: f.time, reference: reference, rssMin: rssMin, maxAge: maxAge)
        out.covariance = t.covariance(f.covariance, features)
        out.errorCorrelation = t.correlation(for: features)
        return out
    }

    // MARK: Fitting

    public struct Sample: Sendable {
        public var residual: SIMD2<Double>
        public var covariance: Covariance2
        public var features: Features
        /// The inner fold (or phone group) the residual came from: the coverage scale k is
        /// cross-fitted over these groups.
        public var group: Int
        /// Which training walk the fix is from, and its time (s): the error correlation is measured
        /// between fixes of one walk. time NaN: not fitted from this sample.
        public var walk: Int
        public var time: Double
        public init(residual: SIMD2<Double>, covariance: Covariance2, features: Features, group: Int = 0, walk: Int = 0,
                    time: Double = .nan) {
            self.residual = residual; self.covariance = covariance; self.features = features; self.group = group
            self.walk = walk; self.time = time
        }
    }

    /// Lag bins (s) of the WiFi error autocorrelation: scans come every 2–7 s on phones, so the
    /// lags are binned rather than exact (`ErrorCorrelation.binnedAutocorrelation`).
    public static let correlationBins: [(Double, Double)] = [(1, 4), (4, 8), (8, 15), (15, 30), (30, 60), (60, 120)]

    /// β and τ of a term's errors: each residual over the term's fitted σ per axis (r_E/√P′_EE,
    /// r_N/√P′_NN), autocorrelated within each walk over `correlationBins`, and fitted as the GNSS
    /// correlation is (`ErrorCorrelation.fit`, β ≥ 0.05). nil when fewer than two bins have a
    /// usable correlation.
    public static func correlation(_ samples: [Sample], term t: Term) -> ErrorCorrelation? {
        var byWalk: [Int: [(time: Double, error: SIMD2<Double>)]] = [:]
        for v in samples where v.time.isFinite {
            let p = t.covariance(v.covariance, v.features)
            guard p.ee > 0, p.nn > 0 else { continue }
            byWalk[v.walk, default: []].append((v.time, SIMD2(v.residual.x / p.ee.squareRoot(), v.residual.y / p.nn.squareRoot())))
        }
        let curve = ErrorCorrelation.binnedAutocorrelation(byWalk.keys.sorted().map { byWalk[$0]! }, bins: correlationBins)
        return ErrorCorrelation.fit(curve, minBias: 0.05)
    }

    /// Groups of training walks `correlationByNovelty` fits a correlation to.
    public static let noveltyCorrelationGroups = 3

    /// β and τ per novelty group: the training walks (each replay of a walk at each block radius
    /// counts as one, as in `correlation`) sorted by their median σₓ under the term and dealt into
    /// `groups` groups of consecutive walks (sizes differing by at most one), each group's residuals
    /// fitted as `correlation` fits them all. nil (the pooled `correlation` serves every fix)
    /// with fewer than 3 walks per group, when a group's fit fails, or when the groups' σₓ are
    /// not strictly increasing (novelty does not tell the walks apart). The walks that are far from
    /// their map (large σₓ: few known APs, a scan unlike the survey) keep one offset longer than
    /// the near ones (docs/fusion.md, "A correlation time that grows with novelty").
    public static func correlationByNovelty(_ samples: [Sample], term t: Term, groups: Int = noveltyCorrelationGroups) -> [NoveltyCorrelation]? {
        guard groups >= 2 else { return nil }
        var byWalk: [Int: [Sample]] = [:]
        for v in samples where v.time.isFinite { byWalk[v.walk, default: []].append(v) }
        let walks = byWalk.map { (walk: $0.key, samples: $0.value, sigma: RadioStats.median($0.value.map { t.sigmaX($0.features) }) ?? .nan) }
            .filter { $0.sigma.isFinite }
            .sorted { ($0.sigma, $0.walk) < ($1.sigma, $1.walk) }
        guard walks.count >= 3 * groups else { return nil }
        var out: [NoveltyCorrelation] = []
        for g in 0..<groups {
            let part = walks[(g * walks.count / groups)..<((g + 1) * walks.count / groups)]
            guard let c = correlation(part.flatMap(\.samples), term: t) else { return nil }
            out.append(NoveltyCorrelation(sigmaX: RadioStats.median(part.map(\.sigma))!, correlation: c))
        }
        // Groups that novelty does not order (equal σₓ: every walk alike) say nothing about it.
        return zip(out, out.dropFirst()).allSatisfy({ $0.sigmaX < $1.sigmaX }) ? out : nil
    }

    /// How `fit` takes the coverage scale k from the out-of-group NEES.
    public enum ScaleRule: String, Sendable {
        /// The conformal quantile of all out-of-group NEES pooled: residuals exchangeable one by
        /// one (UJIIndoorLoc's single scans, `KNNFingerprintFit.calibrate`).
        case pooled
        /// Cautious over the groups (`CoverageScale.cautiousScale`): residuals exchangeable group
        /// by group (the radio map's inner folds of walks, `RadioMapLearner`).
        case cautiousOverGroups
    }

    /// Fewest residuals a term is fitted from.
    public static let minSamples = 20

    /// Fits one source's term (nil with fewer than `minSamples` usable residuals).
    ///
    /// 1. The shape (γ, a, b, c, e) by maximum likelihood on every sample.
    /// 2. The coverage scale k, cross-fitted: for each group g (an inner fold of the blocked
    ///    split, or a phone group), the shape is fitted again on the other groups' samples and
    ///    g's NEES under it are kept. k = q / χ²₂(0.95), with q the ⌈0.95 (n + 1)⌉-th smallest of
    ///    those n out-of-group NEES: the split-conformal quantile (Vovk, Gammerman & Shafer,
    ///    "Algorithmic Learning in a Random World", 2005; Barber, Candès, Ramdas & Tibshirani,
    ///    "Predictive inference with the jackknife+", Annals of Statistics 49(1), 2021, for the
    ///    cross-fitted form), which covers at least 95 % of a new exchangeable residual. The
    ///    in-sample NEES of step 1 are smaller than a new residual's (the shape was fitted to
    ///    them), so a k taken from them under-covers unseen walks.
    /// With fewer than two groups, or a group whose complement has fewer than `minSamples / 2`
    /// samples to refit the shape on, or fewer than `minSamples` out-of-group NEES in all, q is
    /// taken from the in-sample NEES (same conformal rank).
    /// `crossFit: false` takes q from the in-sample NEES always (for comparison in tests).
    ///
    /// `scaleRule: .cautiousOverGroups` takes k instead from the groups as units: each group's
    /// out-of-group NEES give s_g = Q₀.₉₅/χ²₂(0.95), and k is their cautious order statistic
    /// (`CoverageScale.cautiousScale`: the largest while there are fewer than 19 groups), the
    /// split-conformal rank over groups rather than over residuals. It is for residuals that are
    /// not exchangeable one by one but group by group: the WiFi errors of one walk are one bias
    /// (correlation β ≈ 0.99 over 20–46 s, docs/fusion.md), so a pooled quantile over fixes
    /// counts one walk's bias as many independent draws, and a new walk unlike the training
    /// walks falls outside whole (docs/radio.md, "The coverage scale over walks"). Fewer than
    /// `CoverageScale.minFolds` groups of at least `CoverageScale.minFoldResiduals` out-of-group
    /// NEES: the pooled rule.
    ///
    /// `forms`: the forms of σₓ to try. With more than one (the radio map learner tries both),
    /// each is fitted as above and the one with the smallest cross-validated negative
    /// log-likelihood Σ_g Σ_{i∈g} (ln det P′ᵢ + NEESᵢ) (k = 1; the shape refitted without group g,
    /// the same refits the coverage scale takes its out-of-group NEES from) is kept: model choice
    /// by held-out likelihood over the training walks' inner folds (Stone, "Cross-validatory choice
    /// and assessment of statistical predictions", JRSS B 36(2), 1974). The first form wins ties
    /// and is taken when the groups do not allow cross-fitting.
    public static func fit(_ samples: [Sample], crossFit: Bool = true, scaleRule: ScaleRule = .pooled,
                           forms: [Form] = [.linear]) -> Term? {
        let s = samples.filter { $0.covariance.isValid && $0.residual.x.isFinite && $0.residual.y.isFinite }
        guard s.count >= minSamples else { return nil }
        let groups = Dictionary(grouping: s.indices, by: { s[$0].group })
        let canCrossFit = crossFit && groups.count >= 2 && groups.values.allSatisfy({ s.count - $0.count >= minSamples / 2 })
        var best: (t: Term, nees: [Double], perGroup: [[Double]], nll: Double)?
        var nllByForm: [String: Double] = [:]
        for form in forms.isEmpty ? [.linear] : forms {
            guard let t = shape(s, form: form) else { continue }
            var nees: [Double] = [], perGroup: [[Double]] = [], nll = 0.0, counted = 0
            if canCrossFit {
                for g in groups.keys.sorted() {
                    let rest = s.filter { $0.group != g }
                    guard let tg = shape(rest, form: form, start: t) else { continue }
                    var ng: [Double] = []
                    for i in groups[g]! {
                        let p = tg.covariance(s[i].covariance, s[i].features)
                        guard let m = p.mahalanobis2(s[i].residual) else { continue }
                        ng.append(m)
                        let det = p.ee * p.nn - p.en * p.en
                        if det > 0 { nll += log(det) + m; counted += 1 }
                    }
                    nees += ng
                    perGroup.append(ng)
                }
            }
            let perResidual = counted > 0 ? nll / Double(counted) : .infinity
            if forms.count > 1 { nllByForm[form.rawValue] = perResidual }
            if best == nil || perResidual < best!.nll { best = (t, nees, perGroup, perResidual) }
        }
        guard let chosen = best else { return nil }
        var t = chosen.t, nees = chosen.nees
        let perGroup = chosen.perGroup
        if scaleRule == .cautiousOverGroups, let k = CoverageScale.cautiousScale(d2PerFold: perGroup), k > 0 {
            t.k = k
        } else {
            if nees.count < minSamples {
                nees = s.compactMap { t.covariance($0.covariance, $0.features).mahalanobis2($0.residual) }
            }
            if let q = conformalQuantile(nees, level: 0.95), q > 0 { t.k = q / RadioUncertaintyModel.chi2Two95 }
        }
        t.samples = s.count
        if !nllByForm.isEmpty { t.crossValidatedNLL = nllByForm }
        t.correlation = correlation(s, term: t)
        t.noveltyCorrelation = correlationByNovelty(s, term: t)
        t.heldOutMeanError = s.reduce(0) { $0 + ($1.residual.x * $1.residual.x + $1.residual.y * $1.residual.y).squareRoot() } / Double(s.count)
        return t
    }

    /// The ⌈level · (n + 1)⌉-th smallest value (the largest when that rank exceeds n).
    public static func conformalQuantile(_ values: [Double], level: Double) -> Double? {
        let v = values.filter(\.isFinite).sorted()
        guard !v.isEmpty else { return nil }
        let rank = Int((level * Double(v.count + 1)).rounded(.up))
        return v[min(max(rank, 1), v.count) - 1]
    }

    /// Step 1: γ, a, b, c, e by maximum likelihood (k = 1). `start`: a fitted term to start the
    /// exponential form's simplex from (the refits without one group; the linear form always
    /// starts from its fixed point, as it did before the exponential form existed).
    static func shape(_ s: [Sample], form: Form = .linear, start: Term? = nil) -> Term? {
        guard !s.isEmpty else { return nil }
        // θ = (ln γ, √a, √b, √c, √e): unconstrained, every coefficient ≥ 0.
        func term(_ x: [Double]) -> Term {
            Term(gamma: exp(x[0]), a: x[1] * x[1], b: x[2] * x[2], c: x[3] * x[3], e: x[4] * x[4], form: form == .linear ? nil : form)
        }
        func nll(_ x: [Double]) -> Double {
            let t = term(x)
            var sum = 0.0
            for v in s {
                let p = t.covariance(v.covariance, v.features)
                let det = p.ee * p.nn - p.en * p.en
                guard det > 0, let m = p.mahalanobis2(v.residual) else { return .infinity }
                sum += log(det) + m
            }
            return sum
        }
        switch form {
        case .linear:
            let x0 = [0.0, 2.0.squareRoot(), 0.5, 1, 0.5]
            let x = NelderMead.minimize(nll, start: x0, step: 0.5) ?? x0
            return term(x)
        case .exponential:
            // a = 4 m, each factor e^0.09 per unit at the start; the simplex is restarted from
            // its result once (the exponential surface is steeper than the linear one).
            var x0: [Double] = [0, 2, 0.3, 0.3, 0.3]
            if let t = start { x0 = [log(max(t.gamma, 1e-6)), t.a.squareRoot(), t.b.squareRoot(), t.c.squareRoot(), t.e.squareRoot()] }
            var x = NelderMead.minimize(nll, start: x0, step: 0.5) ?? x0
            x = NelderMead.minimize(nll, start: x, step: 0.25) ?? x
            return term(x)
        }
    }

    /// χ²₂ 95 % quantile.
    public static let chi2Two95 = -2 * log(0.05)
}

/// GSL's Nelder–Mead simplex (`gsl_multimin_fminimizer_nmsimplex2`) over a Swift closure.
enum NelderMead {
    final class Box { let f: ([Double]) -> Double; let n: Int; init(_ f: @escaping ([Double]) -> Double, _ n: Int) { self.f = f; self.n = n } }

    static func minimize(_ f: @escaping ([Double]) -> Double, start: [Double], step: Double, maxIterations: Int = 2000,
                         tolerance: Double = 1e-6) -> [Double]? {
        let n = start.count
        GSL.disableAbort()
        let box = Unmanaged.passRetained(Box(f, n))
        defer { box.release() }
        var fn = gsl_multimin_function()
        fn.n = n
        fn.params = box.toOpaque()
        fn.f = { x, params in
            let b = Unmanaged<Box>.fromOpaque(params!).takeUnretainedValue()
            let v = b.f((0..<b.n).map { gsl_vector_get(x, $0) })
            return v.isFinite ? v : Double.greatestFiniteMagnitude
        }
        guard let s = gsl_multimin_fminimizer_alloc(cgsl_multimin_fminimizer_nmsimplex2(), n),
              let x = gsl_vector_alloc(n), let ss = gsl_vector_alloc(n) else { return nil }
        defer { gsl_multimin_fminimizer_free(s); gsl_vector_free(x); gsl_vector_free(ss) }
        for i in 0..<n { gsl_vector_set(x, i, start[i]); gsl_vector_set(ss, i, step) }
        guard gsl_multimin_fminimizer_set(s, &fn, x, ss) == Int32(GSL_SUCCESS) else { return nil }
        for _ in 0..<maxIterations {
            if gsl_multimin_fminimizer_iterate(s) != Int32(GSL_SUCCESS) { break }
            if gsl_multimin_test_size(gsl_multimin_fminimizer_size(s), tolerance) == Int32(GSL_SUCCESS) { break }
        }
        let r = (0..<n).map { gsl_vector_get(s.pointee.x, $0) }
        return r.allSatisfy(\.isFinite) ? r : nil
    }
}
