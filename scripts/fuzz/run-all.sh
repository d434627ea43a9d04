#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) with libFuzzer for a chosen time each and prints
# one line per target: executions, new corpus files, crashes/oracle failures/timeouts/OOMs.
#
#   scripts/fuzz/run-all.sh [-t SECONDS_PER_TARGET] [-j PARALLEL] [-c debug|release] [TARGET...]
#
# Defaults: 60 s per target, 1 at a time, release build. Oracles live in the targets
# (Tests/Fuzz/posfuse-fuzz/Targets.swift); libFuzzer adds: -timeout=$FUZZ_TIMEOUT s, default 10 (a hang is a finding; raise it when running at NICE=19 on a busy machine, where a process can wait seconds for a CPU),
# -rss_limit_mb=2048 (bounded memory), -max_len=65536. Findings go to
# .build-fuzz/findings/<target>/ (crash-*, timeout-*, oom-*); reproduce one with
#   POSFUSE_FUZZ_TARGET=<target> <binary> <file>   or   .build/debug/posfuse-fuzz <target> <file>
# Results: .build-fuzz/results/<target>.log and summary.tsv. Exit 1 if any target found something.
# FUZZ_SEED=N fixes libFuzzer's seed (CI does, so a short run mutates the same way each time).
# Set NICE=19 to run behind other work (long campaigns on a shared machine).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=60; jobs=1; config=release
while getopts "t:j:c:" o; do
  case "$o" in t) secs="$OPTARG" ;; j) jobs="$OPTARG" ;; c) config="$OPTARG" ;; *) exit 64 ;; esac
done
shift $((OPTIND - 1))
if [ "$config" = release ]; then
  bin="$(scripts/fuzz/build.sh)"
else
  swift build --scratch-path .build-fuzz-debug --product posfuse-fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING >&2
  bin="$(swift build --scratch-path .build-fuzz-debug --show-bin-path)/posfuse-fuzz"
fi
corpus="$(scripts/fuzz/seed-corpus.sh .build-fuzz/corpus)"
mkdir -p .build-fuzz/results .build-fuzz/findings
if [ "$#" -gt 0 ]; then targets=("$@"); else
  # The plain (non-libFuzzer) build lists the targets.
  swift build --product posfuse-fuzz >/dev/null
  mapfile -t targets < <("$(swift build --show-bin-path)/posfuse-fuzz" --list)
fi

run_one() {
  local t="$1"
  mkdir -p "$corpus/$t" ".build-fuzz/findings/$t"
  local before; before=$(ls "$corpus/$t" | wc -l)
  local start; start=$(date +%s)
  POSFUSE_FUZZ_TARGET="$t" SWIFT_BACKTRACE=enable=no nice -n "${NICE:-0}" "$bin" "$corpus/$t" -max_total_time="$secs" -timeout=${FUZZ_TIMEOUT:-10} \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 ${FUZZ_SEED:+-seed=$FUZZ_SEED} -artifact_prefix=".build-fuzz/findings/$t/" \
    > ".build-fuzz/results/$t.log" 2>&1 || true
  local end; end=$(date +%s)
  local execs; execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' ".build-fuzz/results/$t.log" | grep -o '[0-9]*$' | tail -1)
  local after; after=$(ls "$corpus/$t" | wc -l)
  # Failures are libFuzzer's crash-/timeout-/oom-/leak- artifacts; slow-unit- files are inputs
  # slower than libFuzzer's report threshold (10 s of wall clock, so mostly scheduler waits at
  # NICE=19), counted apart and not failures.
  local found; found=$(ls ".build-fuzz/findings/$t" 2>/dev/null | grep -cE '^(crash|timeout|oom|leak)-' || true)
  local slow; slow=$(ls ".build-fuzz/findings/$t" 2>/dev/null | grep -c '^slow-unit-' || true)
  # An oracle failure or crash that left no artifact still counts.
  if [ "$found" -eq 0 ] && grep -qE 'ORACLE FAILURE|Program crashed|ERROR: libFuzzer|ERROR: .*Sanitizer' ".build-fuzz/results/$t.log"; then found=1; fi
  printf '%s\t%d\t%s\t%d\t%d\t%d\n' "$t" "$((end - start))" "${execs:-0}" "$((after - before))" "$found" "$slow"
}
export -f run_one; export bin corpus secs FUZZ_SEED FUZZ_TIMEOUT
printf 'target\tseconds\texecutions\tnew_corpus\tfindings\tslow_units\n' | tee .build-fuzz/results/summary.tsv
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' | tee -a .build-fuzz/results/summary.tsv
if awk -F'\t' 'NR > 1 && $5 > 0 { bad = 1 } END { exit !bad }' .build-fuzz/results/summary.tsv; then
  echo "findings: see .build-fuzz/findings/ and .build-fuzz/results/<target>.log" >&2
  exit 1
fi
