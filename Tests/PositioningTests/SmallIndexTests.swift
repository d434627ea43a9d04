import Testing
import Positioning

/// `SmallIndex`: the same answers as a dictionary below and past its linear limit.
@Suite struct SmallIndexTests {
    @Test func findsAsADictionaryDoes() {
        for n in [0, 1, SmallIndex<String>.linearLimit, SmallIndex<String>.linearLimit + 1, 50] {
            var index = SmallIndex<String>(), reference: [String: Int] = [:]
            for i in 0..<n {
                let key = "aa:bb:cc:00:00:\(i % 40)"            // repeats past 40: the later position wins
                index.append(key, at: i); reference[key] = i
            }
            for i in 0..<60 {
                let key = "aa:bb:cc:00:00:\(i)"
                #expect(index.find(key) == reference[key], "n \(n), \(key)")
            }
        }
    }
}
