import Foundation
import Positioning

/// Cell measurements with timing advance (docs/simulator.md §Cell; estimators.md §1.1).
///
/// Received power of site j: P_j = P0_j − 10·n·log10(d_j/1 m) + A(φ_j) + X_j(p), with the 3GPP
/// sector pattern A(φ) = −min(12(φ/φ_3dB)², A_m) (φ off boresight, φ_3dB = beamwidth,
/// A_m = front-to-back ratio; omni sites A = 0) and correlated shadowing X_j (Gudmundson).
/// Each radio (RAT + operator) serves from its strongest site with a hand-over hysteresis.
/// Timing advance of the serving cell (connected mode, probability `ta_availability`):
///   TA = Q((d + b_NLOS + ε)/Δ), Δ = c·T_step/2 (exact c: GSM 553.46 m, LTE 78.07 m, NR 78.07/2^μ m),
///   Q = rounding or truncation (floor), ε ~ N(0, σ_BTS²), b_NLOS ~ Exp(mean) with probability p_NLOS;
///   clamped to [0, TA_max] (GSM 63, LTE 1282, NR 3846) — saturation as in the standards.
struct CellSimulator {
    let spec: CellSpec
    let fields: [CorrelatedField]

    init(spec: CellSpec, seed: UInt64) {
        self.spec = spec
        fields = spec.sites.map {
            CorrelatedField(sigma: spec.shadowingSigma, correlationDistance: spec.shadowingCorrelation,
                            rng: SimRNG(seed: seed, stream: "cell/shadow/\($0.cell)"))
        }
    }

    /// Round-trip step T_step (s) of a RAT's TA unit.
    static func taStep(rat: RAT, nrMu: Int) -> (step: Double, unit: TimingAdvanceUnit, max: Int) {
        let ts = 1 / (15_000.0 * 2048)
        switch rat {
        case .gsm: return (48.0 / 13.0 * 1e-6, .gsmBits, 63)
        case .nr:
            let u: [TimingAdvanceUnit] = [.nrMu0, .nrMu1, .nrMu2, .nrMu3]
            let mu = max(0, min(3, nrMu))
            return (16 * ts / Double(1 << mu), u[mu], 3846)
        default: return (16 * ts, .lte16Ts, 1282)
        }
    }

    func power(_ j: Int, e: Double, n: Double, u: Double) -> (rsrp: Double, distance: Double) {
        let s = spec.sites[j]
        let de = e - s.e, dn = n - s.n, du = u - s.height
        let d = max(1, (de * de + dn * dn + du * du).squareRoot())
        var gain = 0.0
        if let az = s.azimuth, let bw = s.beamwidth {
            let phi = Angle.wrap(atan2(de, dn) - az * .pi / 180) * 180 / .pi
            gain = -min(12 * (phi / bw) * (phi / bw), spec.frontToBack)
        }
        return (s.p0 - 10 * spec.pathLossExponent * log10(d) + gain + fields[j].value(e, n), d)
    }

    func events(trajectory tr: Trajectory, device: String, seed: UInt64, until end: Double) -> [TraceEvent] {
        var out: [TraceEvent] = []
        for radio in spec.radios {
            let rng = SimRNG(seed: seed, stream: "cell/\(device)/\(radio.rat.rawValue)/\(radio.mcc)/\(radio.mnc)")
            let idx = spec.sites.indices.filter {
                spec.sites[$0].cell.rat == radio.rat && spec.sites[$0].cell.mcc == radio.mcc && spec.sites[$0].cell.mnc == radio.mnc
            }
            guard !idx.isEmpty else { continue }
            let (tStep, unit, taMax) = CellSimulator.taStep(rat: radio.rat, nrMu: radio.nrMu)
            let delta = spec.speedOfLight * tStep / 2
            var serving: Int? = nil
            var t = spec.interval
            while t <= end + 1e-9 {
                let s = tr.state(at: t)
                var p: [(j: Int, rsrp: Double, d: Double)] = idx.map { j in
                    let x = power(j, e: s.e, n: s.n, u: s.u); return (j, x.rsrp + rng.gaussian(1.0), x.distance)
                }
                p.sort { $0.rsrp != $1.rsrp ? $0.rsrp > $1.rsrp : $0.j < $1.j }
                let best = p[0]
                if let cur = serving, let c = p.first(where: { $0.j == cur }), c.rsrp >= spec.sensitivity,
                   c.rsrp > best.rsrp - spec.hysteresis {
                    // stay
                } else { serving = best.rsrp >= spec.sensitivity ? best.j : nil }
                let nlos = rng.bernoulli(spec.nlosProbability) ? rng.exponential(mean: spec.nlosMean) : 0
                let eps = rng.gaussian(spec.btsSigma)
                let hasTA = rng.bernoulli(spec.taAvailability)
                if let sv = serving, let c = p.first(where: { $0.j == sv }) {
                    let site = spec.sites[sv]
                    var ta: Int? = nil
                    if hasTA {
                        let x = max(0, c.d + nlos + eps) / delta
                        let q = spec.rounding == "truncate" ? x.rounded(.down) : x.rounded()
                        ta = Int(min(Double(taMax), q))
                    }
                    out.append(TraceEvent(time: quantise(t, 1e-3), device: device, payload: .cell(CellObservation(
                        cell: site.cell, pci: site.pci ?? site.cell.cid % 504, arfcn: site.arfcn, serving: true,
                        timingAdvance: ta, timingAdvanceUnit: ta == nil ? nil : unit, rsrp: quantise(c.rsrp, 1)))))
                    var nb = 0
                    for q in p where q.j != sv && q.rsrp >= spec.sensitivity && nb < spec.neighbours {
                        nb += 1
                        let ns = spec.sites[q.j]
                        out.append(TraceEvent(time: quantise(t, 1e-3), device: device, payload: .cell(CellObservation(
                            cell: ns.cell, pci: ns.pci ?? ns.cell.cid % 504, arfcn: ns.arfcn, serving: false, rsrp: quantise(q.rsrp, 1)))))
                    }
                }
                t += spec.interval
            }
        }
        return out
    }
}
