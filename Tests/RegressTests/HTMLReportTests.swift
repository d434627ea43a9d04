import Testing
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import Replay
import Positioning
@testable import Regress
import TestSupport

@Suite struct HTMLReportTests {
    func trace(walls: [Wall]) -> ReportTrace {
        let epochs = (0..<200).map { k -> EpochSample in
            let t = Double(k)
            let truth = SIMD2(10 * cos(t / 30), 6 * sin(t / 30))
            let e = SIMD2(0.8 * sin(t / 7), 0.5 * cos(t / 11))
            return EpochSample(time: t, error: (e.x * e.x + e.y * e.y).squareRoot(), radius95: 1.5,
                               nees: (e.x * e.x + e.y * e.y) / 0.36, estimate: truth + e, truth: truth)
        }
        var m = EpochMetrics.compute(epochs)
        m["count"] = 200
        let s = SourceResult(source: "wcl", metrics: m, epochs: epochs)
        let far = SourceResult(source: "cell", metrics: ["count": 1, "median_m": 900],
                               epochs: [EpochSample(time: 5, error: 900, radius95: nil, nees: nil, estimate: SIMD2(900, 0), truth: .zero)])
        return ReportTrace(name: "hall <1>", sources: [s, far], truth: epochs.map { ($0.time, $0.truth!) }, walls: walls)
    }

    /// Every inline <svg> must be well-formed XML.
    func svgs(_ html: String) -> [String] {
        var out: [String] = []
        var rest = html[...]
        while let a = rest.range(of: "<svg"), let b = rest.range(of: "</svg>", range: a.upperBound..<rest.endIndex) {
            out.append(String(rest[a.lowerBound..<b.upperBound]))
            rest = rest[b.upperBound...]
        }
        return out
    }

    @Test func floorPlanWallsScaleBarAndWellFormedSVG() {
        let walls = [Wall(a: SIMD2(-12, -8), b: SIMD2(12, -8)), Wall(a: SIMD2(12, -8), b: SIMD2(12, 8)), Wall(a: SIMD2(-12, 8), b: SIMD2(12, 8))]
        let html = HTMLReport(title: "t", traces: [trace(walls: walls)]).render()
        #expect(html.contains("class=\"walls\""))
        #expect(html.contains("over the floor plan"))
        #expect(html.contains("class=\"scalebar\"") && html.contains("class=\"north\""))
        #expect(html.contains("hall &lt;1&gt;") && !html.contains("hall <1>"))
        #expect(html.contains("1 estimates outside the view"))
        #expect(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"))
        #expect(html.contains("@media print"))
        let plots = svgs(html)
        #expect(plots.count == 5)  // cdf, trajectory, error wcl, error cell, nees wcl
        for s in plots {
            let p = XMLParser(data: Data(s.utf8))
            #expect(p.parse(), "malformed SVG: \(s.prefix(120))")
        }
    }

    @Test func localAxesWithoutFloorPlanAndEmptyRun() {
        let html = HTMLReport(title: "t", traces: [trace(walls: [])]).render()
        #expect(html.contains("(local axes)") && html.contains("East (m)") && !html.contains("class=\"walls\""))
        let empty = HTMLReport(title: "t", traces: [ReportTrace(name: "x", sources: [SourceResult(source: "gnss", metrics: ["count": 0])])]).render()
        #expect(empty.contains("no per-epoch errors"))
    }

    @Test func niceTicks() {
        #expect(SVGPlot.niceStep(0.23) == 0.5)
        #expect(SVGPlot.niceStep(7) == 10)
        #expect(SVGPlot.Axis(min: 0, max: 10, label: "").ticks() == [0, 2, 4, 6, 8, 10])
        #expect(SVGPlot.Axis(min: 0.01, max: 100, log: true, label: "").ticks() == [0.01, 0.1, 1, 10, 100])
    }
}
