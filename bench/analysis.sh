#!/usr/bin/env bash
# Analysis benchmark (issues: analysis engine, 26). Simulates a >= 50 M-event run (bench-60mbps for
# 360 s), then times, SCOUT_BENCH_RUNS times (default 5) one after the other, (1) the whole
# `scout analyze RUN` command, process start to exit, with its peak memory, and (2) a plain DuckDB
# group-by of per-layer spans over the same packet.parquet (3 columns), the issue's yardstick, and
# prints both medians; then (3) `scout analyze` stage by stage. Prints the
# figures recorded in bench/RESULTS.md. Run from anywhere: bash bench/analysis.sh
# (ENGINE=ibis or ENGINE=spark times that engine instead of the attribution kernel).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p scout-sim --bin scout-sim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== input: scenarios/bench-60mbps.yaml for 360 s"
./target/release/scout-sim scenarios/bench-60mbps.yaml "$work/run" --duration 360 | tail -1
du -sh "$work/run/events"
events=$(.venv/bin/python -c "import json,sys; c=json.load(open(sys.argv[1]))['counts']['events']; print(sum(c.values()))" "$work/run/run.json")
runs=${SCOUT_BENCH_RUNS:-5}
echo "== $runs times, one after the other: the whole command, scout analyze RUN --engine ${ENGINE:-native} (process start to exit), then a plain DuckDB group-by of per-layer spans over the same packet.parquet"
: >"$work/times"
for i in $(seq "$runs"); do
  rm -rf "$work/run/analysis"
  /usr/bin/time -f "%e %M" -o "$work/time" .venv/bin/scout analyze "$work/run" --engine "${ENGINE:-native}" >/dev/null
  read -r wall rss <"$work/time"
  group=$(.venv/bin/python - "$work/run/events/packet.parquet" <<'PY'
import sys, time
import duckdb
duckdb.sql("SET enable_progress_bar = false")
t0 = time.perf_counter()
duckdb.sql(
    f"SELECT layer, count(*) AS packets, avg(span) AS mean_span_ns FROM "
    f"(SELECT pkt, layer, max(t_ns) - min(t_ns) AS span FROM read_parquet('{sys.argv[1]}') GROUP BY pkt, layer) GROUP BY layer"
).fetchall()
print(f"{time.perf_counter() - t0:.3f}")
PY
  )
  echo "$wall $rss $group" | tee -a "$work/times" | awk -v i="$i" '{printf "  run %s: analyze %.2f s (peak RSS %d MB), group-by %.2f s\n", i, $1, $2 / 1024, $3}'
done
.venv/bin/python - "$work/times" "$events" <<'PY'
import statistics, sys
rows = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
n = int(sys.argv[2])
a, g = [r[0] for r in rows], [r[2] for r in rows]
ma, mg = statistics.median(a), statistics.median(g)
print(f"  whole command: median {ma:.2f} s = {n / ma / 1e6:.2f} M events/s (runs {min(a):.2f}–{max(a):.2f} s), peak RSS up to {max(r[1] for r in rows) / 1024:.0f} MB")
print(f"  group-by: median {mg:.2f} s = {n / mg / 1e6:.2f} M events/s (runs {min(g):.2f}–{max(g):.2f} s)")
print(f"  the whole analysis is {mg / ma:.2f}x the group-by's speed (medians)")
PY
rm -rf "$work/run/analysis"
echo "== scout analyze in process, stage by stage (cumulative seconds)"
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
# The attribution kernel's tables (journeys, components, layer_delays, profiles, sojourns, queues,
# tti): done when the next stage starts (ENGINE=ibis: computed after DuckDB's connection, which counts).
core = marks[1][1] if sys.argv[2] == "native" and len(marks) > 1 else at.get("sojourns", total)
n = s["events"]
print(f"events: {n:,}")
print(f"the kernel's tables (and, beside it, tti, drops, drop_series, executors): {core:.2f} s = {n / core / 1e6:.2f} M events/s")
print(f"all analysis tables: {total:.2f} s = {n / total / 1e6:.2f} M events/s")
PY
# (4) Bounded memory: the whole command in a 1 GiB memory cgroup (root and a memory controller
# needed; v2 memory.max, else v1 memory.limit_in_bytes), where it reads the events in windows.
if [ "${ENGINE:-native}" = native ] && [ "$(id -u)" = 0 ]; then
  if grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    cg=/sys/fs/cgroup/scout-bench-$$ lim=memory.max peak=memory.peak
  elif [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    cg=/sys/fs/cgroup/memory/scout-bench-$$ lim=memory.limit_in_bytes peak=memory.max_usage_in_bytes
  fi
  if [ -n "${cg:-}" ]; then
    echo "== the whole command in a 1 GiB memory cgroup ($cg)"
    rm -rf "$work/run/analysis"
    mkdir "$cg" && echo $((1 << 30)) >"$cg/$lim"
    trap 'rm -rf "$work"; rmdir "$cg" 2>/dev/null || true' EXIT
    if (echo $BASHPID >"$cg/cgroup.procs" && exec /usr/bin/time -f "%e %M" -o "$work/time" .venv/bin/scout analyze "$work/run") >"$work/out" 2>"$work/err"; then
      read -r wall rss <"$work/time"
      grep "memory:" "$work/out" || echo "  (one window)"
      echo "  $events events in $wall s = $(.venv/bin/python -c "print(f'{$events / $wall / 1e6:.2f}')") M events/s, peak RSS $((rss / 1024)) MB, cgroup peak $(($(cat "$cg/$peak" 2>/dev/null || echo 0) >> 20)) MB (page cache included)"
    else
      echo "  killed or failed in the cgroup:"; tail -3 "$work/err"
    fi
  fi
fi
