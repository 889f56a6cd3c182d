#!/usr/bin/env bash
# srsRAN log ingest benchmark (issue: srsRAN ingest). Makes a large log by repeating the real 23.10
# fixture with each copy shifted in time past the previous, then times `scout ingest srsran` on it
# (read, parse, stitch DL + UL journeys and slot rows, write Parquet) and reports its peak memory.
# Prints the figures recorded in bench/RESULTS.md.
#   bash bench/ingest.sh [SIZE_MB]        (default 10240 = 10 GB; needs twice that free disk)
# Then the same log as four rotated files (each read on a thread of its own, merged by time), and
# with SCOUT_BENCH_GZIP=1 as four gzip-compressed files too.
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
rm -rf "$dir/run"

echo "== the same log as four rotated files"
(cd "$dir" && split -n l/4 -d big.log part. && rm big.log)
/usr/bin/time -f "peak RSS %M KB, wall %e s, user %U s, sys %S s" \
  .venv/bin/scout ingest srsran "$dir"/part.0? -o "$dir/run4"
rm -rf "$dir/run4"
if [ "${SCOUT_BENCH_GZIP:-0}" = 1 ]; then
  echo "== as four gzip files (gzip -1)"
  for f in "$dir"/part.0?; do gzip -1 "$f" & done
  wait
  /usr/bin/time -f "peak RSS %M KB, wall %e s, user %U s, sys %S s" \
    .venv/bin/scout ingest srsran "$dir"/part.0?.gz -o "$dir/run4gz"
fi
