/// BeepBeep two-way acoustic ranging between phones A and B from each phone's own
/// audio sample counter — no clock synchronisation (Peng et al., SenSys 2007;
/// `docs/models.md` §4B).
///
/// Let n_XY be the sample index, **on X's counter**, at which X's microphone hears Y's
/// beep (n_AA: A hears itself). With beep emissions at a (A) and b (B), speaker–mic
/// distances k_A, k_B, and sound speed c_s:
///   n_AB − n_AA = f_s·[(b − a) + (D − k_A)/c_s],  n_BB − n_BA = f_s·[(b − a) + (k_B − D)/c_s],
/// where each difference lives on one counter, so the clock offsets cancel and (b − a)
/// cancels between them:
///
///     D = (c_s / (2 f_s))·[(n_AB − n_AA) − (n_BB − n_BA)] + (k_A + k_B)/2.
///
/// Sign convention: the signed form above is independent of who beeps first. pybeepbeep
/// (`ranging.py::calculate_distances`) computes (c/2f_s)(|d₁₂ − d₂₁| + d₁₁ + d₂₂) with
/// d₁₂ = |n_12 − n_11|, d₂₁ = |n_21 − n_22| and the k's as samples on the diagonal — the
/// same value whenever 2D > k_A + k_B (it takes absolute values to be order-free); ours
/// stays valid at very short range.
///
/// Noise: with onset σ_n samples per detection, Var D = (c_s/(2f_s))²·4σ_n², i.e.
/// σ_D = c_s·σ_n/f_s (7.8 mm per sample at 44.1 kHz). Clock skew adds (ε_A − ε_B)(c_s/2)Δt.
public enum BeepBeep {
    /// Range D (m). Fails on missing/non-finite counters, a non-positive sample rate, or
    /// a negative range beyond `tolerance` (inconsistent onsets).
    public static func range(nAA: Double, nAB: Double, nBA: Double, nBB: Double, sampleRate fs: Double,
                             kA: Double = 0, kB: Double = 0, speedOfSound cs: Double,
                             tolerance: Double = 0.05) -> Result<Double, EstimationFailure> {
        guard [nAA, nAB, nBA, nBB, kA, kB, cs].allSatisfy({ $0.isFinite }), fs > 0, fs.isFinite, cs > 0 else {
            return .failure(.inconsistentMeasurements("non-finite sample counters or sample rate"))
        }
        let d = cs / (2 * fs) * ((nAB - nAA) - (nBB - nBA)) + (kA + kB) / 2
        guard d >= -tolerance else {
            return .failure(.inconsistentMeasurements("negative two-way range \(d) m"))
        }
        return .success(max(d, 0))
    }

    /// σ_D = c_s·σ_n/f_s for onset noise σ_n samples.
    public static func sigma(onsetSigmaSamples sn: Double, sampleRate fs: Double, speedOfSound cs: Double) -> Double {
        cs * sn / fs
    }

    /// Range and σ from a trace `peer_range` event: sample counters when all four are
    /// present (σ from `onsetSigmaSamples`), else the phone-computed `d` (σ from the
    /// event, else `defaultSigma`).
    public static func range(_ e: PeerRange, speedOfSound cs: Double, onsetSigmaSamples: Double = 1,
                             defaultSigma: Double = 0.05) -> Result<(range: Double, sigma: Double), EstimationFailure> {
        if let aa = e.nAA, let ab = e.nAB, let ba = e.nBA, let bb = e.nBB {
            guard let fs = e.sampleRate else { return .failure(.missingInput("peer_range fs")) }
            switch range(nAA: aa, nAB: ab, nBA: ba, nBB: bb, sampleRate: fs, kA: e.speakerMicA ?? 0,
                         kB: e.speakerMicB ?? 0, speedOfSound: cs) {
            case .success(let d): return .success((d, e.sigma ?? sigma(onsetSigmaSamples: onsetSigmaSamples, sampleRate: fs, speedOfSound: cs)))
            case .failure(let f): return .failure(f)
            }
        }
        guard let d = e.distance else { return .failure(.missingInput("peer_range needs n_aa…n_bb or d")) }
        guard d.isFinite, d >= 0 else { return .failure(.inconsistentMeasurements("peer range \(d) m")) }
        let s = e.sigma ?? defaultSigma
        guard s > 0, s.isFinite else { return .failure(.inconsistentMeasurements("peer range sigma \(s) m")) }
        return .success((d, s))
    }
}
