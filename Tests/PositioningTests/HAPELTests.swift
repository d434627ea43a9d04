import Testing
import Foundation
@testable import Positioning

/// A seeded sparse-AP corridor walk (≤ 2 APs heard per scan): the synthetic stand-in for
/// `Traces/mall-sparse-ap` until the simulator's trace exists.
struct SparseCorridor {
    var aps: [String: AccessPoint] = [:]
    var events: [TraceEvent] = []
    /// Truth at each scan time.
    var truth: [Double: SIMD2<Double>] = [:]
    let threshold: Double

    /// Rectangle loop 120 × 60 m, APs every `spacing` m along it, walker at 1.2 m/s.
    init(seed: UInt64, spacing: Double = 20, threshold: Double = -80, shadowing: Double = 4,
         headingNoiseDeg: Double = 5, laps: Int = 2) {
        self.threshold = threshold
        var rng = TestRNG(seed: seed)
        let corners = [SIMD2(0.0, 0.0), SIMD2(120.0, 0.0), SIMD2(120.0, 60.0), SIMD2(0.0, 60.0)]
        let perimeter = 360.0
        func point(_ s: Double) -> (p: SIMD2<Double>, psi: Double) {
            var s = s.truncatingRemainder(dividingBy: perimeter)
            for i in 0..<4 {
                let a = corners[i], b = corners[(i + 1) % 4]
                let l = ((b - a) * (b - a)).sum().squareRoot()
                if s <= l { let u = (b - a) / l; return (a + s * u, atan2(u.x, u.y)) }
                s -= l
            }
            return (corners[0], 0)
        }
        var k = 0
        var s = 0.0
        while s < perimeter {
            let p = point(s).p
            let mac = String(format: "00:1a:2b:00:%02x:%02x", k / 256, k % 256)
            aps[mac] = AccessPoint(bssid: mac, position: SIMD3(p.x + 2 * (rng.uniform() - 0.5), p.y + 2 * (rng.uniform() - 0.5), 0),
                                   p0: -40, pathLossExponent: 3)
            k += 1; s += spacing
        }
        let speed = 1.2, stepLen = 0.7, stepDt = stepLen / speed
        let total = perimeter * Double(laps) / speed
        var t = 0.0, nextStep = stepDt, nextScan = 2.0
        while t < total {
            let st = point(t * speed)
            let headingMeas = st.psi + Angle.radians(headingNoiseDeg) * rng.gaussian()
            // Rotation vector for heading ψ (device flat, y forward): yaw about up by −ψ.
            let half = -headingMeas / 2
            events.append(TraceEvent(time: t, payload: .imu(IMUSample(kind: .rotationVector, x: 0, y: 0, z: sin(half), w: cos(half)))))
            if t >= nextStep {
                events.append(TraceEvent(time: t, payload: .step(StepEvent(length: stepLen * (1 + 0.05 * rng.gaussian())))))
                nextStep += stepDt
            }
            if t >= nextScan {
                var obs: [WiFiObservation] = []
                for (mac, ap) in aps.sorted(by: { $0.key < $1.key }) {
                    let d = max(1, ((SIMD2(ap.position.x, ap.position.y) - st.p) * (SIMD2(ap.position.x, ap.position.y) - st.p)).sum().squareRoot())
                    let rss = (-40 - 30 * log10(d) + shadowing * rng.gaussian()).rounded()
                    if rss >= threshold { obs.append(WiFiObservation(bssid: mac, rss: rss, lastSeen: t)) }
                }
                events.append(TraceEvent(time: t, payload: .wifi(WiFiScan(start: t - 0.5, accessPoints: obs))))
                truth[t] = st.p
                nextScan += 2
            }
            t += 0.1
        }
    }

    /// Mean error per source over the scans, running the given stages.
    func run(_ stages: [any PipelineStage]) -> [Source: [Double]] {
        let header = TraceHeader(origin: Geodetic(latitude: 0, longitude: 0), rssThreshold: threshold)
        let ctx = PipelineContext(header: header, reference: ReferenceData(accessPoints: aps))
        let pipe = Pipeline(stages: stages)
        var errs: [Source: [Double]] = [:]
        for e in events {
            for r in pipe.process(e, context: ctx) {
                if case .fix(let f) = r, let p = truth[e.time] {
                    let d = f.position - p
                    errs[f.source, default: []].append((d * d).sum().squareRoot())
                }
            }
        }
        return errs
    }
}

@Suite struct HAPELTests {
    @Test func headingFromRotationVector() {
        var t = PedestrianDeadReckoning()
        let psi = Angle.radians(60), half = -psi / 2
        t.update(IMUSample(kind: .rotationVector, x: 0, y: 0, z: sin(half), w: cos(half)), time: 0)
        #expect(abs(Angle.wrap(t.heading! - psi)) < 1e-9)
        t.step(StepEvent(length: 1), time: 0.5)
        let d = t.takeDisplacement()
        #expect(abs(d.x - sin(psi)) < 1e-9 && abs(d.y - cos(psi)) < 1e-9)
        #expect(t.isMoving(at: 2) && !t.isMoving(at: 3))
    }

    /// Gyro + magnetometer complementary heading: a flat phone turning at 10°/s about up.
    @Test func gyroMagnetometerHeading() {
        var t = PedestrianDeadReckoning()
        // Flat device: gravity reaction along +z. Field pointing north (device y when ψ=0) and down.
        for i in 0...100 {
            let time = Double(i) * 0.02
            t.update(IMUSample(kind: .accelerometer, x: 0, y: 0, z: 9.81), time: time)
            t.update(IMUSample(kind: .magnetometer, x: 0, y: 20, z: -40), time: time)
        }
        #expect(abs(t.heading!) < 1e-6)
        // Turn clockwise (ψ increasing) = negative rotation about up, 10°/s for 3 s; no mag updates.
        for i in 101...250 {
            t.update(IMUSample(kind: .gyroscope, x: 0, y: 0, z: -Angle.radians(10)), time: Double(i) * 0.02)
        }
        #expect(abs(Angle.degrees(t.heading!) - 30) < 0.5)
    }

    @Test func accelerometerStepDetector() {
        var t = PedestrianDeadReckoning()
        t.update(IMUSample(kind: .magnetometer, x: 0, y: 20, z: -40), time: 0)
        // 2 Hz walking bounce of ±2 m/s² on gravity, 50 Hz, 10 s → ≈ 20 steps.
        for i in 0..<500 {
            let time = Double(i) * 0.02
            t.update(IMUSample(kind: .accelerometer, x: 0, y: 0, z: 9.81 + 2 * sin(2 * .pi * 2 * time)), time: time)
            if i == 0 { t.update(IMUSample(kind: .magnetometer, x: 0, y: 20, z: -40), time: time) }
        }
        #expect(t.stepCount >= 17 && t.stepCount <= 21)
    }

    /// Hidden-AP selection: only unheard APs ahead within R_sel; virtual RSS V1/V2.
    @Test func hiddenSelection() {
        let map = ["00:00:00:00:00:01": AccessPoint(bssid: "00:00:00:00:00:01", position: SIMD3(0, 20, 0), p0: -40, pathLossExponent: 3),
                   "00:00:00:00:00:02": AccessPoint(bssid: "00:00:00:00:00:02", position: SIMD3(0, -20, 0), p0: -40, pathLossExponent: 3),
                   "00:00:00:00:00:03": AccessPoint(bssid: "00:00:00:00:00:03", position: SIMD3(14, 15, 0), p0: -40, pathLossExponent: 3),
                   "00:00:00:00:00:04": AccessPoint(bssid: "00:00:00:00:00:04", position: SIMD3(0, 90, 0), p0: -40, pathLossExponent: 3)]
        var e = HAPELEstimator(variant: .v1, rssThreshold: -80)
        let radios = e.radios(map)
        let r = e.hiddenAnchors(prediction: .zero, heading: 0, heard: [], radios: radios, radius: 30)
        #expect(r.candidates.count == 3)
        #expect(Set(r.selected.map(\.id)) == ["mac:00:00:00:00:00:01", "mac:00:00:00:00:00:03"])   // 45° cone: (14, 15) at 43° inside
        #expect(r.selected.allSatisfy { $0.rss == -81 })
        e.variant = .v2
        let v2 = e.hiddenAnchors(prediction: .zero, heading: 0, heard: ["mac:00:00:00:00:00:03"], radios: radios, radius: 30)
        // μ at 20 m = −40 − 30·1.301 = −79.03 → min(−81, −79.03) = −81; heard AP excluded.
        #expect(v2.selected.map(\.id) == ["mac:00:00:00:00:00:01"] && v2.selected[0].rss == -81)
        // No heading (stationary): no selection.
        #expect(e.hiddenAnchors(prediction: .zero, heading: nil, heard: [], radios: radios, radius: 30).selected.isEmpty)
    }

    /// Sparse corridor (≤ 2 APs heard): HAPEL must beat WCL. The acceptance ratio (≤ 0.55 on
    /// the simulator's mall trace) is checked on that trace; here a loose bound guards the
    /// mechanism, and the measured ratio is printed for docs/radio.md.
    /// The HAPEL mechanism by hand: one AP heard at the origin at −70 dBm, walking north, a
    /// hidden AP 30 m ahead gets r_th − 1 = −81 dBm (V1). Power law g = 1: weights 1 : 10^−1.1
    /// → y = 30·0.07943/1.07943 = 2.2076 m ahead of the WCL fix (which sits on the AP).
    @Test func forwardPullByHand() throws {
        let map = ["00:00:00:00:00:01": AccessPoint(bssid: "00:00:00:00:00:01", position: SIMD3(0, 0, 0)),
                   "00:00:00:00:00:02": AccessPoint(bssid: "00:00:00:00:00:02", position: SIMD3(0, 30, 0))]
        let e = HAPELEstimator(wcl: WCLEstimator(weightLaw: .power, exponent: 1), variant: .v1, rssThreshold: -80, selectionRadius: 40)
        let scan = WiFiScan(accessPoints: [WiFiObservation(bssid: "00:00:00:00:00:01", rss: -70)])
        let visible = e.wcl.selectAnchors(scan, time: 0, map: map)
        let heard = Set(e.wcl.mergedAnchors(scan, time: 0, map: map).map(\.id))
        let h = e.hiddenAnchors(prediction: SIMD2(0, 3), heading: 0, heard: heard, radios: e.radios(map), radius: 40)
        let f = try e.wcl.fix(anchors: visible + h.selected, time: 0, source: .hapel).get()
        let w = pow(10, -1.1)
        #expect(abs(f.position.y - 30 * w / (1 + w)) < 1e-9 && f.usedCount == 2)
        // Walking south instead: the hidden AP is behind and is not used.
        let back = e.hiddenAnchors(prediction: SIMD2(0, 3), heading: .pi, heard: heard, radios: e.radios(map), radius: 40)
        #expect(back.selected.isEmpty && back.candidates.count == 1)
    }

    /// Seeded sparse corridor (≤ 2 APs heard): runs WCL and HAPEL V1/V2 end to end through the
    /// stages and prints the means for docs/radio.md. In this synthetic geometry (no scan
    /// latency) the reconstructed HAPEL is within ±10 % of WCL — the paper's 51 % gain is not
    /// reproduced here; the assertion only guards that HAPEL runs on every scan and stays
    /// within 1.5× of WCL.
    @Test func sparseCorridorEndToEnd() throws {
        for spacing in [30.0, 50.0] {
            let sc = SparseCorridor(seed: 11, spacing: spacing)
            let w = WCLEstimator()
            for v in HAPELEstimator.Variant.allCases {
                let errs = sc.run([WCLStage(estimator: w), HAPELStage(estimator: HAPELEstimator(wcl: w, variant: v))])
                let mw = RadioStats.mean(errs[.wcl] ?? [])!, mh = RadioStats.mean(errs[.hapel] ?? [])!
                print("HAPEL sparse corridor spacing \(spacing) \(v.rawValue): wcl mean \(mw) hapel mean \(mh) ratio \(mh / mw)")
                #expect(errs[.hapel]!.count == sc.truth.count)
                #expect(mh < 1.5 * mw)
            }
        }
    }
}
