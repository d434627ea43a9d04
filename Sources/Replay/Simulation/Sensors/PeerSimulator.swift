import Foundation
import Positioning

/// BeepBeep two-way acoustic ranging between phones (docs/simulator.md §Peers; estimators.md §4B).
///
/// Every `interval_s` each pair (A, B), A < B in scenario order, gets a slot: A beeps at t_A,
/// B at t_B = t_A + gap. Each phone X records on its own sample counter
/// n_X(t) = (t − t0_X)·f_s·(1 + ε_X) (unknown start t0_X, skew ε_X ~ N(0, ppm²)):
///   n_AA = n_A(t_A + k_A/c_s),  n_BA = n_B(t_A + (d(t_A) + b₁)/c_s),
///   n_BB = n_B(t_B + k_B/c_s),  n_AB = n_A(t_B + (d(t_B) + b₂)/c_s),
/// each plus onset-detection noise (σ_self for the loud self-beeps, σ_cross otherwise, in
/// samples) and rounded to whole samples; b ~ Exp(mean) with probability p_NLOS (body blocking).
/// Then D = c_s/(2f_s)·[(n_AB − n_AA) − (n_BB − n_BA)] + (k_A + k_B)/2 recovers d up to noise,
/// clock skew and motion between the beeps. A pair beyond `max_range_m` or with a missed beep
/// (p_miss each) gives no event. The event is logged by A (device A, peer B) after the exchange.
struct PeerSimulator {
    let spec: PeerSpec
    let temperature: Double

    func events(phones: [PhoneSpec], trajectories: [Trajectory], seed: UInt64, until end: Double) -> [TraceEvent] {
        let rng = SimRNG(seed: seed, stream: "peers")
        let cs = AcousticSimulator.speedOfSound(temperature)
        let fs = spec.sampleRate
        let start = phones.map { _ in rng.uniform(10, 100) }
        let skew = phones.map { _ in rng.gaussian(spec.clockPPM) * 1e-6 }
        func counter(_ x: Int, _ t: Double) -> Double { (t + start[x]) * fs * (1 + skew[x]) }
        func dist(_ a: Int, _ b: Int, _ t: Double) -> Double {
            let p = trajectories[a].state(at: t), q = trajectories[b].state(at: t)
            return ((p.e - q.e) * (p.e - q.e) + (p.n - q.n) * (p.n - q.n) + (p.u - q.u) * (p.u - q.u)).squareRoot()
        }
        var out: [TraceEvent] = []
        var round = 0
        while true {
            let tr0 = spec.interval * Double(round + 1)
            if tr0 > end { break }
            round += 1
            var slot = 0
            for a in phones.indices {
                for b in phones.indices where b > a {
                    let tA = tr0 + Double(slot) * (spec.beepGap * 2 + 0.1)
                    slot += 1
                    let tB = tA + spec.beepGap
                    let b1 = rng.bernoulli(spec.nlosProbability) ? rng.exponential(mean: spec.nlosMean) : 0
                    let b2 = rng.bernoulli(spec.nlosProbability) ? rng.exponential(mean: spec.nlosMean) : 0
                    let noise = (rng.gaussian(spec.selfSigma), rng.gaussian(spec.crossSigma), rng.gaussian(spec.crossSigma), rng.gaussian(spec.selfSigma))
                    let missed = rng.bernoulli(spec.missProbability) || rng.bernoulli(spec.missProbability)
                    guard tB + 1 <= end, tB < min(trajectories[a].duration, trajectories[b].duration) else { continue }
                    let d1 = dist(a, b, tA), d2 = dist(a, b, tB)
                    guard !missed, d1 <= spec.maxRange, d2 <= spec.maxRange else { continue }
                    let kA = phones[a].speakerMic, kB = phones[b].speakerMic
                    let nAA = (counter(a, tA + kA / cs) + noise.0).rounded()
                    let nBA = (counter(b, tA + (d1 + b1) / cs) + noise.1).rounded()
                    let nAB = (counter(a, tB + (d2 + b2) / cs) + noise.2).rounded()
                    let nBB = (counter(b, tB + kB / cs) + noise.3).rounded()
                    out.append(TraceEvent(time: quantise(tB + 0.5, 1e-3), device: phones[a].id, payload: .peerRange(PeerRange(
                        peer: phones[b].id, nAA: nAA, nAB: nAB, nBA: nBA, nBB: nBB, sampleRate: fs,
                        speakerMicA: kA, speakerMicB: kB))))
                }
            }
        }
        return out
    }
}
