#!/usr/bin/env bash
# srsRAN log ingest benchmark (issue: srsRAN ingest). Makes a large log by repeating the real 23.10
# fixture with each copy shifted in time past the previous, then times `scout ingest srsran` on it
# (read, parse, stitch DL + UL journeys and slot rows, write Parquet) and reports its peak memory.
# Prints the figures recorded in bench/RESULTS.md.
#   bash bench/ingest.sh [SIZE_MB]        (default 10240 = 10 GB; needs that much free disk)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${1:-10240}
fixture=../shared/fixtures/srsran/srsran-23.10-info-drb.gnb.log
[ -f "$fixture" ] || { echo "bench/ingest.sh: $fixture not found (the shared fixtures sit beside the project)" >&2; exit 2; }
cargo build --release -q -p scout-ingest --example shift_log
dir=${SCOUT_BENCH_DIR:-$(mktemp -d)}
trap 'rm -rf "$dir"' EXIT
echo "== making a ${size_mb} MB log from $fixture"
./target/release/examples/shift_log "$fixture" "$dir/big.log" "$size_mb"
# Read it once so the figure is the ingest's, not the disk's (the machine has room in its page cache).
cat "$dir/big.log" > /dev/null
echo "== scout ingest srsran (progress on stderr)"
/usr/bin/time -f "peak RSS %M KB, wall %e s, user %U s, sys %S s" \
  .venv/bin/scout ingest srsran "$dir/big.log" -o "$dir/run"
du -sh "$dir/run/events"
