import Foundation
import Positioning
import TraceIO

/// Overrides applied on top of a scenario file (command-line options).
public struct SimulationOptions: Sendable {
    public var seed: UInt64?
    public var duration: Double?
    public var imuRate: Double?
    public init(seed: UInt64? = nil, duration: Double? = nil, imuRate: Double? = nil) {
        self.seed = seed; self.duration = duration; self.imuRate = imuRate
    }
}

/// What a simulation wrote.
public struct SimulationSummary: Sendable {
    public var events: Int
    public var byType: [String: Int]
    public var duration: Double
    public var seed: UInt64
}

/// Runs a scenario: integrates each phone's path, runs every configured sensor model with its
/// own seeded random stream (`SimRNG`), merges the events in time order and writes trace v1
/// (`TraceWriter`) plus the reference side file. Same scenario + seed ⇒ identical bytes.
///
/// Event order: by time; at equal times ground truth first, then GNSS, WiFi, cell, acoustic,
/// peer, photo, step and finally IMU (acc, gyro, mag), each phone in scenario order.
public enum Simulator {
    public static func run(scenario input: Scenario, options: SimulationOptions = .init(), trace: URL,
                           reference: URL? = nil) throws -> SimulationSummary {
        var sc = input
        if let s = options.seed { sc.seed = s }
        if let d = options.duration { sc.duration = d }
        if let r = options.imuRate, sc.imu != nil { sc.imu!.rate = r; sc.imu!.magRate = r }
        if options.duration != nil || options.imuRate != nil { try sc.checkDomain(file: "simulate options") }
        let seed = sc.seed
        let frame = LocalFrame(origin: sc.origin)
        let lms = Dictionary(uniqueKeysWithValues: sc.landmarks.map { ($0.id, (e: $0.e, n: $0.n)) })
        var pairBase = 0
        var trajectories: [Trajectory] = []
        for p in sc.phones {
            // A path is integrated at most to twice its estimated duration (+10 min) and never
            // beyond the scenario limit: a path that cannot reach its waypoints is an error.
            let cap = sc.duration ?? min(Scenario.maxPhoneSeconds, 2 * Scenario.estimatedDuration(p.path) + 600)
            let t = Trajectory(path: p.path, floorHeights: sc.floorHeights, phoneHeight: p.height, duration: sc.duration,
                               landmarks: lms, pairBase: pairBase, maxDuration: cap)
            if t.truncated {
                throw ScenarioError(file: "scenario", path: "phones", line: nil,
                                    reason: "the path of phone '\(p.id)' did not reach its last waypoint within \(Int(cap)) s (turn rate or acceleration too low?)")
            }
            pairBase += p.path.waypoints.filter { $0.photoOf != nil }.count
            trajectories.append(t)
        }
        let end = sc.duration ?? (trajectories.map(\.endTime).max() ?? 0)
        let magnetic = MagneticEnvironment(spec: sc.magnetic, declination: sc.declination, seed: seed)

        // (time, rank, event) of every non-IMU event; IMU records separately (they are many).
        var events: [(t: Double, rank: Int, e: TraceEvent)] = []
        var imuStreams: [[IMURecord]] = []
        func add(_ list: [TraceEvent], _ rank: Int) { for e in list { events.append((e.time, rank, e)) } }
        let wifi = sc.wifi.map { WiFiSimulator(spec: $0, seed: seed) }
        let cell = sc.cell.map { CellSimulator(spec: $0, seed: seed) }
        for (i, p) in sc.phones.enumerated() {
            let tr = trajectories[i]
            let pe = min(end, tr.duration)
            let rk = i * 100
            // Continuous ground truth at ≥ 1 Hz.
            var gt: [TraceEvent] = []
            let dtg = 1 / sc.groundTruthRate
            var k = 0
            while Double(k) * dtg <= pe + 1e-9 {
                let t = quantise(Double(k) * dtg, 1e-3)
                let s = tr.state(at: t)
                gt.append(TraceEvent(time: t, device: p.id, payload: .groundTruth(GroundTruth(
                    position: .local(SIMD3(quantise(s.e, 1e-3), quantise(s.n, 1e-3), quantise(s.u, 1e-3))),
                    floor: sc.floorHeights.count > 1 ? s.floor : nil, kind: .continuous))))
                k += 1
            }
            add(gt, rk)
            if let g = sc.gnss { add(GNSSSimulator(spec: g).events(trajectory: tr, device: p.id, frame: frame, seed: seed, until: pe), rk + 1) }
            if let w = wifi { add(w.events(trajectory: tr, device: p.id, seed: seed, until: pe), rk + 2) }
            if let c = cell { add(c.events(trajectory: tr, device: p.id, seed: seed, until: pe), rk + 3) }
            if let a = sc.acoustic, !a.beacons.isEmpty {
                add(AcousticSimulator(spec: a, temperature: sc.temperature).events(trajectory: tr, device: p.id, seed: seed, until: pe), rk + 4)
            }
            if let c = sc.camera, !tr.photos.isEmpty {
                add(PhotoSimulator(camera: c, landmarks: sc.landmarks, declination: sc.declination)
                    .events(trajectory: tr, device: p.id, magnetic: magnetic, seed: seed, until: pe), rk + 6)
            }
            if let m = sc.imu {
                let r = IMUSimulator(spec: m).records(trajectory: tr, path: p.path, device: p.id, magnetic: magnetic, seed: seed, until: pe)
                add(r.steps, rk + 7)
                imuStreams.append(r.imu)
            } else { imuStreams.append([]) }
        }
        if let pr = sc.peers, sc.phones.count > 1 {
            add(PeerSimulator(spec: pr, temperature: sc.temperature).events(phones: sc.phones, trajectories: trajectories, seed: seed, until: end), 5)
        }
        // Stable order: time, then rank, then generation order.
        let order = events.indices.sorted { a, b in
            let x = events[a], y = events[b]
            if x.t != y.t { return x.t < y.t }
            if x.rank != y.rank { return x.rank < y.rank }
            return a < b
        }

        let header = TraceHeader(origin: sc.origin, device: sc.device, declination: sc.declination,
                                 temperature: sc.temperatureReported, floorHeights: sc.floorHeights, name: sc.name,
                                 rssThreshold: sc.wifi?.threshold, phoneHeight: sc.phones.first?.height)
        let writer = try TraceWriter(url: trace, header: header)
        var byType: [String: Int] = [:]
        var count = 0
        // k-way merge: the sorted non-IMU list and one IMU stream per phone.
        var cursors = [Int](repeating: 0, count: imuStreams.count)
        var oi = 0
        let encoder = TraceLineEncoder()
        while true {
            var bestPhone = -1
            var bestT = Double.infinity
            for (p, c) in cursors.enumerated() where c < imuStreams[p].count {
                let t = imuStreams[p][c].t
                if t < bestT { bestT = t; bestPhone = p }
            }
            if oi < order.count, events[order[oi]].t <= bestT {
                let e = events[order[oi]].e
                writer.write(line: encoder.encode(e)); byType[e.typeName, default: 0] += 1; count += 1
                oi += 1
                continue
            }
            guard bestPhone >= 0 else { break }
            let r = imuStreams[bestPhone][cursors[bestPhone]]
            cursors[bestPhone] += 1
            let e = TraceEvent(time: r.t, device: sc.phones[bestPhone].id, payload: .imu(IMUSample(kind: r.kind, x: r.x, y: r.y, z: r.z)))
            writer.write(line: encoder.encode(e)); byType[r.kind.rawValue, default: 0] += 1; count += 1
        }
        try writer.close()
        if let ref = reference { try ReferenceWriter.write(scenario: sc, to: ref) }
        return SimulationSummary(events: count, byType: byType, duration: end, seed: seed)
    }
}

/// Writes `reference.json` (docs/trace-format.md): the AP map, cell database, beacons,
/// landmarks and WiFi fingerprint survey of a scenario, positions in the trace's ENU frame, keys in a fixed order.
public enum ReferenceWriter {
    public static func json(scenario sc: Scenario) -> String {
        var sections: [String] = []
        func arr(_ key: String, _ items: [String]) {
            sections.append("  \"\(key)\": [\n" + items.map { "    " + $0 }.joined(separator: ",\n") + "\n  ]")
        }
        if let w = sc.wifi {
            arr("aps", w.aps.map { a in
                var o = JSONLine()
                o.string("bssid", a.bssid); o.string("ssid", a.ssid); o.number("e", a.e); o.number("n", a.n); o.number("u", a.u)
                o.int("floor", a.floor); o.number("p0", a.p0); o.number("n_exp", a.exponent); o.number("freq", a.frequency)
                return o.finish()
            })
        }
        if let c = sc.cell {
            arr("cells", c.sites.map { s in
                var o = JSONLine()
                o.string("rat", s.cell.rat.rawValue); o.int("mcc", s.cell.mcc); o.int("mnc", s.cell.mnc)
                o.int("area", s.cell.area); o.int("cid", s.cell.cid); o.int("pci", s.pci ?? s.cell.cid % 504)
                o.number("e", s.e); o.number("n", s.n); o.number("u", s.height)
                if let a = s.azimuth { o.number("azimuth", a) }
                if let w = s.sectorWidth { o.number("beamwidth", w) }
                if let r = s.range { o.number("range", r) }
                o.string("provenance", "antenna")
                return o.finish()
            })
        }
        if let a = sc.acoustic {
            arr("beacons", a.beacons.map { b in
                var o = JSONLine()
                o.string("id", b.id); o.number("e", b.e); o.number("n", b.n); o.number("u", b.u)
                o.number("offset", b.offset); o.number("period", a.period)
                return o.finish()
            })
        }
        if !sc.landmarks.isEmpty {
            arr("landmarks", sc.landmarks.map { l in
                var o = JSONLine()
                o.string("id", l.id); o.number("e", l.e); o.number("n", l.n); o.number("u", l.u); o.number("height", l.height)
                return o.finish()
            })
        }
        if let w = sc.wifi, let sv = w.survey {
            // One line per reference point; keys of `rss` in scenario AP order.
            let points = WiFiSimulator(spec: w, seed: sc.seed).survey(seed: sc.seed, floorHeights: sc.floorHeights).map { p in
                var o = JSONLine()
                o.number("e", p.position.x); o.number("n", p.position.y); o.int("floor", p.floor ?? 0); o.int("scans", p.scans)
                var r = JSONLine()
                for a in w.aps { if let v = p.rss[a.bssid] { r.number(a.bssid, v) } }
                o.raw("rss", r.finish())
                return "      " + o.finish()
            }
            var head = JSONLine()
            head.number("threshold_dbm", w.threshold); head.number("spacing_m", sv.spacing)
            let h = head.finish()
            sections.append("  \"fingerprints\": " + h.dropLast() + ", \"points\": [\n" + points.joined(separator: ",\n") + "\n  ]}")
        }
        return sections.isEmpty ? "{}\n" : "{\n" + sections.joined(separator: ",\n") + "\n}\n"
    }

    public static func write(scenario: Scenario, to url: URL) throws {
        try OutputFile.write(Data(json(scenario: scenario).utf8), to: url)
    }
}
