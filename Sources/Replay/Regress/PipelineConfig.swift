import Foundation
import Positioning
import Yams

/// Reads a pipeline configuration file (YAML, `docs/pipeline.yaml`): a top-level `stages:`
/// mapping with one section per `StageRegistry` entry name, e.g.
/// `stages: { wcl: { enabled: true, weight_law: power, exponent: 1.0 } }`, into the
/// per-stage `StageOptions`. Unknown stage names are an error (a typo would otherwise
/// silently replay the default pipeline).
public enum PipelineConfig {
    public static func load(url: URL) throws -> [String: StageOptions] {
        let text: String
        do { text = try String(contentsOf: url, encoding: .utf8) } catch {
            throw ResultsDataError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        return try parse(text, file: url.path)
    }

    public static func parse(_ text: String, file: String) throws -> [String: StageOptions] {
        let root: Any?
        do { root = try Yams.load(yaml: text) } catch { throw ResultsDataError(file: file, reason: "not YAML: \(error)") }
        guard let top = root as? [String: Any] else { throw ResultsDataError(file: file, reason: "expected a mapping with a stages: section") }
        let stages = (top["stages"] ?? [String: Any]()) as? [String: Any]
        guard let stages else { throw ResultsDataError(file: file, reason: "stages: expected a mapping stage → options") }
        let known = Set(StageRegistry.entries.map(\.name))
        var out: [String: StageOptions] = [:]
        for (name, v) in stages {
            guard known.contains(name) else {
                throw ResultsDataError(file: file, reason: "stages.\(name): unknown stage (known: \(known.sorted().joined(separator: ", ")))")
            }
            guard let m = (v is NSNull ? [String: Any]() : v) as? [String: Any] else {
                throw ResultsDataError(file: file, reason: "stages.\(name): expected a mapping option → value")
            }
            var values: [String: ConfigValue] = [:]
            for (k, x) in m { values[k] = try value(x, file: file, at: "stages.\(name).\(k)") }
            out[name] = StageOptions(name: name, values: values)
        }
        return out
    }

    static func value(_ x: Any?, file: String, at path: String) throws -> ConfigValue {
        switch x {
        case let b as Bool: return .bool(b)
        case let i as Int: return .number(Double(i))
        case let d as Double: return .number(d)
        case let s as String: return .string(s)
        case let l as [Any?]: return .list(try l.enumerated().map { try value($0.element, file: file, at: "\(path)[\($0.offset)]") })
        case let m as [String: Any?]:
            var o: [String: ConfigValue] = [:]
            for (k, v) in m { o[k] = try value(v, file: file, at: "\(path).\(k)") }
            return .map(o)
        default: throw ResultsDataError(file: file, reason: "\(path): unsupported value")
        }
    }
}
