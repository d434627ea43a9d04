import Foundation

/// Handset names normalised to model families, so that what was learned on one recording of a
/// phone model applies to the next one of the same model whatever its file or device name
/// says (docs/radio.md, "Handset families").
///
/// Rules, in order, on the name (file stem or trace header `device`):
/// 1. an override (`--handset-family NAME=FAMILY`, or the calibration file's `families`)
///    for the exact name wins;
/// 2. everything from the first `_` on is dropped (`Pixel4_chipset` → `Pixel4`; GSDC file and
///    truth names carry the phone first);
/// 3. a trailing modification marker is dropped: `Modded`, `Modified`, `Mod`, `Custom`,
///    `Rooted` (case-insensitive: `Pixel4XLModded` → `Pixel4XL`), repeatedly;
/// 4. spaces and hyphens are removed (`Pixel 4 XL` → `Pixel4XL`); the case is kept.
/// An empty result keeps the original name.
public struct HandsetFamilies: Sendable, Equatable {
    /// Exact name → family, applied before the rules.
    public var overrides: [String: String]

    public init(overrides: [String: String] = [:]) { self.overrides = overrides }

    /// Markers of a modified unit of a model (rule 3).
    public static let modificationMarkers = ["Modded", "Modified", "Mod", "Custom", "Rooted"]

    public func family(of name: String) -> String {
        if let o = overrides[name] { return o }
        var s = Substring(name)
        if let u = s.firstIndex(of: "_") { s = s[..<u] }
        var changed = true
        while changed {
            changed = false
            for m in Self.modificationMarkers where s.count > m.count && s.lowercased().hasSuffix(m.lowercased()) {
                s = s.dropLast(m.count); changed = true
                break
            }
        }
        let out = s.filter { $0 != " " && $0 != "-" }
        return out.isEmpty ? name : String(out)
    }

    /// Parses `NAME=FAMILY` pairs (`--handset-family`); nil naming the bad one.
    public static func parse(_ pairs: [String]) -> Result<HandsetFamilies, ConfigurationError> {
        var o: [String: String] = [:]
        for p in pairs {
            let parts = p.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                return .failure(ConfigurationError(path: "--handset-family", reason: "expected NAME=FAMILY, got '\(p)'"))
            }
            o[parts[0]] = parts[1]
        }
        return .success(HandsetFamilies(overrides: o))
    }
}
