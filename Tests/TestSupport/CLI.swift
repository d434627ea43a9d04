import Foundation

/// End-to-end tests run the built `posfuse` binary (`scripts/test.sh` builds it before the tests).
package enum CLI {
    /// `.build/<config>/posfuse` next to the test bundle, else `<root>/.build/debug/posfuse`.
    package static var binary: URL {
        let bundle = Bundle.main.bundleURL
        for dir in [bundle.deletingLastPathComponent(), bundle] {
            let u = dir.appendingPathComponent("posfuse")
            if FileManager.default.isExecutableFile(atPath: u.path) { return u }
        }
        return root.appendingPathComponent(".build/debug/posfuse")
    }
    /// The package root: the default working directory of a run.
    package static var root: URL { PackagePaths.root }

    package struct Output {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }
    /// Runs `posfuse args…` in `cwd` (default: the package root) and waits for it.
    package static func run(_ args: [String], cwd: URL? = nil) throws -> Output {
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
