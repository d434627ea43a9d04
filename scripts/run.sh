#!/usr/bin/env bash
# README command 1: set up (scripts/setup.sh), build posfuse in release mode and replay
# every bundled trace in Traces/, printing the per-source score table.
# Extra arguments go to `posfuse replay` (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product posfuse
"$(swift build -c release --show-bin-path)/posfuse" replay Traces/ "$@"
