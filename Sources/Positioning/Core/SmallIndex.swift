/// Positions of keys in a list the caller keeps, found by linear search while there are few keys
/// and by a dictionary past `linearLimit`. For the handful of keys of one scan or one request
/// (APs, BSSIDs), comparing a few keys costs less than hashing each of them into a growing
/// dictionary (callgrind: a third of `WCLEstimator.mergedAnchors`' instructions for 8 APs went
/// to dictionary finds and resizes). Inlinable, so that other modules get it specialized.
///
/// serve's geolocate tests membership the same way against lists it already has (a request's
/// kept APs for repeats, the store's known APs), with the comparison written in place
/// (`GeoAPI.query`, `GeoAPI.locate`): measured with this type instead (`serve-instructions.sh`,
/// release), geolocate cost 11.6k more instructions per request (484.4k against 472.8k): the
/// index's own list is an allocation and a retain per key that comparing against the existing
/// list does not need; without `@inlinable`, 44k more.
public struct SmallIndex<Key: Hashable> {
    /// Keys kept in a list up to this many; past it, in a dictionary.
    @inlinable public static var linearLimit: Int { 16 }
    @usableFromInline var keys: [(key: Key, at: Int)] = []
    @usableFromInline var byKey: [Key: Int]?

    @inlinable public init() {}

    /// The position given with `key`, or nil when it was never added.
    @inlinable public func find(_ key: Key) -> Int? {
        if let byKey { return byKey[key] }
        for k in keys where k.key == key { return k.at }
        return nil
    }

    /// Adds `key` at `position` (a key added twice: the later position).
    @inlinable public mutating func append(_ key: Key, at position: Int) {
        if byKey != nil {
            byKey![key] = position
        } else if keys.count < Self.linearLimit {
            keys.append((key, position))
        } else {
            var d = [Key: Int](minimumCapacity: 2 * keys.count + 2)
            for k in keys { d[k.key] = k.at }
            d[key] = position
            byKey = d; keys = []
        }
    }
}
