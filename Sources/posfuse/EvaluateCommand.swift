import ArgumentParser
import Foundation
import Positioning
import Replay

/// `posfuse evaluate …`: evaluations on recorded data (docs/radio.md).
struct Evaluate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluate estimators on recorded data against ground truth.",
        subcommands: [EvaluateRadio.self, EvaluateConsistency.self]
    )
}

/// Shared WCL options of the radio commands: the `wcl` stage's options (`WCLStage.Options`),
/// with their defaults.
struct WCLCommandOptions: ParsableArguments {
    typealias O = WCLStage.Options
    @Option(name: .customLong("weight-law"), help: "WCL weight law: \(O.weightLaw.doc).") var weightLaw: String = O.weightLaw.text
    @Option(help: "WCL weight exponent g.") var exponent: Double = O.exponent.number
    @Option(name: .customLong("k"), help: "WCL: number of strongest APs.") var k: Int = O.k.integer
    @Option(name: .customLong("rss-min"), help: "WCL: weakest RSS used, dBm.") var rssMin: Double = O.rssMin.number
    @Option(name: .customLong("max-age"), help: "WCL: drop scan entries last seen more than this before the scan, s (default: no limit, as the wcl stage's max_age_s).")
    var maxAge: Double?

    func estimator() throws -> WCLEstimator {
        guard let law = WeightLaw(rawValue: weightLaw) else { throw ValidationError("--weight-law: expected distance, power, amplitude or db") }
        guard k >= 1 else { throw ValidationError("--k must be ≥ 1") }
        var e = WCLEstimator(weightLaw: law, exponent: exponent, maxAnchors: k, rssMin: rssMin)
        e.maxAge = maxAge
        return e
    }

    /// The same knobs as `wcl` stage options.
    var stageOptions: StageOptions {
        var v: [String: ConfigValue] = [O.weightLaw.key: .string(weightLaw), O.exponent.key: .number(exponent),
                                        O.k.key: .number(Double(k)), O.rssMin.key: .number(rssMin)]
        if let maxAge { v[O.maxAge.key] = .number(maxAge) }
        return StageOptions(name: "wcl", values: v)
    }
}

func jsonObject<T: Encodable>(_ v: T) throws -> Any {
    try JSONSerialization.jsonObject(with: JSONEncoder().encode(v))
}
