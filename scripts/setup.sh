#!/usr/bin/env bash
# Checks what posfuse needs besides Swift on Debian/Ubuntu: libgsl-dev (GNU GSL),
# libsqlite3-dev (SQLite, used through GRDB) and pkg-config. Missing packages are
# installed with apt-get when run as root; otherwise the exact command is printed and
# the script stops (exit 1). Used by scripts/run.sh and scripts/test.sh.
set -euo pipefail

if ! command -v swift >/dev/null 2>&1; then
    echo "error: swift is not on PATH; install a Swift 6 toolchain (https://swift.org/install)" >&2
    exit 1
fi

missing=()
for pkg in libgsl-dev libsqlite3-dev pkg-config; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        # pkg-config may be provided by pkgconf under another package name.
        if [ "$pkg" = pkg-config ] && command -v pkg-config >/dev/null 2>&1; then continue; fi
        missing+=("$pkg")
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "installing: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    else
        echo "posfuse needs these packages: ${missing[*]}. Install them, then run this again:" >&2
        echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi
