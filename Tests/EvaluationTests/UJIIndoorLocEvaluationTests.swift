import Testing
import Foundation
@testable import Replay
import Positioning
import TestSupport

@Suite struct UJIIndoorLocEvaluationTests {
    typealias Row = UJIIndoorLocReader.Row

    func row(_ x: Double, _ y: Double, b: Int, f: Int, user: Int, phone: Int, t: Int, heard: [(String, Double)]) -> Row {
        var r = Row(position: SIMD2(x, y), floor: f, building: b, heard: heard)
        r.user = user; r.phone = phone; r.timestamp = t
        return r
    }

    /// Users sharing a phone join one group; every device fold keeps the test rows' users and
    /// phones out of the map; day folds keep the day out; random folds are seeded and disjoint.
    @Test func splits() {
        let day = 86_400
        let rows = [row(0, 0, b: 0, f: 0, user: 1, phone: 14, t: 10 * day, heard: [("WAP001", -50)]),
                    row(0, 0, b: 0, f: 0, user: 9, phone: 14, t: 11 * day, heard: [("WAP001", -50)]),
                    row(0, 0, b: 0, f: 0, user: 2, phone: 23, t: 11 * day + 5, heard: [("WAP001", -50)]),
                    row(0, 0, b: 0, f: 0, user: 2, phone: 23, t: 12 * day, heard: [("WAP001", -50)]),
                    row(0, 0, b: 0, f: 0, user: 3, phone: 7, t: 12 * day + 7, heard: [("WAP001", -50)])]
        #expect(UJISplit.deviceGroups(rows) == [0, 0, 1, 1, 2])
        let device = UJISplit.device.folds(rows)
        #expect(device.count == 3)
        for f in device {
            #expect(Set(f.train).union(f.test) == Set(rows.indices) && Set(f.train).isDisjoint(with: f.test))
            let tu = Set(f.test.map { rows[$0].user }), tp = Set(f.test.map { rows[$0].phone })
            #expect(f.train.allSatisfy { !tu.contains(rows[$0].user) && !tp.contains(rows[$0].phone) })
        }
        let days = UJISplit.day.folds(rows)
        #expect(days.map(\.test) == [[0], [1, 2], [3, 4]])
        #expect(days[0].name == "1970-01-11")
        let a = UJISplit.random.folds(rows, trainFraction: 0.5, seed: 3), b = UJISplit.random.folds(rows, trainFraction: 0.5, seed: 3)
        #expect(a.count == 1 && a[0].train == b[0].train && Set(a[0].train).isDisjoint(with: a[0].test))
    }

    /// Test rows become time-ordered scan + checkpoint pairs; rows of one phone with one time
    /// stamp get distinct times.
    @Test func eventsOfRows() {
        let rows = [row(-7500, 4_864_900, b: 1, f: 2, user: 1, phone: 5, t: 100, heard: [("WAP002", -70)]),
                    row(-7510, 4_864_900, b: 1, f: 2, user: 1, phone: 5, t: 100, heard: [("WAP002", -71)]),
                    row(-7520, 4_864_900, b: 1, f: 3, user: 1, phone: 5, t: 50, heard: [])]
        let (ev, truth) = UJIIndoorLocEvaluation.events(rows)
        #expect(zip(ev.map(\.time), [50, 100, 100, 100.0001, 100.0001]).allSatisfy { abs($0 - $1) < 1e-9 })
        #expect(ev.filter { if case .wifi = $0.payload { return true } else { return false } }.count == 2)
        #expect(truth["phone5|\(ev[3].time)"]?.floor == 2 && truth["phone5|\(ev[0].time)"]?.floor == 3)
    }

    /// Through the replayer: a noise-free map (the test rows' own fingerprints surveyed at the
    /// same places) locates every test row exactly, in its building and on its floor.
    @Test func replayExactOnNoiseFreeRows() throws {
        var rows: [Row] = []
        for b in 0..<2 {
            for f in 0..<2 {
                for i in 0..<6 {
                    let x = -7600 + 200 * Double(b) + 8 * Double(i), y = 4_864_850 + 3 * Double(f)
                    let heard = [("WAP\(b)\(f)1", -40 - 2 * Double(i)), ("WAP\(b)\(f)2", -80 + 3 * Double(i)), ("WAP\(b)9", -60 - 10 * Double(f))]
                    rows.append(row(x, y, b: b, f: f, user: 1, phone: 1, t: 1000 + rows.count, heard: heard))
                }
            }
        }
        let frame = UJIIndoorLocEvaluation.frame(rows)
        let map = UJIIndoorLocEvaluation.map(rows, frame: frame)
        let e = KNNFingerprintEstimator(k: 3, classK: 5, representation: .powed, distance: .sorensen, weightExponent: 2)
        let o = try UJIIndoorLocEvaluation.replay(test: rows, map: map, frame: frame, fingerprint: UJIIndoorLocEvaluation.stageOptions(e))
        #expect(o.scans == rows.count && o.located == rows.count && o.errors.count == rows.count)
        #expect(o.errors.allSatisfy { $0 < 1e-6 }, "\(o.errors.max() ?? 0)")
        #expect(o.buildingHits == rows.count && o.floorHits == rows.count)
    }

    /// Real data (skips without the real recordings, docs/data.md): on the phone/user split of the training file
    /// (the first four groups as folds, 80 seeded test rows each, the estimator at its documented
    /// configuration), the kNN fingerprint estimator beats plain kNN (k = 3, Euclidean,
    /// −105 dBm) measured in the same run, on mean error and on building+floor hits.
    @Test(.enabled(if: SharedData.path("ujiindoorloc/trainingData.csv") != nil)) func realDataAgainstPlainKNN() throws {
        let rows = try UJIIndoorLocReader.read(URL(fileURLWithPath: SharedData.path("ujiindoorloc/trainingData.csv")!))
        var folds = Array(UJISplit.device.folds(rows).prefix(4))
        for i in folds.indices {
            folds[i].test = Array(folds[i].test.sorted {
                SplitMix64.finalize(UInt64($0) &* SplitMix64.increment) < SplitMix64.finalize(UInt64($1) &* SplitMix64.increment)
            }.prefix(80))
        }
        let r = try UJIIndoorLocEvaluation.run(rows: rows, folds: folds, split: .device, fixed: KNNFingerprintEstimator())
        let p = try #require(RadioStats.mean(r.posfuse.errors)), k = try #require(RadioStats.mean(r.plain.errors))
        #expect(r.posfuse.errors.count == 320 && r.plain.errors.count == 320)
        #expect(p < 0.95 * k, "fingerprint mean \(p) m vs plain kNN \(k) m")
        #expect(r.posfuse.floorHits >= r.plain.floorHits, "building+floor hits \(r.posfuse.floorHits) vs \(r.plain.floorHits)")
    }
}
