import Foundation

/// Calendar arithmetic for the UTC time stamps of foreign formats, exact in integers
/// (proleptic Gregorian calendar, H. Hinnant's days-from-civil algorithm), so that
/// identical UTC strings always map to identical trace times.
public enum UTCTime {
    /// Days since 1970-01-01 of the civil date y-m-d.
    public static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    /// Civil date (y, m, d) of a day number since 1970-01-01.
    public static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    /// Splits Unix seconds into whole seconds and microseconds (rounded to the nearest µs).
    static func splitMicros(_ t: Double) -> (Int, Int) {
        let us = (t * 1_000_000).rounded()
        let total = Int64(us)
        var s = total / 1_000_000, f = total % 1_000_000
        if f < 0 { f += 1_000_000; s -= 1 }
        return (Int(s), Int(f))
    }

    /// ISO 8601 UTC with microseconds: `2020-05-14T22:10:46.123456Z`.
    public static func iso8601(_ t: Double) -> String {
        let (s, us) = splitMicros(t)
        let days = Int((Double(s) / 86400).rounded(.down))
        let sod = s - days * 86400
        let (y, m, d) = civilFromDays(days)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", y, m, d, sod / 3600, sod / 60 % 60, sod % 60, us)
    }

    /// Parses ISO 8601 date-times `YYYY-MM-DDThh:mm:ss[.frac](Z|±hh:mm)` to Unix seconds.
    public static func parseISO8601(_ s0: String) -> Double? {
        let s = Array(s0.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        func num(_ a: Int, _ n: Int) -> Int? {
            guard a + n <= s.count else { return nil }
            var v = 0
            for i in a..<(a + n) { let d = Int(s[i]) - 48; guard d >= 0 && d <= 9 else { return nil }; v = v * 10 + d }
            return v
        }
        guard s.count >= 19, let y = num(0, 4), s[4] == 0x2D, let mo = num(5, 2), s[7] == 0x2D, let d = num(8, 2),
              s[10] == UInt8(ascii: "T") || s[10] == 0x20, let h = num(11, 2), s[13] == 0x3A, let mi = num(14, 2),
              s[16] == 0x3A, let se = num(17, 2), (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, se <= 60
        else { return nil }
        var i = 19
        var frac = 0.0
        if i < s.count && (s[i] == 0x2E || s[i] == 0x2C) {
            i += 1
            var scale = 0.1
            let start = i
            while i < s.count, s[i] >= 48 && s[i] <= 57 { frac += Double(s[i] - 48) * scale; scale /= 10; i += 1 }
            if i == start { return nil }
            // Exact decimal for up to 9 digits (avoid accumulated rounding).
            if i - start <= 9, let v = Double(String(decoding: s[(start - 1)..<i], as: UTF8.self)) { frac = v }
        }
        var offset = 0
        if i < s.count {
            if s[i] == UInt8(ascii: "Z") { i += 1 } else if s[i] == 0x2B || s[i] == 0x2D {
                let sign = s[i] == 0x2B ? 1 : -1
                guard let oh = num(i + 1, 2) else { return nil }
                var om = 0
                if i + 3 < s.count, s[i + 3] == 0x3A { guard let v = num(i + 4, 2) else { return nil }; om = v; i += 6 }
                else if let v = num(i + 3, 2) { om = v; i += 5 } else { i += 3 }
                offset = sign * (oh * 3600 + om * 60)
            } else { return nil }
        }
        guard i == s.count else { return nil }
        let whole = daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset
        return Double(whole) + frac
    }
}
