/// `--help` text: paragraphs are written wrapped in the source; ArgumentParser wraps again at
/// the terminal width, so source line breaks inside a paragraph would show as ragged lines.
extension String {
    /// Joins the lines of each paragraph and of each list item ("- ", "* ", "1. ", continued by
    /// lines indented three spaces). Blank lines and other indented lines (examples) stay as
    /// they are; example lines are kept under 80 columns in the source.
    var reflowed: String {
        var out: [String] = []
        enum Previous { case none, text, item }
        var previous = Previous.none
        for line in split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let isItem = line.hasPrefix("- ") || line.hasPrefix("* ") || line.range(of: #"^[0-9]+\. "#, options: .regularExpression) != nil
            let continuesItem = previous == .item && line.hasPrefix("   ") && !line.hasPrefix("    ")
            if continuesItem, let last = out.popLast() {
                out.append(last + " " + line.dropFirst(3))
            } else if !line.isEmpty, !line.hasPrefix(" "), !isItem, previous == .text, let last = out.popLast() {
                out.append(last + " " + line)
            } else {
                out.append(line)
                previous = line.isEmpty || line.hasPrefix(" ") ? .none : (isItem ? .item : .text)
            }
        }
        return out.joined(separator: "\n")
    }
}
