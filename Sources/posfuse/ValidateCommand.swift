import ArgumentParser
import Foundation
import Positioning
import Replay

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a trace (and its reference.json) against trace format v1, strictly.",
        discussion: """
        Reads every line strictly: the first bad line stops with `file:line: reason` on stderr and exit 65. \
        Unknown event types are counted, never fatal. Events at most --reorder-window seconds out of order \
        are reordered and counted; more is an error (docs/trace-format.md, "Ordering"). \
        On success prints the number of events per type and exits 0.

        Examples:
          posfuse validate Traces/NAME    # folder: trace.jsonl (+ reference.json)
          posfuse validate my-trace.jsonl --json
        """.reflowed
    )

    @Argument(help: "A trace file (.jsonl) or a folder holding trace.jsonl and optionally reference.json.")
    var path: String

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(help: "Seconds of timestamp disorder that are repaired rather than reported.")
    var reorderWindow: Double = TraceReader.defaultReorderWindow

    func validate() throws {
        guard reorderWindow.isFinite, reorderWindow >= 0 else { throw ValidationError("--reorder-window must be ≥ 0 seconds") }
    }

    func run() throws {
        try withExitCodes {
            let loc = try TraceLocation.resolve(path)
            let reader = try TraceReader(url: loc.trace, mode: .strict, reorderWindow: reorderWindow)
            var first = -Double.infinity, last = -Double.infinity
            while let e = try reader.next() {
                if first == -.infinity { first = e.time }
                last = e.time
            }
            var reference: ReferenceData?
            if let r = loc.reference { reference = try ReferenceLoader.load(url: r, frame: reader.header.frame) }
            let s = reader.stats
            if json {
                var o: [String: Any] = [
                    "ok": true, "trace": loc.trace.path, "version": reader.header.version, "lines": s.lines, "events": s.events,
                    "by_type": s.eventsByType, "unknown_types": s.unknownTypes, "out_of_order": s.outOfOrder,
                ]
                if s.events > 0 { o["t_first"] = first; o["t_last"] = last }
                if let r = reference, let u = loc.reference {
                    o["reference"] = ["file": u.path, "aps": r.accessPoints.count, "cells": r.cells.count, "beacons": r.beacons.count,
                                      "landmarks": r.landmarks.count, "walls": r.walls.count]
                }
                let d = try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])
                print(String(decoding: d, as: UTF8.self))
                return
            }
            print("\(loc.trace.path): OK (trace format v\(reader.header.version), \(s.lines) lines, \(s.events) events)")
            if s.events > 0 { print(String(format: "time span: %.3f s … %.3f s", first, last)) }
            let width = max(4, (s.eventsByType.keys.map(\.count) + s.unknownTypes.keys.map(\.count)).max() ?? 4)
            print("type".padding(toLength: width, withPad: " ", startingAt: 0) + "  events")
            for (k, v) in s.eventsByType.sorted(by: { $0.key < $1.key }) {
                print(k.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + String(v))
            }
            for (k, v) in s.unknownTypes.sorted(by: { $0.key < $1.key }) {
                print(k.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + String(v) + " (unknown type, skipped)")
            }
            if s.outOfOrder > 0 { print("out of order within the \(reader.reorderWindow) s window (reordered): \(s.outOfOrder)") }
            if let r = reference, let u = loc.reference {
                print("\(u.path): OK (\(r.accessPoints.count) APs, \(r.cells.count) cells, \(r.beacons.count) beacons, "
                      + "\(r.landmarks.count) landmarks, \(r.walls.count) wall segments)")
            }
        }
    }
}
