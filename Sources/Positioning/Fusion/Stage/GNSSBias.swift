import Foundation

/// The slowly varying part of a phone's GNSS error, estimated as two extra states beside the
/// filter's four (`docs/models.md` §7.4; the error model of `docs/simulator.md` GNSS).
///
/// **Model.** A GNSS fix is z = p + b + w: p the phone position (E, N, m), w white with
/// covariance R_w, and b = [b_E, b_N] (m) a first-order Gauss–Markov bias (multipath,
/// atmosphere, orbit; Brown & Hwang, *Introduction to Random Signals and Applied Kalman
/// Filtering*, 4th ed., §4.2 and §8.4 "GPS-aided inertial"):
///
///     b(t + Δt) = φ b(t) + u,   φ = e^{−Δt/τ_b},   u ~ N(0, (1 − φ²) Σ_b).
///
/// The phone reports one covariance Σ per fix (its accuracy; × α² by the stage). It is split
/// into Σ_b = β Σ (bias, stationary covariance) and R_w = (1 − β) Σ (white), β = `biasFraction`.
/// Σ_b follows the last fix: a phone that reports a worse accuracy has a larger bias.
///
/// **Why.** Treating correlated fixes as independent lets P shrink like 1/n while the bias
/// does not average out: the filter and, twice as much, the RTS smoother become over-confident
/// (docs/consistency.md). With the bias a state, n fixes within τ_b add the information of
/// about one.
///
/// **Algebra.** The augmented state y = [x; b] has covariance [[P, C], [Cᵀ, B]], C = Cov(x, b)
/// (4×2). The filter keeps x and P; this type keeps b, C and B and applies the blocks of the
/// 6-state equations, so every filter step stays the filter's own:
///
/// * predict x ← f(x) with Jacobian F over Δt:  C ← φ F C,  b ← φ b,  B ← φ² B + (1 − φ²) Σ_b.
/// * update by a measurement of x alone (H = ∂h/∂x at the prior, S = H P Hᵀ + R, K_x = P Hᵀ S⁻¹,
///   innovation ν): with L = H C (m×2),  b ← b + Lᵀ S⁻¹ ν,  C ← C − K_x L,  B ← B − Lᵀ S⁻¹ L.
///   x and P are the filter's update, unchanged by the bias (its measurement does not see b).
///   For the UKF, H is the Jacobian at the prior mean: the cross-covariance is kept to first order.
/// * GNSS fix, H_y = [I₂ 0 0 | I₂] (linear, so exact for the EKF and the UKF alike): the joint
///   Kalman update of y in Joseph form, done here (`updateFix`), x and P written back.
///
/// **Online widening from the bias estimate (`disagreement`, option `gnss_bias_adaptive_window`).**
/// The phone's reported accuracy and the fixed β say how large the bias is *expected* to be; in
/// a street canyon it is larger (multipath on reflected signals lasts tens of seconds while the
/// phone reports 0.7× its error). The innovations cannot show this: the bias states absorb a
/// slow bias, so the innovations stay white and their NIS near 2 (docs/fusion.md, whiteness
/// experiment). What does show it is the bias estimate itself, which is separable from the
/// position only through the motion model (PDR steps, the constant-velocity prior): b̂ is the
/// part of the fixes' offset from the track that the motion model says the phone did not move.
/// Under the model, before any fix, Cov(b) = U with U ← φ²U + (1 − φ²)Σ_b (the Gauss–Markov
/// recursion of the Σ_b of each fix, `unconditional`; not the last fix's Σ_b, which follows the
/// phone's jittery reported accuracy while the bias cannot change that fast). In a consistent
/// filter Cov(b) = Cov(b̂) + Cov(b − b̂), so Cov(b̂) = U − B and after every accepted fix
///
///     d² = b̂ᵀ U⁻¹ b̂  has  E[d²] = e = tr(U⁻¹ (U − B)) = 2 − tr(U⁻¹ B).
///
/// d² well above e means the fixes and the motion model disagree by more than the model allows:
/// either the bias is larger than modelled or the track has drifted, and the fixes alone cannot
/// say which. μ is the covariance-matching scale of `AccuracyScale` fed with 2 d²/e (mean 2
/// when the model holds; skipped while e < 0.2: the bias is then barely observed and d² says
/// nothing), bounds [1, 100]: it only widens (as λ: narrowing from the fixes' own consistency
/// is unsafe, docs/fusion.md). The unexplained part of the disagreement,
///
///     W = (μ − 1)(U − B)   (`excessCovariance`),
///
/// is added to the covariance the filter *reports* (not to its P: fed back, it made the filter
/// follow the biased fixes, photo-landmark-downtown ekf mean 6.12 → 7.26 m, docs/fusion.md). The
/// estimate is unchanged; the region widens exactly while the bias estimate is larger than the
/// model explains. This is covariance matching on a state correction (Mohamed & Schwarz 1999,
/// J. Geodesy 73, adapt Q from the state corrections; here the corrected state is the bias). μ and
/// U are state of the block: rewinds restore them.
///
/// Until the first GNSS fix the block is *unprimed*: b is not a state yet (nothing observes it).
/// The first fix primes it with b = 0, B = Σ_b and C = 0, or, when that fix starts the filter
/// (p̂ = z, so the position error is −(b + w)), with C_p = −Σ_b (`prime(startingAt:)`).
public struct GNSSBias: Sendable, Equatable {
    /// τ_b, s.
    public var correlationTime: Double
    /// β: share of the fix covariance that is bias.
    public var biasFraction: Double
    public private(set) var bias = SIMD2<Double>.zero
    /// Columns of C = Cov(x, b).
    public private(set) var crossE = SIMD4<Double>.zero, crossN = SIMD4<Double>.zero
    /// B = Cov(b).
    public private(set) var covariance = Covariance2.zero
    /// Σ_b of the last fix; nil while unprimed.
    public private(set) var stationary: Covariance2?
    public private(set) var time = 0.0
    /// U = Cov(b) before any fix: the Gauss–Markov recursion of Σ_b alone, U ← φ²U + (1 − φ²)Σ_b.
    public private(set) var unconditional = Covariance2.zero
    /// μ, the scale of the bias estimate's spread against its model (nil: off).
    public private(set) var disagreement: AccuracyScale?

    /// `adaptiveWindow`: fixes over which μ follows a change (nil: no online widening).
    public init(correlationTime: Double = 30, biasFraction: Double = 0.75, adaptiveWindow: Double? = nil) {
        self.correlationTime = correlationTime; self.biasFraction = biasFraction
        disagreement = adaptiveWindow.map { AccuracyScale(window: $0) }
    }

    public var isPrimed: Bool { stationary != nil }

    /// Takes β and τ from a fix that carries its own error correlation (`Fix.errorCorrelation`,
    /// the GNSS error model's fitted split for the phone's family); nil keeps the stage's.
    public mutating func adopt(_ c: ErrorCorrelation?) {
        guard let c, c.biasFraction > 0, c.biasFraction < 1, c.correlationTime > 0, c.correlationTime.isFinite else { return }
        biasFraction = c.biasFraction; correlationTime = c.correlationTime
    }

    /// Back to unprimed (the filter was (re)started from another source).
    public mutating func reset(time t: Double) {
        bias = .zero; crossE = .zero; crossN = .zero; covariance = .zero; unconditional = .zero; stationary = nil; time = t
    }

    /// Primes at the fix that starts the filter (x̂_p = z, P_pp = Σ): C_p = −Σ_b.
    ///
    /// `differencedOver` Δt: a constant-velocity start from two fixes Δt apart (x̂_v = (z − z₋)/Δt,
    /// P_pv = Σ/Δt, P_vv = (Σ + Σ₋)/Δt², `FusionStage`'s two-point initiation, whose fixes are
    /// taken as independent): the velocity's error −(e − e₋)/Δt then shares the bias of e, so
    /// C_v = −Σ_b/Δt. With C_v = 0 beside that P the joint covariance [[P, C], [Cᵀ, B]] is not
    /// positive semi-definite: a velocity measurement shrinks P_pp through P_pv (to about Σ/2) while
    /// C_p stays −Σ_b, after which every GNSS fix's S is singular or negative (measured on the GSDC
    /// dev drive with a 5 m cross-track bias added to the Pixel4XLModded's fixes: 30 fixes
    /// refused as singular after a re-initialisation, then a negative P and the ekf 60 m off).
    public mutating func prime(startingAt fixCovariance: Covariance2, time t: Double, differencedOver dt: Double? = nil) {
        let sb = fixCovariance.scaled(biasFraction)
        reset(time: t)
        stationary = sb; covariance = sb; unconditional = sb
        let k = dt.map { $0 > 0 && $0.isFinite ? 1 / $0 : 0 } ?? 0
        crossE = SIMD4(-sb.ee, -sb.en, -k * sb.ee, -k * sb.en); crossN = SIMD4(-sb.en, -sb.nn, -k * sb.en, -k * sb.nn)
    }

    /// Decay factor φ over Δt ≥ 0.
    public func decay(_ dt: Double) -> Double { exp(-max(0, dt) / correlationTime) }

    /// Prediction of the bias to `t` with the filter's transition Jacobian F over the same interval.
    public mutating func predict(transition f: Mat4, to t: Double) {
        guard let sb = stationary else { time = max(time, t); return }
        let phi = decay(t - time)
        time = max(time, t)
        crossE = phi * (f * crossE); crossN = phi * (f * crossN)
        bias *= phi
        let a = phi * phi
        covariance = Self.relax(covariance, toward: sb, a)
        unconditional = Self.relax(unconditional, toward: sb, a)
    }

    /// The receiver re-solved while at rest (`FusionStage`'s re-solution re-test): its error is a new
    /// draw of the bias, independent of the old one and of the state. That is the prediction above
    /// with φ = 0 toward the re-solved fix's own Σ_b = β Σ (`fixCovariance` Σ, already × α²λ):
    /// b ← 0, C ← 0, B = U ← Σ_b. (Not the last fix's Σ_b: a held solution's repeats enter with
    /// R × k, `repeat_inflation`, and their Σ_b with it.) μ is kept: it is the phone's, not this
    /// bias's.
    public mutating func redraw(fixCovariance sigma: Covariance2) {
        guard stationary != nil else { return }
        let sb = sigma.scaled(biasFraction)
        stationary = sb; bias = .zero; crossE = .zero; crossN = .zero
        covariance = Self.relax(covariance, toward: sb, 0); unconditional = Self.relax(unconditional, toward: sb, 0)
    }

    /// The Gauss–Markov covariance recursion a·c + (1 − a)·Σ_b, a = φ².
    static func relax(_ c: Covariance2, toward sb: Covariance2, _ a: Double) -> Covariance2 {
        Covariance2(ee: a * c.ee + (1 - a) * sb.ee, en: a * c.en + (1 - a) * sb.en, nn: a * c.nn + (1 - a) * sb.nn)
    }

    /// The block update for an accepted measurement of x alone with Jacobian rows `h` (1×4 each),
    /// innovation `nu` and noise `r`, applied at the filter's prior (x⁻ not needed, P⁻ = `prior`).
    public mutating func update(h: [SIMD4<Double>], innovation nu: [Double], noise r: Matrix, prior p: Mat4) {
        guard isPrimed else { return }
        let m = h.count
        var s = Matrix(rows: m, cols: m)
        var ph = [SIMD4<Double>](repeating: .zero, count: m)
        for k in 0..<m { ph[k] = p * h[k] }                                              // P Hᵀ
        for i in 0..<m { for j in 0..<m { s[i, j] = (h[i] * ph[j]).sum() + r[i, j] } }
        guard let si = s.symmetrized.spdInverse else { return }
        let le = h.map { ($0 * crossE).sum() }, ln = h.map { ($0 * crossN).sum() }       // L = H C
        // Lᵀ S⁻¹ (2×m) and K_x = P Hᵀ S⁻¹ (4×m).
        var ge = [Double](repeating: 0, count: m), gn = ge
        var kx = [SIMD4<Double>](repeating: .zero, count: m)
        for col in 0..<m {
            for j in 0..<m { ge[col] += le[j] * si[j, col]; gn[col] += ln[j] * si[j, col]; kx[col] += ph[j] * si[j, col] }
        }
        for k in 0..<m { bias += SIMD2(ge[k], gn[k]) * nu[k] }
        for k in 0..<m { crossE -= kx[k] * le[k]; crossN -= kx[k] * ln[k] }
        var bee = 0.0, ben = 0.0, bnn = 0.0
        for k in 0..<m { bee += ge[k] * le[k]; ben += 0.5 * (ge[k] * ln[k] + gn[k] * le[k]); bnn += gn[k] * ln[k] }
        covariance = Covariance2(ee: covariance.ee - bee, en: covariance.en - ben, nn: covariance.nn - bnn)
    }

    /// W = (μ − 1)(U − B): the fix–track disagreement the model does not explain, as a position
    /// covariance to add to the reported one; nil while μ = 1, off or unprimed. U − B is PSD in
    /// exact arithmetic (B never exceeds the prior it was updated from); clipped to be so.
    public var excessCovariance: Covariance2? {
        guard let mu = disagreement?.value, mu > 1, stationary != nil else { return nil }
        let u = unconditional, c = covariance
        let ee = max(0, u.ee - c.ee), nn = max(0, u.nn - c.nn), lim = (ee * nn).squareRoot()
        let en = min(max(u.en - c.en, -lim), lim)
        return Covariance2(ee: ee, en: en, nn: nn).scaled(mu - 1)
    }

    /// (μ − 1) U′ for a new GNSS fix at `t` whose bias covariance is `sb` (Σ_b = β R): the part of
    /// that fix's own error the model does not explain. Under the model a fix's error b + w has
    /// covariance U′ + R_w, U′ = φ²U + (1 − φ²)Σ_b the bias's covariance before any fix (U carried
    /// to t); μ says the bias estimate has been μ× larger than that, so the fix's error
    /// covariance is μU′ + R_w, its reported covariance plus this. nil while μ = 1, off or
    /// unprimed. Read before the fix's update: causal (`GNSSStage`'s online widening).
    public func fixExcess(at t: Double, stationary sb: Covariance2) -> Covariance2? {
        guard let mu = disagreement?.value, mu > 1, stationary != nil else { return nil }
        let phi = decay(t - time)
        return Self.relax(unconditional, toward: sb, phi * phi).scaled(mu - 1)
    }

    /// One observation of μ after an accepted fix: 2 d²/e with d² = b̂ᵀ U⁻¹ b̂ and
    /// e = 2 − tr(U⁻¹ B) (see the type's doc).
    mutating func observeBiasEstimate() {
        guard disagreement != nil, let ui = unconditional.inverse else { return }
        let b = bias, c = covariance
        let e = 2 - (ui.ee * c.ee + 2 * ui.en * c.en + ui.nn * c.nn)
        guard e >= 0.2, e.isFinite else { return }
        let d2 = b.x * (ui.ee * b.x + ui.en * b.y) + b.y * (ui.en * b.x + ui.nn * b.y)
        disagreement!.observe(nis: 2 * d2 / e)
    }

    /// The 6×6 covariance [[P, C], [Cᵀ, B]].
    public func augmented(_ p: Mat4) -> Matrix {
        var y = Matrix(rows: 6, cols: 6)
        for i in 0..<4 { for j in 0..<4 { y[i, j] = p[i, j] } }
        for i in 0..<4 { y[i, 4] = crossE[i]; y[i, 5] = crossN[i]; y[4, i] = crossE[i]; y[5, i] = crossN[i] }
        y[4, 4] = covariance.ee; y[4, 5] = covariance.en; y[5, 4] = covariance.en; y[5, 5] = covariance.nn
        return y
    }

    /// Joint update of [x; b] by a GNSS fix z with covariance Σ (already × α²), gated at `gate`
    /// on the NIS. Primes the block first if needed; `adapting`: an accepted fix feeds μ (GNSS fixes; the
    /// radio family does not, until its effect on real walks is measured). Returns the new (x, P) and the NIS, or
    /// nil when S is singular; a gated fix (NIS > gate) returns −NIS and changes nothing.
    public mutating func updateFix(_ z: SIMD2<Double>, covariance sigma: Covariance2, mean x: SIMD4<Double>, prior p: Mat4,
                                   gate: Double?, angleIndex: Int?, adapting: Bool = true) -> (mean: SIMD4<Double>, covariance: Mat4, nis: Double)? {
        var trial = self
        let sb = sigma.scaled(biasFraction), rw = sigma.scaled(1 - biasFraction)
        if trial.stationary == nil { trial.covariance = sb; trial.unconditional = sb }       // first fix: b ~ N(0, Σ_b), C = 0
        trial.stationary = sb
        let y = trial.augmented(p)
        var h = Matrix(rows: 2, cols: 6)
        h[0, 0] = 1; h[1, 1] = 1; h[0, 4] = 1; h[1, 5] = 1
        let r = Matrix([[rw.ee, rw.en], [rw.en, rw.nn]])
        let yh = y * h.transposed                                                       // P_y Hᵀ (6×2)
        let s = (h * yh + r).symmetrized
        guard let si = s.spdInverse else { return nil }
        let nu = [z.x - x[0] - trial.bias.x, z.y - x[1] - trial.bias.y]
        let nis = nu[0] * (si[0, 0] * nu[0] + si[0, 1] * nu[1]) + nu[1] * (si[1, 0] * nu[0] + si[1, 1] * nu[1])
        guard nis.isFinite else { return nil }
        if let g = gate, nis > g { return (x, p, -nis) }
        let k = yh * si                                                                 // 6×2
        let ikh = Matrix.identity(6) - k * h
        let yn = (ikh * y * ikh.transposed + k * r * k.transposed).symmetrized        // Joseph form
        var xn = x
        for i in 0..<4 { xn[i] += k[i, 0] * nu[0] + k[i, 1] * nu[1] }
        if let a = angleIndex { xn[a] = Angle.wrap(xn[a]) }
        trial.bias += SIMD2(k[4, 0] * nu[0] + k[4, 1] * nu[1], k[5, 0] * nu[0] + k[5, 1] * nu[1])
        var pn = Mat4.zero
        for i in 0..<4 { for j in 0..<4 { pn[i, j] = yn[i, j] } }
        for i in 0..<4 { trial.crossE[i] = yn[i, 4]; trial.crossN[i] = yn[i, 5] }
        trial.covariance = Covariance2(ee: yn[4, 4], en: yn[4, 5], nn: yn[5, 5])
        if adapting { trial.observeBiasEstimate() }
        self = trial
        return (xn, pn, nis)
    }
}
