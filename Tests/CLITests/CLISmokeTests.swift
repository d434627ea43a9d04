import Testing
import Foundation
import TestSupport

@Suite struct CLISmokeTests {
    @Test func versionRuns() throws {
        let r = try CLI.run(["version"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("posfuse"))
    }
}
