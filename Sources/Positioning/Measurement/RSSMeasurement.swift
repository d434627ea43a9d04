import Foundation

/// Log-distance path-loss model (`docs/models.md` §2.1):
/// μ(p) = P0 − 10 n log10(d/d0), d = √(‖p − a‖² + Δh²), d0 = 1 m, with the distance floored
/// at `minDistance` (the model is not valid in the near field; the floor keeps μ finite).
///
/// Gradient: ∂μ/∂p = −10n/(ln 10 · d²)·(p − a) for d > minDistance, 0 inside the floor.
public struct PathLossModel: Sendable, Equatable {
    public var anchor: SIMD3<Double>
    /// RSS at 1 m, dBm.
    public var p0: Double
    /// Path-loss exponent n.
    public var exponent: Double
    /// Phone height above the ENU origin, m.
    public var phoneUp: Double
    public var minDistance: Double

    public init(anchor: SIMD3<Double>, p0: Double, exponent: Double, phoneUp: Double = 0, minDistance: Double = 1) {
        self.anchor = anchor; self.p0 = p0; self.exponent = exponent; self.phoneUp = phoneUp; self.minDistance = minDistance
    }

    public func distance(_ p: SIMD2<Double>) -> Double {
        let dx = p.x - anchor.x, dy = p.y - anchor.y, dz = anchor.z - phoneUp
        return (dx * dx + dy * dy + dz * dz).squareRoot()
    }

    /// μ(p), dBm.
    public func mean(_ p: SIMD2<Double>) -> Double { p0 - 10 * exponent * log10(max(distance(p), minDistance)) }

    /// ∂μ/∂p.
    public func gradient(_ p: SIMD2<Double>) -> SIMD2<Double> {
        let d = distance(p)
        guard d > minDistance else { return .zero }
        let k = -10 * exponent / (log(10.0) * d * d)
        return SIMD2(k * (p.x - anchor.x), k * (p.y - anchor.y))
    }

    /// Range at which μ equals `rss`: d = d0·10^((P0 − rss)/(10n)).
    public func range(forRSS rss: Double) -> Double { pow(10, (p0 - rss) / (10 * exponent)) }
}

/// A received-signal-strength measurement of one AP (tight coupling): z = RSS (dBm),
/// h(p) = μ(p) of `PathLossModel`, H = ∂μ/∂p, R = σ² (shadowing, default 6 dB).
public struct RSSMeasurement: MeasurementModel {
    public let source: Source
    public let time: Double
    public let z: [Double]
    public let noise: Matrix
    public let model: PathLossModel
    public let bssid: String

    public init(time: Double, bssid: String, rss: Double, model: PathLossModel, sigma: Double = 6, source: Source = .wcl) {
        self.time = time; self.bssid = bssid; self.model = model; self.source = source
        z = [rss]
        noise = Matrix(rows: 1, cols: 1, data: [sigma * sigma])
    }

    public func predict(_ p: SIMD2<Double>) -> [Double] { [model.mean(p)] }
    public func jacobian(_ p: SIMD2<Double>) -> Matrix {
        let g = model.gradient(p)
        return Matrix(rows: 1, cols: 2, data: [g.x, g.y])
    }
}

/// HAPEL's "not heard" negative information (`docs/models.md` §3.2 step 6): APs in the
/// map near the phone that the scan did not report. For each hidden AP j,
/// P(miss_j | p) = Φ((r_th − μ_j(p))/σ), so
///   log L(p) = Σ_j log Φ((r_th − μ_j(p))/σ).
/// z = [r_th, …] (one bound per AP), h(p) = [μ_j(p)], H = rows ∂μ_j/∂p, R = σ²·I.
/// Gaussian filters apply it only when violated (μ_j(p) ≥ r_th, i.e. p inside the exclusion
/// disc ‖p − a_j‖ < ρ_j = 10^((P0_j − r_th)/(10 n))), as a projection/pseudo-measurement.
public struct HiddenAPMeasurement: InequalityMeasurement {
    public let source: Source
    public let time: Double
    public let z: [Double]
    public let noise: Matrix
    public let models: [PathLossModel]
    public let bssids: [String]
    /// Detection threshold r_th, dBm, and shadowing σ, dB.
    public let threshold: Double
    public let sigma: Double
    public var gateProbability: Double? { nil }

    public init(time: Double, bssids: [String], models: [PathLossModel], threshold: Double, sigma: Double = 6,
                source: Source = .hapel) {
        precondition(bssids.count == models.count)
        self.time = time; self.bssids = bssids; self.models = models; self.threshold = threshold
        self.sigma = sigma; self.source = source
        z = [Double](repeating: threshold, count: models.count)
        noise = Matrix.diagonal([Double](repeating: sigma * sigma, count: models.count))
    }

    public func predict(_ p: SIMD2<Double>) -> [Double] { models.map { $0.mean(p) } }
    public func jacobian(_ p: SIMD2<Double>) -> Matrix {
        var j = Matrix(rows: models.count, cols: 2)
        for (i, m) in models.enumerated() { let g = m.gradient(p); j[i, 0] = g.x; j[i, 1] = g.y }
        return j
    }
    /// Σ_j log Φ((r_th − μ_j(p))/σ).
    public func logLikelihood(_ p: SIMD2<Double>) -> Double {
        models.reduce(0) { $0 + NormalCDF.logPhi((threshold - $1.mean(p)) / sigma) }
    }
    public func isViolated(_ p: SIMD2<Double>) -> Bool { models.contains { $0.mean(p) >= threshold } }
}
