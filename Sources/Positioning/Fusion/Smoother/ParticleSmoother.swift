import Foundation

/// Particle smoother over the genealogy of a sequential importance resampling filter
/// (Kitagawa, "Monte Carlo filter and smoother for non-Gaussian nonlinear state space models",
/// J. Comp. Graph. Stat. 5, 1996, §4; Doucet & Johansen, "A tutorial on particle filtering and
/// smoothing", 2009, §4.1 "the path-space approximation").
///
/// The SIR filter's weighted particles at the last epoch N, each with the path of its ancestors
/// (`SealedCloud.parent` links each output epoch's particle to its ancestor at the previous
/// output epoch), approximate the joint smoothing density p(x₀:N | z₁:N). Its marginal at
/// epoch k is the cloud at k in which ancestor j carries the summed final weights of its
/// descendants:
///
///     p(xₖ | z₁:N) ≈ Σᵢ wᵢᴺ δ(xₖ − xₖ^{a_k(i)}),   a_k(i) = the ancestor at k of final particle i,
///
/// reported as its weighted mean and covariance (E, N). Everything a particle filter constrains
/// carries over: a path whose step crossed a wall of the floor plan got weight 0 and left no
/// descendants, so the smoothed track keeps only wall-respecting histories; a walk's later WiFi
/// fixes and turns re-weigh its early positions.
///
/// Limitation (measured in docs/fusion.md, "Particle smoother"): resampling merges paths, so far
/// back from the end few distinct ancestors remain (path degeneracy) and the marginal's spread
/// can understate the error. A segment boundary (parent −1: the filter was restarted) starts
/// the recursion afresh from that segment's last cloud.
public enum ParticleSmoother {
    /// Smoothed (mean, covariance, distinct ancestors) of the position at every cloud, in order;
    /// nil entries stay nil.
    public static func smooth(_ clouds: [SealedCloud?]) -> [(mean: SIMD2<Double>, covariance: Covariance2, distinct: Int)?] {
        var out: [(mean: SIMD2<Double>, covariance: Covariance2, distinct: Int)?] = Array(repeating: nil, count: clouds.count)
        // Weight of each particle of the current cloud (summed over its descendants at the segment's end).
        var weight: [Double]? = nil
        for k in stride(from: clouds.count - 1, through: 0, by: -1) {
            guard let c = clouds[k] else { continue }
            let n = c.weight.count
            if weight?.count != n { weight = c.weight }
            let w = weight!
            var total = 0.0, m = SIMD2<Double>.zero, distinct = 0
            for i in 0..<n where w[i] > 0 { total += w[i]; m += w[i] * SIMD2(c.east[i], c.north[i]); distinct += 1 }
            if total > 0 {
                m /= total
                var ee = 0.0, en = 0.0, nn = 0.0
                for i in 0..<n where w[i] > 0 {
                    let dx = c.east[i] - m.x, dy = c.north[i] - m.y
                    ee += w[i] * dx * dx; en += w[i] * dx * dy; nn += w[i] * dy * dy
                }
                out[k] = (m, Covariance2(ee: ee / total, en: en / total, nn: nn / total), distinct)
            }
            // Hand the weights to the parents in the previous cloud.
            if c.parent.contains(where: { $0 < 0 }) { weight = nil; continue }
            guard let prev = clouds[..<k].last(where: { $0 != nil }) ?? nil else { weight = nil; continue }
            var up = [Double](repeating: 0, count: prev.weight.count)
            for i in 0..<n where w[i] > 0 {
                let p = Int(c.parent[i])
                if p < up.count { up[p] += w[i] }
            }
            weight = up
        }
        return out
    }
}
