/// The first line of a trace (format v1): the ENU origin and device metadata.
public struct TraceHeader: Sendable, Equatable {
    public static let formatName = "posfuse-trace"
    public static let currentVersion = 1

    public var version: Int
    /// Origin of the local ENU frame (WGS84).
    public var origin: Geodetic
    /// Device model / description.
    public var device: String?
    /// Magnetic declination, degrees (east positive): ψ_true = ψ_magnetic + declination.
    public var declination: Double
    /// Air temperature, °C (speed of sound).
    public var temperature: Double?
    /// Floor heights above the origin, m, indexed by floor number from `lowestFloor`.
    public var floorHeights: [Double]
    /// Free-form name of the scenario or recording.
    public var name: String?
    /// WiFi detection threshold (sensitivity) of the device, dBm.
    public var rssThreshold: Double?
    /// Height of the phone above the floor, m (2-D acoustic solve).
    public var phoneHeight: Double?

    public init(version: Int = TraceHeader.currentVersion, origin: Geodetic, device: String? = nil,
                declination: Double = 0, temperature: Double? = nil, floorHeights: [Double] = [],
                name: String? = nil, rssThreshold: Double? = nil, phoneHeight: Double? = nil) {
        self.version = version; self.origin = origin; self.device = device; self.declination = declination
        self.temperature = temperature; self.floorHeights = floorHeights; self.name = name
        self.rssThreshold = rssThreshold; self.phoneHeight = phoneHeight
    }

    public var frame: LocalFrame { LocalFrame(origin: origin) }
}
