import Foundation
import Testing
@testable import Positioning

/// `GNSSErrorModel`: exact factors on constructed NEES, the day-spread estimate, the predictive
/// (heavy-tailed) coverage on seeded Gaussian errors, the shipped file, and its application by
/// the `gnss` stage per handset family (pooled for others; a pipeline calibration wins).
@Suite struct GNSSErrorModelTests {
    static let chi95 = -2 * log(0.05)

    /// With no day spread, α is the recording's α₉₅: NEES 0.01…1.00 × χ²₂,₀.₉₅ · 4 (α = 2 scale):
    /// its 95 % point (index 95 of 100) is 0.96 · 4 χ²₂,₀.₉₅, so α₉₅ = 2√0.96, and the coverage
    /// at that α is exactly 0.96 (96 of 100 values ≤ the bound), at just below it 0.95.
    @Test func exactWithoutDaySpread() throws {
        let nees = (1...100).map { Double($0) / 100 * 4 * Self.chi95 }
        let a95 = try #require(GNSSErrorModel.alpha95(nees))
        #expect(abs(a95 - 2 * 0.96.squareRoot()) < 1e-12)
        #expect(GNSSErrorModel.coverage(a95, recordings: [nees], daySpread: 0) == 0.96)
        let m = try #require(GNSSErrorModel.fit([.init(family: "A", nees: nees)], daySpread: 0))
        // The solver finds the smallest α with C ≥ 0.95: the 95th value, 0.95 · 4 χ²₂,₀.₉₅.
        #expect(abs(m.families["A"]!.factor - 2 * 0.95.squareRoot()) < 1e-9)
        #expect(m.pooled.factor == m.families["A"]!.factor && m.pooled.recordings == 1 && m.pooled.fixes == 100)
    }

    /// s is the within-family SD of ln α₉₅: two recordings of one family with α₉₅ 1 and 2 give
    /// |ln 2|/√2; without a family of two, the SD over all recordings; one recording, 0.
    @Test func daySpread() throws {
        let base = (1...100).map { Double($0) / 100 * Self.chi95 / 0.95 }   // α₉₅ = 1 exactly
        let twice = base.map { 4 * $0 }                                     // α₉₅ = 2
        let s = try #require(GNSSErrorModel.daySpread([.init(family: "A", nees: base), .init(family: "A", nees: twice),
                                                       .init(family: "B", nees: base)]))
        #expect(abs(s - log(2) / 2.squareRoot()) < 1e-12)
        let between = try #require(GNSSErrorModel.daySpread([.init(family: "A", nees: base), .init(family: "B", nees: twice)]))
        #expect(abs(between - log(2) / 2.squareRoot()) < 1e-12)
        #expect(GNSSErrorModel.daySpread([.init(family: "A", nees: base)]) == 0)
        #expect(GNSSErrorModel.daySpread([]) == nil)
    }

    /// Seeded Gaussian errors of a phone whose σ is 1.5× what it reports: with s = 0 the factor
    /// is 1.5 within sampling error (20,000 fixes); with a day spread the factor is larger (the
    /// predictive is a scale mixture), and on days whose errors are e^{±s} × the training day's,
    /// the coverage averaged over the two is ≥ 0.93 while α₉₅ alone gives less.
    @Test func seededHeavyTail() throws {
        var rng = TestRNG(seed: 11)
        let nees = (0..<20000).map { _ -> Double in
            // Box–Muller: ‖e‖² of a circular Gaussian with σ = 1.5 per axis is −2 σ² ln U.
            let u = max(rng.uniform(), 1e-300)
            return -2 * 1.5 * 1.5 * log(u)
        }
        let m0 = try #require(GNSSErrorModel.fit([.init(family: "P", nees: nees)], daySpread: 0))
        #expect(abs(m0.families["P"]!.factor - 1.5) < 0.03, "\(m0.families["P"]!.factor)")
        let s = 0.4
        let m = try #require(GNSSErrorModel.fit([.init(family: "P", nees: nees)], daySpread: s))
        let a = m.families["P"]!.factor
        #expect(a > 1.5 * 1.1)
        func onDays(_ alpha: Double) -> Double {
            [exp(s), exp(-s)].map { d in Double(nees.filter { $0 * d * d <= alpha * alpha * Self.chi95 }.count) / Double(nees.count) }
                .reduce(0, +) / 2
        }
        #expect(onDays(a) >= 0.93, "\(onDays(a))")
        #expect(onDays(m0.families["P"]!.factor) < onDays(a))
    }

    /// The shipped file decodes, has a pooled entry and a day spread, and round-trips.
    @Test func shippedFile() throws {
        let m = GNSSErrorModel.shipped
        #expect(m.pooled.factor > 1 && m.daySpread > 0 && !m.families.isEmpty && !m.provenance.isEmpty)
        #expect(try GNSSErrorModel.decode(try m.encoded()) == m)
    }

    /// The `gnss` stage applies the model by family: `handset_family`, else the header's device
    /// (normalised: `Pixel4XLModded` → `Pixel4XL`), else the event's device; a family the model
    /// lacks gets the pooled factor; a pipeline calibration wins; `error_model: none` = raw.
    @Test func stageAppliesModelByFamily() throws {
        let model = GNSSErrorModel(families: ["Pixel4XL": .init(factor: 3, recordings: 1, fixes: 1)],
                                   pooled: .init(factor: 2, recordings: 1, fixes: 1), daySpread: 0.5, provenance: "test")
        let origin = Geodetic(latitude: 37.4, longitude: -122.1)
        let fix = GNSSFix(latitude: 37.4, longitude: -122.1, accuracy: 1.5096)      // σ = 1 m raw
        func sigma(_ stage: GNSSStage, device: String?, event: String = "phone") -> Double? {
            let ctx = PipelineContext(header: TraceHeader(origin: origin, device: device))
            for r in stage.process(TraceEvent(time: 0, device: event, payload: .gnss(fix)), upstream: [], context: ctx) {
                if case .fix(let f) = r { return f.covariance.ee.squareRoot() }
            }
            return nil
        }
        let byModel = GNSSStage(errorModel: model)
        #expect(abs(sigma(byModel, device: "Pixel4XLModded")! - 3) < 1e-4)
        #expect(abs(sigma(byModel, device: nil, event: "Pixel4XL_chipset")! - 3) < 1e-4)
        #expect(abs(sigma(byModel, device: "simulated Android phone")! - 2) < 1e-4)
        #expect(abs(sigma(GNSSStage(errorModel: model, handsetFamily: "Pixel4XL"), device: "other")! - 3) < 1e-4)
        let own = GNSSStage(estimator: GNSSEstimator(calibration: GNSSAccuracyCalibration(edges: [], factors: [1.25])), errorModel: model)
        #expect(abs(sigma(own, device: "Pixel4XL")! - 1.25) < 1e-4)
        #expect(abs(sigma(GNSSStage(), device: "Pixel4XL")! - 1) < 1e-4)
        // Through the stage registry: `shipped` is the shipped model, `none` turns it off, the
        // default is `GNSSErrorModel.stageDefault`.
        let def = try #require(try StageRegistry.entries.first { $0.name == "gnss" }!.make(StageOptions(name: "gnss")) as? GNSSStage)
        #expect(def.errorModel == (GNSSErrorModel.stageDefault == "shipped" ? GNSSErrorModel.shipped : nil))
        let sh = try #require(try StageRegistry.entries.first { $0.name == "gnss" }!
            .make(StageOptions(name: "gnss", values: ["error_model": .string("shipped")])) as? GNSSStage)
        #expect(sh.errorModel == GNSSErrorModel.shipped)
        let none = try #require(try StageRegistry.entries.first { $0.name == "gnss" }!
            .make(StageOptions(name: "gnss", values: ["error_model": .string("none")])) as? GNSSStage)
        #expect(none.errorModel == nil)
        #expect(throws: ConfigurationError.self) {
            _ = try StageRegistry.entries.first { $0.name == "gnss" }!.make(StageOptions(name: "gnss", values: ["error_model": .string("/nonexistent/model.json")]))
        }
    }

    /// Error correlation on seeded errors of the model's own form: z = b + w per axis, b a
    /// first-order Gauss–Markov bias with share β = 0.9 of the unit variance and τ = 40 s, w white,
    /// at 1 Hz, ten recordings of 2,000 fixes. The fit recovers β within 0.03 and τ within 20 %;
    /// purely white errors give nil (no lag with ρ > 0.05), and a model fitted with such
    /// recordings carries the correlation in its entries and its file.
    @Test func seededErrorCorrelation() throws {
        var rng = TestRNG(seed: 2027)
        let beta = 0.9, tau = 40.0, phi = exp(-1 / tau)
        func recording(bias beta: Double) -> [(time: Double, error: SIMD2<Double>)] {
            var b = SIMD2(rng.gaussian(), rng.gaussian()) * beta.squareRoot()
            return (0..<2000).map { k in
                b = phi * b + SIMD2(rng.gaussian(), rng.gaussian()) * (beta * (1 - phi * phi)).squareRoot()
                return (Double(k), b + SIMD2(rng.gaussian(), rng.gaussian()) * (1 - beta).squareRoot())
            }
        }
        let recs = (0..<10).map { _ in recording(bias: beta) }
        let c = try #require(GNSSErrorModel.fitCorrelation(recs))
        #expect(abs(c.biasFraction - beta) < 0.03, "β \(c.biasFraction)")
        #expect(abs(c.correlationTime / tau - 1) < 0.2, "τ \(c.correlationTime)")
        let white = (0..<3).map { _ in (0..<2000).map { k in (Double(k), SIMD2(rng.gaussian(), rng.gaussian())) } }
        #expect(GNSSErrorModel.fitCorrelation(white) == nil)
        let m = try #require(GNSSErrorModel.fit(recs.map { r in
            GNSSErrorModel.Recording(family: "P", nees: r.map { ($0.error * $0.error).sum() }, normalizedErrors: r)
        }, daySpread: 0))
        #expect(m.families["P"]!.correlation == c && m.pooled.correlation == c && m.correlation(forFamily: "other") == c)
        #expect(try GNSSErrorModel.decode(try m.encoded()) == m)
    }

    /// The velocity noise (`fitVelocity`), seeded: a receiver whose reported velocity is the truth's
    /// 0.5 s earlier plus an AR(1) error (per-axis σ 0.2 m/s, ρ(k) = 0.6^k at 1 s steps) — at the
    /// other latencies the error also holds the truth's change (a 1.5 m/s² swing). The fit finds
    /// L = 0.5 s, σ_v = 0.2 within 8 % and g = 1 + 2 Σ 0.6^k = 4 within 15 %, and stores σ_v √g.
    /// White errors give g ≈ 1; recordings without velocities give none (the family falls back to
    /// the pooled entry).
    @Test func seededVelocityNoise() throws {
        var rng = TestRNG(seed: 99)
        let sigma = 0.2, rho = 0.6
        func recording(rho: Double) -> [[(time: Double, error: SIMD2<Double>)]] {
            var e = SIMD2(rng.gaussian(), rng.gaussian()) * sigma
            let errs: [SIMD2<Double>] = (0..<3000).map { _ in
                e = rho * e + SIMD2(rng.gaussian(), rng.gaussian()) * (sigma * (1 - rho * rho).squareRoot()); return e
            }
            // Truth velocity 1.5 sin(t) m/s on E; the error against the truth L s earlier is e plus
            // the truth's change between t − 0.5 and t − L.
            return GNSSErrorModel.velocityLatencies.map { lag in
                errs.enumerated().map { k, e in
                    let t = Double(k)
                    return (t, e + SIMD2(1.5 * (sin(t - 0.5) - sin(t - lag)), 0))
                }
            }
        }
        let recs = (0..<3).map { _ in GNSSErrorModel.Recording(family: "P", nees: [1, 2, 3], velocityErrors: recording(rho: rho)) }
        let v = try #require(GNSSErrorModel.fitVelocity(recs, daySpread: 0))
        #expect(v.latency == 0.5)
        #expect(abs(v.integral / 4 - 1) < 0.15, "g \(v.integral)")
        #expect(abs(v.sigma / v.integral.squareRoot() / sigma - 1) < 0.08, "σ_v \(v.sigma / v.integral.squareRoot())")
        let white = try #require(GNSSErrorModel.fitVelocity([GNSSErrorModel.Recording(family: "P", nees: [1], velocityErrors: recording(rho: 0))], daySpread: 0))
        #expect(white.integral < 1.15 && white.latency == 0.5)
        let m = try #require(GNSSErrorModel.fit(recs + [GNSSErrorModel.Recording(family: "S", nees: [1, 2, 3])], daySpread: 0))
        #expect(m.families["P"]!.velocitySigma == v.sigma && m.families["P"]!.velocityLatency == 0.5 && m.families["P"]!.velocityFixes == 9000)
        #expect(m.families["S"]!.velocitySigma == nil && m.velocity(forFamily: "S")! == (m.pooled.velocitySigma!, m.pooled.velocityLatency!))
        #expect(try GNSSErrorModel.decode(try m.encoded()) == m)
        #expect(GNSSErrorModel.fitVelocity([GNSSErrorModel.Recording(family: "S", nees: [1])], daySpread: 0) == nil)
    }

    /// The gnss stage hands the model's correlation for the phone's family to its fixes, and the
    /// ekf's GNSS bias block takes it from them: the ekf over such fixes is exactly the ekf whose
    /// options `gnss_bias_fraction` / `gnss_bias_tau_s` give the same values, and differs from the
    /// stage defaults (β 0.75, τ 30 s).
    @Test func fixesCarryTheModelsErrorCorrelation() throws {
        let corr = ErrorCorrelation(biasFraction: 0.95, correlationTime: 120)
        let model = GNSSErrorModel(families: ["Pixel4": .init(factor: 1.5, recordings: 1, fixes: 1, correlation: corr)],
                                   pooled: .init(factor: 2, recordings: 1, fixes: 1), daySpread: 0.5, provenance: "test")
        let origin = Geodetic(latitude: 37.4, longitude: -122.1)
        let ctx = PipelineContext(header: TraceHeader(origin: origin, device: "Pixel4"))
        let stage = GNSSStage(errorModel: model)
        var rng = TestRNG(seed: 3)
        var fixes: [Fix] = []
        for k in 0..<60 {
            let g = GNSSFix(latitude: 37.4 + Double(k) * 1e-4 + 2e-6 * rng.gaussian(), longitude: -122.1 + 2e-6 * rng.gaussian(), accuracy: 2)
            for r in stage.process(TraceEvent(time: Double(k), payload: .gnss(g)), upstream: [], context: ctx) { if case .fix(let f) = r { fixes.append(f) } }
        }
        #expect(fixes.count == 60 && fixes.allSatisfy { $0.errorCorrelation == corr })
        #expect(GNSSStage(errorModel: model).estimator(device: "x", header: TraceHeader(origin: origin, device: "Pixel9")).errorCorrelation == nil)
        func ekf(_ values: [String: ConfigValue], _ input: [Fix]) throws -> [Fix] {
            let s = try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: values))
            var out: [Fix] = []
            for f in input {
                let e = TraceEvent(time: f.time, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 2)))
                for r in s.process(e, upstream: [.fix(f)], context: ctx) { if case .fix(let y) = r { out.append(y) } }
            }
            return out
        }
        let bare = fixes.map { f -> Fix in var g = f; g.errorCorrelation = nil; return g }
        let carried = try ekf([:], fixes)
        let byOptions = try ekf(["gnss_bias_fraction": .number(0.95), "gnss_bias_tau_s": .number(120)], bare)
        let defaults = try ekf([:], bare)
        #expect(carried.count == 60 && carried.map(\.position) == byOptions.map(\.position) && carried.map(\.covariance) == byOptions.map(\.covariance))
        #expect(carried.last!.covariance != defaults.last!.covariance)
    }
}
