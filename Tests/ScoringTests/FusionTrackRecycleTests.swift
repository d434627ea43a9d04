import Testing
import Foundation
@testable import Replay
@testable import Positioning

/// `FusionStage.reset()` keeps an ekf's tracks and the next trace's phones reuse them
/// (`FusionTrack.recycle`, `ExtendedKalmanFilter.restart`). A reused track must be a new one in
/// every stored property, the private ones included: this compares them by reflection
/// (`Mirror`, which lists every stored property of a class or struct) with the tracks of a
/// pipeline that never ran anything, after each event of a trace that made a track and after
/// its 200th, when the
/// pipeline before ran other bundled traces (IMU and PDR, WiFi, cells and TA, peers, photos,
/// several phones) and was reset. The byte-level checks of the same are `RefineResetTests` and
/// `PipelinePrototypeTests.resetPipelinesEqualBuiltOnes` (whole traces and reports).
@Suite struct FusionTrackRecycleTests {
    /// Every stored property, recursively, as text. A `SourceMap` is written as its entries (a
    /// reused map keeps its slot storage, all nil, where a new one has none yet: the same map);
    /// a dictionary's entries sorted (Swift seeds each dictionary storage's hashing on its own,
    /// so two new tracks' dictionaries can list the same entries in different orders; the track
    /// only looks its one dictionary up); SIMD vectors by their lanes.
    static func state(_ x: Any, depth: Int = 0) -> String {
        let m = Mirror(reflecting: x)
        let type = String(describing: m.subjectType)
        if depth > 12 { return "<deep \(type)>" }
        if type.hasPrefix("SourceMap<") {
            let entries = (x as? any Sequence).map { s in s.map { state($0, depth: depth + 1) } } ?? []
            return "\(type)[\(entries.joined(separator: ", "))]"
        }
        if type.hasPrefix("SIMD") { return "\(type)(\(String(describing: x)))" }
        if m.displayStyle == .dictionary {
            return "\(type)[\(m.children.map { state($0.value, depth: depth + 1) }.sorted().joined(separator: ", "))]"
        }
        if m.children.isEmpty {
            if m.displayStyle == .optional { return "nil" }
            return "\(type)(\(String(describing: x)))"
        }
        var parts: [String] = []
        var mirror: Mirror? = m
        while let mm = mirror {             // a class's superclass properties too
            for c in mm.children { parts.append("\(c.label ?? "_"): \(state(c.value, depth: depth + 1))") }
            mirror = mm.superclassMirror
        }
        return "\(type){\(parts.joined(separator: "; "))}"
    }

    static func ekf(_ p: Pipeline) -> FusionStage {
        p.stages.compactMap { $0 as? FusionStage }.first { $0.source == .ekf }!
    }

    static func tracks(_ p: Pipeline) -> [String: String] {
        ekf(p).tracks.mapValues { state($0) }
    }

    /// The bundled traces, read once for every case (their first 2,000 events).
    static let traces: [String: (header: TraceHeader, reference: ReferenceData, events: [TraceEvent])] = {
        var out: [String: (header: TraceHeader, reference: ReferenceData, events: [TraceEvent])] = [:]
        for name in PipelinePrototypeTests.bundled {
            if let t = try? PipelinePrototypeTests.load(name) { out[name] = (t.header, t.reference, Array(t.events.prefix(2_000))) }
        }
        return out
    }()

    @Test(arguments: PipelinePrototypeTests.bundled)
    func reusedTracksEqualNewOnes(trace: String) throws {
        guard let t = Self.traces[trace] else { return }
        // The default pipeline (its ekf; the ukf and pf do not reuse tracks).
        let prototype = try StageRegistry.prototype(options: [:])
        let used = prototype.make()
        // Every other bundled trace (its first 2,000 events: steps, headings, scans, gated fixes,
        // several phones), then reset: state in every track property.
        for other in PipelinePrototypeTests.bundled where other != trace {
            guard let o = Self.traces[other] else { continue }
            let context = PipelineContext(header: o.header, reference: o.reference)
            for e in o.events { _ = used.process(e, context: context) }
            _ = used.finish(context: context)
            used.reset()
        }
        #expect(!Self.ekf(used).spare.isEmpty, "no track kept for reuse")
        let fresh = prototype.make()
        let context = PipelineContext(header: t.header, reference: t.reference)
        var compared = 0
        let events = t.events.prefix(200)
        for (i, e) in events.enumerated() {
            let phones = Self.ekf(fresh).tracks.count
            _ = used.process(e, context: context)
            _ = fresh.process(e, context: context)
            // Compared when the event made a track (its state right after `track` and the event's
            // own update), and after the last event.
            guard Self.ekf(fresh).tracks.count > phones || i == events.count - 1 else { continue }
            let a = Self.tracks(used), b = Self.tracks(fresh)
            #expect(a.keys.sorted() == b.keys.sorted())
            for (device, s) in b where a[device] != s {
                Issue.record("\(trace), t = \(e.time): the reused track of \(device) differs from a new one:\n\(a[device] ?? "none")\n\(s)")
                return
            }
            compared += b.count
        }
        #expect(compared > 0)
    }
}
