import Foundation
import Positioning
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a `TraceReader` treats bad lines.
public enum TraceReadMode: String, Sendable, CaseIterable {
    /// The first bad line throws `TraceDataError` (`posfuse validate`, `replay --strict`).
    case strict
    /// Bad lines are skipped and counted by reason in `TraceReader.stats`.
    case lenient
}

/// Counts kept while reading a trace.
public struct TraceReaderStats: Sendable, Equatable {
    /// Physical lines read so far (header, events, blank and bad lines).
    public var lines = 0
    /// Events delivered by `next()`.
    public var events = 0
    /// Delivered events per `type` name (`gnss`, `acc`, …).
    public var eventsByType: [String: Int] = [:]
    /// Lines skipped in lenient mode, by reason code (`invalid_json`, `missing_key`,
    /// `wrong_type`, `invalid_value`, `out_of_order`).
    public var skipped: [String: Int] = [:]
    /// Syntactically valid events of a type this reader does not know, by type name.
    /// Counted and skipped in both modes, never fatal.
    public var unknownTypes: [String: Int] = [:]
    /// Events whose `t` is smaller than the largest `t` of an earlier line (file order):
    /// reordered within the window, or skipped as `out_of_order` beyond it.
    public var outOfOrder = 0
    /// The first skipped lines (at most `TraceReaderStats.exampleLimit`), for reports.
    public var examples: [TraceDataError] = []
    public static let exampleLimit = 10

    /// All skipped lines.
    public var skippedTotal: Int { skipped.values.reduce(0, +) }
    /// All lines of unknown type.
    public var unknownTotal: Int { unknownTypes.values.reduce(0, +) }
    public init() {}
}

/// Streaming reader of trace format v1 (`docs/trace-format.md`).
///
/// Reads the file in 1 MiB chunks with `read(2)`, splits lines with `memchr`, and
/// scans each line with a purpose-built JSON scanner (`JSONLineScanner`): no Foundation
/// JSON, no per-line allocation beyond the event's own strings. Memory is flat in trace
/// length: one chunk buffer (grown only for a longer line, up to `maxLineBytes`) plus the
/// reorder window.
///
/// **Ordering policy** (`docs/trace-format.md`, "Ordering"): `next()` delivers events in
/// non-decreasing `t` (ties in file order). An event whose `t` is at most
/// `reorderWindow` seconds older than the largest `t` read before it is put into its
/// place; one more than `reorderWindow` seconds older is out of order beyond the window:
/// `strict` throws (code `out_of_order`), `lenient` skips and counts it. Either way it
/// is counted in `counts.outOfOrder`, as are the reordered ones.
///
/// ```swift
/// let r = try TraceReader(url: url, mode: .lenient)
/// while let e = try r.next() { … }
/// print(r.stats.skipped)
/// ```
public final class TraceReader {
    public let url: URL
    public let mode: TraceReadMode
    /// Seconds of disorder the reader repairs (default 2 s).
    public let reorderWindow: Double
    /// The header (line 1).
    public private(set) var header: TraceHeader
    /// Counts so far (see `TraceReaderStats`).
    public var stats: TraceReaderStats { core.stats }
    /// Bytes read from the file so far (for progress displays; ≤ the file size).
    public var bytesRead: Int64 { core.bytesRead }

    public static let defaultReorderWindow = 2.0
    public static let chunkBytes = 1 << 20
    /// Longest accepted line; a longer one is a data error (a corrupt or non-trace file).
    public static let maxLineBytes = 64 << 20
    /// Most events the reorder window holds. Events that share one timestamp (or lie within
    /// `reorderWindow` of each other) would otherwise all wait in the window: memory would grow
    /// with the file. When the window is full its earliest event is delivered and later lines
    /// older than that event are out of order (the window's reach shrank).
    public static let maxWindowEvents = 1 << 16

    /// All mutable state, in one struct: `next()` makes one access to it per event. As separate
    /// stored properties of this class every read and update of each (the buffer position, the
    /// counts, the decoder, the window) was a dynamic exclusivity check of the Swift runtime
    /// (measured with callgrind: 13 % of the reader's instructions).
    private var core: TraceReaderCore

    /// Opens `url` and reads the header. Throws `TraceDataError` (code `io` when the file
    /// cannot be read; a bad or missing header is fatal in both modes).
    public init(url: URL, mode: TraceReadMode = .lenient, reorderWindow: Double = TraceReader.defaultReorderWindow) throws {
        self.url = url; self.mode = mode
        self.reorderWindow = reorderWindow.isFinite && reorderWindow >= 0 ? reorderWindow : Self.defaultReorderWindow
        let f = open(url.path, O_RDONLY)
        guard f >= 0 else {
            throw TraceDataError(file: url.path, line: 0, reason: "cannot open: \(String(cString: strerror(errno)))", code: .io)
        }
        core = TraceReaderCore(fd: f, path: url.path, mode: mode, reorderWindow: self.reorderWindow)
        header = TraceHeader(origin: Geodetic(latitude: 0, longitude: 0))
        header = try core.readHeader()
    }

    deinit { core.release() }

    /// The next event in time order, or nil at the end of the trace.
    public func next() throws -> TraceEvent? { try core.next() }

    /// Reads all remaining events (tests and small traces).
    public func readAll() throws -> [TraceEvent] {
        var out: [TraceEvent] = []
        while let e = try next() { out.append(e) }
        return out
    }
}

/// The state and the loop of `TraceReader` (see there): the chunk buffer, the line decoder,
/// the reorder window and the counts.
struct TraceReaderCore {
    let mode: TraceReadMode
    let reorderWindow: Double
    private var counts = TraceReaderStats()
    /// Delivered events per payload kind, indexed like `typeNames` (a dictionary update
    /// per event would cost more than parsing the event).
    private let typeCounts = UnsafeMutablePointer<Int>.allocate(capacity: 16)
    private static let typeNames = ["gnss", "wifi", "cell", "acc", "gyro", "mag", "rotvec", "baro", "step",
                                    "acoustic", "peer_range", "photo", "gt", "ble"]

    private let fd: Int32
    private var buf: UnsafeMutablePointer<UInt8>
    private var cap: Int
    private(set) var bytesRead: Int64 = 0
    private var pos = 0
    private var filled = 0
    private var eof = false
    private var decoder = TraceLineDecoder()
    private let path: String

    // Reorder window: a ring buffer sorted by time (ties in file order).
    private var window = TimeOrderedRing()
    private var maxTime = -Double.infinity
    private var maxTimeLine = 0
    /// Time of the last event delivered early because the window was full (-∞ if none).
    private var forcedTime = -Double.infinity

    init(fd: Int32, path: String, mode: TraceReadMode, reorderWindow: Double) {
        self.fd = fd; self.path = path; self.mode = mode; self.reorderWindow = reorderWindow
        cap = TraceReader.chunkBytes
        buf = .allocate(capacity: cap + 1)
        typeCounts.initialize(repeating: 0, count: 16)
    }

    /// Closes the file and frees the buffers (the owning `TraceReader`'s deinit).
    func release() {
        close(fd)
        buf.deallocate()
        typeCounts.deallocate()
    }

    var stats: TraceReaderStats {
        var s = counts
        for (i, name) in Self.typeNames.enumerated() where typeCounts[i] > 0 { s.eventsByType[name] = typeCounts[i] }
        return s
    }

    /// Reads line 1 (after a byte-order mark and blank lines): the header.
    mutating func readHeader() throws -> TraceHeader {
        var line = try nextLine()
        // Skip a UTF-8 byte-order mark and blank lines before the header.
        if var (p, n) = line, n >= 3, p[0] == 0xEF, p[1] == 0xBB, p[2] == 0xBF { p += 3; n -= 3; line = (p, n) }
        while let (p, n) = line, isBlank(p, n) { line = try nextLine() }
        guard let (p, n) = line else {
            throw TraceDataError(file: path, line: max(counts.lines, 1), reason: "empty trace: no header line", code: .missingHeader)
        }
        do {
            return try decoder.header(p, count: n)
        } catch {
            throw TraceDataError(file: path, line: counts.lines, reason: error.message, code: error.code)
        }
    }

    mutating func next() throws -> TraceEvent? {
        while true {
            if let e = window.popFirst(ifAtMost: maxTime - reorderWindow) { return deliver(e) }
            if window.count >= TraceReader.maxWindowEvents, let e = window.popFirst(ifAtMost: .infinity) {
                forcedTime = e.time
                return deliver(e)
            }
            guard let (p, n) = try nextLine() else {
                guard let e = window.popFirst(ifAtMost: .infinity) else { return nil }
                return deliver(e)
            }
            if isBlank(p, n) { continue }
            let decoded: DecodedLine
            do {
                decoded = try decoder.event(p, count: n)
            } catch {
                try reject(TraceDataError(file: path, line: counts.lines, reason: error.message, code: error.code))
                continue
            }
            switch decoded {
            case .unknown(let type, _):
                counts.unknownTypes[type, default: 0] += 1
            case .event(let e):
                if e.time < maxTime {
                    counts.outOfOrder += 1
                    if e.time < maxTime - reorderWindow || e.time < forcedTime {
                        try reject(TraceDataError(
                            file: path, line: counts.lines,
                            reason: e.time < maxTime - reorderWindow
                                ? "t=\(e.time) s is \(maxTime - e.time) s earlier than t=\(maxTime) s on line \(maxTimeLine) (beyond the \(reorderWindow) s reorder window)"
                                : "t=\(e.time) s is earlier than t=\(forcedTime) s, already delivered because more than \(TraceReader.maxWindowEvents) events fell within the \(reorderWindow) s reorder window",
                            code: .outOfOrder))
                        continue
                    }
                } else {
                    maxTime = e.time; maxTimeLine = counts.lines
                }
                window.insert(e)
            }
        }
    }

    @inline(__always) private mutating func deliver(_ e: TraceEvent) -> TraceEvent {
        counts.events += 1
        let k: Int
        switch e.payload {
        case .gnss: k = 0
        case .wifi: k = 1
        case .cell: k = 2
        case .imu(let s):
            switch s.kind {
            case .accelerometer: k = 3
            case .gyroscope: k = 4
            case .magnetometer: k = 5
            case .rotationVector: k = 6
            case .barometer: k = 7
            }
        case .step: k = 8
        case .acoustic: k = 9
        case .peerRange: k = 10
        case .photo: k = 11
        case .groundTruth: k = 12
        case .ble: k = 13
        }
        typeCounts[k] += 1
        return e
    }

    private mutating func reject(_ error: TraceDataError) throws {
        if mode == .strict { throw error }
        counts.skipped[error.code.rawValue, default: 0] += 1
        if counts.examples.count < TraceReaderStats.exampleLimit { counts.examples.append(error) }
    }

    @inline(__always) private func isBlank(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        for i in 0..<n where p[i] != UInt8(ascii: " ") && p[i] != UInt8(ascii: "\t") { return false }
        return true
    }

    /// The next physical line without its `\n` (and `\r`), NUL-terminated in the buffer.
    private mutating func nextLine() throws -> (UnsafePointer<UInt8>, Int)? {
        while true {
            if pos < filled, let nl = memchr(buf + pos, 0x0A, filled - pos) {
                let start = pos
                var n = nl.assumingMemoryBound(to: UInt8.self) - (buf + start)
                pos = start + n + 1
                return finishLine(start, &n)
            }
            if eof {
                guard pos < filled else { return nil }
                let start = pos
                var n = filled - pos
                pos = filled
                return finishLine(start, &n)
            }
            if pos > 0 {
                if filled > pos { memmove(buf, buf + pos, filled - pos) }
                filled -= pos; pos = 0
            }
            if filled == cap {
                guard cap < TraceReader.maxLineBytes else {
                    throw TraceDataError(file: path, line: counts.lines + 1,
                                         reason: "line longer than \(TraceReader.maxLineBytes >> 20) MiB (not a trace file?)", code: .invalidJSON)
                }
                let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: 2 * cap + 1)
                bigger.update(from: buf, count: filled)
                buf.deallocate()
                buf = bigger; cap *= 2
            }
            let r = read(fd, buf + filled, cap - filled)
            if r < 0 {
                if errno == EINTR { continue }
                throw TraceDataError(file: path, line: counts.lines + 1, reason: "read error: \(String(cString: strerror(errno)))", code: .io)
            }
            if r == 0 { eof = true } else { filled += r; bytesRead += Int64(r) }
        }
    }

    @inline(__always) private mutating func finishLine(_ start: Int, _ n: inout Int) -> (UnsafePointer<UInt8>, Int) {
        counts.lines += 1
        if n > 0 && buf[start + n - 1] == 0x0D { n -= 1 }
        buf[start + n] = 0
        return (UnsafePointer(buf + start), n)
    }
}

/// Events waiting in the reorder window, sorted by time with ties in arrival order.
/// A ring buffer: in-order arrivals append in O(1); a late arrival is inserted by a
/// binary search and a shift of the (few) younger events.
struct TimeOrderedRing {
    private var items: [TraceEvent?] = Array(repeating: nil, count: 64)
    /// The events' times, slot for slot: comparisons never copy an event out of `items`.
    private var times: [Double] = Array(repeating: 0, count: 64)
    private var head = 0
    private(set) var count = 0

    private func slot(_ k: Int) -> Int { (head + k) & (items.count - 1) }

    mutating func insert(_ e: TraceEvent) {
        if count == items.count { grow() }
        // First position whose time is > e.time (stable for ties).
        var lo = 0, hi = count
        if count == 0 || times[slot(count - 1)] <= e.time {
            lo = count
        } else {
            while lo < hi {
                let mid = (lo + hi) / 2
                if times[slot(mid)] <= e.time { lo = mid + 1 } else { hi = mid }
            }
        }
        var k = count
        while k > lo { items.swapAt(slot(k), slot(k - 1)); times[slot(k)] = times[slot(k - 1)]; k -= 1 }
        items[slot(lo)] = e
        times[slot(lo)] = e.time
        count += 1
    }

    /// Removes and returns the earliest event if its time is ≤ `limit`.
    mutating func popFirst(ifAtMost limit: Double) -> TraceEvent? {
        guard count > 0, times[head] <= limit else { return nil }
        let e = items[head].take()
        head = (head + 1) & (items.count - 1)
        count -= 1
        return e
    }

    private mutating func grow() {
        var bigger = [TraceEvent?](repeating: nil, count: items.count * 2)
        var biggerTimes = [Double](repeating: 0, count: items.count * 2)
        for k in 0..<count { bigger[k] = items[slot(k)].take(); biggerTimes[k] = times[slot(k)] }
        items = bigger; times = biggerTimes; head = 0
    }
}
