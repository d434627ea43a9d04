/// An acoustic range to a peer phone as a tight-coupling measurement
/// (`docs/models.md` §4B, single-user filter form).
///
/// z = [D] (m), h(p) = ‖p − p_j‖, H = uᵀ with u = (p − p_j)/‖p − p_j‖,
/// R = σ_D² + uᵀΣ_j u: the peer's own position uncertainty Σ_j projected on the line of
/// sight (evaluated at the linearisation point given at construction, normally the
/// filter's prior estimate). Degenerate: at p = p_j the direction is undefined; the
/// Jacobian is taken along the x axis and R uses the larger eigenvalue of Σ_j.
public struct PeerRangeMeasurement: MeasurementModel {
    public let source: Source
    public let time: Double
    public let z: [Double]
    public let noise: Matrix
    public let peer: String
    public let peerPosition: SIMD2<Double>
    public let peerCovariance: Covariance2
    public let rangeSigma: Double

    public init(time: Double, peer: String, range: Double, sigma: Double, peerPosition: SIMD2<Double>,
                peerCovariance: Covariance2, linearisationPoint: SIMD2<Double>, source: Source = .peer) {
        self.source = source; self.time = time; self.peer = peer; self.peerPosition = peerPosition
        self.peerCovariance = peerCovariance; self.rangeSigma = sigma
        z = [range]
        let d = linearisationPoint - peerPosition
        let n = (d * d).sum().squareRoot()
        let proj: Double
        if n > 1e-9 {
            let u = d / n
            proj = u.x * u.x * peerCovariance.ee + 2 * u.x * u.y * peerCovariance.en + u.y * u.y * peerCovariance.nn
        } else {
            proj = peerCovariance.principalAxes.major * peerCovariance.principalAxes.major
        }
        noise = Matrix(rows: 1, cols: 1, data: [sigma * sigma + proj])
    }

    public func predict(_ p: SIMD2<Double>) -> [Double] {
        let d = p - peerPosition
        return [(d * d).sum().squareRoot()]
    }

    public func jacobian(_ p: SIMD2<Double>) -> Matrix {
        let d = p - peerPosition
        let n = (d * d).sum().squareRoot()
        guard n > 1e-9 else { return Matrix(rows: 1, cols: 2, data: [1, 0]) }
        return Matrix(rows: 1, cols: 2, data: [d.x / n, d.y / n])
    }
}
