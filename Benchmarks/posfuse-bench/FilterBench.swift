import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse-bench filters`: the issue-6 filter benchmarks, side by side in one run with the
/// Python references of `scripts/bench/filters_python.py` on the same model and data.
///
/// * EKF predict + update per step on the constant-velocity model x = [E, N, v_E, v_N]
///   (dt = 1 s, Q = q[[dt⁴/4, dt³/2],[dt³/2, dt²]] ⊗ I₂ with q = 0.5, H = [I₂ 0], R = 9 I₂),
///   measurements from a seeded walk. posfuse: `ExtendedKalmanFilter.predict(to:)` (the stage's
///   path; constant velocity in closed form) + `updatePosition` (allocation-free, Joseph form); FilterPy: `KalmanFilter.predict()` + `update(z)`.
///   Median ns/step over `--repeats` timed loops.
/// * Particle filter, 100,000 particles, one core: CV prediction with sampled noise, Gaussian
///   position likelihood, N_eff, systematic resampling below N/2; ns per particle-step and
///   particle-steps per second. posfuse: `ParticleFilter` (xoshiro256** + ziggurat); reference:
///   the same algorithm vectorised in numpy.
/// * Gaussian draws: GSL's `gsl_ran_gaussian_ziggurat` (MT19937, through `SimRNG`) vs posfuse's
///   xoshiro256** + ziggurat, ns per draw — the reason the particle filter does not use GSL's.
struct FilterBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "filters",
        abstract: "EKF ns/step vs FilterPy; particle filter ns/particle-step vs numpy; GSL vs xoshiro Gaussian draws.")

    @Option(help: "EKF steps per timed loop.") var ekfSteps = 200_000
    @Option(help: "Particles.") var particles = 100_000
    @Option(help: "Particle-filter steps per timed loop.") var pfSteps = 40
    @Option(help: "Timed loops (median).") var repeats = 7
    @Option(help: "Python interpreter with filterpy and numpy ('' to skip).") var python = "python3"
    @Option(help: "Path of filters_python.py.") var script = "scripts/bench/filters_python.py"

    static let q = 0.5, sigma = 3.0

    /// The seeded measurement sequence (shared recipe with filters_python.py: a straight walk
    /// at (1.2, 0.5) m/s plus N(0, σ²) noise from SplitMix64/Box–Muller, seed 42).
    static func measurements(_ n: Int) -> [SIMD2<Double>] {
        var rng = SplitMix64(seed: 42)
        return (0..<n).map { k in SIMD2(1.2 * Double(k) + sigma * rng.gaussian(), 0.5 * Double(k) + sigma * rng.gaussian()) }
    }

    func run() throws {
        let cv = ConstantVelocityModel(q: Self.q, noiseForm: .piecewiseConstantAcceleration)
        let zs = Self.measurements(ekfSteps)
        var ekfTimes: [Double] = []
        var checksum = 0.0
        for _ in 0..<repeats {
            let ekf = ExtendedKalmanFilter(motion: MotionConfiguration(layout: .constantVelocity, constantVelocity: cv))
            ekf.initialize(mean: SIMD4(0, 0, 0, 0), covariance: .diagonal(SIMD4(100, 100, 10, 10)), time: 0)
            let r = Self.sigma * Self.sigma
            let t0 = Measure.now()
            for (k, z) in zs.enumerated() {
                ekf.predict(to: Double(k + 1))
                ekf.updatePosition(z, ree: r, ren: 0, rnn: r)
            }
            ekfTimes.append((Measure.now() - t0) / Double(zs.count) * 1e9)
            checksum = ekf.mean[0]
        }
        let ekfNs = median(ekfTimes)

        let pzs = Self.measurements(pfSteps)
        var pfTimes: [Double] = []
        var resamples = 0
        for rep in 0..<max(3, repeats / 2) {
            let pf = ParticleFilter(motion: MotionConfiguration(layout: .constantVelocity, constantVelocity: cv), count: particles, seed: UInt64(7 + rep))
            pf.initialize(mean: SIMD4(0, 0, 1.2, 0.5), covariance: .diagonal(SIMD4(9, 9, 1, 1)), time: 0)
            let r = Self.sigma * Self.sigma
            let t0 = Measure.now()
            for (k, z) in pzs.enumerated() {
                pf.predict(to: Double(k + 1))
                pf.updatePosition(z, ree: r, ren: 0, rnn: r)
            }
            pfTimes.append((Measure.now() - t0) / Double(pzs.count * particles) * 1e9)
            resamples = pf.resampleCount
        }
        let pfNs = median(pfTimes)

        // Gaussian draws: GSL (MT19937 + ziggurat) vs xoshiro256** + ziggurat.
        let draws = 5_000_000
        let gsl = SimRNG(seed: 1, stream: "bench")
        var acc = 0.0
        var t0 = Measure.now()
        for _ in 0..<draws { acc += gsl.gaussian() }
        let gslNs = (Measure.now() - t0) / Double(draws) * 1e9
        var x = Xoshiro256(seed: 1)
        let zig = ZigguratNormal()
        t0 = Measure.now()
        for _ in 0..<draws { acc += zig.next(&x) }
        let xoNs = (Measure.now() - t0) / Double(draws) * 1e9

        var py: [String: Double] = [:]
        if !python.isEmpty, let exe = Measure.which(python) ?? (FileManager.default.isExecutableFile(atPath: python) ? python : nil),
           FileManager.default.fileExists(atPath: script) {
            let out = try Measure.run(exe, [script, "--ekf-steps", String(min(ekfSteps, 20_000)), "--particles", String(particles),
                                            "--pf-steps", String(min(pfSteps, 20))])
            if let d = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Double] { py = d }
        } else {
            FileHandle.standardError.write(Data("python reference skipped (no interpreter or script)\n".utf8))
        }

        print("Filters, one core (median of \(repeats) loops)")
        print("benchmark                               posfuse            reference              ratio")
        let fp = py["filterpy_ekf_ns"]
        print(String(format: "EKF CV predict+update, ns/step         %8.1f           FilterPy %10.1f    %@", ekfNs, fp ?? .nan,
                     fp.map { String(format: "%.0fx faster", $0 / ekfNs) } ?? "–"))
        let np = py["numpy_pf_ns"]
        print(String(format: "PF %d particles, ns/particle-step %8.2f           numpy    %10.2f    %@", particles, pfNs, np ?? .nan,
                     np.map { String(format: "%.1fx faster", $0 / pfNs) } ?? "–"))
        print(String(format: "PF particle-steps per second            %8.3g           numpy    %10.3g", 1e9 / pfNs, np.map { 1e9 / $0 } ?? .nan))
        print(String(format: "Gaussian draw, ns                       %8.2f (xoshiro) GSL MT19937 %7.2f    %.1fx", xoNs, gslNs, gslNs / xoNs))
        print(String(format: "(checks: EKF final E %.3f m, PF resamples in the last loop %d, Σ draws %.1f)", checksum, resamples, acc))
    }

    func median(_ v: [Double]) -> Double { let s = v.sorted(); return s[s.count / 2] }
}
