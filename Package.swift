// swift-tools-version:6.0
import PackageDescription

/// The hot targets' release builds drop Swift's dynamic exclusivity checks (each read or write of
/// a class's stored property or a global goes through the runtime's access set: ~9 % of `refine`'s
/// and ~7 % of `replay`'s instructions by callgrind, docs/refine.md). The compile-time checks stay
/// everywhere, and debug builds (the whole test suite, `scripts/test.sh`) keep the dynamic ones,
/// so an overlapping access on any tested path still traps there.
let hotPathSettings: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "posfuse",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Positioning", targets: ["Positioning"]),
        .library(name: "Replay", targets: ["Replay"]),
        .executable(name: "posfuse", targets: ["posfuse"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // posfuse serve only (target PosfuseServer): HTTP server, PostgreSQL driver, logs, metrics.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Hummingbird's own NIO layer (already resolved through it): the body-timeout channel handler.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ],
    targets: [
        // GNU GSL (libgsl-dev): least squares, linear algebra, RNG, statistics.
        .systemLibrary(
            name: "CGSL",
            pkgConfig: "gsl",
            providers: [.apt(["libgsl-dev"]), .brew(["gsl"])]
        ),
        // exp over an array, bit-identical to the C library's (four at once with AVX2 + FMA): the
        // 95 % radius's quadrature (`Covariance2.circularRadius`). C for the vector intrinsics.
        .target(name: "CFastExp", path: "Sources/Positioning/CFastExp"),
        // Estimators, measurement models, filters. Depends on GSL only.
        .target(name: "Positioning", dependencies: ["CGSL", "CFastExp"], exclude: ["CFastExp"], swiftSettings: hotPathSettings),
        // The Replay library: one target per module under Sources/Replay (docs/architecture.md
        // lists what lives where and draws the arrows; the compiler enforces them).
        // Formats: trace JSON Lines, reference.json, results JSON, pipeline YAML; progress.
        .target(name: "TraceIO", dependencies: ["Positioning", .product(name: "Yams", package: "Yams")],
                path: "Sources/Replay/TraceIO", swiftSettings: hotPathSettings),
        // The only GRDB user: cell database, radio-map database, results database.
        .target(name: "Storage", dependencies: ["TraceIO", "Positioning", .product(name: "GRDB", package: "GRDB.swift")],
                path: "Sources/Replay/Storage"),
        // The one replayer and scorer: truth tracks, scoring, statistics, estimates files.
        .target(name: "Scoring", dependencies: ["TraceIO", "Storage", "Positioning", "CGSL"],
                path: "Sources/Replay/Scoring", swiftSettings: hotPathSettings),
        // Map builders from recorded walks: radio map, fingerprint map, cell sites, coverage.
        .target(name: "Survey", dependencies: ["Scoring", "Storage", "TraceIO", "Positioning"],
                path: "Sources/Replay/Survey"),
        // Importers (NMEA, GPX, GnssLogger, ms-indoor, OpenCellID, …) and exporters (CSV, GeoJSON, KML, GPX).
        .target(name: "Interop", dependencies: ["Storage", "TraceIO", "Positioning"],
                path: "Sources/Replay/Interop"),
        // Scenario YAML → simulated traces with truth.
        .target(name: "Simulation", dependencies: ["TraceIO", "Positioning", "CGSL", .product(name: "Yams", package: "Yams")],
                path: "Sources/Replay/Simulation"),
        // Protocols over datasets: consistency, calibration fits, radio/GNSS evaluations.
        .target(name: "Evaluation", dependencies: ["Scoring", "Survey", "Interop", "Simulation", "TraceIO", "Positioning", "CGSL"],
                path: "Sources/Replay/Evaluation"),
        // Baselines, regression checks, run comparison, block bootstrap, HTML report.
        .target(name: "Regress", dependencies: ["Evaluation", "Scoring", "TraceIO", "Positioning", "CGSL",
                                                .product(name: "Yams", package: "Yams")],
                path: "Sources/Replay/Regress"),
        // posfuse sweep: study files, grids of options × recordings/seeds, runs, summaries, Slurm scripts.
        .target(name: "Sweep", dependencies: ["Regress", "Scoring", "Simulation", "Storage", "TraceIO", "Positioning", "CGSL",
                                              .product(name: "Yams", package: "Yams")],
                path: "Sources/Replay/Sweep"),
        // refine: crowdsourced report records in, refined positions out.
        .target(name: "Refine", dependencies: ["Storage", "TraceIO", "Positioning"],
                path: "Sources/Replay/Refine", swiftSettings: hotPathSettings),
        // Umbrella: `import Replay` re-exports every module above.
        .target(name: "Replay", dependencies: ["TraceIO", "Storage", "Scoring", "Survey", "Interop", "Simulation",
                                               "Evaluation", "Regress", "Sweep", "Refine", "Positioning"],
                path: "Sources/Replay/Replay"),
        // `posfuse serve` (docs/serve.md): the HTTP service. Its own module so that the Replay
        // library does not pull in SwiftNIO.
        .target(name: "PosfuseServer", dependencies: [
            "Replay", "Positioning", "TraceIO",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
        ], path: "Sources/Replay/Server", swiftSettings: hotPathSettings),
        .executableTarget(name: "posfuse", dependencies: [
            "Positioning", "Replay", "PosfuseServer",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Benchmarks (not shipped): `scripts/bench/run-all.sh` builds it in release mode and runs all.
        .executableTarget(name: "posfuse-bench", dependencies: [
            "Positioning", "Replay",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Benchmarks/posfuse-bench"),
        // Fuzz targets (not shipped): one binary, one target per parser (`posfuse-fuzz --list`).
        // scripts/fuzz/run-all.sh builds it with libFuzzer (-sanitize=fuzzer) in .build-fuzz; a
        // plain build replays corpus files through the targets' oracles (docs/fuzzing.md).
        .executableTarget(name: "posfuse-fuzz", dependencies: ["Positioning", "Replay"],
                          path: "Tests/Fuzz/posfuse-fuzz"),
        // Tests mirror the sources: one test target per module (Tests/<Module>Tests), plus
        // TestSupport (the CLI runner, package/shared-data paths, the seeded noise helpers, the
        // bundled-trace replay cache) that every Replay-side test target shares.
        .target(name: "TestSupport", dependencies: ["Replay", "Positioning"], path: "Tests/TestSupport"),
        .testTarget(name: "PositioningTests", dependencies: ["Positioning", "CGSL", "CFastExp"]),
        .testTarget(name: "TraceIOTests", dependencies: ["TraceIO", "Replay", "Positioning", "TestSupport"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "Replay", "Positioning", "TestSupport"]),
        .testTarget(name: "ScoringTests", dependencies: ["Scoring", "Replay", "Positioning", "TestSupport"]),
        .testTarget(name: "SurveyTests", dependencies: ["Survey", "Simulation", "Replay", "Positioning", "TestSupport",
                                                       .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "InteropTests", dependencies: ["Interop", "Replay", "Positioning", "TestSupport"]),
        .testTarget(name: "SimulationTests", dependencies: ["Simulation", "Replay", "Positioning", "TestSupport", "CGSL"]),
        .testTarget(name: "EvaluationTests", dependencies: ["Evaluation", "Replay", "Positioning", "TestSupport"]),
        .testTarget(name: "RegressTests", dependencies: ["Regress", "Replay", "Positioning", "TestSupport"]),
        .testTarget(name: "SweepTests", dependencies: ["Sweep", "Replay", "Positioning", "TestSupport"]),
        .testTarget(name: "RefineTests", dependencies: ["Refine", "Positioning"]),
        // End-to-end tests of the posfuse executable (they run the built binary).
        .testTarget(name: "CLITests", dependencies: ["Replay", "Positioning", "TestSupport"]),
        .testTarget(name: "ServerTests", dependencies: [
            "PosfuseServer", "Replay", "Positioning", "TestSupport",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Yams", package: "Yams"),
            .product(name: "GRDB", package: "GRDB.swift"),
        ], exclude: ["Fixtures"]),
    ]
)
