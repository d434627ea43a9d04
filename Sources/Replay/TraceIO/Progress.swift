import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-line progress display for long replays and imports, drawn on standard error.
///
/// It is shown only when standard error is a terminal (`isatty`) and the caller has not
/// asked for machine output (`--json`): in pipes, CI logs and tests it writes nothing.
/// Redraws are throttled to about 10 per second and to visible changes, so calling
/// `update` for every event is cheap. The line is erased by `finish()`.
///
/// Use: `let p = Progress(label: "replay trace.jsonl", total: fileBytes, enabled: !json)`,
/// then `p.update(completed: bytesRead)` (or pass `p.callback` to a Replayer/importer),
/// then `p.finish()`.
public final class Progress {
    public let label: String
    public private(set) var total: Int64?
    public private(set) var completed: Int64 = 0
    /// Whether anything is drawn (terminal and not disabled).
    public let isActive: Bool
    private var lastDraw: UInt64 = 0
    private var lastText = ""
    private let fd: Int32

    /// - Parameters:
    ///   - total: the amount of work (e.g. bytes or events), nil when unknown (a counter is shown).
    ///   - enabled: false for `--json` and other machine output.
    ///   - fileDescriptor: where to draw (standard error by default).
    public init(label: String, total: Int64? = nil, enabled: Bool = true, fileDescriptor: Int32 = 2) {
        self.label = label; self.total = total; self.fd = fileDescriptor
        isActive = enabled && isatty(fileDescriptor) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// Whether progress should be shown for a command: not with `--json`, only on a terminal.
    public static func shouldShow(json: Bool, fileDescriptor: Int32 = 2) -> Bool {
        !json && isatty(fileDescriptor) == 1
    }

    /// Report progress; `total` may be refined on the way.
    public func update(completed: Int64, total: Int64? = nil) {
        self.completed = completed
        if let total { self.total = total }
        guard isActive else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - lastDraw >= 100_000_000 || lastDraw == 0 else { return }
        lastDraw = now
        draw()
    }

    /// A closure form of `update` for progress callbacks (completed, total).
    public var callback: (Int64, Int64?) -> Void { { [self] c, t in update(completed: c, total: t) } }

    /// The text of the line for the current state (also used by tests).
    public func text(width: Int = 30) -> String {
        if let total, total > 0 {
            let f = min(1, max(0, Double(completed) / Double(total)))
            let filled = Int((f * Double(width)).rounded(.down))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            return "\(label) [\(bar)] \(Int((f * 100).rounded(.down)))%"
        }
        return "\(label) \(completed)"
    }

    private func draw() {
        let t = text()
        guard t != lastText else { return }
        lastText = t
        write("\r\u{1B}[2K" + t)
    }

    /// Erase the line (nothing when inactive).
    public func finish() {
        guard isActive, !lastText.isEmpty else { return }
        write("\r\u{1B}[2K")
        lastText = ""
    }

    private func write(_ s: String) {
        FileHandle(fileDescriptor: fd, closeOnDealloc: false).write(Data(s.utf8))
    }
}
