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

    /// Declaration order (the order of `allCases`).
    public static func < (a: Source, b: Source) -> Bool { a.ordinal < b.ordinal }

    // Equality and hashing by case, not by raw value: the default of a `String`-backed enum hashes
    // its name (≈ 310 instructions per dictionary look-up of a `[Source: …]`, a dozen of them
    // per refined report, callgrind, docs/refine.md). Same equality; no output depends on a
    // dictionary's order (hash seeds differ from process to process).
    public static func == (a: Source, b: Source) -> Bool { a.ordinal == b.ordinal }
    public func hash(into hasher: inout Hasher) { hasher.combine(ordinal) }

    /// The case's position in `allCases`.
    @inline(__always) var ordinal: UInt8 {
        switch self {
        case .gnss: return 0
        case .cell: return 1
        case .cellTA: return 2
        case .wcl: return 3
        case .rss: return 4
        case .hapel: return 5
        case .fingerprint: return 6
        case .tdoa: return 7
        case .peer: return 8
        case .camloc: return 9
        case .ekf: return 10
        case .ukf: return 11
        case .pf: return 12
        case .smoother: return 13
        }
    }
}
