import Foundation

/// A measurement that states an inequality (a bound) rather than a value: saturated timing
/// advance (range ≥ bound), hidden access points (RSS < sensitivity). Filters with a
/// likelihood (particle filter) use `logLikelihood`; Gaussian filters (EKF/UKF) must not
/// apply it as an ordinary update: apply it as a projection / pseudo-measurement only when
/// `isViolated(p)` is true (`docs/models.md` §1.3, §3.2 step 6).
public protocol InequalityMeasurement: MeasurementModel {
    /// Whether the point estimate p breaks the inequality.
    func isViolated(_ p: SIMD2<Double>) -> Bool
}

extension InequalityMeasurement {
    public var asInequality: (any InequalityMeasurement)? { self }
}

/// A measurement of the slant range from the phone (at `phoneUp`) to an antenna at `site`:
/// h(p) = √((E − b_E)² + (N − b_N)² + Δh²), H = [(E − b_E)/h, (N − b_N)/h] (H = [0, 0] at h = 0).
public protocol SlantRangeMeasurement: MeasurementModel {
    /// Antenna position, ENU m.
    var site: SIMD3<Double> { get }
    /// Phone height above the ENU origin, m.
    var phoneUp: Double { get }
}

extension SlantRangeMeasurement {
    /// Slant range from p to the antenna, m.
    public func slantRange(_ p: SIMD2<Double>) -> Double {
        let dx = p.x - site.x, dy = p.y - site.y, dz = site.z - phoneUp
        return (dx * dx + dy * dy + dz * dz).squareRoot()
    }

    public func predict(_ p: SIMD2<Double>) -> [Double] { [slantRange(p)] }

    /// ∂h/∂p = [(E − b_E)/h, (N − b_N)/h].
    public func jacobian(_ p: SIMD2<Double>) -> Matrix {
        let h = slantRange(p)
        guard h > 1e-9 else { return Matrix(rows: 1, cols: 2) }
        return Matrix(rows: 1, cols: 2, data: [(p.x - site.x) / h, (p.y - site.y) / h])
    }
}

/// Tight-coupling timing-advance range to a cell antenna (`docs/models.md` §1.2 item 3).
///
/// * h(p) = √((E − b_E)² + (N − b_N)² + Δh²), the slant range to the antenna, Δh = antenna
///   height − phone height (m).
/// * z = (TA + β)·Δ; R = Δ²/12 + σ_m² + σ_NLOS² (uniform quantisation ⊕ BTS estimation noise).
/// * H = [(E − b_E)/h, (N − b_N)/h]; at h = 0 (phone under the antenna with Δh = 0) the
///   gradient is undefined and H = [0, 0] is returned.
/// * `logLikelihood` is the exact annulus likelihood for uniform ⊕ Gaussian error:
///   L(ρ) = Φ((r_hi − ρ)/σ) − Φ((r_lo − ρ)/σ), σ = max(σ_m, 10⁻³Δ), with r_lo, r_hi the
///   ring limits of the reported index (`TimingAdvanceModel.ring`) — not the Gaussian
///   default, which would be wrong near TA = 0 and too light-tailed at the ring edges.
public struct TimingAdvanceRangeMeasurement: SlantRangeMeasurement {
    public let source: Source
    public let time: Double
    public let z: [Double]
    public let noise: Matrix
    /// Antenna position, ENU m.
    public let site: SIMD3<Double>
    /// Phone height above the ENU origin, m.
    public let phoneUp: Double
    /// Ring of slant ranges of the index, m.
    public let ringLower: Double, ringUpper: Double
    /// BTS estimation noise σ_m, m.
    public let sigmaM: Double
    public let cell: CellID?

    public init(time: Double, site: SIMD3<Double>, timingAdvance ta: Int, model: TimingAdvanceModel,
                sigmaM: Double, nlosSigma: Double = 0, phoneUp: Double = 0, cell: CellID? = nil,
                source: Source = .cellTA) {
        self.time = time; self.site = site; self.phoneUp = phoneUp; self.source = source; self.cell = cell
        let d = model.stepLength
        z = [model.range(ta)]
        let r = model.ring(ta)
        ringLower = r.lower; ringUpper = r.upper
        self.sigmaM = max(sigmaM, 1e-3 * d)
        noise = Matrix(rows: 1, cols: 1, data: [d * d / 12 + sigmaM * sigmaM + nlosSigma * nlosSigma])
    }

    /// The serving cell (else the antenna position): the same cell with the same TA is a repeat.
    public var repeatIdentity: String? { cell.map { "\($0)" } ?? "\(site)" }

    /// log[Φ((r_hi − ρ)/σ) − Φ((r_lo − ρ)/σ)] (finite for every p).
    public func logLikelihood(_ p: SIMD2<Double>) -> Double {
        let rho = slantRange(p)
        return NormalCDF.logDifference((ringUpper - rho) / sigmaM, (ringLower - rho) / sigmaM)
    }
}

/// A saturated timing advance: only the one-sided statement d ≥ r_lo = (TA_max + β − ½)Δ
/// (`docs/models.md` §1.3). Likelihood L(ρ) = Φ((ρ − r_lo)/σ_m); z = [r_lo], h(p) is the
/// slant range, and Gaussian filters apply it only when violated (`InequalityMeasurement`).
public struct TimingAdvanceLowerBound: InequalityMeasurement, SlantRangeMeasurement {
    public let source: Source
    public let time: Double
    public let z: [Double]
    public let noise: Matrix
    public let site: SIMD3<Double>
    public let phoneUp: Double
    public let sigmaM: Double
    public var gateProbability: Double? { nil }

    public init(time: Double, site: SIMD3<Double>, timingAdvance ta: Int, model: TimingAdvanceModel,
                sigmaM: Double, phoneUp: Double = 0, source: Source = .cellTA) {
        self.time = time; self.site = site; self.phoneUp = phoneUp; self.source = source
        let d = model.stepLength
        z = [model.ring(ta).lower]
        self.sigmaM = max(sigmaM, 1e-3 * d)
        noise = Matrix(rows: 1, cols: 1, data: [d * d / 12 + sigmaM * sigmaM])
    }

    /// log Φ((ρ − r_lo)/σ_m).
    public func logLikelihood(_ p: SIMD2<Double>) -> Double { NormalCDF.logPhi((slantRange(p) - z[0]) / sigmaM) }
    public func isViolated(_ p: SIMD2<Double>) -> Bool { slantRange(p) < z[0] }
}
