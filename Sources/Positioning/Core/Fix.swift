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

    public init(time: Double, position: SIMD2<Double>, up: Double? = nil, covariance: Covariance2,
                source: Source, subject: String = Fix.defaultSubject, usedCount: Int = 0,
                flags: FixFlags = [], floor: Int? = nil, building: Int? = nil) {
        self.time = time; self.position = position; self.up = up; self.covariance = covariance
        self.source = source; self.subject = subject; self.usedCount = usedCount
        self.flags = flags; self.floor = floor; self.building = building
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
}
