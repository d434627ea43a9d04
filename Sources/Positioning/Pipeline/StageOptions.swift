/// A configuration value from a pipeline configuration file (YAML in practice; parsed
/// in `Replay`). Positioning stays free of any file-format dependency.
public indirect enum ConfigValue: Sendable, Equatable {
    case number(Double)
    case string(String)
    case bool(Bool)
    case list([ConfigValue])
    case map([String: ConfigValue])
}

/// Error for a configuration value of the wrong type or out of range (exit 64/65 at the CLI).
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public init(path: String, reason: String) { self.path = path; self.reason = reason }
    public var description: String { "\(path): \(reason)" }
}

/// The options of one stage (one section of the pipeline configuration), with typed
/// getters that fall back to documented defaults and reject wrong types.
public struct StageOptions: Sendable, Equatable {
    public var name: String
    public var values: [String: ConfigValue]
    public init(name: String, values: [String: ConfigValue] = [:]) { self.name = name; self.values = values }

    public var isEnabled: Bool { (try? bool("enabled", default: true)) ?? true }

    public func double(_ key: String, default d: Double) throws -> Double {
        guard let v = values[key] else { return d }
        if case .number(let x) = v, x.isFinite { return x }
        throw ConfigurationError(path: "\(name).\(key)", reason: "expected a number")
    }
    public func int(_ key: String, default d: Int) throws -> Int {
        let x = try double(key, default: Double(d))
        guard x == x.rounded(), abs(x) < 1e15 else { throw ConfigurationError(path: "\(name).\(key)", reason: "expected an integer") }
        return Int(x)
    }
    public func string(_ key: String, default d: String) throws -> String {
        guard let v = values[key] else { return d }
        if case .string(let s) = v { return s }
        throw ConfigurationError(path: "\(name).\(key)", reason: "expected a string")
    }
    public func bool(_ key: String, default d: Bool) throws -> Bool {
        guard let v = values[key] else { return d }
        if case .bool(let b) = v { return b }
        throw ConfigurationError(path: "\(name).\(key)", reason: "expected true or false")
    }
    public func doubles(_ key: String, default d: [Double]) throws -> [Double] {
        guard let v = values[key] else { return d }
        if case .list(let l) = v {
            return try l.map { if case .number(let x) = $0 { return x }; throw ConfigurationError(path: "\(name).\(key)", reason: "expected a list of numbers") }
        }
        throw ConfigurationError(path: "\(name).\(key)", reason: "expected a list of numbers")
    }
}
