#!/usr/bin/env bash
# Analysis benchmark (issue: analysis engine). Simulates a >= 50 M-event run (bench-60mbps for 360 s),
# then times `scout analyze` stage by stage and reports events/s and peak memory. Prints the figures
# recorded in bench/RESULTS.md. Run from anywhere: bash bench/analysis.sh
# (ENGINE=ibis bash bench/analysis.sh times the relational engine instead of the attribution kernel).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p scout-sim --bin scout-sim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== input: scenarios/bench-60mbps.yaml for 360 s"
./target/release/scout-sim scenarios/bench-60mbps.yaml "$work/run" --duration 360 | tail -1
du -sh "$work/run/events"
echo "== scout analyze (stage times are cumulative seconds)"
/usr/bin/time -f "peak RSS %M kB, wall %e s" .venv/bin/python - "$work/run" "${ENGINE:-native}" <<'PY'
import sys, time
from scout import analysis
t0 = time.perf_counter()
marks = []
def say(stage):
    marks.append((stage, time.perf_counter() - t0))
    print(f"  {time.perf_counter() - t0:7.2f} s  start {stage}", flush=True)
s = analysis.analyze(sys.argv[1], progress=say, engine=sys.argv[2])
total = time.perf_counter() - t0
at = dict(marks)
# journeys + components + layer_delays + profiles: written by the attribution kernel before DuckDB is
# even connected (ENGINE=ibis: computed after it, so the connection counts).
core = at.get("event tables into DuckDB (for the relational tables)") or at["sojourns"]
n = s["events"]
print(f"events: {n:,}")
print(f"journeys + attribution + profiles (+ layer_delays): {core:.2f} s = {n / core / 1e6:.2f} M events/s")
print(f"all analysis tables: {total:.2f} s = {n / total / 1e6:.2f} M events/s")
PY
