import Testing
import Foundation
import Positioning
import Replay
import TestSupport

/// Writers killed at random points (SIGKILL, seeded times) leave their outputs complete or
/// absent: `replay --db` (no half run: every stored run has its scores), `celldb build` and
/// `radiomap build` (database passes SQLite's integrity check; its tables hold the complete
/// result or nothing), `refine -o` (the output is byte-identical to an uninterrupted run, or
/// absent). Four kills per command here (about a minute); scripts/kill-test.sh runs more.
@Suite(.serialized) struct KillTests {
    static let trials = Int(ProcessInfo.processInfo.environment["POSFUSE_KILL_TRIALS"] ?? "") ?? 4

    static func temp(_ name: String) -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("posfuse-kill-\(ProcessInfo.processInfo.processIdentifier)-\(name)")
        try? FileManager.default.removeItem(at: d)
        try? FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    /// Runs posfuse to completion (the reference) and returns its duration, s.
    static func complete(_ args: [String]) throws -> Double {
        let t0 = Date()
        let r = try CLI.run(args)
        #expect(r.status == 0, "\(args): \(r.stderr)")
        return Date().timeIntervalSince(t0)
    }

    /// Starts posfuse and SIGKILLs it after `delay` s (if it is still running). True if killed.
    static func killed(_ args: [String], after delay: Double) throws -> Bool {
        let p = Process()
        p.executableURL = CLI.binary
        p.arguments = args
        p.currentDirectoryURL = CLI.root
        p.standardOutput = FileHandle.nullDevice; p.standardError = FileHandle.nullDevice
        try p.run()
        Thread.sleep(forTimeInterval: delay)
        let wasRunning = p.isRunning
        if wasRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        return wasRunning
    }

    /// Seeded kill times spread over (5 %, 95 %) of the uninterrupted run.
    static func delays(_ full: Double, seed: UInt64) -> [Double] {
        var rng = SplitMix64(seed: seed)
        return (0..<trials).map { _ in full * rng.uniform(0.05, 0.95) }
    }

    static func trace(_ name: String) -> String { CLI.root.appendingPathComponent("Traces/\(name)").path }

    @Test func replayDBKeepsWholeRunsOnly() throws {
        let d = Self.temp("replay")
        let db = d.appendingPathComponent("r.sqlite").path
        let args = ["replay", Self.trace("urban-canyon"), Self.trace("open-street"), "--db", db]
        let full = try Self.complete(args)
        let scoreRows = try #require(try SQLiteFileCheck.int(path: db, sql: "SELECT COUNT(*) FROM scores WHERE run = 1"))
        var kills = 0
        for delay in Self.delays(full, seed: 1) {
            let before = try SQLiteFileCheck.count(path: db, table: "runs") ?? 0
            if try Self.killed(args, after: delay) { kills += 1 }
            #expect(try SQLiteFileCheck.integrity(path: db) == "ok")
            let after = try #require(try SQLiteFileCheck.count(path: db, table: "runs"))
            #expect(after >= before && after <= before + 2)
            // No half run: every stored run has all its scores and its event count.
            #expect(try SQLiteFileCheck.int(path: db, sql: "SELECT COUNT(*) FROM runs WHERE events = 0") == 0)
            #expect(try SQLiteFileCheck.int(path: db, sql: "SELECT COUNT(*) FROM runs r WHERE (SELECT COUNT(*) FROM scores s WHERE s.run = r.id) = 0") == 0)
            #expect(try SQLiteFileCheck.int(path: db, sql: "SELECT MIN(c) FROM (SELECT COUNT(*) AS c FROM scores GROUP BY run)")! >= min(scoreRows, 1))
        }
        #expect(kills > 0)
        // The database still takes new runs after the kills (a killed writer's journal is rolled back).
        #expect(try CLI.run(["replay", Self.trace("urban-canyon"), "--db", db]).status == 0)
    }

    /// A survey walk with ground truth, an LTE cell with TA per site and WiFi scans of 40 APs.
    static func surveyWalk(_ dir: URL) throws -> String {
        var lines = [#"{"type":"header","format":"posfuse-trace","version":1,"origin":{"lat":45.0,"lon":-75.0,"h":0}}"#]
        for k in 0..<6000 {
            let t = Double(k) * 0.5, e = Double(k % 400) * 1.5, n = Double(k / 400) * 8
            lines.append(#"{"t":\#(t),"type":"gt","e":\#(e),"n":\#(n),"u":0}"#)
            let site = k % 5
            let se = Double(site) * 150, sn = 200.0
            let d = ((e - se) * (e - se) + (n - sn) * (n - sn)).squareRoot()
            lines.append(#"{"t":\#(t),"type":"cell","rat":"lte","mcc":302,"mnc":720,"area":1,"cid":\#(70 + site),"serving":true,"ta":\#(Int((d / 78.07).rounded())),"ta_unit":"lte_16ts"}"#)
            var aps: [String] = []
            for a in 0..<40 {
                let ae = Double(a % 10) * 60, an = Double(a / 10) * 30
                let da = max(1, ((e - ae) * (e - ae) + (n - an) * (n - an)).squareRoot())
                let rss = (-40 - 30 * log10(da)).rounded()
                if rss > -90 { aps.append(#"{"bssid":"00:1a:00:00:00:\#(String(format: "%02x", a))","freq":2437,"rss":\#(rss)}"#) }
            }
            lines.append(#"{"t":\#(t),"type":"wifi","aps":[\#(aps.joined(separator: ","))]}"#)
        }
        let u = dir.appendingPathComponent("survey.jsonl")
        try (lines.joined(separator: "\n") + "\n").write(to: u, atomically: true, encoding: .utf8)
        return u.path
    }

    @Test func celldbAndRadiomapBuildsAreCompleteOrAbsent() throws {
        let d = Self.temp("build")
        let walk = try Self.surveyWalk(d)
        for (cmd, table) in [("celldb", "cells"), ("radiomap", "aps")] {
            let input = walk
            let ref = d.appendingPathComponent("\(cmd)-full.sqlite").path
            let full = try Self.complete([cmd, "build", input, "--db", ref])
            let want = try #require(try SQLiteFileCheck.count(path: ref, table: table))
            #expect(want > 0)
            var kills = 0
            for (k, delay) in Self.delays(full, seed: 2).enumerated() {
                let db = d.appendingPathComponent("\(cmd)-\(k).sqlite").path
                if try Self.killed([cmd, "build", input, "--db", db], after: delay) { kills += 1 }
                guard FileManager.default.fileExists(atPath: db) else { continue }   // absent: fine
                #expect(try SQLiteFileCheck.integrity(path: db) == "ok", "\(cmd) killed after \(delay) s")
                let n = try SQLiteFileCheck.count(path: db, table: table) ?? 0
                #expect(n == 0 || n == want, "\(cmd) killed after \(delay) s: \(n) of \(want) rows")
            }
            #expect(kills > 0, "\(cmd) finished before every kill (\(full) s)")
        }
    }

    @Test func refineOutputIsCompleteOrAbsent() throws {
        let d = Self.temp("refine")
        // Enough reports for a run of a few seconds: the sample reports, repeated.
        let sample = try String(contentsOf: CLI.root.appendingPathComponent("Traces/reports/sample-reports.jsonl"), encoding: .utf8)
        let input = d.appendingPathComponent("in.jsonl")
        try String(repeating: sample.hasSuffix("\n") ? sample : sample + "\n", count: 4).write(to: input, atomically: true, encoding: .utf8)
        let ref = d.appendingPathComponent("full.geojson")
        let full = try Self.complete(["refine", input.path, "-o", ref.path, "--no-progress"])
        let want = try Data(contentsOf: ref)
        var kills = 0
        for (k, delay) in Self.delays(full, seed: 3).enumerated() {
            let out = d.appendingPathComponent("out-\(k).geojson")
            if try Self.killed(["refine", input.path, "-o", out.path, "--no-progress"], after: delay) { kills += 1 }
            if FileManager.default.fileExists(atPath: out.path) {
                #expect(try Data(contentsOf: out) == want, "refine killed after \(delay) s left a partial output")
            }
        }
        #expect(kills > 0)
        // No temporary file is left beside the output by a finished run.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: d.path).filter { $0.hasPrefix(".full.geojson.tmp") }
        #expect(leftovers.isEmpty)
    }
}
