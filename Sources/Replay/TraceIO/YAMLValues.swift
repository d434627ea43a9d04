import Foundation
import Yams

/// Loads a YAML document as plain values (`[String: Any]`, `[Any]`, scalars) the way
/// `Yams.load` does, but never traps. Yams' constructor stops the process on two inputs, both
/// found by the pipeline-yaml fuzz target:
/// - a mapping key that is a list or a mapping (`? [a, b] : 1`, `{[1]: x}`): each key is
///   converted with a force-unwrapped `String.construct`;
/// - a YAML 1.1 base-60 integer whose value overflows (`707777777777777777:7`): the digits are
///   combined with trapping `*` and `+`.
/// So the document is composed first and `check` refuses both, naming the line; only then is it
/// constructed. Every YAML file posfuse reads goes through `check` (pipeline configuration,
/// regress baselines, scenarios, sweep studies).
package enum YAMLValues {
    /// A construct posfuse refuses before Yams would trap on it.
    package struct Refused: Error, CustomStringConvertible {
        package var line: Int?
        package var reason: String
        package var description: String { "\(line.map { "line \($0): " } ?? "")\(reason)" }
    }

    package static func load(yaml: String) throws -> Any? {
        guard let root = try Yams.compose(yaml: yaml) else { return nil }
        try check(root)
        return root.any
    }

    /// Throws `Refused` for the first non-scalar mapping key or base-60 integer below `root`.
    package static func check(_ root: Node) throws {
        // Iterative walk: nesting depth comes from the file and must not grow the call stack.
        var stack = [root]
        while let n = stack.popLast() {
            if let m = n.mapping {
                for (k, v) in m {
                    guard k.scalar != nil else {
                        throw Refused(line: k.mark?.line, reason: "a mapping key must be a plain value (a name or a number), not a list or a mapping")
                    }
                    stack.append(k)
                    stack.append(v)
                }
            } else if let s = n.sequence {
                stack.append(contentsOf: s)
            } else if let s = n.scalar, s.style == .plain, isBase60Integer(s.string) {
                throw Refused(line: n.mark?.line, reason: "'\(s.string)' is a YAML 1.1 base-60 number; write it in decimal (or quote it as text)")
            }
        }
    }

    /// `[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+`, the YAML 1.1 sexagesimal integer form.
    package static func isBase60Integer(_ s: String) -> Bool {
        var u = Substring(s).utf8[...]
        if let f = u.first, f == UInt8(ascii: "+") || f == UInt8(ascii: "-") { u = u.dropFirst() }
        guard let f = u.first, f >= UInt8(ascii: "1"), f <= UInt8(ascii: "9") else { return false }
        let parts = u.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "_") }) else { return false }
        for p in parts.dropFirst() {
            guard (1...2).contains(p.count), p.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
            if p.count == 2, p.first! > UInt8(ascii: "5") { return false }
        }
        return true
    }
}
