import Foundation
import TraceIO

/// Compact JSON text of a Foundation-style value tree (`[String: Any]`, `[Any]`, String, Double,
/// Int, Bool, NSNumber, NSNull), object keys sorted — the same document `JSONSerialization` with
/// `.sortedKeys` writes, without its bridging through NSDictionary (measured: 53 % of
/// `posfuse refine` on reports without evidence went into `JSONSerialization.data`; this writer
/// takes a few per cent). Numbers and strings as the trace writer writes them (`num`: shortest
/// round-trip decimal, integers without a fraction, non-finite → `null`; `jsonEscaped`: `"`, `\`
/// and control characters escaped, RFC 8259 §7).
public enum JSONText {
    public static func string(_ value: Any) -> String {
        var out = ""
        out.reserveCapacity(512)
        write(value, into: &out)
        return out
    }

    public static func write(_ value: Any, into out: inout String) {
        switch value {
        case let s as String: writeString(s, into: &out)
        case let b as Bool: out += b ? "true" : "false"
        case let i as Int: out += String(i)
        case let d as Double: writeNumber(d, into: &out)
        case let o as [String: Any]:
            out += "{"
            for (k, key) in o.keys.sorted().enumerated() {
                if k > 0 { out += "," }
                writeString(key, into: &out); out += ":"
                write(o[key]!, into: &out)
            }
            out += "}"
        case let a as [Any]:
            out += "["
            for (k, v) in a.enumerated() {
                if k > 0 { out += "," }
                write(v, into: &out)
            }
            out += "]"
        case is NSNull: out += "null"
        case let n as NSNumber:
            if String(cString: n.objCType) == "c" { out += n.boolValue ? "true" : "false" } else { writeNumber(n.doubleValue, into: &out) }
        case let x as Int32: out += String(x)
        case let x as Int64: out += String(x)
        case let x as Float: writeNumber(Double(x), into: &out)
        default: writeString(String(describing: value), into: &out)
        }
    }

    /// The trace writer's number and string rules (`num`, `jsonEscaped`): one place for each.
    static func writeNumber(_ d: Double, into out: inout String) { out += num(d) }
    static func writeString(_ s: String, into out: inout String) { out += jsonEscaped(s) }
}
