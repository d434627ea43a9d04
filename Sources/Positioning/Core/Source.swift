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
    /// Bluetooth LE beacons' weighted centroid (`BLEStage`).
    case ble
    case tdoa
    case peer
    case camloc
    case ekf
    case ukf
    case pf
    case smoother

    /// Stand-alone estimators, as opposed to fusion filters.
    public var isFusion: Bool {
        switch self {
        case .ekf, .ukf, .pf, .smoother: return true
        default: return false
        }
    }

    /// Declaration order (the order of `allCases`).
    public static func < (a: Source, b: Source) -> Bool { a.ordinal < b.ordinal }

    // Equality and hashing by case, not by raw value: the default of a `String`-backed enum hashes
    // its name (≈ 310 instructions per dictionary look-up of a `[Source: …]`, a dozen of them
    // per refined report, callgrind, docs/refine.md). Same equality; no output depends on a
    // dictionary's order (hash seeds differ from process to process).
    public static func == (a: Source, b: Source) -> Bool { a.ordinal == b.ordinal }
    public func hash(into hasher: inout Hasher) { hasher.combine(ordinal) }

    /// The number of cases (the last case's ordinal + 1; `SourceOrdinalTests` checks it is `allCases.count`).
    @inlinable public static var caseCount: Int { Int(Source.smoother.ordinal) + 1 }

    /// The case's position in `allCases`.
    @inlinable @inline(__always) public var ordinal: UInt8 {
        switch self {
        case .gnss: return 0
        case .cell: return 1
        case .cellTA: return 2
        case .wcl: return 3
        case .rss: return 4
        case .hapel: return 5
        case .fingerprint: return 6
        case .ble: return 7
        case .tdoa: return 8
        case .peer: return 9
        case .camloc: return 10
        case .ekf: return 11
        case .ukf: return 12
        case .pf: return 13
        case .smoother: return 14
        }
    }
}

/// A map from `Source` to `Value` stored by the case's position (`Source.ordinal`): a look-up is
/// an index, not a hash. `FusionTrack` keeps its per-source counters, gate runs and accuracy
/// scales in these (four `[Source: …]` dictionaries cost ≈ 3k instructions per refined report in
/// hashing, growth and copies: docs/refine.md, session 20). The slots are allocated on the first
/// write (an empty map allocates nothing); iteration is in declaration order. Inlinable, so the
/// code that uses it is specialised for its `Value` (a generic call across modules went through
/// the runtime's metadata look-ups and cost more than the hashing it replaces).
public struct SourceMap<Value>: Sequence {
    @usableFromInline var slots: ContiguousArray<Value?> = []

    @inlinable public init() {}

    @inlinable public subscript(key: Source) -> Value? {
        get { slots.isEmpty ? nil : slots[Int(key.ordinal)] }
        set {
            if slots.isEmpty { guard newValue != nil else { return }; slots = ContiguousArray(repeating: nil, count: Source.caseCount) }
            slots[Int(key.ordinal)] = newValue
        }
    }

    @inlinable public subscript(key: Source, default value: @autoclosure () -> Value) -> Value {
        get { self[key] ?? value() }
        _modify {
            if slots.isEmpty { slots = ContiguousArray(repeating: nil, count: Source.caseCount) }
            let i = Int(key.ordinal)
            if slots[i] == nil { slots[i] = value() }
            yield &slots[i]!
        }
    }

    /// No source has a value.
    @inlinable public var isEmpty: Bool { slots.allSatisfy { $0 == nil } }
    /// Removes every value (keeps the storage).
    @inlinable public mutating func removeAll() {
        guard !slots.isEmpty else { return }
        for i in slots.indices { slots[i] = nil }
    }

    /// The (source, value) pairs in declaration order.
    public struct Iterator: IteratorProtocol {
        @usableFromInline let slots: ContiguousArray<Value?>
        @usableFromInline var i = 0
        @inlinable init(_ slots: ContiguousArray<Value?>) { self.slots = slots }
        @inlinable public mutating func next() -> (source: Source, value: Value)? {
            while i < slots.count {
                defer { i += 1 }
                if let v = slots[i] { return (Source.allCases[i], v) }
            }
            return nil
        }
    }
    @inlinable public func makeIterator() -> Iterator { Iterator(slots) }

    /// The same pairs as a dictionary (the public counters' type).
    @inlinable public var dictionary: [Source: Value] {
        var out: [Source: Value] = [:]
        for (s, v) in self { out[s] = v }
        return out
    }
}

extension SourceMap: Sendable where Value: Sendable {}
