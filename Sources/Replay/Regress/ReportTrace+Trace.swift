import Foundation
import Positioning
import TraceIO

extension ReportTrace {
    /// A report trace from a scored trace result plus what the trace file itself holds:
    /// the ground-truth tracks of every phone (gt events, in ENU; `subject` is primary) and the floor-plan walls of
    /// its reference side file. Throws `TraceDataError` for an unreadable trace.
    public static func load(result: TraceResult, location: TraceLocation, subject: String = Fix.defaultSubject,
                            progress: TraceIO.Progress? = nil) throws -> ReportTrace {
        let reader = try TraceReader(url: location.trace, mode: .lenient)
        let frame = reader.header.frame
        var tracks: [String: [(time: Double, position: SIMD2<Double>)]] = [:]
        while let e = try reader.next() {
            if case .groundTruth(let g) = e.payload, !Subject.isObject(e.device) {
                switch g.position {
                case .geodetic(let p):
                    let v = frame.enu(p)
                    tracks[e.device, default: []].append((e.time, SIMD2(v.x, v.y)))
                case .local(let v):
                    tracks[e.device, default: []].append((e.time, SIMD2(v.x, v.y)))
                }
            }
            if let progress, reader.stats.lines % 4096 == 0 { progress.update(completed: reader.bytesRead) }
        }
        var walls: [Wall] = []
        if let r = location.reference { walls = try ReferenceLoader.load(url: r, frame: frame).walls }
        // The primary track: `subject`, else the longest one; the others are drawn too.
        let primary = tracks[subject] != nil ? subject : tracks.max { $0.value.count < $1.value.count }?.key
        let truth = primary.flatMap { tracks.removeValue(forKey: $0) } ?? []
        return ReportTrace(name: result.trace, sources: result.sources, truth: truth, walls: walls, skipped: result.skipped,
                           otherTruth: tracks)
    }
}
