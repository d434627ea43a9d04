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
