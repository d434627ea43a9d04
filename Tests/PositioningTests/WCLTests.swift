import Testing
import Foundation
@testable import Positioning

@Suite struct WCLEstimatorTests {
    func ap(_ mac: String, _ e: Double, _ n: Double, radio: String? = nil) -> AccessPoint {
        AccessPoint(bssid: mac, position: SIMD3(e, n, 0), p0: -40, pathLossExponent: 3, radio: radio)
    }

    /// Equal RSS → plain centroid; the stronger AP pulls the estimate (hand-derived weights).
    @Test func centroidAndWeights() throws {
        let map = ["00:00:00:00:00:01": ap("00:00:00:00:00:01", 0, 0), "00:00:00:00:00:02": ap("00:00:00:00:00:02", 10, 0)]
        let e = WCLEstimator(weightLaw: .power, exponent: 1)
        let eq = WiFiScan(accessPoints: [WiFiObservation(bssid: "00:00:00:00:00:01", rss: -60),
                                         WiFiObservation(bssid: "00:00:00:00:00:02", rss: -60)])
        #expect(try e.estimate(eq, time: 0, map: map).get().position == SIMD2(5, 0))
        // −60 vs −70 dBm with the power law: weights 1 : 0.1 → x = 10·0.1/1.1 = 0.909 m.
        let s = WiFiScan(accessPoints: [WiFiObservation(bssid: "00:00:00:00:00:01", rss: -60),
                                        WiFiObservation(bssid: "00:00:00:00:00:02", rss: -70)])
        let px = try e.estimate(s, time: 0, map: map).get().position.x
        #expect(abs(px - 10 * 0.1 / 1.1) < 1e-9)
        // dB law with reference −100: weights 40 : 30 → x = 10·30/70.
        let d = WCLEstimator(weightLaw: .db, exponent: 1)
        #expect(abs(try d.estimate(s, time: 0, map: map).get().position.x - 300.0 / 70) < 1e-9)
    }

    /// §2.2 equivalences: W2(g) ≡ W1(n·g), W3(g) ≡ W2(g/2) after normalisation.
    @Test func weightLawEquivalences() {
        let anchors = [WCLAnchor(id: "a", position: SIMD2(0, 0), rss: -55, p0: -40, pathLossExponent: 3),
                       WCLAnchor(id: "b", position: SIMD2(9, 1), rss: -67, p0: -40, pathLossExponent: 3),
                       WCLAnchor(id: "c", position: SIMD2(3, 8), rss: -80, p0: -40, pathLossExponent: 3)]
        let w2 = WCLEstimator(weightLaw: .power, exponent: 0.7).normalizedWeights(anchors)
        let w1 = WCLEstimator(weightLaw: .distance, exponent: 2.1).normalizedWeights(anchors)
        let w3 = WCLEstimator(weightLaw: .amplitude, exponent: 1.4).normalizedWeights(anchors)
        for i in 0..<3 { #expect(abs(w2[i] - w1[i]) < 1e-12 && abs(w2[i] - w3[i]) < 1e-12) }
        // Log-domain weights survive extreme RSS values.
        let far = [WCLAnchor(id: "x", position: .zero, rss: -3000), WCLAnchor(id: "y", position: SIMD2(1, 0), rss: -3010)]
        let wf = WCLEstimator().normalizedWeights(far)
        #expect(wf.allSatisfy { $0.isFinite })
    }

    @Test func hygieneMergeAndDegenerate() throws {
        var map = ["00:11:22:33:44:50": ap("00:11:22:33:44:50", 0, 0, radio: "r1"),
                   "02:11:22:33:44:51": ap("02:11:22:33:44:51", 0, 0, radio: "r1"),   // secondary BSSID (local bit)
                   "00:aa:bb:cc:dd:e0": ap("00:aa:bb:cc:dd:e0", 20, 0),
                   "06:aa:bb:cc:dd:ee": ap("06:aa:bb:cc:dd:ee", 100, 100)]           // hotspot, no radio group
        let scan = WiFiScan(start: 10, accessPoints: [
            WiFiObservation(bssid: "00:11:22:33:44:50", rss: -60, lastSeen: 10.5),
            WiFiObservation(bssid: "02:11:22:33:44:51", rss: -58, lastSeen: 10.5),
            WiFiObservation(bssid: "00:AA:BB:CC:DD:E0", rss: -58, lastSeen: 10.2),
            WiFiObservation(bssid: "06:aa:bb:cc:dd:ee", rss: -40, lastSeen: 10.4),
            WiFiObservation(bssid: "00:00:00:00:00:99", rss: -30, lastSeen: 10.4),      // not in map
        ])
        var e = WCLEstimator(weightLaw: .power)
        #expect(e.mergedAnchors(scan, time: 11, map: map).count == 3)   // default: map entries are trusted
        e.excludeLocallyAdministered = true
        let a = e.mergedAnchors(scan, time: 11, map: map)
        #expect(a.count == 2)                                  // r1 merged, hotspot + unknown dropped
        #expect(a.first { $0.id == "radio:r1" }?.rss == -58)   // strongest member
        let f = try e.estimate(scan, time: 11, map: map).get()
        #expect(abs(f.position.x - 10) < 1e-9 && f.flags.contains(.degenerate))
        // Stale: last seen before the scan start.
        let stale = WiFiScan(start: 10, accessPoints: [WiFiObservation(bssid: "00:aa:bb:cc:dd:e0", rss: -50, lastSeen: 3)])
        #expect(e.estimate(stale, time: 11, map: map) == .failure(.tooFewAnchors(needed: 1, got: 0)))
        // Nibble merge (off by default).
        map["00:aa:bb:cc:dd:e1"] = ap("00:aa:bb:cc:dd:e1", 22, 0)
        let two = WiFiScan(accessPoints: [WiFiObservation(bssid: "00:aa:bb:cc:dd:e0", rss: -50),
                                          WiFiObservation(bssid: "00:aa:bb:cc:dd:e1", rss: -52)])
        #expect(e.mergedAnchors(two, time: 0, map: map).count == 2)
        var n = e; n.mergeNibble = true
        let m = n.mergedAnchors(two, time: 0, map: map)
        #expect(m.count == 1 && m[0].position == SIMD2(21, 0))
        // Single anchor at −70 dBm, P0 −40, n 3: d̂ = 10 m → Σ = (κ·d̂²/2 + σ0²) I.
        let one = try e.estimate(WiFiScan(accessPoints: [WiFiObservation(bssid: "00:aa:bb:cc:dd:e1", rss: -70)]), time: 0, map: map).get()
        #expect(abs(one.covariance.ee - (e.kappa * 50 + e.sigma0 * e.sigma0)) < 1e-9)
    }

    /// Merging past the short-list limit (`SmallIndex`: linear search up to 16 groups, a
    /// dictionary beyond): 60 BSSIDs in 30 radio groups of two, the scan listing each group's
    /// second member 30 entries after its first, with a repeated entry. Every anchor is its
    /// group's mean position with the strongest member's RSS and model, and the list is
    /// strongest first, ties by id, for small (6 groups) and large scans alike.
    @Test func mergingManyGroups() {
        for groups in [6, 30] {
            var map: [String: AccessPoint] = [:]
            var first: [WiFiObservation] = [], second: [WiFiObservation] = []
            for g in 0..<groups {
                let a = String(format: "00:1b:cc:00:%02x:00", g), b = String(format: "00:1b:cc:00:%02x:01", g)
                map[a] = AccessPoint(bssid: a, position: SIMD3(Double(g), 0, 0), p0: -40, radio: "r\(g)")
                map[b] = AccessPoint(bssid: b, position: SIMD3(Double(g), 10, 2), p0: -45, radio: "r\(g)")
                first.append(WiFiObservation(bssid: a, rss: -50 - Double(g % 7)))
                second.append(WiFiObservation(bssid: b, rss: -50 - Double(g % 5)))
            }
            let scan = WiFiScan(accessPoints: first + second + [first[1]])
            let anchors = WCLEstimator().mergedAnchors(scan, time: 0, map: map)
            #expect(anchors.count == groups)
            for g in 0..<groups {
                let x = anchors.first { $0.id == "radio:r\(g)" }
                let secondWins = -50 - Double(g % 5) > -50 - Double(g % 7)
                // Group 1 has its first member twice: weight 2 of 3 at y = 0.
                let y = g == 1 ? 10.0 / 3 : 5, up = g == 1 ? 2.0 / 3 : 1
                #expect(x?.position == SIMD2(Double(g), y) && x?.up == up, "group \(g): \(String(describing: x))")
                #expect(x?.rss == max(-50 - Double(g % 7), -50 - Double(g % 5)) && x?.p0 == (secondWins ? -45 : -40), "group \(g)")
            }
            #expect(zip(anchors, anchors.dropFirst()).allSatisfy { $0.rss > $1.rss || ($0.rss == $1.rss && $0.id < $1.id) })
        }
    }

    /// `normalizedWeights` in one array (up to 64 anchors) gives the general form's weights bit for
    /// bit: seeded anchors (1–70: both paths), all four laws, `db` with anchors below its reference
    /// (no weight) and with none above it (equal weights), models given or defaulted; and
    /// `selectAnchors(merged:)` keeps what filtering then taking the first K kept.
    @Test func weightsAndSelectionAsTheGeneralForm() {
        var rng = Xoshiro256(seed: 2323)
        for n in [1, 2, 3, 8, 17, 64, 65, 70] {
            for trial in 0..<6 {
                let anchors = (0..<n).map { i in
                    WCLAnchor(id: "a\(i)", position: SIMD2(Double(rng.next() % 100), Double(rng.next() % 100)),
                              rss: trial == 5 ? -120 : -30 - Double(rng.next() % 800) / 10,
                              p0: rng.next() % 3 == 0 ? nil : -35 - Double(rng.next() % 10),
                              pathLossExponent: rng.next() % 3 == 0 ? nil : 2 + Double(rng.next() % 20) / 10)
                }
                for law in [WeightLaw.power, .distance, .amplitude, .db] {
                    let e = WCLEstimator(weightLaw: law, exponent: 0.3 + Double(trial) / 4, maxAnchors: 1 + trial * 3,
                                         rssMin: -95 + Double(trial))
                    let got = e.normalizedWeights(anchors), want = e.normalizedWeightsGeneral(anchors)
                    #expect(got.map(\.bitPattern) == want.map(\.bitPattern), "n \(n) trial \(trial) \(law)")
                    let sel = e.selectAnchors(merged: anchors)
                    #expect(sel == Array(anchors.filter { $0.rss >= e.rssMin }.prefix(max(1, e.maxAnchors))))
                }
            }
        }
    }

    /// Groups of one MAC are found by their map entry (`mergedAnchors`), not by their id: the
    /// anchors equal, bit for bit, those of grouping every entry by its id string (the rule the
    /// entry shortcut stands for), on scans of 5 and 40 MACs listed once or twice, in other
    /// spellings (upper case, dashes), with radio-group members, a map key found only under its
    /// spelling as given, and MACs the map lacks.
    @Test func oneMACGroupsAsByID() {
        func byID(_ e: WCLEstimator, _ scan: WiFiScan, _ map: [String: AccessPoint]) -> [WCLAnchor] {
            var order: [String] = []
            var acc: [String: (sum: SIMD3<Double>, n: Int, best: Double, ap: AccessPoint)] = [:]
            for o in scan.accessPoints {
                guard let ap = map[MACAddress.normalize(o.bssid)] ?? map[o.bssid] else { continue }
                let g = e.groupID(o.bssid, ap: ap)
                if var v = acc[g] {
                    v.sum += ap.position; v.n += 1
                    if o.rss > v.best { v.best = o.rss; v.ap = ap }
                    acc[g] = v
                } else {
                    order.append(g); acc[g] = (ap.position, 1, o.rss, ap)
                }
            }
            return order.map { g in
                let v = acc[g]!, mean = v.sum / Double(v.n)
                return WCLAnchor(id: g, position: SIMD2(mean.x, mean.y), rss: v.best, p0: v.ap.p0,
                                 pathLossExponent: v.ap.pathLossExponent, floor: v.ap.floor, up: mean.z)
            }.sorted { $0.rss != $1.rss ? $0.rss > $1.rss : $0.id < $1.id }
        }
        var rng = Xoshiro256(seed: 77)
        for n in [5, 40] {
            var map: [String: AccessPoint] = [:]
            var scan: [WiFiObservation] = []
            for k in 0..<n {
                let mac = String(format: "00:1b:cc:00:%02x:%02x", k / 3, k)
                let key = k == 2 ? mac.uppercased() : mac             // found only under the spelling as given
                map[key] = AccessPoint(bssid: key, position: SIMD3(Double(rng.next() % 100), Double(rng.next() % 100), Double(rng.next() % 3)),
                                       p0: -40 - Double(k % 4), radio: k % 7 == 3 ? "r\(k % 2)" : nil)
                let copies = 1 + Int(rng.next() % 2)
                for c in 0..<copies {
                    let spelling = k == 2 ? key : c == 0 ? mac : (k % 2 == 0 ? mac.uppercased() : mac.replacingOccurrences(of: ":", with: "-"))
                    scan.append(WiFiObservation(bssid: spelling, rss: -50 - Double(rng.next() % 30)))
                }
                if k % 5 == 0 { scan.append(WiFiObservation(bssid: String(format: "02:00:00:00:00:%02x", k), rss: -60)) }
            }
            scan.shuffle(using: &rng)
            let s = WiFiScan(accessPoints: scan)
            for e in [WCLEstimator(), WCLEstimator(mergeRadios: false)] {
                let got = e.mergedAnchors(s, time: 0, map: map), want = byID(e, s, map)
                #expect(got == want, "n \(n)")
                #expect(got.count > n / 2)
            }
        }
    }

    /// Calibration recovers a consistent scale: errors drawn from κ·S + σ0²I give back κ, σ0
    /// approximately, and the fitted NIS median is ≈ 1.386.
    @Test func covarianceCalibration() {
        var rng = TestRNG(seed: 99)
        var samples: [WCLCalibration.Sample] = []
        for _ in 0..<3000 {
            let sx = 4 + 20 * rng.uniform(), sy = 4 + 20 * rng.uniform()
            let spread = Covariance2(ee: sx * sx, en: 0, nn: sy * sy)
            // true κ = 0.5, σ0 = 3.
            let ex = rng.gaussian() * (0.5 * sx * sx + 9).squareRoot(), ey = rng.gaussian() * (0.5 * sy * sy + 9).squareRoot()
            samples.append(.init(estimate: SIMD2(ex, ey), spread: spread, anchorCount: 3, truth: .zero))
        }
        let r = WCLCalibration.calibrate(samples, estimator: WCLEstimator())!
        #expect(abs(r.kappa - 0.5) < 0.1)
        #expect(abs(r.medianNIS - 2 * log(2.0)) < 0.1 && abs(r.inside95 - 0.95) < 0.02)
        #expect(WCLCalibration.calibrate(Array(samples.prefix(5)), estimator: WCLEstimator()) == nil)
    }
}

@Suite struct RSSModelTests {
    @Test func pathLossJacobianMatchesFiniteDifferences() {
        let m = RSSMeasurement(time: 0, bssid: "x", rss: -70, model: PathLossModel(anchor: SIMD3(3, -2, 2.5), p0: -38, exponent: 2.7))
        for p in [SIMD2(10.0, 5.0), SIMD2(-20.0, 1.0), SIMD2(3.5, -1.0)] {
            let a = m.jacobian(p), n = m.numericalJacobian(p)
            for c in 0..<2 { #expect(abs(a[0, c] - n[0, c]) < 1e-6 * max(1, abs(a[0, c]))) }
        }
        // μ at 10 m (no height): P0 − 10n = −38 − 27 = −65 dBm; inverse range.
        let flat = PathLossModel(anchor: .zero, p0: -38, exponent: 2.7)
        #expect(abs(flat.mean(SIMD2(10, 0)) + 65) < 1e-9 && abs(flat.range(forRSS: -65) - 10) < 1e-9)
    }

    @Test func hiddenAPLikelihood() {
        let models = [PathLossModel(anchor: .zero, p0: -40, exponent: 3), PathLossModel(anchor: SIMD3(50, 0, 0), p0: -40, exponent: 3)]
        let h = HiddenAPMeasurement(time: 0, bssids: ["a", "b"], models: models, threshold: -90, sigma: 4)
        // Exclusion radius ρ = 10^(50/30) = 46.4 m: close to an AP is unlikely, far is likely.
        let near = h.logLikelihood(SIMD2(2, 0)), far = h.logLikelihood(SIMD2(25, 200))
        #expect(near < -20 && abs(far) < 1e-3 && near.isFinite)
        #expect(h.isViolated(SIMD2(10, 0)) && !h.isViolated(SIMD2(25, 200)))
        // Σ log Φ((r_th − μ)/σ) by hand at one point.
        let p = SIMD2(20.0, 30.0)
        let hand = models.reduce(0.0) { $0 + log(NormalCDF.phi((-90 - $1.mean(p)) / 4)) }
        #expect(abs(h.logLikelihood(p) - hand) < 1e-9)
        let a = h.jacobian(p), n = h.numericalJacobian(p)
        for r in 0..<2 { for c in 0..<2 { #expect(abs(a[r, c] - n[r, c]) < 1e-6) } }
    }
}
