#!/usr/bin/env bash
# Report benchmark (issue 19): `scout report` of a 60 s, 8.8 M-event run (bench-60mbps), analysed
# first (not timed), three times; prints each wall time and peak RSS and their median. Target:
# under 5 s, memory bounded. SECONDS_SIM=600 bash bench/report.sh measures the 600 s run.
# Run from anywhere: bash bench/report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p scout-sim --bin scout-sim
sim=${SECONDS_SIM:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== input: scenarios/bench-60mbps.yaml for $sim s, analysed"
./target/release/scout-sim scenarios/bench-60mbps.yaml "$work/run" --duration "$sim" | tail -1
.venv/bin/scout analyze "$work/run" >"$work/analyze.txt" 2>/dev/null
head -1 "$work/analyze.txt"
echo "== scout report (3 runs)"
walls=()
for i in 1 2 3; do
  line=$(/usr/bin/time -f "%e %M" .venv/bin/scout report "$work/run" 2>&1 >/dev/null | tail -1)
  read -r wall rss <<<"$line"
  echo "  run $i: ${wall} s, peak RSS $((rss / 1024)) MB"
  walls+=("$wall")
done
median=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 2p)
size=$(stat -c %s "$work/run/report/index.html")
echo "report of a ${sim} s run: median ${median} s (page $((size / 1024)) KiB)"
