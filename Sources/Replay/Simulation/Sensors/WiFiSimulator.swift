import Foundation
import Positioning

/// WiFi scans (docs/simulator.md §WiFi; estimators.md §2.1).
///
/// RSS_i = P0_i − 10·n_i·log10(max(d_i, d0)/d0) − FAF·|floor − floor_i| + X_i(p) + J + δ_dev, d0 = 1 m,
/// d_i the 3-D distance, X_i a spatially correlated Gaussian shadowing field per AP
/// (σ_sh, exponential autocorrelation over distance with decorrelation distance d_c —
/// Gudmundson 1991), J ~ N(0, σ_j²) per scan and AP (temporal fading), δ_dev the device offset.
/// The phone reports round(RSS) (1 dB quantisation) and only APs with RSS ≥ threshold.
/// Each AP is seen at a random instant inside the scan window (`t_seen`) at the phone's
/// position at that instant.
struct WiFiSimulator {
    let spec: WiFiSpec
    let fields: [CorrelatedField]

    init(spec: WiFiSpec, seed: UInt64) {
        self.spec = spec
        fields = spec.aps.map {
            CorrelatedField(sigma: spec.shadowingSigma, correlationDistance: spec.shadowingCorrelation,
                            rng: SimRNG(seed: seed, stream: "wifi/shadow/\($0.bssid)"))
        }
    }

    /// Model RSS (dBm, before jitter/quantisation) of AP i at a position.
    func meanRSS(_ i: Int, e: Double, n: Double, u: Double, floor: Int) -> Double {
        let a = spec.aps[i]
        let d = max(1, ((e - a.e) * (e - a.e) + (n - a.n) * (n - a.n) + (u - a.u) * (u - a.u)).squareRoot())
        return a.p0 - 10 * a.exponent * log10(d) - spec.floorAttenuation * Double(abs(floor - a.floor)) + fields[i].value(e, n)
    }

    /// The fingerprint survey of `spec.survey` (SurveySpec): reference points row by row
    /// from the south-west corner of the area, on the survey floor; each point's scans are
    /// averaged by `FingerprintMap.PointAccumulator` (means rounded to 0.1 dB).
    func survey(seed: UInt64, floorHeights: [Double]) -> [FingerprintMap.Point] {
        guard let sv = spec.survey else { return [] }
        let change = spec.aps.map {
            CorrelatedField(sigma: sv.changeSigma, correlationDistance: sv.changeCorrelation,
                            rng: SimRNG(seed: seed, stream: "wifi/survey-change/\($0.bssid)"))
        }
        let rng = SimRNG(seed: seed, stream: "wifi/survey")
        let u = floorHeights[sv.floor] + sv.height
        var out: [FingerprintMap.Point] = []
        let ne = Int(((sv.area[2] - sv.area[0]) / sv.spacing + 1e-9).rounded(.down))
        let nn = Int(((sv.area[3] - sv.area[1]) / sv.spacing + 1e-9).rounded(.down))
        for r in 0...nn {
            for c in 0...ne {
                let e = quantise(sv.area[0] + Double(c) * sv.spacing, 1e-3), n = quantise(sv.area[1] + Double(r) * sv.spacing, 1e-3)
                // Draws AP by AP (the random stream's order), then the scans in turn.
                var heard = [[String: Double]](repeating: [:], count: sv.scansPerPoint)
                for (i, a) in spec.aps.enumerated() {
                    let mean = meanRSS(i, e: e, n: n, u: u, floor: sv.floor) + change[i].value(e, n) + sv.deviceOffset
                    for k in 0..<sv.scansPerPoint {
                        let v = quantise(mean + rng.gaussian(spec.jitterSigma), spec.quantisation)
                        if v >= spec.threshold { heard[k][a.bssid] = v }
                    }
                }
                var acc = FingerprintMap.PointAccumulator()
                for h in heard { acc.add(h, at: SIMD2(e, n)) }
                var p = acc.point(floor: sv.floor)
                p.position = SIMD2(e, n); p.rss = p.rss.mapValues { quantise($0, 0.1) }
                out.append(p)
            }
        }
        return out
    }

    func events(trajectory tr: Trajectory, device: String, seed: UInt64, until end: Double) -> [TraceEvent] {
        let rng = SimRNG(seed: seed, stream: "wifi/\(device)")
        var out: [TraceEvent] = []
        var t = spec.firstScan
        while t <= end + 1e-9 {
            let t0 = t - spec.scanDuration
            var seen: [WiFiObservation] = []
            for (i, a) in spec.aps.enumerated() {
                let ts = quantise(t0 + rng.uniform() * spec.scanDuration, 1e-3)
                let jitter = rng.gaussian(spec.jitterSigma)
                let s = tr.state(at: max(0, ts))
                let rss = quantise(meanRSS(i, e: s.e, n: s.n, u: s.u, floor: s.floor) + jitter + spec.deviceOffset, spec.quantisation)
                if rss >= spec.threshold {
                    seen.append(WiFiObservation(bssid: a.bssid, ssid: a.ssid, frequency: a.frequency, rss: rss, lastSeen: ts))
                }
            }
            seen.sort { $0.rss != $1.rss ? $0.rss > $1.rss : $0.bssid < $1.bssid }
            if spec.maxAPs > 0 && seen.count > spec.maxAPs { seen.removeLast(seen.count - spec.maxAPs) }
            out.append(TraceEvent(time: quantise(t, 1e-3), device: device,
                                  payload: .wifi(WiFiScan(start: quantise(max(0, t0), 1e-3), accessPoints: seen))))
            t += spec.scanInterval
        }
        return out
    }
}
