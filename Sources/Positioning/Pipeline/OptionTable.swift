/// The options of pipeline stages, each declared ONCE: key, type, default, unit and the one-line
/// documentation. One table per stage is the single place of these facts:
/// - the stage's parser reads its configuration through it (`StageOptions.double(_:)` and the
///   other typed getters take an `OptionSpec`, whose default is the value an absent key gets);
/// - `PipelineTemplate` generates `docs/pipeline.yaml` from the tables (a test fails when the
///   committed file is stale);
/// - `posfuse sweep` checks swept keys against them, and CLI flags that set the same knob take
///   their defaults from them.
///
/// To add an option: add one `OptionSpec` to the stage's table and read it with the typed getter.

/// One option of a stage.
public struct OptionSpec: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case number, integer, bool, string
        /// A string out of a fixed set.
        case choice([String])
        /// A list of numbers.
        case numbers
        /// A list of source names.
        case sources
        /// A map name → number (e.g. per-source factors).
        case map
    }
    public let key: String
    public let kind: Kind
    /// The value an absent key gets; nil = the option is unset by default (the stage then takes
    /// the value from the trace, or does without; `doc` says which). Such options appear commented
    /// out in the template, with `example`.
    public let defaultValue: ConfigValue?
    public let example: ConfigValue?
    /// Unit of a number ("m", "s", "dBm", "deg", …; empty for pure numbers).
    public let unit: String
    /// What the option does; "\n" separates lines of the template's comment.
    public let doc: String
    /// Rarely needs changing (marked "(advanced)" in the template).
    public let advanced: Bool
    /// The template's text for the default when a `map` must keep an order; nil = generated.
    public let shown: String?

    public init(key: String, kind: Kind, default d: ConfigValue?, example: ConfigValue? = nil, unit: String = "",
                advanced: Bool = false, shown: String? = nil, doc: String) {
        self.key = key; self.kind = kind; self.defaultValue = d; self.example = example; self.unit = unit
        self.doc = doc; self.advanced = advanced; self.shown = shown
    }

    public static func number(_ key: String, _ d: Double?, unit: String = "", example: Double? = nil,
                              advanced: Bool = false, _ doc: String = "") -> OptionSpec {
        OptionSpec(key: key, kind: .number, default: d.map { .number($0) }, example: example.map { .number($0) },
                   unit: unit, advanced: advanced, doc: doc)
    }
    public static func integer(_ key: String, _ d: Int?, unit: String = "", example: Int? = nil,
                               advanced: Bool = false, _ doc: String = "") -> OptionSpec {
        OptionSpec(key: key, kind: .integer, default: d.map { .number(Double($0)) }, example: example.map { .number(Double($0)) },
                   unit: unit, advanced: advanced, doc: doc)
    }
    public static func bool(_ key: String, _ d: Bool, advanced: Bool = false, _ doc: String = "") -> OptionSpec {
        OptionSpec(key: key, kind: .bool, default: .bool(d), advanced: advanced, doc: doc)
    }
    public static func string(_ key: String, _ d: String?, example: String? = nil, advanced: Bool = false, _ doc: String = "") -> OptionSpec {
        OptionSpec(key: key, kind: .string, default: d.map { .string($0) }, example: example.map { .string($0) }, advanced: advanced, doc: doc)
    }
    public static func choice(_ key: String, _ d: String?, _ choices: [String], example: String? = nil,
                              advanced: Bool = false, _ doc: String = "") -> OptionSpec {
        OptionSpec(key: key, kind: .choice(choices), default: d.map { .string($0) }, example: example.map { .string($0) },
                   advanced: advanced, doc: doc)
    }
    public static func numbers(_ key: String, _ d: [Double], unit: String = "", advanced: Bool = false, _ doc: String = "") -> OptionSpec {
        OptionSpec(key: key, kind: .numbers, default: .list(d.map { .number($0) }), unit: unit, advanced: advanced, doc: doc)
    }
    public static func sources(_ key: String, _ d: [String], advanced: Bool = false, _ doc: String = "") -> OptionSpec {
        OptionSpec(key: key, kind: .sources, default: .list(d.map { .string($0) }), advanced: advanced, doc: doc)
    }
    /// A name → number map; `d` in the order the template shows it.
    public static func map(_ key: String, _ d: KeyValuePairs<String, Double>, advanced: Bool = false, _ doc: String = "") -> OptionSpec {
        var m: [String: ConfigValue] = [:]
        for (k, v) in d { m[k] = .number(v) }
        return OptionSpec(key: key, kind: .map, default: .map(m), advanced: advanced,
                          shown: "{" + d.map { "\($0.key): \(ConfigValue.number($0.value).yamlText)" }.joined(separator: ", ") + "}", doc: doc)
    }

    /// The default of a number option (a programming error when the option has none).
    public var number: Double {
        guard case .number(let x)? = defaultValue else { preconditionFailure("option \(key) has no number default") }
        return x
    }
    /// The default of an integer option.
    public var integer: Int { Int(number) }
    /// The default of a bool option.
    public var flag: Bool {
        guard case .bool(let b)? = defaultValue else { preconditionFailure("option \(key) has no bool default") }
        return b
    }
    /// The default of a string or choice option.
    public var text: String {
        guard case .string(let s)? = defaultValue else { preconditionFailure("option \(key) has no string default") }
        return s
    }
    /// The default of a list option, as strings (source lists) or numbers.
    public var strings: [String] {
        guard case .list(let l)? = defaultValue else { preconditionFailure("option \(key) has no list default") }
        return l.compactMap { if case .string(let s) = $0 { return s }; return nil }
    }
    public var numbers: [Double] {
        guard case .list(let l)? = defaultValue else { preconditionFailure("option \(key) has no list default") }
        return l.compactMap { if case .number(let x) = $0 { return x }; return nil }
    }
}

/// The options of one stage: its own, plus the tables it includes (e.g. `rss` takes every
/// `wcl` option; `ukf` every `ekf` option). The template lists a stage's own options and names
/// the included tables.
public struct OptionTable: Sendable {
    /// The stage section name (`StageRegistry.Entry.name`) the table documents.
    public let stage: String
    /// The stage's one-line description ("\n" separates template lines).
    public let doc: String
    /// The comment beside `enabled:` in the template ("" for none).
    public let enabledDoc: String
    public let options: [OptionSpec]
    public let includes: [OptionTable]

    public init(stage: String, doc: String, enabledDoc: String = "", options: [OptionSpec], includes: [OptionTable] = []) {
        self.stage = stage; self.doc = doc; self.enabledDoc = enabledDoc; self.options = options; self.includes = includes
        var seen = Set<String>()
        for o in options { precondition(seen.insert(o.key).inserted, "option \(stage).\(o.key) declared twice") }
    }

    /// Every option the stage reads: its own, then those of the included tables (first wins).
    public var all: [OptionSpec] {
        var out = options, seen = Set(options.map(\.key))
        for t in includes { for o in t.all where seen.insert(o.key).inserted { out.append(o) } }
        return out
    }
    /// Every key the stage accepts, `enabled` included.
    public var keys: [String] { ["enabled"] + all.map(\.key) }
    public func contains(_ key: String) -> Bool { key == "enabled" || all.contains { $0.key == key } }
    public subscript(key: String) -> OptionSpec? { all.first { $0.key == key } }
}

extension ConfigValue {
    /// The value as YAML text that reads back to the same value (numbers in the shortest
    /// round-trip form; an exponent always with a decimal point, as YAML 1.1 floats need).
    public var yamlText: String {
        switch self {
        case .number(let x):
            if x == x.rounded(), abs(x) < 1e15 { return String(Int(x)) }
            var s = String(x)
            if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }), !s[..<e].contains(".") { s.insert(contentsOf: ".0", at: e) }
            return s
        case .string(let s): return s
        case .bool(let b): return b ? "true" : "false"
        case .list(let l): return "[" + l.map(\.yamlText).joined(separator: ", ") + "]"
        case .map(let m): return "{" + m.keys.sorted().map { "\($0): \(m[$0]!.yamlText)" }.joined(separator: ", ") + "}"
        }
    }
}

extension StageOptions {
    /// The number `spec` (its default when absent).
    public func double(_ spec: OptionSpec) throws -> Double { try double(spec.key, default: spec.number) }
    /// The integer `spec`.
    public func int(_ spec: OptionSpec) throws -> Int { try int(spec.key, default: spec.integer) }
    /// The bool `spec`.
    public func bool(_ spec: OptionSpec) throws -> Bool { try bool(spec.key, default: spec.flag) }
    /// The string `spec`; a `choice` must be one of its values.
    public func string(_ spec: OptionSpec) throws -> String {
        let s = try string(spec.key, default: spec.text)
        try check(spec, s)
        return s
    }
    /// The list of numbers `spec`.
    public func doubles(_ spec: OptionSpec) throws -> [Double] { try doubles(spec.key, default: spec.numbers) }
    /// A number option without a default: nil when absent.
    public func optionalDouble(_ spec: OptionSpec) throws -> Double? {
        values[spec.key] == nil ? nil : try double(spec.key, default: 0)
    }
    /// A string option without a default: nil when absent.
    public func optionalString(_ spec: OptionSpec) throws -> String? {
        guard values[spec.key] != nil else { return nil }
        let s = try string(spec.key, default: "")
        try check(spec, s)
        return s
    }
    /// A `choice` option read as the enumeration `T` (whose raw values are the choices).
    public func choice<T: RawRepresentable>(_ spec: OptionSpec, as: T.Type = T.self) throws -> T where T.RawValue == String {
        let s = try string(spec)
        guard let v = T(rawValue: s) else { throw ConfigurationError(path: "\(name).\(spec.key)", reason: "unknown value \(s)") }
        return v
    }
    private func check(_ spec: OptionSpec, _ s: String) throws {
        if case .choice(let c) = spec.kind, !c.contains(s) {
            throw ConfigurationError(path: "\(name).\(spec.key)", reason: "expected \(Self.alternatives(c)), got \(s)")
        }
    }
    static func alternatives(_ c: [String]) -> String {
        c.count <= 1 ? (c.first ?? "") : c.dropLast().joined(separator: ", ") + " or " + c.last!
    }
}

extension StageOptions {
    /// A `sources` option as source names in their order (the default when absent).
    public func sourceList(_ spec: OptionSpec) throws -> [Source] {
        guard let v = values[spec.key] else { return spec.strings.compactMap(Source.init(rawValue:)) }
        guard case .list(let l) = v else { throw ConfigurationError(path: "\(name).\(spec.key)", reason: "expected a list of source names") }
        return try l.map { item -> Source in
            guard case .string(let s) = item, let src = Source(rawValue: s) else {
                throw ConfigurationError(path: "\(name).\(spec.key)", reason: "unknown source \(item)")
            }
            return src
        }
    }
}
