import Foundation
import Positioning
import Refine
import Testing

/// `ReportRefiner` as a library (the CLI's stream, golden bytes and evidence cases are in
/// CLITests/Refine*Tests): one record in, one GeoJSON Feature out.
@Suite struct ReportRefinerTests {
    static func refine(_ json: String, line: Int = 1) throws -> (ReportRefiner.Outcome, [String: Any]) {
        let refiner = try ReportRefiner()
        var out: [UInt8] = []
        let outcome = refiner.refine(json: Array(json.utf8), file: "r.jsonl", line: line, into: &out)
        let feature = try #require(try JSONSerialization.jsonObject(with: Data(out)) as? [String: Any])
        return (outcome, feature)
    }

    @Test func aReportWithoutEvidenceKeepsItsPositionAndItsAccuracy() throws {
        let (outcome, f) = try Self.refine(#"{"id":"a","lat":48.1,"lon":11.5,"accuracy_m":10}"#)
        #expect(outcome.status == .reported)
        let p = try #require(f["properties"] as? [String: Any])
        let c = try #require((f["geometry"] as? [String: Any])?["coordinates"] as? [Double])
        #expect(abs(c[0] - 11.5) < 1e-9 && abs(c[1] - 48.1) < 1e-9)
        // The 68 % radius r gives σ = r / √(−2 ln 0.32) per axis; the 95 % radius of a circular
        // 2-D normal is σ·√(−2 ln 0.05) (χ²₂ quantile), whatever the filter's frame.
        let sigma = 10 / (-2 * log(0.32)).squareRoot()
        let r95 = try #require(p["radius95_m"] as? Double)
        #expect(abs(r95 - sigma * (-2 * log(0.05)).squareRoot()) < 1e-6)
        #expect(p["sources_used"] as? [String] == ["gnss"] && p["status"] as? String == "reported")
    }

    @Test func aBadRecordIsOneErrorFeatureNamingFileAndLine() throws {
        let (outcome, f) = try Self.refine(#"{"id":"b","lat":"x"}"#, line: 2)
        #expect(outcome.status == .error)
        let p = try #require(f["properties"] as? [String: Any])
        #expect(p["status"] as? String == "error" && p["id"] as? String == "b")
        #expect((p["error"] as? String)?.hasPrefix("r.jsonl:2: ") == true)
        #expect(f["geometry"] is NSNull)
    }

    @Test func reportsOfOneTileShareItsFrame() {
        // Tiles are 0.05° squares centred on multiples of 0.05°.
        let a = ReportRefiner.frame(latitude: 48.1001, longitude: 11.5001).origin
        let b = ReportRefiner.frame(latitude: 48.12, longitude: 11.49).origin
        let c = ReportRefiner.frame(latitude: 48.13, longitude: 11.5).origin
        #expect(a.latitude == b.latitude && a.longitude == b.longitude)
        #expect(abs(a.latitude - 48.1) < 1e-12 && abs(a.longitude - 11.5) < 1e-12)
        #expect(abs(c.latitude - 48.15) < 1e-12)
    }
}
