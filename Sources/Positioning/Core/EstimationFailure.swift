/// Why an estimator could not produce a fix. Degenerate input is a value, never a
/// crash or a NaN (docs/models.md §0).
public enum EstimationFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Fewer anchors (APs, beacons, cells, peers) than the method needs.
    case tooFewAnchors(needed: Int, got: Int)
    /// Anchors are (nearly) collinear: the 2-D problem is rank deficient.
    case collinearGeometry
    /// Anchors are (nearly) coplanar: the 3-D problem is rank deficient.
    case coplanarGeometry
    /// The closed form has two admissible roots and nothing chooses between them.
    case ambiguousRoots
    /// Timing advance at its maximum index: only a lower bound on range.
    case saturatedTimingAdvance
    /// The identified anchor is not in the reference data.
    case unknownAnchor(String)
    /// CamLoc: the phone did not move between the photos.
    case zeroDisplacement
    /// CamLoc: the object's image size barely changed (ratio ≈ 1).
    case scaleRatioNearOne
    /// CamLoc: the phone moved sideways, not towards the object.
    case lateralOnlyMotion
    /// No usable heading (stationary user or no heading sensor).
    case noHeading
    /// The iterative solver did not converge.
    case notConverged
    /// A measurement is outside its physical range (e.g. a period ambiguity).
    case inconsistentMeasurements(String)
    /// Required input is missing.
    case missingInput(String)

    public var description: String {
        switch self {
        case let .tooFewAnchors(n, g): return "too few anchors: need \(n), got \(g)"
        case .collinearGeometry: return "collinear anchor geometry"
        case .coplanarGeometry: return "coplanar anchor geometry"
        case .ambiguousRoots: return "two admissible solutions (ambiguous)"
        case .saturatedTimingAdvance: return "saturated timing advance (lower bound only)"
        case let .unknownAnchor(id): return "anchor not in reference data: \(id)"
        case .zeroDisplacement: return "phone displacement between photos is near zero"
        case .scaleRatioNearOne: return "image scale ratio is near 1"
        case .lateralOnlyMotion: return "phone moved sideways, not towards the object"
        case .noHeading: return "no heading available"
        case .notConverged: return "solver did not converge"
        case let .inconsistentMeasurements(s): return "inconsistent measurements: \(s)"
        case let .missingInput(s): return "missing input: \(s)"
        }
    }

    /// The stable codes of estimation failures: what `--json` failure counts, refine's error
    /// records and `LocatedShare.notLocated` are keyed by. The raw values are the wire strings;
    /// docs/cli.md "Error codes" lists them and `ErrorCodeTests` pins them.
    public enum Code: String, CaseIterable, Sendable, Codable {
        case tooFewAnchors = "too_few_anchors"
        case collinearGeometry = "collinear_geometry"
        case coplanarGeometry = "coplanar_geometry"
        case ambiguousRoots = "ambiguous_roots"
        case saturatedTimingAdvance = "saturated_ta"
        case unknownAnchor = "unknown_anchor"
        case zeroDisplacement = "zero_displacement"
        case scaleRatioNearOne = "scale_ratio_near_one"
        case lateralOnlyMotion = "lateral_only_motion"
        case noHeading = "no_heading"
        case notConverged = "not_converged"
        case inconsistentMeasurements = "inconsistent_measurements"
        case missingInput = "missing_input"
    }

    /// This failure's code (its case without the associated values).
    public var kind: Code {
        switch self {
        case .tooFewAnchors: return .tooFewAnchors
        case .collinearGeometry: return .collinearGeometry
        case .coplanarGeometry: return .coplanarGeometry
        case .ambiguousRoots: return .ambiguousRoots
        case .saturatedTimingAdvance: return .saturatedTimingAdvance
        case .unknownAnchor: return .unknownAnchor
        case .zeroDisplacement: return .zeroDisplacement
        case .scaleRatioNearOne: return .scaleRatioNearOne
        case .lateralOnlyMotion: return .lateralOnlyMotion
        case .noHeading: return .noHeading
        case .notConverged: return .notConverged
        case .inconsistentMeasurements: return .inconsistentMeasurements
        case .missingInput: return .missingInput
        }
    }

    /// The wire string of `kind` (`--json`, refine error records).
    public var code: String { kind.rawValue }
}
