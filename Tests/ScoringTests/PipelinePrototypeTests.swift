import Testing
import Foundation
@testable import Replay
import Positioning

/// `PipelinePrototype` (the configuration parsed once; `make()` per trace, report or request)
/// gives the same results as a pipeline built from the options, a pipeline made after
/// another one ran carries none of its state, and `reset()` clears a used pipeline's state
/// exactly (what `refine` does between reports).
@Suite struct PipelinePrototypeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every stage of the registry, the opt-in ones too.
    static let allStages = ["ukf", "pf", "smoother"].reduce(into: [String: StageOptions]()) {
        $0[$1] = StageOptions(name: $1, values: ["enabled": .bool(true)])
    }

    /// Each result as text with every number at full precision (`Double.description` round-trips).
    static func text(_ results: [StageResult]) -> [String] {
        results.map { r in
            switch r {
            case .fix(let f):
                return "fix \(f.source.rawValue) \(f.subject) \(f.time) \(f.position.x) \(f.position.y) \(f.covariance.ee) \(f.covariance.en) \(f.covariance.nn)"
            case .failure(let s, let t, let subject, let reason): return "failure \(s.rawValue) \(t) \(subject) \(reason)"
            case .measurement(let m, let subject): return "measurement \(type(of: m)) \(subject)"
            }
        }
    }

    static func run(_ pipeline: Pipeline, header: TraceHeader, reference: ReferenceData, events: [TraceEvent]) -> [String] {
        let context = PipelineContext(header: header, reference: reference)
        var out: [String] = []
        for e in events { out += text(pipeline.process(e, context: context)) }
        out += text(pipeline.finish(context: context))
        return out
    }

    /// Bundled traces that exercise every stage (WiFi + IMU, acoustic TDoA, photos, peers, cells):
    /// the second pipeline of one prototype, made after the first ran the whole trace, gives
    /// exactly the results of a pipeline built from the options.
    @Test(arguments: ["mall-sparse-ap", "office-acoustic", "photo-landmark", "crowd-peers", "rural-cell"])
    func freshPipelinesEqualBuiltOnes(trace: String) throws {
        let folder = Self.root.appendingPathComponent("Traces/\(trace)")
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("trace.jsonl").path) else { return }
        let reader = try TraceReader(url: folder.appendingPathComponent("trace.jsonl"))
        var events: [TraceEvent] = []
        while let e = try reader.next() { events.append(e) }
        events = Array(events.prefix(20_000))
        let header = reader.header
        let reference = try ReferenceLoader.load(folder: folder, frame: header.frame)

        let want = Self.run(try StageRegistry.pipeline(options: Self.allStages), header: header, reference: reference, events: events)
        let prototype = try StageRegistry.prototype(options: Self.allStages)
        let first = Self.run(prototype.make(), header: header, reference: reference, events: events)
        let second = Self.run(prototype.make(), header: header, reference: reference, events: events)
        #expect(!want.isEmpty)
        #expect(first == want, "\(trace): the first fresh pipeline differs")
        #expect(second == want, "\(trace): a pipeline made after another ran differs (state leaked)")
    }

    static let bundled = ["mall-sparse-ap", "office-acoustic", "photo-landmark", "crowd-peers", "rural-cell"]

    static func load(_ trace: String) throws -> (header: TraceHeader, reference: ReferenceData, events: [TraceEvent])? {
        let folder = Self.root.appendingPathComponent("Traces/\(trace)")
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent("trace.jsonl").path) else { return nil }
        let reader = try TraceReader(url: folder.appendingPathComponent("trace.jsonl"))
        var events: [TraceEvent] = []
        while let e = try reader.next() { events.append(e) }
        return (reader.header, try ReferenceLoader.load(folder: folder, frame: reader.header.frame), Array(events.prefix(20_000)))
    }

    /// One pipeline (every stage, the opt-in ones too) runs the bundled trace before `trace`
    /// (in `bundled`, cyclically) to its end, is reset, runs `trace`, then the trace after it
    /// cut off at a third (a trace stopped midway), is reset and runs `trace` again: both runs
    /// give exactly what a pipeline built from the options gives. The other traces leave state
    /// in every stage (filters per phone, PDR trackers, sample/range/ring/arrival buffers, the
    /// cell lookups and HAPEL's map radios of another reference).
    @Test(arguments: bundled)
    func resetPipelinesEqualBuiltOnes(trace: String) throws {
        guard let t = try Self.load(trace) else { return }
        let want = Self.run(try StageRegistry.pipeline(options: Self.allStages), header: t.header, reference: t.reference, events: t.events)
        #expect(!want.isEmpty)
        let pipeline = try StageRegistry.prototype(options: Self.allStages).make()
        let i = Self.bundled.firstIndex(of: trace)!, n = Self.bundled.count
        for (other, third) in [(Self.bundled[(i + n - 1) % n], false), (Self.bundled[(i + 1) % n], true)] {
            guard let o = try Self.load(other) else { continue }
            let cut = third ? o.events.count / 3 : o.events.count
            let context = PipelineContext(header: o.header, reference: o.reference)
            for e in o.events.prefix(cut) { _ = pipeline.process(e, context: context) }
            if !third { _ = pipeline.finish(context: context) }
            pipeline.reset()
            #expect(Self.run(pipeline, header: t.header, reference: t.reference, events: t.events) == want,
                    "\(trace) after \(other) (\(cut) events) and reset() differs (state left behind)")
        }
    }

    /// `fresh()` gives a new object of the same type for every stage (no instance is shared
    /// between two reports or two concurrent requests), in the same order.
    @Test func freshStagesAreNewObjects() throws {
        let prototype = try StageRegistry.prototype(options: Self.allStages)
        let a = prototype.make().stages, b = prototype.make().stages
        #expect(a.count == StageRegistry.entries.count && a.count == b.count)
        for (x, y) in zip(a, b) {
            #expect(x !== y)
            #expect(type(of: x) == type(of: y))
            #expect(x.sources == y.sources)
        }
        #expect(prototype.sources == (try StageRegistry.pipeline(options: Self.allStages)).sources)
    }
}
