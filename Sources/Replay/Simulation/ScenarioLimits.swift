import Foundation
import Positioning
import TraceIO

/// Bounds on what a scenario file may ask for (docs/simulator.md, "Limits"). The simulator
/// holds a scenario's kinematic track (100 samples per second per phone) and its events in
/// memory before it writes them in time order, so every size taken from the file is bounded
/// before any allocation: positions share the trace format's domain (`TraceDomain`), rates
/// and intervals are physical, and the simulated phone time and the expected event count
/// have ceilings. A scenario beyond them is a data error naming the key, never a crash or an
/// unbounded allocation.
extension Scenario {
    /// Simulated time summed over phones, s (6 h: 2.2 million kinematic samples).
    public static let maxPhoneSeconds = 6 * 3600.0
    /// Events a scenario may generate (expected value from its rates).
    public static let maxEvents = 10_000_000.0
    /// Highest event rate of any sensor (IMU, GNSS, ground truth), Hz.
    public static let maxRate = 10_000.0
    /// Shortest scan/measurement interval (WiFi, cell, peers) and acoustic period, s.
    public static let minInterval = 1e-3

    /// Throws a `ScenarioError` for the first value outside its bounds. `r` (the parsed file)
    /// adds the line; without it (command-line overrides) the key path names the value.
    func checkDomain(_ r: ScenarioNode? = nil, file: String = "scenario") throws {
        func fail(_ key: String, _ reason: String) -> ScenarioError {
            r?.error(reason, key: key) ?? ScenarioError(file: file, path: key, line: nil, reason: reason)
        }
        func within(_ key: String, _ v: Double, _ range: ClosedRange<Double>, _ unit: String) throws {
            if let m = TraceDomain.violation("", v, range, unit) { throw fail(key, m.trimmingCharacters(in: .whitespaces)) }
        }
        let L = TraceDomain.localMetres
        let T = 0...Self.maxPhoneSeconds
        if let m = TraceDomain.latLonViolation(origin.latitude, origin.longitude) { throw fail("origin", m) }
        try within("origin.h", origin.height, TraceDomain.height, "m")
        if let d = duration { guard d > 0 else { throw fail("duration_s", "must be > 0 s") }; try within("duration_s", d, T, "s") }
        try within("ground_truth_rate_hz", groundTruthRate, 1...Self.maxRate, "Hz")
        try within("declination_deg", declination, TraceDomain.degrees, "deg")
        try within("temperature_c", temperature, TraceDomain.temperature, "°C")
        for (i, h) in floorHeights.enumerated() { try within("floor_heights_m[\(i)]", h, L, "m") }
        var ids = Set<String>()
        for (i, l) in landmarks.enumerated() {
            let k = "landmarks[\(i)]"
            guard ids.insert(l.id).inserted else { throw fail(k, "duplicate landmark id '\(l.id)'") }
            for (n, v) in [("e", l.e), ("n", l.n), ("u", l.u)] { try within("\(k).\(n)", v, L, "m") }
            try within("\(k).height_m", l.height, 0...L.upperBound, "m")
        }
        for (i, p) in phones.enumerated() {
            let k = "phones[\(i)]"
            try within("\(k).height_m", p.height, -1000...1000, "m")
            try within("\(k).speaker_mic_m", p.speakerMic, 0...100, "m")
            let path = p.path
            try within("\(k).path.speed_mps", path.speed, 0...1000, "m/s")
            try within("\(k).path.step_frequency_hz", path.stepFrequency, 0...100, "Hz")
            try within("\(k).path.accel_mps2", path.acceleration, 1e-3...1000, "m/s²")
            try within("\(k).path.lateral_accel_mps2", path.lateralAcceleration, 1e-3...1000, "m/s²")
            try within("\(k).path.start_s", path.start, T, "s")
            for (j, w) in path.waypoints.enumerated() {
                let wk = "\(k).path.waypoints[\(j)]"
                try within("\(wk).e", w.e, L, "m"); try within("\(wk).n", w.n, L, "m")
                try within("\(wk).pause_s", w.pause, T, "s")
                try within("\(wk).advance_m", w.advance, 0...10_000, "m")
            }
        }
        if let g = gnss { try within("gnss.rate_hz", g.rate, 1e-6...Self.maxRate, "Hz") }
        if let w = wifi {
            try within("wifi.scan_interval_s", w.scanInterval, Self.minInterval...T.upperBound, "s")
            try within("wifi.first_scan_s", w.firstScan, T, "s")
            try within("wifi.max_aps_per_scan", Double(w.maxAPs), 0...100_000, "")
            for (i, a) in w.aps.enumerated() {
                for (n, v) in [("e", a.e), ("n", a.n), ("u", a.u)] { try within("wifi.aps[\(i)].\(n)", v, L, "m") }
                try within("wifi.aps[\(i)].freq_mhz", a.frequency, TraceDomain.frequencyMHz, "MHz")
                try within("wifi.aps[\(i)].p0_dbm", a.p0, TraceDomain.power, "dBm")
                try within("wifi.aps[\(i)].exponent", a.exponent, 0...100, "")
            }
            if let v = w.survey {
                for (i, x) in v.area.enumerated() { try within("wifi.survey.area[\(i)]", x, L, "m") }
                try within("wifi.survey.scans_per_point", Double(v.scansPerPoint), 1...10_000, "")
                let pts = ((v.area[2] - v.area[0]) / v.spacing + 1) * ((v.area[3] - v.area[1]) / v.spacing + 1)
                guard pts * Double(v.scansPerPoint) <= Self.maxEvents else {
                    throw fail("wifi.survey", "survey of \(Int(pts)) points × \(v.scansPerPoint) scans exceeds \(Int(Self.maxEvents)) scans")
                }
            }
        }
        if let c = cell {
            try within("cell.interval_s", c.interval, Self.minInterval...T.upperBound, "s")
            try within("cell.max_neighbours", Double(c.neighbours), 0...1000, "")
            var cells = Set<CellID>()
            for (i, x) in c.sites.enumerated() {
                guard cells.insert(x.cell).inserted else { throw fail("cell.sites[\(i)]", "duplicate cell \(x.cell)") }
                for (n, v) in [("e", x.e), ("n", x.n), ("height_m", x.height)] { try within("cell.sites[\(i)].\(n)", v, L, "m") }
                if let rg = x.range { try within("cell.sites[\(i)].range_m", rg, 0...L.upperBound, "m") }
                // Angles as reference.json `cells` carries them (the loader's domains).
                if let a = x.azimuth { try within("cell.sites[\(i)].azimuth_deg", a, TraceDomain.degrees, "deg") }
                if let b = x.beamwidth { try within("cell.sites[\(i)].beamwidth_deg", b, 0...360, "deg") }
                if let w = x.sectorWidth { try within("cell.sites[\(i)].sector_width_deg", w, 0...360, "deg") }
                // Identifiers as the trace format carries them exactly (reference.json `cells`).
                for (n, v) in [("mcc", x.cell.mcc), ("mnc", x.cell.mnc), ("area", x.cell.area), ("cid", x.cell.cid)] {
                    if let m = TraceDomain.violation(n, v, TraceDomain.exactInteger) { throw fail("cell.sites[\(i)].\(n)", m) }
                }
            }
        }
        if let m = imu {
            try within("imu.rate_hz", m.rate, 1e-3...Self.maxRate, "Hz")
            try within("imu.mag_rate_hz", m.magRate, 0...Self.maxRate, "Hz")
        }
        if let a = acoustic {
            try within("acoustic.period_s", a.period, Self.minInterval...T.upperBound, "s")
            try within("acoustic.sample_rate_hz", a.sampleRate, 1...1e7, "Hz")
            var b = Set<String>()
            for (i, x) in a.beacons.enumerated() {
                guard b.insert(x.id).inserted else { throw fail("acoustic.beacons[\(i)]", "duplicate beacon id '\(x.id)'") }
                for (n, v) in [("e", x.e), ("n", x.n), ("u", x.u)] { try within("acoustic.beacons[\(i)].\(n)", v, L, "m") }
            }
        }
        if let p = peers {
            try within("peers.interval_s", p.interval, Self.minInterval...T.upperBound, "s")
            try within("peers.sample_rate_hz", p.sampleRate, 1...1e7, "Hz")
        }
        if let c = camera {
            try within("camera.width_px", Double(c.width), 1...100_000, "px")
            try within("camera.height_px", Double(c.height), 1...100_000, "px")
            try within("camera.focal_px", c.focal, 1e-3...1e7, "px")
        }
        try checkBudget(fail)
    }

    /// Rejects a scenario whose simulated phone time or expected event count exceeds the
    /// limits (`maxPhoneSeconds`, `maxEvents`). Path durations are estimated from the
    /// waypoints (distance / speed, plus time to stop and start, pauses and photo stops).
    func checkBudget(_ fail: (String, String) -> ScenarioError) throws {
        var phoneSeconds = 0.0
        for p in phones {
            phoneSeconds += duration ?? Self.estimatedDuration(p.path)
        }
        guard phoneSeconds <= Self.maxPhoneSeconds else {
            throw fail("phones", "the paths take about \(Int(phoneSeconds.rounded())) s of simulated phone time (limit \(Int(Self.maxPhoneSeconds)) s); shorten duration_s, pauses or paths")
        }
        var perSecond = groundTruthRate
        if let g = gnss { perSecond += g.rate }
        if let w = wifi { perSecond += 1 / w.scanInterval }
        if let c = cell { perSecond += Double(1 + c.neighbours) / c.interval }
        if let m = imu { perSecond += 2 * m.rate + m.magRate + (m.emitSteps ? 5 : 0) }
        if let a = acoustic { perSecond += Double(a.beacons.count) / a.period }
        if let p = peers { perSecond += Double(max(0, phones.count - 1)) / p.interval }
        let expected = perSecond * phoneSeconds
        guard expected <= Self.maxEvents else {
            throw fail("phones", "about \(Int(expected)) events expected (limit \(Int(Self.maxEvents))); lower the rates or the duration")
        }
    }

    /// Time a path takes when it is not looped (`duration_s` absent), s.
    static func estimatedDuration(_ path: PathSpec) -> Double {
        var t = path.start
        let wps = path.waypoints
        for w in wps { t += w.photoOf != nil ? 2 * max(w.pause, 4) + w.advance / path.speed + 2 * path.speed / path.acceleration : w.pause }
        guard path.mode != .static else { return t }
        for k in 1..<max(1, wps.count) {
            let d = ((wps[k].e - wps[k - 1].e) * (wps[k].e - wps[k - 1].e) + (wps[k].n - wps[k - 1].n) * (wps[k].n - wps[k - 1].n)).squareRoot()
            t += d / path.speed + 2 * path.speed / path.acceleration
        }
        return t
    }
}
