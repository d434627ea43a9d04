import Foundation
import Positioning
import TraceIO

/// Reads estimates produced outside a replay (another tool, an earlier export) so that
/// `posfuse score --estimates FILE TRACE` can score them against a trace's ground truth.
///
/// Format: CSV with a header row, the layout `posfuse export csv` writes
/// (extra columns are ignored, order is free):
/// * `t` (s, trace time) and `source` (a posfuse source name: `gnss`, `wcl`, `ekf`, …) —
///   required; rows whose source is `gt` (ground truth in an export) are skipped;
/// * position: `lat`, `lon` (deg, WGS84; converted with the trace's ENU frame) or, when
///   those are empty or absent, `e`, `n` (m, local ENU of the trace);
/// * optional `subject` (default `phone`), covariance `cov_ee`, `cov_en`, `cov_nn` (m²).
///
/// A malformed row is a `TraceDataError` naming `file:line` (CLI exit 65).
public enum EstimatesFile {
    public static func load(url: URL, frame: LocalFrame) throws -> [Fix] {
        try parse(csv: try InputFile.text(url), file: url.path, frame: frame)
    }

    public static func parse(csv text: String, file: String, frame: LocalFrame) throws -> [Fix] {
        // "\r\n" is one Character in Swift: split on both line ends (CRLF files are common).
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
            .map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        while let l = lines.last, l.isEmpty { lines.removeLast() }
        guard let head = lines.first else {
            throw TraceDataError(file: file, line: 1, reason: "empty file: expected a CSV header row", code: .missingHeader)
        }
        let cols = fields(head).map { $0.trimmingCharacters(in: .whitespaces) }
        var at: [String: Int] = [:]
        for (i, c) in cols.enumerated() where at[c] == nil { at[c] = i }
        for need in ["t", "source"] where at[need] == nil {
            throw TraceDataError(file: file, line: 1, reason: "header has no column '\(need)'", code: .missingKey)
        }
        guard (at["lat"] != nil && at["lon"] != nil) || (at["e"] != nil && at["n"] != nil) else {
            throw TraceDataError(file: file, line: 1, reason: "header needs columns 'lat','lon' or 'e','n'", code: .missingKey)
        }
        var out: [Fix] = []
        for (k, raw) in lines.enumerated().dropFirst() where !raw.trimmingCharacters(in: .whitespaces).isEmpty {
            let line = k + 1
            let f = fields(raw)
            func cell(_ name: String) -> String? {
                guard let i = at[name], i < f.count else { return nil }
                let v = f[i].trimmingCharacters(in: .whitespaces)
                return v.isEmpty ? nil : v
            }
            func number(_ name: String) throws -> Double? {
                guard let s = cell(name) else { return nil }
                guard let x = Double(s), x.isFinite else {
                    throw TraceDataError(file: file, line: line, reason: "column '\(name)': not a finite number: \(s)", code: .invalidValue)
                }
                // The trace format's domains (`TraceDomain`): what scores also validates.
                let domain: ClosedRange<Double>
                switch name {
                case "t": domain = TraceDomain.time
                case "e", "n": domain = TraceDomain.localMetres
                case "h": domain = TraceDomain.height
                case "cov_ee", "cov_nn": domain = 0...1e14
                case "cov_en": domain = -1e14...1e14
                default: domain = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude
                }
                if let m = TraceDomain.violation("column '\(name)':", x, domain, "") {
                    throw TraceDataError(file: file, line: line, reason: m, code: .invalidValue)
                }
                return x
            }
            guard let src = cell("source") else {
                throw TraceDataError(file: file, line: line, reason: "missing value in column 'source'", code: .missingKey)
            }
            if src == "gt" { continue }
            guard let source = Source(rawValue: src) else {
                throw TraceDataError(file: file, line: line,
                                     reason: "unknown source '\(src)' (one of \(Source.allCases.map(\.rawValue).joined(separator: ", ")))",
                                     code: .invalidValue)
            }
            guard let t = try number("t") else {
                throw TraceDataError(file: file, line: line, reason: "missing value in column 't'", code: .missingKey)
            }
            let p: SIMD2<Double>
            if let lat = try number("lat"), let lon = try number("lon") {
                guard abs(lat) <= 90, abs(lon) <= 180 else {
                    throw TraceDataError(file: file, line: line, reason: "lat/lon out of range", code: .invalidValue)
                }
                p = frame.en(latitude: lat, longitude: lon, height: try number("h") ?? frame.origin.height)
            } else if let e = try number("e"), let n = try number("n") {
                p = SIMD2(e, n)
            } else {
                throw TraceDataError(file: file, line: line, reason: "no position: needs lat,lon or e,n", code: .missingKey)
            }
            var cov = Covariance2.zero
            if let ee = try number("cov_ee"), let nn = try number("cov_nn") {
                cov = Covariance2(ee: ee, en: try number("cov_en") ?? 0, nn: nn)
            }
            out.append(Fix(time: t, position: p, covariance: cov, source: source, subject: cell("subject") ?? Fix.defaultSubject))
        }
        return out.sorted { $0.time < $1.time }
    }

    /// Splits one CSV row (RFC 4180 quoting).
    static func fields<S: StringProtocol>(_ row: S) -> [String] {
        var out: [String] = [], cur = "", quoted = false
        var it = row.makeIterator()
        var pendingQuote = false
        while let c = it.next() {
            if quoted {
                if pendingQuote {
                    pendingQuote = false
                    if c == "\"" { cur.append("\""); continue }
                    quoted = false
                } else if c == "\"" {
                    pendingQuote = true; continue
                } else {
                    cur.append(c); continue
                }
            }
            if c == "\"" && cur.isEmpty { quoted = true } else if c == "," { out.append(cur); cur = "" } else { cur.append(c) }
        }
        out.append(cur)
        return out
    }
}
