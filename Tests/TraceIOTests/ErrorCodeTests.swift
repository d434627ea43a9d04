import Foundation
import Positioning
import Testing
import TestSupport
import TraceIO

/// The error codes are enums whose raw values are wire strings: scripts match on them, so each
/// case's string is pinned here, and docs/cli.md must list exactly the cases there are.
@Suite struct ErrorCodeTests {
    @Test func dataErrorCodesKeepTheirStrings() {
        let expected: [DataErrorCode: String] = [
            .invalidJSON: "invalid_json", .missingKey: "missing_key", .wrongType: "wrong_type",
            .invalidValue: "invalid_value", .outOfOrder: "out_of_order", .missingHeader: "missing_header",
            .tooLarge: "too_large", .invalidUTF8: "invalid_utf8", .io: "io", .usage: "usage",
            .invalidCellDB: "invalid_cell_db", .invalidRadioMap: "invalid_radio_map",
        ]
        #expect(Set(expected.keys) == Set(DataErrorCode.allCases))
        for c in DataErrorCode.allCases { #expect(c.rawValue == expected[c], "\(c)") }
        // The default code of a data error, and what lenient reading counts by.
        #expect(TraceDataError(file: "f", line: 1, reason: "r").code == .invalidValue)
    }

    @Test func estimationFailureCodesKeepTheirStrings() {
        let failures: [(EstimationFailure, String)] = [
            (.tooFewAnchors(needed: 3, got: 1), "too_few_anchors"), (.collinearGeometry, "collinear_geometry"),
            (.coplanarGeometry, "coplanar_geometry"), (.ambiguousRoots, "ambiguous_roots"),
            (.saturatedTimingAdvance, "saturated_ta"), (.unknownAnchor("a"), "unknown_anchor"),
            (.zeroDisplacement, "zero_displacement"), (.scaleRatioNearOne, "scale_ratio_near_one"),
            (.lateralOnlyMotion, "lateral_only_motion"), (.noHeading, "no_heading"), (.notConverged, "not_converged"),
            (.inconsistentMeasurements("x"), "inconsistent_measurements"), (.missingInput("y"), "missing_input"),
        ]
        // Every code is reached by a failure, and each failure's wire string is the pinned one.
        #expect(Set(failures.map(\.0.kind)) == Set(EstimationFailure.Code.allCases))
        for (f, s) in failures {
            #expect(f.code == s, "\(f)")
            #expect(f.kind.rawValue == s)
        }
    }

    @Test func docsListEveryCode() throws {
        let cli = try DocTables.doc("cli.md")
        let data = DocTables.column(0, afterLineContaining: "**Data errors**", in: cli)
        #expect(data == DataErrorCode.allCases.map(\.rawValue))
        let failures = DocTables.column(0, afterLineContaining: "**Estimation failures**", in: cli)
        #expect(failures == EstimationFailure.Code.allCases.map(\.rawValue))
    }
}
