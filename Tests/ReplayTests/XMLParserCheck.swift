import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Well-formedness check of generated XML with Foundation's parser.
struct XMLParserCheck {
    let ok: Bool
    init(_ text: String) { ok = XMLParser(data: Data(text.utf8)).parse() }
}
