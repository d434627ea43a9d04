#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One report record (docs/refine.md, "Input") read from its JSON bytes with the trace scanner
/// (`JSONLineScanner`): the reported position, accuracy, time, id, and the byte ranges of its
/// `evidence` events, which the trace decoder reads in place. No Foundation JSON, and no
/// allocation per record beyond the id string: the field lists are reused across records.
///
/// Rules (the same answers `JSONSerialization` gave before, checked byte for byte by
/// `RefineGoldenTests`): a repeated key counts once, the last one wins; a GeoJSON Feature takes
/// `lat`/`lon` from its Point geometry `[lon, lat, …]` and everything else from `properties`
/// (a `properties` that is not an object counts as empty; the Feature's own `id` when
/// `properties` has none); `accuracy` is read when `accuracy_m` is absent; `t` counts only when it
/// is a number; text outside the `evidence` array must be valid UTF-8.
package struct ReportRecordParser {
    /// A report, its evidence still as byte ranges of the record.
    package struct Report {
        package var id: String?
        package var latitude: Double, longitude: Double, accuracy: Double
        package var time: Double?
        /// Byte ranges (in the record) of the `evidence` events; all are objects.
        package var evidence: UnsafeBufferPointer<JField>
        /// false: the record scan only delimited the events (`parse(…deferEvidence: true…)`); a
        /// body whose decoder refuses one must throw `Failure.uncheckedEvidence`.
        package var evidenceChecked = true
        /// The members of each event, read by the record scan (`parse(…deferEvidence: true…)`):
        /// event `i`'s are `members[memberBounds[i].start..<memberBounds[i].end]`; empty when the
        /// record was read another way.
        package var members = UnsafeBufferPointer<JField>(start: nil, count: 0)
        package var memberBounds = UnsafeBufferPointer<(start: Int, end: Int)>(start: nil, count: 0)
        package var membersRead = false

        /// Evidence event `i` decoded by `decoder`: from the members the record scan read when it
        /// read them, else by scanning the event's bytes (the same result either way:
        /// `TraceLineDecoder.event(members:record:count:span:)`).
        @inline(__always)
        package func event(_ i: Int, decoder: inout TraceLineDecoder, scanner s: JSONLineScanner) throws(LineIssue) -> DecodedLine {
            let e = evidence[i]
            if membersRead {
                let b = memberBounds[i]
                return try decoder.event(members: UnsafeBufferPointer(rebasing: members[b.start..<b.end]), record: s.p, count: s.count, span: e)
            }
            return try decoder.event(s.p + e.start, count: e.end - e.start)
        }
    }

    package enum Failure: Error {
        /// Not a JSON object (reason from the scanner), counted as malformed (no id).
        case malformed(String)
        /// A JSON object that is not a valid report.
        case invalid(id: String?, reason: String)
        /// Thrown by a body: an event of unchecked evidence did not decode (`parse` then decides
        /// whether the record is malformed, or runs the body again with the evidence checked).
        case uncheckedEvidence
    }

    private var top: [JField] = []
    private var properties: [JField] = []
    private var geometry: [JField] = []
    private var coordinates: [JField] = []
    private var elements: [JField] = []
    private var members: [JField] = []
    private var memberBounds: [(start: Int, end: Int)] = []
    private var readStarts: [JSONLineScanner.ReadArray] = []
    /// The id an error record of the record being parsed carries (its `id`, else its
    /// properties' `id`), for errors raised after parsing.
    package private(set) var errorID: String?

    package init() {
        top.reserveCapacity(16); properties.reserveCapacity(16); geometry.reserveCapacity(4)
        coordinates.reserveCapacity(4); elements.reserveCapacity(4096)
        members.reserveCapacity(8192); memberBounds.reserveCapacity(4096); readStarts.reserveCapacity(2)
    }

    /// How the record scan treats a plain report's `evidence` array.
    private enum Mode {
        /// Validated like any value; its events are delimited afterwards.
        case validate
        /// Delimited only (`parse(…deferEvidence: true…)`, the fallback of `read`).
        case deferring
        /// Validated, and each event's members read, in the record scan
        /// (`JSONLineScanner.line(into:reading:…objects:elementDepth:)`): the decoder decodes them
        /// without scanning the event's bytes again.
        case read
    }

    /// The scan of `Mode.read` failed: the record is read again in `Mode.deferring`.
    private struct ReadScanFailed: Error {}

    /// Parses the record `p[0..<count]` (`p[count]` readable) and calls `body` with it; the
    /// evidence ranges are valid during the call.
    ///
    /// `deferEvidence`: the record scan delimits a plain report's `evidence` array instead of
    /// validating it, since the body's trace decoder validates each event anyway (the events were
    /// scanned twice: a third of `refine`'s time on reports with evidence). The result is the same
    /// as without: the body sees `evidenceChecked == false` and throws `Failure.uncheckedEvidence`
    /// when an event does not decode; on that, or on any other error while the evidence is
    /// unchecked, the whole record is validated as before. Invalid JSON gives the error it always
    /// gave; valid JSON runs the body again with the evidence checked (an event the decoder refuses
    /// is then a rejection, as before). A body may therefore run twice: it must not write before
    /// its last throwing step.
    ///
    /// Before that, `deferEvidence` first tries one validating scan that also reads every event's
    /// members (`Mode.read`, issue 22: the events' bytes were delimited by the record scan and then
    /// scanned again by the decoder). It gives the body the same report, and the decoder gives the
    /// same events and errors (`Report.event`); when that scan throws (the record is not valid
    /// JSON, or an event is nested deeper than a trace line may be), the record is read as above.
    package mutating func parse<R>(_ p: UnsafePointer<UInt8>, count: Int, deferEvidence: Bool = false,
                                   _ body: (Report, JSONLineScanner) throws -> R) throws -> R {
        guard deferEvidence else { return try parse(p, count: count, mode: .validate, body) }
        if readsEvidenceMembers {
            do {
                return try parse(p, count: count, mode: .read, body)
            } catch is ReadScanFailed {}
        }
        do {
            return try parse(p, count: count, mode: .deferring, body)
        } catch {
            guard evidenceUnchecked else { throw error }
            if let f = check(p, count: count) { throw f }
            if case Failure.uncheckedEvidence = error { return try parse(p, count: count, mode: .validate, body) }
            throw error
        }
    }

    /// Whether `parse(…deferEvidence: true…)` first tries `Mode.read` (false: only delimits, as
    /// before session 22; the benchmark's A/B and the tests' comparison of the two).
    package var readsEvidenceMembers = true

    /// The record scan delimited `evidence` without validating it and nothing has validated it since.
    private var evidenceUnchecked = false
    private var scratch: [JField] = []

    /// Validates the whole record as the record scan does without deferring: nil when valid, else
    /// the failure that scan throws.
    private mutating func check(_ p: UnsafePointer<UInt8>, count: Int) -> Failure? {
        var s = JSONLineScanner(p: p, count: count)
        s.maxDepth = 512
        scratch.removeAll(keepingCapacity: true)
        do throws(LineIssue) { try s.line(into: &scratch) } catch { return Self.scanFailure(s, p, count, error) }
        evidenceUnchecked = false
        return nil
    }

    /// What a record whose scan failed is: valid JSON that is not an object goes on as an invalid
    /// report (the refiner says what a report must be); anything else is malformed.
    private static func scanFailure(_ s: JSONLineScanner, _ p: UnsafePointer<UInt8>, _ count: Int, _ error: LineIssue) -> Failure {
        if s.isSingleValue(), validUTF8(p, 0, count) { return .invalid(id: nil, reason: "a report must be a JSON object") }
        return .malformed(error.message)
    }

    private mutating func parse<R>(_ p: UnsafePointer<UInt8>, count: Int, mode: Mode,
                                   _ body: (Report, JSONLineScanner) throws -> R) throws -> R {
        let deferring = mode == .deferring
        var s = JSONLineScanner(p: p, count: count)
        s.maxDepth = 512                         // as deep as Foundation's parser went (the reader before 0.x)
        top.removeAll(keepingCapacity: true)
        errorID = nil
        evidenceUnchecked = false
        var deferred = 0
        // A deferred `evidence` array of objects is delimited into `elements` by the record scan
        // itself (one pass over the evidence's bytes, not two).
        elements.removeAll(keepingCapacity: true)
        if mode == .read {
            members.removeAll(keepingCapacity: true); memberBounds.removeAll(keepingCapacity: true); readStarts.removeAll(keepingCapacity: true)
        }
        do throws(LineIssue) {
            switch mode {
            case .deferring: deferred = try s.line(into: &top, deferring: "evidence", elements: &elements)
            case .validate: try s.line(into: &top)
            case .read:
                try s.line(into: &top, reading: "evidence", elements: &members, bounds: &memberBounds, readStarts: &readStarts,
                           objects: &elements, elementDepth: JSONLineScanner.traceLineDepth)
            }
        } catch {
            if mode == .read { throw ReadScanFailed() }
            // A scan that skipped validating an array may stop elsewhere than one that did: the
            // error is the validating scan's (`parse(…deferEvidence:…)`).
            if deferring { evidenceUnchecked = true; throw Failure.uncheckedEvidence }
            throw Self.scanFailure(s, p, count, error)
        }
        evidenceUnchecked = deferred > 0
        func key(_ f: JField, _ k: StaticString) -> Bool {
            f.keyLength == k.utf8CodeUnitCount && memcmp(s.p + f.keyStart, k.utf8Start, f.keyLength) == 0
        }
        func last(_ fields: [JField], _ k: StaticString) -> JField? { fields.last { key($0, k) } }
        func isString(_ f: JField?, _ value: StaticString) -> Bool {
            guard let f, f.kind == .string else { return false }
            if !f.escaped { return f.end - f.start == value.utf8CodeUnitCount && memcmp(s.p + f.start, value.utf8Start, f.end - f.start) == 0 }
            return (try? s.string(start: f.start, end: f.end, escaped: true)) == value.description
        }
        // The `evidence` array is not JSON a report parser must decode (it goes to the trace
        // decoder): everything else must be valid UTF-8, as a JSON parser requires.
        var fields = top
        var feature = false
        properties.removeAll(keepingCapacity: true)
        let props = last(top, "properties")
        if isString(last(top, "type"), "Feature") {
            feature = true
            if let pf = props, pf.kind == .object { _ = try? s.object(at: pf.start, into: &properties) }
            fields = properties
        }
        let evidenceField = last(fields, "evidence")
        // Deferred only when the body decodes it: one top-level `evidence` array, the report's own.
        if evidenceUnchecked && (deferred > 1 || feature || evidenceField?.kind != .array), let f = check(p, count: count) { throw f }
        let utf8OK: Bool
        if let e = evidenceField, e.kind == .array {
            utf8OK = Self.validUTF8(p, 0, e.start) && Self.validUTF8(p, e.end, count)
        } else {
            utf8OK = Self.validUTF8(p, 0, count)
        }
        guard utf8OK else { throw Failure.malformed(LineIssue.json("not parseable").message) }

        // The id an error record carries: the record's own `id`, else its properties' `id`.
        var idField = last(top, "id")
        if idField == nil, !feature, let pf = props, pf.kind == .object {
            var nested: [JField] = []
            _ = try? s.object(at: pf.start, into: &nested)
            idField = last(nested, "id")
        } else if idField == nil, feature {
            idField = last(properties, "id")
        }
        let errorID = idField.map { Self.idText($0, s) }
        self.errorID = errorID

        var latField: JField?, lonField: JField?
        if feature {
            geometry.removeAll(keepingCapacity: true); coordinates.removeAll(keepingCapacity: true)
            var point = false
            if let g = last(top, "geometry"), g.kind == .object, (try? s.object(at: g.start, into: &geometry)) != nil,
               isString(last(geometry, "type"), "Point"), let c = last(geometry, "coordinates"), c.kind == .array,
               (try? s.arrayElements(start: c.start, end: c.end, into: &coordinates)) != nil, coordinates.count >= 2 {
                point = true
                lonField = coordinates[0]; latField = coordinates[1]
            }
            guard point else { throw Failure.invalid(id: errorID, reason: "a Feature needs a Point geometry with [lon, lat]") }
        } else {
            latField = last(fields, "lat"); lonField = last(fields, "lon")
        }
        func number(_ f: JField?) -> Double? { f.flatMap { $0.kind == .number ? $0.number : nil } }
        guard let lat = number(latField), (-90...90).contains(lat) else { throw Failure.invalid(id: errorID, reason: "missing or invalid 'lat' (deg, −90…90)") }
        guard let lon = number(lonField), (-180...180).contains(lon) else { throw Failure.invalid(id: errorID, reason: "missing or invalid 'lon' (deg, −180…180)") }
        guard let acc = number(last(fields, "accuracy_m") ?? last(fields, "accuracy")), acc > 0, acc <= TraceDomain.accuracy.upperBound else {
            throw Failure.invalid(id: errorID, reason: "missing or invalid 'accuracy_m' (m, > 0, ≤ 2e7)")
        }
        // The record scan's own element list holds the elements of the one deferred array when they
        // are all objects; it is this record's evidence exactly when that array is `evidenceField`
        // (one deferred array, not a Feature: otherwise `check` above validated the record).
        // In `Mode.read`, the read elements (all of the record's top-level `evidence` arrays of
        // objects) are this record's evidence exactly when there is one and it is `evidenceField`.
        let read = mode == .read && !feature && readStarts.count == 1 && evidenceField?.kind == .array
            && readStarts[0].start == evidenceField!.start
        let delimited = read || deferred == 1 && !feature && !elements.isEmpty && evidenceField?.kind == .array
            && elements.first!.start > evidenceField!.start && elements.last!.end < evidenceField!.end
        if !delimited { elements.removeAll(keepingCapacity: true) }
        if let e = evidenceField {
            guard e.kind == .array else { throw Failure.invalid(id: errorID, reason: "'evidence' must be an array of trace events") }
            // `line` validated every byte of the record (the Feature's properties included).
            // (unchecked: `parse(…deferEvidence:…)` validates the record when this throws.)
            if !delimited {
                do throws(LineIssue) { try s.validatedArrayElements(start: e.start, end: e.end, into: &elements) } catch { throw Failure.malformed(error.message) }
            }
            if let i = elements.firstIndex(where: { $0.kind != .object }) { throw Failure.invalid(id: errorID, reason: "evidence[\(i)] is not an object") }
        }
        let id = (feature ? (last(properties, "id") ?? last(top, "id")) : last(top, "id")).map { Self.idText($0, s) }
        // The report time shares the trace format's domain (`TraceDomain.time`): a report at
        // t = 1e300 is an error record, not a fix 1,000 km off with a null radius.
        let time = number(last(fields, "t"))
        if let t = time, let m = TraceDomain.violation("'t'", t, TraceDomain.time, "s") { throw Failure.invalid(id: errorID, reason: m) }
        let report = Report(id: id, latitude: lat, longitude: lon, accuracy: acc, time: time,
                            evidence: UnsafeBufferPointer(start: nil, count: 0))
        let checked = !evidenceUnchecked
        return try elements.withUnsafeBufferPointer { ev in
            var r = report
            r.evidence = ev
            r.evidenceChecked = checked
            guard read else { return try body(r, s) }
            return try members.withUnsafeBufferPointer { m in
                try memberBounds.withUnsafeBufferPointer { b in
                    r.members = m; r.memberBounds = b; r.membersRead = true
                    return try body(r, s)
                }
            }
        }
    }

    /// An `id` as text, as the JSONSerialization-based reader printed it: a string as is, a number
    /// as Swift prints it (an integer literal without a fraction), 1/0 for true/false, `<null>`;
    /// an object or array as its JSON text (before: Swift's description of the dictionary).
    static func idText(_ f: JField, _ s: JSONLineScanner) -> String {
        switch f.kind {
        case .string: return (try? s.string(start: f.start, end: f.end, escaped: f.escaped)) ?? ""
        case .number:
            let text = UnsafeBufferPointer(start: s.p + f.start, count: f.end - f.start)
            if !text.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }), let i = Int(String(decoding: text, as: UTF8.self)) {
                return String(i)
            }
            return "\(f.number)"
        case .bool: return f.number != 0 ? "1" : "0"             // as Foundation's NSNumber printed it
        case .null: return "<null>"
        case .object, .array: return String(decoding: UnsafeBufferPointer(start: s.p + f.start, count: f.end - f.start), as: UTF8.self)
        }
    }

    /// Whether `p[from..<to]` is valid UTF-8 (the one rule: `InputFile.firstInvalidUTF8`).
    package static func validUTF8(_ p: UnsafePointer<UInt8>, _ from: Int, _ to: Int) -> Bool {
        InputFile.firstInvalidUTF8(p, from: from, to: to) == nil
    }
}
