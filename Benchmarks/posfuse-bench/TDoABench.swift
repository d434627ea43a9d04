import ArgumentParser
import Foundation
import Positioning

/// `posfuse-bench tdoa`: median time of one TDoA solve (2-D, known phone height) with 4–8
/// beacons for the three solver paths — Chan–Ho closed form only, closed form + inline
/// Gauss–Newton (fast path), closed form + GSL Levenberg–Marquardt (workspace reused) — and,
/// side by side in the same run, `scipy.optimize.least_squares` (method "lm", analytic
/// Jacobian, whitened residuals) from `scripts/bench/tdoa_scipy.py` on the same geometry.
///
/// Method: 256 seeded problems per beacon count (20 m × 12 m office, beacons at 1.9–3.0 m,
/// phone at 1.2 m, σ = 1 cm per TOA); batches of `--batch` solves are timed with the
/// monotonic clock; the per-solve time of each of `--repeats` batches is recorded and the
/// median reported (µs). One thread (run under `taskset -c 0` by run-all.sh).
struct TDoABench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "tdoa",
        abstract: "TDoA solve time (µs, median) for 4–8 beacons: closed form, GN fast path, GSL LM, scipy reference.")

    @Option(help: "Comma-separated beacon counts.") var beacons = "4,5,6,7,8"
    @Option(help: "Solves per timed batch.") var batch = 2000
    @Option(help: "Timed batches (median over these).") var repeats = 15
    @Option(help: "Python interpreter for the scipy reference ('' to skip).") var python = "python3"
    @Option(help: "Path of tdoa_scipy.py.") var script = "scripts/bench/tdoa_scipy.py"

    /// Beacon layout shared with tdoa_scipy.py (first M entries).
    static let layout: [SIMD3<Double>] = [
        SIMD3(0.3, 0.3, 2.9), SIMD3(19.7, 0.3, 2.3), SIMD3(19.7, 11.7, 2.8), SIMD3(0.3, 11.7, 2.1),
        SIMD3(10, 0.3, 2.6), SIMD3(10, 11.7, 1.9), SIMD3(10, 6, 3.0), SIMD3(5, 6, 2.4),
    ]


    static func problems(m: Int, count: Int, seed: UInt64) -> [TDoAProblem] {
        var rng = SplitMix64(seed: seed)
        let b = Array(layout.prefix(m))
        return (0..<count).map { _ in
            let p = SIMD3(2 + 16 * rng.uniform(), 2 + 8 * rng.uniform(), 1.2)
            let r = b.map { s -> Double in let d = p - s; return (d * d).sum().squareRoot() + 0.01 * rng.gaussian() }
            return TDoAProblem(beacons: b, rangeDifferences: r.dropFirst().map { $0 - r[0] }, sigma: 0.01, mode: .planar(height: 1.2))
        }
    }

    func run() throws {
        let counts = beacons.split(separator: ",").compactMap { Int($0) }
        print("TDoA solve, 2-D with known height, median µs per solve (batch \(batch) × \(repeats))")
        print("beacons | closed form | closed+GN (fast) | closed+GSL LM | scipy least_squares lm")
        for m in counts {
            let ps = Self.problems(m: m, count: 256, seed: UInt64(1000 + m))
            let ws = TDoALMWorkspace()
            func time(_ solver: TDoASolver) -> Double {
                var sink = 0.0
                var per: [Double] = []
                for r in 0..<(repeats + 1) {
                    let t0 = Measure.now()
                    for i in 0..<batch {
                        if case .success(let e) = solver.solve(ps[i & 255], workspace: ws) { sink += e.position[0] }
                    }
                    let dt = (Measure.now() - t0) / Double(batch) * 1e6
                    if r > 0 { per.append(dt) }   // first batch = warm-up
                }
                if sink == .infinity { print(sink) }
                per.sort()
                return per[per.count / 2]
            }
            let cf = time(TDoASolver(refinement: .none))
            let gn = time(TDoASolver(refinement: .gaussNewton))
            let lm = time(TDoASolver(refinement: .levenbergMarquardt))
            var ref = "skipped"
            if !python.isEmpty, let py = Measure.which(python), FileManager.default.fileExists(atPath: script) {
                let out = try Measure.run(py, [script, "--beacons", String(m), "--repeats", String(min(repeats, 7))])
                ref = out.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            print(String(format: "%7d | %11.2f | %16.2f | %13.2f | %@", m, cf, gn, lm, ref))
        }
    }
}
