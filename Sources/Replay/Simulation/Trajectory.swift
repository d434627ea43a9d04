import Foundation
import Positioning

/// One kinematic sample of a phone's true motion.
public struct KinematicState: Sendable {
    public var t: Double
    /// ENU position, m (u = floor height + phone height).
    public var e: Double, n: Double, u: Double
    public var floor: Int
    /// Walking/driving direction ψ, rad clockwise from true north (the phone's y axis points along it).
    public var heading: Double
    /// Speed, m/s; longitudinal acceleration dv/dt, m/s²; yaw rate dψ/dt, rad/s (clockwise positive).
    public var speed: Double, accel: Double, yawRate: Double
    /// Step phase φ, rad (a step is completed each time φ passes a multiple of 2π) and the
    /// relative step intensity (0 standing … 1 walking at cruise speed).
    public var stepPhase: Double, stepIntensity: Double
    /// Distance travelled since the start, m.
    public var odometer: Double
}

/// A photo exposure during a pause (the phone is still).
public struct PhotoShot: Sendable {
    public var t: Double
    public var landmark: String
    public var pair: Int
    /// 1 = first (farther) shot, 2 = second shot after walking toward the landmark.
    public var index: Int
}

/// The true motion of one phone, sampled every `dt` s, obtained by integrating a simple
/// pedestrian/vehicle kinematic model along the waypoints:
///
/// 1. Heading: pure pursuit of the next waypoint; yaw rate ψ̇ = clamp(4·wrap(ψ_d − ψ), ±ω_max),
///    ω_max = min(max_turn_rate, a_lat/v) — turns have finite radius v²/a_lat.
/// 2. Speed: trapezoidal; cruise v₀, slowed to √(2·a·d) approaching a stop (pause or end), and by
///    cos(heading error) in sharp turns; |dv/dt| ≤ a.
/// 3. Position: p += v·u(ψ)·dt with u(ψ) = [sin ψ, cos ψ].
/// 4. Steps (walk mode): phase rate 2π·f_step while v > 0.2 m/s; intensity v/v₀ (≤ 1).
///
/// Because speed and heading are continuous, the accelerometer model can use the exact
/// kinematic acceleration (dv/dt along the track, v·ψ̇ across it), so integrating the simulated
/// accelerometer between two stops gives the true displacement (CamLoc, estimators.md §5.3).
public struct Trajectory: Sendable {
    public let dt: Double
    public private(set) var samples: [KinematicState]
    public private(set) var photos: [PhotoShot]
    /// Time the path ended (last waypoint reached and its pause over), s.
    public private(set) var endTime: Double
    /// True when a path without a fixed duration had not ended at `maxDuration` (it was cut).
    public private(set) var truncated = false

    /// Integrates `path` from 0 up to `duration` (nil: until the path ends).
    /// `landmarks` resolves photo waypoints (position of the object to walk toward).
    public init(path: PathSpec, floorHeights: [Double], phoneHeight: Double, duration: Double?,
                landmarks: [String: (e: Double, n: Double)], dt: Double = 0.01, pairBase: Int = 0,
                maxDuration: Double = Scenario.maxPhoneSeconds) {
        self.dt = dt
        // Expand photo waypoints: stop (shot 1), walk `advance` toward the landmark, stop (shot 2).
        struct WP { var e, n: Double; var floor: Int; var pause: Double; var shot: (String, Int, Int)? }
        var wps: [WP] = []
        var pair = pairBase
        for w in path.waypoints {
            if let l = w.photoOf, let lm = landmarks[l] {
                pair += 1
                let pause = max(w.pause, 4)
                wps.append(WP(e: w.e, n: w.n, floor: w.floor, pause: pause, shot: (l, pair, 1)))
                let dx = lm.e - w.e, dy = lm.n - w.n, d = max(1e-9, (dx * dx + dy * dy).squareRoot())
                wps.append(WP(e: w.e + w.advance * dx / d, n: w.n + w.advance * dy / d, floor: w.floor, pause: pause, shot: (l, pair, 2)))
            } else {
                wps.append(WP(e: w.e, n: w.n, floor: w.floor, pause: w.pause, shot: nil))
            }
        }
        let walk = path.mode == .walk
        var st = KinematicState(t: 0, e: wps[0].e, n: wps[0].n, u: 0, floor: wps[0].floor, heading: 0, speed: 0, accel: 0,
                                yawRate: 0, stepPhase: 0, stepIntensity: 0, odometer: 0)
        func height(_ f: Int) -> Double { (f < floorHeights.count ? floorHeights[f] : 0) + phoneHeight }
        st.u = height(st.floor)
        if wps.count > 1 { st.heading = atan2(wps[1].e - wps[0].e, wps[1].n - wps[0].n) }
        var samples: [KinematicState] = []
        var photos: [PhotoShot] = []
        var target = 1
        var pauseLeft = path.start  // wait until start
        var pendingShot: (String, Int, Int)? = nil
        var shotAt = 0.0
        var finished = path.mode == .static || wps.count < 2
        // The first waypoint may itself be a stop with a photo.
        if !finished, let s0 = wps[0].shot { pendingShot = s0; pauseLeft += wps[0].pause; shotAt = path.start + wps[0].pause / 2 }
        else if !finished { pauseLeft += wps[0].pause }
        var end = finished ? 0.0 : Double.infinity
        let maxT = min(duration ?? .infinity, maxDuration)
        var k = 0
        while true {
            st.t = Double(k) * dt
            if st.t > maxT + 1e-9 { truncated = duration == nil && !finished; break }
            if duration == nil && finished && st.t > end + 1e-9 { break }
            samples.append(st)
            if let s = pendingShot, st.t >= shotAt - 1e-9 {
                photos.append(PhotoShot(t: quantise(st.t, dt), landmark: s.0, pair: s.1, index: s.2)); pendingShot = nil
            }
            k += 1
            // Advance the state by dt.
            var v = st.speed, psi = st.heading
            var psiDot = 0.0
            if finished || pauseLeft > 1e-12 {
                pauseLeft -= dt
                v = 0
            } else {
                let w = wps[target]
                let dx = w.e - st.e, dy = w.n - st.n, dist = (dx * dx + dy * dy).squareRoot()
                let isStop = w.pause > 0 || (!path.loop && target == wps.count - 1)
                let desired = atan2(dx, dy)
                let err = Angle.wrap(desired - psi)
                let omegaMax = min(path.maxTurnRate, path.lateralAcceleration / max(v, 0.05))
                psiDot = max(-omegaMax, min(omegaMax, 4 * err))
                var vt = path.speed
                if isStop { vt = min(vt, max(0.02, (2 * path.acceleration * max(0, dist - 0.01)).squareRoot())) }
                vt *= abs(err) < .pi / 2 ? max(0.3, cos(err)) : 0.3
                v += max(-path.acceleration * dt, min(path.acceleration * dt, vt - v))
                psi = Angle.wrap(psi + psiDot * dt)
                let step = v * dt
                let reachR = isStop ? max(step * 1.5, 0.01) : max(0.3, v * v / path.lateralAcceleration + 0.2)
                if dist <= reachR || (isStop && step >= dist) {
                    // Arrive: snap stops onto the waypoint.
                    if isStop { st.e = w.e; st.n = w.n; st.odometer += dist; v = 0 } else {
                        st.e += step * sin(psi); st.n += step * cos(psi); st.odometer += step
                    }
                    st.floor = w.floor
                    pauseLeft = w.pause
                    if let s = w.shot { pendingShot = s; shotAt = st.t + dt + w.pause / 2 }
                    if target == wps.count - 1 {
                        if path.loop { target = 0 } else { finished = true; end = st.t + dt + w.pause }
                    } else { target += 1 }
                } else {
                    st.e += step * sin(psi); st.n += step * cos(psi); st.odometer += step
                }
            }
            st.accel = (v - st.speed) / dt
            st.speed = v
            st.heading = psi
            st.yawRate = psiDot
            st.u = height(st.floor)
            if walk && v > 0.2 {
                st.stepPhase += 2 * .pi * path.stepFrequency * dt
                st.stepIntensity = min(1, v / path.speed)
            } else { st.stepIntensity = 0 }
        }
        self.samples = samples
        self.photos = photos
        self.endTime = finished ? min(end, samples.last?.t ?? 0) : (samples.last?.t ?? 0)
    }

    public var duration: Double { samples.last?.t ?? 0 }

    /// The state at time t (nearest earlier sample; positions linearly interpolated).
    public func state(at t: Double) -> KinematicState {
        guard !samples.isEmpty else { fatalError("empty trajectory") }
        let x = t / dt
        let i = max(0, min(samples.count - 1, Int(x.rounded(.down))))
        var s = samples[i]
        let f = x - Double(i)
        if f > 1e-9, i + 1 < samples.count {
            let b = samples[i + 1]
            s.e += f * (b.e - s.e); s.n += f * (b.n - s.n); s.u += f * (b.u - s.u)
            s.heading = Angle.wrap(s.heading + f * Angle.wrap(b.heading - s.heading))
            s.speed += f * (b.speed - s.speed); s.stepPhase += f * (b.stepPhase - s.stepPhase)
            s.odometer += f * (b.odometer - s.odometer)
            s.t = t
        }
        return s
    }

    /// Times at which a step completes (step phase passes a multiple of 2π while walking).
    public var stepTimes: [Double] {
        var out: [Double] = []
        var last = 0.0
        for s in samples {
            let k = (s.stepPhase / (2 * .pi)).rounded(.down)
            if k > last { out.append(s.t); last = k }
        }
        return out
    }
}
