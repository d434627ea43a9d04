/// Whom a fix, a measurement or a truth sample belongs to: a phone (its device id) or an object
/// a phone photographed and CamLoc located. Fixes, events and results carry a subject as its
/// text (`id`: the trace format's `device`, the results' `subject`), where an object is written
/// `object:<name>`; this type is the one place that rule lives. Objects are never phones: the
/// filters do not fuse them, and the scorer scores them apart (against a static truth).
public enum Subject: Hashable, Sendable {
    case phone(String)
    case object(String)

    /// The text prefix of an object subject.
    public static let objectPrefix = "object:"

    /// The subject written as `id`.
    public init(_ id: String) {
        self = Self.isObject(id) ? .object(String(id.dropFirst(Self.objectPrefix.count))) : .phone(id)
    }
    /// The subject as text (`object:<name>` for an object).
    public var id: String {
        switch self {
        case .phone(let d): return d
        case .object(let o): return Self.objectPrefix + o
        }
    }
    public var isObject: Bool { if case .object = self { return true }; return false }
    /// Whether the subject written as `id` is an object.
    @inlinable public static func isObject(_ id: String) -> Bool { id.hasPrefix(objectPrefix) }
}
