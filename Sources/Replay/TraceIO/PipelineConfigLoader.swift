import Foundation
import Positioning
import Yams

/// Reads a pipeline configuration file (YAML, `docs/pipeline.yaml`) into stage options:
///
/// ```yaml
/// stages:
///   gnss: {enabled: true, accuracy_confidence: 0.68}
///   wcl: {enabled: true, weight_law: power, exponent: 1.0}
///   hapel: {enabled: false}
/// ```
///
/// Each section under `stages` is the options of the `StageRegistry` entry of that name
/// (`enabled` switches it on or off; other keys are read by the stage's `make`).
/// Scalars become `ConfigValue.number/.string/.bool`, sequences `.list`, mappings `.map`.
/// Errors are `ConfigurationError` naming the file and key (CLI exit 64); a top-level key
/// other than `stages` is an error (stage options written without `stages:` would otherwise
/// leave the default pipeline in place without a word).
public enum PipelineConfigLoader {
    /// Parses YAML text. `file` names the source in error messages.
    public static func parse(yaml: String, file: String = "pipeline") throws -> [String: StageOptions] {
        let root: Any?
        do { root = try YAMLValues.load(yaml: yaml) } catch {
            throw ConfigurationError(path: file, reason: "invalid YAML: \(error)")
        }
        guard let root else { return [:] }
        guard let top = root as? [String: Any] else {
            throw ConfigurationError(path: file, reason: "the top level must be a mapping with a `stages` key")
        }
        // Any other top-level key is a mistake that would otherwise replay the default
        // pipeline silently: most often stage options written without the `stages:` level.
        for key in top.keys.sorted() where key != "stages" {
            let hint = StageRegistry.entries.contains { $0.name == key }
                ? "`\(key)` is a stage: put it under `stages:` (stages: {\(key): {…}})"
                : "a pipeline file has one top-level key, `stages`"
            throw ConfigurationError(path: "\(file): \(key)", reason: "unknown top-level key; \(hint)")
        }
        guard let stagesAny = top["stages"] else { return [:] }
        guard let stages = stagesAny as? [String: Any] else {
            throw ConfigurationError(path: "\(file): stages", reason: "must be a mapping of stage name → options")
        }
        let known = Set(StageRegistry.entries.map(\.name))
        var out: [String: StageOptions] = [:]
        for (name, body) in stages {
            guard known.contains(name) else {
                throw ConfigurationError(path: "\(file): stages.\(name)",
                                         reason: "unknown stage (known: \(StageRegistry.entries.map(\.name).joined(separator: ", ")))")
            }
            var values: [String: ConfigValue] = [:]
            if body is NSNull || (body as? String) == "" {
                values = [:]
            } else if let m = body as? [String: Any] {
                for (k, v) in m { values[k] = try value(v, at: "\(file): stages.\(name).\(k)") }
            } else {
                throw ConfigurationError(path: "\(file): stages.\(name)", reason: "must be a mapping of options")
            }
            out[name] = StageOptions(name: name, values: values)
        }
        return out
    }

    /// Reads and parses a YAML file.
    public static func load(url: URL) throws -> [String: StageOptions] {
        let text = try InputFile.text(url)
        return try parse(yaml: text, file: url.path)
    }

    static func value(_ v: Any, at path: String) throws -> ConfigValue {
        switch v {
        case let b as Bool: return .bool(b)
        case let i as Int: return .number(Double(i))
        case let d as Double: return .number(d)
        case let s as String: return .string(s)
        case let l as [Any]: return .list(try l.enumerated().map { try value($0.element, at: "\(path)[\($0.offset)]") })
        case let m as [String: Any]:
            var out: [String: ConfigValue] = [:]
            for (k, x) in m { out[k] = try value(x, at: "\(path).\(k)") }
            return .map(out)
        default:
            throw ConfigurationError(path: path, reason: "unsupported value \(v)")
        }
    }
}

extension ConfigurationError {
    /// The message without the leading `file: ` of `path` (for errors that name the file
    /// themselves, e.g. `ResultsDataError(file:reason:)`).
    public func reason(droppingFile file: String) -> String {
        if path == file { return reason }
        if path.hasPrefix(file + ": ") { return String(path.dropFirst(file.count + 2)) + ": " + reason }
        return description
    }
}
