import Foundation
import Testing
@testable import Positioning

/// The GNSS bias block (`GNSSBias`) against the 6-state Kalman filter written out in full
/// (dense `Matrix` algebra): the block equations must be that filter, to rounding.
@Suite struct GNSSBiasTests {
    /// Dense augmented Kalman filter y = [x; b], the reference.
    struct Dense {
        var y: [Double]
        var p: Matrix
        mutating func predict(f: Mat4, q: Mat4, phi: Double, stationary sb: Covariance2) {
            var fy = Matrix.identity(6), qy = Matrix(rows: 6, cols: 6)
            for i in 0..<4 { for j in 0..<4 { fy[i, j] = f[i, j]; qy[i, j] = q[i, j] } }
            fy[4, 4] = phi; fy[5, 5] = phi
            let a = 1 - phi * phi
            qy[4, 4] = a * sb.ee; qy[4, 5] = a * sb.en; qy[5, 4] = a * sb.en; qy[5, 5] = a * sb.nn
            y = fy * y
            p = (fy * p * fy.transposed + qy).symmetrized
        }
        mutating func update(h: Matrix, z: [Double], r: Matrix) {
            let s = h * p * h.transposed + r
            let k = p * h.transposed * s.inverse!
            let hy = h * y
            let nu = zip(z, hy).map { $0 - $1 }
            y = zip(y, k * nu).map { $0 + $1 }
            let ikh = Matrix.identity(6) - k * h
            p = (ikh * p * ikh.transposed + k * r * k.transposed).symmetrized
        }
    }

    static func expectClose(_ block: GNSSBias, _ x: SIMD4<Double>, _ p: Mat4, _ d: Dense, _ what: String) {
        let y = x.indices.map { x[$0] } + [block.bias.x, block.bias.y]
        let py = block.augmented(p)
        for i in 0..<6 {
            #expect(abs(y[i] - d.y[i]) < 1e-9, "\(what): y[\(i)] \(y[i]) vs \(d.y[i])")
            for j in 0..<6 { #expect(abs(py[i, j] - d.p[i, j]) < 1e-9 * (1 + abs(d.p[i, j])), "\(what): P[\(i),\(j)] \(py[i, j]) vs \(d.p[i, j])") }
        }
    }

    /// CV layout; predictions, two GNSS fixes (priming, then a different Σ), a plain position fix
    /// of another source and a linear 1-D measurement, each compared with the dense filter.
    @Test func blockEquationsAreTheAugmentedKalmanFilter() throws {
        let cv = ConstantVelocityModel(q: 0.7)
        var x = SIMD4<Double>(3, -2, 0.5, 1.1)
        var p = Mat4(rowMajor: [4, 0.5, 0.3, 0, 0.5, 3, 0, 0.2, 0.3, 0, 1, 0.1, 0, 0.2, 0.1, 0.8])
        var block = GNSSBias(correlationTime: 20, biasFraction: 0.7)
        var time = 0.0
        let sigma1 = Covariance2(ee: 9, en: 1.5, nn: 6)
        // Prime at the first fix: b ~ N(0, βΣ) independent of x.
        var p0 = Matrix(rows: 6, cols: 6)
        for i in 0..<4 { for j in 0..<4 { p0[i, j] = p[i, j] } }
        p0[4, 4] = 0.7 * sigma1.ee; p0[4, 5] = 0.7 * sigma1.en; p0[5, 4] = 0.7 * sigma1.en; p0[5, 5] = 0.7 * sigma1.nn
        var dense = Dense(y: [3, -2, 0.5, 1.1, 0, 0], p: p0)

        func predict(_ dt: Double) {
            let f = cv.transition(dt: dt), q = cv.noise(dt: dt)
            dense.predict(f: f, q: q, phi: block.decay(dt), stationary: block.stationary ?? .zero)
            x = f * x; p = (p.congruence(f) + q).symmetrized
            time += dt
            block.predict(transition: f, to: time)
        }
        func gnss(_ z: SIMD2<Double>, _ sigma: Covariance2) throws {
            let result = block.updateFix(z, covariance: sigma, mean: x, prior: p, gate: nil, angleIndex: nil)
            let out = try #require(result)
            x = out.mean; p = out.covariance
            let rw = sigma.scaled(1 - block.biasFraction)
            dense.update(h: Matrix([[1, 0, 0, 0, 1, 0], [0, 1, 0, 0, 0, 1]]), z: [z.x, z.y], r: Matrix([[rw.ee, rw.en], [rw.en, rw.nn]]))
        }
        func other(_ h: [SIMD4<Double>], _ z: [Double], _ r: Matrix) throws {
            let nu = zip(z, h).map { $0 - ($1 * x).sum() }
            let prior = p
            guard case .success(let res) = KalmanAlgebra.update(mean: x, covariance: p, h: h, innovation: nu, noise: r, gate: nil, angleIndex: nil) else {
                Issue.record("update failed"); return
            }
            x = res.mean; p = res.covariance
            block.update(h: h, innovation: nu, noise: r, prior: prior)
            var hy = Matrix(rows: h.count, cols: 6)
            for i in h.indices { for j in 0..<4 { hy[i, j] = h[i][j] } }
            dense.update(h: hy, z: z, r: r)
        }

        try gnss(SIMD2(5, -1), sigma1)
        Self.expectClose(block, x, p, dense, "first GNSS fix")
        predict(1.0)
        Self.expectClose(block, x, p, dense, "predict")
        try gnss(SIMD2(6.5, 0.2), Covariance2(ee: 16, en: -2, nn: 12))
        Self.expectClose(block, x, p, dense, "second GNSS fix")
        predict(0.5)
        try other([SIMD4(1, 0, 0, 0), SIMD4(0, 1, 0, 0)], [7, 1], Matrix([[4, 0.5], [0.5, 5]]))
        Self.expectClose(block, x, p, dense, "position fix of another source")
        predict(2.0)
        try other([SIMD4(0.6, 0.8, 0, 0)], [6.0], Matrix([[0.25]]))
        Self.expectClose(block, x, p, dense, "1-D measurement")
        predict(1.0)
        try gnss(SIMD2(9, 3), Covariance2(ee: 10, en: 0, nn: 10))
        Self.expectClose(block, x, p, dense, "third GNSS fix")
        #expect(block.bias != .zero)
    }

    /// Priming at the fix that starts the filter: x̂_p = z, P_pp = Σ, and the position error
    /// −(b + w) is correlated with b: C_p = −Σ_b, so the first update already knows that the
    /// next fix shares the start's bias. The block stays positive semi-definite.
    @Test func primingAtTheStartingFixCorrelatesPositionAndBias() throws {
        let sigma = Covariance2(ee: 16, en: 2, nn: 9)
        var block = GNSSBias(correlationTime: 30, biasFraction: 0.75)
        block.prime(startingAt: sigma, time: 0)
        var p = Mat4.diagonal(SIMD4(0, 0, 1, 1))
        p[0, 0] = sigma.ee; p[0, 1] = sigma.en; p[1, 0] = sigma.en; p[1, 1] = sigma.nn
        let y = block.augmented(p)
        #expect(y[0, 4] == -12 && y[1, 5] == -6.75 && y[0, 5] == -1.5 && y[4, 4] == 12)
        #expect((y + 1e-9 * Matrix.identity(6)).cholesky != nil, "positive semi-definite")
        // A second fix at the same instant shares the bias: only the white parts average,
        // P_pp = Σ_b + R_w/2 = (0.75 + 0.125) Σ (white fixes would give Σ/2).
        let result = block.updateFix(SIMD2(0, 0), covariance: sigma, mean: .zero, prior: p, gate: nil, angleIndex: nil)
        let out = try #require(result)
        #expect(out.nis == 0)
        #expect(abs(out.covariance[0, 0] - 0.875 * sigma.ee) < 1e-9 && abs(out.covariance[0, 1] - 0.875 * sigma.en) < 1e-9)
    }

    /// Priming at a two-point constant-velocity start (`FusionStage`'s re-initialisation from two
    /// fixes Δt apart: x̂_p = z, x̂_v = (z − z₋)/Δt, P_pp = Σ, P_pv = Σ/Δt, P_vv = (Σ + Σ₋)/Δt²): the
    /// joint covariance must be that of the generative model e = b + w, e₋ independent of e,
    /// position error −e, velocity error −(e − e₋)/Δt, so C_v = −Σ_b/Δt. It is positive definite and
    /// stays so through a velocity measurement (the dense 6-state update), after which a GNSS fix
    /// is an ordinary update. With C_v = 0 (the priming before) the same P makes the joint
    /// indefinite, and after the velocity update the fix's S is singular or negative.
    @Test func primingAtATwoPointStartCorrelatesVelocityAndBias() throws {
        let sigma = Covariance2(ee: 16, en: 2, nn: 9), previous = Covariance2(ee: 12, en: -1, nn: 10), dt = 1.0, beta = 0.96
        var p = Mat4.zero
        let c = [[sigma.ee, sigma.en], [sigma.en, sigma.nn]], cp = [[previous.ee, previous.en], [previous.en, previous.nn]]
        for i in 0..<2 { for j in 0..<2 {
            p[i, j] = c[i][j]; p[i, j + 2] = c[i][j] / dt; p[i + 2, j] = c[i][j] / dt; p[i + 2, j + 2] = (c[i][j] + cp[i][j]) / (dt * dt)
        } }
        var block = GNSSBias(correlationTime: 200, biasFraction: beta)
        block.prime(startingAt: sigma, time: 0, differencedOver: dt)
        let y = block.augmented(p)
        for i in 0..<2 { for j in 0..<2 {
            #expect(abs(y[i, j + 4] + beta * c[i][j]) < 1e-12 && abs(y[i + 2, j + 4] + beta * c[i][j] / dt) < 1e-12)
            #expect(abs(y[i + 4, j + 4] - beta * c[i][j]) < 1e-12)
        } }
        #expect((y + 1e-9 * Matrix.identity(6)).cholesky != nil, "positive semi-definite")
        // A receiver velocity (σ 0.4 m/s) through the dense filter, then the block's own equations.
        var h = Matrix(rows: 2, cols: 6)
        h[0, 2] = 1; h[1, 3] = 1
        var dense = Dense(y: [0, 0, 0, 0, 0, 0], p: y)
        dense.update(h: h, z: [0.3, -0.2], r: Matrix([[0.16, 0], [0, 0.16]]))
        #expect((dense.p + 1e-9 * Matrix.identity(6)).cholesky != nil, "still positive semi-definite")
        #expect(dense.p[0, 0] < 0.6 * sigma.ee, "the velocity shrank P_pp through P_pv")
        var pAfter = Mat4.zero
        for i in 0..<4 { for j in 0..<4 { pAfter[i, j] = dense.p[i, j] } }
        block.update(h: [SIMD4(0, 0, 1, 0), SIMD4(0, 0, 0, 1)], innovation: [0.3, -0.2], noise: Matrix([[0.16, 0], [0, 0.16]]), prior: p)
        let yb = block.augmented(pAfter)
        for i in 0..<6 { for j in 0..<6 { #expect(abs(yb[i, j] - dense.p[i, j]) < 1e-9 * (1 + abs(dense.p[i, j])), "[\(i),\(j)]") } }
        let result = block.updateFix(SIMD2(0.5, -0.5), covariance: sigma, mean: SIMD4(dense.y[0], dense.y[1], dense.y[2], dense.y[3]),
                                     prior: pAfter, gate: nil, angleIndex: nil)
        let fix = try #require(result)
        #expect(fix.nis >= 0 && fix.covariance[0, 0] > 0 && fix.covariance[1, 1] > 0)
        // The priming before (C_v = 0) beside the same P: not positive semi-definite.
        var old = GNSSBias(correlationTime: 200, biasFraction: beta)
        old.prime(startingAt: sigma, time: 0)
        var oldDense = Dense(y: [0, 0, 0, 0, 0, 0], p: old.augmented(p))
        oldDense.update(h: h, z: [0.3, -0.2], r: Matrix([[0.16, 0], [0, 0.16]]))
        #expect(oldDense.p.cholesky == nil)
    }

    /// A gated GNSS fix changes neither the filter nor the block; an unprimed block is primed
    /// only by an accepted fix.
    @Test func gatedFixChangesNothing() throws {
        var block = GNSSBias()
        let p = Mat4.diagonal(SIMD4(1, 1, 0.1, 0.1))
        let result = block.updateFix(SIMD2(100, 0), covariance: Covariance2(sigma: 1), mean: .zero, prior: p, gate: 9.21, angleIndex: nil)
        let out = try #require(result)
        #expect(out.nis < -9.21 && out.mean == .zero && out.covariance == p)
        #expect(!block.isPrimed)
    }
}

