import Foundation
import Positioning
import TraceIO

/// A simulation scenario: venue, infrastructure, phones with their paths, and sensor noise
/// models. Read from YAML (`docs/scenario-template.yaml` documents every key, its unit and
/// default; `docs/simulator.md` the models and the sources of the defaults).
public struct Scenario: Sendable {
    public var name: String
    public var seed: UInt64
    /// Simulated span, s; nil = until every phone's path ends.
    public var duration: Double?
    public var origin: Geodetic
    public var declination: Double
    /// True air temperature, °C (speed of sound); `temperatureReported` goes into the header.
    public var temperature: Double
    public var temperatureReported: Double
    public var floorHeights: [Double]
    public var groundTruthRate: Double
    public var device: String
    public var phones: [PhoneSpec]
    public var magnetic: MagneticSpec
    public var gnss: GNSSSpec?
    public var wifi: WiFiSpec?
    public var cell: CellSpec?
    public var imu: IMUSpec?
    public var acoustic: AcousticSpec?
    public var peers: PeerSpec?
    public var camera: CameraSpec?
    public var landmarks: [LandmarkSpec]
}

public struct PhoneSpec: Sendable {
    public var id: String
    /// Phone height above the floor, m.
    public var height: Double
    /// Speaker–microphone distance k, m (BeepBeep).
    public var speakerMic: Double
    public var path: PathSpec
}

public struct Waypoint: Sendable {
    public var e: Double, n: Double
    public var floor: Int
    /// Stop here for this long, s (0 = walk through).
    public var pause: Double
    /// Two-photo report of a landmark: shot 1 here, walk `advance` m toward it, shot 2.
    public var photoOf: String?
    public var advance: Double
}

public struct PathSpec: Sendable {
    public enum Mode: String, Sendable { case walk, drive, `static` }
    public var mode: Mode
    /// Cruise speed, m/s.
    public var speed: Double
    /// Step frequency (cadence), Hz (walk only).
    public var stepFrequency: Double
    /// Longitudinal acceleration limit, m/s².
    public var acceleration: Double
    /// Lateral (centripetal) acceleration limit, m/s², and yaw-rate limit, rad/s.
    public var lateralAcceleration: Double
    public var maxTurnRate: Double
    public var waypoints: [Waypoint]
    public var loop: Bool
    /// Time the phone starts moving, s.
    public var start: Double
}

public struct MagneticSpec: Sendable {
    /// Total intensity F, µT; inclination I (positive down), degrees.
    public var field: Double, inclination: Double
    /// Spatially correlated disturbance (per axis σ, µT; correlation distance, m).
    public var disturbanceSigma: Double, disturbanceCorrelation: Double
}

public struct GNSSSpec: Sendable {
    public var profile: String
    public var rate: Double
    public var availability: Double, meanOutage: Double
    public var whiteSigma: Double, biasSigma: Double, biasTau: Double
    public var verticalFactor: Double
    public var outlierProbability: Double, outlierMean: Double
    public var accuracyScale: Double, accuracyLogSigma: Double
    public var resolutionDeg: Double
}

public struct APSpec: Sendable {
    public var bssid: String, ssid: String
    public var e: Double, n: Double, u: Double
    public var floor: Int
    public var p0: Double, exponent: Double, frequency: Double
}

public struct WiFiSpec: Sendable {
    public var scanInterval: Double, scanDuration: Double, firstScan: Double
    public var threshold: Double, quantisation: Double
    public var shadowingSigma: Double, shadowingCorrelation: Double
    public var jitterSigma: Double, deviceOffset: Double
    public var floorAttenuation: Double
    public var maxAPs: Int
    public var aps: [APSpec]
    /// A fingerprint survey of the site before the walk (written to `reference.json`).
    public var survey: SurveySpec? = nil
}

/// A WiFi fingerprint survey (docs/simulator.md §WiFi survey): on a grid over `area`, a
/// surveying phone at `height` takes `scansPerPoint` scans per point; the map keeps each AP's
/// mean over the scans that heard it, for APs heard in at least half of them. The radio
/// environment has changed since: the survey sees the walk's shadowing plus an independent
/// change field per AP (σ `changeSigma`, decorrelation `changeCorrelation`), and its phone
/// has its own RSS offset.
public struct SurveySpec: Sendable {
    public var spacing: Double
    public var scansPerPoint: Int
    public var height: Double
    public var floor: Int
    /// [e0, n0, e1, n1], m.
    public var area: [Double]
    public var changeSigma: Double, changeCorrelation: Double
    public var deviceOffset: Double
}

public struct CellSiteSpec: Sendable {
    public var cell: CellID
    public var pci: Int?, arfcn: Int?
    public var e: Double, n: Double, height: Double
    /// Boresight, degrees from true north; antenna 3 dB beamwidth φ_3dB (65° for 3-sector sites);
    /// served sector width written to the cell DB as `beamwidth` (120° for 3-sector sites).
    public var azimuth: Double?, beamwidth: Double?, sectorWidth: Double?
    public var p0: Double
    public var range: Double?
}

public struct CellRadioSpec: Sendable {
    public var rat: RAT, mcc: Int, mnc: Int
    /// NR numerology μ (TA unit nr_mu<μ>).
    public var nrMu: Int
}

public struct CellSpec: Sendable {
    public var interval: Double
    public var rounding: String
    public var speedOfLight: Double
    public var btsSigma: Double
    public var nlosProbability: Double, nlosMean: Double
    public var taAvailability: Double
    public var pathLossExponent: Double
    public var shadowingSigma: Double, shadowingCorrelation: Double
    public var hysteresis: Double
    public var frontToBack: Double
    public var neighbours: Int
    public var sensitivity: Double
    public var radios: [CellRadioSpec]
    public var sites: [CellSiteSpec]
}

public struct IMUSpec: Sendable {
    public var rate: Double, magRate: Double
    public var accNoiseDensity: Double, accBiasSigma: Double, accBiasInstability: Double, accBiasTau: Double
    public var gyroNoiseDensity: Double, gyroBiasSigma: Double, gyroBiasInstability: Double, gyroBiasTau: Double
    public var magNoise: Double, magHardIron: Double
    public var accResolution: Double, gyroResolution: Double, magResolution: Double
    public var bounceAmplitude: Double?
    public var weinbergK: Double
    public var emitSteps: Bool
}

public struct BeaconSpec: Sendable {
    public var id: String
    public var e: Double, n: Double, u: Double
    public var offset: Double
}

public struct AcousticSpec: Sendable {
    public var period: Double
    public var sampleRate: Double
    public var quantise: Bool
    public var toaSigma: Double
    public var syncSigma: Double, syncTau: Double
    public var clockOffset: Double?
    public var clockDriftPPM: Double
    public var nlosProbability: Double, nlosMean: Double
    public var missProbability: Double
    public var maxRange: Double
    public var snrAt1m: Double
    public var beacons: [BeaconSpec]
}

public struct PeerSpec: Sendable {
    public var interval: Double
    public var sampleRate: Double
    public var beepGap: Double
    public var selfSigma: Double, crossSigma: Double
    public var maxRange: Double
    public var nlosProbability: Double, nlosMean: Double
    public var missProbability: Double
    public var clockPPM: Double
}

public struct CameraSpec: Sendable {
    public var width: Int, height: Int
    public var focal: Double
    public var pixelSigma: Double
    public var aimSigma: Double
    public var compassSigma: Double
}

public struct LandmarkSpec: Sendable {
    public var id: String
    public var e: Double, n: Double, u: Double
    public var height: Double
}

extension Scenario {
    /// Parses a scenario YAML file. Unknown keys are errors (see `ScenarioNode`).
    public static func load(url: URL) throws -> Scenario {
        try parse(yaml: try InputFile.text(url), file: url.path)
    }

    public static func parse(yaml: String, file: String = "scenario") throws -> Scenario {
        let r = try ScenarioNode.parse(yaml: yaml, file: file)
        let name = try r.string("name", "scenario")
        let seed = try r.int("seed", 1)
        guard seed >= 0 else { throw r.error("seed must be ≥ 0", key: "seed") }
        let duration = try r.doubleOpt("duration_s")
        guard let o = try r.child("origin") else { throw r.error("missing 'origin' {lat, lon, h}") }
        let origin = Geodetic(latitude: try o.double("lat", 0), longitude: try o.double("lon", 0), height: try o.double("h", 0))
        let temp = try r.double("temperature_c", 20)
        let floors = try r.doubles("floor_heights_m") ?? [0]
        var s = Scenario(
            name: name, seed: UInt64(seed), duration: duration, origin: origin,
            declination: try r.double("declination_deg", 0), temperature: temp,
            temperatureReported: temp + (try r.double("temperature_error_c", 0)),
            floorHeights: floors.isEmpty ? [0] : floors,
            groundTruthRate: try r.double("ground_truth_rate_hz", 1),
            device: try r.string("device", "simulated phone"),
            phones: [], magnetic: MagneticSpec(field: 48, inclination: 64, disturbanceSigma: 0.5, disturbanceCorrelation: 20),
            landmarks: [])
        guard s.groundTruthRate >= 1 else { throw r.error("ground truth must be ≥ 1 Hz", key: "ground_truth_rate_hz") }
        if let m = try r.child("magnetic") {
            s.magnetic = MagneticSpec(field: try m.double("field_ut", 48), inclination: try m.double("inclination_deg", 64),
                                      disturbanceSigma: try m.double("disturbance_sigma_ut", 0.5),
                                      disturbanceCorrelation: try m.double("disturbance_corr_m", 20))
        }
        for l in try r.list("landmarks") {
            s.landmarks.append(LandmarkSpec(id: try l.string("id", "L\(s.landmarks.count + 1)"), e: try l.double("e", 0),
                                            n: try l.double("n", 0), u: try l.double("u", 0), height: try l.double("height_m", 10)))
        }
        let phones = try r.list("phones")
        guard !phones.isEmpty else { throw r.error("at least one phone is required", key: "phones") }
        for (i, p) in phones.enumerated() {
            let id = try p.string("id", i == 0 ? Fix.defaultSubject : "phone\(i + 1)")
            guard let pn = try p.child("path") else { throw p.error("missing 'path'") }
            s.phones.append(PhoneSpec(id: id, height: try p.double("height_m", 1.2),
                                      speakerMic: try p.double("speaker_mic_m", 0.14), path: try parsePath(pn)))
        }
        if Set(s.phones.map(\.id)).count != s.phones.count { throw r.error("phone ids must be unique", key: "phones") }
        if s.duration == nil, s.phones.contains(where: { $0.path.loop && $0.path.mode != .static }) {
            throw r.error("a looping path needs 'duration_s'", key: "duration_s")
        }
        if let g = try r.child("gnss") { s.gnss = try parseGNSS(g) }
        if let w = try r.child("wifi") { s.wifi = try parseWiFi(w, floors: s.floorHeights) }
        if let c = try r.child("cell") { s.cell = try parseCell(c) }
        if let m = try r.child("imu") { s.imu = try parseIMU(m) }
        if let a = try r.child("acoustic") { s.acoustic = try parseAcoustic(a) }
        if let p = try r.child("peers") { s.peers = try parsePeers(p) }
        if let c = try r.child("camera") {
            s.camera = CameraSpec(width: try c.int("width_px", 4000), height: try c.int("height_px", 3000),
                                  focal: try c.double("focal_px", 3200), pixelSigma: try c.double("pixel_sigma_px", 1.0),
                                  aimSigma: try c.double("aim_sigma_deg", 3), compassSigma: try c.double("compass_sigma_deg", 3))
        }
        for p in s.phones { for w in p.path.waypoints { if let l = w.photoOf, !s.landmarks.contains(where: { $0.id == l }) {
            throw r.error("photo of unknown landmark '\(l)'", key: "phones")
        } } }
        if s.phones.contains(where: { $0.path.waypoints.contains { $0.photoOf != nil } }), s.camera == nil {
            s.camera = CameraSpec(width: 4000, height: 3000, focal: 3200, pixelSigma: 1, aimSigma: 3, compassSigma: 3)
        }
        for p in s.phones { for w in p.path.waypoints where w.floor < 0 || w.floor >= s.floorHeights.count {
            throw r.error("waypoint floor \(w.floor) has no entry in floor_heights_m", key: "phones")
        } }
        try r.checkUnused()
        try s.checkDomain(r)
        return s
    }

    static func parsePath(_ p: ScenarioNode) throws -> PathSpec {
        let modeS = try p.choice("mode", "walk", ["walk", "drive", "static"])
        let mode = PathSpec.Mode(rawValue: modeS)!
        let walk = mode != .drive
        var wps: [Waypoint] = []
        for w in try p.list("waypoints") {
            if !w.isMapping {
                guard let nums = w.numbers, nums.count >= 2 else { throw w.error("a waypoint is [e, n] (finite numbers) or {e, n, ...}") }
                wps.append(Waypoint(e: nums[0], n: nums[1], floor: 0, pause: 0, photoOf: nil, advance: 0))
            } else {
                wps.append(Waypoint(e: try w.double("e", 0), n: try w.double("n", 0), floor: try w.int("floor", 0),
                                    pause: try w.double("pause_s", 0), photoOf: try w.stringOpt("photo_of"),
                                    advance: try w.double("advance_m", 5)))
            }
        }
        guard !wps.isEmpty else { throw p.error("at least one waypoint is required", key: "waypoints") }
        let spec = PathSpec(mode: mode, speed: try p.double("speed_mps", walk ? 1.3 : 15),
                            stepFrequency: try p.double("step_frequency_hz", 1.8),
                            acceleration: try p.double("accel_mps2", walk ? 1.0 : 1.5),
                            lateralAcceleration: try p.double("lateral_accel_mps2", walk ? 2.0 : 2.5),
                            maxTurnRate: try p.double("max_turn_rate_dps", walk ? 120 : 30) * .pi / 180,
                            waypoints: wps, loop: try p.bool("loop", false), start: try p.double("start_s", 0))
        guard spec.speed > 0, spec.acceleration > 0, spec.lateralAcceleration > 0, spec.stepFrequency > 0 else {
            throw p.error("speed, accelerations and step frequency must be > 0")
        }
        if mode != .static && wps.count < 2 { throw p.error("a moving path needs ≥ 2 waypoints", key: "waypoints") }
        return spec
    }

    /// GNSS environment presets (values and sources: docs/simulator.md §GNSS).
    static func gnssPreset(_ profile: String) -> GNSSSpec {
        switch profile {
        case "urban-canyon":
            return GNSSSpec(profile: profile, rate: 1, availability: 0.9, meanOutage: 8, whiteSigma: 2.5, biasSigma: 6,
                            biasTau: 30, verticalFactor: 2, outlierProbability: 0.05, outlierMean: 25,
                            accuracyScale: 0.7, accuracyLogSigma: 0.4, resolutionDeg: 1e-7)
        case "indoor":
            return GNSSSpec(profile: profile, rate: 1, availability: 0.3, meanOutage: 30, whiteSigma: 5, biasSigma: 15,
                            biasTau: 20, verticalFactor: 2, outlierProbability: 0.15, outlierMean: 30,
                            accuracyScale: 0.6, accuracyLogSigma: 0.5, resolutionDeg: 1e-7)
        default:
            return GNSSSpec(profile: "open-sky", rate: 1, availability: 1, meanOutage: 0, whiteSigma: 1.0, biasSigma: 1.73,
                            biasTau: 60, verticalFactor: 1.7, outlierProbability: 0.005, outlierMean: 8,
                            accuracyScale: 1.0, accuracyLogSigma: 0.25, resolutionDeg: 1e-7)
        }
    }

    static func parseGNSS(_ g: ScenarioNode) throws -> GNSSSpec {
        let profile = try g.choice("profile", "open-sky", ["open-sky", "urban-canyon", "indoor"])
        var s = gnssPreset(profile)
        s.rate = try g.double("rate_hz", s.rate)
        s.availability = try g.double("availability", s.availability)
        s.meanOutage = try g.double("mean_outage_s", s.meanOutage)
        s.whiteSigma = try g.double("white_sigma_m", s.whiteSigma)
        s.biasSigma = try g.double("bias_sigma_m", s.biasSigma)
        s.biasTau = try g.double("bias_tau_s", s.biasTau)
        s.verticalFactor = try g.double("vertical_factor", s.verticalFactor)
        s.outlierProbability = try g.double("outlier_prob", s.outlierProbability)
        s.outlierMean = try g.double("outlier_mean_m", s.outlierMean)
        s.accuracyScale = try g.double("reported_accuracy_scale", s.accuracyScale)
        s.accuracyLogSigma = try g.double("reported_accuracy_log_sigma", s.accuracyLogSigma)
        guard s.rate > 0, (0...1).contains(s.availability) else { throw g.error("rate_hz > 0 and 0 ≤ availability ≤ 1 required") }
        if s.availability < 1 && s.meanOutage <= 0 { throw g.error("availability < 1 needs mean_outage_s > 0", key: "mean_outage_s") }
        return s
    }

    static func parseWiFi(_ w: ScenarioNode, floors: [Double]) throws -> WiFiSpec {
        let p0 = try w.double("default_p0_dbm", -40), ne = try w.double("default_exponent", 3.0)
        let apH = try w.double("default_ap_height_m", 2.5)
        var s = WiFiSpec(scanInterval: try w.double("scan_interval_s", 4), scanDuration: try w.double("scan_duration_s", 2),
                         firstScan: try w.double("first_scan_s", 2),
                         threshold: try w.double("threshold_dbm", -90), quantisation: try w.double("quantisation_db", 1),
                         shadowingSigma: try w.double("shadowing_sigma_db", 6), shadowingCorrelation: try w.double("shadowing_corr_m", 3),
                         jitterSigma: try w.double("jitter_sigma_db", 2), deviceOffset: try w.double("device_offset_db", 0),
                         floorAttenuation: try w.double("floor_attenuation_db", 15), maxAPs: try w.int("max_aps_per_scan", 0), aps: [])
        for (i, a) in try w.list("aps").enumerated() {
            let floor = try a.int("floor", 0)
            guard floor >= 0 && floor < floors.count else { throw a.error("floor \(floor) has no entry in floor_heights_m") }
            let bssid = try a.string("bssid", String(format: "02:00:00:00:%02x:%02x", (i + 1) >> 8, (i + 1) & 0xff)).lowercased()
            s.aps.append(APSpec(bssid: bssid, ssid: try a.string("ssid", "sim"), e: try a.double("e", 0), n: try a.double("n", 0),
                                u: try a.double("u", floors[floor] + apH), floor: floor, p0: try a.double("p0_dbm", p0),
                                exponent: try a.double("exponent", ne), frequency: try a.double("freq_mhz", 2437)))
        }
        guard s.scanInterval > 0, s.scanDuration >= 0, s.scanDuration <= s.scanInterval else {
            throw w.error("need scan_interval_s > 0 and 0 ≤ scan_duration_s ≤ scan_interval_s")
        }
        if Set(s.aps.map(\.bssid)).count != s.aps.count { throw w.error("duplicate bssid", key: "aps") }
        if let v = try w.child("survey") { s.survey = try parseSurvey(v, wifi: s, floors: floors) }
        return s
    }

    static func parseSurvey(_ v: ScenarioNode, wifi: WiFiSpec, floors: [Double]) throws -> SurveySpec {
        let es = wifi.aps.map(\.e), ns = wifi.aps.map(\.n)
        let box = [es.min() ?? 0, ns.min() ?? 0, es.max() ?? 0, ns.max() ?? 0]
        let area = try v.doubles("area") ?? box
        let floor = try v.int("floor", 0)
        let s = SurveySpec(spacing: try v.double("spacing_m", 2), scansPerPoint: try v.int("scans_per_point", 5),
                           height: try v.double("height_m", 1.2), floor: floor, area: area,
                           changeSigma: try v.double("change_sigma_db", 0),
                           changeCorrelation: try v.double("change_corr_m", wifi.shadowingCorrelation),
                           deviceOffset: try v.double("device_offset_db", 0))
        guard s.spacing > 0, s.scansPerPoint >= 1, s.changeSigma >= 0, s.changeCorrelation >= 0 else {
            throw v.error("need spacing_m > 0, scans_per_point ≥ 1, change_sigma_db ≥ 0, change_corr_m ≥ 0")
        }
        guard area.count == 4, area[2] >= area[0], area[3] >= area[1] else { throw v.error("area must be [e0, n0, e1, n1] with e1 ≥ e0, n1 ≥ n0", key: "area") }
        guard floor >= 0 && floor < floors.count else { throw v.error("floor \(floor) has no entry in floor_heights_m", key: "floor") }
        return s
    }

    static func parseCell(_ c: ScenarioNode) throws -> CellSpec {
        var s = CellSpec(interval: try c.double("interval_s", 2), rounding: try c.choice("ta_rounding", "round", ["round", "truncate"]),
                         speedOfLight: try c.double("speed_of_light_mps", 299_792_458),
                         btsSigma: try c.double("bts_sigma_m", 5), nlosProbability: try c.double("nlos_prob", 0),
                         nlosMean: try c.double("nlos_mean_m", 0), taAvailability: try c.double("ta_availability", 1),
                         pathLossExponent: try c.double("path_loss_exponent", 3.5),
                         shadowingSigma: try c.double("shadowing_sigma_db", 8), shadowingCorrelation: try c.double("shadowing_corr_m", 100),
                         hysteresis: try c.double("handover_hysteresis_db", 3), frontToBack: try c.double("front_to_back_db", 20),
                         neighbours: try c.int("max_neighbours", 3), sensitivity: try c.double("sensitivity_dbm", -125),
                         radios: [], sites: [])
        for r in try c.list("radios") {
            let rat = RAT(rawValue: try r.choice("rat", "lte", ["gsm", "lte", "nr"]))!
            s.radios.append(CellRadioSpec(rat: rat, mcc: try r.int("mcc", 262), mnc: try r.int("mnc", 1), nrMu: try r.int("nr_mu", 1)))
        }
        for (i, x) in try c.list("sites").enumerated() {
            let rat = RAT(rawValue: try x.choice("rat", "lte", ["gsm", "lte", "nr"]))!
            let id = CellID(rat: rat, mcc: try x.int("mcc", 262), mnc: try x.int("mnc", 1), area: try x.int("area", 100),
                            cid: try x.int("cid", i + 1))
            let az = try x.doubleOpt("azimuth_deg")
            s.sites.append(CellSiteSpec(cell: id, pci: try x.intOpt("pci"), arfcn: try x.intOpt("arfcn"),
                                        e: try x.double("e", 0), n: try x.double("n", 0), height: try x.double("height_m", 30),
                                        azimuth: az, beamwidth: az == nil ? nil : try x.double("beamwidth_deg", 65),
                                        sectorWidth: az == nil ? nil : try x.double("sector_width_deg", 120),
                                        p0: try x.double("p0_dbm", rat == .gsm ? 5 : -5), range: try x.doubleOpt("range_m")))
        }
        if s.radios.isEmpty {
            for key in Set(s.sites.map { "\($0.cell.rat.rawValue)/\($0.cell.mcc)/\($0.cell.mnc)" }).sorted() {
                let f = key.split(separator: "/")
                s.radios.append(CellRadioSpec(rat: RAT(rawValue: String(f[0]))!, mcc: Int(f[1])!, mnc: Int(f[2])!, nrMu: 1))
            }
        }
        guard s.interval > 0 else { throw c.error("interval_s must be > 0") }
        return s
    }

    static func parseIMU(_ m: ScenarioNode) throws -> IMUSpec {
        let rate = try m.double("rate_hz", 50)
        let d2r = Double.pi / 180
        let s = IMUSpec(rate: rate, magRate: try m.double("mag_rate_hz", rate),
                        accNoiseDensity: try m.double("acc_noise_density", 2.0e-3),
                        accBiasSigma: try m.double("acc_bias_sigma_mps2", 0.05),
                        accBiasInstability: try m.double("acc_bias_instability_mps2", 0.002),
                        accBiasTau: try m.double("acc_bias_tau_s", 300),
                        gyroNoiseDensity: try m.double("gyro_noise_density_dps", 0.007) * d2r,
                        gyroBiasSigma: try m.double("gyro_bias_sigma_dps", 0.05) * d2r,
                        gyroBiasInstability: try m.double("gyro_bias_instability_dps", 0.01) * d2r,
                        gyroBiasTau: try m.double("gyro_bias_tau_s", 300),
                        magNoise: try m.double("mag_noise_ut", 0.4), magHardIron: try m.double("mag_hard_iron_ut", 1.0),
                        accResolution: try m.double("acc_resolution_mps2", 1e-3), gyroResolution: try m.double("gyro_resolution_rps", 1e-4),
                        magResolution: try m.double("mag_resolution_ut", 0.1),
                        bounceAmplitude: try m.doubleOpt("bounce_amplitude_mps2"), weinbergK: try m.double("weinberg_k", 0.52),
                        emitSteps: try m.bool("emit_step_events", false))
        guard s.rate > 0, s.magRate >= 0 else { throw m.error("rate_hz must be > 0") }
        return s
    }

    static func parseAcoustic(_ a: ScenarioNode) throws -> AcousticSpec {
        var s = AcousticSpec(period: try a.double("period_s", 0.35), sampleRate: try a.double("sample_rate_hz", 48000),
                             quantise: try a.bool("quantise_to_samples", true), toaSigma: try a.double("toa_sigma_us", 30) * 1e-6,
                             syncSigma: try a.double("sync_sigma_us", 2) * 1e-6, syncTau: try a.double("sync_tau_s", 10),
                             clockOffset: try a.doubleOpt("phone_clock_offset_s"), clockDriftPPM: try a.double("phone_clock_drift_ppm", 20),
                             nlosProbability: try a.double("nlos_prob", 0.03), nlosMean: try a.double("nlos_mean_m", 0.3),
                             missProbability: try a.double("miss_prob", 0.02), maxRange: try a.double("max_range_m", 25),
                             snrAt1m: try a.double("snr_at_1m_db", 40), beacons: [])
        for (i, b) in try a.list("beacons").enumerated() {
            s.beacons.append(BeaconSpec(id: try b.string("id", "B\(i + 1)"), e: try b.double("e", 0), n: try b.double("n", 0),
                                        u: try b.double("u", 2.5), offset: try b.double("offset_s", 0)))
        }
        guard s.period > 0, s.sampleRate > 0 else { throw a.error("period_s and sample_rate_hz must be > 0") }
        return s
    }

    static func parsePeers(_ p: ScenarioNode) throws -> PeerSpec {
        let s = PeerSpec(interval: try p.double("interval_s", 5), sampleRate: try p.double("sample_rate_hz", 44100),
                         beepGap: try p.double("beep_gap_s", 0.2), selfSigma: try p.double("self_onset_sigma_samples", 0.3),
                         crossSigma: try p.double("onset_sigma_samples", 1.5), maxRange: try p.double("max_range_m", 10),
                         nlosProbability: try p.double("nlos_prob", 0.1), nlosMean: try p.double("nlos_mean_m", 0.3),
                         missProbability: try p.double("miss_prob", 0.05), clockPPM: try p.double("clock_ppm", 20))
        guard s.interval > 0, s.sampleRate > 0 else { throw p.error("interval_s and sample_rate_hz must be > 0") }
        return s
    }
}
