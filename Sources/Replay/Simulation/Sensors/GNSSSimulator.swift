import Foundation
import Positioning

/// GNSS fixes as a phone reports them (docs/simulator.md §GNSS).
///
/// Error model per epoch k (Δt = 1/rate), per axis E, N (U scaled by `vertical_factor`):
///   e_k = b_k + w_k,  b_k first-order Gauss–Markov (σ_b, τ_b) — slowly varying bias
///         (atmosphere, orbit/clock, multipath that changes with geometry);
///   w_k ~ N(0, σ_w²) — receiver noise;
///   with probability p_out an outlier: + r·[sin α, cos α], r ~ Exp(mean m), α ~ U[0, 2π) (NLOS multipath).
/// Availability: two-state Markov chain (Gilbert) with stationary availability A and mean
///   outage T_out: P(on→off) = Δt/T_on, P(off→on) = Δt/T_out, T_on = A·T_out/(1 − A).
/// Reported accuracy (68 % radius): s·1.5096·√(σ_w² + σ_b²)·exp(N(0, σ_ln²)) — it follows the
///   configured statistics, not the actual error of the epoch, and `s` < 1 models the
///   optimism of phones in multipath.
struct GNSSSimulator {
    let spec: GNSSSpec

    func events(trajectory tr: Trajectory, device: String, frame: LocalFrame, seed: UInt64, until end: Double) -> [TraceEvent] {
        let rng = SimRNG(seed: seed, stream: "gnss/\(device)")
        let dt = 1 / spec.rate
        var bE = GaussMarkov(sigma: spec.biasSigma, tau: spec.biasTau, rng: rng)
        var bN = GaussMarkov(sigma: spec.biasSigma, tau: spec.biasTau, rng: rng)
        var bU = GaussMarkov(sigma: spec.biasSigma * spec.verticalFactor, tau: spec.biasTau, rng: rng)
        var on = rng.uniform() < spec.availability
        let tOn = spec.availability >= 1 ? Double.infinity : spec.availability * spec.meanOutage / (1 - spec.availability)
        let sigmaH = (spec.whiteSigma * spec.whiteSigma + spec.biasSigma * spec.biasSigma).squareRoot()
        var out: [TraceEvent] = []
        var k = 1
        while true {
            let t = Double(k) * dt
            if t > end + 1e-9 { break }
            k += 1
            let e1 = bE.step(dt, rng: rng), n1 = bN.step(dt, rng: rng), u1 = bU.step(dt, rng: rng)
            if spec.availability < 1 {
                if on { if rng.bernoulli(dt / tOn) { on = false } } else if rng.bernoulli(dt / spec.meanOutage) { on = true }
            }
            let we = rng.gaussian(spec.whiteSigma), wn = rng.gaussian(spec.whiteSigma), wu = rng.gaussian(spec.whiteSigma * spec.verticalFactor)
            var oe = 0.0, on2 = 0.0
            if rng.bernoulli(spec.outlierProbability) {
                let r = rng.exponential(mean: spec.outlierMean), a = rng.uniform(0, 2 * .pi)
                oe = r * sin(a); on2 = r * cos(a)
            }
            let lnAcc = rng.gaussian(spec.accuracyLogSigma), lnV = rng.gaussian(spec.accuracyLogSigma)
            guard on else { continue }
            let s = tr.state(at: t)
            let g = frame.geodetic(east: s.e + e1 + we + oe, north: s.n + n1 + wn + on2, up: s.u + u1 + wu)
            let acc = quantise(spec.accuracyScale * 1.5096 * sigmaH * exp(lnAcc), 0.1)
            let vacc = quantise(spec.accuracyScale * 1.5096 * sigmaH * spec.verticalFactor * exp(lnV), 0.1)
            out.append(TraceEvent(time: quantise(t, 1e-3), device: device, payload: .gnss(GNSSFix(
                latitude: quantise(g.latitude, spec.resolutionDeg), longitude: quantise(g.longitude, spec.resolutionDeg),
                altitude: quantise(g.height, 0.1), accuracy: max(0.1, acc), verticalAccuracy: max(0.1, vacc)))))
        }
        return out
    }
}
