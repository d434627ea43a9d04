/// docs/pipeline.yaml, generated from the stage option tables (`StageRegistry.entries[].options`):
/// every stage and every option with its default, unit and meaning. Replaying with the file
/// gives exactly the numbers of a replay without `--pipeline` (a CLI test checks it), and a
/// test fails when the committed file differs from `PipelineTemplate.yaml` (regenerate with
/// `posfuse pipeline-template > docs/pipeline.yaml`).
public enum PipelineTemplate {
    /// Column of the comments.
    static let column = 33

    static let header = """
    # posfuse pipeline configuration: the template.
    # GENERATED from the stage option tables (Sources/Positioning: each stage's `Options`);
    # do not edit: change the table, then `posfuse pipeline-template > docs/pipeline.yaml`.
    #
    #   posfuse replay Traces/mall-sparse-ap --pipeline docs/pipeline.yaml
    #
    # This file lists every stage and every option with its DEFAULT value and unit, so
    # replaying with it gives exactly the numbers of a replay without --pipeline (a test checks
    # this). Copy it, change what you need, delete the rest: an absent key keeps its default;
    # an unknown stage or a value of the wrong type is an error (exit 65, naming the key).
    #
    # Stages run in this order for every event; each sees the outputs of the stages above it
    # (the filters consume the estimators' fixes). `enabled: false` removes a stage.
    # Options marked (advanced) rarely need changing. Options without a default (the stage
    # takes the value from the trace header, or does without) are shown commented out.
    # Models and measured figures: docs/radio.md, docs/acoustic-camloc.md, docs/fusion.md.
    stages:
    """

    /// The template text.
    public static func yaml(entries: [StageRegistry.Entry] = StageRegistry.entries) -> String {
        var lines = header.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let names = Set(entries.map(\.name))
        for (i, e) in entries.enumerated() {
            if i > 0 { lines.append("") }
            let t = e.options
            lines += commented("  \(e.name):", t.doc)
            lines += commented("    enabled: \(e.enabledByDefault)", t.enabledDoc)
            for o in t.options { lines += option(o, indent: "    ") }
            // Included tables of other stages are named in the stage's doc; a sub-table (options
            // of one method) follows, commented out.
            for sub in t.includes where !names.contains(sub.stage) {
                lines += commented("    # \(sub.stage)", sub.doc)
                for o in sub.options { lines += option(o, indent: "    ", forceComment: true) }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func option(_ o: OptionSpec, indent: String, forceComment: Bool = false) -> [String] {
        var comment = o.advanced ? "(advanced)" : ""
        let body = o.unit.isEmpty ? o.doc : (o.doc.isEmpty ? o.unit : o.unit + "; " + o.doc)
        if !body.isEmpty { comment += (comment.isEmpty ? "" : " ") + body }
        if let d = o.defaultValue {
            let text = o.shown ?? d.yamlText
            return commented(indent + (forceComment ? "# " : "") + "\(o.key): \(text)", comment)
        }
        let example = o.example?.yamlText ?? ""
        return commented(indent + "# \(o.key): \(example)", comment)
    }

    /// `code`, then the comment's first line at `column` (one space after a longer code), its
    /// further lines below at the same column, indented by two.
    static func commented(_ code: String, _ comment: String) -> [String] {
        guard !comment.isEmpty else { return [code] }
        let parts = comment.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let pad = code.count < column ? String(repeating: " ", count: column - code.count) : " "
        var out = [code + pad + "# " + parts[0]]
        for p in parts.dropFirst() { out.append(String(repeating: " ", count: column) + "#   " + p) }
        return out
    }
}
