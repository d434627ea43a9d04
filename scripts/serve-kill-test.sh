#!/usr/bin/env bash
# Fault test of `posfuse serve` (docs/serve.md, "Durability"): SERVE_KILL_CLIENTS client
# threads (default 8) send distinct geosubmit bodies as fast as the server answers; after
# SERVE_KILL_AFTER seconds (default 5) the server gets SIGKILL (kill -9) mid-load. Then the
# database is checked: every submission the server acknowledged (HTTP 200) must be in the
# submissions log (looked up by the FNV-1a digest of its body), and the database must pass its
# integrity check (SQLite: PRAGMA integrity_check; PostgreSQL: the store's check). Finally the
# server is restarted on the same database and must answer /health. Exit 0 = pass.
#   scripts/serve-kill-test.sh                                  # SQLite in a temporary folder
#   SERVE_KILL_DB=postgres://posfuse:posfuse@127.0.0.1:54329/posfuse_test?schema=killtest scripts/serve-kill-test.sh
# SERVE_KILL_BIN: the posfuse binary (default: build debug).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${SERVE_KILL_PORT:-18091}"
AFTER="${SERVE_KILL_AFTER:-5}"
CLIENTS="${SERVE_KILL_CLIENTS:-8}"
WORK="$(mktemp -d /tmp/posfuse-kill.XXXXXX)"
DB="${SERVE_KILL_DB:-$WORK/kill.sqlite}"
if [ -z "${SERVE_KILL_BIN:-}" ]; then swift build --product posfuse >/dev/null; SERVE_KILL_BIN="$(swift build --show-bin-path)/posfuse"; fi
start() {
    "$SERVE_KILL_BIN" serve --db "$DB" --port "$PORT" --log-level warning 2>>"$WORK/server.log" &
    PID=$!
    for _ in $(seq 200); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && return 0; sleep 0.05; done
    echo "serve-kill-test: the server did not start" >&2; cat "$WORK/server.log" >&2; exit 1
}
start
trap 'kill -9 $PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
python3 - "$PORT" "$AFTER" "$CLIENTS" "$WORK" "$PID" <<'PY'
import http.client, json, os, random, signal, sys, threading, time
port, after, clients, work, pid = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
def fnv(b):
    h = 0xcbf29ce484222325
    for x in b: h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h
acked, sent, lock, stop = [], [0], threading.Lock(), threading.Event()
def client(k):
    rnd = random.Random(k)
    conn = None
    while not stop.is_set():
        lat, lon = 47.37 + rnd.uniform(-0.01, 0.01), 8.54 + rnd.uniform(-0.01, 0.01)
        body = json.dumps({"items": [{"timestamp": int(time.time() * 1000), "position": {"latitude": lat, "longitude": lon, "accuracy": 5},
            "cellTowers": [{"radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1, "locationAreaCode": 1000,
                            "cellId": rnd.randrange(50), "timingAdvance": rnd.randrange(10), "serving": 1}],
            "wifiAccessPoints": [{"macAddress": "00:1b:cc:%02x:%02x:%02x" % (k, rnd.randrange(16), rnd.randrange(16)),
                                  "signalStrength": -50 - rnd.randrange(40)} for _ in range(3)],
            "nonce": "%d-%d" % (k, rnd.getrandbits(48))}]}).encode()
        try:
            if conn is None: conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            with lock: sent[0] += 1
            conn.request("POST", "/v2/geosubmit", body, {"Content-Type": "application/json"})
            r = conn.getresponse(); r.read()
            if r.status == 200:
                with lock: acked.append(fnv(body))
        except Exception:
            conn = None
            if stop.is_set(): return
            time.sleep(0.01)
threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
for t in threads: t.start()
time.sleep(after)
os.kill(pid, signal.SIGKILL)
killed_at = len(acked)
time.sleep(0.5)
stop.set()
for t in threads: t.join()
open(work + "/acked.txt", "w").write("\n".join(acked) + "\n")
print("kill -9 after %.1f s under load: %d submissions sent, %d acknowledged" % (after, sent[0], len(acked)))
PY
wait $PID 2>/dev/null || true
if [[ "$DB" == postgres* ]]; then
    BASE="${DB%%\?*}"; SCHEMA="$(sed -n 's/.*[?&]schema=\([a-z0-9_]*\).*/\1/p' <<<"$DB")"
    PSQL=(psql "$BASE" -qtA); [ -n "$SCHEMA" ] && export PGOPTIONS="-c search_path=$SCHEMA"
    "${PSQL[@]}" -c "SELECT digest FROM submissions" | sort -u >"$WORK/stored.txt"
    INTEGRITY="$("${PSQL[@]}" -c "SELECT CASE WHEN (SELECT COUNT(*) FROM cell_coverage WHERE n <= 0) = 0 THEN 'ok' ELSE 'bad coverage rows' END")"
else
    python3 - "$DB" "$WORK" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
open(sys.argv[2] + "/integrity.txt", "w").write("; ".join(r[0] for r in db.execute("PRAGMA integrity_check")))
open(sys.argv[2] + "/stored.txt", "w").write("\n".join(sorted({r[0] for r in db.execute("SELECT digest FROM submissions")})) + "\n")
PY
    INTEGRITY="$(cat "$WORK/integrity.txt")"
fi
sort -u "$WORK/acked.txt" | grep . >"$WORK/acked.sorted" || true
MISSING="$(comm -23 "$WORK/acked.sorted" "$WORK/stored.txt" | wc -l)"
STORED="$(grep -c . "$WORK/stored.txt" || true)"
echo "after the kill: $STORED submissions in the database, $MISSING acknowledged ones missing, integrity check: $INTEGRITY"
start
HEALTH="$(curl -sf "http://127.0.0.1:$PORT/health")"
echo "restarted: /health $HEALTH"
kill -TERM $PID; wait $PID 2>/dev/null || true
if [ "$MISSING" -ne 0 ] || [ "$INTEGRITY" != ok ]; then echo "FAIL"; exit 1; fi
echo "PASS"
