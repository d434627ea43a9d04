import Testing
import Foundation
import TestSupport

@Suite struct ValidateCommandTests {
    static let header = #"{"type":"header","format":"posfuse-trace","version":1,"origin":{"lat":48.1,"lon":11.5,"h":500}}"#

    private func file(_ lines: [String]) throws -> URL {
        let u = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-validate-\(UUID().uuidString).jsonl")
        try Data(([Self.header] + lines).joined(separator: "\n").utf8).write(to: u)
        return u
    }

    @Test func malformedLineExits65WithFileLineAndReason() throws {
        let u = try file([#"{"t":0,"type":"gnss","lat":48,"lon":11,"acc":3}"#, #"{"t":1,"type":"gnss","lon":11,"acc":3}"#])
        defer { try? FileManager.default.removeItem(at: u) }
        let r = try CLI.run(["validate", u.path])
        #expect(r.status == 65)
        #expect(r.stderr.contains("\(u.path):3: missing key 'lat'"))
    }

    @Test func goodTracePrintsCountsPerTypeAndExits0() throws {
        let u = try file([#"{"t":0,"type":"gnss","lat":48,"lon":11,"acc":3}"#, #"{"t":0.01,"type":"acc","x":0,"y":0,"z":9.8}"#,
                          #"{"t":0.02,"type":"acc","x":0,"y":0,"z":9.8}"#, #"{"t":0.03,"type":"hologram"}"#])
        defer { try? FileManager.default.removeItem(at: u) }
        let r = try CLI.run(["validate", u.path])
        #expect(r.status == 0)
        #expect(r.stdout.contains("3 events"))
        let rows = r.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(rows.contains(["acc", "2"]) && rows.contains(["gnss", "1"]))
        #expect(r.stdout.contains("hologram"))

        let j = try CLI.run(["validate", u.path, "--json"])
        #expect(j.status == 0)
        let o = try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any]
        #expect(o?["events"] as? Int == 3)
        #expect((o?["by_type"] as? [String: Int]) == ["acc": 2, "gnss": 1])
        #expect((o?["unknown_types"] as? [String: Int]) == ["hologram": 1])
    }

    @Test func usageErrorsExit64() throws {
        #expect(try CLI.run(["validate"]).status == 64)
        #expect(try CLI.run(["validate", "/nonexistent/trace.jsonl"]).status == 64)
        let h = try CLI.run(["validate", "--help"])
        #expect(h.status == 0 && h.stdout.contains("Example"))
    }
}
