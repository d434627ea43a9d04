/// The options of the filter stages `ekf`, `ukf`, `pf` and `smoother`, declared once
/// (`OptionTable`): `FusionStage.init(kind:options:)` reads them, `Settings` takes its defaults
/// from them, and docs/pipeline.yaml is generated from them. Models: docs/fusion.md.
extension FusionStage {
    public enum Options {
        // Structure and inputs.
        public static let layout = OptionSpec.choice("layout", "auto", LayoutChoice.allCases.map(\.rawValue),
            "auto (step state with an accelerometer, else constant velocity) | step | cv")
        public static let inputs = OptionSpec.sources("inputs", ["gnss", "cell", "cell-ta", "wcl", "hapel", "fingerprint", "ble", "tdoa", "peer"],
            "sources whose fixes update the filter")
        public static let tight = OptionSpec.sources("tight", [], "sources used through their measurement models instead of fixes")
        public static let supersede = OptionSpec.bool("supersede", true,
            "a cell-ta fix replaces the same report's cell fix, a peer fix the\nsame scan's fingerprint/rss/wcl/hapel fixes (it contains them; no double count)")
        public static let combineScanFixes = OptionSpec.bool("combine_scan_fixes", false,
            "true: one scan's wcl/hapel/fingerprint/rss fixes enter as ONE update, their\ncovariance intersection (same RSS, same map: correlated errors; docs/fusion.md)")
        public static let bestWiFiSource = OptionSpec.bool("best_wifi_source", true,
            "of one scan's wcl/hapel/fingerprint/rss fixes from a learned radio map\n(they carry the map's error correlation), fuse only the sources with the\nsmallest error on held-out walks (`radiomap build` stores it); false:\nthe covariance intersection of all of them (docs/fusion.md)")
        public static let inflation = OptionSpec.map("inflation", ["gnss": 1, "wcl": 1.5, "hapel": 1.5, "fingerprint": 1.5, "ble": 1.5, "cell": 1.5, "cell-ta": 1.5],
            "α per source: R = α² Σ_fix (others 1; gnss 3\nby default where gnss_bias is false: the white-noise stand-in)")
        public static let radioMapInflation = OptionSpec.number("radio_map_inflation", 1,
            "α of a WiFi fix that carries its radio map's fitted error correlation\n(`radiomap build`) while the bias states are on: the correlation is\nmodelled, so `inflation`'s white-noise stand-in would count it twice\n(docs/fusion.md, \"The WiFi inflation under the bias block\")")
        /// α of GNSS fixes when the bias states are off (`gnss_bias: false`): α² ≈ τ/Δt stands in
        /// for an error correlation time τ ≈ 10 s at 1 Hz.
        public static let whiteNoiseGNSSInflation = 3.0
        /// The default of `inflation` by source.
        public static var inflationBySource: [Source: Double] {
            guard case .map(let m)? = inflation.defaultValue else { return [:] }
            var out: [Source: Double] = [:]
            for (k, v) in m { if let s = Source(rawValue: k), case .number(let a) = v { out[s] = a } }
            return out
        }
        public static let gnssBias = OptionSpec.bool("gnss_bias", true,
            "GNSS error = Gauss–Markov bias (two extra states; in the pf each\nparticle's conditional bias, Rao–Blackwellised) + white noise;\nekf/ukf/smoother: also WiFi fixes whose radio map carries a fitted\nerror correlation (docs/fusion.md); false: every fix white")
        public static let gnssBiasTau = OptionSpec.number("gnss_bias_tau_s", GNSSBias().correlationTime, unit: "s", advanced: true,
            "the bias correlation time τ_b")
        public static let gnssBiasFraction = OptionSpec.number("gnss_bias_fraction", GNSSBias().biasFraction, advanced: true,
            "β: share of the fix's reported variance that is bias\n(ekf/ukf/smoother: a fix carrying the GNSS error model's fitted β, τ\nfor its family, i.e. gnss.error_model not none, overrides both)")
        public static let gnssBiasAdaptiveWindow = OptionSpec.number("gnss_bias_adaptive_window", 30, advanced: true,
            "GNSS fixes over which the online widening μ ≥ 1 follows the bias\nestimate's size against its model (fixes vs motion model); the\nreported covariance adds (μ − 1)(U − B) (ekf/ukf; docs/fusion.md); 0 = off")
        public static let adaptiveAccuracy = OptionSpec.sources("adaptive_accuracy", ["gnss"],
            "sources whose R is scaled up by their own NIS (never below the\nreported accuracy); [] = off")
        public static let adaptiveAccuracyWindow = OptionSpec.number("adaptive_accuracy_window", 30, advanced: true,
            "fixes over which that scale follows a change")
        public static let repeatInflation = OptionSpec.bool("repeat_inflation", true,
            "the k-th identical fix of a source in a row (same serving cell,\nsame TA, WCL on the one AP heard) enters with R × k; for `tight`\ninputs the k-th unchanged measurement of one cell: R × k, log L ÷ k")
        public static let gnssHolds = OptionSpec.bool("gnss_hold_updates", true, advanced: true,
            "fuse a GNSS fix equal to the phone's previous one (a receiver\nholding its solution); false: predict to its time, no update")
        // Gating, health, output.
        public static let gateProbability = OptionSpec.number("gate_probability", 0.99, "χ² gate (1 = no gate)")
        public static let divergenceRejections = OptionSpec.integer("divergence_rejections", 5,
            "consecutive gated (or singular) fixes of one source → re-initialise there")
        public static let history = OptionSpec.number("history_s", 10, unit: "s", "late inputs within this window rewind and replay")
        public static let outputInterval = OptionSpec.number("output_interval_s", 1, unit: "s", "at most one fix per interval from steps alone")
        // Heading and initialisation.
        public static let headingSigma = OptionSpec.number("heading_sigma_deg", 10, unit: "deg",
            "σ of a clean-magnetometer heading update (a floor, below)")
        public static let headingSigmaFromField = OptionSpec.bool("heading_sigma_from_field", true,
            "σ = max(heading_sigma_deg, atan(σ_d/|m_h|)): the PDR's measured\nfield disturbance σ_d (µT) over the horizontal field |m_h|")
        public static let headingInterval = OptionSpec.number("heading_interval_s", 5, unit: "s", "at most one heading update per interval")
        public static let initialHeadingSigma = OptionSpec.number("initial_heading_sigma_deg", 20, unit: "deg", "σ of the first heading")
        public static let initialScaleSigma = OptionSpec.number("initial_scale_sigma", 0.15, "σ of the step-length scale s at start")
        public static let initialSpeedSigma = OptionSpec.number("initial_speed_sigma_mps", 1.5, unit: "m/s", "constant-velocity layout")
        // Motion models.
        public static let weinbergK = OptionSpec.number("weinberg_k", 0.52,
            "Weinberg K: L = K (a_max − a_min)^¼, m per (m/s²)^¼; unset: a radio map's\nK fitted on its walks wins, with its scale spread as initial_scale_sigma")
        public static let stepLengthSigmaFraction = OptionSpec.number("step_length_sigma_fraction", StepMotionModel().lengthSigmaFraction,
            advanced: true, "σ_L / L per step")
        public static let stepHeadingSigma = OptionSpec.number("step_heading_sigma_deg", Angle.degrees(StepMotionModel().headingSigmaPerStep),
            unit: "deg", advanced: true, "per step")
        public static let stepScaleSigma = OptionSpec.number("step_scale_sigma", StepMotionModel().scaleSigmaPerStep, advanced: true, "per step")
        public static let positionDiffusion = OptionSpec.number("position_diffusion_m2_per_s", StepMotionModel().positionDiffusion,
            unit: "m²/s", advanced: true, "between steps")
        public static let stationaryPositionDiffusion = OptionSpec.number("stationary_position_diffusion_m2_per_s",
            StepMotionModel().stationaryPositionDiffusion, unit: "m²/s", advanced: true, "while the IMU shows the phone still")
        public static let strideInterpolation = OptionSpec.bool("stride_interpolation", true, advanced: true,
            "walk on between heel strikes at the last stride's speed\n(a gated fix is re-tested with the walking value above)")
        public static let headingDiffusion = OptionSpec.number("heading_diffusion_deg_per_sqrt_s",
            Angle.degrees(StepMotionModel().headingDiffusion.squareRoot()), unit: "deg/√s", advanced: true, "gyro bias random walk")
        public static let cvQ = OptionSpec.number("cv_q_m2_per_s3", ConstantVelocityModel().q, unit: "m²/s³",
            "constant-velocity process noise (pedestrian 0.1–1)")
        public static let platform = OptionSpec.choice("platform", MotionPlatform.auto.rawValue, MotionPlatform.allCases.map(\.rawValue),
            "constant-velocity motion model: pedestrian (cv_q_m2_per_s3) | vehicle\n(cv_vehicle_q_m2_per_s3) | auto: pedestrian until the GNSS fixes show\na sustained speed above vehicle_speed_mps (docs/fusion.md)")
        public static let cvVehicleQ = OptionSpec.number("cv_vehicle_q_m2_per_s3", 8, unit: "m²/s³",
            "constant-velocity process noise of a vehicle (σ_v ≈ 2.8 m/s per √s)")
        public static let vehicleSpeed = OptionSpec.number("vehicle_speed_mps", PlatformEvidence().threshold, unit: "m/s",
            "auto platform: a vehicle once the speed's lower bound from GNSS fixes\n10 s apart exceeds this in 3 consecutive windows")
        public static let cvManoeuvreAcceleration = OptionSpec.number("cv_manoeuvre_accel_mps2", 3, unit: "m/s²",
            "a fix gated under q is re-tested as a manoeuvre: q + σ_a² + (σ_ω |v|)²")
        public static let cvTurnRateSigma = OptionSpec.number("cv_turn_rate_sigma_deg_per_s", 30, unit: "deg/s",
            "σ_ω of that manoeuvre (turns of cars); both 0 = no re-test")
        // Unscented Kalman filter.
        public static let ukfAlpha = OptionSpec.number("ukf_alpha", SigmaPointParameters().alpha, advanced: true, "Merwe scaled sigma points α, β, κ")
        public static let ukfBeta = OptionSpec.number("ukf_beta", SigmaPointParameters().beta)
        public static let ukfKappa = OptionSpec.number("ukf_kappa", SigmaPointParameters().kappa)
        // Particle filter.
        public static let particles = OptionSpec.integer("particles", 2000)
        public static let seed = OptionSpec.integer("seed", 1, "random stream (per phone: seed mixed with the phone id)")
        public static let resampleThreshold = OptionSpec.number("resample_threshold", 0.5, "resample (systematic) when N_eff < threshold × N")
        public static let roughening = OptionSpec.number("roughening", 0, advanced: true, "Gordon's roughening constant K (0 = none)")
        public static let regularization = OptionSpec.number("regularization", 0.5, advanced: true,
            "regularised PF kernel: bandwidth as a fraction of Musso's\noptimal h (0 = none); keeps the covariance honest when one particle\ntakes all the weight (cm-level TDoA against a dm-level cloud)")
        public static let walls = OptionSpec.bool("walls", true,
            "particles may not cross the walls of the trace's floor plan (reference.json\nfloorplan, GeoJSON; docs/trace-format.md); no floor plan: no effect")
        // Smoother.
        public static let filter = OptionSpec.choice("filter", "ekf", [Kind.ekf.rawValue, Kind.ukf.rawValue, Kind.pf.rawValue],
            "the filter it smooths: ekf | ukf (unscented RTS) | pf (particle smoother\nover the pf's genealogy, keeps the floor-plan walls); takes that filter's options")

        /// The options every filter reads.
        public static let ekf = OptionTable(stage: "ekf", doc: "extended Kalman filter over PDR", options: [
            layout, inputs, tight, supersede, combineScanFixes, bestWiFiSource, inflation, radioMapInflation, gnssBias, gnssBiasTau, gnssBiasFraction, gnssBiasAdaptiveWindow,
            adaptiveAccuracy, adaptiveAccuracyWindow, repeatInflation, gnssHolds, gateProbability, divergenceRejections, history,
            outputInterval, headingSigma, headingSigmaFromField, headingInterval, initialHeadingSigma, initialScaleSigma,
            initialSpeedSigma, weinbergK, stepLengthSigmaFraction, stepHeadingSigma, stepScaleSigma, positionDiffusion,
            stationaryPositionDiffusion, strideInterpolation, headingDiffusion, cvQ, platform, cvVehicleQ, vehicleSpeed, cvManoeuvreAcceleration,
            cvTurnRateSigma,
        ])
        public static let ukf = OptionTable(stage: "ukf", doc: "unscented Kalman filter: the ekf options, plus",
                                            enabledDoc: "opt-in (an alternative to the ekf; set true to run it too)",
                                            options: [ukfAlpha, ukfBeta, ukfKappa], includes: [ekf])
        public static let pf = OptionTable(stage: "pf", doc: "particle filter: the ekf options, plus",
                                           enabledDoc: "opt-in (costly: particles × steps)",
                                           options: [particles, seed, resampleThreshold, roughening, regularization, walls], includes: [ekf])
        public static let smoother = OptionTable(stage: "smoother", doc: "RTS smoother over an EKF or UKF, or particle smoother over a pf (offline: emits at the end of the trace)",
                                                 enabledDoc: "opt-in (keeps the filter history: memory grows with the trace)",
                                                 options: [filter], includes: [ukf, pf])
        /// The table of a filter kind.
        public static func table(_ kind: Kind) -> OptionTable {
            switch kind { case .ekf: return ekf; case .ukf: return ukf; case .pf: return pf }
        }
    }
}
