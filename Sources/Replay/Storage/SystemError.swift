import Foundation
import GRDB
import TraceIO

/// Any error from Foundation, POSIX or SQLite turned into one line and an exit status
/// (sysexits: 74 for I/O, 65 for a file whose content is not what it should be), so that the
/// CLI never prints a raw `NSError` dump and never exits 1 (reserved for accuracy regressions).
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// 74 (I/O) or 65 (bad data).
    public var status: Int32

    public init(_ error: any Error, file: String? = nil) {
        var path = file
        var reason: String
        var status: Int32 = 74
        switch error {
        case let e as TraceDataError:
            path = path ?? e.file
            reason = e.reason
            status = e.code == .io ? 74 : 65
        case let e as DatabaseError:
            reason = "SQLite: \(e.message ?? "\(e.resultCode)")"
            switch e.resultCode.primaryResultCode {
            case .SQLITE_NOTADB, .SQLITE_CORRUPT, .SQLITE_SCHEMA, .SQLITE_MISMATCH, .SQLITE_FORMAT: status = 65
            default: status = 74
            }
        case let e as CocoaError:
            if path == nil { path = e.userInfo[NSFilePathErrorKey] as? String ?? (e.userInfo[NSURLErrorKey] as? URL)?.path }
            reason = Self.reason(code: e.code, underlying: e.userInfo[NSUnderlyingErrorKey] as? NSError)
            if [.fileReadCorruptFile, .fileReadInapplicableStringEncoding, .propertyListReadCorrupt].contains(e.code) { status = 65 }
        case let e as POSIXError:
            reason = String(cString: strerror(e.code.rawValue))
        default:
            let ns = error as NSError
            if path == nil { path = ns.userInfo[NSFilePathErrorKey] as? String }
            if ns.domain == NSPOSIXErrorDomain {
                reason = String(cString: strerror(Int32(ns.code)))
            } else if ns.domain == NSCocoaErrorDomain {
                reason = Self.reason(code: CocoaError.Code(rawValue: ns.code), underlying: ns.userInfo[NSUnderlyingErrorKey] as? NSError)
            } else {
                reason = "\(error)"
            }
        }
        reason = reason.split(whereSeparator: \.isNewline).joined(separator: " ")
        description = (path.map { "\($0): " } ?? "") + reason
        self.status = status
    }

    private static func reason(code: CocoaError.Code, underlying: NSError?) -> String {
        if let u = underlying, u.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(u.code))) }
        switch code {
        case .fileNoSuchFile, .fileReadNoSuchFile: return "no such file"
        case .fileReadNoPermission, .fileWriteNoPermission: return "permission denied"
        case .fileWriteOutOfSpace: return "no space left on device"
        case .fileWriteVolumeReadOnly: return "read-only file system"
        case .fileWriteFileExists: return "file exists"
        case .fileReadCorruptFile: return "corrupt or unreadable content"
        case .fileReadInapplicableStringEncoding: return "not valid UTF-8 text"
        case .fileReadTooLarge: return "too large"
        default: return code.rawValue >= 512 && code.rawValue < 1024 ? "write error (Cocoa error \(code.rawValue))" : "I/O error (Cocoa error \(code.rawValue))"
        }
    }
}
