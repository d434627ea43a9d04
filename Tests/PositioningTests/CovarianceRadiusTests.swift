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
}
