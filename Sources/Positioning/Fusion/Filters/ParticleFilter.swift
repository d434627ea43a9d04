import CFastExp
import Foundation

/// Sequential importance resampling particle filter (`pf`, `docs/models.md` §7.3).
///
/// State per particle: the same 4-vector as the Kalman filters, stored as four separate
/// arrays (structure of arrays) in manually allocated buffers so the hot loops run over raw
/// pointers (class-stored Swift arrays measured 2.5–4× slower, `docs/engineering.md` §4).
///
/// 1. Proposal = the motion model with sampled noise: S1 step, L = s·L̂ + s·σ_L·ε, E += L sin ψ,
///    N += L cos ψ, ψ += Δψ + σ_Δψ·ε, s += σ_s·ε; S2 CV with the exact Gaussian of Q
///    (2 normal draws per axis for the continuous form, 1 for piecewise-constant acceleration).
/// 2. Wall constraints: a particle whose move crosses a wall segment gets weight 0 at once (the
///    weights of the others renormalised, so the output never averages dead particles); if a
///    move would kill every live particle the walls are ignored for that move and counted
///    (`wallResets`: the walk left the plan, or every hypothesis was wrong; never a dead
///    filter). The regularisation and roughening jitter never moves a particle through a wall.
///    At (re)initialisation particles are drawn in the walkable area only (`WalkableArea`:
///    inside the floor outline, outside shops; up to 50 draws each, then kept where drawn), since
///    a particle started inside a closed shop outline could never leave it.
/// 3. Weight: log wᵢ += log p(z | pᵢ) (`MeasurementModel.logLikelihood`; a closed-form Gaussian
///    for position fixes), shifted so max log w = 0; wᵢ = exp(log wᵢ)/Σ.
/// 4. N_eff = 1/Σwᵢ² < N·`resampleThreshold` (default ½) ⇒ systematic resampling (one uniform
///    draw) + optional roughening of E, N by σ = K·(range)·N^(−1/4), or regularisation
///    (Musso, Oudjane, Le Gland 2001, the regularised PF): every particle moves by a kernel
///    draw c·h·L·ε, L Lᵀ = P⁻ (the cloud covariance before the update), h = A·N^(−1/(d+4)),
///    A = (4/(d+2))^(1/(d+4)), d = 4, c = `regularization`. P⁻ is used rather than the weighted
///    posterior covariance because the latter is degenerate exactly when it is needed: a
///    likelihood much narrower than the particle spacing (centimetre TDoA against a
///    decimetre cloud) leaves one particle with all the weight, and without the kernel the
///    reported covariance is ~0 (NEES 10³⁰).
/// 5. Output: weighted mean (circular for ψ) and covariance. If every weight underflows the
///    update is rejected (`.singular`) and the cloud is kept.
/// 6. GNSS bias (`gnssBias`, the model of `GNSSBias`), Rao–Blackwellised (Doucet, de Freitas,
///    Murphy & Russell 2000). It serves one family of fixes at a time, as the Kalman filters'
///    block does (`FusionTrack.biasFamily`): GNSS fixes (the stage's β, τ), or radio-map fixes
///    that carry a fitted error correlation (`Fix.errorCorrelation`: their β, τ; a WiFi fix's
///    error is mostly one bias with a 20–30 s correlation time, docs/fusion.md). Given a
///    particle's positions the bias b = [b_E, b_N] is linear-Gaussian, so each particle carries its conditional mean mᵢ and all share one covariance B
///    (the same fixes, the same R: B evolves alike for every particle). Predict mᵢ ← φmᵢ,
///    B ← φ²B + (1 − φ²)Σ_b; a GNSS fix weighs particle i by N(z; pᵢ + mᵢ, B + R_w) and then
///    updates mᵢ += K(z − pᵢ − mᵢ), B ← B − K(B + R_w)Kᵀ, K = B(B + R_w)⁻¹. At the first fix
///    mᵢ = 0, B = Σ_b; at a fix z that starts the filter (pᵢ ~ N(z, Σ)) the conditional of the
///    joint p = z − b − w: mᵢ = −Σ_bΣ⁻¹(pᵢ − z), B = Σ_b − Σ_bΣ⁻¹Σ_b. Resampling carries mᵢ.
/// 7. Lineage (`tracksLineage`, for the particle smoother `ParticleSmoother`): each particle
///    carries the index of its ancestor in the last sealed cloud (`seal`); resampling passes it
///    on to the offspring, a (re)start sets it to −1. The sealed clouds with these parent
///    indices are the SIR filter's genealogy: following them back from the last cloud gives
///    the particle approximation of the joint smoothing distribution (Kitagawa 1996).
/// Seeded xoshiro256** + ziggurat normals: one seed, identical output.
///
/// Speed (benchmark `posfuse-bench filters`, ≈ 17–18 ns per particle-step at 100k particles in
/// the CV model): weights through the batch exp (`posfuse_exp_batch`), N_eff from the same pass,
/// branch-free systematic resampling into an ancestor index, and the gather of the ancestors'
/// states fused into the next CV prediction (pointer swap instead of a copy).
public final class ParticleFilter: FusionFilter {
    public var motion: MotionConfiguration
    public let count: Int
    public var resampleThreshold = 0.5
    /// Gordon's roughening constant K (0 = none).
    public var roughening = 0.0
    /// Kernel bandwidth factor c of the regularised PF (0 = none, 1 = Musso's optimal h for a
    /// Gaussian posterior).
    public var regularization = 0.0
    /// Cholesky factor of the cloud covariance before the last update (the kernel shape).
    private var priorFactor: Mat4?
    public var walls: [Wall] = [] { didSet { walkable = WalkableArea(walls: walls) } }
    private var walkable = WalkableArea(walls: [])
    /// Moves in which every live particle crossed a wall (the walls were then ignored).
    public private(set) var wallResets = 0
    /// Particles whose last move crossed a wall (`applyWallHits`).
    private let hit: UnsafeMutablePointer<Bool>
    /// The GNSS bias model (τ_b, β); nil = GNSS fixes weigh the position alone. A radio-map
    /// fix that takes the bias adopts its own β, τ here (`GNSSBias.adopt`).
    public var gnssBias: GNSSBias?
    /// The family of fixes the started bias serves (nil: not started).
    private var biasFamily: FusionTrack.BiasFamily?
    /// Keep each particle's ancestor index in the last sealed cloud (`seal`).
    public var tracksLineage = false {
        didSet { if tracksLineage && lineage == nil { lineage = .allocate(capacity: count); lineage!.initialize(repeating: -1, count: count) } }
    }
    private var lineage: UnsafeMutablePointer<Int32>?
    /// Σ_b of the last GNSS fix; nil until the first GNSS fix.
    private var biasStationary: Covariance2?
    /// B, the bias covariance shared by every particle's conditional.
    private var biasCovariance = Covariance2.zero
    private var biasTime = 0.0
    public private(set) var isInitialized = false
    public private(set) var time = 0.0
    /// Number of resampling events so far.
    public private(set) var resampleCount = 0
    /// Effective sample size after the last update.
    public private(set) var effectiveSampleSize: Double

    var rng: Xoshiro256
    let normal = ZigguratNormal.shared
    private(set) var a0, a1, a2, a3: UnsafeMutablePointer<Double>     // E, N, ψ|vE, s|vN
    private var b0, b1, b2, b3: UnsafeMutablePointer<Double>          // resampling scratch (b0: candidate log weights)
    private var c0, c1, d0, d1: UnsafeMutablePointer<Double>          // GNSS bias means m_E, m_N and their scratch
    let lw: UnsafeMutablePointer<Double>                 // log weights (max 0)
    let w: UnsafeMutablePointer<Double>                  // normalised weights
    /// Source particle of each slot after a resampling not yet carried out (`ancestorsPending`):
    /// the next CV prediction reads through it (one pass instead of gather + predict), anything
    /// else gathers first (`gatherAncestors`).
    private let ancestor: UnsafeMutablePointer<Int32>
    private var ancestorsPending = false
    /// The bias arrays still wait for the last resampling's ancestors (gathered separately,
    /// since the CV prediction gathers the position arrays on the fly).
    private var biasAncestorsPending = false
    private var cached: (SIMD4<Double>, Mat4)?

    public init(motion: MotionConfiguration, count: Int, seed: UInt64) {
        precondition(count > 0)
        self.motion = motion; self.count = count
        rng = Xoshiro256(seed: seed)
        func buf() -> UnsafeMutablePointer<Double> {
            let p = UnsafeMutablePointer<Double>.allocate(capacity: count); p.initialize(repeating: 0, count: count); return p
        }
        precondition(count < Int(Int32.max))
        a0 = buf(); a1 = buf(); a2 = buf(); a3 = buf(); b0 = buf(); b1 = buf(); b2 = buf(); b3 = buf(); lw = buf(); w = buf()
        c0 = buf(); c1 = buf(); d0 = buf(); d1 = buf()
        ancestor = .allocate(capacity: count); ancestor.initialize(repeating: 0, count: count)
        hit = .allocate(capacity: count); hit.initialize(repeating: false, count: count)
        effectiveSampleSize = Double(count)
        for i in 0..<count { w[i] = 1 / Double(count) }
    }
    deinit { for p in [a0, a1, a2, a3, b0, b1, b2, b3, lw, w, c0, c1, d0, d1] { p.deallocate() }; ancestor.deallocate(); hit.deallocate(); lineage?.deallocate() }

    public func initialize(mean: SIMD4<Double>, covariance: Mat4, time: Double) {
        ancestorsPending = false; biasAncestorsPending = false
        let l = covariance.cholesky ?? Mat4.diagonal(pointwiseMax(covariance.diagonal, .zero).squareRoot())
        for i in 0..<count {
            var e = SIMD4(normal.next(&rng), normal.next(&rng), normal.next(&rng), normal.next(&rng))
            var x = mean + l * e
            var tries = 1
            while tries < 50, !walkable.isEmpty, !walkable.contains(SIMD2(x[0], x[1])) {
                e = SIMD4(normal.next(&rng), normal.next(&rng), normal.next(&rng), normal.next(&rng))
                x = mean + l * e; tries += 1
            }
            if let a = motion.layout.angleIndex { x[a] = Angle.wrap(x[a]) }
            a0[i] = x[0]; a1[i] = x[1]; a2[i] = x[2]; a3[i] = x[3]; lw[i] = 0; w[i] = 1 / Double(count)
        }
        self.time = time; isInitialized = true; cached = nil; effectiveSampleSize = Double(count)
        biasStationary = nil; biasTime = time; biasFamily = nil
        lineage?.update(repeating: -1, count: count)
    }

    // MARK: GNSS bias

    /// Starts the bias: mᵢ = 0, B = Σ_b.
    private func startBias(_ sb: Covariance2, family: FusionTrack.BiasFamily) {
        for i in 0..<count { c0[i] = 0; c1[i] = 0 }
        biasStationary = sb; biasCovariance = sb; biasTime = time; biasFamily = family
    }

    /// The filter was started at a fix z of a bias family with covariance Σ (particles
    /// pᵢ ~ N(z, Σ)): the start's error is −(b + w), so mᵢ = −Σ_bΣ⁻¹(pᵢ − z),
    /// B = Σ_b − Σ_bΣ⁻¹Σ_b. A radio-map fix brings its own β, τ (`correlation`). Nil: no bias yet.
    func primeBias(startingAt sigma: Covariance2?, family: FusionTrack.BiasFamily = .gnss, correlation: ErrorCorrelation? = nil,
                          fix z: SIMD2<Double>) {
        guard gnssBias != nil, let sigma, let si = sigma.inverse else { biasStationary = nil; biasFamily = nil; return }
        if family == .radio { gnssBias!.adopt(correlation) }
        let model = gnssBias!
        gatherAncestors()
        let sb = sigma.scaled(model.biasFraction)
        let (g, b) = Self.condition(sb, inverse: si)
        for i in 0..<count {
            let d = SIMD2(a0[i] - z.x, a1[i] - z.y)
            c0[i] = -(g.0 * d).sum(); c1[i] = -(g.1 * d).sum()
        }
        biasStationary = sb; biasTime = time; biasCovariance = b; biasFamily = family
    }

    /// For A and S⁻¹ (2×2 symmetric): the gain G = A S⁻¹ (rows) and A − G A — the Gaussian
    /// conditioning step of both the start prime (A = Σ_b, S = Σ) and a GNSS update (A = B, S = B + R_w).
    private static func condition(_ a: Covariance2, inverse si: Covariance2) -> (gain: (SIMD2<Double>, SIMD2<Double>), remainder: Covariance2) {
        let g0 = SIMD2(a.ee * si.ee + a.en * si.en, a.ee * si.en + a.en * si.nn)
        let g1 = SIMD2(a.en * si.ee + a.nn * si.en, a.en * si.en + a.nn * si.nn)
        return ((g0, g1), Covariance2(ee: a.ee - (g0.x * a.ee + g0.y * a.en), en: a.en - (g0.x * a.en + g0.y * a.nn),
                                      nn: a.nn - (g1.x * a.en + g1.y * a.nn)))
    }

    /// Gauss–Markov prediction of the bias to the filter's time.
    private func propagateBias() {
        guard let model = gnssBias, let sb = biasStationary, time > biasTime else { return }
        gatherBias()
        let phi = model.decay(time - biasTime), a = phi * phi
        for i in 0..<count { c0[i] *= phi; c1[i] *= phi }
        let b = biasCovariance
        biasCovariance = Covariance2(ee: a * b.ee + (1 - a) * sb.ee, en: a * b.en + (1 - a) * sb.en, nn: a * b.nn + (1 - a) * sb.nn)
        biasTime = time
    }

    /// A pending resampling, for the bias arrays (the position arrays may be gathered on the fly).
    private func gatherBias() {
        guard biasAncestorsPending else { return }
        biasAncestorsPending = false
        for i in 0..<count { let k = Int(ancestor[i]); d0[i] = c0[k]; d1[i] = c1[k] }
        swap(&c0, &d0); swap(&c1, &d1)
    }

    // MARK: prediction

    public func predict(to t: Double) {
        guard isInitialized, t > time else { if !isInitialized { time = max(time, t) }; return }
        let dt = t - time
        time = t; cached = nil
        gatherBias()
        defer { propagateBias() }
        switch motion.layout {
        case .constantVelocity: predictCV(dt: dt)
        case .step:
            gatherAncestors()
            let sm = motion.step
            let sp = (sm.positionDiffusion * dt).squareRoot(), sh = (sm.headingDiffusion * dt).squareRoot()
            let ss = (sm.scaleDiffusion * dt).squareRoot()
            for i in 0..<count {
                let oe = a0[i], on = a1[i]
                a0[i] += sp * normal.next(&rng); a1[i] += sp * normal.next(&rng)
                a2[i] = Angle.wrap(a2[i] + sh * normal.next(&rng)); a3[i] += ss * normal.next(&rng)
                hit[i] = !walls.isEmpty && crossesWall(SIMD2(oe, on), SIMD2(a0[i], a1[i]))
            }
            applyWallHits()
        }
    }

    /// CV propagation with exact sampling of Q (see type doc). After a resampling, particle i
    /// starts from its ancestor's state: read through `ancestor` into the scratch buffers, which
    /// then become the particles (pointer swap).
    func predictCV(dt: Double) {
        let cv = motion.constantVelocity
        let n = count
        var g = rng
        let z = normal
        let walled = !walls.isEmpty
        let src = ancestorsPending ? ancestor : nil
        let (s0, s1, s2, s3) = (a0, a1, a2, a3)
        let (d0, d1, d2, d3) = ancestorsPending ? (b0, b1, b2, b3) : (a0, a1, a2, a3)
        switch cv.noiseForm {
        case .piecewiseConstantAcceleration:
            // position noise ½Δt²·a, velocity noise Δt·a, a ~ N(0, q)
            let sa = cv.q.squareRoot() * dt, sp = 0.5 * dt * sa
            for i in 0..<n {
                let k = src.map { Int($0[i]) } ?? i
                let ax = z.next(&g), ay = z.next(&g)
                let oe = s0[k], on = s1[k], ve = s2[k], vn = s3[k]
                d0[i] = oe + ve * dt + sp * ax; d1[i] = on + vn * dt + sp * ay
                d2[i] = ve + sa * ax; d3[i] = vn + sa * ay
                if walled { hit[i] = crossesWall(SIMD2(oe, on), SIMD2(d0[i], d1[i])) }
            }
        case .continuous:
            // Cholesky of q[[Δt³/3, Δt²/2],[Δt²/2, Δt]]: l11 = √(qΔt³/3), l21 = √q·(Δt²/2)/√(Δt³/3), l22 = √(qΔt/4)
            let l11 = (cv.q * dt * dt * dt / 3).squareRoot()
            let l21 = cv.q.squareRoot() * (dt * dt / 2) / (dt * dt * dt / 3).squareRoot()
            let l22 = (cv.q * dt / 4).squareRoot()
            for i in 0..<n {
                let k = src.map { Int($0[i]) } ?? i
                let u0 = z.next(&g), u1 = z.next(&g), u2 = z.next(&g), u3 = z.next(&g)
                let oe = s0[k], on = s1[k], ve = s2[k], vn = s3[k]
                d0[i] = oe + ve * dt + l11 * u0; d1[i] = on + vn * dt + l11 * u2
                d2[i] = ve + l21 * u0 + l22 * u1; d3[i] = vn + l21 * u2 + l22 * u3
                if walled { hit[i] = crossesWall(SIMD2(oe, on), SIMD2(d0[i], d1[i])) }
            }
        }
        rng = g
        if ancestorsPending { swapScratch(); ancestorsPending = false }
        if walled { applyWallHits() }
    }

    /// Kills the particles whose move crossed a wall (`hit`): log weight −∞, weight 0, the others
    /// renormalised. If no live particle would remain, nothing is killed (`wallResets`).
    private func applyWallHits() {
        guard !walls.isEmpty else { return }
        var alive = 0, killed = 0
        for i in 0..<count where lw[i] > -.infinity { if hit[i] { killed += 1 } else { alive += 1 } }
        guard killed > 0 else { return }
        guard alive > 0 else { wallResets += 1; return }
        var sum = 0.0
        for i in 0..<count {
            if hit[i] { lw[i] = -.infinity; w[i] = 0 }
            sum += w[i]
        }
        if sum > 0 {
            let inv = 1 / sum
            for i in 0..<count { w[i] *= inv }
        } else {
            // The survivors carried no weight (underflow): uniform over them.
            for i in 0..<count { w[i] = lw[i] > -.infinity ? 1 / Double(alive) : 0 }
        }
        cached = nil
    }

    /// Carries out a pending resampling: slot i takes its ancestor's state.
    func gatherAncestors() {
        guard ancestorsPending else { return }
        gatherBias()
        for i in 0..<count {
            let k = Int(ancestor[i])
            b0[i] = a0[k]; b1[i] = a1[k]; b2[i] = a2[k]; b3[i] = a3[k]
        }
        swapScratch()
        ancestorsPending = false
    }

    private func swapScratch() { swap(&a0, &b0); swap(&a1, &b1); swap(&a2, &b2); swap(&a3, &b3) }

    public func predict(step: StepInput) {
        guard motion.layout == .step else { predict(to: step.time); return }
        predict(to: step.time)
        guard isInitialized else { return }
        gatherAncestors()
        cached = nil
        let sm = motion.step
        let sl = sm.lengthSigmaFraction * step.length, sh = step.isPartial ? 0 : sm.headingSigmaPerStep, ss = step.isPartial ? 0 : sm.scaleSigmaPerStep
        for i in 0..<count {
            // Turn by the gyroscope's Δψ first, then walk the step (`StepMotionModel`).
            let s = a3[i], psi = a2[i] + step.headingChange
            let l = s * step.length + s * sl * normal.next(&rng)
            let oe = a0[i], on = a1[i]
            a0[i] = oe + l * sin(psi); a1[i] = on + l * cos(psi)
            a2[i] = Angle.wrap(psi + sh * normal.next(&rng))
            a3[i] = s + ss * normal.next(&rng)
            hit[i] = !walls.isEmpty && crossesWall(SIMD2(oe, on), SIMD2(a0[i], a1[i]))
        }
        applyWallHits()
    }

    /// Whether segment p→q properly intersects any wall (orientation test).
    func crossesWall(_ p: SIMD2<Double>, _ q: SIMD2<Double>) -> Bool {
        @inline(__always) func cross(_ a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double { a.x * b.y - a.y * b.x }
        let d = q - p
        for wl in walls {
            let e = wl.b - wl.a
            let den = cross(d, e)
            if abs(den) < 1e-12 { continue }
            let t = cross(wl.a - p, e) / den, u = cross(wl.a - p, d) / den
            if t > 0, t <= 1, u >= 0, u <= 1 { return true }
        }
        return false
    }

    // MARK: update

    /// Gaussian position likelihood, allocation-free (benchmarked). Returns false if every
    /// weight vanished (the update is then undone).
    @discardableResult
    public func updatePosition(_ z: SIMD2<Double>, ree: Double, ren: Double, rnn: Double) -> Bool {
        let det = ree * rnn - ren * ren
        guard det > 0 else { return false }
        let i00 = rnn / det, i01 = -ren / det, i11 = ree / det
        gatherAncestors()
        let n = count
        var mx = -Double.infinity
        for i in 0..<n {
            let dx = a0[i] - z.x, dy = a1[i] - z.y
            let l = lw[i] - 0.5 * (i00 * dx * dx + 2 * i01 * dx * dy + i11 * dy * dy)
            b0[i] = l                                           // b0 = candidate log weights
            mx = l > mx ? l : mx
        }
        return commitWeights(maxLog: mx)
    }

    /// Shift candidate log weights (in b0) by their max, N_eff = (Σeᵢ)²/Σeᵢ² from the unnormalised
    /// eᵢ = exp(lᵢ − max) in the same pass; resample from the eᵢ, or normalise them.
    private func commitWeights(maxLog mx: Double) -> Bool {
        guard mx.isFinite else { return false }
        let n = count
        // The shifted log weights, their exp in one batch (`posfuse_exp_batch`: the C library's
        // exp, four at a time where the CPU allows), then the sums four lanes at a time.
        for i in 0..<n { lw[i] = b0[i] - mx }
        posfuse_exp_batch(lw, w, n)
        var sum4 = SIMD4<Double>(), sq4 = SIMD4<Double>()
        var i = 0
        while i + 4 <= n {
            let e = UnsafeRawPointer(w + i).loadUnaligned(as: SIMD4<Double>.self)
            sum4 += e; sq4 += e * e
            i += 4
        }
        while i < n { let e = w[i]; sum4[0] += e; sq4[0] += e * e; i += 1 }
        let sum = sum4.sum(), sq = sq4.sum()
        effectiveSampleSize = sum * sum / sq
        cached = nil
        if effectiveSampleSize < resampleThreshold * Double(n) {
            resample(weightSum: sum)
        } else {
            let inv = 1 / sum
            for i in 0..<n { w[i] *= inv }
        }
        priorFactor = nil
        return true
    }

    /// Systematic resampling: one u₀ ~ U[0, W/N), pointers uᵢ = u₀ + iW/N through the cumulative
    /// weights Cⱼ (W = Σwᵢ; the weights need not be normalised). Slot i's ancestor is the first j
    /// with Cⱼ ≥ uᵢ, i.e. the number of j with eⱼ ≤ i, where eⱼ = #{i : uᵢ ≤ Cⱼ} =
    /// ⌊(Cⱼ − u₀)N/W⌋ + 1 (0 when Cⱼ < u₀): count the eⱼ, then a prefix sum. Two branch-free
    /// passes instead of the textbook while-loop, whose data-dependent exits mispredicted on
    /// most particles (measured: 20 % of a 100k-particle step). The ancestors are gathered
    /// lazily (`ancestor`).
    func resample(weightSum total: Double = 1) {
        gatherAncestors()
        let n = count, step = total / Double(n), inv = Double(n) / total
        let u0 = rng.uniform() * step
        ancestor.update(repeating: 0, count: n)
        var c = 0.0
        for j in 0..<n {
            c += w[j]
            let x = (c - u0) * inv
            let e = x < 0 ? 0 : Swift.min(Int(Swift.min(x, Double(n))) + 1, n)
            if e < n { ancestor[e] &+= 1 }
        }
        var s: Int32 = 0
        let last = Int32(n - 1)
        for i in 0..<n { s &+= ancestor[i]; ancestor[i] = Swift.min(s, last) }
        ancestorsPending = true
        biasAncestorsPending = biasStationary != nil
        if let lin = lineage {
            // Offspring inherit the ancestor's lineage now (the positions are gathered lazily).
            for i in 0..<n { b0[i] = Double(lin[Int(ancestor[i])]) }
            for i in 0..<n { lin[i] = Int32(b0[i]) }
        }
        let uniform = 1 / Double(n)
        for i in 0..<n { lw[i] = 0; w[i] = uniform }
        effectiveSampleSize = Double(n)
        resampleCount += 1
        if roughening > 0 { gatherAncestors(); roughen() }
        if regularization > 0, let l = priorFactor { gatherAncestors(); regularize(l) }
        cached = nil
    }

    /// Kernel jitter x ← x + c·h·L·ε (see the type's documentation, step 4).
    private func regularize(_ l: Mat4) {
        let d = 4.0, n = Double(count)
        let h = regularization * pow(4 / (d + 2), 1 / (d + 4)) * pow(n, -1 / (d + 4))
        let k = h * l
        let angle = motion.layout.angleIndex
        for i in 0..<count {
            let e = SIMD4(normal.next(&rng), normal.next(&rng), normal.next(&rng), normal.next(&rng))
            let j = k * e
            // Jitter is not motion: it may not carry a particle through a wall.
            if !walls.isEmpty, crossesWall(SIMD2(a0[i], a1[i]), SIMD2(a0[i] + j[0], a1[i] + j[1])) { continue }
            a0[i] += j[0]; a1[i] += j[1]; a2[i] += j[2]; a3[i] += j[3]
            if angle == 2 { a2[i] = Angle.wrap(a2[i]) }
        }
    }

    private func roughen() {
        let n = count
        var lo = SIMD2(Double.infinity, .infinity), hi = -lo
        for i in 0..<n { let p = SIMD2(a0[i], a1[i]); lo = pointwiseMin(lo, p); hi = pointwiseMax(hi, p) }
        let k = roughening * pow(Double(n), -0.25)
        let s = k * (hi - lo)
        for i in 0..<n {
            let q = SIMD2(a0[i] + s.x * normal.next(&rng), a1[i] + s.y * normal.next(&rng))
            if !walls.isEmpty, crossesWall(SIMD2(a0[i], a1[i]), q) { continue }       // not through a wall
            a0[i] = q.x; a1[i] = q.y
        }
    }

    public func update(_ m: any MeasurementModel, gate: Double?) -> UpdateRecord {
        let dim = m.dimension
        func record(_ nis: Double?, _ g: Double?, _ o: UpdateRecord.Outcome) -> UpdateRecord {
            UpdateRecord(time: m.time, source: m.source, dimension: dim, nis: nis, gate: g, outcome: o)
        }
        guard isInitialized else { return record(nil, gate, .uninitialized) }
        guard m.observedBlock.indices(in: motion.layout) != nil else { return record(nil, gate, .unobservable) }
        gatherAncestors()
        let (mu, p) = estimate()
        priorFactor = regularization > 0 ? p.cholesky : nil
        if var model = gnssBias, let pm = m.asPosition,
           let family = FusionTrack.biasFamily(source: pm.source, correlation: pm.errorCorrelation),
           biasFamily == nil || biasFamily == family {
            // GNSS fixes keep the stage's β, τ; a radio-map fix brings its own (as the ekf's block).
            if family == .radio { model.adopt(pm.errorCorrelation) }
            return updateBiased(pm, model: model, family: family, gate: gate)
        }
        let pos = m.argument(mu, layout: motion.layout)!
        let velocity = m.observedBlock == .velocity
        // NIS from the cloud's moments (linearised): S = H P Hᵀ + R, for logging and gating.
        var nis: Double?
        let isInequality = m.asInequality != nil
        if !isInequality {
            let h = m.stateJacobian(mu, layout: motion.layout)!
            var s = m.noise
            for i in 0..<dim { for j in 0..<dim { s[i, j] += (h[i] * (p * h[j])).sum() } }
            if let si = s.spdInverse {
                let nu = m.innovation(m.predict(pos))
                var d = 0.0
                for i in 0..<dim { for j in 0..<dim { d += nu[i] * si[i, j] * nu[j] } }
                nis = d
                if let g = gate, d > g { return record(d, g, .gated) }
            }
        }
        let ok: Bool
        if let pm = m.asPosition {
            let r = pm.covariance
            ok = updatePosition(SIMD2(pm.z[0], pm.z[1]), ree: r.ee, ren: r.en, rnn: r.nn)
        } else {
            var mx = -Double.infinity
            for i in 0..<count {
                let l = lw[i] + m.logLikelihood(velocity ? SIMD2(a2[i], a3[i]) : SIMD2(a0[i], a1[i]))
                b0[i] = l.isNaN ? -.infinity : l
                mx = Swift.max(mx, b0[i])
            }
            ok = commitWeights(maxLog: mx)
        }
        return record(nis, isInequality ? nil : gate, ok ? .accepted : .singular)
    }

    /// A GNSS fix z = p + b + w (Rao–Blackwellised, see the type's step 6). NIS from the
    /// moments of the particles' pᵢ + mᵢ plus B + R_w (B = Σ_b, mᵢ = 0 before the first fix).
    private func updateBiased(_ m: PositionMeasurement, model: GNSSBias, family: FusionTrack.BiasFamily, gate: Double?) -> UpdateRecord {
        let sigma = m.covariance
        let sb = sigma.scaled(model.biasFraction), rw = sigma.scaled(1 - model.biasFraction)
        func record(_ nis: Double?, _ o: UpdateRecord.Outcome) -> UpdateRecord {
            UpdateRecord(time: m.time, source: m.source, dimension: 2, nis: nis, gate: gate, outcome: o)
        }
        let started = biasStationary != nil
        let b = started ? biasCovariance : sb
        var q = SIMD2<Double>.zero, qee = 0.0, qen = 0.0, qnn = 0.0
        for i in 0..<count { q += w[i] * SIMD2(a0[i] + (started ? c0[i] : 0), a1[i] + (started ? c1[i] : 0)) }
        for i in 0..<count {
            let d = SIMD2(a0[i] + (started ? c0[i] : 0), a1[i] + (started ? c1[i] : 0)) - q
            qee += w[i] * d.x * d.x; qen += w[i] * d.x * d.y; qnn += w[i] * d.y * d.y
        }
        let sbr = Covariance2(ee: b.ee + rw.ee, en: b.en + rw.en, nn: b.nn + rw.nn)     // B + R_w
        let s = Covariance2(ee: qee + sbr.ee, en: qen + sbr.en, nn: qnn + sbr.nn)
        let z = SIMD2(m.z[0], m.z[1])
        guard let nis = s.mahalanobis2(z - q), let si = sbr.inverse else { return record(nil, .singular) }
        if let g = gate, nis > g { return record(nis, .gated) }
        gnssBias = model
        if started { biasStationary = sb } else { startBias(sb, family: family) }
        var mx = -Double.infinity
        for i in 0..<count {
            let dx = z.x - a0[i] - c0[i], dy = z.y - a1[i] - c1[i]
            let l = lw[i] - 0.5 * (si.ee * dx * dx + 2 * si.en * dx * dy + si.nn * dy * dy)
            b0[i] = l; mx = l > mx ? l : mx
        }
        // K = B (B + R_w)⁻¹, then mᵢ += K νᵢ and B ← B − K (B + R_w) Kᵀ = B − K B.
        let (k, remainder) = Self.condition(b, inverse: si)
        for i in 0..<count {
            let d = SIMD2(z.x - a0[i] - c0[i], z.y - a1[i] - c1[i])
            c0[i] += (k.0 * d).sum(); c1[i] += (k.1 * d).sum()
        }
        biasCovariance = remainder
        return record(nis, commitWeights(maxLog: mx) ? .accepted : .singular)
    }

    public func updateHeading(_ z: Double, variance: Double, time t: Double, gate: Double?) -> UpdateRecord {
        guard isInitialized, motion.layout == .step else {
            return UpdateRecord(time: t, source: .pf, dimension: 1, nis: nil, gate: gate, outcome: .uninitialized)
        }
        gatherAncestors()
        let (mu, p) = estimate()
        priorFactor = regularization > 0 ? p.cholesky : nil
        let nu0 = Angle.wrap(z - mu[2])
        let nis = nu0 * nu0 / (p[2, 2] + variance)
        if let g = gate, nis > g { return UpdateRecord(time: t, source: .pf, dimension: 1, nis: nis, gate: g, outcome: .gated) }
        var mx = -Double.infinity
        for i in 0..<count {
            let d = Angle.wrap(z - a2[i])
            let l = lw[i] - 0.5 * d * d / variance
            b0[i] = l; mx = Swift.max(mx, l)
        }
        let ok = commitWeights(maxLog: mx)
        return UpdateRecord(time: t, source: .pf, dimension: 1, nis: nis, gate: gate, outcome: ok ? .accepted : .singular)
    }

    // MARK: output

    /// Weighted mean (ψ circular) and covariance of the cloud.
    public func estimate() -> (SIMD4<Double>, Mat4) {
        if let c = cached { return c }
        gatherAncestors()
        var m = SIMD4<Double>.zero
        var sn = 0.0, cs = 0.0
        for i in 0..<count {
            let wi = w[i]
            m += wi * SIMD4(a0[i], a1[i], a2[i], a3[i])
            if motion.layout == .step { sn += wi * sin(a2[i]); cs += wi * cos(a2[i]) }
        }
        if motion.layout == .step { m[2] = atan2(sn, cs) }
        var p = Mat4.zero
        for i in 0..<count {
            var d = SIMD4(a0[i], a1[i], a2[i], a3[i]) - m
            if motion.layout == .step { d[2] = Angle.wrap(d[2]) }
            p = p + w[i] * Mat4.outer(d, d)
        }
        let r = (m, p.symmetrized)
        cached = r
        return r
    }
    public var mean: SIMD4<Double> { estimate().0 }
    public var covariance: Mat4 { estimate().1 }

    /// Particle positions and weights (copies; for tests and plots).
    public var particles: [(position: SIMD2<Double>, weight: Double)] {
        gatherAncestors()
        return (0..<count).map { (SIMD2(a0[$0], a1[$0]), w[$0]) }
    }

    /// The cloud as it is now (positions, normalised weights) with each particle's parent in
    /// the last sealed cloud, which this one replaces as the lineage's reference: from here on
    /// each particle's lineage is its own index. `previous`: this same epoch's earlier seal
    /// (several outputs at one epoch), whose parents the new seal composes with. Nil without
    /// `tracksLineage`.
    public func seal(replacing previous: SealedCloud? = nil) -> SealedCloud? {
        guard let lin = lineage, isInitialized else { return nil }
        gatherAncestors()
        var parent = [Int32](repeating: -1, count: count)
        for i in 0..<count {
            let k = lin[i]
            if let p = previous { parent[i] = k >= 0 ? p.parent[Int(k)] : -1 } else { parent[i] = k }
            lin[i] = Int32(i)
        }
        return SealedCloud(east: Array(UnsafeBufferPointer(start: a0, count: count)), north: Array(UnsafeBufferPointer(start: a1, count: count)),
                           weight: Array(UnsafeBufferPointer(start: w, count: count)), parent: parent)
    }

    final class Cloud {
        let data: [Double]; let rng: Xoshiro256
        let bias: (stationary: Covariance2?, covariance: Covariance2, time: Double, family: FusionTrack.BiasFamily?, model: GNSSBias?)
        let lineage: [Int32]?
        init(data: [Double], rng: Xoshiro256, bias: (stationary: Covariance2?, covariance: Covariance2, time: Double, family: FusionTrack.BiasFamily?, model: GNSSBias?),
             lineage: [Int32]?) {
            self.data = data; self.rng = rng; self.bias = bias; self.lineage = lineage
        }
    }
    private var snapshotBuffers: [UnsafeMutablePointer<Double>] { biasStationary == nil ? [a0, a1, a2, a3, lw, w] : [a0, a1, a2, a3, lw, w, c0, c1] }
    public func snapshot() -> FilterSnapshot {
        gatherAncestors()
        let buffers = snapshotBuffers
        var d = [Double](); d.reserveCapacity(buffers.count * count)
        for p in buffers { d.append(contentsOf: UnsafeBufferPointer(start: p, count: count)) }
        let (mu, p) = isInitialized ? estimate() : (SIMD4<Double>.zero, Mat4.identity)
        return FilterSnapshot(time: time, mean: mu, covariance: p, initialized: isInitialized,
                              payload: Cloud(data: d, rng: rng, bias: (biasStationary, biasCovariance, biasTime, biasFamily, gnssBias),
                                             lineage: lineage.map { Array(UnsafeBufferPointer(start: $0, count: count)) }))
    }
    public func restore(_ s: FilterSnapshot) {
        time = s.time; isInitialized = s.initialized; cached = nil; ancestorsPending = false; biasAncestorsPending = false
        guard let c = s.payload as? Cloud else { return }
        (biasStationary, biasCovariance, biasTime, biasFamily, gnssBias) = c.bias
        if let l = c.lineage, let lin = lineage { l.withUnsafeBufferPointer { lin.update(from: $0.baseAddress!, count: count) } }
        let buffers = snapshotBuffers
        c.data.withUnsafeBufferPointer { d in
            for (k, p) in buffers.enumerated() { p.update(from: d.baseAddress! + k * count, count: count) }
        }
        rng = c.rng
    }
}

/// One sealed particle cloud (`ParticleFilter.seal`): positions (E, N, m), normalised weights
/// and each particle's parent index in the previous sealed cloud (−1: the filter was (re)started
/// in between). Immutable, so epochs can share it.
public final class SealedCloud: Sendable {
    public let east: [Double], north: [Double], weight: [Double]
    public let parent: [Int32]
    public init(east: [Double], north: [Double], weight: [Double], parent: [Int32]) {
        self.east = east; self.north = north; self.weight = weight; self.parent = parent
    }
}
