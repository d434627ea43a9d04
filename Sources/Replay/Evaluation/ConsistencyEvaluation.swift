import CGSL
import Foundation
import Positioning
import Scoring

/// Filter consistency over seeded Monte Carlo runs of a simulator scenario
/// (`docs/models.md` §7.6; `posfuse evaluate consistency`).
///
/// Each run simulates the scenario with seed `firstSeed + k` (same venue, new noise), replays it
/// through the pipeline and scores every source. Per source and run: ANEESᵣ = mean over epochs of
/// eᵀP⁻¹e (2-D position, n = 2), the share inside the reported 95 % ellipse, the mean error.
///
/// **Band.** Under consistency E[ANEESᵣ] = n. Epochs of one run are strongly autocorrelated
/// (a filter's error changes slowly), so they are *not* treated as independent samples: each run
/// counts as one χ²ₙ sample, and the two-sided 95 % band of the mean over N runs is
/// [χ²_{Nn}(0.025), χ²_{Nn}(0.975)] / N (N = 50, n = 2: [1.48, 2.59]). This is the conservative
/// (widest) choice; with independent epochs the band would be far narrower.
///
/// **Effective-sample band.** The band above is valid whatever the time correlation but loose:
/// a run of K epochs carries more than one χ²₂ sample of information unless its NEES never
/// decorrelates. With τ = 1 + 2 Σ_{l≥1} ρ_l the integrated autocorrelation time of the NEES
/// sequence of a run (ρ_l the lag-l autocorrelation pooled over runs and phones, lags in emitted
/// epochs, summed while positive: Geyer's initial positive sequence), the mean over N runs of
/// K̄ epochs behaves like the mean of n_eff = N·K̄/τ independent χ²₂ values (clamped to
/// [N, N·K̄]), and the tighter band is [χ²_{2n_eff}(0.025), χ²_{2n_eff}(0.975)]/n_eff
/// (`effectiveBand…`, `insideEffectiveBand`). Both are reported; τ is estimated from the same
/// runs, so the effective band is approximate where the runs are few or short.
public enum ConsistencyEvaluation {
    public struct SourceRow: Sendable, Codable, Equatable {
        public var source: String
        public var runs: Int
        /// Mean over runs of the per-run ANEES.
        public var anees: Double
        public var bandLow: Double
        public var bandHigh: Double
        public var insideBand: Bool
        /// Mean over runs of the share of epochs inside the reported 95 % ellipse.
        public var inside95: Double
        /// Mean over runs of the mean error, m.
        public var meanError: Double
        /// Integrated autocorrelation time of the NEES within a run, epochs (1 = independent).
        public var tau: Double
        /// Mean scored epochs with a covariance per run, K̄.
        public var epochsPerRun: Double
        /// n_eff = N·K̄/τ (clamped to [N, N·K̄]) and its band.
        public var effectiveCount: Double
        public var effectiveBandLow: Double
        public var effectiveBandHigh: Double
        public var insideEffectiveBand: Bool
        enum CodingKeys: String, CodingKey {
            case source, runs, anees, bandLow = "band_low", bandHigh = "band_high", insideBand = "inside_band"
            case inside95, meanError = "mean_m", tau, epochsPerRun = "epochs_per_run", effectiveCount = "effective_count"
            case effectiveBandLow = "effective_band_low", effectiveBandHigh = "effective_band_high"
            case insideEffectiveBand = "inside_effective_band"
        }
    }

    /// A fusion source against the best stand-alone estimator (lowest mean error over the runs)
    /// on the epochs both have (same run, phone and time): stand-alone sources that exist only
    /// on some epochs (`peer` where phones range each other) are then compared on their own
    /// ground, not against the filter's every epoch.
    public struct PairedRow: Sendable, Codable, Equatable {
        public var fused: String
        public var single: String
        public var epochs: Int
        public var fusedMean: Double
        public var singleMean: Double
        public var ratio: Double
        enum CodingKeys: String, CodingKey {
            case fused, single, epochs, fusedMean = "fused_mean_m", singleMean = "single_mean_m", ratio
        }
    }

    public struct Report: Sendable, Codable, Equatable {
        public var sources: [SourceRow]
        public var fusedVsBestSingle: [PairedRow]
        enum CodingKeys: String, CodingKey { case sources, fusedVsBestSingle = "fused_vs_best_single" }
    }

    /// The 95 % band of the mean of `count` independent χ²ₙ values (count need not be an integer).
    /// GSL's inverse fails (NaN) for very large ν; there the Wilson–Hilferty approximation
    /// χ²_ν(p) ≈ ν (1 − 2/(9ν) + z_p √(2/(9ν)))³ is used (relative error < 10⁻⁶ for ν > 10⁴).
    public static func band(count c: Double, dimension n: Int = 2) -> ClosedRange<Double> {
        GSL.disableAbort()
        let dof = max(c, 1e-9) * Double(n)
        func quantile(_ p: Double) -> Double {
            let q = gsl_cdf_chisq_Pinv(p, dof)
            if q.isFinite, q > 0, dof < 1e4 { return q }
            let h = 2 / (9 * dof)
            return dof * pow(1 - h + gsl_cdf_ugaussian_Pinv(p) * h.squareRoot(), 3)
        }
        let lo = quantile(0.025) / max(c, 1e-9), hi = quantile(0.975) / max(c, 1e-9)
        return min(lo, hi)...max(lo, hi)
    }

    /// τ = 1 + 2 Σ_{l≥1} ρ_l, summed while ρ_l > 0 (Geyer 1992, initial positive sequence), with
    /// ρ_l = ĉ_l / ĉ_0, ĉ_l the mean of (εᵢ − ε̄)(εᵢ₊ₗ − ε̄) over all pairs at lag l inside each
    /// series (lags never cross series; ε̄ the mean of all values). 1 for constant or tiny input.
    public static func integratedAutocorrelation(_ series: [[Double]]) -> Double {
        let total = series.reduce(0) { $0 + $1.count }
        guard total > 1 else { return 1 }
        let mean = series.reduce(0) { $0 + $1.reduce(0, +) } / Double(total)
        let centred = series.map { $0.map { $0 - mean } }
        let c0 = centred.reduce(0) { $0 + $1.reduce(0) { $0 + $1 * $1 } } / Double(total)
        guard c0 > 0 else { return 1 }
        var tau = 1.0
        let longest = centred.map(\.count).max() ?? 0
        var lag = 1
        while lag < longest {
            var c = 0.0, pairs = 0
            for s in centred where s.count > lag {
                for i in 0..<(s.count - lag) { c += s[i] * s[i + lag] }
                pairs += s.count - lag
            }
            let rho = c / Double(pairs) / c0
            guard rho > 0 else { break }
            tau += 2 * rho
            lag += 1
        }
        return tau
    }

    /// The 95 % band of the mean of `runs` χ²ₙ values.
    public static func band(runs: Int, dimension n: Int = 2) -> ClosedRange<Double> {
        let dof = runs * n
        return ChiSquare.quantile(0.025, dof: dof) / Double(runs)...ChiSquare.quantile(0.975, dof: dof) / Double(runs)
    }

    /// Runs the Monte Carlo evaluation of one scenario folder (`scenario.yaml` inside).
    public static func run(scenarioFolder: URL, runs: Int, firstSeed: UInt64 = 1, duration: Double? = nil,
                           stages: [String: StageOptions] = [:], progress: ((Int) -> Void)? = nil) throws -> Report {
        var perSource: [String: (anees: [Double], inside: [Double], mean: [Double])] = [:]
        var order: [String] = []
        var series: [String: [[Double]]] = [:]      // NEES sequences per (run, phone)
        var errors: [String: [EpochKey: Double]] = [:] // per source: (run, phone, time) → error, m
        try SimulatedRuns.forEach(scenarioFolder: scenarioFolder, runs: runs, firstSeed: firstSeed, duration: duration) { k, location in
            let replayer = Replayer(options: ReplayOptions(stages: stages))
            var neesByKey: [String: [String: [(time: Double, nees: Double)]]] = [:]
            replayer.onEstimate = { e in
                if let err = e.error, !Subject.isObject(e.fix.subject) {
                    errors[e.fix.source.rawValue, default: [:]][EpochKey(run: k, subject: e.fix.subject, time: e.fix.time)] = err
                }
                guard e.error != nil, let n = e.nees, n.isFinite, n >= 0 else { return }
                let key = Subject.isObject(e.fix.subject) ? e.fix.source.rawValue + ":object" : e.fix.source.rawValue
                neesByKey[key, default: [:]][e.fix.subject, default: []].append((e.fix.time, n))
            }
            let r = try replayer.run(location)
            for (key, bySubject) in neesByKey {
                for subject in bySubject.keys.sorted() {
                    series[key, default: []].append(bySubject[subject]!.sorted { $0.time < $1.time }.map(\.nees))
                }
            }
            for s in r.scores.sources {
                guard let st = s.statistics, let a = st.anees, let i = st.inside95 else { continue }
                if perSource[s.key] == nil { order.append(s.key) }
                perSource[s.key, default: ([], [], [])].anees.append(a)
                perSource[s.key]!.inside.append(i)
                perSource[s.key]!.mean.append(st.mean)
            }
            progress?(k + 1)
        }
        let rows = order.map { key in
            let v = perSource[key]!
            let n = v.anees.count
            let b = band(runs: n)
            let anees = v.anees.reduce(0, +) / Double(n)
            let seqs = series[key] ?? []
            let tau = integratedAutocorrelation(seqs)
            let kBar = max(1, Double(seqs.reduce(0) { $0 + $1.count }) / Double(n))
            let nEff = min(max(Double(n) * kBar / tau, Double(n)), Double(n) * kBar)
            let e = band(count: nEff)
            return SourceRow(source: key, runs: n, anees: anees, bandLow: b.lowerBound, bandHigh: b.upperBound,
                             insideBand: b.contains(anees), inside95: v.inside.reduce(0, +) / Double(n),
                             meanError: v.mean.reduce(0, +) / Double(n), tau: tau, epochsPerRun: kBar, effectiveCount: nEff,
                             effectiveBandLow: e.lowerBound, effectiveBandHigh: e.upperBound, insideEffectiveBand: e.contains(anees))
        }
        return Report(sources: rows, fusedVsBestSingle: pairs(rows: rows, errors: errors))
    }

    /// One scored epoch of one run: the pairing key of `pairs`.
    struct EpochKey: Hashable, Comparable {
        var run: Int, subject: String, time: Double
        static func < (a: Self, b: Self) -> Bool { (a.run, a.subject, a.time) < (b.run, b.subject, b.time) }
    }

    /// Each fusion source against the stand-alone estimator of lowest mean error, on common epochs.
    static func pairs(rows: [SourceRow], errors: [String: [EpochKey: Double]]) -> [PairedRow] {
        let singles = rows.filter { Source(rawValue: $0.source).map { !$0.isFusion } ?? false }
        guard let best = singles.min(by: { $0.meanError < $1.meanError }), let b = errors[best.source] else { return [] }
        return rows.compactMap { r -> PairedRow? in
            guard Source(rawValue: r.source)?.isFusion == true, let f = errors[r.source] else { return nil }
            let common = b.keys.filter { f[$0] != nil }.sorted()    // a fixed order: the same sums every run
            guard !common.isEmpty else { return nil }
            let fm = common.reduce(0) { $0 + f[$1]! } / Double(common.count), sm = common.reduce(0) { $0 + b[$1]! } / Double(common.count)
            return PairedRow(fused: r.source, single: best.source, epochs: common.count, fusedMean: fm, singleMean: sm,
                             ratio: sm > 0 ? fm / sm : .nan)
        }
    }
}
