import Foundation
import CGSL
import Positioning
import Scoring
import TraceIO

/// Moving-block bootstrap confidence intervals of the change of a metric between two runs.
///
/// Per-epoch errors of a track are autocorrelated (a GNSS bias or a filter drift lasts for
/// many epochs), so resampling single epochs would understate the variance and give
/// intervals that are far too narrow. The moving-block bootstrap (Künsch 1989) resamples
/// whole blocks of consecutive epochs instead:
///
/// 1. Block length ℓ for a series of n epochs (`blockLength`), from its autocorrelation
///    by the automatic rule of Politis & White (2004, corrected by Patton, Politis &
///    White 2009) for the circular/moving block bootstrap:
///    R(k) = (1/n) Σ (x_i − x̄)(x_{i+k} − x̄); m̂ = the smallest lag after which K_N =
///    max(5, ⌈√log₁₀ n⌉) consecutive autocorrelations |ρ(k)| stay below 2√(log₁₀ n / n);
///    M = 2m̂; with the flat-top window λ(t) = 1 (|t| ≤ ½), 2(1 − |t|) (½ < |t| ≤ 1), 0 else,
///    G = Σ_{|k|≤M} λ(k/M)|k| R(k), g = Σ_{|k|≤M} λ(k/M) R(k), D = (4/3) g²,
///    ℓ = (2G²/D)^{1/3} n^{1/3}, rounded and clamped to [1, max(1, n/3)]. Uncorrelated
///    errors give ℓ = 1 (the ordinary bootstrap); a series with no variance falls back to
///    ℓ = ⌈n^{1/3}⌉. For two runs ℓ = max(ℓ_A, ℓ_B).
/// 2. A replicate of a series draws ⌈n/ℓ⌉ block starts uniformly from 0…n − ℓ, concatenates
///    the blocks and truncates to n epochs.
/// 3. Each replicate's metrics are recomputed with `EpochMetrics` and the replicate
///    difference δ* = m(B*) − m(A*) recorded. When both runs have the same epochs (same
///    count and times: the same trace under two pipelines) the same block starts are
///    used for both (a paired bootstrap, which cancels the shared trace difficulty);
///    otherwise (two seeds of a scenario) A and B are resampled independently.
/// 4. The interval is the percentile interval [Q(α/2), Q(1 − α/2)] of the δ* (type-7
///    quantiles), α = 1 − confidence.
///
/// Randomness: GSL's MT19937 seeded with `seed`; the same inputs and seed give the same
/// intervals. Caveat: the bootstrap of `max_m` (an extreme value) is not consistent; its
/// interval is reported but should not be trusted.
public struct BlockBootstrap: Sendable {
    public var resamples: Int
    public var seed: UInt64
    public var confidence: Double
    /// A block length chosen by the user (e.g. from a known correlation time); nil = automatic (step 1).
    public var blockLength: Int?

    public init(resamples: Int = 2000, seed: UInt64 = 1, confidence: Double = 0.95, blockLength: Int? = nil) {
        self.resamples = max(1, resamples); self.seed = seed; self.confidence = confidence
        self.blockLength = blockLength.map { max(1, $0) }
    }

    /// A two-sided interval of a difference B − A, with the block length used.
    public struct Interval: Sendable, Equatable {
        public var low: Double
        public var high: Double
        public var blockLength: Int
        public var paired: Bool
        public var includesZero: Bool { low <= 0 && high >= 0 }
    }

    /// The automatic block length of step 1.
    public static func blockLength(_ x: [Double]) -> Int {
        let n = x.count
        guard n >= 4 else { return 1 }
        let cap = max(1, n / 3)
        let fallback = min(cap, Int(pow(Double(n), 1.0 / 3.0).rounded(.up)))
        let mean = x.reduce(0, +) / Double(n)
        let d = x.map { $0 - mean }
        let maxLag = min(n - 1, Int(Double(n).squareRoot().rounded(.up)) + 2 * max(5, Int(log10(Double(n)).squareRoot().rounded(.up))) + 1)
        var r = [Double](repeating: 0, count: maxLag + 1)
        for k in 0...maxLag {
            var s = 0.0
            for i in 0..<(n - k) { s += d[i] * d[i + k] }
            r[k] = s / Double(n)
        }
        guard r[0] > 0, r[0].isFinite else { return fallback }
        let kn = max(5, Int(log10(Double(n)).squareRoot().rounded(.up)))
        let threshold = 2 * (log10(Double(n)) / Double(n)).squareRoot()
        var mHat = maxLag - kn
        search: for m in 0...max(0, maxLag - kn) {
            for j in 1...kn where abs(r[m + j] / r[0]) >= threshold { continue search }
            mHat = m
            break
        }
        let bigM = min(2 * mHat, maxLag)
        guard bigM > 0 else { return 1 }
        func lambda(_ t: Double) -> Double {
            let a = abs(t)
            return a <= 0.5 ? 1 : (a <= 1 ? 2 * (1 - a) : 0)
        }
        var g = r[0], bigG = 0.0
        for k in 1...bigM {
            let w = lambda(Double(k) / Double(bigM))
            g += 2 * w * r[k]
            bigG += 2 * w * Double(k) * r[k]
        }
        let dcb = 4.0 / 3.0 * g * g
        guard dcb > 0, dcb.isFinite, bigG.isFinite else { return fallback }
        let l = pow(2 * bigG * bigG / dcb, 1.0 / 3.0) * pow(Double(n), 1.0 / 3.0)
        guard l.isFinite else { return fallback }
        return min(cap, max(1, Int(l.rounded())))
    }

    /// Whether two epoch series are the same epochs (pairable).
    public static func arePaired(_ a: [EpochSample], _ b: [EpochSample]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { abs($0.time - $1.time) <= 1e-6 }
    }

    /// Intervals of m(B) − m(A) for every metric of `EpochMetrics.names` both runs support.
    /// Empty when either series is empty.
    public func differenceIntervals(_ a: [EpochSample], _ b: [EpochSample]) -> [String: Interval] {
        guard !a.isEmpty, !b.isEmpty else { return [:] }
        let paired = Self.arePaired(a, b)
        let l = blockLength ?? max(Self.blockLength(a.map(\.error)), Self.blockLength(b.map(\.error)))
        return percentileIntervals(replicates(a, b, paired: paired, blockLength: l), blockLength: l, paired: paired)
    }

    /// Intervals of a metric m(A) of one run (steps 1, 2 and 4 on A alone): how far the
    /// metric of one recording could move with another realisation of its error process
    /// (`posfuse sweep` on a recording). Empty when the series is empty.
    public func intervals(_ a: [EpochSample]) -> [String: Interval] {
        guard !a.isEmpty else { return [:] }
        let l = blockLength ?? Self.blockLength(a.map(\.error))
        return percentileIntervals(replicates(a, nil, paired: false, blockLength: l), blockLength: l, paired: false)
    }

    /// Step 4: the percentile interval of each metric's replicates.
    private func percentileIntervals(_ deltas: [String: [Double]], blockLength l: Int, paired: Bool) -> [String: Interval] {
        let alpha = 1 - confidence
        var out: [String: Interval] = [:]
        for (k, d) in deltas where d.count == resamples {
            let s = d.sorted()
            out[k] = Interval(low: EpochMetrics.quantile(sorted: s, alpha / 2),
                              high: EpochMetrics.quantile(sorted: s, 1 - alpha / 2), blockLength: l, paired: paired)
        }
        return out
    }

    /// Steps 2–3: `resamples` replicates of m(B*) − m(A*), or of m(A*) when `b` is nil.
    private func replicates(_ a: [EpochSample], _ b: [EpochSample]?, paired: Bool, blockLength l: Int) -> [String: [Double]] {
        let la = min(l, a.count), lb = min(l, b?.count ?? 1)
        GSL.disableAbort()
        let rng = gsl_rng_alloc(cgsl_rng_mt19937())!
        defer { gsl_rng_free(rng) }
        gsl_rng_set(rng, UInt(truncatingIfNeeded: seed))
        func draw(_ n: Int, _ l: Int) -> [Int] {
            var idx: [Int] = []
            idx.reserveCapacity(n + l)
            let starts = UInt(n - l + 1)
            while idx.count < n {
                let s = Int(gsl_rng_uniform_int(rng, starts))
                for i in s..<(s + l) { idx.append(i) }
            }
            return Array(idx.prefix(n))
        }
        // Columns, extracted once (the replicate loop only gathers by index).
        struct Columns {
            var errors: [Double], inside: [Bool?], nees: [Double?]
            init(_ e: [EpochSample]) {
                errors = e.map(\.error)
                inside = e.map(EpochMetrics.isInside95)
                nees = e.map(\.nees)
            }
        }
        let ca = Columns(a), cb = b.map(Columns.init)
        func metrics(_ c: Columns, _ idx: [Int]) -> [String: Double] {
            var errors: [Double] = [], inside: [Bool] = [], nees: [Double] = []
            errors.reserveCapacity(idx.count)
            for i in idx {
                errors.append(c.errors[i])
                if let f = c.inside[i] { inside.append(f) }
                if let v = c.nees[i] { nees.append(v) }
            }
            return EpochMetrics.compute(errors: errors, inside: inside, nees: nees)
        }
        var deltas: [String: [Double]] = [:]
        for _ in 0..<resamples {
            let ia = draw(a.count, la)
            let ma = metrics(ca, ia)
            guard let b, let cb else {
                for (k, va) in ma { deltas[k, default: []].append(va) }
                continue
            }
            let ib = paired ? ia : draw(b.count, lb)
            let mb = metrics(cb, ib)
            for (k, va) in ma { if let vb = mb[k] { deltas[k, default: []].append(vb - va) } }
        }
        return deltas
    }
}
