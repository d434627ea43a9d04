import Foundation
import Testing
@testable import Positioning


private func norm(_ v: SIMD2<Double>) -> Double { (v * v).sum().squareRoot() }
/// FusionStage (ekf/ukf/pf pipeline stages) and PDR behaviour on synthetic input.
@Suite struct FusionStageTests {
    let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))

    func fix(_ t: Double, _ p: SIMD2<Double>, sigma: Double = 3) -> StageResult {
        .fix(Fix(time: t, position: p, covariance: Covariance2(sigma: sigma), source: .gnss))
    }
    /// Feeds upstream fixes (no IMU: constant-velocity layout); returns the stage's fixes.
    func run(_ stage: FusionStage, _ fixes: [StageResult]) -> [Fix] {
        var out: [Fix] = []
        for f in fixes {
            guard case .fix(let x) = f else { continue }
            let e = TraceEvent(time: x.time, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 3)))
            for r in stage.process(e, upstream: [f], context: context) { if case .fix(let y) = r { out.append(y) } }
        }
        return out
    }

    /// A serving cell's fix repeated unchanged carries no new information: with `repeat_inflation`
    /// (default) the k-th repeat enters with R × k, so 30 repeats leave a much larger covariance than
    /// 30 independent-looking updates; fixes that differ (GNSS noise) are untouched by the option.
    @Test func repeatedFixesAreNotCountedAsNew() throws {
        func cell(_ t: Double) -> StageResult {
            .fix(Fix(time: t, position: SIMD2(400, -250), covariance: Covariance2(sigma: 300), source: .cell))
        }
        var off = FusionStage.Settings(kind: .ekf); off.repeatInflation = false
        let on = FusionStage.Settings(kind: .ekf)
        #expect(on.repeatInflation)
        let repeats = (0..<30).map { cell(Double($0)) }
        let a = try #require(run(FusionStage(settings: on), repeats).last), b = try #require(run(FusionStage(settings: off), repeats).last)
        #expect(a.covariance.ee > 2 * b.covariance.ee, "σ_E \(a.covariance.ee.squareRoot()) vs \(b.covariance.ee.squareRoot()) m")
        var rng = TestRNG(seed: 5)
        let distinct = (0..<30).map { k in fix(Double(k), SIMD2(3 * rng.gaussian(), 3 * rng.gaussian())) }
        let c = try #require(run(FusionStage(settings: on), distinct).last), d = try #require(run(FusionStage(settings: off), distinct).last)
        #expect(c.position == d.position && c.covariance == d.covariance)
    }

    /// A late fix rewinds and replays: the final estimate equals in-order processing exactly
    /// (same arithmetic in the same order), for the EKF and the UKF.
    /// One cell report gives a `cell` and a `cell-ta` fix; the second contains the first, so
    /// (default `supersede`) only `cell-ta` updates the filter — the posterior equals fusing
    /// `cell-ta` alone — while a `cell` fix on its own (no TA that epoch) is still used. With
    /// `supersede: false` both update (the old double count: a smaller, overconfident P).
    @Test func supersedingFixReplacesTheOneItContains() throws {
        func event(_ t: Double, ta: Bool) -> [StageResult] {
            var r: [StageResult] = [.fix(Fix(time: t, position: SIMD2(400, -250), covariance: Covariance2(sigma: 600), source: .cell))]
            if ta { r.append(.fix(Fix(time: t, position: SIMD2(100, -60), covariance: Covariance2(ee: 900, en: 0, nn: 40_000), source: .cellTA))) }
            return r
        }
        func final(_ settings: FusionStage.Settings, _ events: [[StageResult]]) -> (Fix, FusionStage) {
            let stage = FusionStage(settings: settings)
            var last: Fix?
            for u in events {
                guard case .fix(let f)? = u.first else { continue }
                let e = TraceEvent(time: f.time, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 3)))
                for r in stage.process(e, upstream: u, context: context) { if case .fix(let y) = r { last = y } }
            }
            return (last!, stage)
        }
        let on = FusionStage.Settings(kind: .ekf)
        var off = on; off.superseding = [:]
        var taOnly = on; taOnly.inputs = [.cellTA]
        let (a, sa) = final(on, [event(0, ta: true)])
        let (b, _) = final(taOnly, [event(0, ta: true)])
        let (c, sc) = final(off, [event(0, ta: true)])
        #expect(norm(a.position - b.position) < 1e-9 && abs(a.covariance.nn - b.covariance.nn) < 1e-6)
        func used(_ s: FusionStage, _ src: Source) -> Int { s.counters[src].map { $0.accepted + $0.initializations } ?? 0 }
        #expect(used(sa, .cell) == 0 && used(sa, .cellTA) == 1 && sa.counters[.cell]?.superseded == 1)
        #expect(used(sc, .cell) == 1 && used(sc, .cellTA) == 1 && c.covariance.nn < 0.95 * a.covariance.nn)
        // No TA in the second report: its cell fix updates the filter.
        let (_, sd) = final(on, [event(0, ta: true), event(2, ta: false)])
        #expect(used(sd, .cell) == 1)
    }

    @Test(arguments: [FusionStage.Kind.ekf, .ukf]) func lateFixRewindsToTheInOrderResult(kind: FusionStage.Kind) throws {
        var rng = TestRNG(seed: 11)
        let fixes = (0..<20).map { k -> StageResult in
            let t = Double(k)
            return fix(t, SIMD2(1.2 * t + 3 * rng.gaussian(), 0.5 * t + 3 * rng.gaussian()))
        }
        var late = fixes
        late.swapAt(12, 14)                     // order 11, 14, 13, 12, 15: two late fixes
        let a = FusionStage(settings: .init(kind: kind)), b = FusionStage(settings: .init(kind: kind))
        let inOrder = run(a, fixes), outOfOrder = run(b, late)
        let x = try #require(inOrder.last), y = try #require(outOfOrder.last)
        #expect(b.rewinds == 2 && a.rewinds == 0)
        #expect(abs(x.position.x - y.position.x) < 1e-9 && abs(x.position.y - y.position.y) < 1e-9)
        #expect(abs(x.covariance.ee - y.covariance.ee) < 1e-9 && abs(x.covariance.nn - y.covariance.nn) < 1e-9)
        // The same decisions in and out of order (the GNSS bias states, on by default, are
        // restored with the filter); the first fix initialises.
        let (ca, cb) = (try #require(a.counters[.gnss]), try #require(b.counters[.gnss]))
        #expect(ca.accepted + ca.gated == 19 && ca.accepted == cb.accepted && ca.gated == cb.gated && ca.accepted >= 17)
    }

    /// A fix older than the rewind history is dropped and counted, never applied out of order.
    @Test func tooLateIsDropped() {
        var s = FusionStage.Settings(kind: .ekf); s.historySeconds = 3
        let stage = FusionStage(settings: s)
        _ = run(stage, (0..<10).map { fix(Double($0), SIMD2(0, 0)) } + [fix(2, SIMD2(0, 0))])
        #expect(stage.droppedLate == 1)
    }

    /// Gating rejects an outlier; a run of consistent rejections (a real jump) re-initialises.
    @Test func gatingAndDivergence() throws {
        let stage = FusionStage(settings: .init(kind: .ekf))
        var fixes = (0..<20).map { fix(Double($0), SIMD2(0, 0), sigma: 2) }
        fixes.append(fix(20, SIMD2(200, 0), sigma: 2))                       // one outlier
        fixes += (21..<30).map { fix(Double($0), SIMD2(0, 0), sigma: 2) }
        fixes += (30..<40).map { fix(Double($0), SIMD2(500, 500), sigma: 2) }  // the phone really is elsewhere
        let out = run(stage, fixes)
        #expect(stage.counters[.gnss]!.gated >= 5)
        #expect(stage.reinitializations == 1)
        let last = try #require(out.last)
        #expect(norm(last.position - SIMD2(500, 500)) < 5)
        // The outlier did not move the track: the estimate at t = 20 is still near the origin.
        let at20 = try #require(out.first { $0.time == 20 })
        #expect(norm(at20.position) < 3)
    }

    /// A fix refused as singular counts toward the divergence restart like a gated one. Whatever
    /// breaks the filter's covariance (here an indefinite P put in its place, as the bias block's
    /// priming before session 18 did on a real drive, docs/fusion.md), every later fix has a
    /// singular S and is refused: before the refusals counted, the filter stayed broken for the
    /// rest of the trace (its reported variance negative); now the fifth refusal restarts it at
    /// that fix and the track resumes.
    @Test func singularUpdatesCountTowardTheRestart() throws {
        let stage = FusionStage(settings: .init(kind: .ekf))
        var rng = TestRNG(seed: 3)
        let fixes = (0..<40).map { k in fix(Double(k), SIMD2(1 + 2 * rng.gaussian(), 1 + 2 * rng.gaussian()), sigma: 2) }
        var out = run(stage, Array(fixes[..<10]))
        let filter = try #require(stage.tracks[Fix.defaultSubject]?.filter)
        filter.restore(FilterSnapshot(time: filter.time, mean: filter.mean, covariance: -100 * Mat4.identity, initialized: true, payload: nil))
        out = run(stage, Array(fixes[10...]))
        let c = try #require(stage.counters[.gnss])
        #expect(c.singular == stage.settings.divergenceRejections, "\(c.singular) singular updates")
        #expect(stage.reinitializations == 1)
        let last = try #require(out.last)
        #expect(last.covariance.ee > 0 && last.covariance.nn > 0 && last.covariance.determinant > 0, "\(last.covariance)")
        #expect(last.covariance.trace < 20, "σ² \(last.covariance.trace) m² after 25 fixes of σ 2 m")
        #expect(norm(last.position - SIMD2(1, 1)) < 4)
    }

    /// A phone at rest at (1, 1) with a 1 Hz fix of σ 2 m at each of `times` (seeded noise), the
    /// track a fresh `kind` filter makes of them alone, and a fresh stage for the test's own run.
    private func atRest(_ kind: FusionStage.Kind, times: Range<Int>, seed: UInt64)
        -> (truth: SIMD2<Double>, good: [StageResult], reference: [Fix], stage: FusionStage) {
        var rng = TestRNG(seed: seed)
        let truth = SIMD2<Double>(1, 1)
        let good = times.map { k in fix(Double(k), truth + SIMD2(2 * rng.gaussian(), 2 * rng.gaussian()), sigma: 2) }
        return (truth, good, run(FusionStage(settings: .init(kind: kind)), good), FusionStage(settings: .init(kind: kind)))
    }

    /// A first fix that reports an absurd accuracy (σ 10⁸, 10¹⁰, 10¹⁰⁰ m: a receiver's "unknown")
    /// followed by good fixes (σ 2 m) of a phone at rest. Before: the filter started at the absurd
    /// fix and the GNSS bias block was primed with its Σ_b, so the next fixes' joint update left
    /// P_pp ≈ 10¹⁶ m² beside 4 m² fixes and lost positive definiteness to rounding (negative
    /// reported variances, singular refusals, 80–300 m off until the 5-fix restart; docs/fusion.md).
    /// Now a start fix with less than 10⁻⁴ of the next same-source fix's information is replaced by
    /// that fix (`FusionStage.uninformativeRatio`; a σ 10¹⁰⁰ m fix, whose variance overflows,
    /// is refused): from the first good fix on, the track is the one of a filter that never saw the
    /// absurd fix, to the bit, finite and positive definite, and no fix is refused as singular; the
    /// same after two absurd fixes in a row.
    @Test(arguments: [1e8, 1e10, 1e100]) func absurdFirstFixDoesNotPoisonTheFilter(sigma: Double) throws {
        for kind in [FusionStage.Kind.ekf, .ukf] {
            let (truth, good, reference, stage) = atRest(kind, times: 1..<20, seed: 7)
            let out = run(stage, [fix(0, SIMD2(3e3, -2e3), sigma: sigma)] + good).filter { $0.time >= 1 }
            // Two absurd fixes in a row (a receiver that reports "unknown" for a while): the same.
            let twice = FusionStage(settings: .init(kind: kind))
            let out2 = run(twice, [fix(0, SIMD2(3e3, -2e3), sigma: sigma), fix(0.5, SIMD2(-3e3, 2e3), sigma: sigma)] + good).filter { $0.time >= 1 }
            #expect(out2.count == reference.count && zip(out2, reference).allSatisfy { $0.position == $1.position && $0.covariance == $1.covariance },
                    "\(kind) σ \(sigma), two absurd fixes: \(out2.map { norm($0.position - truth) })")
            #expect(out.count == reference.count && out.count == good.count, "\(kind) σ \(sigma): \(out.count) outputs")
            for (f, r) in zip(out, reference) {
                let c = f.covariance
                #expect(f.position.x.isFinite && f.position.y.isFinite && c.ee.isFinite && c.nn.isFinite && c.en.isFinite, "\(kind) σ \(sigma) t \(f.time): \(f.position) \(c)")
                #expect(c.ee > 0 && c.nn > 0 && c.determinant > 0, "\(kind) σ \(sigma) t \(f.time): \(c)")
                #expect(f.position == r.position && c == r.covariance, "\(kind) σ \(sigma) t \(f.time): \(f.position) \(c) vs \(r.position) \(r.covariance)")
            }
            #expect(norm(try #require(out.first).position - truth) < 8)
            #expect(stage.counters[.gnss]?.singular == 0 && stage.reinitializations == 0)
        }
    }

    /// The same absurd accuracy in mid-track (σ 10⁸, 10¹⁰ m between the 10th and 11th of 30 good
    /// fixes). Before: its update gave it no weight, but its Σ_b became the bias's stationary
    /// covariance until the next fix, so the next good fix went into the bias, and the track was up
    /// to 6.7 m off (2 m without it) for 20 s and 2.4 m from the reference at the end. Now a GNSS fix
    /// with more than 10⁴× the filter's position variance is not fused (counted `uninformative`): the
    /// filter predicts to its time and emits, and the track equals the one without that fix.
    @Test(arguments: [1e8, 1e10]) func absurdFixInMidTrackIsNotFused(sigma: Double) throws {
        for kind in [FusionStage.Kind.ekf, .ukf] {
            let (_, good, reference, stage) = atRest(kind, times: 0..<30, seed: 11)
            let out = run(stage, Array(good[..<10]) + [fix(9.5, SIMD2(3e3, -2e3), sigma: sigma)] + Array(good[10...]))
            #expect(out.count == 31 && out.filter { $0.time != 9.5 }.count == reference.count)
            for f in out {
                let c = f.covariance
                #expect(f.position.x.isFinite && f.position.y.isFinite && c.ee > 0 && c.nn > 0 && c.determinant > 0 && c.trace.isFinite,
                        "\(kind) σ \(sigma) t \(f.time): \(f.position) \(c)")
            }
            for (a, b) in zip(out.filter { $0.time != 9.5 }, reference) {
                #expect(norm(a.position - b.position) < 1e-6 && abs(a.covariance.trace - b.covariance.trace) < 1e-6 * b.covariance.trace,
                        "\(kind) σ \(sigma) t \(a.time): \(a.position) \(a.covariance) vs \(b.position) \(b.covariance)")
            }
            let c = try #require(stage.counters[.gnss])
            #expect(c.uninformative == 1 && c.singular == 0 && c.gated == 0 && stage.reinitializations == 0)
        }
    }

    /// A receiver at rest that holds its solution: its fix repeats unchanged for runs of 20–60 s
    /// (the GnssLogger logs of `$POSFUSE_DATA/gnsslogger-static` repeat theirs 110, 42 and 36 times)
    /// and then steps to a new solution, its error a slow bias (β 0.99, τ 3600 s, as the error model
    /// fits those logs) plus white noise. With `gnss_hold_updates: false` a repeat is a time
    /// prediction: the track at the new solutions equals the track of a filter that was given only
    /// the new solutions (to 1e-6 m), every hold epoch has an output, and no new solution is gated.
    /// Fused, the repeats pin p + b (on the log 2016-08-22 the first new solution after a hold was
    /// gated and the fifth restarted the filter: docs/fusion.md, sessions 20 and 22).
    @Test func heldGNSSFixesArePredictionsNotUpdates() throws {
        var rng = TestRNG(seed: 22)
        let truth = SIMD2<Double>(0, 0)
        var bias = SIMD2<Double>(2.5, -1.5)
        var all: [StageResult] = [], fresh: [StageResult] = []
        var t = 0.0, held = SIMD2<Double>(0, 0)
        for run in [30, 110, 5, 42, 8, 36, 20] {
            bias += SIMD2(0.4 * rng.gaussian(), 0.4 * rng.gaussian())
            held = truth + bias + SIMD2(0.2 * rng.gaussian(), 0.2 * rng.gaussian())
            fresh.append(fix(t, held, sigma: 3))
            for _ in 0..<run { all.append(fix(t, held, sigma: 3)); t += 1 }
        }
        func settings(holds: Bool) -> FusionStage.Settings {
            var s = FusionStage.Settings(kind: .ekf)
            s.gnssBias = GNSSBias(correlationTime: 3600, biasFraction: 0.99)
            s.gnssHoldUpdates = holds
            return s
        }
        let predicted = FusionStage(settings: settings(holds: false))
        let out = run(predicted, all)
        let reference = run(FusionStage(settings: settings(holds: false)), fresh)
        #expect(out.count == all.count && reference.count == fresh.count)
        let byTime = Dictionary(out.map { ($0.time, $0) }, uniquingKeysWith: { $1 })
        for r in reference {
            let a = try #require(byTime[r.time])
            #expect(norm(a.position - r.position) < 1e-6 && abs(a.covariance.trace - r.covariance.trace) < 1e-6 * r.covariance.trace,
                    "t \(r.time): \(a.position) vs \(r.position)")
        }
        let c = try #require(predicted.counters[.gnss])
        #expect(c.held == all.count - fresh.count && c.gated == 0 && predicted.reinitializations == 0)
        for f in out { #expect(f.position.x.isFinite && f.covariance.determinant > 0) }
        // Fused (the default), the repeats count as measurements: the track at the new solutions
        // is another one (pinned by the holds), and nothing is counted as held.
        let fused = FusionStage(settings: settings(holds: true))
        let pinned = Dictionary(run(fused, all).map { ($0.time, $0) }, uniquingKeysWith: { $1 })
        #expect(fused.counters[.gnss]!.held == 0)
        #expect(reference.contains { norm(pinned[$0.time]!.position - $0.position) > 0.01 })
    }

    /// A receiver at rest (zero velocity with every fix) holds one solution for 60 s, then
    /// re-solves 7 m away (the static GnssLogger logs: docs/fusion.md, session 23). Under the
    /// bias model of those logs (β 0.99, τ 3600 s) the repeats pin p + b and the new solution is
    /// gated; at rest nothing but the error can have moved, so it is re-tested with the bias
    /// re-drawn (`GNSSBias.redraw`) and accepted: no gated fix, no restart, and the position after
    /// it is the joint Kalman update with b = 0, C = 0, B = Σ_b, computed here by hand from the
    /// filter's prior: x⁺ = x⁻ + P_x,p (P_pp + Σ_b + R_w)⁻¹ ν, part of the way to the new solution.
    /// Without the rest claim (no velocity) the jump is gated, then taken as motion: the track
    /// moves onto the new solution within seconds (as before this re-test).
    @Test func receiverAtRestReSolvesInsteadOfRestarting() throws {
        let z1 = SIMD2<Double>(2, 1), z2 = SIMD2<Double>(-3, -4), sigma = 3.0
        var s = FusionStage.Settings(kind: .ekf)
        s.gnssBias = GNSSBias(correlationTime: 3600, biasFraction: 0.99)
        func event(_ k: Int, velocity: Bool) -> (TraceEvent, [StageResult]) {
            let t = Double(k)
            var up: [StageResult] = []
            if velocity { up.append(.measurement(VelocityMeasurement(velocity: .zero, sigma: 0.35, time: t - 0.5), subject: Fix.defaultSubject)) }
            // The solution wanders by 1 cm (not an exact repeat: `repeat_inflation` would scale R
            // and with it Σ_b by k, and a bias that large lets the jump through ungated).
            let wander = SIMD2<Double>(0.01 * Double(k % 2), 0)
            up.append(.fix(Fix(time: t, position: (k < 60 ? z1 : z2) + wander, covariance: Covariance2(sigma: sigma), source: .gnss)))
            return (TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: sigma))), up)
        }
        func run(_ stage: FusionStage, _ ks: Range<Int>, velocity: Bool) -> [Double: Fix] {
            var out: [Double: Fix] = [:]
            for k in ks {
                let (e, up) = event(k, velocity: velocity)
                for case .fix(let f) in stage.process(e, upstream: up, context: context) { out[f.time] = f }
            }
            return out
        }
        let atRest = FusionStage(settings: s)
        let out = run(atRest, 0..<80, velocity: true)
        let c = try #require(atRest.counters[.gnss])
        #expect(c.gated == 0 && atRest.reinitializations == 0 && c.initializations == 1)

        // The prior of the re-solved fix: the same stage to the velocity of second 60, predicted to 60.
        let before = FusionStage(settings: s)
        _ = run(before, 0..<60, velocity: true)
        let (e60, up60) = event(60, velocity: true)
        _ = before.process(e60, upstream: [up60[0]], context: context)
        let t = try #require(before.tracks[Fix.defaultSubject])
        t.apply(.predict(time: 60), gate: { _ in nil })
        let x = t.filter.mean, p = t.filter.covariance
        let lambda = t.accuracyScales[.gnss]?.value ?? 1
        let r = lambda * sigma * sigma
        // S = P_pp + Σ_b + R_w = P_pp + r I (Σ_b + R_w = βR + (1 − β)R) (b re-drawn: no cross term); K_x = P_x,p S⁻¹.
        let s00 = p[0, 0] + r, s01 = p[0, 1], s11 = p[1, 1] + r, det = s00 * s11 - s01 * s01
        let nu = z2 - SIMD2(x[0], x[1])          // second 60: no wander
        let w = SIMD2((s11 * nu.x - s01 * nu.y) / det, (-s01 * nu.x + s00 * nu.y) / det)
        let expected = SIMD2(x[0] + p[0, 0] * w.x + p[0, 1] * w.y, x[1] + p[1, 0] * w.x + p[1, 1] * w.y)
        let got = try #require(out[60])
        #expect(norm(got.position - expected) < 1e-9, "\(got.position) vs \(expected)")
        // The update moves the track part of the way to the new solution (P_pp ≈ Σ: p is as
        // uncertain as the bias it cannot be told from), not all of it.
        #expect(norm(got.position - z1) > 1 && norm(got.position - z2) > 1)

        // No rest claim: gated, then the fifth restarts at z2 (the behaviour before).
        let moving = FusionStage(settings: s)
        let plain = run(moving, 0..<80, velocity: false)
        #expect(moving.counters[.gnss]!.gated >= 1)
        #expect(norm(plain[64]!.position - z2) < 0.1 && norm(plain[61]!.position - out[61]!.position) > 0.5)
    }

    /// A car (no IMU: constant velocity) at 15 m/s that turns 90° at 30°/s and later brakes to a
    /// stop, 1 Hz fixes with σ = 1 m. Under q₀ alone the filter, sure of its velocity, gates the
    /// fixes of the turn; the manoeuvre re-test (`cv_manoeuvre_accel_mps2`,
    /// `cv_turn_rate_sigma_deg_per_s`) follows it. Without the re-test the divergence logic must
    /// restart at the car's speed (two-point initiation), not at rest.
    @Test func carTurnsAndBrakes() throws {
        var truth: [(Double, SIMD2<Double>)] = []
        var p = SIMD2<Double>(0, 0), heading = Double.pi / 2, speed = 15.0
        for k in 0..<90 {
            let t = Double(k)
            truth.append((t, p))
            if k >= 30 && k < 33 { heading -= Double.pi / 6 }          // 30°/s left turn: east → north
            if k >= 60 { speed = max(0, speed - 4) }                     // braking at 4 m/s²
            p += speed * SIMD2(sin(heading), cos(heading))
        }
        func drive(_ settings: FusionStage.Settings) -> (maxError: Double, stage: FusionStage) {
            var rng = TestRNG(seed: 3)
            let stage = FusionStage(settings: settings)
            let fixes = truth.map { fix($0.0, $0.1 + SIMD2(rng.gaussian(), rng.gaussian()), sigma: 1) }
            let truthAt = Dictionary(uniqueKeysWithValues: truth)
            let out = run(stage, fixes)
            return (out.map { norm($0.position - truthAt[$0.time]!) }.max() ?? .infinity, stage)
        }
        let adaptive = drive(.init(kind: .ekf))
        #expect(adaptive.maxError < 6, "max error \(adaptive.maxError)")
        #expect(adaptive.stage.reinitializations == 0)
        var off = FusionStage.Settings(kind: .ekf); off.cvTurnRateSigma = 0; off.cvManoeuvreAcceleration = 0
        off.platform = .pedestrian   // q₀ throughout (`auto` would take the vehicle q at 20 s)
        let fixed = drive(off)
        #expect(fixed.stage.counters[.gnss]!.gated >= 5)                // q₀ = 0.5 m²/s³ cannot hold the turn
        #expect(fixed.stage.reinitializations >= 1)
        // Two-point restart: the fixes right after it are followed (a restart at rest would gate
        // them again and cycle through re-initialisations every five fixes).
        #expect(fixed.stage.reinitializations <= 3, "\(fixed.stage.reinitializations) re-initialisations")
    }

    /// The particle filter takes the walls of the trace's floor plan (reference data): fixes that
    /// walk through a wall at x = 5 m pull the unconstrained filter across, not the walled one,
    /// whose particles die where they would cross (`walls: false` turns it off).
    @Test func particleFilterRespectsFloorPlanWalls() throws {
        let wall = ReferenceData(walls: [Wall(a: SIMD2(5, -50), b: SIMD2(5, 50))])
        let walled = PipelineContext(header: context.header, reference: wall)
        func finalEast(useWalls: Bool) throws -> Double {
            var s = FusionStage.Settings(kind: .pf)
            s.particles = 500; s.useWalls = useWalls
            let stage = FusionStage(settings: s)
            var last: Fix?
            for k in 0...22 {       // from x = −10 m (5σ of the first fix's inflated cloud away from the wall) to 12 m
                let f = Fix(time: Double(k), position: SIMD2(Double(k - 10), 0), covariance: Covariance2(sigma: 1), source: .gnss)
                let e = TraceEvent(time: f.time, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 1)))
                for r in stage.process(e, upstream: [.fix(f)], context: walled) { if case .fix(let y) = r { last = y } }
            }
            return try #require(last).position.x
        }
        #expect(try finalEast(useWalls: false) > 9)
        #expect(try finalEast(useWalls: true) < 5)
    }

    /// On a straight constant-velocity walk with white fix noise the EKF beats the raw fixes
    /// (a filter told the noise is white: no GNSS bias states).
    @Test func filterBeatsRawFixesOnWhiteNoise() {
        var rng = TestRNG(seed: 5)
        var raw = 0.0, filtered = 0.0
        var white = FusionStage.Settings(kind: .ekf); white.gnssBias = nil
        let stage = FusionStage(settings: white)
        var truth: [Double: SIMD2<Double>] = [:]
        var fixes: [StageResult] = []
        for k in 0..<300 {
            let t = Double(k), p = SIMD2(1.1 * t, 0.3 * t)
            truth[t] = p
            let z = p + SIMD2(5 * rng.gaussian(), 5 * rng.gaussian())
            raw += norm(z - p)
            fixes.append(fix(t, z, sigma: 5))
        }
        for f in run(stage, fixes) { filtered += norm(f.position - truth[f.time]!) }
        #expect(filtered < 0.6 * raw, "filtered \(filtered / 300) m vs raw \(raw / 300) m")
    }

    @Test func badOptionsAreConfigurationErrors() {
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["layout": .string("3d")])) }
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["inputs": .list([.string("ekf")])])) }
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .pf, options: StageOptions(name: "pf", values: ["particles": .number(1)])) }
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["inflation": .map(["wifi": .number(2)])])) }
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["gnss_bias_tau_s": .number(0)])) }
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .ukf, options: StageOptions(name: "ukf", values: ["gnss_bias_fraction": .number(1)])) }
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["adaptive_accuracy": .list([.string("smoother")])])) }
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .pf, options: StageOptions(name: "pf", values: ["adaptive_accuracy_window": .number(0.5)])) }
    }

    /// The GNSS bias and accuracy-scale options reach the settings; `gnss_bias: false` restores
    /// the white model with its α = 3 unless `inflation.gnss` is given.
    @Test func gnssBiasOptions() throws {
        let on = try FusionStage(kind: .pf, options: StageOptions(name: "pf", values: ["gnss_bias_tau_s": .number(45), "gnss_bias_fraction": .number(0.6),
                                                                                      "adaptive_accuracy": .list([.string("gnss"), .string("wcl")])]))
        #expect(on.settings.gnssBias == GNSSBias(correlationTime: 45, biasFraction: 0.6, adaptiveWindow: 30))
        let still = try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["gnss_bias_adaptive_window": .number(0)]))
        #expect(still.settings.gnssBias == GNSSBias(adaptiveWindow: nil))
        #expect(throws: ConfigurationError.self) { try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["gnss_bias_adaptive_window": .number(0.5)])) }
        #expect(on.settings.inflation[.gnss] == 1 && on.settings.adaptiveAccuracy == [.gnss, .wcl])
        let off = try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["gnss_bias": .bool(false), "adaptive_accuracy": .list([])]))
        #expect(off.settings.gnssBias == nil && off.settings.inflation[.gnss] == 3 && off.settings.adaptiveAccuracy.isEmpty)
        let explicit = try FusionStage(kind: .ekf, options: StageOptions(name: "ekf", values: ["gnss_bias": .bool(false), "inflation": .map(["gnss": .number(2)])]))
        #expect(explicit.settings.inflation[.gnss] == 2)
    }
}

/// PDR on noise-free synthetic IMU: exact step count and gyro heading change.
@Suite struct PDRTests {
    /// Phone flat (gravity on +z), walking at 2 steps/s for 10 s: the vertical acceleration
    /// carries a 2 Hz sinusoid of 2 m/s² amplitude; a −0.1 rad/s yaw rate (clockwise) turns by 1 rad.
    @Test func stepsAndHeadingChange() {
        var pdr = PedestrianDeadReckoning()
        let rate = 100.0
        for k in 0..<Int(12 * rate) {
            let t = Double(k) / rate
            let walking = t >= 1 && t < 11
            let az = 9.80665 + (walking ? 2 * sin(2 * .pi * 2 * (t - 1)) : 0)
            pdr.update(IMUSample(kind: .accelerometer, x: 0, y: 0, z: az), time: t)
            pdr.update(IMUSample(kind: .gyroscope, x: 0, y: 0, z: walking ? -0.1 : 0), time: t)
            if k % 2 == 0 { pdr.update(IMUSample(kind: .magnetometer, x: 0, y: 30, z: -40), time: t) }
        }
        let steps = pdr.takeSteps()
        #expect(steps.count == 20, "\(steps.count) steps")
        let turn = steps.dropFirst().reduce(0) { $0 + $1.headingChange }
        // Between the first and the last step the phone turned 0.1 rad/s × (t_last − t_first).
        let expected = 0.1 * (steps.last!.time - steps.first!.time)
        #expect(abs(turn - expected) < 0.02, "turn \(turn) rad vs \(expected)")
        #expect(steps.allSatisfy { $0.length >= 0.3 && $0.length <= 1.2 })
        // Weinberg calibration: K = D / Σ root reproduces the walked distance.
        let k = pdr.calibratedWeinbergK(trueDistance: 14)!
        #expect(abs(k * pdr.weinbergRootSum - 14) < 1e-9)
    }
}

/// The RTS smoother equals the batch (all-epochs, information-form) solution on a
/// linear-Gaussian constant-velocity problem, to 1e-9 relative: with white GNSS fixes over the
/// state x = [E, N, v_E, v_N], and with the GNSS bias states over y = [x; b_E, b_N] (`GNSSBias`).
@Suite struct RTSSmootherTests {
    @Test(arguments: [false, true], [FusionStage.Kind.ekf, .ukf]) func smootherEqualsBatchSolution(withBias: Bool, kind: FusionStage.Kind) throws {
        let context = PipelineContext(header: TraceHeader(origin: Geodetic(latitude: 48.0, longitude: 11.0)))
        var s = FusionStage.Settings(kind: kind)
        s.inflation = [:]; s.gateProbability = nil
        s.gnssBias = withBias ? GNSSBias(correlationTime: 5, biasFraction: 0.6) : nil
        s.adaptiveAccuracy = []
        let stage = SmootherStage(settings: s)
        var rng = TestRNG(seed: 3)
        let n = 12, sigma = 4.0
        var z: [SIMD2<Double>] = []
        for k in 0..<n {
            let t = Double(k)
            z.append(SIMD2(0.8 * t + sigma * rng.gaussian(), -0.4 * t + sigma * rng.gaussian()))
            let f = Fix(time: t, position: z[k], covariance: Covariance2(sigma: sigma), source: .gnss)
            _ = stage.process(TraceEvent(time: t, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: sigma))),
                              upstream: [.fix(f)], context: context)
        }
        let smoothed = stage.finish(context: context).compactMap { r -> Fix? in if case .fix(let f) = r { return f }; return nil }
        #expect(smoothed.count == n)

        // Batch: minimise ‖y₀ − m₀‖²_{P₀⁻¹} + Σₖ ‖yₖ − F yₖ₋₁‖²_{Q⁻¹} + Σ_{k≥1} ‖zₖ − H yₖ‖²_{R⁻¹}.
        // With the bias: F = diag(F_cv, φI), Q = diag(Q_cv, (1 − φ²)βσ²I), H = [I 0 I], R = (1 − β)σ²I,
        // and the start at z₀ (p̂ = z₀, P_pp = σ²) correlated with the bias: P_pb = −βσ², P_bb = βσ².
        let cv = s.motion.constantVelocity
        let d = withBias ? 6 : 4
        let beta = s.gnssBias?.biasFraction ?? 0, phi = s.gnssBias?.decay(1) ?? 0
        func embed(_ m: Mat4, _ tail: Double) -> Matrix {
            var out = Matrix(rows: d, cols: d)
            for i in 0..<4 { for j in 0..<4 { out[i, j] = m[i, j] } }
            for i in 4..<d { out[i, i] = tail }
            return out
        }
        let f = embed(cv.transition(dt: 1), phi)
        let qi = try #require(embed(cv.noise(dt: 1), (1 - phi * phi) * beta * sigma * sigma).spdInverse)
        var p0 = embed(Mat4.diagonal(SIMD4(sigma * sigma, sigma * sigma, pow(s.initialSpeedSigma, 2), pow(s.initialSpeedSigma, 2))),
                       beta * sigma * sigma)
        if withBias { for i in 0..<2 { p0[i, 4 + i] = -beta * sigma * sigma; p0[4 + i, i] = -beta * sigma * sigma } }
        let p0i = try #require(p0.spdInverse)
        let dim = d * n
        var lam = Matrix(rows: dim, cols: dim), eta = [Double](repeating: 0, count: dim)
        func add(_ r: Int, _ c: Int, _ m: Matrix, _ sign: Double = 1) {
            for i in 0..<d { for j in 0..<d { lam[d * r + i, d * c + j] += sign * m[i, j] } }
        }
        let m0 = [z[0].x, z[0].y] + [Double](repeating: 0, count: d - 2)
        add(0, 0, p0i)
        for i in 0..<d { for j in 0..<d { eta[i] += p0i[i, j] * m0[j] } }
        let ftqi = f.transposed * qi, ftqif = ftqi * f
        var h = Matrix(rows: 2, cols: d)
        h[0, 0] = 1; h[1, 1] = 1
        if withBias { h[0, 4] = 1; h[1, 5] = 1 }
        let ri = 1 / ((1 - beta) * sigma * sigma)
        let htrih = ri * (h.transposed * h)
        for k in 1..<n {
            add(k, k, qi); add(k - 1, k - 1, ftqif)
            add(k, k - 1, qi * f, -1); add(k - 1, k, ftqi, -1)
            add(k, k, htrih)
            let ht = h.transposed * [z[k].x, z[k].y]
            for i in 0..<d { eta[d * k + i] += ri * ht[i] }
        }
        let cov = try #require(lam.spdInverse)
        let x = cov * eta
        for k in 0..<n {
            let e = SIMD2(x[d * k], x[d * k + 1])
            #expect(abs(smoothed[k].position.x - e.x) < 1e-9 * max(1, abs(e.x)) && abs(smoothed[k].position.y - e.y) < 1e-9 * max(1, abs(e.y)),
                    "epoch \(k): \(smoothed[k].position) vs batch \(e)")
            #expect(abs(smoothed[k].covariance.ee - cov[d * k, d * k]) < 1e-9 * cov[d * k, d * k])
            #expect(abs(smoothed[k].covariance.en - cov[d * k, d * k + 1]) < 1e-9 * cov[d * k, d * k])
        }
    }
}
