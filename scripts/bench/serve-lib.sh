# Sourced by serve-bench.sh and serve-soak.sh (not run on its own): what both need before load.
# serve_prepare NAME: wrk from Debian's packages (installed when root), the release posfuse
# built; sets BIN (POSFUSE_BIN=path skips the build and uses that binary, e.g. a copy of a
# release build kept for a soak while the worktree moves on). serve_wait PORT: waits up to 10 s
# for /health.
serve_prepare() {
    if ! command -v wrk >/dev/null; then
        [ "$(id -u)" -eq 0 ] || { echo "$1: needs wrk (apt-get install wrk)" >&2; exit 1; }
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
    fi
    if [ -n "${POSFUSE_BIN:-}" ]; then BIN="$POSFUSE_BIN"; return 0; fi
    swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --product posfuse >/dev/null
    BIN="$(swift build -c release ${POSFUSE_SCRATCH:+--scratch-path "$POSFUSE_SCRATCH"} --show-bin-path)/posfuse"
}
serve_wait() {
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/health" >/dev/null && return 0; sleep 0.1; done
}
# serve_start NAME PORT [SERVE FLAG...]: one server on a fresh SQLite store in a temporary WORK
# directory, stopped (SIGTERM) and WORK removed on exit; waits for /health. Sets WORK and PID.
serve_start() {
    local name="$1" port="$2"; shift 2
    WORK="$(mktemp -d "/tmp/posfuse-$name.XXXXXX")"
    "$BIN" serve --db "$WORK/$name.sqlite" --port "$port" "$@" --log-level warning 2>"$WORK/server.log" &
    PID=$!
    trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$WORK"' EXIT
    serve_wait "$port"
}
