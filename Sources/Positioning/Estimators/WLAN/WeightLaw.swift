import Foundation

/// Weight laws of the weighted centroid (`docs/models.md` §2.2). Weights are computed
/// in the log domain (log w_i), the maximum is subtracted before exponentiation, so the
/// normalised weights w̄_i never overflow or underflow to all-zero.
///
/// | law | w_i | needs |
/// |---|---|---|
/// | `distance` (W1, Blumenthal 2007) | d̂_i^(−g), d̂_i = d0·10^((P0−RSS_i)/(10n)) | P0, n |
/// | `power` (W2) | (10^(RSS_i/10))^g = P_i[mW]^g | — |
/// | `amplitude` (W3) | (10^(RSS_i/20))^g | — |
/// | `db` (W4) | max(RSS_i − r_ref, 0)^g | reference level r_ref below every weighted RSS |
///
/// Equivalences [D]: with common P0, n: W2(g) ≡ W1(n·g) and W3(g) ≡ W2(g/2) after
/// normalisation (tested).
public enum WeightLaw: String, Sendable, CaseIterable {
    case distance, power, amplitude, db

    /// log w for one AP; nil means weight 0 (W4 at or below the reference level).
    public func logWeight(rss: Double, exponent g: Double, p0: Double, n: Double, dbReference: Double) -> Double? {
        let ln10 = log(10.0)
        switch self {
        case .distance: return -g * ln10 * (p0 - rss) / (10 * n)   // log d̂^(−g), d0 = 1 m
        case .power: return g * rss * ln10 / 10
        case .amplitude: return g * rss * ln10 / 20
        case .db:
            let x = rss - dbReference
            return x > 0 ? g * log(x) : nil
        }
    }
}

/// MAC address helpers for AP filtering.
public enum MACAddress {
    /// Normalised lower-case form. A spelling that is already ASCII without capitals (what
    /// the readers, the radio map and the server's parser hand over) is returned as it is: no
    /// new string per look-up in the estimators' per-scan loops.
    public static func normalize(_ s: String) -> String {
        var s = s
        let plain = s.withUTF8 { b in !b.contains { $0 >= 0x80 || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) } }
        return plain ? s : s.lowercased()
    }

    /// Locally administered (bit 0x02 of the first octet): mobile hotspots, randomised MACs,
    /// and secondary BSSIDs of multi-BSSID radios.
    public static func isLocallyAdministered(_ s: String) -> Bool {
        let hex = s.prefix(2)
        guard hex.count == 2, let b = UInt8(hex, radix: 16) else { return false }
        return b & 0x02 != 0
    }

    /// The MAC without its last hex digit: BSSIDs of one physical radio (multi-SSID, and
    /// many vendors' 2.4/5 GHz pairs) often differ only there. Heuristic, off by default.
    public static func nibbleGroup(_ s: String) -> String { String(normalize(s).dropLast()) }
}
