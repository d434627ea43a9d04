import Foundation

/// A TDoA fix with the quantities reported beside it.
public struct TDoASolution: Sendable {
    /// The position fix (source `tdoa`), covariance (JᵀWJ)⁻¹ horizontal block.
    public var fix: Fix
    /// Geometric dilution of precision √tr((Gᵀ(I + 11ᵀ)⁻¹G)⁻¹) at the fix (dimensionless).
    public var gdop: Double
    /// Cramér–Rao bound (GᵀQ_ρ⁻¹G)⁻¹ at the fix, D×D, m² (D = 2 planar, 3 spatial).
    public var crlb: Matrix
    /// Normalised range-difference residuals e_i/√(σ₁² + σ_i²) of the used beacons (i = 2..M).
    public var residuals: [Double]
    /// Beacons used (reference first) and those rejected (period/NLoS checks).
    public var usedBeacons: [String]
    public var rejectedBeacons: [String]
    /// The solver output (stage 1, stage 2, refined position, χ²).
    public var estimate: TDoAEstimate
    /// Speed of sound used, m/s.
    public var speedOfSound: Double
    /// The problem finally solved (after rejections), for tight coupling.
    public var problem: TDoAProblem
}

/// Acoustic TDoA positioning against synchronised beacons (Lopes et al. 2015;
/// `docs/models.md` §4A).
///
/// 1. Speed of sound c_s from the air temperature.
/// 2. Reference beacon = the arrival with the best SNR (earliest arrival if no SNR).
/// 3. Emission schedule: Δ_i = (t_i − t_1) − (o_i − o_1) − (k_i − k_1)·T_p when both
///    emission indices are known; otherwise Δ_i is reduced modulo T_p into (−T_p/2, T_p/2].
///    **Period-ambiguity check**: without indices the reduction is only unique if
///    c_s·T_p/2 > max‖s_i − s_1‖ (else `inconsistentMeasurements`). A beacon whose
///    |c_s·Δ_i| exceeds its baseline ‖s_i − s_1‖ by more than `consistencySlack` is
///    physically impossible (wrong period, echo) and rejected.
/// 4. ρ_i1 = c_s·Δ_i; Q_ρ = σ₁²11ᵀ + diag(σ_i²) with σ_i = c_s·σ_TOA.
/// 5. Solve with `TDoASolver` (Chan–Ho + refinement).
/// 6. NLoS mitigation: while the largest normalised residual exceeds `nlosThreshold` and
///    removing a beacon leaves redundancy (M − 1 ≥ D + 2), re-solve leaving each beacon
///    out and keep the subset with the smallest χ² among those whose left-out beacon arrived
///    significantly late (studentised deleted residual > `nlosThreshold`,
///    `TDoAProblem.deletedResidual`; a blocked path only delays), else the smallest χ².
/// 7. Fix covariance (JᵀWJ)⁻¹ × max(1, χ²/dof) (`inflateByResiduals`); CRLB and GDOP nominal.
///
/// Mode: `.auto` solves in 3-D when M ≥ 5 and the beacons are not coplanar, otherwise
/// 2-D with the known phone height (beacons on one ceiling are coplanar).
public struct TDoAEstimator: Sendable {
    public enum Mode: String, Sendable, CaseIterable { case auto, planar = "2d", spatial = "3d" }

    public var solver: TDoASolver
    public var mode: Mode
    /// One-way time-of-arrival noise σ_TOA, s (30 µs ≈ 1 cm at 343 m/s).
    public var toaSigma: Double
    /// Normalised residual above which leave-one-out NLoS mitigation runs (0 disables it).
    public var nlosThreshold: Double
    /// Which left-out subset NLoS mitigation keeps (step 6).
    public enum NLoSSelection: String, Sendable, CaseIterable {
        /// The smallest χ² among the subsets whose left-out beacon arrived significantly late.
        case lateArrival = "late_arrival"
        /// The smallest χ² (the textbook rule; ignores that NLoS only delays).
        case smallestChiSquare = "smallest_chi_square"
    }
    public var nlosSelection: NLoSSelection = .lateArrival
    /// Allowed excess of |ρ_i1| over the baseline ‖s_i − s_1‖, m.
    public var consistencySlack: Double
    /// Scale the fix covariance by max(1, χ²/(M − 1 − D)) (the CRLB stays nominal).
    public var inflateByResiduals: Bool

    public init(solver: TDoASolver = TDoASolver(), mode: Mode = .auto, toaSigma: Double = 30e-6,
                nlosThreshold: Double = 3, consistencySlack: Double = 0.05, inflateByResiduals: Bool = true) {
        self.solver = solver; self.mode = mode; self.toaSigma = toaSigma
        self.nlosThreshold = nlosThreshold; self.consistencySlack = consistencySlack
        self.inflateByResiduals = inflateByResiduals
    }

    /// Estimate the phone position from one epoch of arrivals.
    /// - Parameters:
    ///   - phoneHeight: known phone height (ENU up, m) for the 2-D solve.
    ///   - temperature: air temperature, °C.
    ///   - prior: a previous horizontal position (disambiguates the minimal case).
    public func estimate(arrivals: [AcousticArrival], beacons: [String: AcousticBeacon], time: Double,
                         subject: String = Fix.defaultSubject, phoneHeight: Double,
                         temperature: Double = SpeedOfSound.defaultTemperature, prior: SIMD2<Double>? = nil,
                         workspace: TDoALMWorkspace? = nil) -> Result<TDoASolution, EstimationFailure> {
        let cs = SpeedOfSound.metersPerSecond(celsius: temperature)
        // Keep one arrival per beacon (the earliest: first path), known beacons only.
        var byBeacon: [String: AcousticArrival] = [:]
        var unknown: [String] = []
        for a in arrivals {
            guard beacons[a.beacon] != nil else { unknown.append(a.beacon); continue }
            guard a.arrivalTime.isFinite else { continue }
            if let old = byBeacon[a.beacon], old.arrivalTime <= a.arrivalTime { continue }
            byBeacon[a.beacon] = a
        }
        if byBeacon.isEmpty, let u = unknown.first { return .failure(.unknownAnchor(u)) }
        var list = byBeacon.values.sorted { $0.beacon < $1.beacon }
        let minimum = mode == .spatial ? 4 : 3
        guard list.count >= minimum else { return .failure(.tooFewAnchors(needed: minimum, got: list.count)) }
        // Reference: best SNR, else earliest arrival.
        let refIndex: Int
        if list.allSatisfy({ $0.snr != nil }) {
            refIndex = list.indices.max { (list[$0].snr ?? 0, -list[$0].arrivalTime) < (list[$1].snr ?? 0, -list[$1].arrivalTime) }!
        } else {
            refIndex = list.indices.min { list[$0].arrivalTime < list[$1].arrivalTime }!
        }
        list.swapAt(0, refIndex)
        let ref = list[0], refBeacon = beacons[ref.beacon]!
        let period = refBeacon.period

        // Schedule reduction and the period-ambiguity check.
        var ids = [ref.beacon], pos = [refBeacon.position], rho: [Double] = [], rejected: [String] = []
        let maxBaseline = list.dropFirst().map { distance(beacons[$0.beacon]!.position, refBeacon.position) }.max() ?? 0
        for a in list.dropFirst() {
            let b = beacons[a.beacon]!
            guard abs(b.period - period) <= 1e-9 * max(1, period) else {
                return .failure(.inconsistentMeasurements("beacons \(ref.beacon) and \(a.beacon) have different periods"))
            }
            var delta = (a.arrivalTime - ref.arrivalTime) - (b.offset - refBeacon.offset)
            if let ka = a.emission, let k1 = ref.emission {
                delta -= Double(ka - k1) * period
            } else if period > 0 {
                guard cs * period / 2 > maxBaseline else {
                    return .failure(.inconsistentMeasurements(
                        "period ambiguity: c_s·T_p/2 = \(cs * period / 2) m ≤ max baseline \(maxBaseline) m and no emission index"))
                }
                delta -= (delta / period).rounded() * period
            }
            let r = cs * delta
            let baseline = distance(b.position, refBeacon.position)
            if abs(r) > baseline + consistencySlack {
                rejected.append(a.beacon)
                continue
            }
            ids.append(a.beacon); pos.append(b.position); rho.append(r)
        }
        guard ids.count >= minimum else {
            return .failure(rejected.isEmpty ? .tooFewAnchors(needed: minimum, got: ids.count)
                            : .inconsistentMeasurements("range differences exceed the baselines (period ambiguity or echo): \(rejected.joined(separator: ","))"))
        }
        let sigma = cs * toaSigma
        var problem = TDoAProblem(beacons: pos, rangeDifferences: rho, sigma: sigma, mode: .planar(height: phoneHeight))
        switch mode {
        case .planar: break
        case .spatial: problem.mode = .spatial
        case .auto:
            var p3 = problem; p3.mode = .spatial
            if ids.count >= 5, TDoASolver.geometryFailure(p3, ratio: solver.degeneracyRatio) == nil { problem = p3 }
        }
        var priorVector: [Double]?
        if let prior { priorVector = problem.mode == .spatial ? [prior.x, prior.y, phoneHeight] : [prior.x, prior.y] }
        return solve(problem, ids: ids, rejected: rejected, time: time, subject: subject, prior: priorVector,
                     speedOfSound: cs, workspace: workspace)
    }

    /// Solve an already-formed problem with NLoS mitigation and package the solution.
    public func solve(_ problem: TDoAProblem, ids: [String], rejected: [String] = [], time: Double,
                      subject: String = Fix.defaultSubject, prior: [Double]? = nil,
                      speedOfSound: Double = SpeedOfSound.metersPerSecond(celsius: SpeedOfSound.defaultTemperature),
                      workspace: TDoALMWorkspace? = nil) -> Result<TDoASolution, EstimationFailure> {
        let ws = solver.refinement == .levenbergMarquardt ? (workspace ?? TDoALMWorkspace()) : workspace
        var current = problem, used = ids, dropped = rejected
        var result = solver.solve(current, prior: prior, workspace: ws)
        let d = problem.mode.dimension
        // A set whose solve does not converge is searched for an NLoS beacon too: one late
        // arrival can pull the whole set out of the least-squares basin.
        func suspicious(_ r: Result<TDoAEstimate, EstimationFailure>) -> Bool {
            switch r {
            case .success(let est): return Self.normalised(est.residuals, current).map(abs).max() ?? 0 > nlosThreshold
            case .failure(let f): return f == .notConverged
            }
        }
        while nlosThreshold > 0, suspicious(result), current.beacons.count - 1 >= d + 2 {
            // The beacon to drop (`nlosSelection`): the subset with the smallest χ² among those
            // whose left-out beacon arrived significantly late against the others' solution
            // (studentised deleted residual > `nlosThreshold`) — NLoS only delays, so a subset
            // that leaves out a beacon which arrived early explains the data by the impossible.
            // No such subset: the smallest χ².
            var late: (k: Int, estimate: TDoAEstimate)?, smallest: (k: Int, estimate: TDoAEstimate)?
            for k in 0..<current.beacons.count {
                guard case .success(let e) = solver.solve(current.removing(k), prior: prior, workspace: ws) else { continue }
                if smallest == nil || e.chiSquare < smallest!.estimate.chiSquare { smallest = (k, e) }
                if nlosSelection == .lateArrival, current.deletedResidual(k, at: e.position, covariance: e.covariance) > nlosThreshold,
                   late == nil || e.chiSquare < late!.estimate.chiSquare { late = (k, e) }
            }
            guard let (k, e) = late ?? smallest else { break }
            current = current.removing(k)
            dropped.append(used.remove(at: k))
            result = .success(e)
        }
        switch result {
        case .failure(let f): return .failure(f)
        case .success(let est):
            let p = est.position
            guard let crlb = TDoASolver.crlb(current, at: p), let gdop = TDoASolver.gdop(current, at: p) else {
                return .failure(d == 2 ? .collinearGeometry : .coplanarGeometry)
            }
            // Fix covariance: (JᵀWJ)⁻¹, inflated by the reduced χ² when the residuals are larger
            // than the nominal σ explains (NLoS, sound-speed or survey errors; §7.4).
            let dof = current.rangeDifferences.count - d
            let inflation = inflateByResiduals && dof > 0 ? max(1, est.chiSquare / Double(dof)) : 1
            let c = est.covariance.map { $0 * inflation }
            var flags: FixFlags = []
            let es = current.beacons.map(\.x), ns = current.beacons.map(\.y)
            if p[0] < es.min()! || p[0] > es.max()! || p[1] < ns.min()! || p[1] > ns.max()! { flags.insert(.extrapolated) }
            let up: Double
            if case .planar(let h) = current.mode { up = h } else { up = p[2] }
            let fix = Fix(time: time, position: SIMD2(p[0], p[1]), up: up,
                          covariance: Covariance2(ee: c[0], en: 0.5 * (c[1] + c[d]), nn: c[d + 1]),
                          source: .tdoa, subject: subject, usedCount: used.count, flags: flags)
            return .success(TDoASolution(fix: fix, gdop: gdop, crlb: Matrix(rows: d, cols: d, data: crlb),
                                         residuals: Self.normalised(est.residuals, current), usedBeacons: used,
                                         rejectedBeacons: dropped, estimate: est, speedOfSound: speedOfSound,
                                         problem: current))
        }
    }

    /// e_i / √(σ₁² + σ_i²).
    static func normalised(_ e: [Double], _ p: TDoAProblem) -> [Double] {
        e.indices.map { e[$0] / (p.sigmas[0] * p.sigmas[0] + p.sigmas[$0 + 1] * p.sigmas[$0 + 1]).squareRoot() }
    }
}
