import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Well-formedness check of generated XML with Foundation's parser.
package struct XMLParserCheck {
    package let ok: Bool
    package init(_ text: String) {
        let p = XMLParser(stream: InputStream(data: Data(text.utf8)))
        let d = ErrorCatcher()
        p.delegate = d
        let r = withExtendedLifetime(d) { p.parse() }
        ok = r && !d.failed
    }
}

private final class ErrorCatcher: NSObject, XMLParserDelegate {
    var failed = false
    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) { failed = true }
}
