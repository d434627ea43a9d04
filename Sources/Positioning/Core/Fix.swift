import Foundation

/// A position estimate with its uncertainty: the common output of every estimator
/// and filter (loosely coupled contract, `docs/models.md` §0).
///
/// Units: `time` in trace seconds; `position` in local ENU metres (x = East, y = North);
/// `covariance` in m².
public struct Fix: Sendable, Equatable {
    /// Trace time the estimate refers to, s.
    public var time: Double
    /// Horizontal position in local ENU, m.
    public var position: SIMD2<Double>
    /// Height above the ENU origin, m, when the estimator provides one.
    public var up: Double?
    /// Horizontal covariance, m².
    public var covariance: Covariance2
    /// Which estimator or filter produced it.
    public var source: Source
    /// What is located: the device id for phone positions ("phone" by default), or
    /// "object:<id>" for an object located by CamLoc.
    public var subject: String
    /// Number of anchors/measurements that contributed.
    public var usedCount: Int
    public var flags: FixFlags
    /// Estimated floor index, when known.
    public var floor: Int?
    /// Estimated building (a site's own numbering, e.g. UJIIndoorLoc's BUILDINGID), when known.
    public var building: Int?
    /// How this fix's error is correlated in time, when its estimator knows (a GNSS fix under
    /// the GNSS error model: the split of its covariance into a slowly varying bias and white
    /// noise, `GNSSErrorModel`); nil: the filter's own default (`gnss_bias_fraction`, `gnss_bias_tau_s`).
    public var errorCorrelation: ErrorCorrelation? = nil
    /// The covariance a filter fusing this fix takes when it differs from the reported one: a GNSS
    /// fix whose reported region the stage widened from a downstream filter's online consistency
    /// (`GNSSStage`, option `widen_from_filter`) enters the filters with its estimator's own
    /// covariance, so the filter's disagreement is not fed back into it. nil: `covariance`.
    public var filterCovariance: Covariance2? = nil

    public init(time: Double, position: SIMD2<Double>, up: Double? = nil, covariance: Covariance2,
                source: Source, subject: String = Fix.defaultSubject, usedCount: Int = 0,
                flags: FixFlags = [], floor: Int? = nil, building: Int? = nil) {
        self.time = time; self.position = position; self.up = up; self.covariance = covariance
        self.source = source; self.subject = subject; self.usedCount = usedCount
        self.flags = flags; self.floor = floor; self.building = building
    }

    /// The fix as a filter takes it: `covariance` = `filterCovariance` when set.
    public var filterInput: Fix {
        guard let c = filterCovariance else { return self }
        var f = self
        f.covariance = c; f.filterCovariance = nil
        return f
    }

    /// Subject of a trace's only (or primary) phone.
    public static let defaultSubject = "phone"
}

/// Qualifiers of a fix (`docs/models.md` §0).
public struct FixFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Geometry was near-degenerate; the covariance was regularised.
    public static let degenerate = FixFlags(rawValue: 1 << 0)
    /// A value was clamped into its valid range.
    public static let clamped = FixFlags(rawValue: 1 << 1)
    /// A saturated measurement (e.g. timing advance at its maximum) was used as a bound.
    public static let saturated = FixFlags(rawValue: 1 << 2)
    /// The estimate lies outside the anchors' hull.
    public static let extrapolated = FixFlags(rawValue: 1 << 3)
    /// The particle cloud (or likelihood) is multimodal.
    public static let multimodal = FixFlags(rawValue: 1 << 4)
}

/// The time correlation of an estimator's error, as the filters' GNSS bias block models it
/// (`GNSSBias`): the error is b + w, b a first-order Gauss–Markov bias holding the share β of the
/// covariance with correlation time τ, w white. Its autocorrelation at lag Δt > 0 is β e^{−Δt/τ}.
public struct ErrorCorrelation: Sendable, Equatable, Codable {
    /// β, the share of the covariance that is bias (0 < β < 1).
    public var biasFraction: Double
    /// τ, s.
    public var correlationTime: Double
    public init(biasFraction: Double, correlationTime: Double) { self.biasFraction = biasFraction; self.correlationTime = correlationTime }
    enum CodingKeys: String, CodingKey { case biasFraction = "bias_fraction", correlationTime = "correlation_time_s" }

    /// β and τ from an autocorrelation curve: least squares of ln ρ(ℓ) = ln β − ℓ/τ over the points
    /// (lag ℓ s, ρ) with ρ > 0.05 (the white part decorrelates within one fix interval, so β is
    /// the extrapolation of ρ to lag 0⁺ and τ its decay). β is kept in [`minBias`, 0.99] (at 0.99
    /// the filter still sees 1 % white noise and stays well conditioned), τ in [5, 3600] s. nil
    /// with fewer than two usable points. Used for GNSS fixes (`GNSSErrorModel.fitCorrelation`)
    /// and WiFi fixes (`RadioUncertaintyModel.fit`).
    public static func fit(_ curve: [(lag: Double, rho: Double)], minBias: Double = 0.5) -> ErrorCorrelation? {
        let points: [(Double, Double)] = curve.filter { $0.rho > 0.05 && $0.lag.isFinite }.map { ($0.lag, Foundation.log($0.rho)) }
        guard points.count >= 2 else { return nil }
        let n = Double(points.count)
        var mx = 0.0, my = 0.0
        for p in points { mx += p.0; my += p.1 }
        mx /= n; my /= n
        var sxx = 0.0, sxy = 0.0
        for p in points { sxx += (p.0 - mx) * (p.0 - mx); sxy += (p.0 - mx) * (p.1 - my) }
        let slope = sxx > 0 ? sxy / sxx : 0
        let beta = min(0.99, max(minBias, exp(my - slope * mx)))
        let tau = slope < 0 ? min(3600, max(5, -1 / slope)) : 3600
        return ErrorCorrelation(biasFraction: beta, correlationTime: tau)
    }

    /// Autocorrelation of irregularly sampled normalised errors (each series one recording, in
    /// any order) in lag bins [lo, hi) s: Σ zᵢ·zⱼ / Σ over pairs i < j with tⱼ − tᵢ in the bin,
    /// divided by the series' mean |z|², pooled over series by pairs; each bin's lag is its pairs'
    /// mean lag. Uncentred, as `GNSSErrorModel.autocorrelation`. Bins with fewer than `minPairs`
    /// pairs are left out. For WiFi scans every 2–7 s, where exact lags rarely occur.
    public static func binnedAutocorrelation(_ series: [[(time: Double, error: SIMD2<Double>)]], bins: [(Double, Double)],
                                             minPairs: Int = 20) -> [(lag: Double, rho: Double)] {
        var num = [Double](repeating: 0, count: bins.count), lagSum = num, count = [Int](repeating: 0, count: bins.count)
        guard let maxLag = bins.map(\.1).max() else { return [] }
        for z0 in series {
            let z = z0.filter { $0.time.isFinite && $0.error.x.isFinite && $0.error.y.isFinite }.sorted { $0.time < $1.time }
            guard z.count > 1 else { continue }
            let v0 = z.reduce(0.0) { $0 + ($1.error * $1.error).sum() } / Double(z.count)
            guard v0 > 0 else { continue }
            for i in z.indices {
                var j = i + 1
                while j < z.count, z[j].time - z[i].time < maxLag {
                    let lag = z[j].time - z[i].time
                    if let b = bins.firstIndex(where: { lag >= $0.0 && lag < $0.1 }) {
                        num[b] += (z[i].error * z[j].error).sum() / v0; lagSum[b] += lag; count[b] += 1
                    }
                    j += 1
                }
            }
        }
        return bins.indices.filter { count[$0] >= minPairs }.map { (lagSum[$0] / Double(count[$0]), num[$0] / Double(count[$0])) }
    }
}
