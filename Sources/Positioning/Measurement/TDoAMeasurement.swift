/// The TDoA range-difference vector as a tight-coupling measurement
/// (`docs/models.md` §4A, §7.1).
///
/// z = [ρ_21, …, ρ_M1] (m), h_i(p) = ‖P − s_i‖ − ‖P − s_1‖ with P = (E, N, height),
/// H row i = (P − s_i)ᵀ/r_i − (P − s_1)ᵀ/r_1 (horizontal components),
/// R = Q_ρ = σ₁²11ᵀ + diag(σ₂², …, σ_M²) (m², the differences are correlated through
/// the reference beacon). Degenerate: at a beacon (r_i = 0) the Jacobian row is taken
/// with r_i clamped to 1 mm.
public struct TDoAMeasurement: MeasurementModel {
    public let source: Source
    public let time: Double
    public let z: [Double]
    public let noise: Matrix
    /// Beacon positions, reference first (ENU m).
    public let beacons: [SIMD3<Double>]
    /// Phone height (ENU up, m).
    public let height: Double

    public init(time: Double, beacons: [SIMD3<Double>], rangeDifferences: [Double], sigmas: [Double],
                height: Double, source: Source = .tdoa) {
        precondition(beacons.count == rangeDifferences.count + 1 && sigmas.count == beacons.count)
        self.source = source; self.time = time; self.beacons = beacons; self.height = height
        z = rangeDifferences
        let n = rangeDifferences.count
        var q = Matrix(rows: n, cols: n, repeating: sigmas[0] * sigmas[0])
        for i in 0..<n { q[i, i] += sigmas[i + 1] * sigmas[i + 1] }
        noise = q
    }

    /// From a solved epoch (the solved height is used when the solve was 3-D).
    public init(solution s: TDoASolution) {
        let h: Double
        if case .planar(let ph) = s.problem.mode { h = ph } else { h = s.estimate.position[2] }
        self.init(time: s.fix.time, beacons: s.problem.beacons, rangeDifferences: s.problem.rangeDifferences,
                  sigmas: s.problem.sigmas, height: h)
    }

    public func predict(_ p: SIMD2<Double>) -> [Double] {
        let pt = SIMD3(p.x, p.y, height)
        let r1 = distance(pt, beacons[0])
        return beacons.dropFirst().map { distance(pt, $0) - r1 }
    }

    public func jacobian(_ p: SIMD2<Double>) -> Matrix {
        let pt = SIMD3(p.x, p.y, height)
        let u1 = pt - beacons[0]
        let r1 = max(distance(pt, beacons[0]), 1e-3)
        var j = Matrix(rows: z.count, cols: 2)
        for i in 0..<z.count {
            let ui = pt - beacons[i + 1]
            let ri = max(distance(pt, beacons[i + 1]), 1e-3)
            j[i, 0] = ui.x / ri - u1.x / r1
            j[i, 1] = ui.y / ri - u1.y / r1
        }
        return j
    }
}
