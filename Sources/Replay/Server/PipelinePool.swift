import Foundation
import Positioning

/// Pipelines of one prototype kept between geolocate requests: a request takes one (or a new
/// one from the prototype when none is free), and gives it back `reset()` (every stage's
/// per-trace state cleared, so it goes on exactly as `PipelinePrototype.make()`'s would:
/// `RefineResetTests` for refine, `GeolocatePipelineTests` for geolocate's answers). Building
/// and freeing a pipeline per request cost about 16k instructions (callgrind, docs/serve.md);
/// reset costs a few hundred. At most `keep` pipelines wait here (about one per request in
/// flight at once; more are made when needed and freed when given back).
public final class PipelinePool: @unchecked Sendable {
    public let prototype: PipelinePrototype
    public let keep: Int
    private let lock = NSLock()
    private var free: [Pipeline] = []

    public init(_ prototype: PipelinePrototype, keep: Int = 64) {
        self.prototype = prototype; self.keep = keep
    }

    /// A pipeline with no state from any request: a kept one, or a new one.
    public func take() -> Pipeline {
        lock.withLock { free.popLast() } ?? prototype.make()
    }

    /// Gives `p` back (reset) unless `keep` are already waiting.
    public func give(_ p: Pipeline) {
        guard lock.withLock({ free.count < keep }) else { return }
        p.reset()
        lock.withLock { if free.count < keep { free.append(p) } }
    }

    /// Pipelines waiting (tests).
    var waiting: Int { lock.withLock { free.count } }
}
