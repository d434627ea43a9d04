import Testing
import Foundation
@testable import Positioning

/// The step-driven motion model S1 (`StepMotionModel`): the step is walked along the heading
/// *after* the gyroscope's turn since the previous step.
@Suite struct StepMotionModelTests {
    /// Facing north, turn 90° clockwise on the spot, then one 0.7 m step: the walker is 0.7 m
    /// east (not north, which is where the old heading points), heading east.
    @Test func turnOnTheSpotThenStepGoesTheNewWay() {
        let m = StepMotionModel()
        let x = m.propagate(SIMD4(10, 20, 0, 1), StepInput(time: 0, length: 0.7, headingChange: .pi / 2))
        #expect(abs(x[0] - 10.7) < 1e-12 && abs(x[1] - 20) < 1e-12)
        #expect(abs(x[2] - .pi / 2) < 1e-12 && x[3] == 1)
    }

    /// Every filter takes the step the same way (with the old order, turning after the step, all
    /// three end at (0, 1): north).
    @Test func filtersWalkAlongTheTurnedHeading() {
        let motion = MotionConfiguration(layout: .step)
        var p0 = Mat4.zero
        p0[0, 0] = 1e-4; p0[1, 1] = 1e-4; p0[2, 2] = 1e-6; p0[3, 3] = 1e-6
        let filters: [any FusionFilter] = [ExtendedKalmanFilter(motion: motion), UnscentedKalmanFilter(motion: motion),
                                          ParticleFilter(motion: motion, count: 4000, seed: 3)]
        for f in filters {
            f.initialize(mean: SIMD4(0, 0, 0, 1), covariance: p0, time: 0)
            f.predict(step: StepInput(time: 0.5, length: 1, headingChange: -.pi / 2))   // turn west, step
            let x = f.mean
            // EKF exact; UKF to second order in the (tiny) prior spread; PF within Monte Carlo error.
            let tol = f is ParticleFilter ? 0.02 : f is UnscentedKalmanFilter ? 1e-4 : 1e-9
            #expect(abs(x[0] + 1) < tol && abs(x[1]) < tol, "\(type(of: f)): \(x)")
        }
    }

    /// The analytic F (∂f/∂x) against central differences, at a heading and turn that make every
    /// entry non-trivial (GTSAM habit: every Jacobian against a numerical derivative).
    @Test func jacobianMatchesFiniteDifferences() {
        let m = StepMotionModel()
        let x = SIMD4<Double>(3, -2, 2.5, 1.08), step = StepInput(time: 0, length: 0.74, headingChange: 0.9)
        let f = m.jacobian(x, step)
        let h = 1e-6
        for j in 0..<4 {
            var dx = SIMD4<Double>.zero
            dx[j] = h
            let a = m.propagate(x + dx, step), b = m.propagate(x - dx, step)
            for i in 0..<4 {
                let numeric = i == 2 ? Angle.wrap(a[i] - b[i]) / (2 * h) : (a[i] - b[i]) / (2 * h)
                #expect(abs(f[i, j] - numeric) < 1e-7, "F[\(i),\(j)] \(f[i, j]) vs \(numeric)")
            }
        }
    }
}
