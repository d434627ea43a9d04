#!/usr/bin/env bash
# Writes the seed corpus of every fuzz target into DIR (default .build-fuzz/corpus/<target>/):
# the committed seeds of Tests/Fuzz/seeds/<target>/ (hand-written files in each foreign format,
# copies of the test fixtures) plus slices of the bundled traces and their side files
# (Traces/*: trace lines, reference.json, scenario.yaml, docs/pipeline.yaml, report records).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-.build-fuzz/corpus}"
mkdir -p "$out"
for d in Tests/Fuzz/seeds/*/; do
  t="$(basename "$d")"; mkdir -p "$out/$t"; cp "$d"* "$out/$t/" 2>/dev/null || true
done
mkdir -p "$out/trace" "$out/reference" "$out/scenario-yaml" "$out/pipeline-yaml" "$out/refine" "$out/estimates-csv"
for d in Traces/*/; do
  n="$(basename "$d")"
  if [ -f "$d/trace.jsonl" ]; then
    head -c 3000 "$d/trace.jsonl" > "$out/trace/$n-head.jsonl"
    # One line of every event type after the header (small inputs mutate faster).
    { head -1 "$d/trace.jsonl"; tail -n +2 "$d/trace.jsonl" | awk -F'"type":"' '{split($2,a,"\""); if (!(a[1] in s)) {s[a[1]]=1; print}}'; } > "$out/trace/$n-types.jsonl"
  fi
  [ -f "$d/reference.json" ] && head -c 20000 "$d/reference.json" > "$out/reference/$n.json"
  [ -f "$d/scenario.yaml" ] && sed 's/^duration_s: [0-9.]*/duration_s: 2/' "$d/scenario.yaml" > "$out/scenario-yaml/$n.yaml"
done
cp docs/pipeline.yaml "$out/pipeline-yaml/pipeline.yaml"
cp docs/scenario-template.yaml "$out/scenario-yaml/template.yaml"
if [ -f Traces/reports/sample-reports.jsonl ]; then
  head -3 Traces/reports/sample-reports.jsonl | cut -c1-4000 > "$out/refine/sample-head.jsonl"
fi
echo "$out"
