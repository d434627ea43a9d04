// swift-tools-version:6.0
import PackageDescription

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
    ],
    targets: [
        // GNU GSL (libgsl-dev): least squares, linear algebra, RNG, statistics.
        .systemLibrary(
            name: "CGSL",
            pkgConfig: "gsl",
            providers: [.apt(["libgsl-dev"]), .brew(["gsl"])]
        ),
        // Estimators, measurement models, filters. Depends on GSL only.
        .target(name: "Positioning", dependencies: ["CGSL"]),
        // Trace reading/writing, simulation, replay, scoring, result storage.
        .target(name: "Replay", dependencies: [
            "Positioning", "CGSL",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Yams", package: "Yams"),
        ], exclude: ["Server"]),
        // `posfuse serve` (docs/serve.md): the HTTP service. Its own module so that the Replay
        // library does not pull in SwiftNIO.
        .target(name: "PosfuseServer", dependencies: [
            "Replay", "Positioning",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], path: "Sources/Replay/Server"),
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
        .testTarget(name: "PositioningTests", dependencies: ["Positioning", "CGSL"]),
        .testTarget(name: "ReplayTests", dependencies: ["Replay", "Positioning"],
                    resources: []),
        .testTarget(name: "CLITests", dependencies: ["Replay", "Positioning"]),
        .testTarget(name: "ServerTests", dependencies: [
            "PosfuseServer", "Replay", "Positioning",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Yams", package: "Yams"),
        ], exclude: ["Fixtures"]),
    ]
)
