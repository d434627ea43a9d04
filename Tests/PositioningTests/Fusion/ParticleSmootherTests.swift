import Foundation
import Testing
@testable import Positioning

/// The genealogy particle smoother (`ParticleSmoother`, `smoother: {filter: pf}`).
@Suite struct ParticleSmootherTests {
    /// Exact weights on a hand-made genealogy: three clouds of three particles. The last cloud's
    /// weights (0.5, 0.3, 0.2) flow to the parents: cloud 1 particle 0 gets 0.5 + 0.2, particle 2
    /// gets 0.3; cloud 0 particle 1 gets all (both are its children). Cloud 0's marginal is
    /// therefore a point at its particle 1, cloud 1's the 0.7/0.3 mixture.
    @Test func weightsFollowTheGenealogy() throws {
        let c0 = SealedCloud(east: [0, 10, 20], north: [0, 0, 0], weight: [0.2, 0.3, 0.5], parent: [-1, -1, -1])
        let c1 = SealedCloud(east: [1, 2, 3], north: [5, 6, 7], weight: [1 / 3, 1 / 3, 1 / 3], parent: [1, 1, 1])
        let c2 = SealedCloud(east: [4, 5, 6], north: [0, 0, 0], weight: [0.5, 0.3, 0.2], parent: [0, 2, 0])
        let s = ParticleSmoother.smooth([c0, nil, c1, c2])
        #expect(s[1] == nil)
        let s0 = try #require(s[0]), s1 = try #require(s[2]), s2 = try #require(s[3])
        #expect(abs(s0.mean.x - 10) < 1e-12 && abs(s0.mean.y) < 1e-12 && s0.covariance.ee < 1e-12 && s0.distinct == 1)
        // cloud 1: 0.7 at (1, 5), 0.3 at (3, 7)
        #expect(abs(s1.mean.x - 1.6) < 1e-12 && abs(s1.mean.y - 5.6) < 1e-12 && s1.distinct == 2)
        #expect(abs(s1.covariance.ee - 0.7 * 0.3 * 4) < 1e-12 && abs(s1.covariance.en - 0.7 * 0.3 * 4) < 1e-12)
        // the last cloud: its own filtered weights
        #expect(abs(s2.mean.x - (0.5 * 4 + 0.3 * 5 + 0.2 * 6)) < 1e-12 && s2.distinct == 3)
    }

    /// A restart (parents −1) cuts the recursion: the cloud before it is smoothed from its own weights.
    @Test func restartStartsANewSegment() throws {
        let a = SealedCloud(east: [0, 10], north: [0, 0], weight: [0.5, 0.5], parent: [-1, -1])
        let b = SealedCloud(east: [100, 200], north: [0, 0], weight: [1, 0], parent: [-1, -1])
        let s = ParticleSmoother.smooth([a, b])
        #expect(abs(try #require(s[0]).mean.x - 5) < 1e-12)
        #expect(abs(try #require(s[1]).mean.x - 100) < 1e-12)
    }

    /// Seeded constant-velocity walks with white fixes (σ 3 m), the pf (500 particles) and its
    /// smoother over the same fixes: the smoothed RMSE is below the filtered one, and each run's
    /// smoothed track has one estimate per filtered output.
    @Test func smoothedTrackBeatsTheFilter() {
        var se = (filtered: 0.0, smoothed: 0.0, count: 0)
        for r in 0..<20 {
            let x = SmootherTests.run(kind: .pf, seed: 2000 + UInt64(r), epochs: 40, particles: 500)
            #expect(x.smoothed.count == x.filtered.count)
            for (k, p) in x.truth.enumerated() where k < min(x.filtered.count, x.smoothed.count) {
                let df = x.filtered[k].position - p, ds = x.smoothed[k].position - p
                se.filtered += (df * df).sum(); se.smoothed += (ds * ds).sum(); se.count += 1
            }
        }
        let f = (se.filtered / Double(se.count)).squareRoot(), s = (se.smoothed / Double(se.count)).squareRoot()
        #expect(s < 0.9 * f, "smoothed RMSE \(s) m vs filtered \(f) m")
    }

    /// Walls: fixes that walk east through a wall at x = 5 m and come back. The filter's particles
    /// die where they would cross, so no smoothed position is east of the wall, while the
    /// smoother without walls follows the fixes across.
    @Test func smoothedTrackStaysBehindTheWall() {
        let wall = ReferenceData(walls: [Wall(a: SIMD2(5, -50), b: SIMD2(5, 50))])
        let context = PipelineContext(header: SmootherTests.context.header, reference: wall)
        func maxEast(walls: Bool) -> Double {
            var s = FusionStage.Settings(kind: .pf)
            s.particles = 500; s.useWalls = walls; s.layout = .cv; s.gnssBias = nil
            let stage = SmootherStage(settings: s)
            for k in 0...30 {
                let x = k <= 20 ? Double(k - 10) : Double(30 - k)       // −10 → 10 m, then back to 0
                let f = Fix(time: Double(k), position: SIMD2(x, 0), covariance: Covariance2(sigma: 1), source: .gnss)
                let e = TraceEvent(time: f.time, payload: .gnss(GNSSFix(latitude: 0, longitude: 0, accuracy: 1)))
                _ = stage.process(e, upstream: [.fix(f)], context: context)
            }
            let out = SmootherTests.fixes(stage.finish(context: context))
            #expect(out.count >= 30)
            return out.map(\.position.x).max() ?? .nan
        }
        #expect(maxEast(walls: false) > 8)
        #expect(maxEast(walls: true) < 5)
    }
}

/// The particle filter's wall handling (`ParticleFilter.applyWallHits`, walkable start).
@Suite struct ParticleWallTests {
    static func filter() -> ParticleFilter {
        var m = MotionConfiguration(layout: .step)
        m.step.lengthSigmaFraction = 0; m.step.headingSigmaPerStep = 0; m.step.scaleSigmaPerStep = 0
        m.step.positionDiffusion = 0; m.step.headingDiffusion = 0                    // only the step moves
        return ParticleFilter(motion: m, count: 400, seed: 5)
    }
    static func start(_ pf: ParticleFilter, east: Double, sigma: Double) {
        var p = Mat4.zero
        p[0, 0] = sigma * sigma; p[1, 1] = 1e-6; p[2, 2] = 1e-12; p[3, 3] = 1e-12
        pf.initialize(mean: SIMD4(east, 0, .pi / 2, 1), covariance: p, time: 0)     // heading east, scale 1
    }

    /// Half the cloud crosses the wall at x = 0 on a 1 m step east: those particles weigh 0 at
    /// once, so the output mean is the survivors' (west of the wall), not the average of both.
    @Test func crossersWeighNothingAtOnce() {
        let pf = Self.filter()
        pf.walls = [Wall(a: SIMD2(0, -50), b: SIMD2(0, 50))]
        Self.start(pf, east: -1, sigma: 0.3)
        pf.predict(step: StepInput(time: 1, length: 1, headingChange: 0))
        let alive = pf.particles.filter { $0.weight > 0 }
        #expect(alive.allSatisfy { $0.position.x <= 0 } && alive.count > 50 && alive.count < 350)
        #expect(pf.mean[0] < 0 && pf.wallResets == 0)
    }

    /// Every particle crosses: the walls are ignored for that move (counted), the filter lives on.
    @Test func aMoveThatKillsEveryoneIgnoresTheWalls() {
        let pf = Self.filter()
        pf.walls = [Wall(a: SIMD2(0, -50), b: SIMD2(0, 50))]
        Self.start(pf, east: -0.5, sigma: 0.01)
        pf.predict(step: StepInput(time: 1, length: 1, headingChange: 0))
        #expect(pf.wallResets == 1 && abs(pf.mean[0] - 0.5) < 0.05, "resets \(pf.wallResets), mean \(pf.mean), alive \(pf.particles.filter { $0.weight > 0 }.count)")
        let r = pf.update(PositionMeasurement(fix: Fix(time: 2, position: SIMD2(0.5, 0), covariance: Covariance2(sigma: 1), source: .wcl)), gate: nil)
        #expect(r.outcome == .accepted)
    }

    /// A start drawn over a closed shop outline puts no particle inside it (walkable area).
    @Test func startIsDrawnInTheWalkableArea() {
        let pf = Self.filter()
        let ring: [SIMD2<Double>] = [SIMD2(-20, -20), SIMD2(20, -20), SIMD2(20, 20), SIMD2(-20, 20)]
        let shop: [SIMD2<Double>] = [SIMD2(-1, -1), SIMD2(1, -1), SIMD2(1, 1), SIMD2(-1, 1)]
        pf.walls = [ring, shop].flatMap { r in r.indices.map { Wall(a: r[$0], b: r[($0 + 1) % r.count], bounds: true) } }
        var p = Mat4.zero
        p[0, 0] = 1; p[1, 1] = 1; p[2, 2] = 0.01; p[3, 3] = 0.01
        pf.initialize(mean: SIMD4(0, 0, 0, 1), covariance: p, time: 0)
        #expect(pf.particles.allSatisfy { abs($0.position.x) > 1 || abs($0.position.y) > 1 })
    }
}
