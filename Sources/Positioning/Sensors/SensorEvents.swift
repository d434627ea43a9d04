/// Sensor observations as they appear in a trace (format v1, `docs/trace-format.md`).
/// All times are trace seconds on the trace's single monotonic clock. Units are in
/// each property's comment; they are the units of the file format as well.

/// A GNSS position fix as reported by the phone.
public struct GNSSFix: Sendable, Equatable {
    /// WGS84 latitude and longitude, degrees; ellipsoidal altitude, m.
    public var latitude: Double, longitude: Double, altitude: Double?
    /// Reported horizontal accuracy, m (Android: 68 % radius).
    public var accuracy: Double
    /// Reported vertical accuracy, m.
    public var verticalAccuracy: Double?
    /// The receiver's own speed over ground, m/s (NMEA RMC, Android `Location.getSpeed()`); nil: not reported.
    public var speed: Double?
    /// The receiver's own course over ground, degrees clockwise from true north; nil: not reported
    /// (a fix with a speed and no course carries a velocity only at speed 0).
    public var bearing: Double?
    public init(latitude: Double, longitude: Double, altitude: Double? = nil, accuracy: Double, verticalAccuracy: Double? = nil,
                speed: Double? = nil, bearing: Double? = nil) {
        self.latitude = latitude; self.longitude = longitude; self.altitude = altitude
        self.accuracy = accuracy; self.verticalAccuracy = verticalAccuracy
        self.speed = speed; self.bearing = bearing
    }

    /// The reported velocity (v_E, v_N), m/s: speed along the course; speed 0 needs no course.
    /// nil without a finite non-negative speed, or with a positive speed and no finite course.
    public var velocity: SIMD2<Double>? {
        guard let s = speed, s.isFinite, s >= 0 else { return nil }
        if s == 0 { return .zero }
        guard let b = bearing, b.isFinite else { return nil }
        return s * Angle.unit(Angle.radians(b))
    }
}

/// One access point in a WiFi scan.
public struct WiFiObservation: Sendable, Equatable {
    /// MAC address, lower-case "aa:bb:cc:dd:ee:ff".
    public var bssid: String
    public var ssid: String
    /// Channel centre frequency, MHz.
    public var frequency: Double
    /// Received signal strength, dBm.
    public var rss: Double
    /// When the AP was last seen, trace s (Android ScanResult.timestamp mapped to the trace clock).
    public var lastSeen: Double?
    public init(bssid: String, ssid: String = "", frequency: Double = 2437, rss: Double, lastSeen: Double? = nil) {
        self.bssid = bssid; self.ssid = ssid; self.frequency = frequency; self.rss = rss; self.lastSeen = lastSeen
    }
}

/// A WiFi scan: the event time is the scan end.
public struct WiFiScan: Sendable, Equatable {
    /// Scan start, trace s.
    public var start: Double?
    public var accessPoints: [WiFiObservation]
    public init(start: Double? = nil, accessPoints: [WiFiObservation]) { self.start = start; self.accessPoints = accessPoints }
}

/// One Bluetooth LE beacon in a `ble` scan (iBeacon, Eddystone or any advertiser the phone
/// reports with a signal level).
public struct BLEObservation: Sendable, Equatable {
    /// The beacon's key in the beacon map: its MAC address, lower case "aa:bb:cc:dd:ee:ff", or,
    /// when the phone gives no MAC (iOS), the iBeacon identity "uuid:major:minor" lower case.
    public var id: String
    /// The iBeacon identity (proximity UUID, major, minor), when the advertisement is an iBeacon.
    public var iBeacon: IBeaconID?
    /// Received signal strength, dBm.
    public var rss: Double
    /// The advertised (calibrated) transmit power: the RSS expected at 1 m, dBm; nil: not advertised.
    public var txPower: Double?
    /// When the beacon was last heard, trace s (nil: at the event time).
    public var lastSeen: Double?
    public init(id: String, iBeacon: IBeaconID? = nil, rss: Double, txPower: Double? = nil, lastSeen: Double? = nil) {
        self.id = id; self.iBeacon = iBeacon; self.rss = rss; self.txPower = txPower; self.lastSeen = lastSeen
    }
}

/// An iBeacon identity: proximity UUID (text as advertised), major and minor (0…65535).
public struct IBeaconID: Sendable, Equatable {
    public var uuid: String
    public var major: Int
    public var minor: Int
    public init(uuid: String, major: Int, minor: Int) { self.uuid = uuid; self.major = major; self.minor = minor }
    /// The map key of a beacon known only by this identity: "uuid:major:minor", lower case.
    public var key: String { "\(uuid.lowercased()):\(major):\(minor)" }
}

/// A Bluetooth LE scan: the beacons heard, reported at the event time.
public struct BLEScan: Sendable, Equatable {
    public var beacons: [BLEObservation]
    public init(beacons: [BLEObservation]) { self.beacons = beacons }

    /// The scan as the transmitter list the weighted-centroid estimator reads (`WCLEstimator`):
    /// each beacon as an entry with its map key, RSS and last-seen time (frequency 0 = unknown).
    /// Beacons and access points are the same kind of transmitter to the estimator: a learned
    /// position and a level heard (docs/radio.md, "Bluetooth beacons").
    public var transmitters: WiFiScan {
        WiFiScan(accessPoints: beacons.map { WiFiObservation(bssid: $0.id, frequency: 0, rss: $0.rss, lastSeen: $0.lastSeen) })
    }
}

/// Radio access technology.
public enum RAT: String, Sendable, Codable, CaseIterable {
    case gsm, umts, lte, nr
    // Equality and hashing by case, not by raw value (as `Source` does): the default of a
    // `String`-backed enum hashes its name, and every `CellID` and coverage-map key hashes its
    // RAT (serve's geolocate: several per request). Same equality; no output depends on a
    // dictionary's order (hash seeds differ from process to process).
    public static func == (a: RAT, b: RAT) -> Bool { a.ordinal == b.ordinal }
    public func hash(into hasher: inout Hasher) { hasher.combine(ordinal) }
    /// The case's position in `allCases`.
    @inline(__always) var ordinal: UInt8 {
        switch self {
        case .gsm: return 0
        case .umts: return 1
        case .lte: return 2
        case .nr: return 3
        }
    }
}

/// The unit of a raw timing-advance integer (`docs/models.md` §1.1).
public enum TimingAdvanceUnit: String, Sendable, Codable, CaseIterable {
    /// GSM bit periods (48/13 µs round trip): 553.46 m one-way per step.
    case gsmBits = "gsm_bit"
    /// LTE 16·Ts (0.52083 µs round trip): 78.07 m per step.
    case lte16Ts = "lte_16ts"
    /// NR 16·64·Tc/2^μ for numerology μ = 0…3: 78.07/2^μ m per step.
    case nrMu0 = "nr_mu0", nrMu1 = "nr_mu1", nrMu2 = "nr_mu2", nrMu3 = "nr_mu3"
    /// Android `getTimingAdvanceMicros()`: one-way microseconds (299.79 m per unit).
    case oneWayMicroseconds = "oneway_us"
}

/// Identity of a cell.
public struct CellID: Sendable, Hashable, Codable, CustomStringConvertible {
    public var rat: RAT
    public var mcc: Int, mnc: Int
    /// LAC (GSM/UMTS) or TAC (LTE/NR).
    public var area: Int
    /// CI / ECI / NCI.
    public var cid: Int
    public init(rat: RAT, mcc: Int, mnc: Int, area: Int, cid: Int) {
        self.rat = rat; self.mcc = mcc; self.mnc = mnc; self.area = area; self.cid = cid
    }
    public var description: String { "\(rat.rawValue):\(mcc)-\(mnc)-\(area)-\(cid)" }
}

/// One cell seen by the phone.
public struct CellObservation: Sendable, Equatable {
    public var cell: CellID
    /// PCI (LTE/NR), PSC (UMTS) or BSIC (GSM).
    public var pci: Int?
    /// (E/NR-)ARFCN.
    public var arfcn: Int?
    public var serving: Bool
    /// Raw timing-advance integer as reported; nil when unavailable (idle mode).
    public var timingAdvance: Int?
    public var timingAdvanceUnit: TimingAdvanceUnit?
    /// RSRP (LTE/NR) or RxLev-derived power (GSM), dBm.
    public var rsrp: Double?
    /// RSRQ, dB.
    public var rsrq: Double?
    public init(cell: CellID, pci: Int? = nil, arfcn: Int? = nil, serving: Bool, timingAdvance: Int? = nil,
                timingAdvanceUnit: TimingAdvanceUnit? = nil, rsrp: Double? = nil, rsrq: Double? = nil) {
        self.cell = cell; self.pci = pci; self.arfcn = arfcn; self.serving = serving
        self.timingAdvance = timingAdvance; self.timingAdvanceUnit = timingAdvanceUnit; self.rsrp = rsrp; self.rsrq = rsrq
    }
}

/// Kinds of inertial/environment samples. Vectors are in the device frame
/// (x right, y up the screen, z out of the screen; Android convention).
public enum IMUKind: String, Sendable, Codable, CaseIterable {
    /// Accelerometer including gravity, m/s².
    case accelerometer = "acc"
    /// Gyroscope, rad/s.
    case gyroscope = "gyro"
    /// Magnetometer, µT.
    case magnetometer = "mag"
    /// Rotation vector as a unit quaternion [x, y, z, w] (device → ENU world frame).
    case rotationVector = "rotvec"
    /// Barometric pressure, hPa (one value).
    case barometer = "baro"
}

/// One IMU sample. `values` has 3 entries (acc/gyro/mag), 4 (rotvec) or 1 (baro).
public struct IMUSample: Sendable, Equatable {
    public var kind: IMUKind
    public var x: Double, y: Double, z: Double, w: Double
    public init(kind: IMUKind, x: Double, y: Double = 0, z: Double = 0, w: Double = 0) {
        self.kind = kind; self.x = x; self.y = y; self.z = z; self.w = w
    }
    public var vector: SIMD3<Double> { SIMD3(x, y, z) }
}

/// Arrival of an acoustic beacon's emission at the phone microphone.
public struct AcousticArrival: Sendable, Equatable {
    public var beacon: String
    /// Arrival time on the phone clock mapped to trace time, s (includes the unknown phone clock offset).
    public var arrivalTime: Double
    /// Emission index k within the beacon schedule (period counter), if known.
    public var emission: Int?
    /// Signal-to-noise ratio of the detection, dB.
    public var snr: Double?
    public init(beacon: String, arrivalTime: Double, emission: Int? = nil, snr: Double? = nil) {
        self.beacon = beacon; self.arrivalTime = arrivalTime; self.emission = emission; self.snr = snr
    }
}

/// A BeepBeep two-way acoustic exchange between this phone (A) and a peer (B), from
/// each phone's own sample counters (no clock sync).
public struct PeerRange: Sendable, Equatable {
    public var peer: String
    /// Sample indices: n_AA (A hears own beep), n_AB (A hears B), n_BA (B hears A), n_BB (B hears own).
    public var nAA: Double?, nAB: Double?, nBA: Double?, nBB: Double?
    /// Audio sample rate, Hz.
    public var sampleRate: Double?
    /// Speaker–microphone distances of A and B, m.
    public var speakerMicA: Double?, speakerMicB: Double?
    /// Distance already computed by the phone, m (when sample counters are absent).
    public var distance: Double?
    /// Its standard deviation, m.
    public var sigma: Double?
    public init(peer: String, nAA: Double? = nil, nAB: Double? = nil, nBA: Double? = nil, nBB: Double? = nil,
                sampleRate: Double? = nil, speakerMicA: Double? = nil, speakerMicB: Double? = nil,
                distance: Double? = nil, sigma: Double? = nil) {
        self.peer = peer; self.nAA = nAA; self.nAB = nAB; self.nBA = nBA; self.nBB = nBB
        self.sampleRate = sampleRate; self.speakerMicA = speakerMicA; self.speakerMicB = speakerMicB
        self.distance = distance; self.sigma = sigma
    }
}

/// A photo with a detected object (for CamLoc).
public struct PhotoObservation: Sendable, Equatable {
    /// Photo id; `pair` groups the two shots of one report.
    public var id: String
    public var pair: String?
    /// Image width and height, px.
    public var width: Int, height: Int
    /// Focal length, px; principal point, px.
    public var focalLength: Double
    public var cx: Double?, cy: Double?
    /// Exposure time stamp, trace s.
    public var exposureTime: Double?
    /// Detected object: its id (landmark or report object), centre (px) and image height (px).
    public var object: String
    public var objectX: Double, objectY: Double
    public var objectHeight: Double
    /// Device camera azimuth (optical axis, degrees clockwise from magnetic north) as
    /// reported by the phone's orientation sensor at exposure, when recorded.
    public var cameraAzimuthMagnetic: Double?
    public init(id: String, pair: String? = nil, width: Int, height: Int, focalLength: Double, cx: Double? = nil,
                cy: Double? = nil, exposureTime: Double? = nil, object: String, objectX: Double, objectY: Double,
                objectHeight: Double, cameraAzimuthMagnetic: Double? = nil) {
        self.id = id; self.pair = pair; self.width = width; self.height = height; self.focalLength = focalLength
        self.cx = cx; self.cy = cy; self.exposureTime = exposureTime; self.object = object
        self.objectX = objectX; self.objectY = objectY; self.objectHeight = objectHeight
        self.cameraAzimuthMagnetic = cameraAzimuthMagnetic
    }
}

/// Where a ground-truth position is given.
public enum GroundTruthPosition: Sendable, Equatable {
    case geodetic(Geodetic)
    /// Local ENU, m (floor-plan frames of imported indoor data).
    case local(SIMD3<Double>)
}

/// A ground-truth position of a subject.
public struct GroundTruth: Sendable, Equatable {
    public var position: GroundTruthPosition
    public var floor: Int?
    /// `checkpoint` (surveyed waypoint) or `continuous` (reference track sample).
    public var kind: Kind
    public enum Kind: String, Sendable, Codable { case checkpoint, continuous }
    public init(position: GroundTruthPosition, floor: Int? = nil, kind: Kind = .continuous) {
        self.position = position; self.floor = floor; self.kind = kind
    }
}

/// A step reported by the operating system's step detector (optional).
public struct StepEvent: Sendable, Equatable {
    /// Step length if the source estimated one, m.
    public var length: Double?
    public init(length: Double? = nil) { self.length = length }
}
