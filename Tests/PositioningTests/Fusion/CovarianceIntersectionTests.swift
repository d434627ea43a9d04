import Foundation
import Testing
@testable import Positioning

/// Covariance intersection of one scan's WiFi fixes (`CovarianceIntersection`, FusionStage
/// `combine_scan_fixes`).
@Suite struct CovarianceIntersectionTests {
    let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))

    /// n copies of one estimate give it back exactly (Σ ωᵢ = 1).
    @Test func copiesGiveTheEstimateBack() throws {
        let p = Covariance2(ee: 9, en: 2, nn: 4), x = SIMD2<Double>(3, -7)
        let c = try #require(CovarianceIntersection.fast([(x, p), (x, p), (x, p)]))
        #expect(abs(c.position.x - 3) < 1e-12 && abs(c.position.y + 7) < 1e-12)
        #expect(abs(c.covariance.ee - 9) < 1e-12 && abs(c.covariance.en - 2) < 1e-12 && abs(c.covariance.nn - 4) < 1e-12)
    }

    /// Closed form by hand: P₁ = I, P₂ = 4I → tr 2 and 8, ω = (0.8, 0.2), P⁻¹ = 0.8 I + 0.05 I,
    /// P = I / 0.85, x = (0.8 x₁ + 0.05 x₂) / 0.85. Naive addition would give P = I / 1.25.
    @Test func weightsByHand() throws {
        let c = try #require(CovarianceIntersection.fast([(SIMD2(0, 0), Covariance2(sigma: 1)), (SIMD2(17, 0), Covariance2(sigma: 2))]))
        #expect(abs(c.covariance.ee - 1 / 0.85) < 1e-12 && abs(c.covariance.nn - 1 / 0.85) < 1e-12 && abs(c.covariance.en) < 1e-15)
        #expect(abs(c.position.x - 0.05 * 17 / 0.85) < 1e-12 && abs(c.position.y) < 1e-15)
        #expect(CovarianceIntersection.fast([]) == nil)
        #expect(CovarianceIntersection.fast([(SIMD2(0, 0), Covariance2.zero)]) == nil)
    }

    /// Two estimators that share their error completely (one scan, one map): the intersection
    /// stays consistent (ANEES ≤ 2 over seeded draws), adding the informations does not.
    @Test func fullyCorrelatedErrorsStayConsistent() throws {
        var rng = TestRNG(seed: 20)
        let p1 = Covariance2(ee: 16, en: 3, nn: 9), p2 = p1.scaled(2)
        var ci = 0.0, naive = 0.0
        let n = 4000
        for _ in 0..<n {
            let z = SIMD2(rng.gaussian(), rng.gaussian())
            let l = (ee: p1.ee.squareRoot(), ne: p1.en / p1.ee.squareRoot())   // Cholesky of p1
            let e = SIMD2(l.ee * z.x, l.ne * z.x + (p1.nn - l.ne * l.ne).squareRoot() * z.y)
            let c = try #require(CovarianceIntersection.fast([(e, p1), (e, p2)]))
            ci += try #require(c.covariance.mahalanobis2(c.position))
            let sum = try #require(Covariance2(ee: p1.inverse!.ee + p2.inverse!.ee, en: p1.inverse!.en + p2.inverse!.en,
                                               nn: p1.inverse!.nn + p2.inverse!.nn).inverse)
            naive += try #require(sum.mahalanobis2(e))
        }
        // Exact expectations: ω = (2/3, 1/3) → P⁻¹ = (2/3 + 1/6) P₁⁻¹, ANEES 2 × 5/6 = 1.667;
        // naive P⁻¹ = 1.5 P₁⁻¹, ANEES 3. Sampling σ of the mean ≈ 2/√n·… ≈ 0.03.
        #expect(abs(ci / Double(n) - 5.0 / 3.0) < 0.1)
        #expect(abs(naive / Double(n) - 3.0) < 0.15)
    }

    /// In the filter: a scan's wcl and fingerprint fixes make ONE update, equal to fusing their
    /// intersection alone; the other member is counted `combined`. Without it (the default,
    /// `combine_scan_fixes: false`): two updates, a smaller, overconfident P.
    @Test func oneUpdatePerScan() throws {
        func scan(_ t: Double) -> [StageResult] {
            [.fix(Fix(time: t, position: SIMD2(10, 4), covariance: Covariance2(sigma: 8), source: .wcl)),
             .fix(Fix(time: t, position: SIMD2(16, 0), covariance: Covariance2(sigma: 5), source: .fingerprint))]
        }
        func final(_ s: FusionStage.Settings, _ events: [[StageResult]]) -> (Fix, FusionStage) {
            let stage = FusionStage(settings: s)
            var last: Fix?
            for u in events {
                guard case .fix(let f)? = u.first else { continue }
                let e = TraceEvent(time: f.time, payload: .wifi(WiFiScan(accessPoints: [])))
                for r in stage.process(e, upstream: u, context: context) { if case .fix(let y) = r { last = y } }
            }
            return (last!, stage)
        }
        var on = FusionStage.Settings(kind: .ekf); on.scanCombined = FusionStage.Settings.scanCombinable
        var off = on; off.scanCombined = []
        let (a, sa) = final(on, [scan(0), scan(2)])
        // The same filter fed the intersection of the inflated fixes (α = 1.5 each) as a prescaled fix.
        let c = try #require(CovarianceIntersection.fast([(SIMD2(10, 4), Covariance2(sigma: 12)), (SIMD2(16, 0), Covariance2(sigma: 7.5))]))
        var ref = on; ref.inputs = [.fingerprint]; ref.inflation[.fingerprint] = 1
        let cf = { (t: Double) -> [StageResult] in [.fix(Fix(time: t, position: c.position, covariance: c.covariance, source: .fingerprint))] }
        let (b, _) = final(ref, [cf(0), cf(2)])
        #expect((a.position - b.position).x.magnitude < 1e-9 && (a.position - b.position).y.magnitude < 1e-9)
        #expect(abs(a.covariance.ee - b.covariance.ee) < 1e-9 && abs(a.covariance.nn - b.covariance.nn) < 1e-9)
        #expect(sa.counters[.wcl]?.combined == 2 && (sa.counters[.wcl]?.accepted ?? 0) == 0)
        #expect((sa.counters[.fingerprint].map { $0.accepted + $0.initializations } ?? 0) == 2)
        let (d, sd) = final(off, [scan(0), scan(2)])
        #expect((sd.counters[.wcl].map { $0.accepted + $0.initializations } ?? 0) >= 1 && d.covariance.ee < 0.9 * a.covariance.ee)
    }
}
