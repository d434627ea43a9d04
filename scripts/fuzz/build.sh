#!/usr/bin/env bash
# Builds the fuzz targets (Tests/Fuzz/posfuse-fuzz) with libFuzzer: release mode, every Swift
# module instrumented (-sanitize=fuzzer), in its own scratch path .build-fuzz so the normal
# .build is untouched. Prints the binary's path. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release --scratch-path .build-fuzz --product posfuse-fuzz \
  -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING >&2
echo "$(swift build -c release --scratch-path .build-fuzz --show-bin-path)/posfuse-fuzz"
