import Foundation
import Testing
@testable import Replay
import Positioning
import TestSupport

/// Issue-6 figures on the bundled scenarios with the default pipeline (docs/fusion.md has the
/// full table). The assertions hold what the fusion achieves where it does; where a target is
/// not reached (crowd-peers: the phones' WCL errors share one shadowing field) the test pins
/// the honest figure's side.
@Suite struct FusionScenarioTests {
    /// mall-sparse-ap: PDR + WCL/HAPEL fusion halves the error; the smoother beats the filter.
    @Test func mallSparseAP() throws {
        guard let m = try BundledTraces.scores("mall-sparse-ap") else { return }
        let best = min(m["wcl"]!.mean, m["hapel"]!.mean)
        for f in ["ekf", "ukf", "pf"] { #expect(m[f]!.mean <= 0.8 * best, "\(f) \(m[f]!.mean) vs best single \(best)") }
        #expect(m["smoother"]!.mean <= m["ekf"]!.mean)
        // Consistency with the default inflations (α = 1.5 for WCL/HAPEL): ANEES within 1–3.
        #expect((1...3).contains(m["ekf"]!.anees!), "ekf ANEES \(m["ekf"]!.anees!)")
    }

    /// open-street: GNSS + PDR; the RTS smoother reaches ≤ 0.8 × GNSS, the filter does not
    /// (GNSS errors are time-correlated: a causal filter cannot average them away).
    @Test func openStreet() throws {
        guard let m = try BundledTraces.scores("open-street") else { return }
        #expect(m["smoother"]!.mean <= 0.8 * m["gnss"]!.mean)
        #expect(m["smoother"]!.mean <= m["ekf"]!.mean)
        #expect(m["ekf"]!.mean < m["gnss"]!.mean)
        #expect((1...2.6).contains(m["ekf"]!.anees!), "ekf ANEES \(m["ekf"]!.anees!)")
    }

    /// crowd-peers: the filters fuse the peer fixes (which replace the scan fixes they contain,
    /// `supersede`) and beat the peer solve; the smoother beats its filter. The issue's
    /// 0.8 × best single is met on this realisation by a hair (smoother 4.54 vs peer 5.70 m) and
    /// not over 50 seeded runs (0.84, docs/fusion.md), so it is not asserted here.
    @Test func crowdPeers() throws {
        guard let m = try BundledTraces.scores("crowd-peers") else { return }
        for f in ["ekf", "ukf", "pf"] { #expect(m[f]!.mean < m["peer"]!.mean, "\(f) \(m[f]!.mean) vs peer \(m["peer"]!.mean)") }
        #expect(m["smoother"]!.mean <= m["ekf"]!.mean)
        // Consistency on this run (the 50-run figure is 1.93, docs/consistency.md): ANEES within 1–3.
        #expect((1...3).contains(m["ekf"]!.anees!), "ekf ANEES \(m["ekf"]!.anees!)")
    }

    /// office-acoustic: TDoA alone is at 1 cm. The filters beat it where the motion model is good
    /// enough: standing at the test points (stationary diffusion), and walking between heel
    /// strikes (stride interpolation); the NLoS fixes TDoA keeps are gated. Issue-6 target met by
    /// the smoother (≤ 0.8 × tdoa); the causal ekf is below tdoa.
    @Test func officeAcoustic() throws {
        guard let m = try BundledTraces.scores("office-acoustic") else { return }
        #expect(m["smoother"]!.mean <= 0.8 * m["tdoa"]!.mean, "smoother \(m["smoother"]!.mean) vs tdoa \(m["tdoa"]!.mean)")
        #expect(m["ekf"]!.mean < m["tdoa"]!.mean, "ekf \(m["ekf"]!.mean) vs tdoa \(m["tdoa"]!.mean)")
    }

    /// urban-canyon and photo-landmark-downtown: the simulated phone reports 0.7× its error and
    /// its bias is larger than the default model's share (docs/simulator.md). The online widening
    /// from the bias estimate (`gnss_bias_adaptive_window`, default 30) brings the ekf's, ukf's and
    /// smoother's 95 % regions into [0.85, 0.99] (issue 21); without it the ekf holds 0.78 / 0.77.
    /// The widening changes only the reported covariance: the errors are those without it.
    /// The `gnss` source's own region is widened by the same online evidence before each fix
    /// (`GNSSStage`, `widen_from_filter`): without it the phone's reported accuracy holds 0.67 /
    /// 0.54 of its errors.
    @Test func urbanScenariosWiden() throws {
        for name in ["urban-canyon", "photo-landmark-downtown"] {
            guard let m = try BundledTraces.scores(name) else { return }
            for f in ["gnss", "ekf", "ukf", "smoother"] {
                #expect((0.85...0.99).contains(m[f]!.inside95!), "\(name) \(f) inside95 \(m[f]!.inside95!)")
            }
            let p = PackagePaths.root.appendingPathComponent("Traces/\(name)").path
            let off = try Replayer(options: ReplayOptions(stages: ["ekf": StageOptions(name: "ekf", values: ["gnss_bias_adaptive_window": .number(0)])]))
                .run(try TraceLocation.resolve(p))
            let e = try #require(off.scores.sources.first { $0.key == "ekf" }?.statistics)
            #expect(e.inside95! < 0.85, "\(name) ekf without the widening: inside95 \(e.inside95!)")
            #expect(e.mean == m["ekf"]!.mean && e.p95 == m["ekf"]!.p95, "\(name): the widening moved the estimate")
            let raw = try Replayer(options: ReplayOptions(stages: ["gnss": StageOptions(name: "gnss", values: ["widen_from_filter": .bool(false)])]))
                .run(try TraceLocation.resolve(p))
            let g = try #require(raw.scores.sources.first { $0.key == "gnss" }?.statistics)
            let k = try #require(raw.scores.sources.first { $0.key == "ekf" }?.statistics)
            #expect(g.inside95! < 0.85, "\(name) gnss without its widening: inside95 \(g.inside95!)")
            #expect(g.mean == m["gnss"]!.mean, "\(name): the gnss widening moved the fixes")
            #expect(k.mean == m["ekf"]!.mean && k.p95 == m["ekf"]!.p95 && k.anees == m["ekf"]!.anees && k.inside95 == m["ekf"]!.inside95,
                    "\(name): the gnss widening reached the ekf")
        }
    }

    /// Open sky (the simulated phone reports its accuracy right): the gnss widening must not make
    /// the fixes' region over-cautious.
    @Test func openSkyGNSSStaysHonest() throws {
        for name in ["open-street", "photo-landmark"] {
            guard let m = try BundledTraces.scores(name) else { return }
            #expect((0.85...0.99).contains(m["gnss"]!.inside95!), "\(name) gnss inside95 \(m["gnss"]!.inside95!)")
        }
    }
}
