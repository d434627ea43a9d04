import Foundation
import Testing
import TestSupport

/// `posfuse evaluate consistency` end to end: a short seeded Monte Carlo (2 runs × 30 s of
/// open-street, pf off) gives both bands per source in JSON; bad arguments exit 64.
@Suite struct ConsistencyCLITests {
    @Test func shortRunJSON() throws {
        let folder = CLI.root.appendingPathComponent("Traces/open-street")
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("scenario.yaml").path) else { return }
        let yaml = FileManager.default.temporaryDirectory.appendingPathComponent("consistency-cli-\(getpid()).yaml")
        try "stages:\n  pf:\n    enabled: false\n".write(to: yaml, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: yaml) }
        let r = try CLI.run(["evaluate", "consistency", folder.path, "--runs", "2", "--duration", "30",
                             "--pipeline", yaml.path, "--json", "--no-progress"])
        #expect(r.status == 0, "\(r.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let scenario = try #require((root["scenarios"] as? [[String: Any]])?.first)
        let sources = try #require(scenario["sources"] as? [[String: Any]])
        #expect(!sources.contains { $0["source"] as? String == "pf" })
        let ekf = try #require(sources.first { $0["source"] as? String == "ekf" })
        for key in ["anees", "band_low", "band_high", "tau", "effective_count", "effective_band_low", "effective_band_high",
                    "inside_effective_band", "inside95", "mean_m"] {
            #expect(ekf[key] != nil, "missing \(key)")
        }
        let lo = try #require(ekf["effective_band_low"] as? Double), hi = try #require(ekf["effective_band_high"] as? Double)
        let plo = try #require(ekf["band_low"] as? Double), phi = try #require(ekf["band_high"] as? Double)
        // n_eff ≥ N, so the effective band lies inside the per-run band.
        #expect(plo <= lo + 1e-12 && hi <= phi + 1e-12 && lo < 2 && hi > 2)
        // Each filter against the best stand-alone source on the same epochs.
        let pairs = try #require(scenario["fused_vs_best_single"] as? [[String: Any]])
        #expect(Set(pairs.compactMap { $0["fused"] as? String }) == ["ekf", "ukf", "smoother"] && pairs.allSatisfy { $0["single"] as? String == "gnss" })
        #expect(pairs.allSatisfy { ($0["epochs"] as? Int ?? 0) > 0 && $0["ratio"] is Double })
    }

    @Test func usageErrors() throws {
        #expect(try CLI.run(["evaluate", "consistency", "/nonexistent"]).status == 64)
        #expect(try CLI.run(["evaluate", "consistency", CLI.root.appendingPathComponent("Traces/open-street").path, "--runs", "0"]).status == 64)
        // --pipeline: unreadable → 64 (was 1, the regression code, before 23 Nov); a bad option
        // value → 65 with the file and the option named.
        let open = CLI.root.appendingPathComponent("Traces/open-street").path
        #expect(try CLI.run(["evaluate", "consistency", open, "--runs", "1", "--pipeline", "/nonexistent.yaml"]).status == 64)
        let bad = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: bad) }
        try "stages: {ekf: {gnss_bias_tau_s: 0}}\n".write(to: bad, atomically: true, encoding: .utf8)
        let r = try CLI.run(["evaluate", "consistency", open, "--runs", "1", "--pipeline", bad.path])
        #expect(r.status == 65 && r.stderr.contains(bad.path) && r.stderr.contains("gnss_bias_tau_s"), "\(r.status) \(r.stderr)")
    }
}

/// `posfuse calibrate gnss` end to end: fitted on the bundled urban-canyon trace, applied to
/// the bundled downtown trace (another route, the same urban GNSS profile, never fitted on):
/// the gnss fixes' share inside their 95 % circle moves toward 0.95. The calibration is a
/// factor on the fixes' own σ, so it is measured on them: both replays turn off the gnss
/// stage's online widening from the ekf (`widen_from_filter`, on by default since session 19),
/// which would otherwise report each fix's region widened by what the filter learned from the
/// earlier fixes (downtown's gnss inside95 with the default pipeline: 0.967 uncalibrated, 0.894
/// calibrated, both in [0.85, 0.99]; docs/consistency.md).
@Suite struct CalibrateCLITests {
    @Test func fitOnOneTraceApplyToAnother() throws {
        let urban = CLI.root.appendingPathComponent("Traces/urban-canyon"), downtown = CLI.root.appendingPathComponent("Traces/photo-landmark-downtown")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("calibration-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: out) }
        let fit = try CLI.run(["calibrate", "gnss", urban.path, "--min-per-bin", "50", "-o", out.path, "--json"])
        #expect(fit.status == 0, "\(fit.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(fit.stdout.utf8)) as? [String: Any])
        let factors = try #require(root["factors"] as? [Double]), edges = try #require(root["edges_m"] as? [Double])
        #expect(factors.count == edges.count + 1 && factors.count >= 2)
        #expect((root["fixes"] as? Int ?? 0) > 250)
        let text = try String(contentsOf: out, encoding: .utf8)
        #expect(text.contains("calibration_edges_m:") && text.contains("calibration_factors:"))
        func gnssInside95(_ extra: [String]) throws -> Double {
            let r = try CLI.run(["replay", downtown.path, "--json"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            let j = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            let scores = try #require(j["scores"] as? [[String: Any]])
            return try #require(scores.first { $0["source"] as? String == "gnss" }?["inside95"] as? Double)
        }
        let plain = FileManager.default.temporaryDirectory.appendingPathComponent("no-widening-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: plain) }
        try "stages:\n  gnss:\n    widen_from_filter: false\n".write(to: plain, atomically: true, encoding: .utf8)
        try (text + "    widen_from_filter: false\n").write(to: out, atomically: true, encoding: .utf8)
        let before = try gnssInside95(["--pipeline", plain.path]), after = try gnssInside95(["--pipeline", out.path])
        #expect(abs(after - 0.95) < abs(before - 0.95), "inside95 \(before) → \(after)")
    }

    /// `posfuse calibrate fingerprint` on two seeded runs of crowd-peers: a σ near the default's
    /// (fitted on 30 runs: 4.62 dB) and a pipeline file that replay accepts; a trace without a
    /// fingerprint map cannot be fitted (65).
    @Test func fingerprintSigma() throws {
        let peers = CLI.root.appendingPathComponent("Traces/crowd-peers").path
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("fp-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: out) }
        let fit = try CLI.run(["calibrate", "fingerprint", peers, "--runs", "2", "--first-seed", "1001", "-o", out.path, "--json"])
        #expect(fit.status == 0, "\(fit.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(fit.stdout.utf8)) as? [String: Any])
        let sigma = try #require(root["sigma_db"] as? Double), anees = try #require(root["anees"] as? Double)
        #expect(sigma > 3.5 && sigma < 6, "σ \(sigma)")
        #expect(abs(anees - 2) < 0.01 && (root["scans"] as? Int) == 750)
        #expect(try CLI.run(["replay", peers, "--pipeline", out.path]).status == 0)
        let mall = CLI.root.appendingPathComponent("Traces/mall-sparse-ap").path
        #expect(try CLI.run(["calibrate", "fingerprint", mall]).status == 65)
    }

    @Test func errors() throws {
        // --runs needs scenario folders; a trace without gnss fixes cannot be fitted (65).
        #expect(try CLI.run(["calibrate", "gnss", "/nonexistent", "--runs", "2"]).status == 64)
        let mall = CLI.root.appendingPathComponent("Traces/mall-sparse-ap").path
        let r = try CLI.run(["calibrate", "gnss", mall])
        #expect(r.status == 65 && r.stderr.contains("gnss fixes"), "\(r.status) \(r.stderr)")
    }
}
