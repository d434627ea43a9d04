#!/usr/bin/env bash
# Rebuild every bundled trace in Traces/ from its scenario.yaml and the seed in that file.
# Usage: scripts/regenerate-traces.sh [NAME ...]   (default: all folders with a scenario.yaml)
# Deterministic: the same scenario + seed give byte-identical trace.jsonl and reference.json.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product posfuse >/dev/null
BIN="$(swift build --show-bin-path)/posfuse"
if [ "$#" -gt 0 ]; then names=("$@"); else
  names=(); for d in Traces/*/; do [ -f "$d/scenario.yaml" ] && names+=("$(basename "$d")"); done
fi
for n in "${names[@]}"; do
  "$BIN" simulate "Traces/$n/scenario.yaml" -o "Traces/$n/trace.jsonl" --reference "Traces/$n/reference.json"
done
