import Foundation
import Testing
@testable import Positioning

/// Time-correlated WiFi map error (docs/fusion.md, "Radio fixes with a correlated error"): its
/// fit from a walk's residuals (`ErrorCorrelation.binnedAutocorrelation`, `ErrorCorrelation.fit`,
/// `RadioUncertaintyModel.correlation`) and its use by the filters' bias block for fixes that
/// carry it (`Fix.errorCorrelation` on a `wcl` fix).
@Suite struct RadioErrorCorrelationTests {
    /// A walk's normalised errors at irregular scan times (2–7 s apart, as phones scan): a
    /// first-order Gauss–Markov bias with share β and correlation time τ plus white noise, unit
    /// variance per axis.
    static func series(_ rng: inout SplitMix64, beta: Double, tau: Double, scans: Int) -> [(time: Double, error: SIMD2<Double>)] {
        var t = 0.0, out: [(time: Double, error: SIMD2<Double>)] = []
        var b = beta.squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
        for _ in 0..<scans {
            let dt = 2 + 5 * rng.uniform()
            t += dt
            let phi = exp(-dt / tau)
            b = phi * b + (beta * (1 - phi * phi)).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
            out.append((t, b + (1 - beta).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())))
        }
        return out
    }

    /// β and τ come back from 60 seeded walks of 60 scans each (within 0.1 and 30 %), and white
    /// errors give no correlation (every binned ρ ≈ 0, under the fit's 0.05 floor).
    @Test func fitRecoversBiasShareAndCorrelationTime() throws {
        var rng = SplitMix64(seed: 20)
        for (beta, tau) in [(0.85, 25.0), (0.6, 10.0)] {
            let walks = (0..<60).map { _ in Self.series(&rng, beta: beta, tau: tau, scans: 60) }
            let curve = ErrorCorrelation.binnedAutocorrelation(walks, bins: RadioUncertaintyModel.correlationBins)
            let c = try #require(ErrorCorrelation.fit(curve, minBias: 0.05), "curve \(curve)")
            #expect(abs(c.biasFraction - beta) < 0.1, "β \(c.biasFraction) vs \(beta); curve \(curve)")
            #expect(abs(c.correlationTime / tau - 1) < 0.3, "τ \(c.correlationTime) vs \(tau); curve \(curve)")
        }
        let white = (0..<60).map { _ in Self.series(&rng, beta: 1e-9, tau: 1, scans: 60) }
        let curve = ErrorCorrelation.binnedAutocorrelation(white, bins: RadioUncertaintyModel.correlationBins)
        #expect(curve.count >= 4 && curve.allSatisfy { abs($0.rho) < 0.05 }, "white: \(curve)")
        #expect(ErrorCorrelation.fit(curve, minBias: 0.05) == nil)
    }

    /// The uncertainty fit puts the correlation of its training residuals on the term (measured
    /// on the residuals over the fitted σ, per walk), and `inflate` puts it on every fix of the
    /// source; white residuals leave it nil (the fix then enters the filter white, as before).
    @Test func uncertaintyTermCarriesTheCorrelation() throws {
        var rng = SplitMix64(seed: 21)
        func samples(beta: Double) -> [RadioUncertaintyModel.Sample] {
            (0..<30).flatMap { w in
                Self.series(&rng, beta: beta, tau: 20, scans: 40).map { z in
                    RadioUncertaintyModel.Sample(residual: 6 * z.error, covariance: Covariance2(sigma: 3),
                                                 features: .init(surveyDistance: 0, knownShare: 1, signalDistance: 0), walk: w, time: z.time)
                }
            }
        }
        let term = try #require(RadioUncertaintyModel.fit(samples(beta: 0.8)))
        let c = try #require(term.correlation)
        #expect(abs(c.biasFraction - 0.8) < 0.12 && c.correlationTime > 12 && c.correlationTime < 30, "\(c)")
        let white = try #require(RadioUncertaintyModel.fit(samples(beta: 1e-9)))
        #expect(white.correlation == nil, "white residuals: \(String(describing: white.correlation))")

        let model = RadioUncertaintyModel(terms: ["wcl": term])
        let fix = Fix(time: 1, position: SIMD2(3, 4), covariance: Covariance2(sigma: 2), source: .wcl)
        let scan = WiFiScan(accessPoints: [])
        #expect(model.inflate(fix, scan: scan, reference: ReferenceData()).errorCorrelation == c)
        // A term without one (a map written before the fit existed) leaves the fix white.
        var old = term; old.correlation = nil
        #expect(RadioUncertaintyModel(terms: ["wcl": old]).inflate(fix, scan: scan, reference: ReferenceData()).errorCorrelation == nil)
        // The stored JSON round-trips it, and a model without the member still decodes.
        let back = try JSONDecoder().decode(RadioUncertaintyModel.self, from: JSONEncoder().encode(model))
        #expect(back == model)
        let legacy = #"{"terms":{"wcl":{"gamma":1,"a":2,"b":0,"c":0,"e":0,"k":1,"samples":30}}}"#
        #expect(try JSONDecoder().decode(RadioUncertaintyModel.self, from: Data(legacy.utf8)).terms["wcl"]?.correlation == nil)
    }

    /// Walks far from the map keep their offset longer (docs/fusion.md, "A correlation time that
    /// grows with novelty"): 30 seeded near walks (every AP known, errors 6 m, τ 10 s) and 30 far
    /// ones (half the APs unknown, 18 m, τ 80 s), 40 scans each. The fit's width grows with
    /// 1 − u, the walks sorted by their median σₓ fall into three groups (20 near; 10 near and
    /// 10 far; 20 far), and the first and last group's τ come back within 35 % of 10 and 80 s;
    /// a fix gets the group correlation of its σₓ, interpolated between the groups' σₓ and held
    /// beyond them; `inflate` puts it on the fix. Fewer than 3 walks per group: none (the pooled
    /// correlation for every fix).
    @Test func correlationTimeGrowsWithNovelty() throws {
        var rng = SplitMix64(seed: 22)
        let near = RadioUncertaintyModel.Features(surveyDistance: 0, knownShare: 1, signalDistance: 0)
        let far = RadioUncertaintyModel.Features(surveyDistance: 0, knownShare: 0.5, signalDistance: 0)
        let samples: [RadioUncertaintyModel.Sample] = (0..<60).flatMap { w in
            let isFar = w % 2 == 1
            return Self.series(&rng, beta: 0.9, tau: isFar ? 80 : 10, scans: 40).map { z in
                RadioUncertaintyModel.Sample(residual: (isFar ? 18 : 6) * z.error, covariance: Covariance2(sigma: 3),
                                             features: isFar ? far : near, group: w % 5, walk: w, time: z.time)
            }
        }
        let term = try #require(RadioUncertaintyModel.fit(samples, forms: [.linear]))
        #expect(term.sigmaX(far) > term.sigmaX(near) + 5, "σₓ near \(term.sigmaX(near)) far \(term.sigmaX(far))")
        let g = try #require(term.noveltyCorrelation)
        #expect(g.count == 3)
        #expect(g[0].sigmaX == term.sigmaX(near) && g[2].sigmaX == term.sigmaX(far), "\(g)")
        #expect(abs(g[0].correlation.correlationTime / 10 - 1) < 0.35, "\(g)")
        #expect(abs(g[2].correlation.correlationTime / 80 - 1) < 0.35, "\(g)")
        #expect(term.correlation(for: near) == g[0].correlation && term.correlation(for: far) == g[2].correlation)
        let mid = RadioUncertaintyModel.Features(surveyDistance: 0, knownShare: 0.75, signalDistance: 0)
        let c = try #require(term.correlation(for: mid))
        let lo = min(g[0].correlation.correlationTime, g[2].correlation.correlationTime)
        let hi = max(g[0].correlation.correlationTime, g[2].correlation.correlationTime)
        #expect(c.correlationTime > lo && c.correlationTime < hi, "\(c) between \(g)")
        let beyond = RadioUncertaintyModel.Features(surveyDistance: 0, knownShare: 0, signalDistance: 0)
        #expect(term.correlation(for: beyond) == g[2].correlation)

        var map = RadioUncertaintyModel(terms: ["wcl": term])
        let fix = Fix(time: 1, position: SIMD2(3, 4), covariance: Covariance2(sigma: 2), source: .wcl)
        // An empty scan: u = 0, beyond the farthest group.
        #expect(map.inflate(fix, scan: WiFiScan(accessPoints: []), reference: ReferenceData()).errorCorrelation == g[2].correlation)
        map.terms["wcl"]!.noveltyCorrelation = nil
        #expect(map.inflate(fix, scan: WiFiScan(accessPoints: []), reference: ReferenceData()).errorCorrelation == term.correlation)
        #expect(RadioUncertaintyModel.correlationByNovelty(Array(samples.filter { $0.walk < 8 }), term: term) == nil)
        let back = try JSONDecoder().decode(RadioUncertaintyModel.self, from: JSONEncoder().encode(RadioUncertaintyModel(terms: ["wcl": term])))
        #expect(back.terms["wcl"] == term)
    }

    /// WiFi-like fixes (source `wcl`, σ = 6 m, every 2–7 s) whose errors are 90 % a bias with
    /// τ = 25 s, on a constant-velocity walker: the filter that takes the fixes as independent is
    /// over-confident (filtered ANEES above, smoothed ANEES more than twice the consistent 2),
    /// while the same fixes carrying their `errorCorrelation` go through the bias block and the
    /// filter and smoother are consistent: the mean of 300 run-averaged NEES lies within 3
    /// standard errors of 2 (each run's average has expectation 2 for a consistent filter however
    /// its epochs correlate, and the runs are independent).
    @Test func correlatedWiFiFixesAreConsistentThroughTheBiasBlock() {
        let correlation = ErrorCorrelation(biasFraction: 0.9, correlationTime: 25)
        let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
        // `defaultInflation`: the stage's default α per source (wcl 1.5) instead of none; the
        // fixes that carry the correlation then take `radioMapInflation` (`radio_map_inflation`).
        func run(seed: UInt64, carry: Bool, defaultInflation: Bool = false, radioMapInflation: Double = 1) -> (filtered: Double, smoothed: Double, rmse: (Double, Double)) {
            var s = FusionStage.Settings(kind: .ekf)
            if !defaultInflation { s.inflation = [:] }
            s.radioMapInflation = radioMapInflation
            s.gateProbability = nil; s.layout = .cv; s.adaptiveAccuracy = []
            s.motion.constantVelocity.q = 0.05                    // a walker at about 1 m/s, slowly turning
            let filter = FusionStage(settings: s), smoother = SmootherStage(settings: s)
            var rng = SplitMix64(seed: seed)
            let sigma = 6.0, beta = correlation.biasFraction
            var p = SIMD2<Double>(0, 0), v = SIMD2<Double>(1, 0.3), t = 0.0
            var b = sigma * beta.squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
            var truth: [Double: SIMD2<Double>] = [:], filtered: [Fix] = []
            for _ in 0..<50 {
                let dt = 2 + 5 * rng.uniform()
                // Truth: integrated white acceleration of PSD q (exactly the filter's model).
                let q = s.motion.constantVelocity.q
                let a = q * dt * dt * dt / 3, c2 = q * dt * dt / 2, c = q * dt
                let l11 = a.squareRoot(), l21 = c2 / l11, l22 = (c - l21 * l21).squareRoot()
                let u = SIMD2(rng.gaussian(), rng.gaussian()), w = SIMD2(rng.gaussian(), rng.gaussian())
                p += dt * v + l11 * u; v += l21 * u + l22 * w; t += dt
                let phi = exp(-dt / correlation.correlationTime)
                b = phi * b + sigma * (beta * (1 - phi * phi)).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian())
                var f = Fix(time: t, position: p + b + sigma * (1 - beta).squareRoot() * SIMD2(rng.gaussian(), rng.gaussian()),
                            covariance: Covariance2(sigma: sigma), source: .wcl)
                if carry { f.errorCorrelation = correlation }
                truth[t] = p
                let ev = TraceEvent(time: t, payload: .wifi(WiFiScan(accessPoints: [])))
                for r in filter.process(ev, upstream: [.fix(f)], context: context) { if case .fix(let x) = r { filtered.append(x) } }
                _ = smoother.process(ev, upstream: [.fix(f)], context: context)
            }
            var smoothed: [Fix] = []
            for r in smoother.finish(context: context) { if case .fix(let x) = r { smoothed.append(x) } }
            func stats(_ fs: [Fix]) -> (Double, Double) {
                var n = 0.0, se = 0.0
                for f in fs { let d = f.position - truth[f.time]!; n += f.covariance.mahalanobis2(d) ?? .infinity; se += (d * d).sum() }
                return (n / Double(fs.count), se / Double(fs.count))
            }
            let (nf, sf) = stats(filtered), (ns, ss) = stats(smoothed)
            return (nf, ns, (sf, ss))
        }
        func meanAndLimit(_ v: [Double]) -> (mean: Double, limit: Double) {
            let m = v.reduce(0, +) / Double(v.count)
            let sd = (v.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(v.count - 1)).squareRoot()
            return (m, 3 * sd / Double(v.count).squareRoot())
        }
        let runs = (0..<300).map { run(seed: 5000 + UInt64($0), carry: true) }
        for (name, v) in [("filtered", runs.map(\.filtered)), ("smoothed", runs.map(\.smoothed))] {
            let (m, limit) = meanAndLimit(v)
            #expect(abs(m - 2) < limit, "with the bias block: \(name) ANEES \(m), 2 ± \(limit)")
        }
        let msf = runs.map(\.rmse.0).reduce(0, +), mss = runs.map(\.rmse.1).reduce(0, +)
        #expect(mss < msf, "smoothed MSE \(mss / 300) vs filtered \(msf / 300)")
        let white = (0..<300).map { run(seed: 5000 + UInt64($0), carry: false) }
        let (wf, wl) = meanAndLimit(white.map(\.filtered)), ws = meanAndLimit(white.map(\.smoothed)).mean
        #expect(wf > 2 + wl, "fixes taken as independent: filtered ANEES \(wf)")
        #expect(ws > 4, "fixes taken as independent: smoothed ANEES \(ws)")
        // The stage's defaults (wcl α 1.5 in `inflation`): a fix that carries its map's correlation
        // enters at α = `radio_map_inflation` (1), so the same 300 runs are consistent as they are;
        // with the white-noise α of 1.5 on top of the bias block (before session 20) the region was
        // 2.25 times too large in variance: ANEES below the band.
        let defaults = (0..<300).map { run(seed: 5000 + UInt64($0), carry: true, defaultInflation: true) }
        #expect(defaults.map(\.filtered) == runs.map(\.filtered) && defaults.map(\.smoothed) == runs.map(\.smoothed))
        let twice = (0..<300).map { run(seed: 5000 + UInt64($0), carry: true, defaultInflation: true, radioMapInflation: 1.5) }
        for (name, v) in [("filtered", twice.map(\.filtered)), ("smoothed", twice.map(\.smoothed))] {
            let (m, limit) = meanAndLimit(v)
            #expect(m < 2 - limit, "α 1.5 over the bias block: \(name) ANEES \(m)")
        }
        // Fixes without the map's correlation keep the source's α (1.5): `radio_map_inflation`
        // does not touch them.
        let whiteDefaults = (0..<20).map { run(seed: 5000 + UInt64($0), carry: false, defaultInflation: true, radioMapInflation: 3) }
        let whiteDefaults1 = (0..<20).map { run(seed: 5000 + UInt64($0), carry: false, defaultInflation: true) }
        #expect(whiteDefaults.map(\.filtered) == whiteDefaults1.map(\.filtered))
        #expect(whiteDefaults.map(\.filtered) != white.prefix(20).map(\.filtered))
    }
    /// `radio_map_inflation` applies where the bias block takes the radio-map fix: in a filter
    /// started by such a fix (the block primed with it) the source's `inflation` plays no part;
    /// while GNSS fixes hold the block the radio-map fix enters white, at the source's α, exactly
    /// like a fix without the correlation.
    @Test func radioMapInflationOnlyWhereTheBlockTakesTheFix() throws {
        let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
        let correlation = ErrorCorrelation(biasFraction: 0.9, correlationTime: 25)
        func run(gnssFirst: Bool, carry: Bool, wclInflation: Double = 1.5) throws -> Fix {
            var s = FusionStage.Settings(kind: .ekf)
            s.layout = .cv; s.adaptiveAccuracy = []; s.gateProbability = nil; s.inflation[.wcl] = wclInflation
            let stage = FusionStage(settings: s)
            var last: Fix?
            var upstream: [(Double, Fix)] = []
            if gnssFirst {
                for k in 0..<3 { upstream.append((Double(k), Fix(time: Double(k), position: SIMD2(Double(k), 0), covariance: Covariance2(sigma: 4), source: .gnss))) }
            }
            for k in 3..<6 {
                var f = Fix(time: Double(k), position: SIMD2(Double(k) + 2, 1), covariance: Covariance2(sigma: 6), source: .wcl)
                if carry { f.errorCorrelation = correlation }
                upstream.append((Double(k), f))
            }
            for (t, f) in upstream {
                for r in stage.process(TraceEvent(time: t, payload: .wifi(WiFiScan(accessPoints: []))), upstream: [.fix(f)], context: context) {
                    if case .fix(let y) = r { last = y }
                }
            }
            return try #require(last)
        }
        let heldByGNSS = try run(gnssFirst: true, carry: true), white = try run(gnssFirst: true, carry: false)
        #expect(heldByGNSS.position == white.position && heldByGNSS.covariance == white.covariance)
        #expect(try run(gnssFirst: true, carry: true, wclInflation: 3).covariance != heldByGNSS.covariance)
        let byBlock = try run(gnssFirst: false, carry: true)
        #expect(try run(gnssFirst: false, carry: true, wclInflation: 3) == byBlock)
        let whiteStart = try run(gnssFirst: false, carry: false)
        #expect(try run(gnssFirst: false, carry: false, wclInflation: 3).covariance != whiteStart.covariance)
        #expect(byBlock.covariance != whiteStart.covariance)
    }

    /// One scan's WiFi fixes that carry a correlation share the one bias state, so they enter as
    /// one update (their covariance intersection, `combined` in the counters); fixes 8 m apart
    /// with 1 % white noise would otherwise contradict each other through the shared bias (the
    /// second gated). Without a correlation they stay separate updates (`combine_scan_fixes`
    /// false by default).
    @Test func oneScansCorrelatedFixesEnterAsOneUpdate() {
        let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
        let correlation = ErrorCorrelation(biasFraction: 0.99, correlationTime: 25)
        func run(carry: Bool) -> FusionStage {
            var s = FusionStage.Settings(kind: .ekf)
            s.layout = .cv; s.adaptiveAccuracy = []
            let stage = FusionStage(settings: s)
            for k in 0..<10 {
                let t = 2.5 * Double(k)
                var a = Fix(time: t, position: SIMD2(Double(k), 0), covariance: Covariance2(sigma: 5), source: .wcl)
                var b = Fix(time: t, position: SIMD2(Double(k) + 8, 0), covariance: Covariance2(sigma: 6), source: .fingerprint)
                if carry { a.errorCorrelation = correlation; b.errorCorrelation = correlation }
                _ = stage.process(TraceEvent(time: t, payload: .wifi(WiFiScan(accessPoints: []))), upstream: [.fix(a), .fix(b)], context: context)
            }
            return stage
        }
        let together = run(carry: true).counters
        #expect((together[.fingerprint]?.combined ?? 0) + (together[.wcl]?.combined ?? 0) == 10, "\(together)")
        #expect(together.values.allSatisfy { $0.gated == 0 }, "\(together)")
        let apart = run(carry: false).counters
        #expect(apart[.fingerprint]?.combined ?? 0 == 0 && apart[.wcl]?.combined ?? 0 == 0)
        #expect((apart[.fingerprint]?.accepted ?? 0) >= 9 && (apart[.wcl]?.accepted ?? 0) >= 9, "\(apart)")
    }
}
