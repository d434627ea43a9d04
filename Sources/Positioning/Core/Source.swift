/// The name of an estimate's producer, used throughout replay output, the result
/// database and the CLI contract (`docs/cli.md`).
public enum Source: String, CaseIterable, Sendable, Codable, Hashable, Comparable {
    case gnss
    case cell
    case cellTA = "cell-ta"
    case wcl
    case rss
    case hapel
    case fingerprint
    case tdoa
    case peer
    case camloc
    case ekf
    case ukf
    case pf
    case smoother

    /// Stand-alone estimators, as opposed to fusion filters.
    public var isFusion: Bool { [.ekf, .ukf, .pf, .smoother].contains(self) }

    public static func < (a: Source, b: Source) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}
