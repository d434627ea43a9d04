import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
import Replay
import TestSupport

/// The one XML escaper: what goes in comes back out of a real XML parser, in an attribute and
/// in element content, except the control characters XML 1.0 cannot carry (dropped).
@Suite struct XMLTextTests {
    final class Grab: NSObject, XMLParserDelegate {
        var attribute: String?
        var text = ""
        var failed = false
        func parser(_ p: XMLParser, didStartElement e: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            if e == "x" { attribute = attributes["a"] }
        }
        func parser(_ p: XMLParser, foundCharacters s: String) { text += s }
        func parser(_ p: XMLParser, parseErrorOccurred e: Error) { failed = true }
    }

    func roundTrip(_ s: String) -> (attribute: String?, text: String, ok: Bool) {
        let doc = "<?xml version=\"1.0\"?><x a=\"\(XMLText.escape(s))\">\(XMLText.escape(s))</x>"
        let p = XMLParser(data: Data(doc.utf8))
        let g = Grab()
        p.delegate = g
        let ok = withExtendedLifetime(g) { p.parse() }
        return (g.attribute, g.text, ok && !g.failed)
    }

    @Test func entitiesAndWhitespaceSurviveInAttributesAndText() {
        let s = "a&b<c>d\"e'f\tg\nh\ri ü 🚶"
        let r = roundTrip(s)
        #expect(r.ok)
        #expect(r.attribute == s)   // literal tab/LF/CR would have been folded to spaces here
        #expect(r.text == s)        // a literal CR would have become LF here
    }

    @Test func forbiddenControlCharactersAreDropped() {
        let r = roundTrip("a\u{0}b\u{1}c\u{1B}d\u{1F}e")
        #expect(r.ok)
        #expect(r.attribute == "abcde")
        #expect(r.text == "abcde")
        #expect(XMLText.escape("\u{7}") == "")
    }
}
