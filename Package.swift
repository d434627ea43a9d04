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
        ]),
        .executableTarget(name: "posfuse", dependencies: [
            "Positioning", "Replay",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
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
    ]
)
