import ArgumentParser

/// Benchmarks for posfuse (not shipped). Run all of them with `scripts/bench/run-all.sh`,
/// which builds this target in release mode. Add a benchmark as a subcommand file in this
/// folder and one line in `BenchCommands.all`.
@main
struct PosfuseBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "posfuse-bench",
        abstract: "posfuse benchmarks: throughput and peak memory, side by side with reference implementations.",
        subcommands: BenchCommands.all
    )
}

enum BenchCommands {
    static let all: [ParsableCommand.Type] = [
        GenerateTrace.self,
        ReadTrace.self,
        FloorPass.self,
        ReaderSuite.self,
        ReplayOne.self,
        ReplaySuite.self,
        TDoABench.self,
        FingerprintBench.self,
        FilterBench.self,
        RefineOne.self,
        RefineSuite.self,
    ]
}
