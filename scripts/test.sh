#!/usr/bin/env bash
# README command 2: set up (scripts/setup.sh), build everything (the posfuse executable
# first: the end-to-end tests in Tests/CLITests run it) and run the whole test suite.
# Extra arguments go to `swift test` (e.g. --filter ScorerTests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build
swift test "$@"
