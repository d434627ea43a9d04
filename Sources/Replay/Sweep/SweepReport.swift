import Foundation
import Positioning
import Regress

/// The sweep section of the HTML report (`posfuse sweep … --html FILE`): per input × source,
/// a table of each metric's mean and interval per grid point, and for each metric a plot of
/// the mean over each swept option, with its confidence band, one line per combination of
/// the other options (up to 8). A non-numeric option is plotted at positions 0, 1, …
/// (named in the legend of the axis label).
public struct SweepReport: Sendable {
    public var summary: SweepSummary
    public init(summary: SweepSummary) { self.summary = summary }

    static let palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7B3294", "#7F7F7F"]

    /// The whole page: the HTML report with the sweep section only.
    public func render() -> String {
        HTMLReport(title: "posfuse sweep: \(summary.plan.study.name)", traces: [], sections: [section()]).render()
    }

    public func section() -> String {
        let plan = summary.plan
        let pct = Int((summary.confidence * 100).rounded())
        var h = "<section class=\"trace\" id=\"sweep\">\n<h2>Sweep \(htmlEscape(plan.study.name))</h2>\n"
        h += "<p class=\"meta\">\(plan.points.count) grid points × \(plan.study.inputs.count) inputs · \(plan.runs.count) runs (\(summary.stored) stored"
        h += summary.missing > 0 ? ", \(summary.missing) missing)" : ")"
        h += " · baseline \(htmlEscape(plan.pointLabel(plan.baselinePoint))) · bands and intervals: \(pct) % (t over seeds, block bootstrap on a recording) · * = difference from the baseline excludes 0</p>\n"
        var groups: [(String, String)] = []
        for c in summary.cells where !groups.contains(where: { $0 == (c.input, c.source) }) { groups.append((c.input, c.source)) }
        var plotIndex = 0
        for (input, source) in groups {
            let cells = summary.cells.filter { $0.input == input && $0.source == source }
            h += "<h3>\(htmlEscape(input)) / \(htmlEscape(source))</h3>\n"
            h += table(cells)
            h += "<div class=\"row small\">\n"
            let metrics = plan.study.metrics.filter { m in cells.contains { $0.metric == m } }
            for m in metrics {
                for (pi, p) in plan.study.parameters.enumerated() {
                    h += "<figure><figcaption>\(htmlEscape(m)) over \(htmlEscape(p.name))</figcaption>"
                    h += plot(cells.filter { $0.metric == m }, metric: m, parameter: pi, id: "sweep-plot-\(plotIndex)")
                    h += "</figure>\n"
                    plotIndex += 1
                }
            }
            h += "</div>\n"
        }
        if !summary.best.isEmpty {
            h += "<h3>Best point per metric</h3>\n<table class=\"metrics\"><thead><tr><th>input / source</th><th>metric</th><th>point</th><th>mean</th></tr></thead><tbody>"
            for b in summary.best {
                h += "<tr><td>\(htmlEscape(b.input)) / \(htmlEscape(b.source))</td><td>\(htmlEscape(b.metric))</td><td>\(htmlEscape(plan.pointLabel(b.point)))</td><td>\(SweepSummary.num(b.mean))</td></tr>"
            }
            h += "</tbody></table>\n"
        }
        h += "</section>\n"
        return h
    }

    func table(_ cells: [SweepSummary.Cell]) -> String {
        let plan = summary.plan
        let metrics = plan.study.metrics.filter { m in cells.contains { $0.metric == m } }
        var h = "<table class=\"metrics\"><thead><tr><th>point</th>"
        for m in metrics { h += "<th>\(htmlEscape(m))</th><th>Δ baseline</th>" }
        h += "</tr></thead><tbody>"
        for pt in plan.points {
            let row = cells.filter { $0.point == pt.index }
            if row.isEmpty { continue }
            h += "<tr><td>\(htmlEscape(plan.pointLabel(pt.index)))\(pt.index == plan.baselinePoint ? " (base)" : "")</td>"
            for m in metrics {
                guard let c = row.first(where: { $0.metric == m }) else { h += "<td class=\"na\">–</td><td></td>"; continue }
                let ci = c.low.map { " [\(SweepSummary.num($0)), \(SweepSummary.num(c.high))]" } ?? ""
                h += "<td>\(SweepSummary.num(c.mean))\(ci)</td>"
                if let d = c.diff {
                    let dci = c.diffLow.map { " [\(SweepSummary.num($0)), \(SweepSummary.num(c.diffHigh))]" } ?? ""
                    h += "<td\(c.significant ? " class=\"warn\"" : "")>\(d >= 0 ? "+" : "")\(SweepSummary.num(d))\(dci)\(c.significant ? " *" : "")</td>"
                } else {
                    h += "<td></td>"
                }
            }
            h += "</tr>"
        }
        return h + "</tbody></table>\n"
    }

    /// Mean (line) and interval (band) of one metric over parameter `pi`, a line per
    /// combination of the other parameters' values.
    func plot(_ cells: [SweepSummary.Cell], metric: String, parameter pi: Int, id: String) -> String {
        let plan = summary.plan
        let p = plan.study.parameters[pi]
        let numeric = p.values.allSatisfy { if case .number = $0 { return true }; return false }
        func x(_ v: ConfigValue) -> Double {
            if numeric, case .number(let d) = v { return d }
            return Double(p.values.firstIndex(of: v) ?? 0)
        }
        // Series: the other parameters' values.
        var series: [String: [(x: Double, mean: Double, lo: Double?, hi: Double?)]] = [:]
        var order: [String] = []
        let names = SweepPlan.shortNames(plan.study.parameters)
        for c in cells {
            let vals = plan.points[c.point].values
            let label = vals.enumerated().filter { $0.offset != pi }.map { "\(names[$0.offset])=\(SweepKeys.text($0.element))" }.joined(separator: " ")
            if series[label] == nil { order.append(label) }
            series[label, default: []].append((x(vals[pi]), c.mean, c.low, c.high))
        }
        let shown = Array(order.prefix(Self.palette.count))
        let all = shown.flatMap { series[$0]! }
        let ys = all.flatMap { [$0.mean, $0.lo ?? $0.mean, $0.hi ?? $0.mean] }.filter(\.isFinite)
        let xs = all.map(\.x)
        guard let ymin = ys.min(), let ymax = ys.max(), let xmin = xs.min(), let xmax = xs.max() else {
            return "<p class=\"note\">no data</p>"
        }
        let ypad = ymax > ymin ? (ymax - ymin) * 0.08 : max(abs(ymax) * 0.05, 0.01)
        let xpad = xmax > xmin ? 0 : 0.5
        var xlabel = p.name
        if !numeric { xlabel += " (" + p.values.enumerated().map { "\($0.offset)=\(SweepKeys.text($0.element))" }.joined(separator: ", ") + ")" }
        var svg = SVGPlot(id: id, title: "\(metric) over \(p.name)",
                          x: .init(min: xmin - xpad, max: xmax + xpad, label: xlabel),
                          y: .init(min: ymin - ypad, max: ymax + ypad, label: metric), width: 380, height: 260)
        for (k, label) in shown.enumerated() {
            let pts = series[label]!.sorted { $0.x < $1.x }
            let color = Self.palette[k]
            let band = pts.compactMap { q -> (x: Double, lo: Double, hi: Double)? in
                guard let lo = q.lo, let hi = q.hi else { return nil }
                return (q.x, lo, hi)
            }
            if band.count == pts.count { svg.band(band, color: color, opacity: 0.15) }
            svg.line(pts.map { ($0.x, $0.mean) }, color: color, label: label.isEmpty ? nil : label)
            svg.points(pts.map { ($0.x, $0.mean) }, color: color, radius: 2.2)
        }
        var out = svg.render()
        if order.count > shown.count { out += "<p class=\"note\">\(order.count - shown.count) more combinations not drawn (see the table).</p>" }
        return out
    }
}
