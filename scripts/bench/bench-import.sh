#!/usr/bin/env bash
# Import speed: the 22 Microsoft Indoor walks (~25 MB) into one trace, release build,
# best of 3 wall-clock runs. Target (issue 7): under 2 s.
# Usage: scripts/bench/bench-import.sh [DATA_DIR]   (default: <repo>/../shared/data)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${1:-$root/../shared/data}"
walks="$data/ms-indoor/site2/F3/path_data_files"
if [ ! -d "$walks" ]; then echo "bench-import: no data at $walks, skipped"; exit 0; fi
cd "$root"
swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --product posfuse >/dev/null
bin="$(swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --show-bin-path)/posfuse"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
best=""
for i in 1 2 3; do
  s=$(date +%s.%N)
  "$bin" import ms-indoor "$walks" --strict -o "$out/ms.jsonl" >/dev/null
  e=$(date +%s.%N)
  t=$(echo "$e - $s" | bc -l)
  if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
done
bytes=$(cat "$walks"/*.txt | wc -c)
printf 'import ms-indoor: %d files, %.1f MB, best of 3: %.3f s (%.1f MB/s)\n' \
  "$(ls "$walks"/*.txt | wc -l)" "$(echo "$bytes/1000000" | bc -l)" "$best" "$(echo "$bytes/1000000/$best" | bc -l)"
# Per-walk folders (one trace + reference.json + floor plan each).
s=$(date +%s.%N)
"$bin" import ms-indoor "$walks" --strict -o "$out/walks/" >/dev/null
e=$(date +%s.%N)
printf 'import ms-indoor per walk: %.3f s\n' "$(echo "$e - $s" | bc -l)"
