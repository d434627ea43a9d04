#!/usr/bin/env bash
# Builds posfuse-bench in release mode and runs every benchmark (issue 2 acceptance:
# reader / replay throughput and peak memory side by side with a plain Python reader).
# Usage: scripts/bench/run-all.sh            (from anywhere; traces go to .build/bench-data)
# Add a benchmark: a subcommand in Benchmarks/posfuse-bench and one line below.
# Ends with a summary: every figure beside its reference measured in the same run (the
# `SUMMARY|` lines of posfuse-bench), the instruction counts (instructions.sh, when valgrind is
# installed) and the wall time of the whole run. The whole output is also kept in
# .build/bench-data/run-all.log. About 5-8 minutes on the 2-core VM.
# POSFUSE_SCRATCH=DIR: build in that SwiftPM scratch folder instead of .build (a second build
# folder, e.g. a worktree's release build; every bench script here takes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --product posfuse-bench
BENCH="$(swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --show-bin-path)/posfuse-bench"
mkdir -p .build/bench-data
LOG=.build/bench-data/run-all.log
START=$(date +%s)
exec > >(tee "$LOG") 2>&1
echo "posfuse benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

echo "== reader: TraceReader vs Python json =="
"$BENCH" reader --lengths "${BENCH_LENGTHS:-1000000,3000000}"

echo "== replay: read + default pipeline + score vs Python json reader =="
"$BENCH" replay --lengths "${BENCH_LENGTHS:-1000000,3000000}"

echo "== import: 22 Microsoft Indoor walks (ms-indoor), target < 2 s =="
scripts/bench/bench-import.sh

echo "== tdoa: TDoA solve with 4-8 beacons, median µs/solve, one core (target < 10 µs) vs scipy =="
PIN=""; command -v taskset >/dev/null && PIN="taskset -c 0"
$PIN "$BENCH" tdoa --script scripts/bench/tdoa_scipy.py

echo "== filters: EKF ns/step vs FilterPy, particle filter (100k) ns/particle-step vs numpy =="
# FilterPy and numpy from PyPI into a venv under .build (created once).
VENV=.build/bench-venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import filterpy, numpy" 2>/dev/null; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install --quiet filterpy numpy
fi
$PIN "$BENCH" filters --python "$VENV/bin/python" --script scripts/bench/filters_python.py

echo "== fingerprint: matching µs/scan (651 × 12 and 1,035 × 520 maps) vs numpy, same model =="
$PIN "$BENCH" fingerprint --python "$VENV/bin/python" --script scripts/bench/fingerprint_numpy.py

echo "== refine: posfuse refine reports/s and peak memory vs Python's json I/O floor =="
$PIN "$BENCH" refine

echo "== instructions per event / report (callgrind; independent of the machine's load) =="
scripts/bench/instructions.sh

echo "== serve: instructions per request, geolocate vs the empty handler (callgrind) =="
scripts/bench/serve-instructions.sh

sleep 1   # tee has written every line
echo "== summary (one run; ratios are within this run) =="
python3 - "$LOG" <<'PY'
import sys
rows = [l.rstrip("\n").split("|")[1:] for l in open(sys.argv[1]) if l.startswith("SUMMARY|")]
w = [max([len(r[i]) for r in rows] + [len(h)]) for i, h in enumerate(["figure", "posfuse", "reference (same run)", "ratio", "target"])]
fmt = "  ".join("%%-%ds" % x for x in w)
print(fmt % ("figure", "posfuse", "reference (same run)", "ratio", "target"))
for r in rows: print(fmt % tuple(r))
PY
echo "wall time of this run: $(( $(date +%s) - START )) s"
