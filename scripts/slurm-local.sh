#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for `posfuse sweep --slurm` tests (docs/sweep.md).
#
#   scripts/slurm-local.sh start    # install (as root: apt-get slurm-wlm munge) and start munged,
#                                   # slurmctld and slurmd on localhost, without systemd
#   scripts/slurm-local.sh status   # exit 0 when `sinfo` answers and the node is usable
#   scripts/slurm-local.sh stop     # stop the daemons this script started
#
# Exit codes: 0 running; 3 not running (status); 77 Slurm cannot be started here (not root and
# not installed, no package archive, a daemon that does not come up): the reason is printed,
# and the test that needs Slurm skips with it.
# The configuration is written to /etc/slurm/slurm.conf only when it is absent or was written
# by this script (marker line), so a real cluster's configuration is never touched.
set -uo pipefail

MARK="# written by posfuse scripts/slurm-local.sh"
CONF=/etc/slurm/slurm.conf
STATE=/var/lib/posfuse-slurm-local

say() { echo "slurm-local: $*" >&2; }
cannot() { say "cannot start Slurm: $*"; exit 77; }

# Runs a daemon with no descriptor of ours: stdin/stdout/stderr on /dev/null and every other
# inherited descriptor closed. A daemon started from inside a test runner would otherwise keep
# the runner's pipes open (other tests' child-process pipes among them), and their readers would
# never see end-of-file: seen as a hung CLI test while this script started Slurm mid-suite.
detached() {
    (
        for fd in /proc/$BASHPID/fd/*; do
            fd=${fd##*/}
            [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
        done
        exec "$@" </dev/null >/dev/null 2>&1
    )
}

usable() {
    command -v sinfo >/dev/null 2>&1 || return 1
    local s
    s=$(timeout 10 sinfo -h -o '%t' 2>/dev/null | head -1) || return 1
    case "$s" in idle*|mix*|alloc*|comp*) return 0 ;; *) return 1 ;; esac
}

start() {
    if usable; then say "already running"; sinfo >&2; return 0; fi
    if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
        [ "$(id -u)" = 0 ] || cannot "slurm-wlm and munge are not installed and this is not root (apt-get needs root)"
        say "installing slurm-wlm and munge (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed; trying the cached package lists"
        apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1 || cannot "apt-get install slurm-wlm munge failed"
    fi
    [ "$(id -u)" = 0 ] || cannot "starting slurmctld/slurmd/munged needs root"
    if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        cannot "$CONF exists and was not written by this script (a real cluster?): not touching it"
    fi
    local host cpus mem
    host=$(hostname -s 2>/dev/null || hostname)
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ { printf "%d", $2 / 1024 * 0.8 }' /proc/meminfo)
    mkdir -p /run/munge /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /etc/slurm "$STATE"
    chown munge:munge /run/munge 2>/dev/null || true
    if [ ! -s /etc/munge/munge.key ]; then
        (command -v mungekey >/dev/null && mungekey --create --force >/dev/null 2>&1) || \
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
    fi
    cat > "$CONF" <<EOF
$MARK
ClusterName=posfuse-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    if ! pgrep -x munged >/dev/null; then
        detached su -s /bin/sh munge -c /usr/sbin/munged || detached /usr/sbin/munged --force || cannot "munged did not start"
        echo munged >> "$STATE/started"
    fi
    if ! pgrep -x slurmctld >/dev/null; then
        detached /usr/sbin/slurmctld || cannot "slurmctld did not start (see /var/log/slurm/slurmctld.log)"
        echo slurmctld >> "$STATE/started"
        sleep 2
    fi
    if ! pgrep -x slurmd >/dev/null; then
        detached /usr/sbin/slurmd || cannot "slurmd did not start (see /var/log/slurm/slurmd.log)"
        echo slurmd >> "$STATE/started"
    fi
    for _ in $(seq 1 30); do
        if usable; then say "running"; sinfo >&2; return 0; fi
        sleep 1
    done
    scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    sleep 2
    usable && { say "running"; return 0; }
    cannot "the node did not become idle within 30 s (sinfo: $(sinfo -h 2>&1 | head -1))"
}

stop() {
    [ -f "$STATE/started" ] || { say "nothing started by this script"; return 0; }
    for d in slurmd slurmctld munged; do
        grep -qx "$d" "$STATE/started" || continue
        local pidfile=/run/$d.pid
        [ "$d" = munged ] && pidfile=/run/munge/munged.pid
        if [ -s "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null && say "stopped $d"; fi
    done
    rm -f "$STATE/started"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status) usable && { sinfo >&2; exit 0; } || exit 3 ;;
    *) echo "usage: $0 start|status|stop" >&2; exit 64 ;;
esac
