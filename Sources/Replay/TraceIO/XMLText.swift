/// Escaping of text for XML 1.0, the one escaper of the package (KML/GPX exports, JUnit reports).
///
/// Safe in element content and in quoted attribute values alike:
/// - the five predefined entities: `&` `<` `>` `"` `'`;
/// - tab, line feed and carriage return become character references (`&#9;` `&#10;` `&#13;`):
///   written literally, a parser folds them to spaces inside attribute values (XML 1.0 §3.3.3,
///   attribute-value normalisation) and turns CR into LF everywhere (§2.11, end-of-line handling);
///   as references they come back exactly;
/// - every other C0 control character (U+0000–U+001F) is dropped: XML 1.0 does not allow it in a
///   document at all, not even as a character reference (§2.2, production `Char`).
public enum XMLText {
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for u in s.unicodeScalars {
            switch u {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t": out += "&#9;"
            case "\n": out += "&#10;"
            case "\r": out += "&#13;"
            default:
                if u.value < 0x20 { continue }
                out.unicodeScalars.append(u)
            }
        }
        return out
    }
}
