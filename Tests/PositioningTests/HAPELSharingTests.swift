import Testing
import Foundation
@testable import Positioning

/// `hapel`'s first epoch is plain WCL: in a pipeline with a `wcl` stage of the same estimator
/// before it, it takes that stage's estimate of the scan (`HAPELStage.link`) instead of
/// computing it again. These check that the results are the same, value for value, as
/// `hapel` computing everything itself, and that the link is only made when the estimators
/// are equal.
@Suite struct HAPELSharingTests {
    /// Every `.fix` and `.failure` of `source`, in order.
    static func results(_ stages: [any PipelineStage], _ events: [TraceEvent], _ ctx: PipelineContext,
                        source: Source) -> [String] {
        let pipe = Pipeline(stages: stages)
        var out: [String] = []
        for e in events {
            for r in pipe.process(e, context: ctx) {
                switch r {
                case .fix(let f) where f.source == source: out.append("fix \(f)")
                case .failure(let s, let t, let d, let reason) where s == source: out.append("failure \(t) \(d) \(reason)")
                default: break
                }
            }
        }
        return out
    }

    /// Seeded one-scan reports (what every geolocate request is): random maps and scans,
    /// some with unknown, stale or no known APs (failures), several devices.
    @Test func oneScanReportsGiveTheSameFixes() throws {
        var rng = TestRNG(seed: 23)
        var compared = 0, failures = 0
        for report in 0..<200 {
            var aps: [String: AccessPoint] = [:]
            for k in 0..<Int(rng.uniform() * 12) {
                let mac = String(format: "00:1b:cc:%02x:00:%02x", report % 256, k)
                aps[mac] = AccessPoint(bssid: mac, position: SIMD3(200 * rng.uniform(), 200 * rng.uniform(), 0),
                                       floor: rng.uniform() < 0.3 ? Int(rng.uniform() * 3) : nil,
                                       p0: rng.uniform() < 0.5 ? -35 - 10 * rng.uniform() : nil,
                                       radio: rng.uniform() < 0.2 ? "r\(k % 3)" : nil)
            }
            var obs: [WiFiObservation] = []
            for k in 0..<Int(rng.uniform() * 14) {
                let mac = String(format: "00:1b:cc:%02x:00:%02x", report % 256, k)
                obs.append(WiFiObservation(bssid: rng.uniform() < 0.2 ? mac.uppercased() : mac, rss: (-95 + 60 * rng.uniform()).rounded(),
                                           lastSeen: rng.uniform() < 0.1 ? -100 : nil))
            }
            let device = report % 3 == 0 ? Fix.defaultSubject : "dev\(report % 3)"
            let events = [TraceEvent(time: Double(report), device: device,
                                     payload: .wifi(WiFiScan(start: rng.uniform() < 0.1 ? -1 : nil, accessPoints: obs)))]
            let ctx = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 47, longitude: 8)),
                                      reference: ReferenceData(accessPoints: aps))
            let hapel = HAPELStage()
            let linked = Self.results([WCLStage(), hapel], events, ctx, source: .hapel)
            #expect(hapel.wcl != nil)
            let alone = Self.results([HAPELStage()], events, ctx, source: .hapel)
            #expect(linked == alone)
            #expect(linked.count == 1)
            compared += 1
            if linked.first?.hasPrefix("failure") == true { failures += 1 }
        }
        #expect(compared == 200)
        #expect(failures > 0 && failures < 100)     // both branches are exercised
    }

    /// A whole walk (PDR between scans, hidden APs after the first epoch): `hapel`'s fixes do
    /// not change when a `wcl` stage runs before it.
    @Test func walkGivesTheSameFixes() throws {
        let c = SparseCorridor(seed: 7, laps: 1)
        let header = TraceHeader(origin: Geodetic(latitude: 0, longitude: 0), rssThreshold: c.threshold)
        let ctx = PipelineContext(header: header, reference: ReferenceData(accessPoints: c.aps))
        let linked = Self.results([WCLStage(), HAPELStage()], c.events, ctx, source: .hapel)
        let alone = Self.results([HAPELStage()], c.events, ctx, source: .hapel)
        #expect(linked.count > 20)
        #expect(linked == alone)
    }

    /// Different WCL options (here K) give different first-epoch fixes: no link then, and
    /// `hapel` computes its own.
    @Test func linkOnlyWithTheSameEstimator() throws {
        var other = WCLEstimator()
        other.maxAnchors = 2
        let hapel = HAPELStage(estimator: HAPELEstimator(wcl: other))
        _ = Pipeline(stages: [WCLStage(), hapel])
        #expect(hapel.wcl == nil)
        let after = HAPELStage()
        _ = Pipeline(stages: [after, WCLStage()])        // a wcl stage after hapel is not used
        #expect(after.wcl == nil)
        let same = HAPELStage()
        let p = Pipeline(stages: [WCLStage(), same])
        #expect(same.wcl === p.stages[0] as? WCLStage)
        p.reset()
        #expect(same.wcl != nil)                          // reset keeps the pipeline's structure
        #expect((same.fresh() as? HAPELStage)?.wcl == nil) // a fresh stage is linked by its own pipeline

        // Unlinked with K = 2, the fix differs from the default wcl's for a 6-AP scan.
        var aps: [String: AccessPoint] = [:], obs: [WiFiObservation] = []
        for k in 0..<6 {
            let mac = String(format: "00:1b:cc:00:00:%02x", k)
            aps[mac] = AccessPoint(bssid: mac, position: SIMD3(Double(10 * k), Double(k * k), 0))
            obs.append(WiFiObservation(bssid: mac, rss: Double(-50 - 3 * k)))
        }
        let events = [TraceEvent(time: 0, payload: .wifi(WiFiScan(accessPoints: obs)))]
        let ctx = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 47, longitude: 8)), reference: ReferenceData(accessPoints: aps))
        let k2 = Self.results([WCLStage(), HAPELStage(estimator: HAPELEstimator(wcl: other))], events, ctx, source: .hapel)
        let k2alone = Self.results([HAPELStage(estimator: HAPELEstimator(wcl: other))], events, ctx, source: .hapel)
        let k8 = Self.results([WCLStage(), HAPELStage()], events, ctx, source: .hapel)
        #expect(k2 == k2alone)
        #expect(k2 != k8)
    }
}
