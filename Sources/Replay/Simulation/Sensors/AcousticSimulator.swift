import Foundation
import Positioning

/// Arrivals of synchronised acoustic beacon emissions at the phone (docs/simulator.md §Acoustic;
/// estimators.md §4A).
///
/// Beacon i emits at T0 + k·T_p + o_i + s_i(k) (network time; T0 unknown to the phone,
/// s_i Gauss–Markov sync error, σ a few µs — Lopes et al.'s ATSS keeps it < 5 µs). The sound
/// travels the 3-D range r (solved at the arrival time: the phone moves) at
/// c_s(T) = 331.3·√(1 + T/273.15) m/s, plus an NLOS excess path ~ Exp(mean) with probability p_NLOS.
/// The phone timestamps the detection with TOA noise N(0, σ_toa²) on its own audio clock:
/// t_phone = t·(1 + ε) + δ (drift ε ppm, unknown offset δ), quantised to whole samples 1/f_s.
/// Detections are missed with probability p_miss and beyond `max_range_m`.
/// SNR = SNR_1m − 20·log10(r) + N(0, 1) dB (spherical spreading).
struct AcousticSimulator {
    let spec: AcousticSpec
    let temperature: Double

    static func speedOfSound(_ tC: Double) -> Double { 331.3 * (1 + tC / 273.15).squareRoot() }

    func events(trajectory tr: Trajectory, device: String, seed: UInt64, until end: Double) -> [TraceEvent] {
        let rng = SimRNG(seed: seed, stream: "acoustic/\(device)")
        let net = SimRNG(seed: seed, stream: "acoustic/network")
        let cs = AcousticSimulator.speedOfSound(temperature)
        let t0 = net.uniform(0, spec.period)
        var sync = spec.beacons.map { _ in GaussMarkov(sigma: spec.syncSigma, tau: spec.syncTau, rng: net) }
        let offset = spec.clockOffset ?? rng.uniform(-0.05, 0.05)
        let drift = rng.gaussian(spec.clockDriftPPM) * 1e-6
        var out: [TraceEvent] = []
        var k = 0
        while true {
            let base = t0 + Double(k) * spec.period
            if base > end { break }
            for (i, b) in spec.beacons.enumerated() {
                let te = base + b.offset + sync[i].step(spec.period, rng: net)
                let nlos = rng.bernoulli(spec.nlosProbability) ? rng.exponential(mean: spec.nlosMean) : 0
                let noise = rng.gaussian(spec.toaSigma)
                let miss = rng.bernoulli(spec.missProbability)
                let snrN = rng.gaussian(1)
                // Range at the arrival time (two fixed-point iterations).
                var ta = te, r = 0.0
                for _ in 0..<2 {
                    let s = tr.state(at: min(max(0, ta), tr.duration))
                    r = ((s.e - b.e) * (s.e - b.e) + (s.n - b.n) * (s.n - b.n) + (s.u - b.u) * (s.u - b.u)).squareRoot()
                    ta = te + r / cs
                }
                let arrival = te + (r + nlos) / cs + noise
                guard arrival >= 0, arrival <= end, !miss, r <= spec.maxRange else { continue }
                let phone = arrival * (1 + drift) + offset
                let toa = spec.quantise ? (phone * spec.sampleRate).rounded() / spec.sampleRate : quantise(phone, 1e-7)
                let snr = quantise(spec.snrAt1m - 20 * log10(max(r, 0.1)) + snrN, 0.1)
                out.append(TraceEvent(time: quantise((arrival * 1000).rounded(.up) / 1000, 1e-3), device: device,
                                      payload: .acoustic(AcousticArrival(beacon: b.id, arrivalTime: toa, emission: k, snr: snr))))
            }
            k += 1
        }
        return out.sorted { $0.time < $1.time }
    }
}
