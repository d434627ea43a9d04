import Testing
@testable import Positioning

/// `Source.ordinal` is a hand-written switch (hashing, equality and `<` go by it, and the fusion
/// stage's source masks shift a `UInt16` by it): it must be each case's position in `allCases`,
/// so `<` keeps the declaration order that sorted outputs (`sources_used`) rely on, and fit in
/// the masks' 16 bits.
@Suite struct SourceOrdinalTests {
    @Test func ordinalIsThePositionInAllCases() {
        for (i, s) in Source.allCases.enumerated() {
            #expect(Int(s.ordinal) == i, "\(s): ordinal \(s.ordinal), position \(i)")
        }
        #expect(Source.allCases.count <= 16)
        #expect(Source.allCases == Source.allCases.sorted())
        #expect(Source.caseCount == Source.allCases.count)
    }

    /// `SourceMap` behaves as a `[Source: Value]` dictionary: the same values after the same
    /// writes (a seeded sequence of sets, removals and `default:` updates), iteration in
    /// declaration order, an untouched map empty.
    @Test func sourceMapActsAsADictionary() {
        var map = SourceMap<Int>(), dict: [Source: Int] = [:]
        #expect(map.isEmpty && map[.gnss] == nil && Array(map).isEmpty)
        map[.wcl] = nil                                     // removing from an empty map allocates nothing
        #expect(map.isEmpty)
        var g = SplitMix64(seed: 7)
        for step in 0..<500 {
            let s = Source.allCases[Int(g.next() % UInt64(Source.caseCount))]
            switch g.next() % 4 {
            case 0: map[s] = step; dict[s] = step
            case 1: map[s] = nil; dict[s] = nil
            case 2: map[s, default: 0] += 3; dict[s, default: 0] += 3
            default: if step % 97 == 0 { map.removeAll(); dict.removeAll() }
            }
            for c in Source.allCases { #expect(map[c] == dict[c]) }
            #expect(map.isEmpty == dict.isEmpty)
        }
        #expect(map.dictionary == dict)
        #expect(map.map(\.source) == dict.keys.sorted())
    }
}

/// `RAT` hashes and compares by the same kind of hand-written ordinal (a `CellID` key hashed its
/// radio's name): distinct per case, and equality still that of the cases.
@Suite struct RATOrdinalTests {
    @Test func ordinalIsThePositionInAllCases() {
        for (i, r) in RAT.allCases.enumerated() {
            #expect(Int(r.ordinal) == i, "\(r): ordinal \(r.ordinal), position \(i)")
            for s in RAT.allCases { #expect((r == s) == (r.rawValue == s.rawValue)) }
        }
        #expect(Set(RAT.allCases).count == RAT.allCases.count)
    }

    /// The ordinal's hash is the one both enums use (not the raw value's, which a
    /// `String`-backed enum would otherwise take from `RawRepresentable`).
    @Test func hashIsTheOrdinals() {
        func ordinalHash(_ o: UInt8) -> Int { var h = Hasher(); h.combine(o); return h.finalize() }
        for r in RAT.allCases { #expect(r.hashValue == ordinalHash(r.ordinal)) }
        for s in Source.allCases { #expect(s.hashValue == ordinalHash(s.ordinal)) }
    }
}
