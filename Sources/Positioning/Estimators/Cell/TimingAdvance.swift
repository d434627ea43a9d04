import Foundation

/// Timing advance (TA) → distance conversion (`docs/models.md` §1.1).
///
/// TA is a quantised **round-trip** delay: one TA step is Δ = c·T_step/2 metres of one-way
/// (slant) range. Step durations:
///
/// | unit | T_step (round trip) | Δ (c exact) | Δ (c = 3e8) |
/// |---|---|---|---|
/// | GSM bit period | 48/13 µs | 553.46 m | 553.85 m |
/// | LTE 16·T_s, T_s = 1/(15000·2048) s | 0.52083 µs | 78.07 m | 78.125 m |
/// | NR 16·64·T_c/2^μ, T_c = 1/(480e3·4096) s | 0.52083/2^μ µs | 78.07/2^μ m | 78.125/2^μ m |
/// | Android NR one-way µs | (one way) 1 µs | 299.79 m (d = c·t, no /2) | 300 m |
///
/// Measurement model [R]: TA = Q(2d/(c·T_step)) with Q = rounding (β = 0) or truncation
/// (β = ½). Inversion d̂ = (TA + β)·Δ, and the ring of slant ranges consistent with a
/// reported index is r ∈ [max(0, (TA + β − ½)Δ), (TA + β + ½)Δ]. The quantisation error is
/// U(−Δ/2, Δ/2), standard deviation Δ/√12 (GSM 159.8 m, LTE 22.5 m).
///
/// Degenerate cases: TA = 0 gives r_lo = 0 (a disc, not a point); a TA at its maximum index
/// (saturated: GSM 63 normal / 219 extended, LTE 1282, NR 3846, one-way µs 1282) is only a
/// lower bound d ≥ (TA_max + β − ½)Δ (`isSaturated`). NR/LTE-TDD N_TA,offset is not
/// propagation and is never converted here.
public struct TimingAdvanceModel: Sendable, Equatable {
    /// Exact speed of light, m/s.
    public static let exactSpeedOfLight = 299_792_458.0
    /// The literature's round number, m/s.
    public static let literatureSpeedOfLight = 3.0e8

    /// Unit of the raw TA integer.
    public var unit: TimingAdvanceUnit
    /// Speed of light used for Δ, m/s (exact by default; 3e8 reproduces literature tables).
    public var speedOfLight: Double
    /// Quantiser offset β in steps: 0 for rounding, 0.5 for truncation, or a calibrated value.
    public var offset: Double
    /// Largest reportable index for GSM (63 for normal cells, 219 for Android extended cells).
    public var gsmMaxIndex: Int

    public init(unit: TimingAdvanceUnit, speedOfLight: Double = TimingAdvanceModel.exactSpeedOfLight,
                offset: Double = 0, gsmMaxIndex: Int = 63) {
        self.unit = unit; self.speedOfLight = speedOfLight; self.offset = offset; self.gsmMaxIndex = gsmMaxIndex
    }

    /// Quantiser kinds and their offsets β.
    public enum Quantizer: String, Sendable, CaseIterable {
        case rounding, truncation
        public var offset: Double { self == .rounding ? 0 : 0.5 }
    }

    /// Round-trip duration of one TA step, s (for `oneWayMicroseconds`: the one-way µs
    /// doubled, so that Δ = c·T/2 holds for every unit).
    public static func stepDuration(_ unit: TimingAdvanceUnit) -> Double {
        let ts = 1.0 / (15_000 * 2048)            // LTE basic time unit T_s
        let tc = 1.0 / (480_000 * 4096)           // NR basic time unit T_c
        switch unit {
        case .gsmBits: return 48.0 / 13.0 * 1e-6
        case .lte16Ts: return 16 * ts
        case .nrMu0: return 16 * 64 * tc
        case .nrMu1: return 16 * 64 * tc / 2
        case .nrMu2: return 16 * 64 * tc / 4
        case .nrMu3: return 16 * 64 * tc / 8
        case .oneWayMicroseconds: return 2e-6
        }
    }

    /// One-way metres per TA step: Δ = c·T_step/2.
    public var stepLength: Double { speedOfLight * Self.stepDuration(unit) / 2 }

    /// Largest reportable index (a report at this index is saturated).
    public var maxIndex: Int {
        switch unit {
        case .gsmBits: return gsmMaxIndex
        case .lte16Ts, .oneWayMicroseconds: return 1282
        case .nrMu0, .nrMu1, .nrMu2, .nrMu3: return 3846
        }
    }

    /// Default unit when a trace gives none: GSM bits, LTE 16·T_s, NR numerology 0.
    public static func defaultUnit(for rat: RAT) -> TimingAdvanceUnit? {
        switch rat {
        case .gsm: return .gsmBits
        case .lte: return .lte16Ts
        case .nr: return .nrMu0
        case .umts: return nil   // UMTS has no TA
        }
    }

    /// Whether the index is at (or beyond) the reportable maximum.
    public func isSaturated(_ ta: Int) -> Bool { ta >= maxIndex }

    /// Point estimate of the slant range d̂ = (TA + β)·Δ, m.
    public func range(_ ta: Int) -> Double { (Double(ta) + offset) * stepLength }

    /// Slant-range interval consistent with the index: [max(0, (TA+β−½)Δ), (TA+β+½)Δ], m.
    public func ring(_ ta: Int) -> (lower: Double, upper: Double) {
        let d = stepLength
        return (max(0, (Double(ta) + offset - 0.5) * d), max(0, (Double(ta) + offset + 0.5) * d))
    }

    /// Quantisation standard deviation Δ/√12, m (the single-epoch resolution floor, §1.5).
    public var quantizationSigma: Double { stepLength / 12.0.squareRoot() }

    /// Validates a raw index: negative values and Android's UNAVAILABLE (Int32.max) are rejected.
    public func validate(_ ta: Int) -> EstimationFailure? {
        if ta == Int(Int32.max) { return .missingInput("timing advance unavailable") }
        if ta < 0 { return .inconsistentMeasurements("negative timing advance \(ta)") }
        if ta > maxIndex { return .inconsistentMeasurements("timing advance \(ta) above maximum \(maxIndex) for \(unit.rawValue)") }
        return nil
    }

    /// Calibrates β from ground truth: β̂ = median(d_true/Δ − TA) over (index, true slant
    /// range) pairs (§1.1). Saturated indices are skipped. nil when no usable pair remains.
    /// A positive β̂ near ½ indicates a truncating quantiser; a larger one, NLOS excess delay.
    public func calibrateOffset(_ samples: [(ta: Int, trueRange: Double)]) -> Double? {
        let d = stepLength
        let v = samples.filter { !isSaturated($0.ta) && $0.ta >= 0 && $0.trueRange.isFinite }
            .map { $0.trueRange / d - Double($0.ta) }
        return RadioStats.median(v)
    }
}
