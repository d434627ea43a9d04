import Foundation
import Positioning

/// Refines the coordinates of submitted reports (a pothole photo, a flood marker…) from the
/// evidence attached to them (`posfuse refine`, docs/refine.md).
///
/// **Input record** (one JSON object; a GeoJSON Feature carries the same keys in `properties`
/// and the position as its Point geometry):
/// `id` (string, optional), `lat`, `lon` (WGS84 deg), `accuracy_m` (reported accuracy, m, the
/// 68 % radius as Android reports it), `t` (report time on the evidence clock, s; default: the
/// latest evidence time, else 0), `evidence` (array of trace-format v1 event objects:
/// `wifi`, `cell`, `acc`/`gyro`/`mag`/`rotvec`, `step`, `acoustic`, `peer_range`, `photo`, `gnss`;
/// docs/trace-format.md; their `device` defaults to the reporting phone).
///
/// **Model.** A local ENU frame at the reported position; the reported position enters as a
/// GNSS fix (σ from the 68 % radius); the evidence events run in time order through the
/// estimator stages (cell, cell-ta, wcl, rss, hapel, fingerprint, tdoa, peer, camloc; reference data from
/// `--reference`) and the `ekf` stage fuses everything it accepts (PDR from an IMU window,
/// χ² gating: a fix inconsistent with the rest is rejected and reported). The refined position
/// is the filter's last estimate; its 95 % ellipse (semi-axes √(χ²₂(0.95) λᵢ)) and 95 % radius
/// come from the filter covariance. With a photo pair, CamLoc's estimate of the *object*
/// (what the report is about) is reported as `object`, beside the phone's refined position.
///
/// **Frames.** Reports are processed in the ENU frame of a 0.05° tile (≈ 5 km) around them, so
/// the reference data (`reference.json`, geodetic, and the towers and coverage areas of a cell
/// database within 50 km) is converted once per tile and cached.
public final class ReportRefiner {
    public let referenceURL: URL?
    public let stages: [String: StageOptions]
    private var tiles: [SIMD2<Int>: (frame: LocalFrame, reference: ReferenceData)] = [:]
    private var tileOrder: [SIMD2<Int>] = []          // oldest first, for eviction
    private var cachedEntries = 0
    static let tileDegrees = 0.05
    /// Cache bound: reference entries (APs, cells, beacons, landmarks, walls, fingerprint points) over all cached
    /// tiles, so memory stays bounded for a country-wide stream whatever the reference's size.
    static let maxCachedEntries = 2_000_000

    /// The reference file, parsed once (converted into each tile's frame on first use).
    private let referenceJSON: Any?

    /// A cell database (SQLite) whose towers and coverage areas near each tile join its reference
    /// data; opened once (a bad file fails here, before any report).
    public let cellDatabase: CellDatabase?

    public init(referenceURL: URL? = nil, stages: [String: StageOptions] = [:], cellDatabase: String? = nil) throws {
        self.referenceURL = referenceURL; self.stages = stages
        self.cellDatabase = try cellDatabase.map { try CellDatabase.forReading(path: $0) }
        referenceJSON = try referenceURL.map { try ReferenceLoader.json(url: $0) }
        if let u = referenceURL, let j = referenceJSON {           // bad reference data fails here, before any report
            _ = try ReferenceLoader.load(json: j, url: u, frame: LocalFrame(origin: Geodetic(latitude: 0, longitude: 0)))
        }
        _ = try StageRegistry.pipeline(options: stages)           // bad options fail here, before any report
    }

    private func tile(_ lat: Double, _ lon: Double) throws -> (frame: LocalFrame, reference: ReferenceData) {
        let key = SIMD2(Int((lat / Self.tileDegrees).rounded()), Int((lon / Self.tileDegrees).rounded()))
        if let t = tiles[key] { return t }
        let frame = Self.frame(latitude: lat, longitude: lon)
        var ref = ReferenceData.empty
        if let u = referenceURL, let j = referenceJSON { ref = try ReferenceLoader.load(json: j, url: u, frame: frame) }
        try cellDatabase?.merge(into: &ref, frame: frame)
        let entries = Self.entryCount(ref)
        while let oldest = tileOrder.first, cachedEntries + entries > Self.maxCachedEntries || tiles.count >= 4096 {
            tileOrder.removeFirst()
            if let t = tiles.removeValue(forKey: oldest) { cachedEntries -= Self.entryCount(t.reference) }
        }
        tiles[key] = (frame, ref); tileOrder.append(key); cachedEntries += entries
        return (frame, ref)
    }

    static func entryCount(_ r: ReferenceData) -> Int {
        r.accessPoints.count + r.cells.count + r.beacons.count + r.landmarks.count + r.walls.count
            + (r.fingerprints?.points.count ?? 0) + (r.cellCoverage?.areas.count ?? 0) + 1
    }

    /// One refined (or failed) report as a GeoJSON Feature object.
    public struct Outcome {
        public var feature: [String: Any]
        public var ok: Bool
    }

    public struct InputError: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// The keys a report may carry (anything else is ignored).
    struct Report {
        var id: String?
        var latitude: Double, longitude: Double, accuracy: Double
        var time: Double?
        var evidence: Evidence
    }

    /// Evidence events as parsed objects (a GeoJSON FeatureCollection document) or as the raw
    /// bytes of a JSON Lines record (`ReportStream`, decoded without Foundation objects).
    enum Evidence {
        case objects([[String: Any]])
        case raw(RawEvidence)
    }

    /// A JSON number as Double; nil for anything else, booleans included. (On Linux,
    /// JSONSerialization's NSNumber 0 and 1 answer `is Bool` too: only a real Bool or a
    /// `__NSCFBoolean` is a boolean.)
    public static func number(_ v: Any?) -> Double? {
        guard let v, !(type(of: v) == Bool.self), String(describing: type(of: v)) != "__NSCFBoolean" else { return nil }
        if let d = v as? Double { return d }
        if let i = v as? Int { return Double(i) }
        return (v as? NSNumber)?.doubleValue
    }

    /// Parses one record: a plain report object or a GeoJSON Feature.
    static func parse(_ object: Any) throws -> Report {
        guard var o = object as? [String: Any] else { throw InputError(reason: "a report must be a JSON object") }
        if o["type"] as? String == "Feature" {
            var p = o["properties"] as? [String: Any] ?? [:]
            if let g = o["geometry"] as? [String: Any], g["type"] as? String == "Point", let c = g["coordinates"] as? [Any], c.count >= 2 {
                p["lon"] = c[0]; p["lat"] = c[1]
            } else {
                throw InputError(reason: "a Feature needs a Point geometry with [lon, lat]")
            }
            if p["id"] == nil, let id = o["id"] { p["id"] = id }
            o = p
        }
        guard let lat = number(o["lat"]), (-90...90).contains(lat) else { throw InputError(reason: "missing or invalid 'lat' (deg, −90…90)") }
        guard let lon = number(o["lon"]), (-180...180).contains(lon) else { throw InputError(reason: "missing or invalid 'lon' (deg, −180…180)") }
        guard let acc = number(o["accuracy_m"] ?? o["accuracy"]), acc > 0, acc.isFinite else {
            throw InputError(reason: "missing or invalid 'accuracy_m' (m, > 0)")
        }
        var evidence: [[String: Any]] = []
        if let raw = o["evidence"] as? RawEvidence {
            if let i = raw.elements.firstIndex(where: { !$0.isObject }) { throw InputError(reason: "evidence[\(i)] is not an object") }
        } else if let e = o["evidence"] {
            guard let list = e as? [Any] else { throw InputError(reason: "'evidence' must be an array of trace events") }
            for (i, item) in list.enumerated() {
                guard let ev = item as? [String: Any] else { throw InputError(reason: "evidence[\(i)] is not an object") }
                evidence.append(ev)
            }
        }
        let id = o["id"].map { "\($0)" }
        return Report(id: id, latitude: lat, longitude: lon, accuracy: acc, time: number(o["t"]),
                      evidence: (o["evidence"] as? RawEvidence).map { .raw($0) } ?? .objects(evidence))
    }

    /// Refines one parsed JSON record; never throws: a bad record becomes an error Feature.
    public func refine(_ object: Any, location: String) -> Outcome {
        let id = ((object as? [String: Any])?["id"] ?? ((object as? [String: Any])?["properties"] as? [String: Any])?["id"]).map { "\($0)" }
        do {
            return try refine(Self.parse(object), location: location)
        } catch {
            return Self.errorFeature(id: id, reason: "\(location): \(error)")
        }
    }

    public static func errorFeature(id: String?, reason: String) -> Outcome {
        var p: [String: Any] = ["status": "error", "error": reason]
        if let id { p["id"] = id }
        return Outcome(feature: ["type": "Feature", "geometry": NSNull(), "properties": p], ok: false)
    }

    func refine(_ r: Report, location: String) throws -> Outcome {
        let t = try tile(r.latitude, r.longitude)
        let (events, rejected) = Self.decode(r.evidence)
        return try refine(r, events: events, rejected: rejected, frame: t.frame, reference: t.reference)
    }

    /// A report parsed and its evidence decoded, before any reference data is looked up: what a
    /// caller with its own reference store (`posfuse serve`) needs to fetch first.
    public struct Prepared {
        let report: Report
        let events: [TraceEvent]
        let rejected: [[String: Any]]
        public var latitude: Double { report.latitude }
        public var longitude: Double { report.longitude }
        public var id: String? { report.id }
        /// The cells and (normalised) BSSIDs the evidence names.
        public var cells: Set<CellID> {
            Set(events.compactMap { if case .cell(let o) = $0.payload { return o.cell } else { return nil } })
        }
        public var bssids: Set<String> {
            Set(events.flatMap { e -> [String] in
                if case .wifi(let s) = e.payload { return s.accessPoints.map { MACAddress.normalize($0.bssid) } } else { return [] }
            })
        }
    }

    /// Parses one record (a plain report object or a GeoJSON Feature) and decodes its evidence.
    public static func prepare(_ object: Any) throws -> Prepared {
        let r = try parse(object)
        let (events, rejected) = decode(r.evidence)
        return Prepared(report: r, events: events, rejected: rejected)
    }

    /// The local ENU frame a report at (`latitude`, `longitude`) is refined in (its tile's).
    public static func frame(latitude: Double, longitude: Double) -> LocalFrame {
        let key = SIMD2(Int((latitude / tileDegrees).rounded()), Int((longitude / tileDegrees).rounded()))
        return LocalFrame(origin: Geodetic(latitude: Double(key.x) * tileDegrees, longitude: Double(key.y) * tileDegrees))
    }

    /// Refines a prepared report with `extra` reference data, expressed in
    /// `frame(latitude:longitude:)` of the report, joined to the tile's own (`--reference`,
    /// `--cell-db`; entries the tile already has are kept). Never throws: a failure is an error Feature.
    public func refine(_ p: Prepared, location: String, adding extra: ReferenceData) -> Outcome {
        do {
            let t = try tile(p.latitude, p.longitude)
            var ref = t.reference
            ref.accessPoints.merge(extra.accessPoints) { own, _ in own }
            ref.cells.merge(extra.cells) { own, _ in own }
            if let c = extra.cellCoverage, !c.isEmpty {
                ref.cellCoverage = CellCoverageMap(areas: (ref.cellCoverage?.areas ?? [:]).merging(c.areas) { own, _ in own })
            }
            return try refine(p.report, events: p.events, rejected: p.rejected, frame: t.frame, reference: ref)
        } catch {
            return Self.errorFeature(id: p.id, reason: "\(location): \(error)")
        }
    }

    /// What the fusion of one report's evidence gives: the filter's last estimate (nil when no
    /// evidence initialised it), the sources it used, the evidence it did not use and why, and
    /// CamLoc's estimate of a photographed object.
    public struct Fused {
        public var best: Fix?
        public var used: [String]
        public var rejected: [[String: Any]]
        public var object: Fix?
    }

    /// The stage options of a one-report fusion: the reported accuracy at face value (GNSS
    /// inflation α = 1 unless configured), the ekf only (ukf, pf and smoother off unless configured).
    public static func reportOptions(_ stages: [String: StageOptions]) -> [String: StageOptions] {
        var options = stages
        // One report is one fix, not a 1 Hz stream with a slowly varying bias: its accuracy is
        // taken at face value (α = 1) unless the configuration says otherwise.
        if options["ekf"]?.values["inflation"] == nil {
            var e = options["ekf"] ?? StageOptions(name: "ekf")
            var m: [String: ConfigValue] = [:]
            for (s, a) in FusionStage.Settings.defaultInflation { m[s.rawValue] = .number(s == .gnss ? 1 : a) }
            e.values["inflation"] = .map(m)
            options["ekf"] = e
        }
        for name in ["ukf", "pf", "smoother"] where options[name] == nil { options[name] = StageOptions(name: name, values: ["enabled": .bool(false)]) }
        return options
    }

    /// Runs `events` (any order) through the estimator stages and the ekf of `stages`
    /// (`reportOptions`): the one fusion path of `refine` and of `serve`'s geolocate.
    public static func fuse(_ input: [TraceEvent], rejected: [[String: Any]] = [], context: PipelineContext,
                            stages: [String: StageOptions]) throws -> Fused {
        let pipeline = try StageRegistry.pipeline(options: reportOptions(stages))
        guard let fusion = pipeline.stages.compactMap({ $0 as? FusionStage }).first(where: { $0.source == .ekf }) else {
            throw InputError(reason: "the ekf stage is disabled: refine needs it")
        }
        var rejected = rejected
        let events = input.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        let evidenceTypes = Set(events.map(\.typeName))
        var lastFused: Fix?
        var objectFix: Fix?
        var producedBy: [Source: Int] = [:]
        for e in events {
            for result in pipeline.process(e, context: context) {
                switch result {
                case .fix(let f) where f.source == .ekf && f.subject == Fix.defaultSubject: lastFused = f
                case .fix(let f) where f.subject.hasPrefix("object:"): objectFix = f
                case .fix(let f) where !f.source.isFusion: producedBy[f.source, default: 0] += 1
                case .failure(let s, let t, _, let reason):
                    // "Missing input" of a stage whose own evidence type is absent is not news.
                    if case .missingInput = reason, let needs = Self.ownInput[s], !evidenceTypes.contains(needs) { continue }
                    rejected.append(["input": s.rawValue, "t": t, "reason": reason.description])
                default: break
                }
            }
        }
        for r in pipeline.finish(context: context) { if case .fix(let f) = r, f.subject.hasPrefix("object:") { objectFix = f } }

        var used: [String] = [], gated: [String: Int] = [:], contained: Set<String> = []
        for (s, c) in fusion.counters.sorted(by: { $0.key < $1.key }) {
            // The filter's own source labels its magnetometer heading updates.
            if c.accepted > 0 || c.initializations > 0 { used.append(s.isFusion ? "magnetometer-heading" : s.rawValue) }
            if c.gated > 0 { gated[s.rawValue] = c.gated }
            if c.superseded > 0 { contained.insert(s.rawValue) }
        }
        for (s, n) in gated.sorted(by: { $0.key < $1.key }) {
            rejected.append(["input": s, "reason": "\(n) fix(es) rejected by the χ² gate (inconsistent with the other evidence)"])
        }
        for s in contained.sorted() where !used.contains(s) && gated[s] == nil {
            let by = fusion.settings.superseding.filter { $0.value.contains(where: { $0.rawValue == s }) }.keys.map(\.rawValue).sorted()
            rejected.append(["input": s, "reason": "contained in the \(by.joined(separator: "/")) fix of the same evidence (not fused twice)"])
        }
        for s in producedBy.keys.sorted() where s != .gnss && !used.contains(s.rawValue) && gated[s.rawValue] == nil && !contained.contains(s.rawValue) {
            rejected.append(["input": s.rawValue, "reason": "not fused (not an ekf input)"])
        }
        return Fused(best: lastFused, used: used, rejected: rejected, object: objectFix)
    }

    func refine(_ r: Report, events decoded: [TraceEvent], rejected decodeRejected: [[String: Any]], frame: LocalFrame,
                reference: ReferenceData) throws -> Outcome {
        let header = TraceHeader(origin: frame.origin)
        let context = PipelineContext(header: header, reference: reference)
        let reported = frame.en(latitude: r.latitude, longitude: r.longitude)
        var events = decoded
        let reportTime = r.time ?? events.map(\.time).max() ?? 0
        // The reported position, as the phone's GNSS fix at the report time.
        events.append(TraceEvent(time: reportTime, payload: .gnss(GNSSFix(latitude: r.latitude, longitude: r.longitude,
                                                                           accuracy: r.accuracy))))
        let fused = try Self.fuse(events, rejected: decodeRejected, context: context, stages: stages)
        let used = fused.used, rejected = fused.rejected

        let best = fused.best ?? Fix(time: reportTime, position: reported, covariance: Covariance2(sigma: r.accuracy / 1.5096),
                                     source: .gnss)
        let g = header.frame.geodetic(east: best.position.x, north: best.position.y, up: 0)
        var props: [String: Any] = [
            "status": used.count > 1 ? "refined" : "reported",
            "reported": ["lat": r.latitude, "lon": r.longitude, "accuracy_m": r.accuracy],
            "shift_m": ((best.position - reported) * (best.position - reported)).sum().squareRoot(),
            "sources_used": used,
            "rejected": rejected,
            "t": reportTime,
        ]
        props.merge(Self.uncertainty(best.covariance)) { $1 }
        if let id = r.id { props["id"] = id }
        if let o = fused.object {
            let og = header.frame.geodetic(east: o.position.x, north: o.position.y, up: 0)
            var obj: [String: Any] = ["lat": og.latitude, "lon": og.longitude, "subject": o.subject,
                                      "note": "CamLoc: the photographed object's position (what the report is about)"]
            obj.merge(Self.uncertainty(o.covariance)) { $1 }
            props["object"] = obj
        }
        return Outcome(feature: ["type": "Feature",
                                 "geometry": ["type": "Point", "coordinates": [g.longitude, g.latitude]],
                                 "properties": props], ok: true)
    }

    /// Evidence → trace events through the trace-format decoder (one schema, one set of rules;
    /// an event's `device` defaults to the reporting phone there). An event that cannot be
    /// decoded is listed with its index and reason, never dropped silently.
    static func decode(_ evidence: Evidence) -> (events: [TraceEvent], rejected: [[String: Any]]) {
        var decoder = TraceLineDecoder()
        var events: [TraceEvent] = []
        var rejected: [[String: Any]] = []
        func add(_ i: Int, _ p: UnsafePointer<UInt8>, _ count: Int) {
            do {
                switch try decoder.event(p, count: count) {
                case .event(let x): events.append(x)
                case .unknown(let type, _): rejected.append(["input": "evidence[\(i)]", "reason": "unknown event type '\(type)'"])
                }
            } catch {
                rejected.append(["input": "evidence[\(i)]", "reason": error.message])
            }
        }
        switch evidence {
        case .raw(let raw):
            events.reserveCapacity(raw.elements.count)
            raw.buffer.withUnsafeBufferPointer { b in
                for (i, e) in raw.elements.enumerated() { add(i, b.baseAddress! + e.range.lowerBound, e.range.count) }
            }
        case .objects(let list):
            for (i, e) in list.enumerated() {
                guard var data = try? JSONSerialization.data(withJSONObject: e) else {
                    rejected.append(["input": "evidence[\(i)]", "reason": "not JSON"]); continue
                }
                data.append(0)                                      // the scanner's terminator
                data.withUnsafeBytes { add(i, $0.bindMemory(to: UInt8.self).baseAddress!, $0.count - 1) }
            }
        }
        return (events, rejected)
    }

    /// The evidence type a stage works from, for stages that also see other sources' fixes.
    static let ownInput: [Source: String] = [.peer: "peer_range", .camloc: "photo", .tdoa: "acoustic"]

    /// 95 % ellipse (semi-axes m, orientation deg clockwise from north) and 95 % radius (m).
    public static func uncertainty(_ c: Covariance2) -> [String: Any] {
        let k = ChiSquare.quantile(0.95, dof: 2).squareRoot()
        let ax = c.principalAxes
        var deg = Angle.degrees(ax.azimuth).truncatingRemainder(dividingBy: 180)
        if deg < 0 { deg += 180 }
        return ["radius95_m": c.circularRadius(probability: 0.95),
                "ellipse95": ["semi_major_m": k * ax.major, "semi_minor_m": k * ax.minor, "orientation_deg": deg]]
    }
}
