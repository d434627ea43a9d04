import Foundation
@testable import PosfuseServer
import Testing
import TestSupport
import Yams

/// The service's error reasons and domains are the Google error body's wire strings: pinned here,
/// and docs/serve.md and docs/openapi.yaml must list exactly the ones the server can send.
@Suite struct ErrorReasonTests {
    typealias Reason = GeoAPI.APIError.Reason

    @Test func reasonsKeepTheirStrings() {
        let expected: [Reason: String] = [
            .parseError: "parseError", .notFound: "notFound", .keyInvalid: "keyInvalid",
            .userRateLimitExceeded: "userRateLimitExceeded", .requestTooLarge: "requestTooLarge",
            .requestTimeout: "requestTimeout", .backendError: "backendError",
            .methodNotAllowed: "methodNotAllowed", .badRequest: "badRequest",
        ]
        #expect(Set(expected.keys) == Set(Reason.allCases))
        for r in Reason.allCases { #expect(r.rawValue == expected[r]) }
        #expect(GeoAPI.APIError.Domain.allCases.map(\.rawValue) == ["global", "geolocation", "usageLimits"])
        // The body carries the strings.
        let body = GeoAPI.APIError.keyInvalid.body["error"] as? [String: Any]
        let first = (body?["errors"] as? [[String: Any]])?.first
        #expect(first?["reason"] as? String == "keyInvalid" && first?["domain"] as? String == "usageLimits")
    }

    @Test func docsListEveryReason() throws {
        let serve = try DocTables.doc("serve.md")
        let reasons = DocTables.column(2, afterLineContaining: "GeoAPI.APIError.Reason", in: serve)
        #expect(Set(reasons) == Set(Reason.allCases.map(\.rawValue)))
        let domains = DocTables.column(1, afterLineContaining: "GeoAPI.APIError.Reason", in: serve)
        #expect(Set(domains) == Set(GeoAPI.APIError.Domain.allCases.map(\.rawValue)))
        let api = try Yams.load(yaml: try DocTables.doc("openapi.yaml")) as? [String: Any]
        let errorSchema = ((api?["components"] as? [String: Any])?["schemas"] as? [String: Any])?["Error"] as? [String: Any]
        let enumList = try #require(Self.reasonEnum(errorSchema))
        #expect(Set(enumList) == Set(Reason.allCases.map(\.rawValue)))
    }

    /// The `reason` enum anywhere under the schema.
    static func reasonEnum(_ node: Any?) -> [String]? {
        if let d = node as? [String: Any] {
            if let r = d["reason"] as? [String: Any], let e = r["enum"] as? [String] { return e }
            for v in d.values { if let e = reasonEnum(v) { return e } }
        } else if let a = node as? [Any] {
            for v in a { if let e = reasonEnum(v) { return e } }
        }
        return nil
    }
}
