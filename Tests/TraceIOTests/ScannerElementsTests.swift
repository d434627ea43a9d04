import Foundation
import Testing
@testable import TraceIO

/// `JSONLineScanner.validatedArrayElements` (a report's evidence, delimited by bracket depth and
/// quotes after `line` validated it) gives the same element fields as `arrayElements` (which
/// validates every element again): seeded arrays whose strings hold brackets, quotes, escaped
/// backslashes and non-ASCII text, nested containers and scalars.
@Suite struct ScannerElementsTests {
    struct Rng {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E3779B97F4A7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static func string(_ r: inout Rng) -> String {
        let pieces = ["a", "]", "}", "[", "{", "\\\"", "\\\\", "\\\\\\\"", "é", "\\u00e9", " ", ",", ":", "\\n"]
        return "\"" + (0..<r.below(6)).map { _ in pieces[r.below(pieces.count)] }.joined() + "\""
    }

    static func value(_ r: inout Rng, depth: Int) -> String {
        switch depth > 3 ? r.below(4) : r.below(7) {
        case 0: return string(&r)
        case 1: return ["0", "-1.5", "1e3", "12345.678901234567", "-0.0001"][r.below(5)]
        case 2: return ["true", "false", "null"][r.below(3)]
        case 3: return string(&r)
        case 4, 5:
            let members = (0..<r.below(4)).map { _ in string(&r) + " : " + value(&r, depth: depth + 1) }
            return "{" + members.joined(separator: ", ") + "}"
        default:
            return "[ " + (0..<r.below(4)).map { _ in value(&r, depth: depth + 1) }.joined(separator: ",") + "]"
        }
    }

    /// The `evidence` elements of `text` by both scans.
    static func scan(_ text: String) throws -> (validating: [JField], delimited: [JField]) {
        var bytes = Array(text.utf8)
        let n = bytes.count
        bytes.append(0)
        var a: [JField] = [], v: [JField] = []
        try bytes.withUnsafeBufferPointer { (b: UnsafeBufferPointer<UInt8>) throws -> Void in
            let s = JSONLineScanner(p: b.baseAddress!, count: n)
            var top: [JField] = []
            try s.line(into: &top)
            guard let e = top.first(where: { $0.keyLength == 8 }) else { return }
            try s.arrayElements(start: e.start, end: e.end, into: &a)
            try s.validatedArrayElements(start: e.start, end: e.end, into: &v)
        }
        return (a, v)
    }

    /// The record scan that defers `evidence` (`line(into:deferring:elements:)`) delimits an array
    /// of objects into the same element fields as `validatedArrayElements`, in the same pass, and
    /// delimits nothing (leaving it to `validatedArrayElements`) when any element is not an object.
    @Test func deferringScanDelimitsObjectElements() throws {
        var r = Rng(state: 11)
        var delimitedArrays = 0, other = 0
        for _ in 0..<2_000 {
            let objects = r.below(4) != 0
            let elements = (0..<r.below(6)).map { _ in
                !objects && r.below(2) == 0 ? Self.value(&r, depth: 1)
                    : "{\"t\": 1, \"s\": " + Self.string(&r) + ", \"v\": " + Self.value(&r, depth: 2) + "}"
            }
            let text = "{\"id\": \"x\", \"evidence\": [ " + elements.joined(separator: " ,\n") + " ], \"after\": [1]}"
            var bytes = Array(text.utf8)
            let n = bytes.count
            bytes.append(0)
            try bytes.withUnsafeBufferPointer { (b: UnsafeBufferPointer<UInt8>) throws -> Void in
                let s = JSONLineScanner(p: b.baseAddress!, count: n)
                var top: [JField] = [], one: [JField] = [], v: [JField] = []
                let deferred = try s.line(into: &top, deferring: "evidence", elements: &one)
                #expect(deferred == 1)
                guard let e = top.first(where: { $0.keyLength == 8 }) else { Issue.record("no evidence"); return }
                try s.validatedArrayElements(start: e.start, end: e.end, into: &v)
                if v.allSatisfy({ $0.kind == .object }) && !v.isEmpty {
                    delimitedArrays += 1
                    #expect(one.count == v.count, "\(text)")
                    for (x, y) in zip(one, v) { #expect(x.kind == y.kind && x.start == y.start && x.end == y.end, "\(text)") }
                } else {
                    if !v.isEmpty { other += 1 }
                    #expect(one.isEmpty, "\(text)")
                }
            }
        }
        #expect(delimitedArrays > 500 && other > 100)
    }

    @Test func sameFieldsAsTheValidatingScan() throws {
        var r = Rng(state: 7)
        var containers = 0
        for _ in 0..<2_000 {
            let elements = (0..<r.below(6)).map { _ in r.below(3) == 0 ? Self.value(&r, depth: 1) : "{\"t\": 1, \"s\": " + Self.string(&r) + ", \"v\": " + Self.value(&r, depth: 2) + "}" }
            let text = "{\"id\": \"x\", \"evidence\": [" + elements.joined(separator: " , ") + "\n], \"after\": [1]}"
            let (a, v) = try Self.scan(text)
            #expect(a.count == v.count && a.count == elements.count, "\(text)")
            for (x, y) in zip(a, v) {
                #expect(x.kind == y.kind && x.start == y.start && x.end == y.end && x.escaped == y.escaped
                        && x.number.bitPattern == y.number.bitPattern, "\(text)")
                if x.kind == .object || x.kind == .array { containers += 1 }
            }
        }
        #expect(containers > 1_000)
    }
}
