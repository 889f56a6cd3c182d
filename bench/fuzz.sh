#!/usr/bin/env bash
# Fuzzing (issue 20): runs one of Scout's fuzz targets — pcap, pfcp, srsran, scenario — or all of
# them one after another, under libFuzzer for MINUTES each (fractions allowed: 0.5 = 30 s).
#
#   bash bench/fuzz.sh TARGET MINUTES
#
# The targets are in crates/scout-fuzz: each panics when the code under it panics or when a
# success's counts do not add up. They are built here with coverage instrumentation on the stable
# toolchain (libfuzzer-sys; no nightly). Seeds: fuzz/seeds/TARGET (committed) and, when
# ../shared/fixtures exists, cuts of the fixtures (fuzz/seeds.py). New inputs accumulate in
# fuzz/corpus/TARGET, between runs; a crash, a hang (> 10 s on one input) or a blow-up (> 2 GiB)
# is written to fuzz/artifacts/TARGET/ and ends the run with exit status 1. Keep every crash as a
# regression test: copy it to fuzz/regressions/TARGET/ and fix it (docs/robustness.md).
#
# Prints per target: executions, CPU seconds, coverage, corpus size and the outcome.
set -euo pipefail

# (All in a function, read whole before it runs: editing this file never upsets a long run.)
main() {
  cd "$(dirname "$0")/.."
  targets=(pcap pfcp srsran scenario)
  usage="usage: bash bench/fuzz.sh TARGET MINUTES   (TARGET: ${targets[*]} or all; MINUTES > 0, fractions allowed)"
  [ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
  target=$1
  minutes=$2
  if [ "$target" = all ]; then
    run=("${targets[@]}")
  elif [[ " ${targets[*]} " == *" $target "* ]]; then
    run=("$target")
  else
    echo "bench/fuzz.sh: unknown target '$target'; $usage" >&2
    exit 2
  fi
  seconds=$(awk -v m="$minutes" 'BEGIN { s = int(m * 60 + 0.5); print (m ~ /^[0-9]*\.?[0-9]+$/ && s > 0) ? s : 0 }')
  [ "$seconds" -gt 0 ] || { echo "bench/fuzz.sh: MINUTES must be a positive number, not '$minutes'; $usage" >&2; exit 2; }

  triple=$(rustc -vV | sed -n 's/^host: //p')
  # What cargo fuzz passes for `--sanitizer none`: edge counters, the PC table and comparison
  # tracing for libFuzzer; `--target` keeps the flags off build scripts and proc macros.
  export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/fuzz/target}
  echo "== building the fuzz targets (release, instrumented, $triple)"
  cargo build -q --release --manifest-path fuzz/Cargo.toml --target "$triple" --bins
  bin="$CARGO_TARGET_DIR/$triple/release"

  status=0
  for t in "${run[@]}"; do
    corpus=fuzz/corpus/$t
    extra=fuzz/corpus-fixtures/$t
    mkdir -p "$corpus" "fuzz/artifacts/$t"
    if [ -d ../shared/fixtures ] && [ ! -d "$extra" ]; then
      python3 fuzz/seeds.py fixtures ../shared/fixtures fuzz/corpus-fixtures
    fi
    # Every input that ever failed is run first: a fix that regressed fails at once.
    dirs=("$corpus" "fuzz/seeds/$t")
    [ -d "fuzz/regressions/$t" ] && dirs+=("fuzz/regressions/$t")
    [ -d "$extra" ] && dirs+=("$extra")
    case $t in
      pcap | srsran) max_len=65536 ;;
      *) max_len=8192 ;;
    esac
    echo "== fuzzing $t for ${seconds} s (seeds: ${dirs[*]:1})"
    log=fuzz/artifacts/$t/last-run.log
    set +e
    /usr/bin/time -f "%U %S %M %e" -o "fuzz/artifacts/$t/last-run.time" \
      "$bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
      -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" "${dirs[@]}" >"$log" 2>&1
    rc=$?
    set -e
    # (GNU time writes "Command exited with non-zero status N" first when the fuzzer fails.)
    read -r user sys rss wall < <(tail -1 "fuzz/artifacts/$t/last-run.time") || true
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    feat=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    units=$(find "$corpus" -type f | wc -l)
    cpu=$(awk -v u="${user:-0}" -v s="${sys:-0}" 'BEGIN { printf "%.0f", u + s }')
    if [ $rc -eq 0 ]; then
      outcome="0 crashes, 0 hangs, 0 count failures"
    else
      status=1
      art=$(sed -n 's/.*Test unit written to \(fuzz\/artifacts\/[^ ]*\).*/\1/p' "$log" | tail -1)
      outcome="FAILED (exit $rc): $(grep -m1 -E '^(thread .* panicked|==[0-9]+== ERROR|ALARM|.*out-of-memory)' "$log" | cut -c1-160); input kept as ${art:-?} (full log: $log)"
    fi
    echo "$t: ${execs:-0} executions in ${wall%.*} s wall, ${cpu} CPU s (${rate:-0}/s), coverage ${cov:-0} edges / ${feat:-0} features, corpus ${units}, peak RSS $((${rss:-0} / 1024)) MB: $outcome"
  done
  return $status
}

main "$@"
exit $?
