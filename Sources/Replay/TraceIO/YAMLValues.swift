import Foundation
import Yams

/// Loads a YAML document as plain values (`[String: Any]`, `[Any]`, scalars) the way
/// `Yams.load` does, but never traps: Yams builds each mapping with a force-unwrapped
/// `String.construct(from: key)`, so a key that is a list or a mapping (`? [a, b] : 1`,
/// `{[1]: x}`) stopped the process (found by the pipeline-yaml fuzz target). The document is
/// composed first, every mapping key is checked to be a scalar (an error naming its line),
/// and only then constructed. Used by every YAML file read as plain values (pipeline
/// configuration, regress baselines).
package enum YAMLValues {
    /// A mapping key that is not a plain scalar.
    package struct NonScalarKey: Error, CustomStringConvertible {
        package var line: Int?
        package var description: String {
            "\(line.map { "line \($0): " } ?? "")a mapping key must be a plain value (a name or a number), not a list or a mapping"
        }
    }

    package static func load(yaml: String) throws -> Any? {
        guard let root = try Yams.compose(yaml: yaml) else { return nil }
        // Iterative walk: nesting depth comes from the file and must not grow the call stack.
        var stack = [root]
        while let n = stack.popLast() {
            if let m = n.mapping {
                for (k, v) in m {
                    guard k.scalar != nil else { throw NonScalarKey(line: k.mark?.line) }
                    stack.append(v)
                }
            } else if let s = n.sequence {
                stack.append(contentsOf: s)
            }
        }
        return root.any
    }
}
