import ArgumentParser
import Foundation
import Positioning

/// `posfuse-bench fingerprint`: time per scan of `FingerprintEstimator` (likelihood over every
/// reference point + posterior moments) on two maps, side by side in the same run with a
/// vectorised numpy implementation of the same model (`scripts/bench/fingerprint_numpy.py`),
/// which also reports the largest difference between its fixes and ours (an independent check
/// of the arithmetic).
///
/// Maps (seeded, synthetic): "atrium" — 651 points on a 2 m grid, 12 APs (the crowd-peers
/// survey's size); "campus" — 1,035 points on a 9 m grid over 396 m × 198 m, 520 APs, n = 3.5,
/// every point keeping the APs above −90 dBm, ≈ 15 per scan (UJIIndoorLoc's width and density). 200 scans each, taken at
/// random places with 2 dB fading. Median µs per scan over `--repeats` timed passes, one thread.
struct FingerprintBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "fingerprint",
        abstract: "Fingerprint matching µs/scan (651 × 12 and 1,000 × 520 maps) vs a numpy reference.")

    @Option(help: "Timed passes over the scans (median over these).") var repeats = 9
    @Option(help: "Python interpreter with numpy for the reference ('' to skip).") var python = "python3"
    @Option(help: "Path of fingerprint_numpy.py.") var script = "scripts/bench/fingerprint_numpy.py"

    struct Case { var name: String; var map: FingerprintMap; var scans: [WiFiScan] }

    static func synthetic(name: String, width: Double, height: Double, spacing: Double, aps: Int, exponent: Double, seed: UInt64) -> Case {
        var rng = SplitMix64(seed: seed)
        let sites = (0..<aps).map { _ in SIMD2(width * rng.uniform(), height * rng.uniform()) }
        let names = (0..<aps).map { String(format: "02:00:00:00:%02x:%02x", $0 >> 8, $0 & 0xff) }
        func rss(_ p: SIMD2<Double>, _ i: Int, noise: Double) -> Double {
            let d = max(1, ((p - sites[i]) * (p - sites[i])).sum().squareRoot())
            return (-40 - 10 * exponent * log10(d) + noise * rng.gaussian()).rounded()
        }
        var points: [FingerprintMap.Point] = []
        var y = 0.0
        while y <= height + 1e-9 {
            var x = 0.0
            while x <= width + 1e-9 {
                let p = SIMD2(x, y)
                var r: [String: Double] = [:]
                for i in 0..<aps { let v = rss(p, i, noise: 3); if v >= -90 { r[names[i]] = v } }
                points.append(.init(position: p, rss: r, scans: 1))
                x += spacing
            }
            y += spacing
        }
        let scans = (0..<200).map { _ -> WiFiScan in
            let p = SIMD2(width * rng.uniform(), height * rng.uniform())
            let obs = (0..<aps).compactMap { i -> WiFiObservation? in
                let v = rss(p, i, noise: 3.6)
                return v >= -90 ? WiFiObservation(bssid: names[i], rss: v) : nil
            }
            return WiFiScan(accessPoints: obs)
        }
        return Case(name: name, map: FingerprintMap(points: points, threshold: -90, spacing: spacing), scans: scans)
    }

    /// The map, the scans and our fixes as JSON for the numpy reference.
    static func json(_ c: Case, fixes: [SIMD2<Double>?], sigma: Double) -> String {
        let m = c.map
        let pts = m.points.map { "[\($0.position.x),\($0.position.y)]" }.joined(separator: ",")
        let rows = m.points.map { p in "[" + m.bssids.map { b in p.rss[b].map { String($0) } ?? "null" }.joined(separator: ",") + "]" }
        let scans = c.scans.map { s in "{" + s.accessPoints.map { "\"\($0.bssid)\":\($0.rss)" }.joined(separator: ",") + "}" }
        let fx = fixes.map { f in f.map { "[\($0.x),\($0.y)]" } ?? "null" }
        return """
        {"sigma":\(sigma),"threshold":\(m.threshold),"spacing":\(m.spacing ?? 0),"bssids":[\(m.bssids.map { "\"\($0)\"" }.joined(separator: ","))],
        "points":[\(pts)],"rss":[\(rows.joined(separator: ","))],"scans":[\(scans.joined(separator: ","))],"fixes":[\(fx.joined(separator: ","))]}
        """
    }

    func run() throws {
        let cases = [Self.synthetic(name: "atrium", width: 60, height: 40, spacing: 2, aps: 12, exponent: 3, seed: 7),
                     Self.synthetic(name: "campus", width: 396, height: 198, spacing: 9, aps: 520, exponent: 3.5, seed: 8)]
        let est = FingerprintEstimator()
        print("Fingerprint matching, median µs per scan (200 scans × \(repeats) passes, one thread)")
        print("map | points × APs | mean APs/scan | posfuse | numpy (same model) | max |Δfix| m")
        for c in cases {
            var fixes: [SIMD2<Double>?] = []
            for s in c.scans { fixes.append(try? est.estimate(s, time: 0, map: c.map).get().position) }
            var per: [Double] = []
            var sink = 0.0
            for r in 0..<(repeats + 1) {
                let t0 = Measure.now()
                for s in c.scans { if case .success(let f) = est.estimate(s, time: 0, map: c.map) { sink += f.position.x } }
                let dt = (Measure.now() - t0) / Double(c.scans.count) * 1e6
                if r > 0 { per.append(dt) }
            }
            if sink == .infinity { print(sink) }
            per.sort()
            var ref = "skipped"
            if !python.isEmpty, let py = Measure.which(python), FileManager.default.fileExists(atPath: script) {
                let u = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-fp-bench-\(getpid()).json")
                try Data(Self.json(c, fixes: fixes, sigma: est.sigma).utf8).write(to: u)
                defer { try? FileManager.default.removeItem(at: u) }
                ref = try Measure.run(py, [script, u.path, "--repeats", String(repeats)]).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let apsPerScan = Double(c.scans.map(\.accessPoints.count).reduce(0, +)) / Double(c.scans.count)
            print(String(format: "%@ | %d × %d | %.1f | %.1f | %@", c.name, c.map.points.count, c.map.bssids.count, apsPerScan,
                         per[per.count / 2], ref))
        }
    }
}
