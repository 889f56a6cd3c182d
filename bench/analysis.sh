#!/usr/bin/env bash
# Analysis benchmark (issues: analysis engine, 26). Simulates a >= 50 M-event run (bench-60mbps for
# 360 s), then times (1) the whole `scout analyze RUN` command, process start to exit, with its peak
# memory; (2) in the same run, a plain DuckDB group-by of per-layer spans over the same
# packet.parquet (3 columns), the issue's yardstick; (3) `scout analyze` stage by stage. Prints the
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
echo "== the whole command: scout analyze RUN --engine ${ENGINE:-native} (process start to exit)"
/usr/bin/time -f "%e %M" -o "$work/time" .venv/bin/scout analyze "$work/run" --engine "${ENGINE:-native}" >/dev/null
read -r wall rss <"$work/time"
.venv/bin/python -c "import sys; n, w, r = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]); print(f'  {n:,} events in {w:.2f} s = {n / w / 1e6:.2f} M events/s, peak RSS {r / 1024:.0f} MB')" "$events" "$wall" "$rss"
echo "== a plain DuckDB group-by of per-layer spans over the same packet.parquet"
.venv/bin/python - "$work/run/events/packet.parquet" "$events" "$wall" <<'PY'
import sys, time
import duckdb
f, n, whole = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
t0 = time.perf_counter()
rows = duckdb.sql(
    f"SELECT layer, count(*) AS packets, avg(span) AS mean_span_ns FROM "
    f"(SELECT pkt, layer, max(t_ns) - min(t_ns) AS span FROM read_parquet('{f}') GROUP BY pkt, layer) GROUP BY layer"
).fetchall()
dt = time.perf_counter() - t0
print(f"  {len(rows)} layers in {dt:.2f} s = {n / dt / 1e6:.2f} M events/s; the whole analysis is {dt / whole:.2f}x its speed")
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
# journeys + components + layer_delays + profiles: written by the attribution kernel before DuckDB is
# even connected (ENGINE=ibis: computed after it, so the connection counts).
core = at.get("event tables into DuckDB (for the relational tables)") or at["sojourns"]
n = s["events"]
print(f"events: {n:,}")
print(f"journeys + attribution + profiles (+ layer_delays): {core:.2f} s = {n / core / 1e6:.2f} M events/s")
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
