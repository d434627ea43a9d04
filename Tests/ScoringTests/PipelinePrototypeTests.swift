import Testing
import Foundation
@testable import Replay
import Positioning

/// `PipelinePrototype` (the configuration parsed once; `make()` per trace, report or request)
/// gives the same results as a pipeline built from the options, and a pipeline made after
/// another one ran carries none of its state.
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
