import Foundation

/// Covariance intersection: one consistent estimate from several estimates of the same 2-D
/// position whose errors are correlated in an unknown way (docs/fusion.md, "One WiFi update per
/// scan").
///
/// Adding the information of n estimates, P⁻¹ = Σ Pᵢ⁻¹, is right only when their errors are
/// independent. The WiFi estimators of one scan (`wcl`, `hapel`, `fingerprint`, `rss`) all read the
/// same RSS values against the same learned map, so a shadowed AP or a blind spot of the map moves
/// them together; adding them claims n times the information the scan holds. Covariance
/// intersection (Julier & Uhlmann, "A non-divergent estimation algorithm in the presence of
/// unknown correlations", ACC 1997) takes a convex combination of the informations,
///
///   P⁻¹ = Σ ωᵢ Pᵢ⁻¹,   x = P Σ ωᵢ Pᵢ⁻¹ xᵢ,   ωᵢ ≥ 0, Σ ωᵢ = 1,
///
/// which is consistent (P ≥ the true error covariance when each Pᵢ is) for any cross-correlation.
/// The weights are the closed form of fast covariance intersection (Niehsen, "Information fusion
/// based on fast covariance intersection filtering", FUSION 2002): ωᵢ ∝ 1 / tr Pᵢ, so the sharper
/// estimate dominates without an optimisation per scan.
///
/// Exact properties (tests): n copies of one estimate give it back; fully correlated equal
/// errors keep their covariance (naive addition would halve it).
public enum CovarianceIntersection {
    /// The fast-CI combination; nil when no estimate has a finite position and a positive
    /// definite covariance.
    public static func fast(_ estimates: [(position: SIMD2<Double>, covariance: Covariance2)]) -> (position: SIMD2<Double>, covariance: Covariance2)? {
        let usable = estimates.filter { $0.position.x.isFinite && $0.position.y.isFinite && $0.covariance.inverse != nil && $0.covariance.trace > 0 }
        guard !usable.isEmpty else { return nil }
        if usable.count == 1 { return usable[0] }
        let w = usable.map { 1 / $0.covariance.trace }
        let total = w.reduce(0, +)
        var yee = 0.0, yen = 0.0, ynn = 0.0, ye = 0.0, yn = 0.0
        for (e, wi) in zip(usable, w) {
            let omega = wi / total
            guard let inv = e.covariance.inverse else { continue }
            yee += omega * inv.ee; yen += omega * inv.en; ynn += omega * inv.nn
            ye += omega * (inv.ee * e.position.x + inv.en * e.position.y)
            yn += omega * (inv.en * e.position.x + inv.nn * e.position.y)
        }
        guard let p = Covariance2(ee: yee, en: yen, nn: ynn).inverse else { return nil }
        return (SIMD2(p.ee * ye + p.en * yn, p.en * ye + p.nn * yn), p)
    }
}
