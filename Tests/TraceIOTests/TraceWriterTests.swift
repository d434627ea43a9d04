import Testing
@testable import Replay
import Positioning
import TestSupport

@Suite struct TraceWriterTests {
    @Test func gnssLineIsDeterministicAndOrdered() {
        let e = TraceEvent(time: 1.5, payload: .gnss(GNSSFix(latitude: 48.1, longitude: 11.5, accuracy: 4)))
        #expect(TraceLineEncoder().encode(e) == #"{"t":1.5,"type":"gnss","lat":48.1,"lon":11.5,"acc":4}"#)
    }
    @Test func stringsAreEscaped() {
        #expect(jsonEscaped("a\"b\\c\n") == #""a\"b\\c\n""#)
    }
}
