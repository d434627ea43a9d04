import Foundation
import Positioning

/// Importer for OpenCellID measurement CSV (as exported by e.g. Network Cell Info):
/// `mcc,mnc,lac,cellid,lat,lon,signal,measured_at,rating,speed,direction,act,ta,psc,tac,pci,sid,nid,bid`
/// (columns found by name in the header line).
///
/// Every row becomes one serving-cell `cell` event at `t = measured_at / 1000` (Unix s) and,
/// when `lat`/`lon` are present, one `gt` (`continuous`) event at the same time with the
/// phone's own GNSS position as ground truth (`h = 0`: the format has no altitude).
/// - `act`: `LTE`, `LTE+` → `lte`; `NR` → `nr`; `GSM`, `GPRS`, `EDGE` → `gsm`;
///   `UMTS`, `HSPA`, `HSPA+`, `HSDPA`, `HSUPA`, `WCDMA` → `umts`; CDMA rows are dropped.
/// - `area` = `tac` for LTE/NR (falls back to `lac`), `lac` otherwise; `cid` = `cellid`;
///   `pci` = `pci` (LTE/NR) or `psc` (UMTS).
/// - `ta` (empty = unavailable, about 8 % of the LTE walks) → raw integer with unit
///   `lte_16ts` (LTE, 78.07 m one-way per step), `gsm_bit` (GSM), `nr_mu0` (NR, numerology unknown).
/// - `signal` → `rsrp` (dBm). `rating` (GNSS accuracy of the truth, m), `speed`,
///   `direction`, `sid`, `nid`, `bid` are not kept (no trace field).
/// Default origin: the first row's position (h = 0).
public enum OpenCellIDMeasurementsImporter {
    public static func rat(forAct act: String) -> RAT? {
        switch act.uppercased() {
        case "LTE", "LTE+", "LTE-A", "4G": return .lte
        case "NR", "5G", "NR-NSA", "NR-SA": return .nr
        case "GSM", "GPRS", "EDGE", "2G": return .gsm
        case "UMTS", "HSPA", "HSPA+", "HSDPA", "HSUPA", "WCDMA", "3G", "TD-SCDMA": return .umts
        default: return nil
        }
    }

    public static func parse(_ buf: ByteBuffer, file: String, options: ImportOptions) throws
        -> (events: [TraceEvent], report: ImportReport, first: Geodetic?) {
        var ctx = ImportContext(options: options, file: file)
        var events: [TraceEvent] = []
        var cols: [String: Int] = [:]
        var first: Geodetic? = nil
        let device = options.device
        try ctx.forEachRow(of: buf) { rec, ctx in
            let fields = rec.fields
            if cols.isEmpty || buf.hasPrefix(rec.range, "mcc,") {
                let names = fields.map { buf.string(buf.trimmed($0)) }
                cols = columnIndex(names)
                for req in ["mcc", "mnc", "cellid", "measured_at", "act"] where cols[req] == nil {
                    cols = [:]
                    try ctx.malformed("header lacks column \(req)")
                    return
                }
                return
            }
            guard fields.count >= cols.count else { try ctx.malformed("expected \(cols.count) columns, found \(fields.count)"); return }
            func f(_ name: String) -> Range<Int>? { cols[name].flatMap { $0 < fields.count ? buf.trimmed(fields[$0]) : nil } }
            func int(_ name: String) -> Int? { f(name).flatMap { $0.isEmpty ? nil : buf.int($0) } }
            func dbl(_ name: String) -> Double? { f(name).flatMap { $0.isEmpty ? nil : buf.double($0) } }
            let act = f("act").map { buf.string($0) } ?? ""
            guard let rat = rat(forAct: act) else {
                if act.isEmpty { try ctx.malformed("empty act") } else { ctx.drop("act \(act) (no RAT in trace format)") }
                return
            }
            guard let mcc = int("mcc"), let mnc = int("mnc"), let cid = int("cellid"), let ms = dbl("measured_at") else {
                try ctx.malformed("mcc, mnc, cellid and measured_at must be integers"); return
            }
            let area = (rat == .lte || rat == .nr) ? (int("tac") ?? int("lac")) : (int("lac") ?? int("tac"))
            guard let area else { try ctx.malformed("no lac/tac"); return }
            let pci = (rat == .umts) ? int("psc") : int("pci")
            var ta: Int? = nil
            if let r = f("ta"), !r.isEmpty {
                guard let v = buf.int(r) else { try ctx.malformed("ta is not an integer"); return }
                ta = v
            }
            let unit: TimingAdvanceUnit? = ta == nil ? nil : (rat == .lte ? .lte16Ts : rat == .gsm ? .gsmBits : rat == .nr ? .nrMu0 : nil)
            if ta != nil && unit == nil { ctx.drop("ta of a UMTS row (no TA in UMTS)"); ta = nil }
            let t = ms / 1000
            let obs = CellObservation(cell: CellID(rat: rat, mcc: mcc, mnc: mnc, area: area, cid: cid), pci: pci,
                                      serving: true, timingAdvance: ta, timingAdvanceUnit: ta == nil ? nil : unit,
                                      rsrp: dbl("signal"))
            events.append(TraceEvent(time: t, device: device, payload: .cell(obs)))
            if let lat = dbl("lat"), let lon = dbl("lon") {
                guard abs(lat) <= 90, abs(lon) <= 180 else { try ctx.malformed("lat/lon out of range"); return }
                let g = Geodetic(latitude: lat, longitude: lon, height: 0)
                if first == nil { first = g }
                events.append(TraceEvent(time: t, device: device, payload: .groundTruth(GroundTruth(position: .geodetic(g), kind: .continuous))))
            } else {
                ctx.drop("row without lat/lon (no ground truth)")
            }
        }
        if cols.isEmpty && ctx.report.lines > 0 { ctx.line = 1; try ctx.malformed("no header line") }
        ctx.report.files = 1
        return (events, ctx.report, first)
    }

    public static func importFiles(_ urls: [URL], options: ImportOptions) throws -> ImportedTrace {
        try importEachFile(urls, options: options, originNote: "first row's position (h = 0)") { u in
            let r = try parse(ByteBuffer(url: u), file: u.path, options: options)
            return (r.events, r.report, r.first, [:])
        }
    }
}
