import Foundation

/// One scored epoch of one source: an estimate matched to ground truth.
///
/// Units: `time` trace seconds; `error` horizontal error ‖p̂ − p‖₂ in m; `radius95` the
/// radius (m) of the circle holding 95 % of the estimate's reported Gaussian; `nees` the
/// normalised estimation error squared eᵀP⁻¹e (dimensionless, χ²₂ when consistent);
/// `estimate` and `truth` local ENU (x = East, y = North) in m, when known.
public struct EpochSample: Sendable, Equatable {
    public var time: Double
    public var error: Double
    public var radius95: Double?
    public var nees: Double?
    public var estimate: SIMD2<Double>?
    public var truth: SIMD2<Double>?
    public init(time: Double, error: Double, radius95: Double? = nil, nees: Double? = nil,
                estimate: SIMD2<Double>? = nil, truth: SIMD2<Double>? = nil) {
        self.time = time; self.error = error; self.radius95 = radius95; self.nees = nees
        self.estimate = estimate; self.truth = truth
    }
}

/// The scores of one source on one trace: the summary metrics (`count`, `mean_m`,
/// `p95_m`, `inside95`, `anees`, … as named in `posfuse replay --json`) and, when the
/// run kept them, the per-epoch samples they were computed from.
public struct SourceResult: Sendable, Equatable {
    public var source: String
    /// Metric name → value. Metrics the run could not compute (no covariance, no epochs)
    /// are absent, never NaN.
    public var metrics: [String: Double]
    public var epochs: [EpochSample]?
    public init(source: String, metrics: [String: Double], epochs: [EpochSample]? = nil) {
        self.source = source; self.metrics = metrics; self.epochs = epochs
    }
}

/// The results of one trace in a run.
public struct TraceResult: Sendable, Equatable {
    public var trace: String
    public var sources: [SourceResult]
    public var skipped: Int
    public init(trace: String, sources: [SourceResult], skipped: Int = 0) {
        self.trace = trace; self.sources = sources; self.skipped = skipped
    }
    public func source(_ name: String) -> SourceResult? { sources.first { $0.source == name } }
}

/// A whole run (a `posfuse replay --json` output or a results database run), the input
/// of `posfuse compare` and `posfuse regress`.
public struct RunResults: Sendable, Equatable {
    public var label: String
    public var traces: [TraceResult]
    public init(label: String, traces: [TraceResult]) { self.label = label; self.traces = traces }
    public func trace(_ name: String) -> TraceResult? { traces.first { $0.trace == name } }
}

/// A results file that cannot be read (CLI exit 65).
public struct ResultsDataError: Error, Sendable, CustomStringConvertible {
    public var file: String
    public var reason: String
    public init(file: String, reason: String) { self.file = file; self.reason = reason }
    public var description: String { "\(file): \(reason)" }
}

extension RunResults {
    /// Parse the JSON printed by `posfuse replay --json` (contract in COORDINATION.md):
    /// `{"traces":[{"trace":…, "scores":[{"source":…, "count":…, "mean_m":…, …,
    /// "epochs":{…}}], "skipped":N}]}`. Every numeric field of a score other than
    /// `source` is a metric; `null` means "not computed". The optional `epochs` object
    /// (`posfuse replay --json --epochs`) holds equal-length columns `t`, `e_m`, and
    /// optionally `r95_m`, `nees`, `x_m`, `y_m`, `gt_x_m`, `gt_y_m` (null entries allowed
    /// except in `t` and `e_m`).
    public static func parseJSON(_ data: Data, file: String) throws -> RunResults {
        let root: Any
        do { root = try JSONSerialization.jsonObject(with: data) } catch {
            throw ResultsDataError(file: file, reason: "not JSON: \(error.localizedDescription)")
        }
        guard let obj = root as? [String: Any], let traces = obj["traces"] as? [[String: Any]] else {
            throw ResultsDataError(file: file, reason: "expected an object with a \"traces\" array")
        }
        var out: [TraceResult] = []
        for (i, t) in traces.enumerated() {
            guard let name = t["trace"] as? String else {
                throw ResultsDataError(file: file, reason: "traces[\(i)]: missing \"trace\" name")
            }
            let scores = t["scores"] as? [[String: Any]] ?? []
            var sources: [SourceResult] = []
            for (j, s) in scores.enumerated() {
                guard let src = s["source"] as? String else {
                    throw ResultsDataError(file: file, reason: "traces[\(i)].scores[\(j)]: missing \"source\"")
                }
                var metrics: [String: Double] = [:]
                for (k, v) in s where k != "source" && k != "epochs" {
                    if let x = jsonNumber(v) { metrics[k] = x }
                }
                var epochs: [EpochSample]?
                if let e = s["epochs"] as? [String: Any] {
                    epochs = try parseEpochs(e, file: file, at: "traces[\(i)].scores[\(j)].epochs")
                }
                sources.append(SourceResult(source: src, metrics: metrics, epochs: epochs))
            }
            out.append(TraceResult(trace: name, sources: sources, skipped: jsonNumber(t["skipped"] as Any).map { Int($0) } ?? 0))
        }
        return RunResults(label: file, traces: out)
    }

    static func parseEpochs(_ e: [String: Any], file: String, at path: String) throws -> [EpochSample] {
        func column(_ k: String) -> [Double?]? {
            guard let a = e[k] as? [Any] else { return nil }
            return a.map(jsonNumber)
        }
        guard let t = column("t"), let err = column("e_m") else {
            throw ResultsDataError(file: file, reason: "\(path): needs columns \"t\" and \"e_m\"")
        }
        let n = t.count
        let cols = ["e_m", "r95_m", "nees", "x_m", "y_m", "gt_x_m", "gt_y_m"].compactMap { k in column(k).map { (k, $0) } }
        for (k, c) in cols where c.count != n {
            throw ResultsDataError(file: file, reason: "\(path): column \"\(k)\" has \(c.count) entries, \"t\" has \(n)")
        }
        let r95 = column("r95_m"), nees = column("nees")
        let x = column("x_m"), y = column("y_m"), gx = column("gt_x_m"), gy = column("gt_y_m")
        var out: [EpochSample] = []
        out.reserveCapacity(n)
        for i in 0..<n {
            guard let ti = t[i], let ei = err[i], ei >= 0 else {
                throw ResultsDataError(file: file, reason: "\(path)[\(i)]: \"t\" and \"e_m\" must be finite (e_m ≥ 0)")
            }
            var est: SIMD2<Double>?, tru: SIMD2<Double>?
            if let xi = x?[i], let yi = y?[i] { est = SIMD2(xi, yi) }
            if let xi = gx?[i], let yi = gy?[i] { tru = SIMD2(xi, yi) }
            out.append(EpochSample(time: ti, error: ei, radius95: r95?[i] ?? nil, nees: nees?[i] ?? nil,
                                   estimate: est, truth: tru))
        }
        return out
    }

    /// Load a run from a file: a `posfuse replay --json` output (JSON).
    public static func load(url: URL) throws -> RunResults {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw ResultsDataError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        var r = try parseJSON(data, file: url.path)
        r.label = url.lastPathComponent
        return r
    }
}

/// A finite JSON number (not a boolean, which Foundation also bridges to NSNumber), else nil.
func jsonNumber(_ v: Any) -> Double? {
    guard let n = v as? NSNumber, String(cString: n.objCType) != "c", n.doubleValue.isFinite else { return nil }
    return n.doubleValue
}

extension EpochSample {
    /// The epochs as the columnar JSON object of `posfuse replay --json --epochs`.
    public static func jsonColumns(_ epochs: [EpochSample]) -> [String: Any] {
        func col(_ f: (EpochSample) -> Double?) -> [Any] { epochs.map { f($0).map { $0 as Any } ?? NSNull() } }
        var o: [String: Any] = ["t": epochs.map(\.time), "e_m": epochs.map(\.error)]
        if epochs.contains(where: { $0.radius95 != nil }) { o["r95_m"] = col(\.radius95) }
        if epochs.contains(where: { $0.nees != nil }) { o["nees"] = col(\.nees) }
        if epochs.contains(where: { $0.estimate != nil }) {
            o["x_m"] = col { $0.estimate?.x }; o["y_m"] = col { $0.estimate?.y }
        }
        if epochs.contains(where: { $0.truth != nil }) {
            o["gt_x_m"] = col { $0.truth?.x }; o["gt_y_m"] = col { $0.truth?.y }
        }
        return o
    }
}
