import Foundation
import Positioning
import TraceIO

/// Importer for NMEA 0183 logs (`$--GGA`, `$--RMC`, optional `$--GST`; any talker id).
///
/// - Sentence-level defects that leave the data intact are tolerated by default, counted per
///   reason in the import report (`tolerated …`), and fatal only with `--strict`:
///   a wrong checksum (`*hh`, XOR of the bytes between `$` and `*`; real reference receivers
///   write wrong ones: one held-back SPAN track has every `$GPRMC` checksum wrong while its
///   `$GPGGA` ones are right), an unknown talker id (anything but GP, GL, GA, GB, BD, GN, GQ,
///   GI, QZ), a missing hemisphere letter (taken from the nearest earlier sentence of the
///   file that has one, else from `ImportOptions.origin` — the phone's own first fix when a
///   truth track is read beside it; with neither, the sentence is malformed).
///   A missing checksum is accepted silently. Fields that cannot be read (bad angle, bad
///   time) stay malformed sentences: dropped and counted, fatal with `--strict`.
/// - Sentences with the same UTC time string form one epoch; RMC gives the date, GGA the
///   altitude (`h` = MSL altitude + geoid separation, i.e. WGS84 ellipsoidal), HDOP and the
///   fix quality; RMC also the receiver's speed over ground (knots → `spd` m/s) and course over
///   ground (`brg`, degrees true) when its fields are not empty. Epochs without their own RMC take the date of the nearest RMC (±1 day at
///   midnight). Trace time = Unix seconds from date + UTC time (exact in integers, so equal
///   UTC strings in two files — phone and reference — give equal trace times).
/// - `acc` (68 % horizontal, m) = √(σ_lat² + σ_lon²) from a GST of the same epoch, else
///   HDOP · `uere` (default 3 m, `--uere`); `vacc` from GST σ_alt.
/// - Validity: RMC status `A` when the epoch has an RMC (GGA quality is not trusted then:
///   reference receivers write 0 during INS bridging, chipsets 7), else GGA quality > 0;
///   invalid epochs are dropped and counted. Position from GGA, else from RMC. Other sentence types are dropped
///   and counted per type.
/// - `--as-truth`: epochs become `gt` (`continuous`, geodetic) instead of `gnss`.
/// Default origin: the first epoch's position (with its height).
public enum NMEAImporter {
    struct Epoch {
        var key: String
        var order: Int
        var tod: Double = 0           // seconds of day
        var date: Int? = nil          // days since 1970
        var lat: Double? = nil, lon: Double? = nil
        var alt: Double? = nil
        var hdop: Double? = nil
        var sigmaLat: Double? = nil, sigmaLon: Double? = nil, sigmaAlt: Double? = nil
        var quality: Int? = nil
        var rmcValid: Bool? = nil
        var rmcLat: Double? = nil, rmcLon: Double? = nil
        var speed: Double? = nil, course: Double? = nil
        var line = 0
    }

    /// Parses `ddmm.mmmm` / `dddmm.mmmm` with hemisphere letter to signed degrees. An empty
    /// hemisphere takes the sign `implied` (nil: unreadable).
    static func angle(_ s: Substring, _ hemi: Substring, degDigits: Int, implied: Double? = nil) -> Double? {
        let dot = s.firstIndex(of: ".") ?? s.endIndex
        guard s.count > degDigits, s.distance(from: s.startIndex, to: dot) == degDigits + 2 else { return nil }
        let di = s.index(s.startIndex, offsetBy: degDigits)
        guard let deg = Double(s[s.startIndex..<di]), let min = Double(s[di...]), min < 60 else { return nil }
        var v = deg + min / 60
        switch hemi {
        case "N", "E": break
        case "S", "W": v = -v
        case "": guard let implied else { return nil }; v *= implied < 0 ? -1 : 1
        default: return nil
        }
        return v
    }

    /// Talker ids of satellite receivers (NMEA 0183 v4.11): GPS, GLONASS, Galileo, BeiDou
    /// (GB and BD), combined, QZSS (GQ and QZ), NavIC.
    static let knownTalkers: Set<Substring> = ["GP", "GL", "GA", "GB", "BD", "GN", "GQ", "QZ", "GI"]

    /// Hemisphere signs for sentences without letters: the last seen in the file (else the origin's).
    struct Hemispheres {
        var lat: Double?, lon: Double?
        mutating func see(_ latH: Substring, _ lonH: Substring) {
            if latH == "N" { lat = 1 } else if latH == "S" { lat = -1 }
            if lonH == "E" { lon = 1 } else if lonH == "W" { lon = -1 }
        }
    }

    /// Reads a (lat, hemisphere, lon, hemisphere) field quadruple; a missing letter is taken
    /// from `hemi` and tolerated (counted; fatal with `--strict`).
    static func position(_ f: [Substring], at i: Int, _ hemi: inout Hemispheres, _ ctx: inout ImportContext, type: String) throws
        -> (lat: Double, lon: Double)? {
        let fixed = ctx.options.origin
        let latSign = hemi.lat ?? fixed.map { $0.latitude < 0 ? -1 : 1 }
        let lonSign = hemi.lon ?? fixed.map { $0.longitude < 0 ? -1 : 1 }
        guard let lat = angle(f[i], f[i + 1], degDigits: 2, implied: latSign),
              let lon = angle(f[i + 2], f[i + 3], degDigits: 3, implied: lonSign) else { return nil }
        if f[i + 1].isEmpty || f[i + 3].isEmpty {
            try ctx.tolerate("missing hemisphere letter in \(type)")
        }
        hemi.see(f[i + 1], f[i + 3])
        return (lat, lon)
    }

    /// Seconds of day from `hhmmss[.ss…]`.
    static func timeOfDay(_ s: Substring) -> Double? {
        guard s.count >= 6, let h = Int(s.prefix(2)), let m = Int(s.dropFirst(2).prefix(2)),
              let sec = Double(s.dropFirst(4)), h < 24, m < 60, sec < 61 else { return nil }
        return Double(h * 3600 + m * 60) + sec
    }

    static func checksumOK(_ body: Substring, _ hex: Substring) -> Bool {
        var x: UInt8 = 0
        for b in body.utf8 { x ^= b }
        guard let v = UInt8(hex, radix: 16) else { return false }
        return v == x
    }

    public static func parse(_ text: String, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, first: Geodetic?) {
        var ctx = ImportContext(options: options, file: file)
        var epochs: [String: Epoch] = [:]
        var order = 0
        var n = 0
        var hemi = Hemispheres()
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            n += 1
            ctx.line = n
            ctx.report.lines += 1
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            guard let dollar = line.firstIndex(of: "$") else { try ctx.malformed("not an NMEA sentence"); continue }
            var body = line[line.index(after: dollar)...]
            var checksumWrong = false
            if let star = body.lastIndex(of: "*") {
                let hex = body[body.index(after: star)...].prefix(2)
                checksumWrong = !checksumOK(body[..<star], hex)
                body = body[..<star]
            }
            let f = body.split(separator: ",", omittingEmptySubsequences: false)
            guard let tag = f.first, tag.count >= 5 else { try ctx.malformed("no sentence id"); continue }
            let type = String(tag.suffix(3))
            guard type == "GGA" || type == "RMC" || type == "GST" else { ctx.drop("\(type) sentence (not converted)"); continue }
            // Defects that leave the fields intact: kept, counted per reason (fatal with --strict).
            if checksumWrong { try ctx.tolerate("NMEA checksum mismatch in $\(tag)") }
            if !knownTalkers.contains(tag.prefix(tag.count - 3)) { try ctx.tolerate("unknown NMEA talker id '\(tag.prefix(tag.count - 3))'") }
            guard f.count > 1, !f[1].isEmpty else { ctx.drop("\(type) without UTC time"); continue }
            let key = String(f[1])
            guard let tod = timeOfDay(f[1]) else { try ctx.malformed("bad UTC time \(f[1])"); continue }
            var e = epochs[key] ?? Epoch(key: key, order: { order += 1; return order }(), tod: tod, line: n)
            switch type {
            case "GGA":
                guard f.count >= 10 else { try ctx.malformed("GGA needs 14 fields"); continue }
                e.quality = Int(f[6]) ?? 0
                if f[2].isEmpty { epochs[key] = e; continue }
                guard let (lat, lon) = try position(f, at: 2, &hemi, &ctx, type: "GGA") else {
                    try ctx.malformed("bad GGA position"); continue
                }
                e.lat = lat; e.lon = lon
                e.hdop = Double(f[8])
                if let a = Double(f[9]) { e.alt = a + (f.count > 11 ? Double(f[11]) ?? 0 : 0) }
            case "RMC":
                guard f.count >= 10 else { try ctx.malformed("RMC needs 12 fields"); continue }
                if f[9].count == 6, let d = Int(f[9].prefix(2)), let m = Int(f[9].dropFirst(2).prefix(2)), let y = Int(f[9].suffix(2)),
                   (1...12).contains(m), (1...31).contains(d) {
                    e.date = UTCTime.daysFromCivil(y < 80 ? 2000 + y : 1900 + y, m, d)
                } else if !f[9].isEmpty { try ctx.malformed("bad RMC date \(f[9])"); continue }
                e.rmcValid = f[2] == "A"
                // Speed over ground (knots → m/s, 1 kn = 1852/3600 m/s) and course over ground
                // (degrees true); empty fields: not reported. An unreadable one is dropped, not the epoch.
                if let kn = Double(f[7]), kn.isFinite, kn >= 0 { e.speed = kn * 1852 / 3600 }
                if let c = Double(f[8]), c.isFinite, abs(c) <= 720 { e.course = c }
                if !f[3].isEmpty {
                    guard let (lat, lon) = try position(f, at: 3, &hemi, &ctx, type: "RMC") else {
                        try ctx.malformed("bad RMC position"); continue
                    }
                    e.rmcLat = lat; e.rmcLon = lon
                }
            default: // GST
                guard f.count >= 9 else { try ctx.malformed("GST needs 9 fields"); continue }
                e.sigmaLat = Double(f[6]); e.sigmaLon = Double(f[7]); e.sigmaAlt = Double(f[8])
            }
            epochs[key] = e
        }
        // Dates: own RMC, else the nearest RMC date in file order (±1 day at midnight).
        let ordered = epochs.values.sorted { $0.order < $1.order }
        let dated = ordered.filter { $0.date != nil }
        var events: [TraceEvent] = []
        var first: Geodetic? = nil
        for var e in ordered {
            // Valid: RMC status A when the epoch has an RMC, else GGA quality > 0.
            guard e.rmcValid ?? ((e.quality ?? 0) > 0) else { ctx.drop("epoch without fix (RMC status V / GGA quality 0)"); continue }
            guard let lat = e.lat ?? e.rmcLat, let lon = e.lon ?? e.rmcLon else { ctx.drop("epoch without position"); continue }
            if e.date == nil {
                guard let near = dated.min(by: { abs($0.order - e.order) < abs($1.order - e.order) }) else {
                    ctx.line = e.line
                    try ctx.malformed("no RMC date in the file for UTC \(e.key)")
                    continue
                }
                var d = near.date!
                if e.tod - near.tod > 43200 { d -= 1 } else if near.tod - e.tod > 43200 { d += 1 }
                e.date = d
            }
            let t = Double(e.date! * 86400) + e.tod
            let g = Geodetic(latitude: lat, longitude: lon, height: e.alt ?? 0)
            if first == nil { first = g }
            if options.asTruth {
                events.append(TraceEvent(time: t, device: options.device, payload: .groundTruth(GroundTruth(position: .geodetic(g), kind: .continuous))))
            } else {
                var acc = (e.hdop ?? 1) * options.uere
                if let a = e.sigmaLat, let b = e.sigmaLon { acc = (a * a + b * b).squareRoot() }
                events.append(TraceEvent(time: t, device: options.device, payload: .gnss(GNSSFix(
                    latitude: lat, longitude: lon, altitude: e.alt, accuracy: acc, verticalAccuracy: e.sigmaAlt,
                    speed: e.speed, bearing: e.course))))
            }
        }
        ctx.report.files = 1
        return (events, ctx.report, first)
    }

    public static func importFiles(_ urls: [URL], options: ImportOptions) throws -> ImportedTrace {
        try importEachFile(urls, options: options, originNote: "first fix", addsStaticTruth: true) { u in
            let r = try parse(String(decoding: try InputFile.data(u), as: UTF8.self), file: u.path, options: options)
            return (r.events, r.report, r.first, [:])
        }
    }
}
