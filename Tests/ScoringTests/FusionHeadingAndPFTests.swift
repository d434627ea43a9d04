import Foundation
import Testing
@testable import Replay
import Positioning
import TestSupport

/// Bundled-scenario figures that depend on the PDR heading filter (gyro-bias Kalman filter
/// with magnitude and dip gating) and on the regularised particle filter (measured with the
/// default pipeline; full table in docs/fusion.md).
@Suite struct FusionHeadingAndPFTests {
    /// office-acoustic: centimetre TDoA collapses an unregularised cloud onto one particle
    /// (ANEES 10³⁴); the regularised pf reports an honest covariance (measured ANEES 1.78,
    /// inside95 0.96) and keeps the centimetre level (mean 3.6 cm).
    @Test func officeAcousticParticleFilterIsConsistent() throws {
        guard let m = try BundledTraces.scores("office-acoustic") else { return }
        let pf = try #require(m["pf"])
        #expect(try #require(pf.anees) < 3, "pf ANEES \(pf.anees!)")
        #expect(try #require(pf.inside95) >= 0.9, "pf inside95 \(pf.inside95!)")
        #expect(pf.mean < 0.05, "pf mean \(pf.mean) m")
    }

    /// urban-canyon: GNSS + PDR through a disturbed magnetic field (6 µT per axis). With the
    /// gyro-bias heading filter the ekf reaches 0.85 × GNSS (was 0.94 with the complementary
    /// filter), the smoother 0.68 ×.
    @Test func urbanCanyonFusionBeatsGNSS() throws {
        guard let m = try BundledTraces.scores("urban-canyon") else { return }
        let gnss = try #require(m["gnss"]).mean
        #expect(try #require(m["ekf"]).mean <= 0.9 * gnss, "ekf \(m["ekf"]!.mean) vs gnss \(gnss)")
        #expect(try #require(m["smoother"]).mean <= 0.8 * gnss, "smoother \(m["smoother"]!.mean) vs gnss \(gnss)")
    }
}
