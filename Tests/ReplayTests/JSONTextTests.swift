import Foundation
import Testing
@testable import Replay

/// `JSONText`: the refine output writer agrees with JSONSerialization (parsed back, equal values),
/// sorts keys, escapes what RFC 8259 requires and never writes a non-finite number.
@Suite struct JSONTextTests {
    @Test func roundTripsThroughJSONSerialization() throws {
        let value: [String: Any] = [
            "b": [1, 2.5, -0.001, 1e-300, 6.02214076e23, Int.max, "x"],
            "a": ["quote \" backslash \\ newline \n tab \t bell \u{07} é 𝄞", NSNull(), true, false],
            "nested": ["z": ["k": 3.0], "y": [] as [Any], "w": [:] as [String: Any]],
            "num": NSNumber(value: 42.25), "flag": NSNumber(value: true),
        ]
        let text = JSONText.string(value)
        let back = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary)
        let reference = try #require(try JSONSerialization.jsonObject(
            with: JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])) as? NSDictionary)
        #expect(back.isEqual(reference), "\(text)")
        #expect(text.hasPrefix("{\"a\":[") && text.contains("\"nested\":{\"w\":{},\"y\":[],\"z\":{\"k\":3}}"), "\(text)")
        #expect(text.contains("\\u0007") && !text.contains("\u{07}"))
    }

    @Test func nonFiniteNumbersBecomeNull() {
        #expect(JSONText.string([Double.nan, Double.infinity, -Double.infinity, 1.5] as [Any]) == "[null,null,null,1.5]")
    }
}
