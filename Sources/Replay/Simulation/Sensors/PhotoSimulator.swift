import Foundation
import Positioning

/// Two-photo landmark reports (docs/simulator.md §Camera; estimators.md §5).
///
/// At each shot the phone is still; the user aims the camera (held level at the phone height)
/// at the landmark with an aiming error N(0, σ_aim²): camera azimuth ψ_c = β + e_aim, β the true
/// bearing to the landmark. Off-axis angle α = β − ψ_c; depth along the optical axis Z = ρ·cos α
/// (ρ horizontal range). Pinhole projection:
///   x_px = c_x + f·tan α,  y_px = c_y − f·(u_mid − u_cam)/Z,  h_px = f·H/Z,
/// plus pixel noise N(0, σ_px²) on the centre and N(0, 2σ_px²) on the height (two edges).
/// The reported magnetic azimuth of the optical axis is ψ_c − β_m + N(0, σ_compass²), β_m the
/// bearing of the locally disturbed horizontal field (the same disturbance field as the
/// magnetometer), i.e. true magnetic azimuth ψ_c − D plus the local compass deviation.
/// Ground truth of the object (`device = object:<landmark>`) is logged with the second shot.
/// A shot whose object does not fit in the frame (level camera) is not taken.
struct PhotoSimulator {
    let camera: CameraSpec
    let landmarks: [LandmarkSpec]
    let declination: Double

    func events(trajectory tr: Trajectory, device: String, magnetic: MagneticEnvironment, seed: UInt64, until end: Double) -> [TraceEvent] {
        let rng = SimRNG(seed: seed, stream: "camera/\(device)")
        let f = camera.focal, cx = Double(camera.width) / 2, cy = Double(camera.height) / 2
        var out: [TraceEvent] = []
        for shot in tr.photos where shot.t <= end {
            guard let lm = landmarks.first(where: { $0.id == shot.landmark }) else { continue }
            let s = tr.state(at: shot.t)
            let de = lm.e - s.e, dn = lm.n - s.n
            let rho = (de * de + dn * dn).squareRoot()
            let beta = atan2(de, dn)
            let psiC = beta + rng.gaussian(camera.aimSigma * .pi / 180)
            let alpha = Angle.wrap(beta - psiC)
            let Z = rho * cos(alpha)
            let nx = rng.gaussian(camera.pixelSigma), ny = rng.gaussian(camera.pixelSigma)
            let nh = rng.gaussian(camera.pixelSigma * 2.0.squareRoot())
            let nc = rng.gaussian(camera.compassSigma)
            guard Z > 1 else { continue }
            let x = cx + f * tan(alpha) + nx
            let y = cy - f * (lm.u + lm.height / 2 - s.u) / Z + ny
            let h = f * lm.height / Z + nh
            // The user only takes the shot if the whole object is in the frame.
            let top = cy - f * (lm.u + lm.height - s.u) / Z, bottom = cy - f * (lm.u - s.u) / Z
            guard top >= 0, bottom <= Double(camera.height), x >= 0, x <= Double(camera.width) else { continue }
            let dev = magnetic.compassError(s.e, s.n)
            var az = (psiC - declination * .pi / 180 - dev) * 180 / .pi + nc
            az = az.truncatingRemainder(dividingBy: 360); if az < 0 { az += 360 }
            let pairID = "R\(shot.pair)"
            out.append(TraceEvent(time: shot.t, device: device, payload: .photo(PhotoObservation(
                id: "\(pairID)-\(shot.index)", pair: pairID, width: camera.width, height: camera.height, focalLength: f,
                cx: cx, cy: cy, exposureTime: shot.t, object: lm.id, objectX: quantise(x, 0.1), objectY: quantise(y, 0.1),
                objectHeight: quantise(h, 0.1), cameraAzimuthMagnetic: quantise(az, 0.1)))))
            if shot.index == 2 {
                out.append(TraceEvent(time: shot.t, device: Subject.object(lm.id).id, payload: .groundTruth(GroundTruth(
                    position: .local(SIMD3(lm.e, lm.n, lm.u)), kind: .checkpoint))))
            }
        }
        return out
    }
}
