import Foundation

/// A calibration of a phone's reported GNSS accuracy against ground truth: the factor α(r) by
/// which the per-axis σ derived from a reported accuracy r must be scaled for the fixes to be
/// χ²₂-consistent, piecewise constant over bins of r.
///
/// **Why.** Phones report accuracies that are not calibrated, and by an amount no innovation
/// shows where the error is a bias all fixes share (docs/consistency.md, "GNSS bias states"):
/// the GSDC Pixel 4 XL holds 49 % of its errors inside its reported 95 % circle, the
/// simulator's urban-canyon profile reports 0.7× the true error. Only ground truth can
/// calibrate that. Binning by r lets one calibration serve phones (or places) whose optimism
/// differs with the accuracy they report, and absorbs a reported accuracy that jitters
/// without information (within a bin the true error no longer depends on r).
///
/// **Fit** (`fit`), from training fixes with truth: each sample is (r, NEES) with the NEES
/// eᵀΣ⁻¹e computed with the *uncalibrated* Σ = σ(r)² I. Samples are sorted by r and cut into
/// equal-count bins (at least `minPerBin` each, at most `maxBins`); in each bin
///
///     α² = median(NEES) / (2 ln 2),
///
/// the ratio of the bin's median NEES to the median of χ²₂. The median, not the mean, because
/// multipath outliers are the filters' gate's business (a few 25 m outliers would otherwise set
/// the scale of every fix); a bin of a calibrated phone gives α ≈ 1 up to sampling error
/// (relative standard error of a median ≈ 1.25/√n per α², 4 % for n = 1000). Edges are the
/// geometric means of adjacent bins' last and first r. Applied: σ(r) ← α(r)·σ(r) in
/// `GNSSEstimator`, i.e. in the `gnss` fix itself, so every consumer (filters, refine, the
/// scores) sees the calibrated covariance.
///
/// Assumption: the training fixes come from the phones and environments the calibration is
/// applied to (a per-handset or per-environment calibration; docs/consistency.md measures the
/// transfer between scenarios). Train and test on different recordings (or seeds).
public struct GNSSAccuracyCalibration: Sendable, Equatable {
    /// Upper edges of the bins of reported accuracy r, m (ascending; the last bin is open).
    public var edges: [Double]
    /// α of each bin (edges.count + 1 values), factor on σ.
    public var factors: [Double]

    public init?(edges: [Double], factors: [Double]) {
        guard factors.count == edges.count + 1, factors.allSatisfy({ $0.isFinite && $0 > 0 }),
              edges.allSatisfy(\.isFinite), zip(edges, edges.dropFirst()).allSatisfy({ $0 < $1 }) else { return nil }
        self.edges = edges; self.factors = factors
    }

    /// α for a reported accuracy r (m).
    public func factor(forAccuracy r: Double) -> Double {
        var i = 0
        while i < edges.count, r > edges[i] { i += 1 }
        return factors[i]
    }

    /// One training fix: reported accuracy r (m) and its NEES under the uncalibrated covariance.
    public struct Sample: Sendable, Equatable {
        public var reportedAccuracy: Double
        public var nees: Double
        public init(reportedAccuracy: Double, nees: Double) { self.reportedAccuracy = reportedAccuracy; self.nees = nees }

        /// From an uncalibrated `gnss` fix (circular Σ = σ² I, σ = r / k with k = √(−2 ln(1 − c)) for
        /// the accuracy confidence c) and the truth at its time; nil when Σ is not usable.
        public init?(fix f: Fix, truth: SIMD2<Double>, accuracyConfidence c: Double = 0.68) {
            guard let m2 = f.covariance.mahalanobis2(f.position - truth) else { return nil }
            self.init(reportedAccuracy: (-2 * log(1 - c)).squareRoot() * f.covariance.ee.squareRoot(), nees: m2)
        }
    }

    /// A fitted bin, for the report.
    public struct Bin: Sendable, Equatable, Codable {
        public var lowerAccuracy: Double, upperAccuracy: Double
        public var count: Int
        public var medianNEES: Double
        public var factor: Double
        enum CodingKeys: String, CodingKey {
            case lowerAccuracy = "reported_from_m", upperAccuracy = "reported_to_m", count, medianNEES = "median_nees", factor
        }
    }

    /// The median of χ²₂, 2 ln 2.
    public static let chiSquare2Median = 2 * log(2.0)

    /// Fits the calibration (above); nil with fewer than `minPerBin` usable samples. A cut that
    /// would split equal reported accuracies (r is often quantised) moves up to the next change
    /// of r, so edges are strictly increasing and no r is in two bins.
    public static func fit(_ samples: [Sample], minPerBin: Int = 200, maxBins: Int = 8) -> (calibration: GNSSAccuracyCalibration, bins: [Bin])? {
        let s = samples.filter { $0.reportedAccuracy.isFinite && $0.reportedAccuracy > 0 && $0.nees.isFinite && $0.nees >= 0 }
            .sorted { $0.reportedAccuracy < $1.reportedAccuracy }
        guard s.count >= max(1, minPerBin) else { return nil }
        let n = max(1, min(maxBins, s.count / max(1, minPerBin)))
        var cuts: [Int] = []
        for b in 1..<n {
            var i = max(b * s.count / n, (cuts.last ?? 0) + 1)
            while i < s.count, s[i - 1].reportedAccuracy == s[i].reportedAccuracy { i += 1 }
            if i < s.count { cuts.append(i) }
        }
        let bounds = [0] + cuts + [s.count]
        let bins = zip(bounds, bounds.dropFirst()).map { lo, hi -> Bin in
            let m = RadioStats.median(s[lo..<hi].map(\.nees))!   // hi > lo
            return Bin(lowerAccuracy: s[lo].reportedAccuracy, upperAccuracy: s[hi - 1].reportedAccuracy, count: hi - lo,
                       medianNEES: m, factor: max(m / chiSquare2Median, 1e-6).squareRoot())
        }
        let edges = cuts.map { (s[$0 - 1].reportedAccuracy * s[$0].reportedAccuracy).squareRoot() }
        guard let c = GNSSAccuracyCalibration(edges: edges, factors: bins.map(\.factor)) else { return nil }
        return (c, bins)
    }

    // MARK: the gnss stage options

    /// Option names of the `gnss` stage that carry a calibration (docs/pipeline.yaml).
    public static let edgesOption = "calibration_edges_m", factorsOption = "calibration_factors"

    /// The `gnss` stage option values of this calibration.
    public var optionValues: [String: ConfigValue] {
        [Self.edgesOption: .list(edges.map { .number($0) }), Self.factorsOption: .list(factors.map { .number($0) })]
    }

    /// The calibration in `gnss` stage options; nil when they give none; throws on a bad pair.
    public static func from(options o: StageOptions) throws -> GNSSAccuracyCalibration? {
        let edges = try o.doubles(edgesOption, default: []), factors = try o.doubles(factorsOption, default: [])
        guard !factors.isEmpty || !edges.isEmpty else { return nil }
        guard let c = GNSSAccuracyCalibration(edges: edges, factors: factors) else {
            throw ConfigurationError(path: "\(o.name).\(factorsOption)", reason: "expected one positive factor more than "
                                     + "\(edgesOption), whose values must be finite and increasing")
        }
        return c
    }
}
