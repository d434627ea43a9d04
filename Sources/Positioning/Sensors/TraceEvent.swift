/// One timestamped line of a trace. `device` names the phone that recorded it
/// (`Fix.defaultSubject` for single-phone traces); for ground truth it names the
/// subject the truth belongs to (a device id, or "object:<id>").
public struct TraceEvent: Sendable, Equatable {
    /// Trace time, s.
    public var time: Double
    public var device: String
    public var payload: Payload

    /// The large, rare payloads (cell, peer range, photo) are `indirect` (boxed) so that a
    /// `TraceEvent` stays small (≈ 80 bytes) and cheap to copy on the hot replay path.
    public enum Payload: Sendable, Equatable {
        case gnss(GNSSFix)
        case wifi(WiFiScan)
        case ble(BLEScan)
        indirect case cell(CellObservation)
        case imu(IMUSample)
        case step(StepEvent)
        case acoustic(AcousticArrival)
        indirect case peerRange(PeerRange)
        indirect case photo(PhotoObservation)
        case groundTruth(GroundTruth)
    }

    public init(time: Double, device: String = Fix.defaultSubject, payload: Payload) {
        self.time = time; self.device = device; self.payload = payload
    }

    /// The `type` string of this event in the trace format.
    public var typeName: String {
        switch payload {
        case .gnss: return "gnss"
        case .wifi: return "wifi"
        case .ble: return "ble"
        case .cell: return "cell"
        case .imu(let s): return s.kind.rawValue
        case .step: return "step"
        case .acoustic: return "acoustic"
        case .peerRange: return "peer_range"
        case .photo: return "photo"
        case .groundTruth: return "gt"
        }
    }
}
