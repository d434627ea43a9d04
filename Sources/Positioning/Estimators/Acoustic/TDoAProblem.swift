/// Geometry of a TDoA solve: 2-D with a known phone height, or full 3-D.
public enum TDoAMode: Sendable, Equatable {
    /// Unknown (E, N); the phone's height `height` (m, ENU up) is known.
    case planar(height: Double)
    /// Unknown (E, N, U).
    case spatial

    /// Number of unknown coordinates D.
    public var dimension: Int {
        if case .planar = self { return 2 }
        return 3
    }
}

/// One TDoA problem in metres (`docs/models.md` §4A).
///
/// Beacon 0 is the reference. `rangeDifferences[i−1]` is ρ_i1 = r_i − r_1 (m) for
/// beacon i = 1…M−1 (already reduced by the emission schedule and multiplied by the
/// speed of sound). `sigmas[i]` is beacon i's one-way range noise σ_i = c_s·σ_TOA,i (m),
/// so the difference covariance is Q_ρ = σ₁²·11ᵀ + diag(σ₂², …, σ_M²) (m²).
public struct TDoAProblem: Sendable, Equatable {
    public var beacons: [SIMD3<Double>]
    public var rangeDifferences: [Double]
    public var sigmas: [Double]
    public var mode: TDoAMode

    public init(beacons: [SIMD3<Double>], rangeDifferences: [Double], sigmas: [Double], mode: TDoAMode) {
        self.beacons = beacons; self.rangeDifferences = rangeDifferences; self.sigmas = sigmas; self.mode = mode
    }

    /// Convenience: equal σ for every beacon.
    public init(beacons: [SIMD3<Double>], rangeDifferences: [Double], sigma: Double, mode: TDoAMode) {
        self.init(beacons: beacons, rangeDifferences: rangeDifferences,
                  sigmas: [Double](repeating: sigma, count: beacons.count), mode: mode)
    }

    /// Noise-free range differences ρ_i1 = ‖P − s_i‖ − ‖P − s_1‖ for a true point P.
    public static func rangeDifferences(beacons: [SIMD3<Double>], at p: SIMD3<Double>) -> [Double] {
        let r1 = distance(p, beacons[0])
        return beacons.dropFirst().map { distance(p, $0) - r1 }
    }

    /// The problem without beacon `k` (k = 0 re-references to the next beacon).
    public func removing(_ k: Int) -> TDoAProblem {
        // Work in "pseudo-ranges relative to beacon 0": ρ̃_0 = 0, ρ̃_i = ρ_i1.
        var rel = [0.0] + rangeDifferences
        var b = beacons, s = sigmas
        rel.remove(at: k); b.remove(at: k); s.remove(at: k)
        let ref = rel[0]
        return TDoAProblem(beacons: b, rangeDifferences: rel.dropFirst().map { $0 - ref }, sigmas: s, mode: mode)
    }

    /// Beacon k's studentised deleted residual at p̂, the solution of the problem without it
    /// (covariance `covariance`, D×D row-major): its pseudo-range ρ̃_k (ρ̃_0 = 0, ρ̃_i = ρ_i1)
    /// minus ‖P̂ − s_k‖, less the mean of the same over the other beacons (their common clock
    /// term), divided by its standard deviation √(σ_k² + Σ_{j≠k} σ_j²/(M − 1)² + gᵀ P g), g its
    /// gradient in p. Positive when beacon k's sound arrived later than the others place it —
    /// the only way a blocked direct path (NLoS) errs.
    public func deletedResidual(_ k: Int, at p: [Double], covariance c: [Double]) -> Double {
        let q = point(p), d = mode.dimension, m = Double(beacons.count - 1)
        let rel = [0.0] + rangeDifferences
        var others = 0.0, variance = sigmas[k] * sigmas[k]
        var g = [Double](repeating: 0, count: d)
        func unit(_ j: Int) -> SIMD3<Double> { let v = q - beacons[j]; return v / max(distance(q, beacons[j]), 1e-9) }
        for j in beacons.indices where j != k {
            others += rel[j] - distance(q, beacons[j])
            variance += sigmas[j] * sigmas[j] / (m * m)
            let u = unit(j)
            for a in 0..<d { g[a] += u[a] / m }
        }
        let uk = unit(k)
        for a in 0..<d { g[a] -= uk[a] }
        for a in 0..<d { for b in 0..<d { variance += g[a] * c[a * d + b] * g[b] } }
        return (rel[k] - distance(q, beacons[k]) - others / m) / variance.squareRoot()
    }

    /// The full 3-D point for the unknown vector p (length D).
    @inline(__always)
    func point(_ p: [Double]) -> SIMD3<Double> {
        switch mode {
        case .planar(let h): return SIMD3(p[0], p[1], h)
        case .spatial: return SIMD3(p[0], p[1], p[2])
        }
    }
}

@inline(__always) func distance(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> Double {
    let d = a - b
    return (d * d).sum().squareRoot()
}
