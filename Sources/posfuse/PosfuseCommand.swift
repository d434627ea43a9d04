import ArgumentParser

@main
struct Posfuse: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posfuse",
        abstract: "Refine smartphone positions by sensor fusion and measure their accuracy against ground truth.",
        discussion: """
        Positions are WGS84 latitude/longitude (degrees) at the edges and local ENU metres inside.
        Exit codes: 0 success, 1 accuracy regression, 64 usage error, 65 bad data, 74 I/O error.
        """.reflowed,
        version: "0.1.0",
        subcommands: Subcommands.all
    )
}

/// Every subcommand, in the order `--help` lists them. Add new commands here.
enum Subcommands {
    static let all: [ParsableCommand.Type] = [
        Version.self,
        Evaluate.self, Calibrate.self, CellDB.self, RadioMap.self,
        Import.self,
        Validate.self,
        ReplayCommand.self,
        PipelineTemplateCommand.self,
        Sweep.self,
        ScoreCommand.self,
        Export.self,
        Compare.self,
        Simulate.self,
        Regress.self,
        Report.self,
        Refine.self,
        ServeCommand.self,
    ]
}

struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the posfuse version.",
                                                    discussion: "Example:\n  posfuse version        # prints e.g. `posfuse 0.1.0`")
    func run() { print("posfuse \(Posfuse.configuration.version)") }
}
