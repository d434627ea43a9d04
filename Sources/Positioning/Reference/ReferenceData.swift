/// Reference data that estimators look up: AP map, Bluetooth LE beacon map, cell database, acoustic beacons,
/// landmarks, an optional floor plan and an optional WiFi fingerprint survey. Positions are local ENU metres in the trace's
/// frame (readers convert WGS84 side files at load time). Formats: `docs/trace-format.md`.
public struct ReferenceData: Sendable {
    public var accessPoints: [String: AccessPoint]
    /// Bluetooth LE beacons by id (`BLEObservation.id`: MAC lower case, or `uuid:major:minor`):
    /// transmitters like the access points, in the same record (`AccessPoint`, `bssid` = the id;
    /// `p0` the RSS at 1 m). `reference.json` member `ble`; learned by `posfuse radiomap build`.
    public var bleBeacons: [String: AccessPoint] = [:]
    public var cells: [CellID: CellSite]
    public var beacons: [String: AcousticBeacon]
    public var landmarks: [String: Landmark]
    /// Wall segments of the floor plan in ENU m (for particle-filter wall constraints).
    public var walls: [Wall]
    /// Surveyed WiFi fingerprints (`FingerprintMap`), when the site was surveyed.
    public var fingerprints: FingerprintMap?
    /// Where phones were when they reported each serving cell and TA (`CellCoverageMap`,
    /// learned by `posfuse celldb build`), when known.
    public var cellCoverage: CellCoverageMap?
    /// How WiFi fixes' covariances grow where the radio map is blind (`RadioUncertaintyModel`),
    /// fitted by `posfuse radiomap build`; nil = the estimators' own covariances.
    public var radioUncertainty: RadioUncertaintyModel?
    /// The PDR step length fitted on the map's training walks (`StepLengthCalibration`, stored
    /// by `posfuse radiomap build`); the fusion filters' PDR uses its K unless the pipeline sets
    /// `weinberg_k`. nil = the option's K.
    public var stepLength: StepLengthCalibration?

    public init(accessPoints: [String: AccessPoint] = [:], cells: [CellID: CellSite] = [:],
                beacons: [String: AcousticBeacon] = [:], landmarks: [String: Landmark] = [:], walls: [Wall] = [],
                fingerprints: FingerprintMap? = nil, cellCoverage: CellCoverageMap? = nil) {
        self.accessPoints = accessPoints; self.cells = cells; self.beacons = beacons
        self.landmarks = landmarks; self.walls = walls; self.fingerprints = fingerprints; self.cellCoverage = cellCoverage
    }
    public static let empty = ReferenceData()

    /// A WiFi stage's fix with the map's novelty inflation applied (`RadioUncertaintyModel`):
    /// the one place where `wcl`, `rss`, `hapel` and `fingerprint` fixes get it. Unchanged when the
    /// reference data carries no model.
    public func wifiFix(_ f: Fix, scan: WiFiScan, rssMin: Double, maxAge: Double?) -> Fix {
        radioUncertainty?.inflate(f, scan: scan, reference: self, rssMin: rssMin, maxAge: maxAge) ?? f
    }
}

/// A WiFi access point in the AP map.
public struct AccessPoint: Sendable, Equatable {
    /// MAC, lower case.
    public var bssid: String
    /// Position in ENU, m (up = antenna height above the origin).
    public var position: SIMD3<Double>
    public var floor: Int?
    /// Log-distance model: RSS at d0 = 1 m (dBm) and path-loss exponent n.
    public var p0: Double?
    public var pathLossExponent: Double?
    /// Radio group: BSSIDs of one physical radio share a group id (multi-SSID, multi-band).
    public var radio: String?
    public init(bssid: String, position: SIMD3<Double>, floor: Int? = nil, p0: Double? = nil,
                pathLossExponent: Double? = nil, radio: String? = nil) {
        self.bssid = bssid; self.position = position; self.floor = floor; self.p0 = p0
        self.pathLossExponent = pathLossExponent; self.radio = radio
    }
}

/// A cell site (antenna) in the cell database.
public struct CellSite: Sendable, Equatable {
    public var cell: CellID
    /// Antenna position in ENU, m (up = antenna height above the origin).
    public var position: SIMD3<Double>
    /// Sector boresight azimuth, degrees clockwise from true north; nil = omni/unknown.
    public var azimuth: Double?
    /// Sector width, degrees (3GPP 3-sector: 120); nil = omni.
    public var beamwidth: Double?
    /// Nominal cell radius, m (Cell-ID only estimate).
    public var range: Double?
    /// Where the position comes from: "antenna" (surveyed), "centroid" (crowd-sourced
    /// measurement centroid, e.g. OpenCellID), "estimated" (posfuse celldb build).
    public var provenance: String
    public init(cell: CellID, position: SIMD3<Double>, azimuth: Double? = nil, beamwidth: Double? = nil,
                range: Double? = nil, provenance: String = "antenna") {
        self.cell = cell; self.position = position; self.azimuth = azimuth; self.beamwidth = beamwidth
        self.range = range; self.provenance = provenance
    }
}

/// A synchronised acoustic beacon (`docs/models.md` §4A).
public struct AcousticBeacon: Sendable, Equatable {
    public var id: String
    /// Speaker position in ENU, m.
    public var position: SIMD3<Double>
    /// Emission offset o_i within the period, s.
    public var offset: Double
    /// Emission period T_p, s.
    public var period: Double
    public init(id: String, position: SIMD3<Double>, offset: Double, period: Double) {
        self.id = id; self.position = position; self.offset = offset; self.period = period
    }
}

/// A landmark that photos may show (known position and physical height).
public struct Landmark: Sendable, Equatable {
    public var id: String
    public var position: SIMD3<Double>
    /// Physical height H of the object, m, if known.
    public var height: Double?
    public init(id: String, position: SIMD3<Double>, height: Double? = nil) {
        self.id = id; self.position = position; self.height = height
    }
}

/// A wall segment of a floor plan, ENU m. `bounds`: the segment is an edge of a closed ring (a
/// GeoJSON polygon's ring), so it also bounds the walkable area (`WalkableArea`).
public struct Wall: Sendable, Equatable {
    public var a: SIMD2<Double>, b: SIMD2<Double>
    public var floor: Int?
    public var bounds: Bool
    public init(a: SIMD2<Double>, b: SIMD2<Double>, floor: Int? = nil, bounds: Bool = false) {
        self.a = a; self.b = b; self.floor = floor; self.bounds = bounds
    }
}

/// The walkable part of a floor plan, by the even–odd rule over its polygon rings: a point is
/// walkable when a ray from it crosses an odd number of ring edges, i.e. it lies inside an odd
/// number of rings — inside the floor's outline and outside every shop, room or hole drawn
/// inside it (GeoJSON polygons with holes read the same way). Open lines (LineStrings) bound
/// nothing. A floor plan without rings has no walkable test (everything is walkable).
public struct WalkableArea: Sendable {
    let edges: [Wall]
    public init(walls: [Wall]) { edges = walls.filter(\.bounds) }
    public var isEmpty: Bool { edges.isEmpty }
    /// Whether p is walkable (true when there are no rings).
    public func contains(_ p: SIMD2<Double>) -> Bool {
        guard !edges.isEmpty else { return true }
        var inside = false
        for e in edges where (e.a.y > p.y) != (e.b.y > p.y) {
            let x = e.a.x + (p.y - e.a.y) * (e.b.x - e.a.x) / (e.b.y - e.a.y)
            if p.x < x { inside.toggle() }
        }
        return inside
    }
}
