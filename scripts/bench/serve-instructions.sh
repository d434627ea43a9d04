#!/usr/bin/env bash
# Instructions per request of `posfuse serve` (valgrind callgrind, release build): the serve
# throughput figure (issue 23) that does not depend on how busy the machine is. One server runs
# under callgrind with the benchmark's store (serve_requests.py: the 200-item seed); for each
# endpoint a keep-alive client sends N requests between a counter reset and a dump
# (callgrind_control -z / -d), after 20 unmeasured warm-up requests. The server's idle
# background (the AP re-fit service polls every 200 ms) is measured alone for 10 s and its rate
# × each run's duration is subtracted. The client runs outside valgrind and is not counted;
# wrk's own work is not in these figures either. Per request:
#   empty      POST /v0/empty (answers {} without reading the body): the server's floor
#   geolocate  8 APs + an LTE cell with TA
#   refine     one record with an 8-AP scan
# geolocate / empty is the instruction-count analogue of the throughput target (geolocate
# >= 0.5x the empty handler's requests/s), leaving out wrk's share of the two cores.
# Usage: scripts/bench/serve-instructions.sh      (about 3-6 minutes; needs valgrind)
#        SERVE_INSTR_REQUESTS=400 (geolocate, refine; empty runs 2.5x as many)
#        POSFUSE_BIN=path: that release binary instead of building one
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null \
    || { echo "serve-instructions: valgrind not installed (apt-get install valgrind), skipped"; exit 0; }
N="${SERVE_INSTR_REQUESTS:-400}"
PORT="${SERVE_INSTR_PORT:-18093}"
if [ -n "${POSFUSE_BIN:-}" ]; then BIN="$POSFUSE_BIN"; else   # a given release binary, as serve-bench.sh takes it
    swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --product posfuse >/dev/null 2>&1 || swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --product posfuse
    BIN="$(swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --show-bin-path)/posfuse"
fi
W="$(mktemp -d /tmp/posfuse-serve-instr.XXXXXX)"
# callgrind cannot read the DWARF 5 debug info swiftc emits, so it runs on a copy without it.
cp "$BIN" "$W/posfuse" && strip --strip-debug "$W/posfuse"
python3 scripts/bench/serve_requests.py "$W"
valgrind --tool=callgrind --callgrind-out-file="$W/cg.%p" "$W/posfuse" serve --db "$W/bench.sqlite" --port "$PORT" \
    --empty-handler --log-level warning >"$W/server.log" 2>&1 &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.5; done
curl -sf -XPOST "http://127.0.0.1:$PORT/v2/geosubmit" --data-binary @"$W/seed.json" >/dev/null
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null          # re-fits the seeded APs before counting
curl -sf -XPOST "http://127.0.0.1:$PORT/v1/geolocate" --data-binary @"$W/geolocate.json" >/dev/null \
    || { echo "serve-instructions: the seeded geolocate request is not answered" >&2; exit 1; }

# client.py PORT PATH BODY N: N POSTs on one keep-alive connection, each must answer 200.
cat >"$W/client.py" <<'PY'
import http.client, sys
port, path, body, n = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], 'rb').read(), int(sys.argv[4])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
for _ in range(n):
    c.request("POST", path, body, {"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status != 200: sys.exit("HTTP %d on %s" % (r.status, path))
PY
# measure PATH BODY N -> "instructions seconds" of N requests (keep-alive, one connection)
measure() {
    [ "$1" = idle ] || python3 "$W/client.py" "$PORT" "$1" "$W/$2" 20
    callgrind_control -z "$PID" >/dev/null 2>&1
    local t0; t0=$(date +%s.%N)
    if [ "$1" = idle ]; then sleep "$3"; else
        python3 "$W/client.py" "$PORT" "$1" "$W/$2" "$3"
    fi
    local t1; t1=$(date +%s.%N)
    # Dumps are numbered from 1 (cg.PID.K); the file is complete once its "totals:" line is written.
    local k=$(( $(cat "$W/dumps" 2>/dev/null || echo 0) + 1 )); echo "$k" >"$W/dumps"
    callgrind_control -d "dump$k" "$PID" >/dev/null 2>&1
    local f="$W/cg.$PID.$k"
    for _ in $(seq 600); do grep -q '^totals:' "$f" 2>/dev/null && break; sleep 0.1; done
    echo "$(awk '/^summary:/ {print $2}' "$f") $(python3 -c "print($t1 - $t0)")"
}
read -r idle_i idle_s <<<"$(measure idle empty.json 10)"
per() {   # per INSTR SECONDS N -> instructions per request, idle background subtracted
    python3 -c "import sys; i,s,n,ii,ss=map(float,sys.argv[1:]); print('%.0f' % ((i - ii/ss*s)/n))" "$1" "$2" "$3" "$idle_i" "$idle_s"
}
read -r ei es <<<"$(measure /v0/empty empty.json $((N * 5 / 2)))"
read -r gi gs <<<"$(measure /v1/geolocate geolocate.json "$N")"
read -r ri rs <<<"$(measure /v1/refine refine.json "$N")"
empty=$(per "$ei" "$es" $((N * 5 / 2))); geo=$(per "$gi" "$gs" "$N"); ref=$(per "$ri" "$rs" "$N")
echo "posfuse serve: instructions per request (callgrind, release, SQLite store, one keep-alive client)"
printf "%-44s %12s\n" figure instructions
printf "%-44s %12s\n" "server idle background, per second" "$(python3 -c "print('%.0f' % ($idle_i / $idle_s))")"
printf "%-44s %12s\n" "empty handler, per request" "$empty"
printf "%-44s %12s\n" "geolocate (8 APs + LTE TA), per request" "$geo"
printf "%-44s %12s\n" "refine (8-AP scan), per request" "$ref"
printf "%-44s %12s\n" "geolocate / empty handler" "$(python3 -c "print('%.1f' % ($geo / $empty))")"
echo "SUMMARY|serve geolocate instructions per request|$geo|empty handler $empty|$(python3 -c "print('%.1f' % ($geo / $empty))")x|(throughput >= 0.5x: about <= 2x)"
