import ArgumentParser
import Positioning

struct PipelineTemplateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline-template",
        abstract: "Print the pipeline configuration template: every stage and option with its default.",
        discussion: """
        The text is generated from the stage option tables, the one place each option's key, \
        default, unit and meaning is declared; docs/pipeline.yaml is this output (a test fails \
        when it is stale). Copy it, change what you need, delete the rest.

        Example:
          posfuse pipeline-template > docs/pipeline.yaml
          posfuse pipeline-template > my.yaml && posfuse replay Traces --pipeline my.yaml
        """)
    func run() { print(PipelineTemplate.yaml(), terminator: "") }
}
