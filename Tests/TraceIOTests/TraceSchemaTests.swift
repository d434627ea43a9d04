import Foundation
import Testing
@testable import Replay
import TestSupport

/// The JSON Schema `docs/trace-format.schema.json` and the trace writer must not drift apart.
///
/// A full JSON Schema validator is not a dependency of posfuse (the complete check of every
/// bundled trace is `python3 scripts/validate-traces.py`, which uses the maintained Python
/// `jsonschema` package). These tests check the structural subset that drift breaks: every
/// line the simulator/writer emitted into the bundled traces uses only keys the schema lists
/// for its type, carries every required key, has JSON types the schema allows, and every
/// numeric field the schema defines states its unit (`x-unit`), as docs/trace-format.md promises.
@Suite struct TraceSchemaTests {
    static let root = PackagePaths.root

    static func schema() throws -> [String: Any] {
        let data = try Data(contentsOf: root.appendingPathComponent("docs/trace-format.schema.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Structural check of `value` against `node` (subset: $ref, type, const, required,
    /// properties, additionalProperties: false, items, minimum, maximum). Returns the violations.
    static func violations(_ value: Any, _ node: [String: Any], defs: [String: Any], path: String) -> [String] {
        if let ref = node["$ref"] as? String {
            let name = String(ref.split(separator: "/").last ?? "")
            guard let target = defs[name] as? [String: Any] else { return ["\(path): unresolved \(ref)"] }
            return violations(value, target, defs: defs, path: path)
        }
        var out: [String] = []
        if let t = node["type"] {
            let allowed = (t as? [String]) ?? [t as? String ?? ""]
            if !allowed.contains(where: { jsonType(value, is: $0) }) { out.append("\(path): \(type(of: value)) not in \(allowed)") }
        }
        if let c = node["const"], "\(c)" != "\(value)" { out.append("\(path): \(value) ≠ const \(c)") }
        if let n = number(value) {
            if let lo = node["minimum"] as? Double, n < lo { out.append("\(path): \(n) < minimum \(lo)") }
            if let hi = node["maximum"] as? Double, n > hi { out.append("\(path): \(n) > maximum \(hi)") }
        }
        if let obj = value as? [String: Any] {
            let props = node["properties"] as? [String: Any] ?? [:]
            for key in node["required"] as? [String] ?? [] where obj[key] == nil { out.append("\(path): missing required \(key)") }
            for (k, v) in obj {
                if let p = props[k] as? [String: Any] { out += violations(v, p, defs: defs, path: "\(path).\(k)") }
                else if node["additionalProperties"] as? Bool == false { out.append("\(path): key \(k) not in schema") }
            }
        }
        if let arr = value as? [Any], let items = node["items"] as? [String: Any] {
            for (i, v) in arr.enumerated() { out += violations(v, items, defs: defs, path: "\(path)[\(i)]") }
        }
        return out
    }

    static func isBool(_ v: Any) -> Bool {
        // JSONSerialization returns JSON booleans as __NSCFBoolean on Linux (numbers 0 and 1
        // also answer `is Bool`, so the cast alone cannot tell them apart).
        type(of: v) == Bool.self || String(describing: type(of: v)) == "__NSCFBoolean"
    }

    /// The numeric value of a JSON number (Foundation may hand out NSNumber, Int or Double).
    static func number(_ v: Any) -> Double? {
        if isBool(v) { return nil }
        if let d = v as? Double { return d }
        if let i = v as? Int { return Double(i) }
        return (v as? NSNumber)?.doubleValue
    }

    static func jsonType(_ v: Any, is t: String) -> Bool {
        switch t {
        case "null": return v is NSNull
        case "boolean": return isBool(v)
        case "number": return number(v) != nil
        case "integer": return number(v).map { $0.rounded() == $0 } ?? false
        case "string": return v is String
        case "array": return v is [Any]
        case "object": return v is [String: Any]
        default: return false
        }
    }

    @Test func everyNumericFieldStatesItsUnit() throws {
        let defs = try #require(Self.schema()["$defs"] as? [String: Any])
        var missing: [String] = []
        func walk(_ props: [String: Any], _ path: String) {
            for (k, raw) in props {
                guard let p = raw as? [String: Any] else { continue }
                let types = (p["type"] as? [String]) ?? [p["type"] as? String ?? ""]
                if types.contains("number"), p["x-unit"] == nil { missing.append("\(path).\(k)") }
                if let inner = p["properties"] as? [String: Any] { walk(inner, "\(path).\(k)") }
                if let items = p["items"] as? [String: Any] {
                    let itypes = (items["type"] as? [String]) ?? [items["type"] as? String ?? ""]
                    if itypes.contains("number"), items["x-unit"] == nil { missing.append("\(path).\(k)[]") }
                    if let inner = items["properties"] as? [String: Any] { walk(inner, "\(path).\(k)[]") }
                }
            }
        }
        for (name, raw) in defs {
            guard let d = raw as? [String: Any] else { continue }
            if let props = d["properties"] as? [String: Any] { walk(props, name) }
        }
        #expect(missing.isEmpty, "numeric fields without x-unit: \(missing.sorted())")
    }

    /// The first lines of every event type in every bundled trace conform to the schema.
    @Test func bundledTracesConformToTheSchema() throws {
        let schema = try Self.schema()
        let defs = try #require(schema["$defs"] as? [String: Any])
        let traces = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Traces").path)
            .map { Self.root.appendingPathComponent("Traces/\($0)/trace.jsonl") }
            .filter { FileManager.default.fileExists(atPath: $0.path) }
        #expect(traces.count >= 7)
        var checkedTypes = Set<String>()
        for url in traces {
            let text = try String(contentsOf: url, encoding: .utf8)
            var perType: [String: Int] = [:]
            for (i, line) in text.split(separator: "\n").enumerated() {
                let obj = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let type = try #require(obj["type"] as? String, "\(url.lastPathComponent):\(i + 1) has no type")
                perType[type, default: 0] += 1
                guard perType[type]! <= 20 else { continue }        // a sample of each type is enough here
                let def = try #require(defs[type] as? [String: Any], "\(url.path):\(i + 1): type \(type) not in schema")
                checkedTypes.insert(type)
                let v = Self.violations(obj, def, defs: defs, path: "\(url.deletingLastPathComponent().lastPathComponent):\(i + 1)")
                #expect(v.isEmpty, "\(v.prefix(5))")
            }
        }
        // The bundled traces exercise every event type of v1.
        for t in ["header", "gnss", "wifi", "cell", "acc", "gyro", "mag", "acoustic", "peer_range", "photo", "gt"] {
            #expect(checkedTypes.contains(t), "no bundled trace has a \(t) line")
        }
    }

    /// The checker itself can fail: a wrong key, a missing required key, a wrong type.
    @Test func checkerRejectsDrift() throws {
        let defs = try #require(Self.schema()["$defs"] as? [String: Any])
        let gnss = try #require(defs["gnss"] as? [String: Any])
        let good: [String: Any] = ["t": 1.0, "type": "gnss", "lat": 48.1, "lon": 11.5, "acc": 5.0]
        #expect(Self.violations(good, gnss, defs: defs, path: "").isEmpty)
        var extra = good; extra["accuracy"] = 5.0
        #expect(!Self.violations(extra, gnss, defs: defs, path: "").isEmpty)
        var missing = good; missing["acc"] = nil
        #expect(!Self.violations(missing, gnss, defs: defs, path: "").isEmpty)
        var wrongType = good; wrongType["lat"] = "48.1"
        #expect(!Self.violations(wrongType, gnss, defs: defs, path: "").isEmpty)
        var outOfRange = good; outOfRange["lat"] = 91.0
        #expect(!Self.violations(outOfRange, gnss, defs: defs, path: "").isEmpty)
    }
}
