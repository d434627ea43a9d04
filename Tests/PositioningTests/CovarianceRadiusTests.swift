import Foundation
import Testing
@testable import Positioning

/// `Covariance2.circularRadius`: the radius of the circle about the mean that holds probability p.
@Suite struct CovarianceRadiusTests {
    /// P(‖x‖ ≤ r) by an independent route: Cartesian slices in the principal frame,
    /// ∫_{−r}^{r} φ(x; s1) · erf(√(r² − x²) / (s2 √2)) dx, composite Simpson with x = r sin u
    /// (removes the square-root end singularity).
    static func probabilityBySlices(r: Double, s1: Double, s2: Double) -> Double {
        let n = 20_000                                           // even
        let h = Double.pi / Double(n)
        var acc = 0.0
        for k in 0...n {
            let u = -Double.pi / 2 + Double(k) * h
            let x = r * sin(u), y = r * cos(u)
            let f = exp(-x * x / (2 * s1 * s1)) / (s1 * (2 * Double.pi).squareRoot()) * erf(y / (s2 * 2.0.squareRoot())) * r * cos(u)
            acc += f * (k == 0 || k == n ? 1 : (k % 2 == 1 ? 4 : 2))
        }
        return acc * h / 3
    }

    @Test func circularCaseIsExact() {
        // Rayleigh: r = σ √(−2 ln(1 − p)) = 2.447746830680816 σ for p = 0.95.
        let r = Covariance2(sigma: 3).circularRadius(probability: 0.95)
        #expect(abs(r - 3 * 2.447746830680816) < 1e-9)
    }

    @Test func ellipticalMatchesSliceIntegration() {
        for (s1, s2, angle) in [(3.0, 1.0, 0.5), (10.0, 0.5, -1.1), (2.0, 1.9, 0.0), (50.0, 5.0, 2.0), (4.0, 1e-3, 0.3), (4.0, 4e-5, 0.0)] {
            let c = cos(angle), s = sin(angle)
            let cov = Covariance2(ee: s1 * s1 * c * c + s2 * s2 * s * s, en: (s1 * s1 - s2 * s2) * c * s,
                                  nn: s1 * s1 * s * s + s2 * s2 * c * c)
            for p in [0.5, 0.95, 0.99] {
                let r = cov.circularRadius(probability: p)
                let q = Self.probabilityBySlices(r: r, s1: s1, s2: s2)
                #expect(abs(q - p) < 1e-7, "s1 \(s1) s2 \(s2) p \(p): P(r = \(r)) = \(q)")
            }
        }
    }

    @Test func degenerateLimitIsOneDimensional() {
        // s2 → 0: P(|x| ≤ r) with x ~ N(0, s1²): r = 1.959963984540054 s1 for p = 0.95.
        let r = Covariance2(ee: 16, en: 0, nn: 1e-20).circularRadius(probability: 0.95)
        #expect(abs(r - 4 * 1.959963984540054) < 1e-6)
        let nearly = Covariance2(ee: 16, en: 0, nn: 1e-9).circularRadius(probability: 0.95)
        #expect(abs(nearly - 4 * 1.959963984540054) < 1e-3)
    }

    /// The radius before the one-exp-per-distinct-node change (one exp per quadrature node),
    /// kept here as the reference the new evaluation must match bit for bit.
    static func radiusOneExpPerNode(_ cov: Covariance2, probability p: Double) -> Double {
        let ax = cov.principalAxes
        let s1 = ax.major, s2 = ax.minor
        if s1 <= 0 { return 0 }
        if s2 <= 1e-6 * s1 { return s1 * sqrt(2) * inverseErf(p) }
        let n = Covariance2.quadratureNodes
        var h = [Double](repeating: 0, count: n)
        for i in 0..<n {
            let c = Covariance2.quadratureTrig[2 * i], sn = Covariance2.quadratureTrig[2 * i + 1]
            h[i] = s1 * s1 * c * c + s2 * s2 * sn * sn
        }
        func residual(_ r: Double) -> (f: Double, df: Double) {
            var acc = 0.0, dacc = 0.0
            for i in 0..<n {
                let e = exp(-r * r / (2 * h[i]))
                acc += 1 - e
                if e > 0 { dacc += r / h[i] * e }
            }
            return (acc / Double(n) - p, dacc / Double(n))
        }
        var lo = 0.0, hi = 4 * s1
        var doublings = 0
        while residual(hi).f < 0 && doublings < 64 { hi *= 2; doublings += 1 }
        var r = min(max((s1 * s2).squareRoot() * Covariance2.ellipseScale(probability: p), lo), hi)
        for _ in 0..<100 {
            let (f, df) = residual(r)
            if f < 0 { lo = r } else { hi = r }
            var next = df > 0 ? r - f / df : .nan
            if !(next > lo && next < hi) { next = 0.5 * (lo + hi) }
            if abs(next - r) <= 1e-14 * r || hi - lo <= 1e-14 * hi { return next }
            r = next
        }
        return r
    }

    /// Evaluating exp once per distinct node value gives the same bits as once per node: circular
    /// and near-circular covariances (few distinct h(φᵢ)), elliptical ones (all distinct: the
    /// per-node path), seeded.
    @Test func distinctNodeExpIsBitIdentical() {
        var state: UInt64 = 0x9E3779B97F4A7C15
        func uniform() -> Double {
            state &+= 0x9E3779B97F4A7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) &* 0x94D049BB133111EB; z ^= z >> 31
            return Double(z >> 11) / Double(1 << 53)
        }
        for k in 0..<3_000 {
            let sigma = 0.01 + 300 * uniform()
            let cov: Covariance2
            switch k % 4 {
            case 0: cov = Covariance2(sigma: sigma)
            case 1: cov = Covariance2(ee: sigma * sigma, en: 0, nn: sigma * sigma * (1 + 1e-15 * uniform()))
            case 2: cov = Covariance2(ee: sigma * sigma, en: sigma * sigma * 1e-12 * uniform(), nn: sigma * sigma)
            default:
                let s2 = sigma * (0.01 + uniform()), a = 3 * uniform()
                cov = Covariance2(ee: sigma * sigma * cos(a) * cos(a) + s2 * s2 * sin(a) * sin(a), en: (sigma * sigma - s2 * s2) * cos(a) * sin(a),
                                  nn: sigma * sigma * sin(a) * sin(a) + s2 * s2 * cos(a) * cos(a))
            }
            for p in [0.5, 0.95, 0.99] {
                let a = cov.circularRadius(probability: p), b = Self.radiusOneExpPerNode(cov, probability: p)
                #expect(a.bitPattern == b.bitPattern, "\(cov) p \(p): \(a) vs \(b)")
            }
        }
    }
}
