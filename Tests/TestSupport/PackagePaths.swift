import Foundation

/// Where the tests find things: the package root, the real recordings beside it, scratch folders.
package enum PackagePaths {
    /// The package root (this file is `<root>/Tests/TestSupport/PackagePaths.swift`).
    package static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A scratch folder `posfuse-test-<pid>-<name>` in the temporary directory (created).
    package static func temporaryFolder(_ name: String) -> URL {
        let d = FileManager.default.temporaryDirectory
            .appendingPathComponent("posfuse-test-\(ProcessInfo.processInfo.processIdentifier)-\(name)")
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }
}

/// The real recordings: `$POSFUSE_SHARED_DATA` when set and not empty, else `<package root>/../shared/data`.
/// They are never part of the repository; a test that needs one asks here and skips (returns
/// early, saying nothing is wrong) when the answer is nil.
package enum SharedData {
    /// The recordings folder, or nil when it is absent.
    package static var folder: URL? {
        if let e = ProcessInfo.processInfo.environment["POSFUSE_SHARED_DATA"], !e.isEmpty {
            return URL(fileURLWithPath: e)
        }
        let u = PackagePaths.root.deletingLastPathComponent().appendingPathComponent("shared/data")
        return FileManager.default.fileExists(atPath: u.path) ? u : nil
    }
    /// `<folder>/<sub>` when it exists, else nil.
    package static func url(_ sub: String) -> URL? {
        guard let f = folder?.appendingPathComponent(sub), FileManager.default.fileExists(atPath: f.path) else { return nil }
        return f
    }
    /// `url(sub)?.path`.
    package static func path(_ sub: String) -> String? { url(sub)?.path }
}
