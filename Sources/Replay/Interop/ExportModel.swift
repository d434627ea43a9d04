import Foundation
import Positioning
import TraceIO

/// One position to export: an estimate (`Fix`), a phone GNSS fix or a ground-truth sample,
/// in both WGS84 and the trace's local ENU frame.
public struct ExportPoint: Sendable, Equatable {
    /// Trace time, s (Unix time for imported recordings).
    public var time: Double
    /// Producer: a `Source` raw value (`gnss`, `ekf`, …) or `gt` for ground truth.
    public var source: String
    /// Subject (device id or `object:<id>`).
    public var subject: String
    public var geodetic: Geodetic
    /// Local ENU, m, about the trace origin.
    public var enu: SIMD3<Double>
    /// Horizontal covariance, m² (nil for ground truth).
    public var covariance: Covariance2?
    public var floor: Int?
    /// Ground truth kind (`checkpoint`/`continuous`), nil otherwise.
    public var kind: String?

    public init(time: Double, source: String, subject: String, geodetic: Geodetic, enu: SIMD3<Double>,
                covariance: Covariance2? = nil, floor: Int? = nil, kind: String? = nil) {
        self.time = time; self.source = source; self.subject = subject; self.geodetic = geodetic; self.enu = enu
        self.covariance = covariance; self.floor = floor; self.kind = kind
    }

    /// The 95 % confidence ellipse: semi-axes (m) and major-axis azimuth (deg clockwise from
    /// north, in [0, 180)). Semi-axis = k·σ with k = √(−2 ln 0.05) = 2.4477 (χ², 2 dof).
    public var ellipse95: (major: Double, minor: Double, azimuthDeg: Double)? {
        guard let c = covariance, c.isValid else { return nil }
        let ax = c.principalAxes
        let k = Covariance2.ellipseScale(probability: 0.95)
        var az = ax.azimuth * 180 / .pi
        az = az.truncatingRemainder(dividingBy: 180); if az < 0 { az += 180 }
        return (k * ax.major, k * ax.minor, az)
    }
}

/// Positions grouped into tracks by (source, subject), in time order.
public struct ExportTrack: Sendable, Equatable {
    public var source: String
    public var subject: String
    public var points: [ExportPoint]
    public var name: String { subject == Fix.defaultSubject ? source : "\(source)/\(subject)" }
}

public enum ExportBuilder {
    /// Ground truth (`gt`) and phone GNSS fixes (`gnss`, covariance σ = acc / 1.5096 per axis,
    /// as `GNSSEstimator`) of a trace, restricted to `sources` (nil = both).
    public static func points(events: [TraceEvent], header: TraceHeader, sources: Set<String>? = nil) -> [ExportPoint] {
        let frame = header.frame
        var out: [ExportPoint] = []
        let sigma68 = GNSSEstimator()
        for e in events {
            switch e.payload {
            case .groundTruth(let g) where sources?.contains("gt") ?? true:
                let geo: Geodetic, v: SIMD3<Double>
                switch g.position {
                case .geodetic(let p): geo = p; v = frame.enu(p)
                case .local(let l): v = l; geo = frame.geodetic(l)
                }
                out.append(ExportPoint(time: e.time, source: "gt", subject: e.device, geodetic: geo, enu: v, floor: g.floor, kind: g.kind.rawValue))
            case .gnss(let f) where sources?.contains("gnss") ?? true:
                let geo = Geodetic(latitude: f.latitude, longitude: f.longitude, height: f.altitude ?? header.origin.height)
                let s = sigma68.sigma(forAccuracy: f.accuracy)
                out.append(ExportPoint(time: e.time, source: "gnss", subject: e.device, geodetic: geo, enu: frame.enu(geo),
                                       covariance: s.isFinite && s > 0 ? Covariance2(sigma: s) : nil))
            default: break
            }
        }
        return out
    }

    /// Estimates of a replay, converted with the trace's frame (height: `up` or the origin's).
    public static func points(fixes: [Fix], header: TraceHeader, sources: Set<String>? = nil) -> [ExportPoint] {
        let frame = header.frame
        return fixes.compactMap { f in
            guard sources?.contains(f.source.rawValue) ?? true else { return nil }
            let v = SIMD3(f.position.x, f.position.y, f.up ?? 0)
            return ExportPoint(time: f.time, source: f.source.rawValue, subject: f.subject, geodetic: frame.geodetic(v), enu: v,
                               covariance: f.covariance, floor: f.floor)
        }
    }

    /// Groups points into tracks (sorted by source, then subject), each in time order.
    public static func tracks(_ points: [ExportPoint]) -> [ExportTrack] {
        var groups: [String: ExportTrack] = [:]
        var order: [String] = []
        for p in points {
            let key = p.source + "\u{1}" + p.subject
            if groups[key] == nil { groups[key] = ExportTrack(source: p.source, subject: p.subject, points: []); order.append(key) }
            groups[key]!.points.append(p)
        }
        return order.map { k -> ExportTrack in
            var t = groups[k]!
            t.points = t.points.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
            return t
        }.sorted { ($0.source, $0.subject) < ($1.source, $1.subject) }
    }
}

/// Shortest round-trip decimal (as the trace writer).
@inline(__always) func fmt(_ v: Double) -> String { num(v) }

