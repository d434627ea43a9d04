import Testing
import Foundation

/// End-to-end tests run the built `posfuse` binary.
enum CLI {
    static var binary: URL {
        // .build/<config>/posfuse next to the xctest bundle.
        let bundle = Bundle.main.bundleURL
        for dir in [bundle.deletingLastPathComponent(), bundle] {
            let u = dir.appendingPathComponent("posfuse")
            if FileManager.default.isExecutableFile(atPath: u.path) { return u }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/posfuse")
    }
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
    struct Output { var status: Int32; var stdout: String; var stderr: String }
    static func run(_ args: [String], cwd: URL? = nil) throws -> Output {
        let p = Process()
        p.executableURL = binary
        p.arguments = args
        p.currentDirectoryURL = cwd ?? root
        let o = Pipe(), e = Pipe()
        p.standardOutput = o; p.standardError = e
        try p.run()
        let od = o.fileHandleForReading.readDataToEndOfFile()
        let ed = e.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Output(status: p.terminationStatus, stdout: String(decoding: od, as: UTF8.self), stderr: String(decoding: ed, as: UTF8.self))
    }
}

@Suite struct CLISmokeTests {
    @Test func versionRuns() throws {
        let r = try CLI.run(["version"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("posfuse"))
    }
}
