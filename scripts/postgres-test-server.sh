#!/usr/bin/env bash
# Starts a private PostgreSQL server for the `posfuse serve` tests (Tests/ServerTests) and the
# serve scripts: Debian 12's postgresql packages (installed with apt-get when missing and run
# as root), a cluster of its own in $POSFUSE_PG_DIR (default /tmp/posfuse-pg) listening on
# 127.0.0.1:$POSFUSE_PG_PORT (default 54329), started with pg_ctl as the postgres user (no
# systemd), with role posfuse/posfuse and database posfuse_test. Idempotent: a running
# server is left as it is. Prints the URL the tests use (POSFUSE_TEST_POSTGRES).
#   scripts/postgres-test-server.sh          # install if needed, start
#   scripts/postgres-test-server.sh stop     # stop it
# Without root and without a running server it says so and exits 0: the PostgreSQL tests
# then skip with a message.
set -euo pipefail
PORT="${POSFUSE_PG_PORT:-54329}"
DIR="${POSFUSE_PG_DIR:-/tmp/posfuse-pg}"
URL="postgres://posfuse:posfuse@127.0.0.1:${PORT}/posfuse_test"

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
as_pg() { if [ "$(id -u)" -eq 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi; }

if [ "${1:-}" = stop ]; then
    B="$(bindir)"; [ -n "$B" ] && [ -f "$DIR/PG_VERSION" ] && as_pg "'$B/pg_ctl' -D '$DIR' -m fast stop" || true
    exit 0
fi

if [ -z "$(bindir)" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "postgres-test-server: PostgreSQL is not installed and this is not root; the PostgreSQL tests will skip." >&2
        exit 0
    fi
    echo "postgres-test-server: installing postgresql (Debian packages)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
B="$(bindir)"

if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home "$DIR" postgres
fi
if [ ! -f "$DIR/PG_VERSION" ]; then
    mkdir -p "$DIR"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$DIR"
    as_pg "'$B/initdb' -D '$DIR' -U postgres --auth=trust -E UTF8 >/dev/null"
fi
if ! as_pg "'$B/pg_ctl' -D '$DIR' status" >/dev/null 2>&1; then
    as_pg "'$B/pg_ctl' -D '$DIR' -l '$DIR/server.log' -w -o \"-p $PORT -k /tmp -c listen_addresses=127.0.0.1\" start" >/dev/null
fi
PSQL=("$B/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qtA)
if [ "$("${PSQL[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'posfuse'")" != 1 ]; then
    "${PSQL[@]}" -c "CREATE ROLE posfuse LOGIN PASSWORD 'posfuse'"
fi
if [ "$("${PSQL[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'posfuse_test'")" != 1 ]; then
    "${PSQL[@]}" -c "CREATE DATABASE posfuse_test OWNER posfuse"
fi
echo "$URL"
