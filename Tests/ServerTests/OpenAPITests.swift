import Foundation
import Hummingbird
@testable import PosfuseServer
import Replay
import Testing
import Yams

/// docs/openapi.yaml against the server: the same routes, and every response of a set of
/// requests (each endpoint's successes and errors) valid against the schema the document
/// gives for its path, method and status.
@Suite(.serialized) struct OpenAPITests {
    nonisolated(unsafe) static let document: [String: Any] = {
        let text = (try? String(contentsOf: Fixture.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)) ?? ""
        return ((try? Yams.load(yaml: text)) as? [String: Any]) ?? [:]
    }()

    @Test func routesMatchTheServer() throws {
        let paths = try #require(Self.document["paths"] as? [String: Any])
        var documented = Set<String>()
        for (p, ops) in paths { for m in (ops as? [String: Any] ?? [:]).keys { documented.insert("\(m.uppercased()) \(p)") } }
        let served = Set(LocationServer.routes.map { "\($0.method) \($0.path)" })
        #expect(documented == served)
        #expect((Self.document["openapi"] as? String)?.hasPrefix("3.") == true)
    }

    @Test func responsesMatchTheirSchemas() async throws {
        let (store, cleanup) = try Stores.sqlite()
        let t = try TestServer(store: store) { $0.maxBodyBytes = 4000 }
        let record = jsonBytes(RefineEndpointTests.record)
        let requests: [(HTTPRequest.Method, String, [UInt8]?)] = [
            (.post, "/v1/geolocate", Fixture.geolocateBody()),                           // 404
            (.post, "/v2/geosubmit", Fixture.submission(Fixture.square)),                // 200 {}
            (.post, "/v1/geolocate", try Fixture.bytes("geolocate-request.json")),       // 200
            (.post, "/v1/geolocate", Array("nope".utf8)),                                // 400
            (.post, "/v2/geosubmit", Array("{}".utf8)),                                  // 400
            (.post, "/v2/geosubmit", Fixture.submission(Array(repeating: Fixture.center, count: 40))),   // 413
            (.post, "/v1/refine", record),                                               // 200 Feature
            (.post, "/v1/refine", Array("{\"type\": \"FeatureCollection\", \"features\": [{}]}".utf8)),  // 200 collection
            (.post, "/v1/refine", Array("{\"lat\": 1}".utf8)),                           // 400 error Feature
            (.post, "/v1/refine", Array("[".utf8)),                                      // 400 Error
            (.get, "/health", nil), (.get, "/metrics", nil),
        ]
        let replies = try await t.run(requests)
        let paths = try #require(Self.document["paths"] as? [String: Any])
        var statuses = Set<Int>()
        for ((m, uri, _), r) in zip(requests, replies) {
            statuses.insert(r.status)
            let path = String(uri.split(separator: "?")[0])
            let op = try #require((paths[path] as? [String: Any])?[m.rawValue.lowercased()] as? [String: Any], "\(m) \(path) undocumented")
            var resp = try #require((op["responses"] as? [String: Any])?["\(r.status)"] as? [String: Any], "\(m) \(path) \(r.status) undocumented")
            if let ref = resp["$ref"] as? String { resp = try #require(Self.resolve(ref)) }
            let content = try #require(resp["content"] as? [String: Any])
            if let json = content["application/json"] as? [String: Any] {
                let body = try JSONSerialization.jsonObject(with: Data(r.body.utf8), options: [.fragmentsAllowed])
                let problems = Self.validate(body, json["schema"] as? [String: Any] ?? [:], at: "$")
                #expect(problems.isEmpty, "\(m) \(path) \(r.status): \(problems) in \(r.body.prefix(300))")
            } else {
                #expect(content["text/plain"] != nil && !r.body.isEmpty)
            }
        }
        #expect(statuses.isSuperset(of: [200, 400, 404, 413]))
        try await cleanup()
    }

    static func resolve(_ ref: String) -> [String: Any]? {
        var node: Any = document
        for part in ref.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] as Any }
        return node as? [String: Any]
    }

    /// The subset of JSON Schema the document uses: $ref, type, nullable, required, properties,
    /// items, enum, oneOf, minItems, maxProperties. Returns the violations.
    static func validate(_ v: Any, _ schemaIn: [String: Any], at path: String) -> [String] {
        var schema = schemaIn
        if let ref = schema["$ref"] as? String { schema = resolve(ref) ?? [:] }
        if v is NSNull { return schema["nullable"] as? Bool == true ? [] : ["\(path): null"] }
        if let alternatives = schema["oneOf"] as? [[String: Any]] {
            let ok = alternatives.filter { validate(v, $0, at: path).isEmpty }.count
            return ok == 1 ? [] : ["\(path): matches \(ok) of oneOf"]
        }
        var out: [String] = []
        let isBool = v is Bool && String(describing: type(of: v)).contains("Bool")
        switch schema["type"] as? String {
        case "object":
            guard let o = v as? [String: Any] else { return ["\(path): not an object"] }
            for r in schema["required"] as? [String] ?? [] where o[r] == nil { out.append("\(path).\(r) missing") }
            if let max = schema["maxProperties"] as? Int, o.count > max { out.append("\(path): \(o.count) members > \(max)") }
            for (k, s) in schema["properties"] as? [String: Any] ?? [:] {
                if let x = o[k], let s = s as? [String: Any] { out += validate(x, s, at: "\(path).\(k)") }
            }
        case "array":
            guard let a = v as? [Any] else { return ["\(path): not an array"] }
            if let min = schema["minItems"] as? Int, a.count < min { out.append("\(path): fewer than \(min) items") }
            if let s = schema["items"] as? [String: Any] { for (i, x) in a.enumerated() { out += validate(x, s, at: "\(path)[\(i)]") } }
        case "string": if !(v is String) { out.append("\(path): not a string") }
        case "number": if !(v is NSNumber) || isBool { out.append("\(path): not a number") }
        case "integer":
            if let n = v as? NSNumber, !isBool, n.doubleValue == n.doubleValue.rounded() {} else { out.append("\(path): not an integer") }
        case "boolean": if !isBool { out.append("\(path): not a boolean") }
        default: break
        }
        if let e = schema["enum"] as? [Any], !e.contains(where: { "\($0)" == "\(v)" }) { out.append("\(path): \(v) not in \(e)") }
        return out
    }
}
