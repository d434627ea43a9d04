#!/usr/bin/env bash
# Memory soak of `posfuse serve` (issue 23: "memory flat over 10 minutes"; docs/serve.md,
# "Benchmark"): one release-built server on a SQLite store, seeded like serve-bench.sh, under
# wrk load for SERVE_SOAK_SECONDS (default 600) with a mixed workload — each connection cycles
# geolocate, geolocate, refine, geosubmit (every submission distinct, so the store and the AP
# re-fit queue grow as in service) — while the server's resident memory (VmRSS) is sampled
# every 5 s. Prints the RSS per minute, the growth from minute 2 to the end (MiB and MiB/min,
# after warm-up: allocator arenas and SQLite's page cache fill in the first minute) and the
# requests served. Not part of the test suite (it takes 10 minutes); run it once on a quiet
# machine:   scripts/bench/serve-soak.sh          # SERVE_SOAK_SECONDS=600 SERVE_SOAK_CONNECTIONS=16
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS="${SERVE_SOAK_SECONDS:-600}"
CONN="${SERVE_SOAK_CONNECTIONS:-16}"
PORT="${SERVE_SOAK_PORT:-18093}"
. scripts/bench/serve-lib.sh
serve_prepare serve-soak
serve_start serve-soak "$PORT"

python3 - "$WORK" <<'PY'
import json, math, sys
w = sys.argv[1]
lat0, lon0 = 47.37, 8.54
def at(e, n): return lat0 + n / 111195.0, lon0 + e / (111195.0 * math.cos(math.radians(lat0)))
aps = ["00:1b:cc:00:%02x:%02x" % (i // 256, i % 256) for i in range(40)]
def item(k):
    e, n = (k % 10) * 10.0, (k // 10 % 20) * 5.0
    la, lo = at(e, n)
    wifi = [{"macAddress": a, "signalStrength": -40 - 0.4 * math.hypot(e - (i % 8) * 12, n - (i // 8) * 20)} for i, a in enumerate(aps)]
    return {"position": {"latitude": la, "longitude": lo, "accuracy": 5},
            "cellTowers": [{"radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1, "locationAreaCode": 1000,
                            "cellId": 5000 + k % 3, "timingAdvance": 1 + k % 4, "serving": 1}],
            "wifiAccessPoints": wifi}
json.dump({"items": [item(k) for k in range(200)]}, open(w + "/seed.json", "w"))
la, lo = at(45, 45)
geolocate = {"cellTowers": [{"radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1, "locationAreaCode": 1000,
                             "cellId": 5001, "timingAdvance": 2}],
             "wifiAccessPoints": [{"macAddress": a, "signalStrength": -55 - 2 * i} for i, a in enumerate(aps[:8])]}
refine = {"lat": la, "lon": lo, "accuracy_m": 30, "t": 10,
          "evidence": [{"t": 9.5, "type": "wifi", "aps": [{"bssid": a, "rss": -55 - 2 * i} for i, a in enumerate(aps[:8])]}]}
# geosubmit bodies differ per request (a counter in the item's position and its nonce), built in Lua.
sub = json.dumps({"items": [item(7)]}).replace('"accuracy": 5', '"accuracy": 5, "nonce": "%d"')
lua = """
local bodies = { %s, %s, %s }
local paths = { "/v1/geolocate", "/v1/geolocate", "/v1/refine" }
local sub = %s
local n = 0
local counter = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function setup(thread) counter = counter + 1; thread:set("tid", counter) end
function request()
  n = n + 1
  local k = (n - 1) %% 4 + 1
  if k == 4 then return wrk.format("POST", "/v2/geosubmit", nil, string.format(sub, tid * 1000000000 + n)) end
  return wrk.format("POST", paths[k], nil, bodies[k])
end
function done(summary, latency, requests)
  io.write(string.format("RESULT %%.1f %%.3f %%.3f %%d %%d\\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.requests))
end
""" % (json.dumps(json.dumps(geolocate)), json.dumps(json.dumps(geolocate)), json.dumps(json.dumps(refine)), json.dumps(sub))
open(w + "/mix.lua", "w").write(lua)
PY
curl -sf -XPOST "http://127.0.0.1:$PORT/v2/geosubmit" -H 'Content-Type: application/json' --data-binary @"$WORK/seed.json" >/dev/null
curl -sf -o /dev/null -XPOST "http://127.0.0.1:$PORT/v1/geolocate" --data '{"cellTowers":[{"radioType":"lte","mobileCountryCode":228,"mobileNetworkCode":1,"locationAreaCode":1000,"cellId":5001}]}' \
    || { echo "serve-soak: the seeded server does not answer geolocate" >&2; exit 1; }

rss() { awk '/VmRSS/ {print $2}' "/proc/$PID/status"; }
T0=$(date +%s)
( while kill -0 $PID 2>/dev/null; do echo "$(( $(date +%s) - T0 )) $(rss)" >>"$WORK/rss.txt"; sleep 5; done ) &
SAMPLER=$!
R="$(wrk -t2 -c"$CONN" -d"${SECS}s" --latency -s "$WORK/mix.lua" "http://127.0.0.1:$PORT" | awk '/^RESULT/ {print $2, $3, $4, $5, $6}')"
sleep 1; kill $SAMPLER 2>/dev/null || true
STATS="$(curl -sf "http://127.0.0.1:$PORT/health" || echo '{}')"

read -r rps p50 p99 err n <<<"$R"
echo "posfuse serve memory soak: wrk -t2 -c$CONN, ${SECS}s, mixed geolocate/geolocate/refine/geosubmit, SQLite store, $(nproc) cores, release build"
echo "requests: $n ($rps req/s, P50 $p50 ms, P99 $p99 ms, $err errors); store after: $STATS"
python3 - "$WORK/rss.txt" <<'PY'
import sys
pts = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
if not pts: print("no RSS samples"); sys.exit(0)
print("RSS per minute (MiB): " + " ".join("%d:%.1f" % (int(t // 60), kb / 1024) for t, kb in pts if int(t) % 60 < 5))
late = [(t, kb / 1024) for t, kb in pts if t >= 120]
if len(late) >= 3:
    n = len(late); mt = sum(t for t, _ in late) / n; mr = sum(r for _, r in late) / n
    slope = sum((t - mt) * (r - mr) for t, r in late) / sum((t - mt) ** 2 for t, _ in late) * 60
    print("RSS from minute 2 to the end: %.1f -> %.1f MiB (max %.1f), least-squares slope %.3f MiB/min"
          % (late[0][1], late[-1][1], max(r for _, r in late), slope))
else:
    print("run shorter than 3 minutes: no growth figure (SERVE_SOAK_SECONDS >= 180)")
PY
