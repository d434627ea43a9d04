import Foundation

/// Reads the Markdown tables of the repository's docs, for tests that check a document lists
/// what the code has.
package enum DocTables {
    /// The text of `docs/<name>`.
    package static func doc(_ name: String) throws -> String {
        try String(contentsOf: PackagePaths.root.appendingPathComponent("docs/\(name)"), encoding: .utf8)
    }

    /// Column `column` (0-based), backticks removed, of every body row of the first table after
    /// the first line that contains `marker`.
    package static func column(_ column: Int, afterLineContaining marker: String, in text: String) -> [String] {
        let lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { $0.contains(marker) }) else { return [] }
        var cells: [String] = []
        var inTable = false
        for line in lines[(start + 1)...] {
            let t = line.trimmingCharacters(in: .whitespaces)
            guard t.hasPrefix("|") else { if inTable { break } else { continue } }
            inTable = true
            let parts = t.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard column < parts.count, !parts.allSatisfy({ $0.allSatisfy { "-: ".contains($0) } }) else { continue }
            cells.append(parts[column].replacingOccurrences(of: "`", with: ""))
        }
        return Array(cells.dropFirst())   // the header row
    }
}
