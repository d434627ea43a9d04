import Foundation

/// A small SVG plotting kit for the offline HTML report: linear or log axes with "nice"
/// ticks, grid, polylines, filled bands, points and a legend. Output is plain inline SVG
/// text (no scripts, no external resources); coordinates are rounded to 0.1 px to keep the
/// file small.
package struct SVGPlot {
    package struct Axis {
        package var min: Double
        package var max: Double
        package var log: Bool = false
        package var label: String
        package init(min: Double, max: Double, log: Bool = false, label: String) {
            self.min = min; self.max = max; self.log = log; self.label = label
        }
        /// Map a data value to [0, 1].
        package func unit(_ v: Double) -> Double {
            if log {
                let a = Foundation.log10(Swift.max(min, 1e-300)), b = Foundation.log10(Swift.max(max, 1e-300))
                return (Foundation.log10(Swift.max(v, 1e-300)) - a) / (b - a)
            }
            return (v - min) / (max - min)
        }
        package func ticks() -> [Double] {
            if log {
                let a = Int(Foundation.log10(min).rounded(.down)), b = Int(Foundation.log10(max).rounded(.up))
                return (a...b).map { pow(10, Double($0)) }.filter { $0 >= min * 0.999 && $0 <= max * 1.001 }
            }
            let step = SVGPlot.niceStep((max - min) / 5)
            var t = (min / step).rounded(.up) * step
            var out: [Double] = []
            while t <= max + step * 1e-9 { out.append(abs(t) < step * 1e-9 ? 0 : t); t += step }
            return out
        }
    }

    /// 1, 2 or 5 × 10^k closest above `raw`.
    package static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let p = pow(10, (Foundation.log10(raw)).rounded(.down))
        let f = raw / p
        return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p
    }

    package var width: Double = 560
    package var height: Double = 300
    package var left: Double = 56, right: Double = 16, top: Double = 14, bottom: Double = 44
    package var x: Axis
    package var y: Axis
    package var id: String
    package var title: String
    private var body = ""
    private var legend: [(String, String, Bool)] = []   // label, colour, dashed

    package init(id: String, title: String, x: Axis, y: Axis, width: Double = 560, height: Double = 300) {
        self.id = id; self.title = title; self.x = x; self.y = y; self.width = width; self.height = height
    }

    package var plotW: Double { width - left - right }
    package var plotH: Double { height - top - bottom }
    package func px(_ v: Double) -> Double { left + x.unit(v) * plotW }
    package func py(_ v: Double) -> Double { top + (1 - y.unit(v)) * plotH }

    package static func r(_ v: Double) -> String {
        let q = (v * 10).rounded() / 10
        return q == q.rounded() ? String(Int(q)) : String(q)
    }

    /// Polyline through the points (data coordinates); non-finite points break the line.
    package mutating func line(_ pts: [(Double, Double)], color: String, width w: Double = 1.5, dashed: Bool = false,
                       label: String? = nil, cls: String = "series") {
        var segs: [[String]] = [[]]
        for (a, b) in pts {
            if a.isFinite && b.isFinite { segs[segs.count - 1].append("\(Self.r(px(a))),\(Self.r(py(b)))") } else if !segs.last!.isEmpty { segs.append([]) }
        }
        for s in segs where s.count >= 2 {
            body += "<polyline class=\"\(cls)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"\(w)\"\(dashed ? " stroke-dasharray=\"5 3\"" : "") points=\"\(s.joined(separator: " "))\"/>"
        }
        if let label { legend.append((label, color, dashed)) }
    }

    /// Filled band between lower and upper curves over x (data coordinates).
    package mutating func band(_ pts: [(x: Double, lo: Double, hi: Double)], color: String, opacity: Double = 0.2, label: String? = nil) {
        guard pts.count >= 2 else { return }
        let upper = pts.map { "\(Self.r(px($0.x))),\(Self.r(py($0.hi)))" }
        let lower = pts.reversed().map { "\(Self.r(px($0.x))),\(Self.r(py($0.lo)))" }
        body += "<polygon class=\"band\" fill=\"\(color)\" fill-opacity=\"\(opacity)\" stroke=\"none\" points=\"\((upper + lower).joined(separator: " "))\"/>"
        if let label { legend.append((label, color, false)) }
    }

    /// Horizontal reference line at y = v.
    package mutating func hline(_ v: Double, color: String, dashed: Bool = true, label: String? = nil) {
        guard v >= Swift.min(y.min, y.max), v <= Swift.max(y.min, y.max) else { return }
        body += "<line class=\"ref\" x1=\"\(Self.r(left))\" x2=\"\(Self.r(left + plotW))\" y1=\"\(Self.r(py(v)))\" y2=\"\(Self.r(py(v)))\" stroke=\"\(color)\" stroke-width=\"1\"\(dashed ? " stroke-dasharray=\"4 3\"" : "")/>"
        if let label { legend.append((label, color, dashed)) }
    }

    /// Small dots.
    package mutating func points(_ pts: [(Double, Double)], color: String, radius: Double = 1.6, label: String? = nil) {
        var d = ""
        for (a, b) in pts where a.isFinite && b.isFinite {
            let cx = px(a), cy = py(b)
            d += "M\(Self.r(cx - radius)) \(Self.r(cy))a\(radius) \(radius) 0 1 0 \(Self.r(2 * radius)) 0a\(radius) \(radius) 0 1 0 \(Self.r(-2 * radius)) 0"
        }
        if !d.isEmpty { body += "<path class=\"pts\" fill=\"\(color)\" fill-opacity=\"0.75\" d=\"\(d)\"/>" }
        if let label { legend.append((label, color, false)) }
    }

    /// Raw SVG in the plot area (already in pixel coordinates).
    package mutating func raw(_ s: String) { body += s }

    /// The finished `<svg>` element: axes, grid, clipped content, legend.
    package func render(tickFormat: (Double) -> String = SVGPlot.tick, xTicks: Bool = true, yTicks: Bool = true) -> String {
        var s = "<svg id=\"\(id)\" class=\"plot\" viewBox=\"0 0 \(Self.r(width)) \(Self.r(height))\" role=\"img\" aria-label=\"\(htmlEscape(title))\">"
        s += "<title>\(htmlEscape(title))</title>"
        s += "<defs><clipPath id=\"\(id)-clip\"><rect x=\"\(Self.r(left))\" y=\"\(Self.r(top))\" width=\"\(Self.r(plotW))\" height=\"\(Self.r(plotH))\"/></clipPath></defs>"
        s += "<rect class=\"frame\" x=\"\(Self.r(left))\" y=\"\(Self.r(top))\" width=\"\(Self.r(plotW))\" height=\"\(Self.r(plotH))\"/>"
        if xTicks {
            for t in x.ticks() {
                let X = Self.r(px(t))
                s += "<line class=\"grid\" x1=\"\(X)\" x2=\"\(X)\" y1=\"\(Self.r(top))\" y2=\"\(Self.r(top + plotH))\"/>"
                s += "<text class=\"tick\" x=\"\(X)\" y=\"\(Self.r(top + plotH + 14))\" text-anchor=\"middle\">\(tickFormat(t))</text>"
            }
        }
        if yTicks {
            for t in y.ticks() {
                let Y = Self.r(py(t))
                s += "<line class=\"grid\" x1=\"\(Self.r(left))\" x2=\"\(Self.r(left + plotW))\" y1=\"\(Y)\" y2=\"\(Y)\"/>"
                s += "<text class=\"tick\" x=\"\(Self.r(left - 5))\" y=\"\(Y)\" dy=\"3.5\" text-anchor=\"end\">\(tickFormat(t))</text>"
            }
        }
        s += "<text class=\"axis\" x=\"\(Self.r(left + plotW / 2))\" y=\"\(Self.r(height - 8))\" text-anchor=\"middle\">\(htmlEscape(x.label))</text>"
        s += "<text class=\"axis\" transform=\"translate(13 \(Self.r(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\">\(htmlEscape(y.label))</text>"
        s += "<g clip-path=\"url(#\(id)-clip)\">\(body)</g>"
        if !legend.isEmpty {
            var lx = left + 8, ly = top + 12
            s += "<g class=\"legend\">"
            for (label, color, dashed) in legend {
                let w = Double(label.count) * 6.2 + 30
                if lx + w > left + plotW { lx = left + 8; ly += 15 }
                s += "<rect x=\"\(Self.r(lx - 3))\" y=\"\(Self.r(ly - 9))\" width=\"\(Self.r(w))\" height=\"13\" class=\"legend-bg\"/>"
                s += "<line x1=\"\(Self.r(lx))\" x2=\"\(Self.r(lx + 18))\" y1=\"\(Self.r(ly - 3))\" y2=\"\(Self.r(ly - 3))\" stroke=\"\(color)\" stroke-width=\"3\"\(dashed ? " stroke-dasharray=\"4 2\"" : "")/>"
                s += "<text x=\"\(Self.r(lx + 22))\" y=\"\(Self.r(ly))\">\(htmlEscape(label))</text>"
                lx += w + 6
            }
            s += "</g>"
        }
        s += "</svg>"
        return s
    }

    package static func tick(_ v: Double) -> String {
        if v == 0 { return "0" }
        let a = abs(v)
        if a >= 1e5 || a < 1e-3 { return String(format: "%.0e", v) }
        if v == v.rounded() { return String(Int(v)) }
        return String(format: "%g", (v * 1e6).rounded() / 1e6)
    }
}

/// Escape text for HTML/SVG content and attributes.
package func htmlEscape(_ s: String) -> String {
    var o = ""
    for c in s {
        switch c {
        case "&": o += "&amp;"
        case "<": o += "&lt;"
        case ">": o += "&gt;"
        case "\"": o += "&quot;"
        default: o.append(c)
        }
    }
    return o
}
