#!/usr/bin/env bash
# `posfuse serve` under load (docs/serve.md, "Benchmark"): wrk (Debian package; installed with
# apt-get when missing and run as root) on loopback against one release-built server, in one
# run: the empty handler (POST /v0/empty, answers {} without reading the body) as the
# reference, then geolocate (WiFi + LTE cell with TA, learned beforehand), refine (one record
# with a WiFi scan) and geosubmit (one item, committed to SQLite before the answer).
# Per endpoint: requests/s at saturation (-c connections) and P50/P99 latency; then geolocate
# and the empty handler again at half of their saturating rate (wrk's delay() hook paces each
# connection), where the target is P99 <= 10 ms; and the server's resident memory sampled
# through the whole run (SERVE_BENCH_SOAK=600 adds a 10-minute geolocate soak at half rate).
# Bounded: about 6 x SERVE_BENCH_SECONDS (default 10) + soak seconds.
#   scripts/bench/serve-bench.sh            # SERVE_BENCH_SECONDS=10 SERVE_BENCH_CONNECTIONS=16
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS="${SERVE_BENCH_SECONDS:-10}"
CONN="${SERVE_BENCH_CONNECTIONS:-16}"
SOAK="${SERVE_BENCH_SOAK:-0}"
PORT="${SERVE_BENCH_PORT:-18089}"
. scripts/bench/serve-lib.sh
serve_prepare serve-bench
serve_start serve-bench "$PORT" --empty-handler

python3 scripts/bench/serve_requests.py "$WORK"
curl -sf -XPOST "http://127.0.0.1:$PORT/v2/geosubmit" -H 'Content-Type: application/json' --data-binary @"$WORK/seed.json" >/dev/null
curl -sf -XPOST "http://127.0.0.1:$PORT/v1/geolocate" --data-binary @"$WORK/geolocate.json" >"$WORK/answer.json" \
    || { echo "serve-bench: the seeded geolocate request is not answered" >&2; exit 1; }

rss() { awk '/VmRSS/ {print $2}' "/proc/$PID/status"; }
( while kill -0 $PID 2>/dev/null; do echo "$(date +%s) $(rss)" >>"$WORK/rss.txt"; sleep 2; done ) &
SAMPLER=$!

# run NAME PATH [DELAY_MS] -> "req/s p50_ms p99_ms errors requests"
run() {
    WRK_DELAY_MS="${3:-0}" wrk -t2 -c"$CONN" -d"${4:-$SECS}s" --latency -s "$WORK/$1.lua" "http://127.0.0.1:$PORT$2" | awk '/^RESULT/ {print $2, $3, $4, $5, $6}'
}
declare -A R
R[empty]="$(run empty /v0/empty)"
R[geolocate]="$(run geolocate /v1/geolocate)"
R[refine]="$(run refine /v1/refine)"
R[geosubmit]="$(run geosubmit /v2/geosubmit)"
# Pacing for half the saturating rate r: each of the CONN connections waits delay() ms between
# requests, and its own latency adds to that wait, so a delay of 2·CONN/r alone gives less than
# r/2. A short probe run at that delay measures the latency share (CONN/achieved − delay) and the
# delay is reduced by it; wrk's delay is whole milliseconds, so the achieved share is printed.
half_delay() { python3 -c "import sys; r=float(sys.argv[1]); print(max(1, round(2000.0 * $CONN / r)))" "$1"; }
calibrated_delay() {  # NAME PATH SATURATING_RATE
    local d0; d0="$(half_delay "$3")"
    local probe; probe="$(run "$1" "$2" "$d0" "$(( (SECS + 1) / 2 ))")"
    python3 -c "import sys; r, d0, a = map(float, sys.argv[1:4]); lat = 1000.0 * $CONN / a - d0 if a > 0 else 0; print(max(1, round(2000.0 * $CONN / r - max(lat, 0))))" "$3" "$d0" "${probe%% *}"
}
R[empty_half]="$(run empty /v0/empty "$(calibrated_delay empty /v0/empty "${R[empty]%% *}")")"
GD="$(calibrated_delay geolocate /v1/geolocate "${R[geolocate]%% *}")"
R[geolocate_half]="$(run geolocate /v1/geolocate "$GD")"
if [ "$SOAK" -gt 0 ]; then R[geolocate_soak]="$(run geolocate /v1/geolocate "$GD" "$SOAK")"; fi
kill $SAMPLER 2>/dev/null || true

echo "posfuse serve benchmark: wrk -t2 -c$CONN, ${SECS}s per run, loopback, SQLite store, $(nproc) cores, release build"
printf "%-26s %12s %10s %10s %8s %10s\n" run "requests/s" "P50 ms" "P99 ms" errors requests
for k in empty geolocate refine geosubmit empty_half geolocate_half geolocate_soak; do
    [ -n "${R[$k]:-}" ] || continue
    read -r rps p50 p99 err n <<<"${R[$k]}"
    printf "%-26s %12s %10s %10s %8s %10s\n" "$k" "$rps" "$p50" "$p99" "$err" "$n"
done
python3 - "${R[geolocate]%% *}" "${R[empty]%% *}" <<'PY'
import sys
g, e = float(sys.argv[1]), float(sys.argv[2])
print("geolocate / empty handler throughput: %.2f (target >= 0.5)" % (g / e))
PY
python3 - "${R[geolocate]%% *}" "${R[geolocate_half]%% *}" "${R[geolocate_half]}" <<'PY'
import sys
sat, paced, row = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3].split()
print("geolocate paced run: %.0f req/s = %.2f of its saturating rate, P99 %s ms (target <= 10 ms at 0.5)" % (paced, paced / sat, row[2]))
PY
awk 'NR == 1 {first = $2} {if ($2 > max) max = $2; last = $2} END {printf "server RSS: first %.1f MiB, last %.1f MiB, max %.1f MiB over %d samples\n", first/1024, last/1024, max/1024, NR}' "$WORK/rss.txt"
grep -c . "$WORK/server.log" >/dev/null && { echo "server log (warnings and errors):"; tail -5 "$WORK/server.log"; } || true
