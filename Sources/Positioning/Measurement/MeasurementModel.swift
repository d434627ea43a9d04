import Foundation

/// The one seam between sensors and filters (docs/models.md §0): a measurement
/// z ∈ ℝᵐ of the horizontal position p = (E, N) with prediction h(p), Jacobian
/// H = ∂h/∂p (m×2), noise covariance R (m×m) and a validity gate.
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
}

extension MeasurementModel {
    public var dimension: Int { z.count }
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
}

/// A loosely coupled position fix used as a measurement: z = p̂, h(p) = p, H = I₂,
/// R = α²·Σ (α calibrated per source so NIS is χ²₂-consistent, `estimators.md` §7.4).
public struct PositionMeasurement: MeasurementModel {
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
        noise = Matrix([[c.ee, c.en], [c.en, c.nn]])
        self.gateProbability = gateProbability
        errorCorrelation = fix.errorCorrelation
    }
    public func predict(_ p: SIMD2<Double>) -> [Double] { [p.x, p.y] }
    public func jacobian(_ p: SIMD2<Double>) -> Matrix { .identity(2) }
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
        GSL.disableAbort()
        return gsl_cdf_chisq_Pinv(p, Double(dof))
    }
}
import CGSL
