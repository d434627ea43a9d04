import Testing
import Foundation
@testable import Replay
import Positioning
@testable import Simulation
import TestSupport

/// The simulator's fingerprint survey (`wifi.survey`) and the `fingerprint` stage on it.
@Suite struct FingerprintSurveyTests {
    static func scenario(survey: String, jitter: Double = 2, scanDuration: Double = 2, phone: String = "[[20, 20]]") -> String {
        """
        name: survey-test
        seed: 11
        origin: {lat: 40.5, lon: -74.45}
        duration_s: 40
        phones: [{height_m: 1.2, path: {mode: static, waypoints: \(phone)}}]
        wifi:
          scan_interval_s: 4
          scan_duration_s: \(scanDuration)
          threshold_dbm: -90
          shadowing_sigma_db: 6
          shadowing_corr_m: 3
          jitter_sigma_db: \(jitter)
          default_ap_height_m: 3
        \(survey)
          aps: [{e: 0, n: 0}, {e: 40, n: 0}, {e: 0, n: 40}, {e: 40, n: 40}, {e: 20, n: 0}, {e: 20, n: 40}]
        """
    }

    func simulate(_ yaml: String, _ name: String) throws -> (trace: URL, ref: URL, sc: Scenario) {
        let sc = try Scenario.parse(yaml: yaml)
        let d = PackagePaths.temporaryFolder(name)
        let t = d.appendingPathComponent("trace.jsonl"), r = d.appendingPathComponent("reference.json")
        _ = try Simulator.run(scenario: sc, trace: t, reference: r)
        return (t, r, sc)
    }

    /// Survey means = model RSS + change field + survey offset + mean jitter: the residual
    /// against the walk's model RSS − offset has mean ≈ 0 and std ≈ √(σ_c² + σ_j²/k + 1/12).
    @Test func surveyCarriesTheChangeFieldAndTheOffset() throws {
        let yaml = Self.scenario(survey: """
          survey: {spacing_m: 2, scans_per_point: 20, change_sigma_db: 3, device_offset_db: -3}
        """)
        let sc = try Scenario.parse(yaml: yaml)
        let w = WiFiSimulator(spec: sc.wifi!, seed: sc.seed)
        let pts = w.survey(seed: sc.seed, floorHeights: sc.floorHeights)
        #expect(pts.count == 21 * 21)
        var res: [Double] = []
        for p in pts {
            for (i, a) in sc.wifi!.aps.enumerated() {
                guard let v = p.rss[a.bssid] else { continue }
                let m = w.meanRSS(i, e: p.position.x, n: p.position.y, u: 1.2, floor: 0)
                guard m - 3 > -80 else { continue }   // well above the threshold: no censoring bias
                res.append(v - (m - 3))
            }
        }
        let mean = res.reduce(0, +) / Double(res.count)
        let sd = (res.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(res.count - 1)).squareRoot()
        let expected = (9 + 4.0 / 20 + 1.0 / 12).squareRoot()
        print("survey residual: n=\(res.count) mean \(mean) dB sd \(sd) dB (expected 0, \(expected))")
        // The change field is correlated over 3 m, so the 2,000-odd residuals are worth far fewer
        // independent samples: ±1 dB on the mean, ±25 % on the spread.
        #expect(abs(mean) < 1)
        #expect(abs(sd / expected - 1) < 0.25)
    }

    /// Adding a survey changes reference.json only: the trace stays byte-identical.
    @Test func surveyLeavesTheTraceUnchanged() throws {
        let a = try simulate(Self.scenario(survey: ""), "survey-none")
        let b = try simulate(Self.scenario(survey: "  survey: {spacing_m: 4, change_sigma_db: 3}"), "survey-some")
        #expect(try Data(contentsOf: a.trace) == Data(contentsOf: b.trace))
        let ref = try ReferenceLoader.load(url: b.ref, frame: LocalFrame(origin: b.sc.origin))
        let map = try #require(ref.fingerprints)
        #expect(map.points.count == 11 * 11 && map.spacing == 4 && map.threshold == -90)
        #expect(try ReferenceLoader.load(url: a.ref, frame: LocalFrame(origin: a.sc.origin)).fingerprints == nil)
    }

    /// Noise-free: a static phone on a survey point, no fading, no change, instant scans → with
    /// a likelihood as sharp as the data (σ = 0.5 dB) the `fingerprint` replay puts it on the
    /// point. (With the default 4.6 dB and five APs heard the posterior spreads over the room:
    /// 7.3 m here — σ is the model's noise, calibrated for surveys that have aged.)
    @Test func noiseFreeReplayIsExact() throws {
        let yaml = Self.scenario(survey: "  survey: {spacing_m: 2, scans_per_point: 1}", jitter: 0, scanDuration: 0, phone: "[[14, 22]]")
        let s = try simulate(yaml, "survey-exact")
        let sharp = ["fingerprint": StageOptions(name: "fingerprint", values: ["method": .string("bayes"), "sigma_db": .number(0.5)])]
        let result = try Replayer(options: ReplayOptions(stages: sharp)).run(try TraceLocation.resolve(s.trace.deletingLastPathComponent().path))
        let st = try #require(result.scores.score("fingerprint")?.statistics)
        print("noise-free fingerprint: n=\(st.count) mean \(st.mean) m max \(st.max) m")
        #expect(st.count == 10)
        #expect(st.max < 0.3)
    }
}
