import Foundation
import Positioning
@testable import PosfuseServer
import Replay
import Testing

/// geolocate's answer is written straight into bytes (`GeoAPI.Answer.jsonBytes`); it must be the
/// bytes JSONSerialization wrote from the answer's dictionary before (`Answer.json`, sorted keys).
@Suite struct AnswerWriterTests {
    static func foundation(_ a: GeoAPI.Answer) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: a.json, options: [.sortedKeys]))
    }

    @Test func bytesEqualJSONSerialization() throws {
        let notes = ["cell: contained in the cell-ta/wcl fix of the same evidence (not fused twice)",
                     "rss: not fused (not an ekf input)", "wcl: 2 fix(es) rejected by the χ² gate", #"quote " back \ slash"#,
                     "control \u{1} \u{1f} tab\t nl\n cr\r bs\u{8} ff\u{c}", "", "emoji 📍 ü"]
        let covariances = [Covariance2(ee: 152.96176750292938, en: 0.11470328981895433, nn: 136.31341812137754),
                           Covariance2(ee: 2500, en: 0, nn: 2500), Covariance2(ee: 1e-7, en: -3.5e-9, nn: 2.25e20),
                           Covariance2(ee: 400, en: -120, nn: 90)]
        var answers: [GeoAPI.Answer] = []
        for (i, c) in covariances.enumerated() {
            answers.append(GeoAPI.Answer(latitude: [47.37007457337863, -33.5, 0, 89.999999999][i], longitude: [8.54045671579727, -70, 180, -0.000001][i],
                                         accuracy: c.circularRadius(probability: 0.95), covariance: c, fallback: i == 1 ? "lacf" : nil,
                                         sourcesUsed: [["cell-ta", "wcl", "hapel"], [], ["wcl"], ["magnetometer-heading", "gnss"]][i],
                                         notes: i == 0 ? notes : Array(notes.prefix(i)), knownAPs: [8, 0, 12345, 2][i], knownCells: [1, 0, 3, 40][i]))
        }
        answers.append(GeoAPI.Answer(latitude: 1, longitude: 2, accuracy: 50, covariance: Covariance2(ee: 100, en: 0, nn: 100), fallback: nil,
                                     sourcesUsed: ["cell"], notes: [], knownAPs: 0, knownCells: 1))
        for a in answers {
            let got = a.jsonBytes, want = try Self.foundation(a)
            #expect(got == want, "\(String(decoding: got, as: UTF8.self))\n\(String(decoding: want, as: UTF8.self))")
        }
    }
}

/// `GeoAPI.mac`'s ASCII path (on bytes) answers exactly as the general path (Unicode
/// lowercasing, Character walk) on seeded random ASCII spellings, valid and invalid.
@Suite struct MACSpellingTests {
    @Test func asciiPathEqualsGeneralPath() {
        var rng = Xoshiro256(seed: 23)
        let alphabet = Array("0123456789abcdefABCDEF:-. gGzZ_\t0f".utf8)
        var cases = ["00:1B:cc:00:00:07", "001bcc000007", "00-1b-cc-00-00-07", "0000.0000.0000", "ff:ff:ff:ff:ff:ff", "FF:FF:FF:FF:FF:FF",
                     "", ":", "00:1b:cc:00:00:0", "00:1b:cc:00:00:077", "00:1b:cc:00:00:0g", "a.b.c.d.e.f.0.1.2.3.4.5"]
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 20)
            let bytes = (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            cases.append(String(decoding: bytes, as: UTF8.self))
            // Mostly-valid spellings: 12 hex digits with random separators.
            var v: [UInt8] = []
            for i in 0..<12 {
                v.append(alphabet[Int(rng.next() % 22)])
                if i % 2 == 1 && rng.next() % 2 == 0 { v.append(alphabet[22 + Int(rng.next() % 3)]) }
            }
            cases.append(String(decoding: v, as: UTF8.self))
        }
        for s in cases { #expect(GeoAPI.mac(s) == GeoAPI.unicodeMAC(s), "\(s)") }
        #expect(GeoAPI.mac("00:1B:CC:00:00:07") == "00:1b:cc:00:00:07")
        #expect(GeoAPI.mac("００:1b:cc:00:00:07") == GeoAPI.unicodeMAC("００:1b:cc:00:00:07"))      // fullwidth: the general path
    }
}

/// geolocate's pipeline (`GeoAPI.prototype`) leaves out the stages the ekf does not take (`rss`
/// with the defaults): on seeded requests against a learned store, every answer's position,
/// covariance, accuracy, sources and counts are bit-identical to refine's full pipeline; the
/// notes differ only by the left-out stages' "not fused" lines. The server's pipeline kept and
/// reset between requests (`PipelinePool`) gives every answer of a fresh pipeline, bit for bit.
@Suite struct GeolocatePipelineTests {
    @Test func prunedPipelineGivesTheSameAnswers() async throws {
        let pruned = try GeoAPI.prototype(stages: [:])
        let full = try StageRegistry.prototype(options: ReportRefiner.reportOptions([:]))
        #expect(full.sources.contains(.rss) && !pruned.sources.contains(.rss))
        #expect(pruned.sources.contains(.wcl) && pruned.sources.contains(.hapel) && pruned.sources.contains(.ekf))
        #expect(full.sources.contains(.peer) && !pruned.sources.contains(.peer) && !pruned.sources.contains(.tdoa))
        // Configured explicitly, a stage stays.
        #expect(try GeoAPI.prototype(stages: ["rss": StageOptions(name: "rss", values: ["enabled": .bool(true)])]).sources.contains(.rss))

        let path = Fixture.temporarySQLite()
        defer { Fixture.remove(path) }
        let store = try SQLiteStore(path: path)
        try await Fixture.learnedGrid(store)
        let aps = Fixture.gridAPs
        var rng = Xoshiro256(seed: 2323)
        var located = 0
        // The server's way: one pipeline kept and reset between requests (`PipelinePool`).
        let pool = PipelinePool(pruned, keep: 1)
        for r in 0..<40 {
            let m = 1 + Int(rng.next() % 10)
            let chosen = aps.shuffled(using: &rng).prefix(m)
            var q: [String: Any] = ["wifiAccessPoints": chosen.map { ["macAddress": $0, "signalStrength": -45 - Double(rng.next() % 40)] }]
            if r % 3 != 0 {
                q["cellTowers"] = [["radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1, "locationAreaCode": 1000,
                                    "cellId": 7000 + r % 2, "timingAdvance": Int(rng.next() % 4)]]
            }
            let query = try GeoAPI.query(Array(try JSONSerialization.data(withJSONObject: q)))
            let a = try await GeoAPI.locate(query, store: store, pipeline: pruned)
            let b = try await GeoAPI.locate(query, store: store, pipeline: full)
            let c = try await GeoAPI.locate(query, store: store, pipelines: pool)
            #expect((a == nil) == (b == nil) && (a == nil) == (c == nil))
            if let a, let c {
                #expect(a.latitude.bitPattern == c.latitude.bitPattern && a.longitude.bitPattern == c.longitude.bitPattern)
                #expect(a.accuracy.bitPattern == c.accuracy.bitPattern && a.covariance == c.covariance)
                #expect(a.sourcesUsed == c.sourcesUsed && a.notes == c.notes && a.knownAPs == c.knownAPs && a.knownCells == c.knownCells)
                #expect(pool.waiting == 1)
            }
            guard let a, let b else { continue }
            located += 1
            #expect(a.latitude.bitPattern == b.latitude.bitPattern && a.longitude.bitPattern == b.longitude.bitPattern)
            #expect(a.accuracy.bitPattern == b.accuracy.bitPattern && a.covariance == b.covariance)
            #expect(a.sourcesUsed == b.sourcesUsed && a.knownAPs == b.knownAPs && a.knownCells == b.knownCells && a.fallback == b.fallback)
            #expect(a.notes == b.notes.filter { !$0.hasPrefix("rss:") }, "\(a.notes) vs \(b.notes)")
        }
        #expect(located >= 30)
        try await store.close()
    }
}
