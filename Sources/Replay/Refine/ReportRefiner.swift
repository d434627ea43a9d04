import Foundation
import Positioning
import Storage
import TraceIO

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
    /// `stages` with refine's own defaults (GNSS inflation 1, no ukf/pf/smoother).
    private let refineStages: [String: StageOptions]
    /// `refineStages` parsed once, built once: each report starts from `pipeline.reset()`
    /// (every stage's per-report state cleared; the same bytes as a new pipeline from the
    /// prototype per report: `RefineResetTests`).
    private var pipeline: Pipeline
    private let prototype: PipelinePrototype
    /// A new pipeline from the prototype per report instead of `reset()` (the reference of
    /// `RefineResetTests`; the same bytes).
    package var freshPipelinePerReport = false
    private var tiles: [SIMD2<Int>: Tile] = [:]
    private var tileOrder: [SIMD2<Int>] = []          // oldest first, for eviction
    private var cachedEntries = 0
    static let tileDegrees = 0.05
    /// Cache bound: reference entries (APs, cells, beacons, landmarks, walls, fingerprint points) over all cached
    /// tiles, so memory stays bounded for a country-wide stream whatever the reference's size.
    static let maxCachedEntries = 2_000_000

    /// The reference file, read and checked once (converted into each tile's frame on first use,
    /// without parsing it again).
    private let reference: PreparedReference?

    /// A cell database (SQLite) whose towers and coverage areas near each tile join its reference
    /// data; opened once (a bad file fails here, before any report).
    public let cellDatabase: CellDatabase?

    public init(referenceURL: URL? = nil, stages: [String: StageOptions] = [:], cellDatabase: String? = nil) throws {
        self.referenceURL = referenceURL; self.stages = stages
        self.cellDatabase = try cellDatabase.map { try CellDatabase.forReading(path: $0) }
        // Bad reference data fails here, before any report.
        reference = try referenceURL.map {
            try ReferenceLoader.prepare(json: try ReferenceLoader.json(url: $0), url: $0, frame: LocalFrame(origin: Geodetic(latitude: 0, longitude: 0)))
        }
        refineStages = Self.reportOptions(stages)
        _ = try StageRegistry.pipeline(options: stages)           // bad options fail here, before any report
        prototype = try StageRegistry.prototype(options: refineStages)
        pipeline = prototype.make()
    }

    /// The stage options of a one-report fusion (refine, and `serve`'s geolocate): `stages`
    /// with the ukf, pf and smoother off unless configured, and GNSS inflation α = 1 — one report
    /// is one fix, not a 1 Hz stream with a slowly varying bias: its accuracy is taken at face
    /// value unless the configuration says otherwise, and the ekf's online widening from the GNSS
    /// bias estimate (`gnss_bias_adaptive_window`, a window of fixes) is off. For the same reason the `gnss` stage's
    /// error model (`GNSSErrorModel`, fitted on chipset fix streams) is off here unless configured
    /// (`gnss: {error_model: shipped}`): a report's position and `accuracy_m` may come from any
    /// location provider, and the model's effect on refined reports is not measured yet.
    public static func reportOptions(_ stages: [String: StageOptions]) -> [String: StageOptions] {
        var options = stages
        /// Sets `key` of `stage` to `value` unless the configuration sets it.
        func unlessConfigured(_ stage: String, _ key: String, _ value: ConfigValue) {
            guard options[stage]?.values[key] == nil else { return }
            var o = options[stage] ?? StageOptions(name: stage)
            o.values[key] = value
            options[stage] = o
        }
        unlessConfigured("gnss", GNSSErrorModel.option, .string("none"))
        // The online widening from the GNSS bias estimate follows a stream of fixes against the
        // motion model (`gnss_bias_adaptive_window`); a report's position is one fix: off unless configured.
        unlessConfigured("ekf", FusionStage.Options.gnssBiasAdaptiveWindow.key, .number(0))
        var inflation: [String: ConfigValue] = [:]
        for (s, a) in FusionStage.Settings.defaultInflation { inflation[s.rawValue] = .number(s == .gnss ? 1 : a) }
        unlessConfigured("ekf", "inflation", .map(inflation))
        for name in ["ukf", "pf", "smoother"] where options[name] == nil { options[name] = StageOptions(name: name, values: ["enabled": .bool(false)]) }
        return options
    }

    /// A cached tile: its frame and the pipeline context of its reports (header and reference data
    /// in that frame), built once per tile. (Per report, building the context computed the frame's
    /// trigonometry twice and copied the reference data: ≈ 3k instructions, docs/refine.md.)
    private final class Tile {
        let context: PipelineContext
        let entries: Int
        init(context: PipelineContext, entries: Int) { self.context = context; self.entries = entries }
    }

    private func tile(_ lat: Double, _ lon: Double) throws -> Tile {
        let key = SIMD2(Int((lat / Self.tileDegrees).rounded()), Int((lon / Self.tileDegrees).rounded()))
        if let t = tiles[key] { return t }
        let frame = LocalFrame(origin: Geodetic(latitude: Double(key.x) * Self.tileDegrees, longitude: Double(key.y) * Self.tileDegrees))
        var ref = ReferenceData.empty
        if let r = reference { ref = r.data(in: frame) }
        try cellDatabase?.merge(into: &ref, frame: frame)
        let entries = Self.entryCount(ref)
        while let oldest = tileOrder.first, cachedEntries + entries > Self.maxCachedEntries || tiles.count >= 4096 {
            tileOrder.removeFirst()
            if let t = tiles.removeValue(forKey: oldest) { cachedEntries -= t.entries }
        }
        let t = Tile(context: PipelineContext(header: TraceHeader(origin: frame.origin), reference: ref), entries: entries)
        tiles[key] = t; tileOrder.append(key); cachedEntries += entries
        return t
    }

    static func entryCount(_ r: ReferenceData) -> Int {
        r.accessPoints.count + r.cells.count + r.beacons.count + r.landmarks.count + r.walls.count
            + (r.fingerprints?.points.count ?? 0) + (r.cellCoverage?.areas.count ?? 0) + 1
    }

    /// What became of one record (its GeoJSON Feature is written to the caller's buffer).
    public struct Outcome: Sendable {
        public enum Status: String, Sendable { case refined, reported, error }
        public var status: Status
        /// `file:line: reason` for an error record.
        public var error: String?
        public var ok: Bool { status != .error }
    }

    public struct InputError: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// One entry of an output record's `rejected` list.
    public struct Rejection: Sendable {
        public var input: String
        public var time: Double?
        public var reason: String
    }

    /// Refines one record (its JSON bytes; `record.baseAddress![record.count]` must be readable,
    /// as `ReportStream` guarantees) and appends its GeoJSON Feature to `out`. Never throws: a bad
    /// record becomes an error Feature whose reason starts with `file:line:`.
    public func refine(_ record: UnsafeBufferPointer<UInt8>, file: String, line: Int, into out: inout [UInt8]) -> Outcome {
        guard let base = record.baseAddress else {
            return Self.writeError(id: nil, reason: "\(file):\(line): \(LineIssue.json("unexpected end of line at column 1, expected '{'").message)", into: &out)
        }
        do {
            return try parser.parse(base, count: record.count, deferEvidence: deferEvidence) { report, scanner in
                try refine(report, scanner: scanner, into: &out)
            }
        } catch let f as ReportRecordParser.Failure {
            switch f {
            case .malformed(let reason): return Self.writeError(id: nil, reason: "\(file):\(line): \(reason)", into: &out)
            case .invalid(let id, let reason): return Self.writeError(id: id, reason: "\(file):\(line): \(reason)", into: &out)
            case .uncheckedEvidence:                      // `parse` resolves it; never reaches here
                return Self.writeError(id: parser.errorID, reason: "\(file):\(line): evidence could not be checked", into: &out)
            }
        } catch {
            return Self.writeError(id: parser.errorID, reason: "\(file):\(line): \(error)", into: &out)
        }
    }

    /// `refine` of a record held in memory (a service's request body). `extra`: reference data
    /// (in `frame(latitude:longitude:)` of the report) joined to the tile's own for this record
    /// (entries the tile already has are kept) — what `posfuse serve`'s store knows.
    public func refine(json: [UInt8], file: String, line: Int, adding extra: ReferenceData? = nil, into out: inout [UInt8]) -> Outcome {
        var bytes = json
        let n = bytes.count
        bytes.append(0)
        self.extra = extra
        defer { self.extra = nil }
        return bytes.withUnsafeBufferPointer { refine(UnsafeBufferPointer(rebasing: $0[0..<n]), file: file, line: line, into: &out) }
    }

    /// The radios a record's evidence names: what a caller with its own reference store looks up
    /// before `refine(json:…adding:)`.
    public struct RadioIdentifiers: Sendable {
        public var latitude: Double, longitude: Double
        public var cells: Set<CellID> = []
        /// WiFi BSSIDs and Bluetooth beacon ids, normalised (`MACAddress.normalize`: the map keys).
        public var bssids: Set<String> = [], beacons: Set<String> = []
    }

    /// The position, cells, BSSIDs and beacon ids of a record held in memory; nil when the
    /// record does not parse (its `refine` then says why).
    public func radioIdentifiers(json: [UInt8]) -> RadioIdentifiers? {
        var bytes = json
        let n = bytes.count
        bytes.append(0)
        return try? bytes.withUnsafeBufferPointer { b in
            try parser.parse(b.baseAddress!, count: n) { r, s in
                var ids = RadioIdentifiers(latitude: r.latitude, longitude: r.longitude)
                for i in r.evidence.indices {
                    guard case .event(let x) = try? r.event(i, decoder: &decoder, scanner: s) else { continue }
                    switch x.payload {
                    case .cell(let o): ids.cells.insert(o.cell)
                    case .wifi(let w): for a in w.accessPoints { ids.bssids.insert(MACAddress.normalize(a.bssid)) }
                    case .ble(let b): for a in b.beacons { ids.beacons.insert(MACAddress.normalize(a.id)) }
                    default: break
                    }
                }
                return ids
            }
        }
    }

    /// The local ENU frame a report at (`latitude`, `longitude`) is refined in (its tile's).
    public static func frame(latitude: Double, longitude: Double) -> LocalFrame {
        let key = SIMD2(Int((latitude / tileDegrees).rounded()), Int((longitude / tileDegrees).rounded()))
        return LocalFrame(origin: Geodetic(latitude: Double(key.x) * tileDegrees, longitude: Double(key.y) * tileDegrees))
    }

    /// Appends the error Feature of a record that could not be refined.
    @discardableResult
    public static func writeError(id: String?, reason: String, into out: inout [UInt8]) -> Outcome {
        out.append(literal: "{\"geometry\":null,\"properties\":{\"error\":")
        out.append(jsonString: reason)
        if let id { out.append(literal: ",\"id\":"); out.append(jsonString: id) }
        out.append(literal: ",\"status\":\"error\"},\"type\":\"Feature\"}")
        return Outcome(status: .error, error: reason)
    }

    private var parser = ReportRecordParser()
    /// Evidence events validated once, by the trace decoder (`ReportRecordParser.parse`); false
    /// validates them in the record scan as well (the same output: `ReportRefinerTests`).
    package var deferEvidence = true
    /// With `deferEvidence`: the record scan reads each event's members, so the decoder does not
    /// scan the event's bytes again (`ReportRecordParser.readsEvidenceMembers`; false: the reading
    /// of before session 22, the same output: `ReportRefinerTests`).
    package var readsEvidenceMembers: Bool {
        get { parser.readsEvidenceMembers }
        set { parser.readsEvidenceMembers = newValue }
    }
    private var decoder = TraceLineDecoder()
    private var events: [TraceEvent] = []
    private var rejected: [Rejection] = []
    private var extra: ReferenceData?

    private func refine(_ r: ReportRecordParser.Report, scanner s: JSONLineScanner, into out: inout [UInt8]) throws -> Outcome {
        let tile = try tile(r.latitude, r.longitude)
        guard let extra else {
            // The tile's context itself, borrowed: a copy (`var context = tile.context`) retained
            // and released each of its references, ≈ 1k instructions per report (docs/refine.md).
            return try refine(r, scanner: s, context: tile.context, into: &out)
        }
        var context = tile.context
        context.reference.accessPoints.merge(extra.accessPoints) { own, _ in own }
        context.reference.cells.merge(extra.cells) { own, _ in own }
        context.reference.bleBeacons.merge(extra.bleBeacons) { own, _ in own }
        if let c = extra.cellCoverage, !c.isEmpty {
            context.reference.cellCoverage = CellCoverageMap(areas: (context.reference.cellCoverage?.areas ?? [:]).merging(c.areas) { own, _ in own })
        }
        return try refine(r, scanner: s, context: context, into: &out)
    }

    private func refine(_ r: ReportRecordParser.Report, scanner s: JSONLineScanner, context: PipelineContext,
                        into out: inout [UInt8]) throws -> Outcome {
        let frame = context.frame
        let reported = frame.en(latitude: r.latitude, longitude: r.longitude)
        // Reset before use, not after: a report that failed midway leaves nothing behind.
        if freshPipelinePerReport { pipeline = prototype.make() } else { pipeline.reset() }

        // Evidence → trace events through the trace-format decoder (one schema, one set of
        // rules; an event's `device` defaults to the reporting phone there). An event that
        // cannot be decoded is listed with its index and reason, never dropped silently.
        events.removeAll(keepingCapacity: true)
        rejected.removeAll(keepingCapacity: true)
        for i in r.evidence.indices {
            do {
                switch try r.event(i, decoder: &decoder, scanner: s) {
                case .event(let x): events.append(x)
                case .unknown(let type, _): rejected.append(Rejection(input: "evidence[\(i)]", reason: "unknown event type '\(type)'"))
                }
            } catch {
                // Evidence the record scan only delimited, and this event is not even valid JSON:
                // `parse` validates the record (malformed as a whole, or this is a rejection).
                if !r.evidenceChecked && !decoder.lastLineValid { throw ReportRecordParser.Failure.uncheckedEvidence }
                rejected.append(Rejection(input: "evidence[\(i)]", reason: error.message))
            }
        }
        var latest: Double?
        // By index, here and in `fuse`: `for e in events` copied each event (a memcpy of the
        // payload and a retain and release of its references: ≈ 150 instructions per event).
        for i in events.indices where latest == nil || events[i].time > latest! { latest = events[i].time }
        let reportTime = r.time ?? latest ?? 0
        // The reported position, as the phone's GNSS fix at the report time.
        events.append(TraceEvent(time: reportTime, payload: .gnss(GNSSFix(latitude: r.latitude, longitude: r.longitude,
                                                                           accuracy: r.accuracy))))
        // Time order, ties in evidence order (a stable sort).
        if !Self.isSorted(events) {
            events = events.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        }

        let fused = try Self.fuse(events, rejected: &rejected, context: context, pipeline: pipeline)
        let used = fused.used, objectFix = fused.object

        let best = fused.best ?? Fix(time: reportTime, position: reported, covariance: Covariance2(sigma: r.accuracy / 1.5096),
                                     source: .gnss)
        let g = frame.geodetic(east: best.position.x, north: best.position.y, up: 0)
        let status: Outcome.Status = used.count > 1 ? .refined : .reported

        // The Feature, keys in sorted order at every level (the order JSONSerialization's
        // `.sortedKeys` wrote before; the output is byte-identical to it).
        out.append(literal: "{\"geometry\":{\"coordinates\":[")
        out.append(number: g.longitude); out.append(UInt8(ascii: ",")); out.append(number: g.latitude)
        out.append(literal: "],\"type\":\"Point\"},\"properties\":{")
        Self.writeEllipse(best.covariance, into: &out)
        if let id = r.id { out.append(literal: ",\"id\":"); out.append(jsonString: id) }
        if let o = objectFix {
            let og = frame.geodetic(east: o.position.x, north: o.position.y, up: 0)
            out.append(literal: ",\"object\":{")
            Self.writeEllipse(o.covariance, into: &out)
            out.append(literal: ",\"lat\":"); out.append(number: og.latitude)
            out.append(literal: ",\"lon\":"); out.append(number: og.longitude)
            out.append(literal: ",\"note\":\"CamLoc: the photographed object's position (what the report is about)\",\"radius95_m\":")
            out.append(number: o.covariance.circularRadius(probability: 0.95))
            out.append(literal: ",\"subject\":"); out.append(jsonString: o.subject)
            out.append(UInt8(ascii: "}"))
        }
        out.append(literal: ",\"radius95_m\":"); out.append(number: best.covariance.circularRadius(probability: 0.95))
        out.append(literal: ",\"rejected\":[")
        for (k, x) in rejected.enumerated() {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            out.append(literal: "{\"input\":"); out.append(jsonString: x.input)
            out.append(literal: ",\"reason\":"); out.append(jsonString: x.reason)
            if let t = x.time { out.append(literal: ",\"t\":"); out.append(number: t) }
            out.append(UInt8(ascii: "}"))
        }
        out.append(literal: "],\"reported\":{\"accuracy_m\":"); out.append(number: r.accuracy)
        out.append(literal: ",\"lat\":"); out.append(number: r.latitude)
        out.append(literal: ",\"lon\":"); out.append(number: r.longitude)
        out.append(literal: "},\"shift_m\":"); out.append(number: ((best.position - reported) * (best.position - reported)).sum().squareRoot())
        out.append(literal: ",\"sources_used\":[")
        for (k, u) in used.enumerated() {
            if k > 0 { out.append(UInt8(ascii: ",")) }
            out.append(jsonString: u)
        }
        out.append(literal: "],\"status\":\"")
        out.append(literal: status == .refined ? "refined" : "reported")
        out.append(literal: "\",\"t\":"); out.append(number: reportTime)
        out.append(literal: "},\"type\":\"Feature\"}")
        return Outcome(status: status, error: nil)
    }

    /// What the fusion of one report's evidence gives: the filter's last estimate (nil when no
    /// evidence initialised it), the sources it used, and CamLoc's estimate of a photographed object.
    public struct Fused {
        public var best: Fix?
        public var used: [String]
        public var object: Fix?
    }

    /// Runs `events` (in time order) through `pipeline` (built from `reportOptions`, with its
    /// ekf), appending to `rejected` what was not used and why: the one fusion path of `refine`
    /// and of `serve`'s geolocate.
    public static func fuse(_ events: [TraceEvent], rejected: inout [Rejection], context: PipelineContext,
                            pipeline: Pipeline) throws -> Fused {
        var found: FusionStage?
        for s in pipeline.stages { if let f = s as? FusionStage, f.source == .ekf { found = f; break } }
        guard let fusion = found else {
            throw InputError(reason: "the ekf stage is disabled: refine needs it")
        }
        // The kinds of evidence present (one bit per payload kind: a `Set<String>` of type names
        // cost a hash and an insert per IMU sample).
        var evidenceKinds = EventKinds()
        for i in events.indices { evidenceKinds.formUnion(EventKinds(events[i].payload)) }
        // A stage whose own evidence (`ownInput`) the report does not carry is not called: it
        // would return nothing (camloc without a photo, tdoa without an arrival) or only the
        // "missing input" failures skipped below (peer without a range), and no other stage
        // reads what it keeps (a report without evidence: 3.6k + 0.9k instructions of camloc
        // and peer buffering its one fix, and their resets).
        var dormant: UInt64 = 0
        for (i, s) in pipeline.stageSources.enumerated() where i < 64 {
            if let s, let needs = Self.ownInput[s], evidenceKinds.isDisjoint(with: needs) { dormant |= 1 << UInt64(i) }
        }
        pipeline.dormant = dormant
        var lastFused: Fix?
        var objectFix: Fix?
        var producedBy = SourceMap<Int>()
        for i in events.indices {
            for result in pipeline.process(events[i], context: context) {
                switch result {
                case .fix(let f):       // one pattern, the conditions inside (see `FusionStage.process`)
                    if f.source == .ekf && f.subject == Fix.defaultSubject { lastFused = f }
                    else if Subject.isObject(f.subject) { objectFix = f }
                    else if !f.source.isFusion { producedBy[f.source, default: 0] += 1 }
                case .failure(let s, let t, _, let reason):
                    // "Missing input" of a stage whose own evidence type is absent is not news.
                    if case .missingInput = reason, let needs = Self.ownInput[s], evidenceKinds.isDisjoint(with: needs) { continue }
                    rejected.append(Rejection(input: s.rawValue, time: t, reason: reason.description))
                default: break
                }
            }
        }
        for r in pipeline.finish(context: context) { if case .fix(let f) = r, Subject.isObject(f.subject) { objectFix = f } }

        var used: [String] = [], gated: [String: Int] = [:], contained: Set<String> = []
        // Each list below is built only when it has something: sorting an empty dictionary or set
        // cost ≈ 200 instructions, three per report without evidence.
        for (s, c) in fusion.sourceCounters {                      // in declaration order
            // The filter's own source labels its magnetometer heading updates; a fix `combined` into a
            // scan's covariance intersection was used through it.
            if c.accepted > 0 || c.initializations > 0 || c.combined > 0 { used.append(s.isFusion ? "magnetometer-heading" : s.rawValue) }
            if c.gated > 0 { gated[s.rawValue] = c.gated }
            if c.superseded > 0 { contained.insert(s.rawValue) }
        }
        if !gated.isEmpty {
            for (s, n) in gated.sorted(by: { $0.key < $1.key }) {
                rejected.append(Rejection(input: s, reason: "\(n) fix(es) rejected by the χ² gate (inconsistent with the other evidence)"))
            }
        }
        if !contained.isEmpty {
            for s in contained.sorted() where !used.contains(s) && gated[s] == nil {
                let by = fusion.settings.superseding.filter { $0.value.contains(where: { $0.rawValue == s }) }.keys.map(\.rawValue).sorted()
                rejected.append(Rejection(input: s, reason: "contained in the \(by.joined(separator: "/")) fix of the same evidence (not fused twice)"))
            }
        }
        // `SourceMap` iterates in declaration order, which is `Source`'s `<` (the order of the sorted keys before).
        for (s, _) in producedBy where s != .gnss && !used.contains(s.rawValue) && gated[s.rawValue] == nil && !contained.contains(s.rawValue) {
            rejected.append(Rejection(input: s.rawValue, reason: "not fused (not an ekf input)"))
        }

        return Fused(best: lastFused, used: used, object: objectFix)
    }

    private static func isSorted(_ e: [TraceEvent]) -> Bool {
        var i = 1
        while i < e.count { if e[i].time < e[i - 1].time { return false }; i += 1 }
        return true
    }

    /// The evidence kind a stage works from, for stages that also see other sources' fixes
    /// (serve's geolocate leaves out the stages whose evidence it never builds).
    /// A map by case, not a dictionary: `fuse` looks every stage up per report (a hashed look-up
    /// cost ≈ 190 instructions, eleven per report).
    package static let ownInput: SourceMap<EventKinds> = {
        var m = SourceMap<EventKinds>()
        m[.peer] = .peerRange; m[.camloc] = .photo; m[.tdoa] = .acoustic
        return m
    }()

    /// √χ²₂(0.95): the 95 % ellipse's semi-axes in units of the covariance's principal σ.
    static let k95 = ChiSquare.quantile(0.95, dof: 2).squareRoot()

    /// The 95 % ellipse (semi-axes m, orientation of the major axis in deg clockwise from north,
    /// in [0, 180)) as the member `"ellipse95":{…}`. (The 95 % radius is
    /// `Covariance2.circularRadius(probability: 0.95)`.)
    static func writeEllipse(_ c: Covariance2, into out: inout [UInt8]) {
        let ax = c.principalAxes
        var deg = Angle.degrees(ax.azimuth).truncatingRemainder(dividingBy: 180)
        if deg < 0 { deg += 180 }
        out.append(literal: "\"ellipse95\":{\"orientation_deg\":"); out.append(number: deg)
        let major = k95 * ax.major, minor = k95 * ax.minor
        out.append(literal: ",\"semi_major_m\":")
        let from = out.count
        out.append(number: major)
        let to = out.count
        out.append(literal: ",\"semi_minor_m\":")
        if minor.bitPattern == major.bitPattern {
            // A circular region (every report whose only evidence is its own position): the same
            // double, so the same text; copied instead of formatted again (≈ 600 instructions).
            // (Byte by byte: appending `out[from..<to]` would copy the whole buffer, the slice
            // holding a second reference to it.)
            for i in from..<to { out.append(out[i]) }
        } else {
            out.append(number: minor)
        }
        out.append(UInt8(ascii: "}"))
    }
}

/// Appending JSON text to a byte buffer (the refine writer): no intermediate dictionaries.
/// Numbers and strings follow the trace writer's rules (`num`: shortest round-trip decimal,
/// integers without a fraction, non-finite → `null`; `jsonEscaped`: RFC 8259 §7), one place each.
extension Array where Element == UInt8 {
    @inline(__always) public mutating func append(literal s: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }
    @inline(__always) public mutating func append(number v: Double) {
        if !v.isFinite { append(literal: "null"); return }
        if v == v.rounded(), abs(v) < 1e15 { appendInteger(Int64(v)); return }
        if appendShortDecimal(v) { return }
        // `v.description`'s digits without its String: `Double.write(to:)` formats into a stack
        // buffer (the same shortest round-trip routine `description` calls) and hands the ASCII
        // bytes to the stream's `_writeASCII`, no String allocated (`NumberFormattingTests`
        // compares both on 200,000 values).
        Swift.withUnsafeMutablePointer(to: &self) { p in
            var stream = ByteAppender(target: p)
            v.write(to: &stream)
        }
    }
    /// Appends `v.description` when `v` is not an integer (`append(number:)` writes those), its
    /// shortest round-trip decimal has at most 15 significant digits and 10⁻³ ≤ |v| < 10¹⁵, and returns true;
    /// else appends nothing and returns false (the caller formats `v` with Swift's routine).
    /// Most numbers a report echoes (its `lat`, `lon`, `accuracy_m` as the phone wrote them) are
    /// such decimals; computed values (17 digits, mostly) fail the test after one multiply and
    /// one divide.
    ///
    /// Why the digits are exactly `description`'s. Let e = ⌊log₁₀|v|⌋ and k = 14 − e, so
    /// 0 ≤ k ≤ 17 and x = |v|·10ᵏ lies in [10¹⁴, 10¹⁵). Write I for the interval of reals that round
    /// to |v| (round to nearest, ties to even). Its half-width is at most ulp(|v|)/2 ≤ |v|·2⁻⁵³,
    /// i.e. ≤ x·2⁻⁵³ < 0.112 in units of 10⁻ᵏ: I holds at most one 15-digit decimal M·10⁻ᵏ, and
    /// such an M is the integer nearest to x, within 0.112 of it.
    /// - 10ᵏ (k ≤ 22) is a double exactly, so the computed x̃ = fl(|v|·10ᵏ) is within half an ulp
    ///   of x (≤ 2⁻⁴, x < 2⁵⁰): the nearest integer to x̃ is that M when one exists.
    /// - The test `Double(M) / 10ᵏ == |v|` is exact (M < 2⁵³ and 10ᵏ exact: IEEE division rounds
    ///   the true quotient once, which is what a correct decimal reader gives for "M e−k"); so
    ///   it holds iff the decimal M·10⁻ᵏ reads back as v. No tie can decide it: for k ≥ 0, M·10⁻ᵏ
    ///   is either not dyadic or (5ᵏ | M) a dyadic with fewer than 53 significant bits, never a
    ///   midpoint between two doubles, so how a routine treats the ends of I does not matter.
    /// - If the shortest round-trip decimal of v has n ≤ 15 digits, it padded with zeros to 15
    ///   digits lies in I, hence is M·10⁻ᵏ; M without its trailing zeros is that decimal (any
    ///   shorter one would also pad to M). It is unique among decimals of its length (I holds one
    ///   15-digit decimal), so "shortest, then closest" — Swift's rule — picks it. If the shortest
    ///   has 16 or 17 digits, no 15-digit decimal lies in I and the test fails.
    /// e is estimated from the binary exponent (⌊e₂·log₁₀2⌋ is e or e − 1) and corrected by one
    /// comparison; a rounded x̃ outside [10¹⁴, 10¹⁵) falls back. `description` writes such values
    /// plainly (no exponent: it switches to one below 10⁻⁴ and above 2⁵³): the integer digits
    /// ("0" when none), ".", the fraction digits. `NumberFormattingTests` compares the bytes with
    /// `description` on millions of seeded short decimals, random doubles and edge values.
    @inline(__always) package mutating func appendShortDecimal(_ v: Double) -> Bool {
        let a = v.magnitude
        guard a >= 1e-3, a < 1e15, a != a.rounded() else { return false }
        var k = 14 - ((Int(a.exponent) &* 78_913) >> 18)      // 14 − ⌊e₂·log₁₀2⌋ (exact for |e₂| < 1,000)
        var x = a * shortDecimalPowers[k]
        if x >= 1e15 { k -= 1; x = a * shortDecimalPowers[k] }
        let r = x.rounded()
        guard r >= 1e14, r < 1e15, r / shortDecimalPowers[k] == a else { return false }
        var m = UInt64(r)
        while m % 10 == 0 { m /= 10; k -= 1 }                 // k ≥ 1 stays: v is not an integer
        var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)   // ≤ 20 bytes: "-0." and 17 digits
        Swift.withUnsafeMutableBytes(of: &buffer) { b in
            var i = 32
            for _ in 0..<k { i -= 1; b[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: m % 10); m /= 10 }
            i -= 1; b[i] = UInt8(ascii: ".")
            if m == 0 { i -= 1; b[i] = UInt8(ascii: "0") }
            while m > 0 { i -= 1; b[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: m % 10); m /= 10 }
            if v < 0 { i -= 1; b[i] = UInt8(ascii: "-") }
            append(contentsOf: UnsafeRawBufferPointer(rebasing: b[i...]))
        }
        return true
    }
    public mutating func appendInteger(_ v: Int64) {
        if v == 0 { append(UInt8(ascii: "0")); return }
        var m = v.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)       // up to 24 ASCII digits, filled from the end
        var n = 0
        Swift.withUnsafeMutableBytes(of: &digits) { d in
            while m > 0 { n += 1; d[24 - n] = UInt8(ascii: "0") + UInt8(m % 10); m /= 10 }
            if v < 0 { append(UInt8(ascii: "-")) }
            append(contentsOf: UnsafeRawBufferPointer(rebasing: d[(24 - n)...]))
        }
    }
    mutating func append(jsonString s: String) {
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            append(UInt8(ascii: "\"")); append(contentsOf: s.utf8); append(UInt8(ascii: "\""))
        } else {
            append(contentsOf: jsonEscaped(s).utf8)
        }
    }
}

/// 10⁰ … 10¹⁸, each a double exactly (5¹⁸ < 2⁵³), for `appendShortDecimal`.
private let shortDecimalPowers: [Double] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18]

/// A `TextOutputStream` appending to a byte array in place (`append(number:)`'s `Double.write(to:)`).
private struct ByteAppender: TextOutputStream {
    let target: UnsafeMutablePointer<[UInt8]>
    mutating func write(_ string: String) { target.pointee.append(contentsOf: string.utf8) }
    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) { target.pointee.append(contentsOf: buffer) }
}
