import Foundation

/// The one seam between sensors and filters (docs/models.md §0): a measurement
/// z ∈ ℝᵐ of the horizontal position p = (E, N) with prediction h(p), Jacobian
/// H = ∂h/∂p (m×2), noise covariance R (m×m) and a validity gate.
///
/// A model may observe the horizontal velocity v = (v_E, v_N) instead (`observedBlock`
/// `.velocity`, e.g. `VelocityMeasurement`): then `predict`, `jacobian` and `logLikelihood` take
/// v as their argument, and the filters embed H in the columns of v_E, v_N. Only the
/// constant-velocity state carries v; in the step state such a model is `.unobservable`.
///
/// The EKF embeds H into the columns of its state that hold E and N; the UKF pushes
/// sigma points through `predict`; the particle filter weights particles with
/// `logLikelihood`, which defaults to the Gaussian N(z; h(p), R) and is overridden
/// by models whose likelihood is not Gaussian (timing-advance annulus, hidden-AP
/// "not heard"). Every conforming type has a finite-difference Jacobian test.
public protocol MeasurementModel: Sendable {
    /// Which estimator/sensor this measurement came from (for per-source gating counters).
    var source: Source { get }
    /// Measurement time, trace s.
    var time: Double { get }
    /// The measured value z (length m).
    var z: [Double] { get }
    /// Measurement noise covariance R (m×m).
    var noise: Matrix { get }
    /// Predicted measurement h(p).
    func predict(_ p: SIMD2<Double>) -> [Double]
    /// Jacobian ∂h/∂p at p (m×2).
    func jacobian(_ p: SIMD2<Double>) -> Matrix
    /// Innovation z − h, with angle components wrapped to (−π, π].
    func innovation(_ h: [Double]) -> [Double]
    /// log p(z | p) up to a constant, for particle weighting.
    func logLikelihood(_ p: SIMD2<Double>) -> Double
    /// χ² gate probability for Mahalanobis gating (e.g. 0.99), or nil for no gate.
    var gateProbability: Double? { get }
    /// Whether component `i` of z is an angle (wrapped). A requirement (not only an
    /// extension method) so that models' overrides are seen by generic code such as
    /// `numericalJacobian`.
    func isAngleComponent(_ i: Int) -> Bool
    /// What the measurement observes, for recognising a repeat of the same observation (a
    /// serving cell's TA reported again unchanged): measurements with the same identity and the
    /// same z are one observation repeated. nil: never treated as a repeat.
    var repeatIdentity: String? { get }
    /// Which 2-vector of the state the model's argument is: the position (default) or the velocity.
    var observedBlock: StateBlock { get }
    /// `self as? PositionMeasurement` without a dynamic cast (nil by default; the filters ask
    /// this for every update: a cast through the existential cost ~1,000 instructions).
    var asPosition: PositionMeasurement? { get }
    /// `self as? any InequalityMeasurement` without a dynamic cast (nil by default;
    /// `InequalityMeasurement` answers itself).
    var asInequality: (any InequalityMeasurement)? { get }
}

/// The 2-vector of the filter state a measurement model observes (`MeasurementModel.observedBlock`).
public enum StateBlock: String, Sendable {
    /// p = (E, N), state components 0 and 1 of both layouts.
    case position
    /// v = (v_E, v_N), state components 2 and 3 of the constant-velocity layout; none in the step layout.
    case velocity

    /// The state indices of the block in `layout`; nil: the layout does not carry it.
    @inlinable public func indices(in layout: StateLayout) -> (Int, Int)? {
        switch self {
        case .position: return (0, 1)
        case .velocity: return layout == .constantVelocity ? (2, 3) : nil
        }
    }
}

extension MeasurementModel {
    public var dimension: Int { z.count }
    public var asPosition: PositionMeasurement? { nil }
    public var asInequality: (any InequalityMeasurement)? { nil }
    public var gateProbability: Double? { 0.99 }
    public func innovation(_ h: [Double]) -> [Double] { zip(z, h).map { $0 - $1 } }

    /// Gaussian log-likelihood −½ νᵀR⁻¹ν (constant dropped). −∞ if R is singular.
    public func logLikelihood(_ p: SIMD2<Double>) -> Double {
        let nu = innovation(predict(p))
        guard let rinv = noise.spdInverse else { return -.infinity }
        let w = rinv * nu
        return -0.5 * zip(nu, w).reduce(0) { $0 + $1.0 * $1.1 }
    }

    /// Central finite-difference Jacobian (step `h` m), for tests of analytic Jacobians.
    public func numericalJacobian(_ p: SIMD2<Double>, step: Double = 1e-5) -> Matrix {
        var j = Matrix(rows: dimension, cols: 2)
        for c in 0..<2 {
            var a = p, b = p
            a[c] += step; b[c] -= step
            let fa = predict(a), fb = predict(b)
            // Use innovation differences so angle wrapping is handled.
            for r in 0..<dimension {
                var d = fa[r] - fb[r]
                if isAngleComponent(r) { d = Angle.wrap(d) }
                j[r, c] = d / (2 * step)
            }
        }
        return j
    }

    /// Whether component `i` of z is an angle (wrapped). Default: none.
    public func isAngleComponent(_ i: Int) -> Bool { false }
    public var repeatIdentity: String? { nil }
    public var observedBlock: StateBlock { .position }

    /// The model's argument taken from a state x of `layout` (nil: the layout lacks the block).
    @inlinable public func argument(_ x: SIMD4<Double>, layout: StateLayout) -> SIMD2<Double>? {
        observedBlock.indices(in: layout).map { SIMD2(x[$0.0], x[$0.1]) }
    }

    /// The rows of H = ∂h/∂x (1×4 each) at state x of `layout`: the model's 2-column Jacobian in
    /// the columns of its block (nil: the layout lacks the block).
    public func stateJacobian(_ x: SIMD4<Double>, layout: StateLayout) -> [SIMD4<Double>]? {
        guard let (a, b) = observedBlock.indices(in: layout) else { return nil }
        let j = jacobian(SIMD2(x[a], x[b]))
        return (0..<dimension).map { r in
            var h = SIMD4<Double>.zero
            h[a] = j[r, 0]; h[b] = j[r, 1]
            return h
        }
    }
}

/// The k-th repeat of one observation (`MeasurementModel.repeatIdentity`), counted as
/// carrying 1/k of its information: R × k for the Gaussian filters and log L / k (a tempered
/// likelihood) for the particle filter — the tight-measurement form of `repeat_inflation`.
public struct RepeatedMeasurement: MeasurementModel {
    public let base: any MeasurementModel
    public let k: Double
    public init(_ base: any MeasurementModel, repeat k: Int) { self.base = base; self.k = Double(max(1, k)) }
    public var source: Source { base.source }
    public var time: Double { base.time }
    public var z: [Double] { base.z }
    public var noise: Matrix { k * base.noise }
    public var gateProbability: Double? { base.gateProbability }
    public var repeatIdentity: String? { base.repeatIdentity }
    public func predict(_ p: SIMD2<Double>) -> [Double] { base.predict(p) }
    public func jacobian(_ p: SIMD2<Double>) -> Matrix { base.jacobian(p) }
    public func innovation(_ h: [Double]) -> [Double] { base.innovation(h) }
    public func logLikelihood(_ p: SIMD2<Double>) -> Double { base.logLikelihood(p) / k }
    public func isAngleComponent(_ i: Int) -> Bool { base.isAngleComponent(i) }
    public var observedBlock: StateBlock { base.observedBlock }
}

/// A loosely coupled position fix used as a measurement: z = p̂, h(p) = p, H = I₂,
/// R = α²·Σ (α calibrated per source so NIS is χ²₂-consistent, `estimators.md` §7.4).
public struct PositionMeasurement: MeasurementModel {
    public var asPosition: PositionMeasurement? { self }
    public let source: Source
    public let time: Double
    public let z: [Double]
    public private(set) var noise: Matrix
    public let gateProbability: Double?
    /// The fix's error correlation (`Fix.errorCorrelation`), for the GNSS bias block.
    public let errorCorrelation: ErrorCorrelation?

    /// R as a symmetric 2×2 covariance.
    public var covariance: Covariance2 { Covariance2(ee: noise[0, 0], en: 0.5 * (noise[0, 1] + noise[1, 0]), nn: noise[1, 1]) }

    /// The same fix with R × k (a calibrated accuracy scale, `AccuracyScale`).
    public func scaled(_ k: Double) -> PositionMeasurement { var m = self; m.noise = k * noise; return m }

    public init(fix: Fix, inflation alpha: Double = 1, gateProbability: Double? = 0.99) {
        source = fix.source; time = fix.time
        z = [fix.position.x, fix.position.y]
        let c = fix.covariance.scaled(alpha * alpha)
        noise = Matrix(rows: 2, cols: 2, data: [c.ee, c.en, c.en, c.nn])     // one array, not three (a fix per report and per scan)
        self.gateProbability = gateProbability
        errorCorrelation = fix.errorCorrelation
    }
    public func predict(_ p: SIMD2<Double>) -> [Double] { [p.x, p.y] }
    public func jacobian(_ p: SIMD2<Double>) -> Matrix { .identity(2) }
}

/// The receiver's own velocity as a measurement (`observedBlock` `.velocity`): z = v̂ = (v_E, v_N)
/// from the reported speed over ground and course (`GNSSFix.velocity`), h(v) = v, H = I₂ on the
/// velocity columns, R = σ_v² I₂ with σ_v the GNSS error model's velocity noise for the phone's
/// family (`GNSSErrorModel.Entry.velocitySigma`, docs/fusion.md "The receiver's velocity"). The
/// chipset's velocity comes from Doppler, not from differenced positions, so it carries information
/// about the motion the position fixes do not: a filter that knows it does not lag behind a
/// vehicle that brakes or turns. Source `gnss` (it is the same phone's receiver).
public struct VelocityMeasurement: MeasurementModel {
    public let source: Source
    public let time: Double
    public let z: [Double]
    public let noise: Matrix
    public let gateProbability: Double?
    public var observedBlock: StateBlock { .velocity }

    /// `sigma`: per-axis σ_v, m/s (> 0).
    public init(velocity v: SIMD2<Double>, sigma: Double, time: Double, source: Source = .gnss, gateProbability: Double? = 0.99) {
        self.source = source; self.time = time
        z = [v.x, v.y]
        noise = Matrix([[sigma * sigma, 0], [0, sigma * sigma]])
        self.gateProbability = gateProbability
    }
    public func predict(_ v: SIMD2<Double>) -> [Double] { [v.x, v.y] }
    public func jacobian(_ v: SIMD2<Double>) -> Matrix { .identity(2) }
}

/// Angle helpers (radians; azimuths clockwise from true north).
public enum Angle {
    /// Wrap to (−π, π].
    @inlinable public static func wrap(_ a: Double) -> Double {
        var x = a.truncatingRemainder(dividingBy: 2 * .pi)
        if x <= -.pi { x += 2 * .pi } else if x > .pi { x -= 2 * .pi }
        return x
    }
    /// Unit vector of azimuth ψ in (E, N): [sin ψ, cos ψ].
    @inlinable public static func unit(_ psi: Double) -> SIMD2<Double> { SIMD2(sin(psi), cos(psi)) }
    /// Right-hand perpendicular [cos ψ, −sin ψ].
    @inlinable public static func perpendicular(_ psi: Double) -> SIMD2<Double> { SIMD2(cos(psi), -sin(psi)) }
    @inlinable public static func radians(_ deg: Double) -> Double { deg * .pi / 180 }
    @inlinable public static func degrees(_ rad: Double) -> Double { rad * 180 / .pi }
}

/// χ² quantiles via GSL (`gsl_cdf_chisq_Pinv`).
public enum ChiSquare {
    public static func quantile(_ p: Double, dof: Int) -> Double {
        // The filters' gate (0.99, 1–4 degrees of freedom) from a table of the same GSL values:
        // the inversion cost ~700 instructions per update.
        if p == 0.99, dof >= 1, dof <= 4 { return gate99[dof - 1] }
        GSL.disableAbort()
        return gsl_cdf_chisq_Pinv(p, Double(dof))
    }

    private static let gate99: [Double] = {
        GSL.disableAbort()
        return (1...4).map { gsl_cdf_chisq_Pinv(0.99, Double($0)) }
    }()
}
import CGSL
