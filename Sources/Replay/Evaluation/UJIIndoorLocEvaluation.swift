import Foundation
import Positioning
import TraceIO
import Scoring
import Interop

/// How UJIIndoorLoc rows are split into training (the map, the fitted hyper-parameters) and test
/// rows (docs/radio.md, "UJIIndoorLoc splits"). The data set's own validation file was recorded
/// months later by other people with other phones, so a split that predicts it keeps a test
/// row's person and phone out of its map.
public enum UJISplit: String, Sendable, CaseIterable {
    /// Leave one phone-and-user group out (the default): USERID and PHONEID linked into
    /// groups (a phone shared by several users joins them), one fold per group; no test row
    /// shares its user or its phone with the map, and most groups were recorded on other days.
    case device
    /// Leave one day (UTC date of TIMESTAMP) out: one fold per day.
    case day
    /// Seeded random rows (`trainFraction` to the map): LEAKY — a test row sits beside rows of the
    /// same person and phone taken minutes apart; kept only as the comparison with the old figure.
    case random

    public var label: String {
        switch self {
        case .device: return "phone/user (leave one USERID-PHONEID group out)"
        case .day: return "day (leave one TIMESTAMP day out)"
        case .random: return "random rows (leaky)"
        }
    }

    public struct Fold: Sendable {
        public var name: String
        public var train: [Int]
        public var test: [Int]
        public init(name: String, train: [Int], test: [Int]) { self.name = name; self.train = train; self.test = test }
    }

    /// The phone-and-user group of every row: connected components of the graph linking each
    /// USERID with each PHONEID it used, numbered by first appearance.
    public static func deviceGroups(_ rows: [UJIIndoorLocReader.Row]) -> [Int] {
        // Union–find over users (2i) and phones (2i+1) as keys.
        var parent: [String: String] = [:]
        func find(_ x: String) -> String {
            var r = x
            while let p = parent[r], p != r { r = p }
            var y = x
            while let p = parent[y], p != r { parent[y] = r; y = p }
            return r
        }
        for r in rows {
            let u = "u\(r.user)", p = "p\(r.phone)"
            if parent[u] == nil { parent[u] = u }
            if parent[p] == nil { parent[p] = p }
            let a = find(u), b = find(p)
            if a != b { parent[b] = a }
        }
        var number: [String: Int] = [:]
        return rows.map { r in
            let root = find("u\(r.user)")
            if let n = number[root] { return n }
            number[root] = number.count
            return number[root]!
        }
    }

    /// The UTC day number of every row.
    public static func days(_ rows: [UJIIndoorLocReader.Row]) -> [Int] {
        rows.map { Int((Double($0.timestamp) / 86_400).rounded(.down)) }
    }

    public func folds(_ rows: [UJIIndoorLocReader.Row], trainFraction: Double = 0.7, seed: UInt64 = 1) -> [Fold] {
        switch self {
        case .device, .day:
            let key = self == .device ? Self.deviceGroups(rows) : Self.days(rows)
            let users = Dictionary(grouping: rows.indices, by: { key[$0] })
            return users.keys.sorted().map { g in
                let test = users[g]!
                let name: String
                if self == .device {
                    let us = Set(test.map { rows[$0].user }).sorted(), ps = Set(test.map { rows[$0].phone }).sorted()
                    name = "users \(us.map(String.init).joined(separator: ",")) phones \(ps.map(String.init).joined(separator: ","))"
                } else {
                    let d = Date(timeIntervalSince1970: Double(g) * 86_400)
                    let f = DateFormatter(); f.dateFormat = "yyyy-MM-dd"; f.timeZone = TimeZone(identifier: "UTC")
                    name = f.string(from: d)
                }
                return Fold(name: name, train: rows.indices.filter { key[$0] != g }, test: test)
            }
        case .random:
            var train: [Int] = [], test: [Int] = []
            for i in rows.indices {
                let z = SplitMix64.finalize(seed &+ UInt64(i) &* SplitMix64.increment)
                if Double(z >> 11) * 0x1p-53 < trainFraction { train.append(i) } else { test.append(i) }
            }
            return [Fold(name: "random \(trainFraction)", train: train, test: test)]
        }
    }
}

/// UJIIndoorLoc through the product's path: the training rows become a fingerprint map
/// (`UJIIndoorLocEvaluation.map`, one point per row, as `radiomap build` writes it), the test rows a
/// trace (a `wifi` scan and a `gt` checkpoint per row, device `phone<PHONEID>`, as
/// `posfuse import --format ujiindoorloc` writes it), replayed through `Replayer` with the
/// `fingerprint` stage and scored by its `Scorer` (ground metres in the local ENU frame; the
/// data set's EPSG:3857 coordinates are ≈ 1.30 × larger). Building and floor hits are counted
/// from the fixes' `building` and `floor`.
public enum UJIIndoorLocEvaluation {
    /// Web-Mercator (EPSG:3857) metres → ENU metres of `frame`.
    public static func enu(_ p: SIMD2<Double>, frame: LocalFrame) -> SIMD2<Double> {
        let g = UJIIndoorLocImporter.geodetic(x: p.x, y: p.y)
        return frame.en(latitude: g.latitude, longitude: g.longitude, height: 0)
    }

    /// The frame every UJIIndoorLoc evaluation uses: origin at the centre of the campus's
    /// bounding box in the data (Web-Mercator), so map and test rows share it.
    public static func frame(_ rows: [UJIIndoorLocReader.Row]) -> LocalFrame {
        let xs = rows.map(\.position.x), ys = rows.map(\.position.y)
        let g = UJIIndoorLocImporter.geodetic(x: ((xs.min() ?? 0) + (xs.max() ?? 0)) / 2, y: ((ys.min() ?? 0) + (ys.max() ?? 0)) / 2)
        return LocalFrame(origin: g)
    }

    /// A fingerprint map with one point per row (building, floor, ENU position, RSS of the heard
    /// WAPs keyed by the lower-cased column name, as the importer names the BSSIDs).
    public static func map(_ rows: [UJIIndoorLocReader.Row], frame: LocalFrame) -> FingerprintMap {
        var weakest = 0.0
        let points = rows.map { r -> FingerprintMap.Point in
            var rss: [String: Double] = [:]
            for (w, v) in r.heard { rss[w.lowercased()] = v; weakest = min(weakest, v) }
            return FingerprintMap.Point(position: enu(r.position, frame: frame), floor: r.floor, rss: rss, scans: 1, building: r.building)
        }
        return FingerprintMap(points: points, threshold: weakest)
    }

    /// The WiFi scan of a row.
    public static func scan(_ r: UJIIndoorLocReader.Row) -> WiFiScan {
        WiFiScan(accessPoints: r.heard.map { WiFiObservation(bssid: $0.0.lowercased(), rss: $0.1) })
    }

    /// Test rows as trace events in time order: per row a `wifi` scan and a `gt` checkpoint at
    /// t = TIMESTAMP + n·10⁻⁴ s (n counts earlier rows of the same phone and time stamp), and
    /// the (building, floor) truth per (device, t).
    public static func events(_ rows: [UJIIndoorLocReader.Row]) -> (events: [TraceEvent], truth: [String: (building: Int, floor: Int)]) {
        var seen: [String: Int] = [:]
        var timed: [(t: Double, order: Int, row: UJIIndoorLocReader.Row, device: String)] = []
        for (i, r) in rows.enumerated() {
            let device = "phone\(r.phone)"
            let key = "\(device)|\(r.timestamp)"
            let n = seen[key, default: 0]
            seen[key] = n + 1
            timed.append((Double(r.timestamp) + Double(n) * 1e-4, i, r, device))
        }
        timed.sort { $0.t != $1.t ? $0.t < $1.t : $0.order < $1.order }
        var out: [TraceEvent] = [], truth: [String: (Int, Int)] = [:]
        out.reserveCapacity(2 * timed.count)
        for e in timed {
            let g = UJIIndoorLocImporter.geodetic(x: e.row.position.x, y: e.row.position.y)
            if !e.row.heard.isEmpty { out.append(TraceEvent(time: e.t, device: e.device, payload: .wifi(scan(e.row)))) }
            out.append(TraceEvent(time: e.t, device: e.device,
                                  payload: .groundTruth(GroundTruth(position: .geodetic(g), floor: e.row.floor, kind: .checkpoint))))
            truth["\(e.device)|\(e.t)"] = (e.row.building, e.row.floor)
        }
        return (out, truth)
    }

    /// The `fingerprint` stage options of an estimator (`method: wknn`).
    public static func stageOptions(_ e: KNNFingerprintEstimator) -> StageOptions { FingerprintStage.options(e) }

    /// One line of a fitted configuration: position match, vote, calibration.
    public static func describe(_ e: KNNFingerprintEstimator) -> String {
        let c = e.classMatcher
        var s = "\(e.representation.rawValue)/\(e.distance.rawValue) k=\(e.k) g=\(e.weightExponent); vote \(c.representation.rawValue)/\(c.distance.rawValue)@\(c.notHeard) dBm class_k=\(e.classK) shared_h=\(e.classSharedExponent) floor=\(e.classFloor.rawValue)"
        if let t = e.calibration {
            s += String(format: "; cov k=%.2f gamma=%.2f a=%.2f m c=%.2f m e=%.2f m d0=%.3g", t.k, t.gamma, t.a, t.c, t.e, e.distanceScale)
        }
        return s
    }

    /// Errors and hits of one estimator, poolable over folds.
    public struct Outcome: Sendable {
        public var errors: [Double] = []
        public var nees: [Double] = []
        public var buildingHits = 0
        public var floorHits = 0
        /// Test rows with a scan, and those the stage located.
        public var scans = 0
        public var located = 0
        public init() {}
        public mutating func merge(_ o: Outcome) {
            errors += o.errors; nees += o.nees; buildingHits += o.buildingHits; floorHits += o.floorHits
            scans += o.scans; located += o.located
        }
        public var buildingHitRate: Double? { errors.isEmpty ? nil : Double(buildingHits) / Double(errors.count) }
        public var buildingFloorHitRate: Double? { errors.isEmpty ? nil : Double(floorHits) / Double(errors.count) }
    }

    /// Replays the test rows through the pipeline (only the `fingerprint` stage enabled, with
    /// `fingerprint` options) against `map` and scores them with the Scorer.
    public static func replay(test rows: [UJIIndoorLocReader.Row], map: FingerprintMap, frame: LocalFrame,
                              fingerprint: StageOptions) throws -> Outcome {
        var stages: [String: StageOptions] = [:]
        for e in StageRegistry.entries where e.name != "fingerprint" {
            stages[e.name] = StageOptions(name: e.name, values: ["enabled": .bool(false)])
        }
        stages["fingerprint"] = fingerprint
        let (events, truth) = events(rows)
        var reference = ReferenceData.empty
        reference.fingerprints = map
        let header = TraceHeader(origin: frame.origin, name: "ujiindoorloc")
        let replayer = Replayer(options: ReplayOptions(stages: stages))
        var out = Outcome()
        out.scans = events.filter { if case .wifi = $0.payload { return true } else { return false } }.count
        replayer.onEstimate = { s in
            guard s.fix.source == .fingerprint, let e = s.error else { return }
            out.errors.append(e)
            if let n = s.nees { out.nees.append(n) }
            if let t = truth["\(s.fix.subject)|\(s.fix.time)"] {
                if s.fix.building == t.building {
                    out.buildingHits += 1
                    if s.fix.floor == t.floor { out.floorHits += 1 }
                }
            }
        }
        let result = try replayer.run(header: header, events: events, reference: reference, name: "ujiindoorloc")
        out.located = result.scores.score(Source.fingerprint.rawValue)?.fixes ?? 0
        return out
    }

    /// Fitting samples from training rows: up to `perGroup` rows of every phone-and-user group
    /// (seeded choice), each matched with its own group's points left out.
    public static func fit(train rows: [UJIIndoorLocReader.Row], map: FingerprintMap, frame: LocalFrame, perGroup: Int = 30,
                           seed: UInt64 = 1, grid: KNNFingerprintFit.Grid = .init()) -> [KNNFingerprintFit.Candidate] {
        let groups = UJISplit.deviceGroups(rows)
        var byGroup: [Int: [Int]] = [:]
        for (i, g) in groups.enumerated() where !rows[i].heard.isEmpty { byGroup[g, default: []].append(i) }
        var samples: [KNNFingerprintFit.Sample] = []
        for g in byGroup.keys.sorted() {
            // Seeded choice: the rows with the smallest hash.
            let pick = byGroup[g]!.sorted {
                SplitMix64.finalize(seed &+ UInt64($0) &* SplitMix64.increment) < SplitMix64.finalize(seed &+ UInt64($1) &* SplitMix64.increment)
            }.prefix(perGroup)
            for i in pick {
                let r = rows[i]
                samples.append(.init(scan: scan(r), truth: enu(r.position, frame: frame), building: r.building, floor: r.floor, group: g))
            }
        }
        return KNNFingerprintFit.score(samples, map: map, pointGroups: groups, grid: grid)
    }

    /// One evaluation: for every fold, the map from its training rows, the estimator fitted on
    /// them (`fit`), the test rows replayed with it and with plain kNN (`KNNFingerprintEstimator.plain`).
    public struct Report: Sendable {
        public var split: UJISplit
        public var folds: [String]
        public var posfuse = Outcome()
        public var plain = Outcome()
        /// The fitted configuration per fold.
        public var fitted: [KNNFingerprintEstimator] = []
    }

    public static func run(rows: [UJIIndoorLocReader.Row], folds: [UJISplit.Fold], split: UJISplit, fixed: KNNFingerprintEstimator? = nil,
                           perGroup: Int = 30, seed: UInt64 = 1, grid: KNNFingerprintFit.Grid = .init(), progress: ((String) -> Void)? = nil) throws -> Report {
        let frame = frame(rows)
        var report = Report(split: split, folds: folds.map(\.name))
        for f in folds {
            let train = f.train.map { rows[$0] }, test = f.test.map { rows[$0] }
            let map = map(train, frame: frame)
            let est = fixed ?? fit(train: train, map: map, frame: frame, perGroup: perGroup, seed: seed, grid: grid).first?.estimator ?? KNNFingerprintEstimator()
            report.fitted.append(est)
            progress?("\(f.name): \(train.count) map rows, \(test.count) test rows, \(describe(est))")
            report.posfuse.merge(try replay(test: test, map: map, frame: frame, fingerprint: stageOptions(est)))
            report.plain.merge(try replay(test: test, map: map, frame: frame, fingerprint: stageOptions(.plain)))
        }
        return report
    }
}
