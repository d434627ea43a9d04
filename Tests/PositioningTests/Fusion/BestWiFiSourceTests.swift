import Foundation
import Testing
@testable import Positioning

/// Of one scan's radio-map WiFi fixes the fusion stages fuse only the sources with the smallest
/// held-out error stored in the map (`FusionStage.Settings.bestWiFiSource`,
/// `RadioUncertaintyModel.Term.heldOutMeanError`).
@Suite struct BestWiFiSourceTests {
    let context0 = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
    let correlation = ErrorCorrelation(biasFraction: 0.99, correlationTime: 25)

    func model(_ errors: [Source: Double?]) -> RadioUncertaintyModel {
        var terms: [String: RadioUncertaintyModel.Term] = [:]
        for (s, e) in errors { terms[s.rawValue] = RadioUncertaintyModel.Term(samples: 50, correlation: correlation, heldOutMeanError: e) }
        return RadioUncertaintyModel(terms: terms)
    }

    func fix(_ s: Source, _ x: Double, correlated: Bool = true) -> Fix {
        var f = Fix(time: 0, position: SIMD2(x, 0), covariance: Covariance2(sigma: 5), source: s)
        if correlated { f.errorCorrelation = correlation }
        return f
    }

    @Test func keepsTheSourcesWithTheSmallestHeldOutError() {
        let scan = [fix(.wcl, 0), fix(.hapel, 1), fix(.fingerprint, 8)]
        let m = model([.wcl: 10, .hapel: 10.0005, .fingerprint: 20])
        #expect(FusionStage.bestHeldOut(scan, model: m).map(\.source) == [.wcl, .hapel])     // tie within 1 mm
        #expect(FusionStage.bestHeldOut(scan, model: model([.wcl: 12, .hapel: 12, .fingerprint: 7])).map(\.source) == [.fingerprint])
        // Whole group: no model; a source without a held-out error (an older map); a member
        // without the map's correlation (not a radio-map fix).
        #expect(FusionStage.bestHeldOut(scan, model: nil).count == 3)
        #expect(FusionStage.bestHeldOut(scan, model: model([.wcl: 10, .hapel: 10, .fingerprint: nil])).count == 3)
        #expect(FusionStage.bestHeldOut([fix(.wcl, 0), fix(.fingerprint, 8, correlated: false)], model: m).count == 2)
    }

    /// In the filter: ten scans of wcl and fingerprint fixes 8 m apart give exactly the track of
    /// the held-out best source's fixes alone; the other source counts as `combined`. With
    /// `best_wifi_source: false` the track is the intersection's, between the two.
    @Test func theFilterFollowsTheHeldOutBestSource() throws {
        func run(_ m: RadioUncertaintyModel, best: Bool = true, only: Source? = nil) throws -> (Fix, [Source: SourceCounters]) {
            var s = FusionStage.Settings(kind: .ekf)
            s.layout = .cv; s.adaptiveAccuracy = []; s.bestWiFiSource = best
            let stage = FusionStage(settings: s)
            var reference = ReferenceData(); reference.radioUncertainty = m
            let context = PipelineContext(header: context0.header, reference: reference)
            var last: Fix?
            for k in 0..<10 {
                let t = 2.5 * Double(k)
                var a = fix(.wcl, Double(k)), b = fix(.fingerprint, Double(k) + 8)
                a.time = t; b.time = t
                let upstream: [StageResult] = [a, b].filter { only == nil || $0.source == only }.map { .fix($0) }
                for r in stage.process(TraceEvent(time: t, payload: .wifi(WiFiScan(accessPoints: []))), upstream: upstream, context: context) {
                    if case .fix(let y) = r { last = y }
                }
            }
            return (try #require(last), stage.counters)
        }
        let wclBest = model([.wcl: 9, .fingerprint: 21])
        let (a, ca) = try run(wclBest)
        let (b, _) = try run(wclBest, only: .wcl)
        #expect(a.position == b.position && a.covariance == b.covariance)
        #expect(ca[.fingerprint]?.combined == 10 && (ca[.fingerprint]?.accepted ?? 0) == 0, "\(ca)")
        let (c, _) = try run(model([.wcl: 21, .fingerprint: 9]))
        let (d, _) = try run(wclBest, only: .fingerprint)
        #expect(c.position == d.position)
        let (e, _) = try run(wclBest, best: false)
        #expect(e.position.x > a.position.x + 1 && e.position.x < d.position.x - 1, "\(a.position) \(e.position) \(d.position)")
    }

    /// The fit stores the mean |r| of the residuals it was fitted on; a map written before the
    /// field existed reads back nil (whole-group intersection).
    @Test func fitStoresTheMeanResidualAndOldMapsReadNil() throws {
        var samples: [RadioUncertaintyModel.Sample] = []
        var rng = SplitMix64(seed: 7)
        var sum = 0.0
        for i in 0..<200 {
            let u = rng.uniform(), v = rng.uniform()
            let r = SIMD2(12 * (u - 0.5), 9 * (v - 0.5))
            sum += (r.x * r.x + r.y * r.y).squareRoot()
            samples.append(.init(residual: r, covariance: Covariance2(sigma: 3),
                                 features: .init(surveyDistance: 0, knownShare: 1, signalDistance: 0), group: i % 4))
        }
        let t = try #require(RadioUncertaintyModel.fit(samples))
        #expect(abs(try #require(t.heldOutMeanError) - sum / 200) < 1e-9)
        let json = try JSONEncoder().encode(RadioUncertaintyModel(terms: ["wcl": t]))
        #expect(try JSONDecoder().decode(RadioUncertaintyModel.self, from: json) == RadioUncertaintyModel(terms: ["wcl": t]))
        let old = #"{"terms":{"wcl":{"a":1,"b":0,"c":0,"e":0,"gamma":1,"k":1,"samples":30}}}"#
        #expect(try JSONDecoder().decode(RadioUncertaintyModel.self, from: Data(old.utf8)).terms["wcl"]?.heldOutMeanError == nil)
    }
}
