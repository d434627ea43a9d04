import Foundation
import Positioning
import Storage
import Scoring
import Simulation
import TraceIO

/// Executes the runs of a sweep plan on `jobs` worker threads and stores each finished run
/// in the results database (one transaction per run).
///
/// Each run replays one trace through a fresh pipeline built from the point's options
/// (`Replayer`, the path of `posfuse replay`); its estimates are kept in memory and written
/// together with the scores once the replay has finished, so the database is locked only
/// for the write, not for the replay. Workers take runs in canonical order; a run's result
/// depends only on its input, seed and options, never on the worker or the order, so one
/// core, several cores and Slurm shards give the same runs.
///
/// A simulated input's trace for a seed is written once to a private temporary folder
/// (`Simulator`, the trace of `posfuse simulate --seed`) and shared by every grid point of
/// that seed; it is deleted when the last of them has finished.
public final class SweepRunner: @unchecked Sendable {
    public let plan: SweepPlan
    public let store: SweepStore
    public let jobs: Int
    public let version: String
    let work: URL
    private let lock = NSLock()

    public struct Report: Sendable {
        /// Runs executed and stored now.
        public var ran = 0
        /// Runs of the share already in the database (not run again).
        public var alreadyStored = 0
        /// Runs that failed: (run, error text). Nothing of them is stored.
        public var failed: [(run: SweepPlan.Run, error: String)] = []
    }

    public init(plan: SweepPlan, store: SweepStore, jobs: Int, version: String) {
        self.plan = plan; self.store = store; self.jobs = max(1, jobs); self.version = version
        work = FileManager.default.temporaryDirectory
            .appendingPathComponent("posfuse-sweep-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
    }

    /// Runs `runs` (a share of the plan, or all of it) minus those already stored.
    /// `progress(done, total)` is called after each run (from worker threads, serialised).
    public func run(_ runs: [SweepPlan.Run], progress: (@Sendable (Int, Int) -> Void)? = nil) throws -> Report {
        let stored = try store.storedKeys()
        let todo = runs.filter { stored[$0.key] == nil }
        var report = Report()
        report.alreadyStored = runs.count - todo.count
        if todo.isEmpty { return report }
        Self.removeStaleWorkFolders()
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        // Simulated traces: one per (input, seed), shared by its grid points.
        var users: [String: Int] = [:]
        for r in todo where r.seed != nil { users[traceKey(r), default: 0] += 1 }
        let traces = TraceCache(users: users)

        let next = Counter()
        let results = ResultBox()
        let total = todo.count
        DispatchQueue.concurrentPerform(iterations: min(jobs, todo.count)) { _ in
            while let i = next.take(below: todo.count) {
                let r = todo[i]
                do {
                    try execute(r, traces: traces)
                    results.ran()
                } catch {
                    results.failed(r, "\(error)")
                }
                progress?(results.done, total)
            }
        }
        report.ran = results.ranCount
        report.failed = results.failures.sorted { $0.run.index < $1.run.index }
        return report
    }

    /// Removes the simulated-trace folders of studies that were killed (their process is gone).
    static func removeStaleWorkFolders() {
        let tmp = FileManager.default.temporaryDirectory
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: tmp.path) else { return }
        for n in names where n.hasPrefix("posfuse-sweep-") {
            let parts = n.split(separator: "-")
            guard parts.count >= 4, let pid = Int32(parts[2]), pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { try? FileManager.default.removeItem(at: tmp.appendingPathComponent(n)) }
        }
    }

    func traceKey(_ r: SweepPlan.Run) -> String { "\(r.input)-\(r.seed.map(String.init) ?? "rec")" }

    private func execute(_ r: SweepPlan.Run, traces: TraceCache) throws {
        let input = plan.study.inputs[r.input]
        defer { if r.seed != nil { traces.release(traceKey(r)) } }
        let location: TraceLocation
        switch input.kind {
        case .recording(let loc): location = loc
        case let .scenario(folder, _, _, duration):
            location = try traces.location(traceKey(r)) {
                let dir = work.appendingPathComponent(traceKey(r))
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let scenario = try Scenario.load(url: folder.appendingPathComponent("scenario.yaml"))
                _ = try Simulator.run(scenario: scenario, options: SimulationOptions(seed: r.seed!, duration: duration),
                                      trace: dir.appendingPathComponent("trace.jsonl"), reference: dir.appendingPathComponent("reference.json"))
                return try TraceLocation.resolve(dir.path)
            }
        }
        let options = ReplayOptions(stages: plan.stages(point: r.point), cellDatabase: input.cellDatabase)
        let replayer = Replayer(options: options)
        var estimates: [ScoredEstimate] = []
        replayer.onEstimate = { estimates.append($0) }
        var result = try replayer.run(location)
        // The stored trace path names the input, not the temporary copy.
        if case let .scenario(folder, _, _, _) = input.kind {
            result.location = TraceLocation(trace: folder.appendingPathComponent("scenario.yaml"), reference: nil, name: location.name)
        }
        let parameters = Self.parametersJSON(options: options, seed: r.seed, point: plan.pointJSON(r.point), study: plan.study.name)
        try lock.withLock {
            _ = try store.record(plan: plan, run: r, result: result, estimates: estimates, parameters: parameters, version: version)
        }
    }

    /// The JSON stored in `runs.parameters` (as `replay --db`, plus the study, seed and point).
    static func parametersJSON(options: ReplayOptions, seed: UInt64?, point: String, study: String) -> String {
        var fields = [
            "\"mode\":\"\(options.mode.rawValue)\"",
            "\"max_truth_gap_s\":\(options.scoring.maxTruthGap)",
            "\"fix_validity_s\":\(options.scoring.fixValidity)",
            "\"reorder_window_s\":\(options.reorderWindow)",
            "\"study\":\(jsonEscaped(study))",
            "\"point\":\(point)",
        ]
        if let seed { fields.append("\"seed\":\(seed)") }
        return "{" + fields.joined(separator: ",") + "}"
    }
}

/// A shared index counter.
final class Counter: @unchecked Sendable {
    private var value = 0
    private let lock = NSLock()
    func take(below n: Int) -> Int? {
        lock.withLock {
            guard value < n else { return nil }
            defer { value += 1 }
            return value
        }
    }
}

/// Counts of finished runs.
final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var ranCount = 0
    private(set) var failures: [(run: SweepPlan.Run, error: String)] = []
    var done: Int { lock.withLock { ranCount + failures.count } }
    func ran() { lock.withLock { ranCount += 1 } }
    func failed(_ r: SweepPlan.Run, _ e: String) { lock.withLock { failures.append((r, e)) } }
}

/// Simulated traces by key: made by the first run that needs one (others wait for it),
/// deleted after the last of its `users` has released it.
final class TraceCache: @unchecked Sendable {
    final class Entry: @unchecked Sendable {
        let lock = NSLock()
        var location: TraceLocation?
        var users: Int
        init(users: Int) { self.users = users }
    }
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]

    init(users: [String: Int]) {
        for (k, n) in users { entries[k] = Entry(users: n) }
    }

    func location(_ key: String, make: () throws -> TraceLocation) throws -> TraceLocation {
        guard let e = lock.withLock({ entries[key] }) else { return try make() }
        return try e.lock.withLock {
            if let l = e.location { return l }
            let l = try make()
            e.location = l
            return l
        }
    }

    func release(_ key: String) {
        guard let e = lock.withLock({ entries[key] }) else { return }
        e.lock.withLock {
            e.users -= 1
            if e.users == 0, let l = e.location {
                try? FileManager.default.removeItem(at: l.trace.deletingLastPathComponent())
                e.location = nil
            }
        }
    }
}
