import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An output file written atomically and checked: bytes go to a hidden temporary file beside
/// the target (`.<name>.tmp-<pid>-<n>`), and `commit()` renames it over the target, so a
/// reader (or a run killed midway) sees either the old file, no file, or the complete new
/// one — never a half-written one. Every `write(2)` result is checked; the first failure
/// (disk full, `/dev/full`, a closed pipe) is kept and thrown by `commit()` as a
/// `TraceDataError` with code `io` (CLI exit 74).
///
/// Targets that are not regular files (`/dev/stdout`, `/dev/full`, a FIFO) are written in
/// place: there is nothing to rename over. Rename is atomic against a killed process on
/// every POSIX file system; it is not a guarantee against power loss (no fsync).
public final class OutputFile {
    public let path: String
    private var fd: Int32
    private let temp: String?
    private var failure: String?
    private var done = false
    nonisolated(unsafe) private static var counter = 0
    private static let lock = NSLock()

    /// Opens `path` for writing (creating the parent folder is the caller's business).
    public init(path: String) throws {
        self.path = path
        var st = stat()
        let exists = stat(path, &st) == 0
        if exists && (st.st_mode & S_IFMT) != S_IFREG {
            temp = nil
            fd = open(path, O_WRONLY | O_CLOEXEC)
        } else {
            let dir = (path as NSString).deletingLastPathComponent
            let name = (path as NSString).lastPathComponent
            Self.lock.lock(); Self.counter += 1; let n = Self.counter; Self.lock.unlock()
            let t = (dir.isEmpty ? "" : dir + "/") + ".\(name).tmp-\(getpid())-\(n)"
            temp = t
            let mode: mode_t = exists ? (st.st_mode & 0o777) : 0o644
            fd = open(t, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        }
        guard fd >= 0 else {
            throw TraceDataError(file: path, line: 0, reason: "cannot write: \(String(cString: strerror(errno)))", code: .io)
        }
    }

    private init(fd: Int32, path: String) { self.fd = fd; self.path = path; temp = nil; ownsFD = false }
    private var ownsFD = true

    /// Standard output, written in place with the same error checks (`commit()` does not close it).
    public static func standardOutput() -> OutputFile { OutputFile(fd: 1, path: "stdout") }

    /// Writes buffered bytes now and reports the first error so far (for streaming outputs).
    public var failed: Bool { failure != nil }

    /// Appends bytes (errors are kept for `commit()`).
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, !done, var p = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            #if canImport(Glibc)
            let r = Glibc.write(fd, p, left)
            #else
            let r = Darwin.write(fd, p, left)
            #endif
            if r < 0 {
                if errno == EINTR { continue }
                failure = "write error: \(String(cString: strerror(errno)))"
                return
            }
            left -= r; p += r
        }
    }

    public func write(_ bytes: [UInt8]) { bytes.withUnsafeBytes { write($0) } }
    public func write(_ data: Data) { data.withUnsafeBytes { write($0) } }
    public func write(_ text: String) { var s = text; s.withUTF8 { write(UnsafeRawBufferPointer($0)) } }

    /// Closes the file and puts it in place; throws the first write error (the target is then
    /// left untouched and the temporary file removed).
    public func commit() throws {
        guard !done else { return }
        done = true
        if ownsFD, close(fd) != 0, failure == nil { failure = "write error: \(String(cString: strerror(errno)))" }
        if let f = failure {
            if let t = temp { unlink(t) }
            throw TraceDataError(file: path, line: 0, reason: f, code: .io)
        }
        if let t = temp, rename(t, path) != 0 {
            let m = String(cString: strerror(errno))
            unlink(t)
            throw TraceDataError(file: path, line: 0, reason: "cannot write: \(m)", code: .io)
        }
    }

    /// Closes and removes the temporary file without touching the target.
    public func abandon() {
        guard !done else { return }
        done = true
        if ownsFD { close(fd) }
        if let t = temp { unlink(t) }
    }

    deinit { abandon() }

    /// Writes `data` to `url` atomically (see the type's documentation).
    public static func write(_ data: Data, to url: URL) throws {
        let f = try OutputFile(path: url.path)
        f.write(data)
        try f.commit()
    }
}
