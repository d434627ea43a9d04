import Foundation

/// Where a trace and its optional reference side file live.
///
/// A path names either a trace file (`*.jsonl`) or a scenario folder `Traces/NAME/`
/// holding `trace.jsonl` and optionally `reference.json` (`docs/trace-format.md`).
/// For a file, the reference is `<stem>.reference.json` next to it, or `reference.json`
/// next to it when the file is called `trace.jsonl`.
public struct TraceLocation: Sendable, Equatable {
    /// The trace (JSON Lines).
    public var trace: URL
    /// The reference side file, if present.
    public var reference: URL?
    /// Display name: the folder name for a scenario folder, else the file stem.
    public var name: String

    public init(trace: URL, reference: URL?, name: String) {
        self.trace = trace; self.reference = reference; self.name = name
    }

    /// The folder the trace lives in (the `folder` for `ReferenceLoader.load(folder:frame:)`).
    public var folder: URL { trace.deletingLastPathComponent() }

    /// Resolves one trace file or scenario folder. Throws `TraceDataError` (code `io`,
    /// line 0) when the path does not exist or a folder has no `trace.jsonl`.
    public static func resolve(_ path: String) throws -> TraceLocation {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        let url = URL(fileURLWithPath: path)
        guard fm.fileExists(atPath: url.path, isDirectory: &isDir) else {
            throw TraceDataError(file: path, line: 0, reason: "no such file or folder", code: .io)
        }
        if isDir.boolValue {
            let t = url.appendingPathComponent("trace.jsonl")
            guard fm.fileExists(atPath: t.path) else {
                throw TraceDataError(file: path, line: 0, reason: "folder has no trace.jsonl", code: .io)
            }
            let r = url.appendingPathComponent("reference.json")
            return TraceLocation(trace: t, reference: fm.fileExists(atPath: r.path) ? r : nil,
                                 name: url.standardizedFileURL.lastPathComponent)
        }
        let dir = url.deletingLastPathComponent()
        let stem = url.deletingPathExtension().lastPathComponent
        var ref: URL?
        let own = dir.appendingPathComponent(stem + ".reference.json")
        let shared = dir.appendingPathComponent("reference.json")
        if fm.fileExists(atPath: own.path) {
            ref = own
        } else if url.lastPathComponent == "trace.jsonl", fm.fileExists(atPath: shared.path) {
            ref = shared
        }
        let name = url.lastPathComponent == "trace.jsonl" ? dir.standardizedFileURL.lastPathComponent : stem
        return TraceLocation(trace: url, reference: ref, name: name)
    }

    /// Resolves a path that may also be a collection folder such as `Traces/`: a trace
    /// file or scenario folder gives one location; a folder without `trace.jsonl` gives
    /// every scenario subfolder and `*.jsonl` file in it, sorted by name.
    public static func resolveAll(_ path: String) throws -> [TraceLocation] {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        let url = URL(fileURLWithPath: path)
        guard fm.fileExists(atPath: url.path, isDirectory: &isDir) else {
            throw TraceDataError(file: path, line: 0, reason: "no such file or folder", code: .io)
        }
        if !isDir.boolValue || fm.fileExists(atPath: url.appendingPathComponent("trace.jsonl").path) {
            return [try resolve(path)]
        }
        let entries = try fm.contentsOfDirectory(atPath: url.path).sorted()
        var out: [TraceLocation] = []
        for e in entries where !e.hasPrefix(".") {
            let child = url.appendingPathComponent(e)
            var d: ObjCBool = false
            guard fm.fileExists(atPath: child.path, isDirectory: &d) else { continue }
            if d.boolValue {
                if fm.fileExists(atPath: child.appendingPathComponent("trace.jsonl").path) { out.append(try resolve(child.path)) }
            } else if e.hasSuffix(".jsonl") {
                out.append(try resolve(child.path))
            }
        }
        guard !out.isEmpty else {
            throw TraceDataError(file: path, line: 0, reason: "no trace.jsonl or *.jsonl found", code: .io)
        }
        return out
    }
}
