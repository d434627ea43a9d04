import Foundation

/// WLAN RSS lateration (`rss`): the posterior of the position given a scan's RSS values under
/// the radio map's log-distance path-loss model, summarised by its mean and covariance.
///
/// **Model** (`docs/models.md` §2.1, log-normal shadowing; Patwari et al., "Relative
/// location estimation in wireless sensor networks", IEEE Trans. Signal Processing 51(8), 2003):
/// RSS_k = μ_k(p) + ε_k, μ_k(p) = P0_k − 10 n_k log10(d_k(p)), d_k = √(‖p − a_k‖² + Δh_k²)
/// (Δh = AP antenna height − phone height, ENU up, m), ε_k ~ N(0, σ²) i.i.d. shadowing (dB).
/// P0_k, n_k from the map (`p0`, `n_exp`), else the WCL defaults.
///
/// **Estimate**: the likelihood L(p) = Π_k N(RSS_k; μ_k(p), σ²) with a uniform prior over the
/// anchors' bounding box widened by `margin`, evaluated on a grid (cell = max(1 m, extent/80));
/// the fix is the posterior mean and the covariance the posterior covariance plus the grid's
/// cell²/12 per axis. Why not the ML point with the Fisher information (the Cramér–Rao bound):
/// at σ = 6 dB and n = 3 a single AP's range is uncertain by a factor 10^(σ/10n) ≈ 1.6, the
/// likelihood is banana-shaped and often bimodal, and the linearised covariance was
/// overconfident (crowd-peers: ANEES 4.0, inside95 0.82 for the LM solution). The posterior
/// covariance is what the scan actually says. When the best node's χ² exceeds χ²_{m−2}(0.99) the
/// scan does not fit the map as σ claims, and the likelihood is tempered by the variance factor
/// χ²/(m − 2) (σ estimated from the scan; on the Microsoft indoor walks with learned maps,
/// inside95 was 0.08 without it). Unlike WCL the estimate is not confined to the
/// APs' hull (no inward bias); it needs a calibrated map (P0, n) to beat WCL.
///
/// Scan hygiene, radio merging and the r_min cut are WCL's (`WCLEstimator.mergedAnchors`),
/// but every heard AP is used (no K cut: weak APs carry information in this model).
///
/// Degenerate cases: fewer than `minAnchors` (≥ 3) anchors → `.tooFewAnchors`; anchors (nearly)
/// on one line → `.collinearGeometry` (the likelihood is symmetric about that line).
public struct RSSLaterationEstimator: Sendable {
    /// Scan hygiene, merging, r_min and default P0 / n.
    public var wcl: WCLEstimator
    /// Shadowing σ, dB.
    public var shadowingSigma: Double
    /// Phone height (ENU up, m) for the AP–phone height difference.
    public var phoneUp: Double
    /// Minimum number of anchors (≥ 3).
    public var minAnchors: Int
    /// Prior support beyond the anchors' bounding box, m.
    public var margin: Double

    public init(wcl: WCLEstimator = WCLEstimator(), shadowingSigma: Double = 6, phoneUp: Double = 1.2, minAnchors: Int = 3,
                margin: Double = 15) {
        self.wcl = wcl; self.shadowingSigma = shadowingSigma; self.phoneUp = phoneUp; self.minAnchors = max(3, minAnchors)
        self.margin = margin
    }

    /// The path-loss model of each anchor.
    func models(_ anchors: [WCLAnchor]) -> [PathLossModel] {
        anchors.map {
            PathLossModel(anchor: SIMD3($0.position.x, $0.position.y, $0.up), p0: $0.p0 ?? wcl.defaultP0,
                          exponent: $0.pathLossExponent ?? wcl.defaultPathLossExponent, phoneUp: phoneUp)
        }
    }

    public func estimate(_ scan: WiFiScan, time: Double, map: [String: AccessPoint],
                         subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        let anchors = wcl.mergedAnchors(scan, time: time, map: map).filter { $0.rss >= wcl.rssMin }
        return fix(anchors: anchors, time: time, subject: subject)
    }

    /// The posterior-mean fix from given anchors.
    public func fix(anchors: [WCLAnchor], time: Double, subject: String = Fix.defaultSubject) -> Result<Fix, EstimationFailure> {
        guard anchors.count >= minAnchors else { return .failure(.tooFewAnchors(needed: minAnchors, got: anchors.count)) }
        // Collinearity of the anchors' plan positions: smallest / largest principal spread.
        var lo = SIMD2(Double.infinity, .infinity), hi = -lo
        let mean = anchors.reduce(SIMD2<Double>.zero) { $0 + $1.position } / Double(anchors.count)
        var spread = Covariance2.zero
        for a in anchors {
            let d = a.position - mean
            spread = spread + Covariance2(ee: d.x * d.x, en: d.x * d.y, nn: d.y * d.y)
            lo = pointwiseMin(lo, a.position); hi = pointwiseMax(hi, a.position)
        }
        let axes = spread.principalAxes
        guard axes.major > 0, axes.minor > 1e-3 * axes.major else { return .failure(.collinearGeometry) }

        lo -= margin; hi += margin
        let extent = hi - lo
        let cell = max(1, max(extent.x, extent.y) / 80)
        let nx = Int((extent.x / cell).rounded(.up)) + 1, ny = Int((extent.y / cell).rounded(.up)) + 1
        let half = -0.5 / (shadowingSigma * shadowingSigma)
        var logL = [Double](repeating: 0, count: nx * ny)
        let best = Self.logLikelihoodGrid(models(anchors), rss: anchors.map(\.rss), lo: lo, cell: cell, nx: nx, ny: ny, half: half, into: &logL)
        // Model misfit: at the best node χ² = −2·best (in σ units). When it exceeds χ²_{m−2}(0.99)
        // the scan does not fit the map as σ says (learned P0/n, walls, bodies: errors shared by
        // many APs); the likelihood is then tempered by the variance factor χ²/(m − 2).
        let dof = Double(anchors.count - 2)
        let chi2 = -2 * best
        let temper = chi2 > ChiSquare.quantile(0.99, dof: anchors.count - 2) ? chi2 / dof : 1
        var wSum = 0.0, mu = SIMD2<Double>.zero
        for iy in 0..<ny {
            for ix in 0..<nx {
                let w = exp((logL[iy * nx + ix] - best) / temper)
                logL[iy * nx + ix] = w
                wSum += w; mu += w * (lo + SIMD2(Double(ix), Double(iy)) * cell)
            }
        }
        mu /= wSum
        var ee = 0.0, en = 0.0, nn = 0.0
        for iy in 0..<ny {
            for ix in 0..<nx {
                let d = lo + SIMD2(Double(ix), Double(iy)) * cell - mu, w = logL[iy * nx + ix] / wSum
                ee += w * d.x * d.x; en += w * d.x * d.y; nn += w * d.y * d.y
            }
        }
        let q = cell * cell / 12
        let cov = Covariance2(ee: ee + q, en: en, nn: nn + q)
        guard cov.isValid, mu.x.isFinite, mu.y.isFinite else { return .failure(.notConverged) }
        var floorVotes: [Int: Int] = [:]
        for a in anchors { if let f = a.floor { floorVotes[f, default: 0] += 1 } }
        let floor = floorVotes.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }?.key
        return .success(Fix(time: time, position: mu, covariance: cov, source: .rss, subject: subject,
                            usedCount: anchors.count, flags: [], floor: floor))
    }

    /// ln L (up to a constant) at every grid node p = lo + (ix, iy)·cell, row-major into
    /// `logL` (ny rows of nx): Σ_k half·(rss_k − μ_k(p))², k in anchor order; returns the
    /// largest. The hot loop of `fix` (nx·ny·m log10 evaluations): the same floating-point
    /// operations in the same order as `PathLossModel.mean` (so the same bits), with each
    /// anchor's constants (10·n, Δh²) and each column's Δx² computed once, on flat buffers.
    static func logLikelihoodGrid(_ m: [PathLossModel], rss: [Double], lo: SIMD2<Double>, cell: Double, nx: Int, ny: Int,
                                  half: Double, into logL: inout [Double]) -> Double {
        let k = m.count
        var dz2 = [Double](repeating: 0, count: k), tenN = dz2, minD = dz2, p0 = dz2, ay = dz2
        for (j, a) in m.enumerated() {
            let dz = a.anchor.z - a.phoneUp
            dz2[j] = dz * dz; tenN[j] = 10 * a.exponent; minD[j] = a.minDistance; p0[j] = a.p0; ay[j] = a.anchor.y
        }
        var dx2 = [Double](repeating: 0, count: nx * k)            // Δx² per column and anchor
        for ix in 0..<nx {
            let px = (lo + SIMD2(Double(ix), 0) * cell).x
            for j in 0..<k { let dx = px - m[j].anchor.x; dx2[ix * k + j] = dx * dx }
        }
        var dy2 = [Double](repeating: 0, count: k)
        var best = -Double.infinity
        dz2.withUnsafeBufferPointer { dz2 in tenN.withUnsafeBufferPointer { tenN in minD.withUnsafeBufferPointer { minD in
        p0.withUnsafeBufferPointer { p0 in rss.withUnsafeBufferPointer { rss in dx2.withUnsafeBufferPointer { dx2 in
        dy2.withUnsafeMutableBufferPointer { dy2 in logL.withUnsafeMutableBufferPointer { out in
            for iy in 0..<ny {
                let py = (lo + SIMD2(0, Double(iy)) * cell).y
                for j in 0..<k { let dy = py - ay[j]; dy2[j] = dy * dy }
                for ix in 0..<nx {
                    var l = 0.0
                    let row = ix * k
                    for j in 0..<k {
                        let d = (dx2[row + j] + dy2[j] + dz2[j]).squareRoot()
                        let r = rss[j] - (p0[j] - tenN[j] * log10(max(d, minD[j])))
                        l += half * r * r
                    }
                    out[iy * nx + ix] = l
                    best = max(best, l)
                }
            }
        } } } } } } } }
        return best
    }
}

/// Pipeline stage `rss`: an RSS maximum-likelihood fix per WiFi scan (and a loose position
/// measurement for the filters). Options: the WCL options (`WCLStage.estimator`: `rss_min`,
/// `merge_radios`, `default_p0`, `default_n`, …; `k` is ignored), `shadowing_sigma_db` (6 dB),
/// `phone_height_m` (1.2 m, ENU up), `min_aps` (3).
public final class RSSStage: PipelineStage {
    public let estimator: RSSLaterationEstimator
    public init(estimator: RSSLaterationEstimator = RSSLaterationEstimator()) { self.estimator = estimator }
    public var sources: [Source] { [.rss] }
    public func fresh() -> any PipelineStage { RSSStage(estimator: estimator) }
    /// No per-trace state.
    public func reset() {}
    /// Scans only.
    public var inputs: StageInputs { StageInputs(events: .wifi, upstream: false) }
    /// Whether a fix is followed by its `PositionMeasurement` (`PositionMeasurementEmission`).
    private var emission = PositionMeasurementEmission(.rss)
    public var emitsPositionMeasurement: Bool { emission.isOn }
    public func link(_ stages: [any PipelineStage], at index: Int) { emission.link(stages, at: index) }

    public func process(_ event: TraceEvent, upstream: [StageResult], context: PipelineContext) -> [StageResult] {
        guard case .wifi(let scan) = event.payload else { return [] }
        switch estimator.estimate(scan, time: event.time, map: context.reference.accessPoints, subject: event.device) {
        case .success(let e):
            let f = context.reference.wifiFix(e, scan: scan, rssMin: estimator.wcl.rssMin, maxAge: estimator.wcl.maxAge)
            return emission.results(f, subject: event.device)
        case .failure(let r): return [.failure(source: .rss, time: event.time, subject: event.device, reason: r)]
        }
    }

    /// The `rss` options (defaults: `RSSLaterationEstimator()`'s), plus every `wcl` option (`k` unused).
    public enum Options {
        static let d = RSSLaterationEstimator()
        public static let shadowingSigma = OptionSpec.number("shadowing_sigma_db", d.shadowingSigma, unit: "dB",
            "log-normal shadowing σ of the RSS model")
        public static let phoneHeight = OptionSpec.number("phone_height_m", d.phoneUp, unit: "m", "ENU up; for the AP–phone height difference")
        public static let minAPs = OptionSpec.integer("min_aps", d.minAnchors, "fewer heard APs (or APs on one line): no fix, a typed failure")
        public static let table = OptionTable(stage: "rss", doc: "WLAN RSS lateration: posterior mean/covariance under the path-loss model",
                                              enabledDoc: "(all wcl options apply too, except k: every heard AP is used)",
                                              options: [shadowingSigma, phoneHeight, minAPs], includes: [WCLStage.Options.table])
    }

    public static func make(_ o: StageOptions) throws -> RSSStage {
        let sigma = try o.double(Options.shadowingSigma)
        guard sigma > 0 else { throw ConfigurationError(path: "\(o.name).shadowing_sigma_db", reason: "must be positive") }
        let minAPs = try o.int(Options.minAPs)
        guard minAPs >= 3 else { throw ConfigurationError(path: "\(o.name).min_aps", reason: "must be ≥ 3") }
        return RSSStage(estimator: RSSLaterationEstimator(wcl: try WCLStage.estimator(o), shadowingSigma: sigma,
                                                          phoneUp: try o.double(Options.phoneHeight), minAnchors: minAPs))
    }
}
