import Foundation
import Positioning
import Yams

/// Reads a pipeline configuration file (YAML, `docs/pipeline.yaml`): a top-level `stages:`
/// mapping with one section per `StageRegistry` entry name, e.g.
/// `stages: { wcl: { enabled: true, weight_law: power, exponent: 1.0 } }`, into the
/// per-stage `StageOptions`. Unknown stage names are an error (a typo would otherwise
/// silently replay the default pipeline).
public enum PipelineConfig {
    public static func load(url: URL) throws -> [String: StageOptions] {
        let text: String
        do { text = try String(contentsOf: url, encoding: .utf8) } catch {
            throw ResultsDataError(file: url.path, reason: "cannot read: \(error.localizedDescription)")
        }
        return try parse(text, file: url.path)
    }

    /// Parses with `PipelineConfigLoader` (the one YAML → `StageOptions` parser), reporting
    /// problems as `ResultsDataError` (exit 65 in regress/compare/report/export).
    public static func parse(_ text: String, file: String) throws -> [String: StageOptions] {
        do { return try PipelineConfigLoader.parse(yaml: text, file: file) } catch let e as ConfigurationError {
            throw ResultsDataError(file: file, reason: e.reason(droppingFile: file))
        }
    }
}
