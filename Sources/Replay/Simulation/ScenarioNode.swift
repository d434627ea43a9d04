import Foundation
import Yams
import TraceIO

/// A malformed scenario file: where (YAML key path and line) and why.
public struct ScenarioError: Error, CustomStringConvertible, Sendable {
    public var file: String
    public var path: String
    public var line: Int?
    public var reason: String
    public var description: String {
        "\(file)\(line.map { ":\($0)" } ?? ""): \(path.isEmpty ? "" : path + ": ")\(reason)"
    }
}

/// Typed, path-aware access to a YAML mapping of a scenario file. Every key read is recorded;
/// `checkUnused()` turns any key that no reader asked for into an error, so a typo in a
/// scenario file ("shadowing_sigma_bd") fails loudly instead of silently using a default.
final class ScenarioNode {
    let node: Node
    let path: String
    let file: String
    private var used: Set<String> = []
    private var children: [ScenarioNode] = []

    init(node: Node, path: String, file: String) { self.node = node; self.path = path; self.file = file }

    static func parse(yaml: String, file: String) throws -> ScenarioNode {
        let root: Node?
        do { root = try Yams.compose(yaml: yaml) } catch {
            throw ScenarioError(file: file, path: "", line: nil, reason: "YAML syntax: \(error)")
        }
        guard let r = root, r.mapping != nil else {
            throw ScenarioError(file: file, path: "", line: nil, reason: "the scenario must be a YAML mapping")
        }
        do { try YAMLValues.check(r) } catch let e as YAMLValues.Refused {
            throw ScenarioError(file: file, path: "", line: e.line, reason: e.reason)
        }
        return ScenarioNode(node: r, path: "", file: file)
    }

    /// The error for `key` (a key path below this node, e.g. `phones[0].path.waypoints[2].e`),
    /// located at `n` when given, else at the deepest node of the key path present in the file
    /// (so a value checked after parsing still names its own line, not the mapping's).
    func error(_ reason: String, key: String? = nil, node n: Node? = nil) -> ScenarioError {
        let at = n ?? key.map { deepestNode(along: $0) } ?? node
        return ScenarioError(file: file, path: key.map { sub($0) } ?? path, line: at.mark?.line, reason: reason)
    }
    /// Walks a key path of mapping keys and `[i]` list indices from this node and returns the
    /// last node found on the way (this node when the first step is absent).
    func deepestNode(along keyPath: String) -> Node {
        var cur = node
        for part in keyPath.split(separator: ".") {
            var name = part
            var indices: [Int] = []
            while name.hasSuffix("]"), let open = name.lastIndex(of: "["),
                  let i = Int(name[name.index(after: open)..<name.index(before: name.endIndex)]) {
                indices.insert(i, at: 0)
                name = name[..<open]
            }
            if !name.isEmpty {
                guard let next = cur.mapping?[String(name)] else { return cur }
                cur = next
            }
            for i in indices {
                guard let seq = cur.sequence, i >= 0, i < seq.count else { return cur }
                cur = seq[seq.index(seq.startIndex, offsetBy: i)]
            }
        }
        return cur
    }
    private func sub(_ k: String) -> String { path.isEmpty ? k : path + "." + k }

    private func raw(_ key: String) -> Node? {
        used.insert(key)
        guard let v = node.mapping?[key] else { return nil }
        if case .scalar(let s) = v, s.string == "~" || s.string == "null" || s.string.isEmpty { return nil }
        return v
    }
    func has(_ key: String) -> Bool { node.mapping?[key] != nil }

    func double(_ key: String, _ def: Double) throws -> Double { try doubleOpt(key) ?? def }
    /// A number. Only correlation times (`…_tau_s`) may be `.inf` (a constant bias); every
    /// other value must be finite (`.nan`, `.inf` are errors naming the key and line).
    func doubleOpt(_ key: String) throws -> Double? {
        guard let v = raw(key) else { return nil }
        let infOK = key.hasSuffix("_tau_s")
        if let s = v.scalar?.string.lowercased(), s == "inf" || s == ".inf" || s == "+.inf" {
            guard infOK else { throw error("must be a finite number", key: key, node: v) }
            return .infinity
        }
        guard let d = v.float, d.isFinite || (infOK && d == .infinity) else {
            throw error(v.float == nil ? "expected a number" : "must be a finite number", key: key, node: v)
        }
        return d
    }
    func int(_ key: String, _ def: Int) throws -> Int {
        guard let v = raw(key) else { return def }
        guard let i = Self.integer(v) else { throw error("expected an integer", key: key, node: v) }
        return i
    }
    func intOpt(_ key: String) throws -> Int? {
        guard let v = raw(key) else { return nil }
        guard let i = Self.integer(v) else { throw error("expected an integer", key: key, node: v) }
        return i
    }
    /// An integer scalar. Yams reads any scalar with colons whose parts are integers as base 60
    /// (`210000102:43:52:44:00:020` became 1.6e17, found by the scenario-yaml fuzz target), with
    /// arithmetic that traps on overflow; a scenario's integers are decimal, hex, octal or binary.
    static func integer(_ v: Node) -> Int? {
        guard let s = v.scalar?.string, !s.contains(":") else { return nil }
        return v.int
    }
    func bool(_ key: String, _ def: Bool) throws -> Bool {
        guard let v = raw(key) else { return def }
        guard let b = v.bool else { throw error("expected true or false", key: key, node: v) }
        return b
    }
    func string(_ key: String, _ def: String) throws -> String { try stringOpt(key) ?? def }
    func stringOpt(_ key: String) throws -> String? {
        guard let v = raw(key) else { return nil }
        guard let s = v.scalar?.string else { throw error("expected a string", key: key, node: v) }
        return s
    }
    func choice(_ key: String, _ def: String, _ allowed: [String]) throws -> String {
        let s = try string(key, def)
        guard allowed.contains(s) else {
            throw error("'\(s)' is not one of \(allowed.joined(separator: ", "))", key: key)
        }
        return s
    }
    func doubles(_ key: String) throws -> [Double]? {
        guard let v = raw(key) else { return nil }
        guard let seq = v.sequence else { throw error("expected a list of numbers", key: key, node: v) }
        return try seq.map { n in
            guard let d = n.float, d.isFinite else { throw error("expected a finite number", key: key, node: n) }
            return d
        }
    }
    /// A nested mapping, or nil when absent.
    func child(_ key: String) throws -> ScenarioNode? {
        guard let v = raw(key) else { return nil }
        if let b = v.bool, b == false { return nil }
        guard v.mapping != nil else { throw error("expected a mapping", key: key, node: v) }
        let c = ScenarioNode(node: v, path: sub(key), file: file)
        children.append(c)
        return c
    }
    /// A list of mappings (items may also be numbers/lists: `items` returns the raw nodes).
    func list(_ key: String) throws -> [ScenarioNode] {
        guard let v = raw(key) else { return [] }
        guard let seq = v.sequence else { throw error("expected a list", key: key, node: v) }
        return seq.enumerated().map { i, n in
            let c = ScenarioNode(node: n, path: sub(key) + "[\(i)]", file: file)
            children.append(c)
            return c
        }
    }
    var isMapping: Bool { node.mapping != nil }
    /// The node as a list of numbers ([e, n] waypoint shorthand).
    /// nil unless every item is a finite number.
    var numbers: [Double]? {
        guard let seq = node.sequence else { return nil }
        let v = seq.compactMap { $0.float }.filter(\.isFinite)
        return v.count == seq.count ? v : nil
    }

    /// Throws for the first key that nobody read (a typo or an unsupported option).
    func checkUnused() throws {
        if let m = node.mapping {
            for (k, v) in m {
                guard let ks = k.string else { continue }
                if !used.contains(ks) { throw error("unknown key '\(ks)'", key: ks, node: v) }
            }
        }
        for c in children where c.isMapping { try c.checkUnused() }
    }
}
