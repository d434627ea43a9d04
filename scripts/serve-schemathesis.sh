#!/usr/bin/env bash
# schemathesis (PyPI; installed with pip when missing) against docs/openapi.yaml and a running
# `posfuse serve` (SQLite, temporary): generated and mutated requests for every operation,
# with the checks "no 5xx" (not_a_server_error) and "every response matches the document"
# (status_code_conformance, content_type_conformance, response_schema_conformance). Bounded by
# SERVE_SCHEMATHESIS_SECONDS (default 120). Exit 0 = no failure.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${SERVE_SCHEMATHESIS_PORT:-18093}"
SECS="${SERVE_SCHEMATHESIS_SECONDS:-120}"
command -v schemathesis >/dev/null || pip install -q schemathesis
if [ -z "${SERVE_BIN:-}" ]; then swift build --product posfuse >/dev/null; SERVE_BIN="$(swift build --show-bin-path)/posfuse"; fi
WORK="$(mktemp -d /tmp/posfuse-schemathesis.XXXXXX)"
"$SERVE_BIN" serve --db "$WORK/st.sqlite" --port "$PORT" --log-level error 2>"$WORK/server.log" &
PID=$!
trap 'kill -TERM $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.05; done
schemathesis run docs/openapi.yaml --url "http://127.0.0.1:$PORT" --max-time "$SECS" --workers 2 \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --suppress-health-check all --warnings off
