"""The ``scout`` command line. Each command parses its options and calls a library function."""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

# Analysis runs in DuckDB; numpy's BLAS threads would only spin beside the Rust readers.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from scout import __version__, _native, rundir
from scout.argtypes import (
    NONNEGATIVE,
    PORT,
    POSITIVE,
    SECONDS_NONNEGATIVE,
    SECONDS_POSITIVE,
    U64,
    id_list,
    power_of_two,
    size,
)
from scout.errors import RunError, Terminated, UsageError, interrupted
from scout.quantiles import pcts

EPILOG = """\
examples:
  scout demo                                   simulate, analyse and report the built-in scenarios
  scout simulate udp-flood -o runs/flood       a built-in scenario by name
  scout simulate my.yaml -o runs/x --seed 3 --duration 5 --set cell_cfg.common_scs=15
  scout analyze runs/flood                     journeys, attribution, profiles, queues, drops, phases
  scout report runs/flood                      runs/flood/report/index.html + PNG/PDF figures
  scout report runs/light runs/medium runs/heavy   ... with attribution compared across the runs
  scout query runs/flood "SELECT layer, component, sum(ns)/1e6 AS ms FROM components GROUP BY ALL"
  scout export runs/flood --format perfetto    the 20 slowest packets' journeys for ui.perfetto.dev

docs: docs/schema.md (event tables), docs/attribution.md (analysis tables and their exact rules),
      docs/model.md (what the model implements, with 3GPP clauses), docs/cli.md (every command)
"""


def scenarios_dir() -> Path:
    """The built-in scenarios shipped with the source tree."""
    here = Path(__file__).resolve()
    for base in [here.parent / "scenarios", here.parents[2] / "scenarios"]:
        if base.is_dir():
            return base
    raise SystemExit("error: built-in scenarios not found (expected scenarios/ beside python/)")


def resolve_scenario(name: str, builtin_only: bool = False) -> Path:
    """A scenario file: NAME as a path to a file, else the built-in scenario of that name."""
    p = Path(name)
    if p.is_file() and not builtin_only:
        return p
    builtin = scenarios_dir() / f"{name}.yaml"
    if builtin.is_file():
        return builtin
    names = ", ".join(sorted(f.stem for f in scenarios_dir().glob("*.yaml")))
    raise SystemExit(f"error: {name}: no such file, and not a built-in scenario; built-in: {names}")


class Progress:
    """Progress on stderr: a one-line bar on a terminal, else a line per 10 % (CI, a pipe, a log)."""

    def __init__(self, label: str):
        self.label = label
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.tenth = 0

    def __call__(self, frac: float, note: str = "") -> None:
        if self.tty:
            width = 30
            n = int(frac * width)
            line = f"\r{self.label} [{'#' * n}{'.' * (width - n)}] {frac * 100:5.1f}% {note}"
            sys.stderr.write(line[:120].ljust(min(len(line), 120)))
            sys.stderr.flush()
        elif int(frac * 10) > self.tenth:
            self.tenth = int(frac * 10)
            print(f"{self.label}: {self.tenth * 10:3d} %" + (f" ({note})" if note else ""), file=sys.stderr, flush=True)

    def done(self, finished: bool = True) -> float:
        wall = time.monotonic() - self.t0
        if finished and not self.tty and 0 < self.tenth < 10:
            self(1.0)  # the last line says it finished
        if self.tty:
            sys.stderr.write("\r" + " " * 120 + "\r")
        return wall


class Stages(Progress):
    """Progress over named stages (analysis, report): each stage counts as an equal share."""

    def __init__(self, label: str, stages: int):
        super().__init__(label)
        self.stages = max(stages, 1)
        self.done_stages = 0

    def stage(self, name: str) -> None:
        self(min(self.done_stages / self.stages, 1.0), name)
        self.done_stages += 1


#: What the running command has begun to write and not finished: (description, remove), undone
#: by `main` when the command fails or is interrupted.
_UNFINISHED: list[tuple[str, Callable[[], bool | None]]] = []


def _begin(what: str, remove: Callable[[], bool | None]) -> None:
    _UNFINISHED.append((what, remove))


def _finished() -> None:
    _UNFINISHED.pop()


def fmt_ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.2f}"


def replay_lines(radio: list) -> list[str]:
    """One line per UE whose radio replays a recorded run (``channel.model: replay``)."""
    lines = []
    for r in radio:
        rp = r.get("replay")
        if not rp:
            continue
        parts = []
        for d in ("dl", "ul"):
            s = rp.get(d)
            if not s:
                parts.append(f"{d.upper()} not recorded (constant SINR)")
                continue
            bler = s["first_tx_nacks"] / s["with_outcome"] if s["with_outcome"] else 0.0
            mcs = "recorded MCS" if s["with_mcs"] else "link adaptation on the recorded SINR"
            parts.append(f"{d.upper()} {s['with_outcome']:,} first transmissions, {bler:.1%} failed, {mcs}")
        lines.append(f"radio: UE {r['ue']} replays UE {rp['recorded_ue']} of {rp['run']} ({'; '.join(parts)})")
    return lines


def print_summary(name: str, result: dict, wall: float, verb: str = "simulated") -> None:
    s = result["summary"]
    ev = result["events"]
    n_ev = sum(ev.values())
    if verb == "simulated":
        print(f"\n{name}: {s['duration_s']:.1f} s simulated in {wall:.2f} s ({s['duration_s'] / wall:.0f}x real time)")
    else:
        print(f"\n{name}: {s['duration_s']:.1f} s emulated")
    print(f"  run directory: {result['run']}")
    print(f"  events: {n_ev:,} ({ev['packet_events']:,} packet, {ev['slot_events']:,} slot, {ev['control_events']:,} control)")
    hdr = f"  {'dir':<4}{'offered':>10}{'delivered':>11}{'Mbit/s':>9}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'HARQ retx':>11}"
    print(hdr)
    for d in s["directions"]:
        if d["offered_packets"] == 0:
            continue
        delay = d["delay"] or {}
        print(
            f"  {d['dir']:<4}{d['offered_packets']:>10,}{d['delivered_packets']:>11,}{d['throughput_mbps']:>9.1f}"
            f"{fmt_ms(delay.get('p50_ns')):>9}{fmt_ms(delay.get('p90_ns')):>9}{fmt_ms(delay.get('p99_ns')):>9}"
            f"{d['harq_retx']:>11,}"
        )
    drops = s.get("drops") or {}
    if drops:
        parts = [f"{layer}/{reason}: {v['packets']:,}" for layer, rs in drops.items() for reason, v in rs.items()]
        print("  drops: " + ", ".join(parts))
    else:
        print("  drops: none")
    print(f"  in flight at end: {s['in_flight_packets']:,}")
    to_core = (result.get("n3") or {}).get("to_core_packets")
    if to_core:
        print(f"  uplink handed to real UPF(s) at the gNB's N3: {to_core:,} (the model's journeys end there)")
    if s.get("app_rtt"):
        r = s["app_rtt"]
        print(f"  app RTT (ping): p50 {fmt_ms(r['p50_ns'])} ms, p99 {fmt_ms(r['p99_ns'])} ms")
    for line in replay_lines(result.get("radio") or []):
        print("  " + line)
    if result.get("apps_not_run"):
        a = result["apps_not_run"]
        print(f"  note: the scenario's {a['count']} app(s) were not run: {a['why']}")


LIVE_ADDR = "127.0.0.1:9470"


def _live_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--live",
        action="store_true",
        help=f"watch {what} as it runs: a web page of queue occupancy and sojourn, time per layer, drops, per-UE "
        "throughput and app RTT, updated every few hundred ms, and Prometheus metrics at /metrics (docs/live.md)",
    )
    p.add_argument(
        "--live-addr",
        default=LIVE_ADDR,
        metavar="HOST:PORT",
        help=f"where --live listens (default {LIVE_ADDR}: this machine only; port 0 picks a free one)",
    )


def _live_server(args: argparse.Namespace):
    """The live view the command's run feeds (``--live``), listening and announced; None without it."""
    if not getattr(args, "live", False):
        return None
    try:
        server = _native.LiveServer(args.live_addr)
    except ValueError as e:
        raise SystemExit(f"error: --live: {e}") from None
    print(f"live: {server.url}  (Prometheus: {server.url}metrics)", file=sys.stderr, flush=True)
    return server


def run_simulation(scenario: Path, out: Path, seed, duration, sets, force: bool, quiet: bool = False, live=None) -> dict:
    _prepare_run(out, force, "run")
    prog = Progress(f"simulating {scenario.stem}")
    try:
        text = _native.simulate(
            str(scenario),
            str(out),
            seed=seed,
            duration=duration,
            sets=list(sets),
            progress=None if quiet else prog,
            live=live,
        )
    except ValueError as e:
        prog.done(finished=False)
        raise SystemExit(f"error: {e}") from None
    except BaseException:
        prog.done(finished=False)
        raise
    _finished()
    wall = prog.done()
    result = json.loads(text)
    result["wall_s"] = wall
    return result


def cmd_simulate(args: argparse.Namespace) -> int:
    scenario = resolve_scenario(args.scenario)
    out = Path(args.output)
    live = _live_server(args)
    result = run_simulation(scenario, out, args.seed, args.duration, args.set or [], args.force, live=live)
    print_summary(scenario.stem, result, result["wall_s"])
    return 0


def _analysis_progress(run: Path, engine: str = "native") -> Stages:
    from scout import analysis

    return Stages(f"analysing {run.name}", analysis.STAGES[engine])


def _begin_analysis(run: Path) -> None:
    def discard() -> bool:
        from scout import analysis

        return analysis.discard_partial(run)

    _begin(f"partial analysis tables in {run / 'analysis'}", discard)


def _start_kernel(run: Path, window_s: float | None, bin_s: float | None, memory: int | None):
    """The attribution kernel started on the run, before the relational part of the analysis is
    imported (Ibis, pandas: ~0.5 s, spent while the kernel works); None when the run does not
    check out (the analysis then says why) or its duration is unknown."""
    from scout import attribution

    try:
        meta = attribution.check_run(run).meta
    except RunError:
        return None
    window_s = attribution.DEFAULT_WINDOW_S if window_s is None else window_s
    bin_s = attribution.DEFAULT_BIN_S if bin_s is None else bin_s
    return attribution.start(run, meta, window_s, bin_s, memory)


def _import_analysis(beside: bool) -> None:
    """Imports the relational part of the analysis (Ibis, pandas, DuckDB's Ibis backend: ~0.5 s of
    a core). ``beside`` a running kernel, on a thread at the lowest CPU priority (nice 19; the
    niceness of a Linux thread is its own): the imports then take the moments the kernel leaves a
    core idle instead of its time (on two cores, the kernel ends ~0.15 s sooner; bench/RESULTS.md)."""
    if not beside:
        return
    failed: list[BaseException] = []

    def work() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except OSError:
            pass  # no such call here: imported at the usual priority
        # The imports create ~10^5 objects and nothing to collect: Python's collector, which would
        # walk them again and again meanwhile (~0.1 s of a core), waits; afterwards they are frozen
        # (left out of later collections).
        gc.disable()
        try:
            import ibis.backends.duckdb  # noqa: F401

            import scout.analysis  # noqa: F401
        except BaseException as e:  # raised again on the caller's thread
            failed.append(e)
        finally:
            gc.enable()
            gc.freeze()

    t = threading.Thread(target=work, name="scout-imports", daemon=True)
    t.start()
    t.join()
    if failed:
        raise failed[0]


def _check_writable(d: Path, what: str = "the analysis tables") -> None:
    """Refuses, before any work, a directory the command cannot write into (a read-only mount)."""
    if not os.access(d, os.W_OK):
        import errno

        code = errno.EROFS if os.access(d, os.R_OK) else errno.EACCES
        raise OSError(code, f"{os.strerror(code)} ({what} are written there)", str(d))


def run_analysis(
    run: Path,
    window_s: float | None = None,
    bin_s: float | None = None,
    quiet: bool = False,
    engine: str = "native",
    spark_master: str | None = None,
    spark_conf: list[str] | None = None,
    memory: int | None = None,
) -> dict:
    _begin_analysis(run)
    started = _start_kernel(run, window_s, bin_s, memory) if engine == "native" else None
    try:
        _import_analysis(beside=started is not None)
        from scout import analysis
    except BaseException:
        if started:
            started.stop()
        raise
    kw = {"engine": engine, "memory": memory, "started": started}
    if engine == "spark":
        from scout.analysis import spark

        try:
            kw.update(spark_master=spark_master, spark_conf=spark.parse_conf(spark_conf))
        except RunError as e:
            raise SystemExit(f"error: {e}") from None
    if window_s is not None:
        kw["window_s"] = window_s
    if bin_s is not None:
        kw["bin_s"] = bin_s
    prog = _analysis_progress(run, engine)
    try:
        s = analysis.analyze(run, progress=None if quiet else prog.stage, **kw)
    except RunError as e:
        prog.done(finished=False)
        raise SystemExit(f"error: {e}") from None
    except BaseException:
        prog.done(finished=False)
        raise
    prog.done()
    _finished()
    return s


def print_analysis(s: dict) -> None:
    cl = s["closure"]
    print(f"analysis of {s['run']} ({s['source']}): {s['events']:,} events in {s['wall_s']:.2f} s")
    pk = s["packets"]
    if s.get("source") in ("simulator", "emulator") or not pk:
        print("  packets: " + (", ".join(f"{k} {v:,}" for k, v in sorted(pk.items())) or "none"))
    else:
        # The source sees part of each packet's path: a journey ends where the source stops seeing it.
        seen = sum(pk.values())
        rest = ", ".join(f"{k} {v:,}" for k, v in sorted(pk.items()) if k != "incomplete")
        print(f"  packets: {seen:,} seen over the part of the path the source covers" + (f" ({rest})" if rest else ""))
    for d, v in sorted(s["delay_ns"].items()):
        print(f"  {d.upper()} one-way delay: {pcts(v, v['n'])}, max {_ms(v['max'])}")
    hl = s.get("headline") or {}
    if hl.get("covers"):
        print(f"  covers: {hl['covers']}")
    for f in hl.get("figures", []):
        print(f"  {f['name']}: {f['value']}")
    if cl["n"]:
        print(
            f"  attribution closes for {cl['closed']:,} of {cl['n']:,} delivered packets; "
            f"{cl['with_unattributed']:,} carry unattributed time ({fmt_ms(cl['unattributed_ns'])} ms in all)"
        )
    if cl.get("span_n", 0) > cl["n"]:
        print(
            f"  every packet: components sum to its measured span for {cl['span_closed']:,} of {cl['span_n']:,}; "
            f"{cl['span_with_unattributed']:,} include unattributed time (hops the source does not observe)"
        )
    if s["dominant"]:
        print("  largest contributors: " + ", ".join(f"{x['layer']}/{x['component']}" for x in s["dominant"]))
    mem = s.get("memory") or {}
    if mem.get("windows", 1) > 1:
        print(
            f"  memory: events read in {mem['windows']} windows of packets for a budget of "
            f"{mem['budget_bytes'] / 2**20:,.0f} MiB (--memory; docs/attribution.md)"
        )
    if s["drops"]:
        print("  drops: " + ", ".join(f"{k} {v:,}" for k, v in s["drops"].items()))
    for ph in s["phases"]:
        print(f"  phase {ph['phase']:<10} {ph['start_ns'] / 1e9:7.2f} s – {ph['end_ns'] / 1e9:7.2f} s  drops {ph['drops']:,}")
    for x in hl.get("absent", []):
        print(f"  not measured: {x['name']} ({x['why']})")


def cmd_analyze(args: argparse.Namespace) -> int:
    if args.engine != "spark" and (args.spark_master or args.spark_conf):
        raise SystemExit("error: --spark-master and --spark-conf apply to --engine spark only")
    if args.engine == "spark" and args.memory:
        raise SystemExit("error: --memory applies to the native and ibis engines; Spark's memory is set with --spark-conf")
    s = run_analysis(
        Path(args.run),
        args.window,
        args.bin,
        engine=args.engine,
        spark_master=args.spark_master,
        spark_conf=args.spark_conf,
        memory=args.memory,
    )
    print_analysis(s)
    print(f"  tables: {Path(args.run) / 'analysis'}/*.parquet (docs/attribution.md)")
    return 0


def _open(run: str, why: str = ""):
    """A run's analysis for a command, analysing it first (saying so, with progress) when needed."""
    from scout import analysis

    p = Path(run)
    try:
        if not analysis.is_current(p):
            analysis.check_run(p)
            _check_writable(p / "analysis" if (p / "analysis").is_dir() else p)
            print(
                f"{run}: analysing first (its analysis tables are missing or older than its events){why}",
                file=sys.stderr,
            )
            run_analysis(p)
        return analysis.open(p)
    except RunError as e:
        raise SystemExit(f"error: {e}") from None


def render_report(a, compare=None, static: bool = False) -> Path:
    """Writes one run's report with progress; an unfinished report is removed."""
    from scout import report

    prog = Stages(f"report {a.path.name}", report.STAGES)
    _begin(f"unfinished report {a.path / 'report'}", lambda: report.discard(a.path))
    try:
        path = report.render(a, compare, progress=prog.stage, static=static)
    except BaseException:
        prog.done(finished=False)
        raise
    prog.done()
    _finished()
    return path


def cmd_report(args: argparse.Namespace) -> int:
    analyses = [_open(r) for r in args.runs]
    for a in analyses:
        path = render_report(a, analyses, static=args.static)
        figs = f"  (figures: {path.parent / 'figures'}/*.png, *.pdf)" if args.static else ""
        print(f"report: {path}{figs}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from scout import export

    out = Path(args.output) if args.output else Path(args.run) / "export"
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory; give a directory for the exported files")
    # Where the files will go must be writable before the run is analysed for them.
    _check_writable(next(p for p in [out, *out.absolute().parents] if p.exists()), "the exported files")
    a = _open(args.run)
    written: list[Path] = []
    created = not out.exists()

    def remove_written() -> bool:
        existing = [p for p in written if p.exists()]
        for p in existing:
            p.unlink()
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        return bool(existing)

    _begin(f"unfinished export files in {out}", remove_written)
    paths = export.export(
        a, args.format, args.granularity, out, select=args.select, n=args.packets, ids=args.pkt, written=written
    )
    _finished()
    for p in paths:
        print(f"wrote {p} ({p.stat().st_size:,} bytes)")
    if args.format == "perfetto":
        print("open it at https://ui.perfetto.dev (Open trace file) or chrome://tracing")
    return 0


#: Words of a statement that asks DuckDB's catalog, which should list the analysis tables too.
CATALOG_WORDS = {"information_schema", "show", "duckdb_tables", "duckdb_views", "duckdb_columns", "pragma"}


def cmd_query(args: argparse.Namespace) -> int:
    """Runs the statement(s) on DuckDB's own connection: anything DuckDB accepts (SELECT, SHOW,
    DESCRIBE, SUMMARIZE, PRAGMA, COPY ... TO, several statements separated by ';'); the last
    statement's result is printed."""
    import re

    from scout import analysis

    run = Path(args.run)
    words = set(re.findall(r"[A-Za-z_]+", args.sql.lower()))
    try:
        if words & (set(analysis.TABLE_NAMES) | CATALOG_WORDS) or analysis.is_current(run):
            con = _open(args.run, why="; the statement needs the analysis tables").con
        else:
            con, _ = analysis.connect(run)
    except RunError as e:
        raise SystemExit(f"error: {e}") from None
    duck = con.con  # the DuckDB connection behind Ibis: statements go to DuckDB as written
    try:
        rel = duck.sql(args.sql)
        if rel is None:  # a statement without a result (COPY ... TO, SET, CREATE ...)
            print("ok (the statement returned no rows)", file=sys.stderr)
            return 0
        if args.limit is not None:
            rel = rel.limit(args.limit)
        table = rel.fetch_arrow_table()
    except Exception as e:  # the database's own message names the problem (syntax, unknown column, ...)
        if interrupted(e):
            raise KeyboardInterrupt from e
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        tables = ", ".join(list(analysis.TABLES) + analysis.TABLE_NAMES)
        raise SystemExit(f"error: query failed: {first} (tables: {tables})") from None
    # Integers with NULLs stay integers (pandas would make them floats).
    df = table.to_pandas(integer_object_nulls=True)
    if args.format == "csv":
        df.to_csv(sys.stdout, index=False)
    elif args.format == "json":
        print(df.to_json(orient="records", lines=True), end="")
    else:
        import pandas as pd

        with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
            print(df.to_string(index=False) if len(df) else "  ".join(map(str, df.columns)))
        print(f"({len(df):,} rows)", file=sys.stderr)
    return 0


FORCE_HELP = "replace an existing Scout run in -o (only the files Scout wrote there are removed)"


def _run_output_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="run directory to create (new or empty)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)


def _prepare_run(out: Path, force: bool, what: str) -> None:
    """Checks ``-o`` (rundir.prepare) and registers the unfinished run for removal. The native
    writer removes what it wrote itself; this removes a directory Scout created empty."""
    existed = rundir.prepare(out, force)
    _begin(f"unfinished {what} {out}", lambda: rundir.remove_run_outputs(out, keep_dir=existed) if out.exists() else None)


def _prepare_output(args: argparse.Namespace) -> Path:
    out = Path(args.output)
    _prepare_run(out, args.force, "run")
    return out


def _keep_going_arg(p: argparse.ArgumentParser, when: str) -> None:
    p.add_argument(
        "--keep-going",
        action="store_true",
        help=f"exit 0 even when {when}; the run keeps what came before the damage either way and says what was "
        "lost; without it the exit status is 3",
    )


def _check_inputs(paths, what: str) -> None:
    """Input files named on the command line exist and are readable, before any work."""
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise UsageError(f"{what} {p}: no such file")
        if p.is_dir():
            raise UsageError(f"{what} {p}: is a directory; give a file")
        try:
            with open(p, "rb") as f:
                f.read(1)
        except OSError as e:
            raise UsageError(f"{what} {p}: cannot be read: {e.strerror}") from None


def _progress_printer(t0: float, tty: bool):
    """A progress callback: a bar on a terminal, one line per tenth otherwise (CI, a pipe)."""
    shown = [-1]

    def progress(done: int, total: int) -> None:
        if not total:
            return
        frac = done / total
        rate = done / 1e6 / max(time.monotonic() - t0, 1e-9)
        if tty:
            n = int(frac * 30)
            sys.stderr.write(
                f"\ringesting [{'#' * n}{'.' * (30 - n)}] {frac * 100:5.1f}% ({done / 1e6:,.0f} MB, {rate:,.0f} MB/s)"
            )
            sys.stderr.flush()
        elif int(frac * 10) > shown[0]:
            shown[0] = int(frac * 10)
            print(f"ingesting: {frac:4.0%} ({done / 1e6:,.0f} MB, {rate:,.0f} MB/s)", file=sys.stderr, flush=True)

    return progress


def cmd_ingest_srsran(args: argparse.Namespace) -> int:
    _check_inputs(args.logs, "LOG")
    _check_inputs(args.trace, "--trace")
    _check_inputs(args.metrics, "--metrics")
    out = _prepare_output(args)
    t0 = time.monotonic()
    tty = sys.stderr.isatty()
    progress = _progress_printer(t0, tty)

    try:
        meta = json.loads(
            _native.ingest_srsran(
                [str(p) for p in args.logs],
                str(out),
                progress,
                [str(t) for t in args.trace],
                [str(m) for m in args.metrics],
            )
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    _finished()
    if tty:
        sys.stderr.write("\n")
    wall = time.monotonic() - t0
    ing = meta["ingest"]
    counts = meta["counts"]
    nbytes = sum(f["bytes"] for f in ing["files"])
    print(f"ingested {len(ing['files'])} srsRAN log(s), {nbytes / 1e6:,.1f} MB in {wall:.2f} s -> {out}")
    sv = meta.get("srsran") or {}
    if sv:
        built = f" (commit {sv['commit']}, branch {sv['branch']})" if sv.get("commit") else ""
        print(f"  srsRAN release from the line formats: {sv['release_from_formats']}{built}")
    for f in ing["files"]:
        gaps = len(f["skipped_log_lines_markers"])
        print(
            f"  {f['file']}: {f['entries']:,} entries, {f['continuation_lines']:,} continuation lines, "
            f"{f['orphan_lines']:,} orphan, {f['out_of_order_entries']:,} out of order, {gaps} log gap marker(s)"
        )
        if f.get("impossible_time_lines"):
            print(
                f"  {f['file']}: {f['impossible_time_lines']:,} line(s) with an impossible time (outside 1970-2200, "
                f"or no such hour) skipped, the first at line {f['first_impossible_time_line']:,}"
            )
        if f.get("overlong_lines"):
            print(
                f"  {f['file']}: {f['overlong_lines']:,} line(s) longer than 1 MiB skipped, the first at line "
                f"{f['first_overlong_line']:,}"
            )
    ev = counts["events"]
    if not ing["packets"]:
        srb = f" ({ing['srb_lines']:,} signalling-bearer lines)" if ing.get("srb_lines") else ""
        print(
            f"  no data-bearer (DRB) traffic in the log{srb}: no packet journeys; per-packet analysis needs user-plane "
            "traffic logged at the info level for gtpu, pdcp, rlc and mac (docs/ingest-srsran.md)"
        )
    print(
        f"  packets: {ing['packets']:,} (waiting somewhere at the end: {ing['pending_at_end']:,}); events: "
        f"{ev['packet_events']:,} packet, {ev['slot_events']:,} slot, {ev['control_events']:,} control"
    )
    tr = meta.get("trace")
    if tr:
        print(
            f"  trace: {tr['events']:,} events ({tr['executor_tasks']:,} executor tasks, {tr['instants']:,} instant, "
            f"{tr['overflows']:,} overflow markers, {tr['bad_lines']:,} unreadable lines); clock: {tr['aligned_by']}"
        )
    mt = meta.get("metrics")
    if mt:
        print(
            f"  metrics: {mt['objects']:,} objects -> {mt['control_rows']:,} rows ({mt['unknown_objects']:,} of "
            f"other kinds, {mt['bad_lines']:,} unreadable lines)"
        )
    sl = ing.get("slots") or {}
    if sl.get("dl_grants") or sl.get("ul_grants"):
        num = sl.get("numerology") or {}
        how = f"stated by {num['from']} at {num['at']}" if num.get("stated") else "inferred: the log states no subcarrier spacing"
        print(
            f"  slots: {sl['dl_grants']:,} DL and {sl['ul_grants']:,} UL grants; {sl['bsr_reports']:,} BSRs; "
            f"{sl.get('csi_reports', 0):,} CSI reports; "
            f"{sl['harq_discards']:,} HARQ discards; {sl['slots_per_frame']} slots/frame ({how})"
        )
        if sl.get("numerology_conflicts"):
            print(f"  numerology: {sl['numerology_conflicts']:,} statement(s) of another subcarrier spacing (not used)")
        for d, h in (sl.get("harq") or {}).items():
            if h["transmissions"]:
                print(f"  {d.upper()} HARQ: {harq_line(h)}")
    health = ing.get("log_health") or {}
    we = health.get("warnings_and_errors") or {}
    if we.get("warnings") or we.get("errors"):
        comps = sorted(we["by_component"].items(), key=lambda kv: -(kv[1]["warnings"] + kv[1]["errors"]))
        print(
            f"  the log's own warnings and errors: {we['warnings']:,} warning(s), {we['errors']:,} error(s) ("
            + ", ".join(f"{k} {v['warnings'] + v['errors']:,}" for k, v in comps[:6])
            + (", ..." if len(comps) > 6 else "")
            + ")"
        )
        for m in we["top_messages"][:3]:
            print(f"    {m['count']:>7,} x [{m['component']}] {m['level']}: {m['message']} (first at {m['first']})")
    for c in health.get("cut_last_lines") or []:
        print(f"  {c['file']}: cut mid-line at its end: line {c['line']:,} has no line end and was not used")
    for k, v in (counts.get("drops") or {}).items():
        print(f"  drops at {k}: " + ", ".join(f"{r} {n:,}" for r, n in v.items()))
    damaged = counts["skipped_inputs"].get("damaged_files") or []
    for d in damaged:
        print(
            f"  damaged: {d['file']} after line {d['after_line']:,}: {d['reason']}; "
            "the rest not read (the lines before it are kept)"
        )
    sk = counts["skipped_inputs"]
    if sk.get("unlinked_lines"):
        print("  lines that could not be linked: " + ", ".join(f"{k} {v:,}" for k, v in sk["unlinked_lines"].items()))
    nh = sk.get("per_packet_lines_not_turned_into_events", [])
    if nh:
        print(
            f"  per-packet messages not turned into events yet: {sum(x['count'] for x in nh):,} lines, e.g. "
            + "; ".join(f"{x['message']} ({x['count']:,}, first at line {x['first_line']})" for x in nh[:3])
        )
    print(f"next: scout analyze {out}   (inferred links are listed in run.json 'links')")
    return _damaged_status("srsran", damaged, args.keep_going)


def harq_line(h: dict) -> str:
    """One direction's HARQ from ``run.json`` ``ingest.slots.harq``: an outcome the log does not
    carry is said to be unknown, with what the log implies (docs/ingest-srsran.md)."""
    text = (
        f"{h['transmissions']:,} transmissions ({h['new_transport_blocks']:,} new transport blocks, "
        f"{h['retransmissions']:,} retransmissions)"
    )
    implied = (
        f"{h['failed_attempts_implied']:,} failed attempts implied ({h['retransmissions']:,} retransmitted, "
        f"{h['lost_after_max_retx']:,} lost after the maximum retransmissions)"
    )
    if not h["outcome_logged"]:
        return f"{text}; outcome not logged (info level): {implied}"
    text += f"; outcome logged for {h['outcome_logged']:,}: {h['ack']:,} ACK, {h['nack']:,} NACK/DTX/CRC KO"
    if h["outcome_not_logged"]:
        text += f"; {h['outcome_not_logged']:,} without an outcome in the log"
    if h["lost_after_max_retx"]:
        text += f"; {h['lost_after_max_retx']:,} lost after the maximum retransmissions"
    return text


def _damaged_status(source: str, damaged: list, keep_going: bool) -> int:
    """Exit status 3 when an input was damaged part-way (the run holds what was readable), 0 with
    --keep-going or when nothing was damaged."""
    if damaged and not keep_going:
        print(
            f"scout ingest {source}: {len(damaged)} damaged input(s): the run holds what was readable; exit status 3 "
            "(--keep-going: 0)",
            file=sys.stderr,
        )
        return 3
    return 0


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f} ms"


def cmd_ingest_pcap(args: argparse.Namespace) -> int:
    _check_inputs(args.files, "FILE")
    out = _prepare_output(args)
    t0 = time.monotonic()
    tty = sys.stderr.isatty()
    try:
        meta = json.loads(
            _native.ingest_pcap(
                [str(p) for p in args.files],
                str(out),
                _progress_printer(t0, tty),
                args.gtp_port or [2152],
                args.n3,
                args.n6,
                args.window,
            )
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    _finished()
    if tty:
        sys.stderr.write("\n")
    wall = time.monotonic() - t0
    pc, pf, counts = meta["pcap"], meta["pfcp"], meta["counts"]
    print(f"ingested {len(pc['files'])} capture(s), {pc['frames']:,} frames in {wall:.2f} s -> {out}")
    for d in ("ul", "dl"):
        u = pc["upf_delay"][d]
        if u["pairs"]:
            q = {"p50": u["p50_ns"], "p99": u["p99_ns"]}
            print(
                f"  UPF forwarding delay {d.upper()}: {u['pairs']:,} packets paired N3<->N6 by identity; "
                f"{pcts(q, u['pairs'])}, max {_ms(u['max_ns'])}"
            )
    un = pc["unmatched"]
    seen = {s: sum(p[f"{s}_sightings"] for p in pc["capture_points"]) for s in ("n3", "n6")}
    print(
        f"  unmatched: N3 {un['n3']['no_twin_within_window'] + un['n3']['capture_ended']:,}, "
        f"N6 {un['n6']['no_twin_within_window'] + un['n6']['capture_ended']:,} "
        f"(duplicate sightings at other capture points: N3 {pc['duplicate_sightings']['n3']:,}, "
        f"N6 {pc['duplicate_sightings']['n6']:,}); not user-plane frames: {pc['not_user_plane_frames']:,}"
    )
    for side, other in (("n3", "n6"), ("n6", "n3")):
        if seen[side] and not seen[other]:
            print(
                f"  {other.upper()} was not captured (no {other.upper()} sighting in the capture): the {seen[side]:,} "
                f"{side.upper()} sightings have no twin to pair with; that is not a loss at the UPF"
            )
    if pc["gtpu_other_messages"]:
        print("  other GTP-U messages: " + ", ".join(f"{k} {v:,}" for k, v in pc["gtpu_other_messages"].items()))
    if pc.get("gtpu_length_field_mismatch"):
        print(
            f"  GTP-U length field disagrees with the datagram in {pc['gtpu_length_field_mismatch']:,} message(s): "
            "decoded from the datagram, as Wireshark does"
        )
    if pf["messages"]:
        print(
            f"  PFCP: {pf['messages']:,} messages, {pf['pairs']:,} request/response pairs, "
            f"{len(pf['unanswered_requests']):,} unanswered, {pf['responses_without_request']:,} responses without "
            f"request, {pf['retransmissions']:,} retransmissions, {pf['sequence_number_reuse']:,} requests reusing "
            f"an open sequence number, {len(pf['sessions']):,} sessions"
            + (
                f" ({pf['duplicate_sightings']:,} duplicate sightings at other capture points)"
                if pf.get("duplicate_sightings")
                else ""
            )
        )
    for side, opts in (pc.get("side_option_matches") or {}).items():
        for o in opts:
            if not o["frames"]:
                ifaces = sorted({p["iface"] for p in pc.get("capture_points", []) if p.get("iface")})
                seen = f"; the capture's interfaces: {', '.join(ifaces)}" if ifaces else " (the capture names no interfaces)"
                print(f"  warning: --{side} {o['value']} matched no frame (neither an interface nor an address seen){seen}")
    for f in pc["files"]:
        if f.get("other_blocks"):
            kinds = ", ".join(f"{n:,} {k}" for k, n in (f.get("other_block_types") or {}).items())
            print(f"  {f['file']}: {f['other_blocks']:,} pcapng block(s) without packets skipped ({kinds})")
        if f.get("impossible_time_frames"):
            print(
                f"  {f['file']}: {f['impossible_time_frames']:,} packet(s) with a time before 1970 or after 2200 "
                "(a bad if_tsoffset or if_tsresol) skipped"
            )
    damaged = counts["skipped_inputs"].get("damaged_files") or []
    for d in damaged:
        lost = f"{d['bytes_not_read']:,} bytes after it not read" if d.get("bytes_not_read") is not None else "the rest not read"
        print(f"  damaged: {d['file']} at byte {d['offset']:,}: {d['reason']}; {lost} (the frames before it are kept)")
    bad = counts["skipped_inputs"]["frames_not_decoded"]
    if bad:
        print(
            f"  frames not decoded: {sum(x['count'] for x in bad):,}, e.g. "
            + "; ".join(f"{x['cause']} ({x['count']:,}, first at {x['first']})" for x in bad[:3])
        )
    print(f"next: scout analyze {out}")
    return _damaged_status("pcap", damaged, args.keep_going)


def cmd_probe(args: argparse.Namespace) -> int:
    out = _prepare_output(args)
    tty = sys.stderr.isatty()
    live = _live_server(args)

    def progress(elapsed: float, pairs: int, lost: int) -> None:
        if elapsed == 0.0:
            # The first call: every program is attached.
            until = f"for {args.duration:g} s" if args.duration is not None else "until Ctrl-C"
            print(f"probe: attached ({args.pairing} pairing); probing {until}", file=sys.stderr, flush=True)
            return
        line = f"probe: {elapsed:6.1f} s, {pairs:,} packets paired N3<->N6, ring-buffer loss {lost:,}"
        if tty:
            sys.stderr.write("\r" + line)
            sys.stderr.flush()
        elif int(elapsed) % 10 == 0:
            print(line, file=sys.stderr, flush=True)

    try:
        meta = json.loads(
            _native.probe(
                args.n3,
                args.n6,
                str(out),
                args.slice,
                args.duration,
                args.histogram,
                args.window,
                args.gtp_port,
                progress,
                args.pfcp,
                args.table_sets,
                args.pairing,
                live,
            )
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    _finished()
    if tty:
        sys.stderr.write("\n")
    pr = meta["probe_result"]
    print(f"probed {len(pr['upfs'])} UPF(s) for {pr['duration_s']:.1f} s -> {out}")
    print(
        f"  pairs: UL {pr['pairs']['ul']:,}, DL {pr['pairs']['dl']:,} (kernel: {pr['pairs_in_kernel']:,}); "
        f"ring-buffer loss {pr['ringbuf_lost']:,}; unmatched N3 {pr['unmatched']['n3']:,}, N6 {pr['unmatched']['n6']:,}"
    )
    for side in ("n3", "n6"):
        why = {k: v for k, v in pr["unmatched_by_reason"][side].items() if v}
        if why:
            print(f"  unmatched {side.upper()} by reason: " + ", ".join(f"{k} {v:,}" for k, v in why.items()))
    full = pr["unmatched_by_reason"]["n3"]["table_full"] + pr["unmatched_by_reason"]["n6"]["table_full"]
    if full:
        print(
            f"  warning: the kernel's pending table was full {full:,} times (sightings given up before their twin "
            f"came); give a larger --table-sets (now {args.table_sets:,} sets)"
        )
    if pr["pending_table_unread"]:
        print(f"  warning: could not read what was still waiting in the kernel for: {', '.join(pr['pending_table_unread'])}")
    if pr["cost_ns_per_packet"] is not None:
        print(f"  probe cost: {pr['cost_ns_per_packet']:.0f} ns per packet ({pr['cost_from']})")
    for p in pr.get("pfcp", []):
        print(
            f"  PFCP on {p['interface']}: {p['messages']:,} messages, {p['pairs']:,} pairs, "
            f"{len(p['unanswered_requests']):,} unanswered, {p['undecodable']:,} undecodable"
        )
    for u in pr["upfs"]:
        c = u["counters"]
        print(
            f"  {u['n3']} / {u['n6']} ({u['slice']}): N3 {c['n3_sightings']:,}, N6 {c['n6_sightings']:,} sightings; "
            f"not GTP-U {c['not_gtpu']:,}, not IP {c['not_ip']:,}, malformed {c['malformed']:,}, "
            f"duplicates {c['duplicates']:,}"
        )
    print(f"next: scout analyze {out}")
    return 0


def _emulator_unavailable(tools: tuple[str, ...] = ()) -> str | None:
    """Why `scout emulate` (and the applications ``tools`` it is to run) cannot run here, if it cannot."""
    if os.geteuid() != 0:
        return "it needs root (network namespaces, TUN devices): run it as root or with sudo"
    if not Path("/dev/net/tun").exists():
        return "this machine has no /dev/net/tun (the kernel's TUN driver)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    return next((f"{t} is not installed" for t in tools if shutil.which(t) is None), None)


def _app_status(a: dict) -> str:
    """How a scenario's application ended, from its `run.json` `apps` entry."""
    if a.get("started_s") is None:
        return f"not started (due at {a['at_s']:g} s, after the emulation's end)"
    if a.get("exit_code") is not None:
        return f"exit {a['exit_code']}"
    sig = a.get("signal")
    if sig is None:
        return "status unknown (not reaped)"
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = "unknown signal"
    # The emulation ends what still runs with SIGTERM, then SIGKILL 2 s later (docs/emulator.md).
    return f"signal {sig} ({name})"


def cmd_emulate(args: argparse.Namespace) -> int:
    why = _emulator_unavailable()
    if why:
        raise SystemExit(f"error: scout emulate: {why}")
    scenario = resolve_scenario(args.scenario)
    out = _prepare_output(args)
    tty = sys.stderr.isatty() and not args.shell
    live = _live_server(args)
    t0 = time.monotonic()

    def ready(namespaces: list[str]) -> None:
        dn, ues = namespaces[0], namespaces[1:]
        print(
            f"emulate: {len(ues)} UE(s) up: DN {dn} (10.45.0.1), UE 0 {ues[0]} (10.45.0.2)"
            + (f" … UE {len(ues) - 1} {ues[-1]}" if len(ues) > 1 else ""),
            file=sys.stderr,
        )
        print(f"emulate: run a command in one: scout exec {out} ue0 -- ping 10.45.0.1", file=sys.stderr, flush=True)

    last = [-1.0]

    def progress(elapsed: float, duration: float, packets: int) -> None:
        if args.shell:
            return
        line = f"emulate: {elapsed:6.1f} / {duration:g} s, {packets:,} packets through the model"
        if tty:
            sys.stderr.write("\r" + line)
            sys.stderr.flush()
        elif int(elapsed / 10) != int(last[0] / 10):
            print(line, file=sys.stderr, flush=True)
        last[0] = elapsed

    from scout import experiment

    try:
        text = _native.emulate(
            str(scenario),
            str(out),
            seed=args.seed,
            duration=args.duration,
            sets=list(args.set or []),
            shell=args.shell,
            ready=ready,
            progress=progress,
            offload=not args.no_offload,
            upf_binary=str(upf) if (upf := experiment.upf_binary()) else None,
            probe=args.probe,
            capture=args.capture,
            live=live,
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    _finished()
    if tty:
        sys.stderr.write("\n")
    meta = json.loads(text)
    wall = time.monotonic() - t0
    result = {
        "summary": meta["summary"],
        "events": meta["counts"]["events"],
        "run": str(out),
        "n3": meta["emulator"].get("n3"),
        "radio": meta.get("radio"),
    }
    print_summary(scenario.stem, result, wall, verb="emulated")
    em = meta["emulator"]
    t = em["timing"]
    print(
        f"  timing: slots late by p50 {t['slots']['p50_us']} µs, p99 {t['slots']['p99_us']} µs, "
        f"max {t['slots']['max_us']} µs; packets written late by p50 {t['packets_written']['p50_us']} µs, "
        f"p99 {t['packets_written']['p99_us']} µs"
        + ("" if em["realtime_priorities"]["datapath"] else " (no real-time priority: not allowed here)")
    )
    lt = t.get("long_turns") or {}
    if lt.get("n"):
        # Each one made every slot due meanwhile late (docs/emulator.md, "Limits").
        print(
            f"  {lt['n']} pause(s) of the data path over 1 ms (longest {lt['max_ms']:.1f} ms, {lt['total_ms']:.0f} ms "
            "in all): its CPU taken away — by a virtual machine's host, a page fault or the kernel"
        )
    kp = em.get("kernel_preemption") or {}
    if kp.get("model") in ("none", "voluntary"):
        # A woken real-time thread waits for the running task's system call (docs/emulator.md).
        print(
            f"  kernel preemption: {kp['model']} ({kp['source']}): under load a slot may wait for another "
            "task's system call to end (preempt=full on the kernel command line: docs/emulator.md)"
        )
    for a in meta.get("apps") or []:
        status = _app_status(a)
        where = f", output {out / a['stdout']}" if a.get("stdout") else ""
        print(f"  app {a['name']} ({a['ns']}: {a['cmd']}): {status}{where}")
    for c in em.get("core") or []:
        # A slice served by Scout's real UPF process (docs/upf.md).
        u, p = c["upf"], c["pfcp"]
        k = u.get("counters", {})
        est = p["establishment_ms"]
        print(
            f"  real UPF {c['slice']} ({c['namespace']}): {k.get('ul_forwarded', 0):,} up and "
            f"{k.get('dl_forwarded', 0):,} down forwarded; N4 association {p['association_ms']:.2f} ms, "
            f"{len(est)} session(s) established in {max(est, default=0):.2f} ms at most"
            + (f"; error: {u['error']}" if "error" in u else "")
        )
        pr = em.get("probe")
        if pr and "error" in pr:
            print(f"    probe: error: {pr['error']}")
    if (em.get("n3") or {}).get("uplink_not_ipv4"):
        print(f"    {em['n3']['uplink_not_ipv4']:,} uplink packets not IPv4, not sent to a real UPF (it forwards IPv4)")
    pr = em.get("probe")
    if pr and "error" not in pr:
        print(
            f"  probe on the real UPF(s): {pr['pairs']['ul']:,} up and {pr['pairs']['dl']:,} down paired N3<->N6, "
            f"unmatched {pr['unmatched']['n3']:,} on N3 and {pr['unmatched']['n6']:,} on N6, {pr['pfcp_pairs'] or 0} PFCP "
            f"request/response pairs -> {out / 'upf'} (scout analyze {out / 'upf'})"
        )
    caps = em.get("capture") or []
    if caps:
        frames = sum(c["frames"] for c in caps)
        lost = sum(c["dropped_by_kernel"] for c in caps)
        print(
            f"  capture: {frames:,} frames in {len(caps)} files, {lost:,} dropped by the kernel -> {out / 'capture'} "
            f"(scout ingest pcap {out / 'capture'}/*.pcap -o RUN2)"
        )
        for c in caps:
            if c.get("error"):
                print(f"    capture error: {c['error']}")
    skipped = {k: v for k, v in meta["counts"]["skipped_inputs"].items() if v}
    if skipped:
        print("  not taken into the model: " + ", ".join(f"{k} {v:,}" for k, v in skipped.items()))
    if em.get("cleanup_problems"):
        print("  warning: cleanup: " + "; ".join(em["cleanup_problems"]))
    print(f"next: scout analyze {out}")
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    from scout import analysis, experiment

    if args.list or not args.name:
        for e in experiment.EXPERIMENTS.values():
            print(f"{e.name:<10} {e.description}")
        if not args.list:
            raise UsageError("give an experiment's name (scout experiment --list names them) and -o OUT")
        return 0
    e = experiment.EXPERIMENTS.get(args.name)
    if e is None:
        raise UsageError(f"{args.name}: no such experiment; accepted: {', '.join(experiment.EXPERIMENTS)}")
    if not args.output:
        raise UsageError("give -o OUT: the directory for the experiment's runs, report and summary.csv")
    if args.seeds is None:
        args.seeds = 1 if e.name == "upf-slices" else 5
    if e.name == "l4s-anbr":
        return run_l4s_anbr(args)
    if e.name == "ran-delay":
        return run_ran_delay(args)
    if e.name == "rlc-modes":
        return run_rlc_modes(args)
    if e.name == "upf-slices":
        return run_upf_slices(args)
    if args.duration is None:
        args.duration = 20.0
    why = _emulator_unavailable(("iperf3",))
    if why:
        raise SystemExit(f"error: scout experiment {e.name}: {why}")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory")
    for cfg in e.configurations:
        rundir.check(out / cfg, force=args.force, what=f"-o {out}: {cfg}:")
    out.mkdir(parents=True, exist_ok=True)
    rows, series = [], {}
    for cfg in e.configurations:
        print(f"\n== {e.name}: {cfg} ({args.duration:g} s of iperf3)")
        run_args = argparse.Namespace(
            scenario=e.scenario,
            output=str(out / cfg),
            force=args.force,
            duration=None,
            seed=None,
            set=experiment.tcp_cc_sets(cfg, args.duration),
            shell=False,
            no_offload=False,
            probe=False,
            capture=False,
        )
        with experiment.cubic_hystart(args.hystart if cfg == "cubic" else None) as note:
            if note:
                print(note)
            cmd_emulate(run_args)
        print_analysis(run_analysis(out / cfg))
        render_report(analysis.open(out / cfg), None)
        row, ser = experiment.tcp_cc_metrics(out / cfg, cfg)
        rows.append(row)
        series[cfg] = ser
    csv_path = experiment.write_summary(out, rows, experiment.TCP_CC_COLUMNS)
    report = experiment.tcp_cc_report(out, rows, series)
    print(f"\n{e.name}: summary")
    cols = list(experiment.TCP_CC_COLUMNS)
    print("  " + "  ".join(f"{c:>19}" for c in cols))
    for r in rows:
        print("  " + "  ".join(f"{'' if r[c] is None else r[c]!s:>19}" for c in cols))
    print(f"  summary: {csv_path}\n  report: {report}")
    return 0


def run_l4s_anbr(args: argparse.Namespace) -> int:
    """`scout experiment l4s-anbr`: every configuration at every load and seed, simulated; the
    flow's figures per run, a row per configuration and load, the comparison report."""
    from scout import experiment
    from scout import experiment_l4s as xl

    binary = None
    if args.emulate:
        why = _emulator_unavailable(("iperf3",))
        if why:
            raise SystemExit(f"error: scout experiment l4s-anbr --emulate: {why}")
        binary = experiment.prague_binary()
        if binary is None:
            raise SystemExit(
                "error: scout experiment l4s-anbr --emulate: scout-prague (the emulator's adaptive sender) is not "
                "built: cargo build --release -p scout-emu --bin scout-prague"
            )
    cfgs = xl.configurations()
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        names = {c.name for c in cfgs}
        bad = [w for w in wanted if w not in names]
        if bad:
            raise UsageError(f"--only {','.join(bad)}: no such configuration; accepted: {', '.join(sorted(names))}")
        cfgs = [c for c in cfgs if c.name in wanted]
    if args.seeds < 1:
        raise UsageError(f"--seeds {args.seeds}: accepted: 1 or more")
    loads = [w.strip() for w in args.loads.split(",") if w.strip()]
    if not loads or any(w not in xl.LOADS for w in loads):
        raise UsageError(f"--loads {args.loads}: accepted: a comma list of {', '.join(xl.LOADS)}")
    duration = args.duration if args.duration is not None else 30.0
    if duration <= xl.WARMUP_S:
        raise UsageError(f"--duration {duration:g}: accepted: more than the {xl.WARMUP_S:g} s warm-up")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory")
    seeds = list(range(1, args.seeds + 1))
    runs = [(c, load, seed) for c in cfgs for load in loads for seed in seeds]
    for c, load, seed in runs:
        rundir.check(out / f"{c.name}-{load}" / f"seed{seed}", force=args.force, what=f"-o {out}:")
    out.mkdir(parents=True, exist_ok=True)
    scenario = resolve_scenario("l4s-anbr")
    where = "emulated (scout-prague, iperf3)" if binary else "simulated"
    print(
        f"l4s-anbr: {len(cfgs)} configurations x {len(loads)} loads x {len(seeds)} seeds = {len(runs)} runs of "
        f"{duration:g} s, {where}"
    )
    rows = []
    links: dict[tuple[str, str], list[str]] = {}
    reported = {"all": seeds, "first": seeds[:1], "none": []}[args.reports]
    done = 0
    for c in cfgs:
        for load in loads:
            per_seed = []
            for seed in seeds:
                run = out / f"{c.name}-{load}" / f"seed{seed}"
                if binary is None:
                    run_simulation(scenario, run, seed, duration, xl.scenario_sets(c, load), args.force, quiet=True)
                    per_seed.append(xl.flow_metrics(run))
                else:
                    run_emulation_quietly(
                        "l4s-anbr", run, seed, duration + 1.5, xl.emulate_sets(c, load, duration, binary), args.force
                    )
                    per_seed.append(xl.emulated_metrics(run))
                if seed in reported:
                    # The run's ordinary report (analysis first), as `scout report RUN` writes it.
                    with contextlib.redirect_stderr(io.StringIO()):
                        render_report(_open(str(run)))
                    links.setdefault((c.name, load), []).append(f"../{c.name}-{load}/seed{seed}/report/index.html")
                done += 1
            row = xl.summary_row(c, load, per_seed)
            rows.append(row)
            print(
                f"  [{done}/{len(runs)}] {c.name:<14} {load:<4}  latency {row['latency_ms']:9.2f} ms "
                f"(±{row['latency_ci_ms']:.2f})  throughput {row['throughput_mbps']:6.2f} Mbit/s "
                f"(±{row['throughput_ci_mbps']:.2f})  loss {row['loss']:.4f}"
            )
    csv_path = xl.write_summary(out, rows)
    page = xl.report(out, rows, links)
    runs_reported = {"all": "every run's report", "first": "seed 1's report", "none": "no run reports"}[args.reports]
    print(
        f"  summary: {csv_path}\n  report: {page} (links {runs_reported} per configuration)\n"
        f"  each run: scout report {out}/CONFIG-LOAD/seedN"
    )
    return 0


def run_emulation_quietly(
    scenario: str, run: Path, seed: int, duration: float, sets: list[str], force: bool, probe: bool = False
) -> None:
    """One emulated run of an experiment (`scout emulate SCENARIO -o RUN`, `--probe` with
    ``probe``); the emulator's own progress is the sweep's noise, shown only if the run fails."""
    emu_args = argparse.Namespace(
        scenario=scenario,
        output=str(run),
        force=force,
        duration=duration,
        seed=seed,
        set=sets,
        shell=False,
        no_offload=False,
        probe=probe,
        capture=False,
    )
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            cmd_emulate(emu_args)
    except BaseException:
        sys.stderr.write(said.getvalue())
        raise


def _sweep_runs(args: argparse.Namespace, select, cfgs: list, default_s: float, floor_s: float, floor_text: str):
    """A seeded sweep's arguments checked and its output prepared: the configurations `--only`
    keeps (``select``), the seeds, the duration (more than ``floor_s``), and OUT with no run of
    the sweep in the way (``OUT/CONFIG/seedN``, unless ``--force``)."""
    try:
        cfgs = select(cfgs, args.only)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not cfgs:
        raise UsageError(f"--only {args.only}: selects no configuration")
    if args.seeds < 1:
        raise UsageError(f"--seeds {args.seeds}: accepted: 1 or more")
    duration = args.duration if args.duration is not None else default_s
    if duration <= floor_s:
        raise UsageError(f"--duration {duration:g}: accepted: more than {floor_text}")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory")
    seeds = list(range(1, args.seeds + 1))
    for c in cfgs:
        for seed in seeds:
            rundir.check(out / c.name / f"seed{seed}", force=args.force, what=f"-o {out}:")
    out.mkdir(parents=True, exist_ok=True)
    return cfgs, seeds, duration, out


def run_ran_delay(args: argparse.Namespace) -> int:
    """`scout experiment ran-delay`: Copa with each of Gandalf's compensations, both directions,
    both channels, both TDD patterns, every seed, simulated; a row per configuration, the
    comparison report."""
    from scout import experiment
    from scout import experiment_ran_delay as xr

    binary = None
    if args.emulate:
        why = _emulator_unavailable(())
        if why:
            raise SystemExit(f"error: scout experiment ran-delay --emulate: {why}")
        binary = experiment.prague_binary()
        if binary is None:
            raise SystemExit(
                "error: scout experiment ran-delay --emulate: scout-prague (the emulator's adaptive sender) is not "
                "built: cargo build --release -p scout-emu --bin scout-prague"
            )
    warmup = f"the {xr.WARMUP_S:g} s warm-up"
    cfgs, seeds, duration, out = _sweep_runs(args, xr.select, xr.configurations(), 20.0, xr.WARMUP_S, warmup)
    scenario = resolve_scenario("ran-delay")
    where = "emulated (scout-prague; a run takes its duration in wall time)" if binary else "simulated"
    print(
        f"ran-delay: {len(cfgs)} configurations x {len(seeds)} seeds = {len(cfgs) * len(seeds)} runs of {duration:g} s, {where}"
    )
    reported = {"all": seeds, "first": seeds[:1], "none": []}[args.reports]
    rows, links, done = [], {}, 0
    for c in cfgs:
        per_seed = []
        for seed in seeds:
            run = out / c.name / f"seed{seed}"
            if binary is None:
                run_simulation(scenario, run, seed, duration, xr.scenario_sets(c), args.force, quiet=True)
                per_seed.append(xr.run_metrics(run))
            else:
                run_emulation_quietly(
                    "ran-delay", run, seed, duration + 1.5, xr.emulate_sets(c, run, duration, binary), args.force
                )
                per_seed.append(xr.emulated_metrics(run))
            if seed in reported:
                with contextlib.redirect_stderr(io.StringIO()):
                    render_report(_open(str(run)))
                links.setdefault(c.name, []).append(f"../{c.name}/seed{seed}/report/index.html")
            done += 1
        row = xr.summary_row(c, per_seed)
        rows.append(row)
        print(
            f"  [{done}/{len(cfgs) * len(seeds)}] {c.cc:<4} {c.compensation:<8} {c.dir} {c.channel:<4} {c.tdd:<10}  throughput "
            f"{row['throughput_mbps']:6.2f} Mbit/s (±{row['throughput_ci_mbps']:.2f})  delay {row['delay_ms']:7.2f} ms "
            f"(±{row['delay_ci_ms']:.2f})  HARQ retx {row['harq_retx']:g}"
        )
    csv_path = xr.write_summary(out, rows)
    page = xr.report(out, rows, links)
    print(f"  summary: {csv_path}\n  report: {page}\n  each run: scout report {out}/CONFIG/seedN")
    return 0


def run_rlc_modes(args: argparse.Namespace) -> int:
    """`scout experiment rlc-modes`: iperf3 TCP and UDP over RLC AM and UM on a good and a poor
    channel, every seed, through the emulator; a row per configuration, the comparison report."""
    from scout import experiment_rlc as xm

    if args.emulate:
        raise UsageError("--emulate: rlc-modes always runs through the emulator (iperf3 and the kernel's TCP)")
    why = _emulator_unavailable(("iperf3",))
    if why:
        raise SystemExit(f"error: scout experiment rlc-modes: {why}")
    floor = xm.WARMUP_S + 1
    cfgs, seeds, duration, out = _sweep_runs(args, xm.select, xm.configurations(), 40.0, floor, f"{floor:g} s")
    n = len(cfgs) * len(seeds)
    print(f"rlc-modes: {len(cfgs)} configurations x {len(seeds)} seeds = {n} runs of {duration:g} s of iperf3, emulated")
    reported = {"all": seeds, "first": seeds[:1], "none": []}[args.reports]
    rows, links, series, layers, done = [], {}, {}, {}, 0
    for c in cfgs:
        per_seed = []
        for seed in seeds:
            run = out / c.name / f"seed{seed}"
            run_emulation_quietly("rlc-modes", run, seed, duration + 3, xm.scenario_sets(c, duration), args.force)
            m, ser = xm.run_metrics(run, c.proto)
            per_seed.append(m)
            if seed == seeds[0]:
                if c.proto == "tcp":
                    series[c.name] = ser
                with contextlib.redirect_stderr(io.StringIO()):
                    a = _open(str(run))
                layers[c.name] = xm.layer_means(run)
                if seed in reported:
                    with contextlib.redirect_stderr(io.StringIO()):
                        render_report(a)
                    links.setdefault(c.name, []).append(f"../{c.name}/seed{seed}/report/index.html")
            done += 1
        row = xm.summary_row(c, per_seed)
        rows.append(row)
        cwnd = "" if row["cwnd_mean"] is None else f"  cwnd {row['cwnd_mean']:7.1f} (±{row['cwnd_ci']:.1f})"
        print(
            f"  [{done}/{n}] {c.proto} {c.rlc_mode} {c.channel:<4}  throughput {row['throughput_mbps']:7.2f} Mbit/s "
            f"(±{row['throughput_ci_mbps']:.2f}){cwnd}  RLC retx {row['rlc_retx']:g}  HARQ retx {row['harq_retx']:g}"
        )
    csv_path = xm.write_summary(out, rows)
    page = xm.report(out, rows, series, layers, links)
    print(f"  summary: {csv_path}\n  report: {page}\n  each run: scout report {out}/CONFIG/seedN")
    return 0


def run_upf_slices(args: argparse.Namespace) -> int:
    """`scout experiment upf-slices`: three slices with a real UPF each, eMBB's uplink at the
    light, medium and heavy load, the probe on every UPF; a row per slice, load and pairing, the
    comparison report."""
    from scout import experiment
    from scout import experiment_upf as xu

    if args.emulate:
        raise UsageError("--emulate: upf-slices always runs through the emulator (real UPF processes)")
    why = _emulator_unavailable(("iperf3",))
    if why:
        raise SystemExit(f"error: scout experiment upf-slices: {why}")
    if experiment.upf_binary() is None:
        raise SystemExit(
            "error: scout experiment upf-slices: scout-upf is not built (cargo build --release -p scout-emu --bin scout-upf)"
        )
    cfgs, seeds, duration, out = _sweep_runs(args, xu.select, xu.configurations(), 20.0, 2.0, "2 s")
    n = len(cfgs) * len(seeds)
    print(f"upf-slices: {len(cfgs)} loads x {len(seeds)} seeds = {n} runs of {duration:g} s, emulated with 3 real UPFs")
    reported = {"all": seeds, "first": seeds[:1], "none": []}[args.reports]
    rows, links, delays, done = [], {}, {}, 0
    for c in cfgs:
        merged: dict | None = None
        for seed in seeds:
            run = out / c.name / f"seed{seed}"
            run_emulation_quietly("upf-slices", run, seed, duration + 3, xu.scenario_sets(c, duration), args.force, probe=True)
            m = xu.run_metrics(run)
            if merged is None:
                merged = m
            else:
                for s in xu.SLICES:
                    for k in ("identity", "nearest", "pfcp_mod_us"):
                        merged[s][k] = merged[s][k] + m[s][k]
            if seed in reported:
                with contextlib.redirect_stderr(io.StringIO()):
                    render_report(_open(str(run / "upf")))
                links.setdefault(c.name, []).append(f"../{c.name}/seed{seed}/upf/report/index.html")
            done += 1
        delays[c.name] = merged
        new = xu.summary_rows(c, merged)
        rows.extend(new)
        for r in new:
            if r["pairing"] == "identity":
                print(
                    f"  [{done}/{n}] {c.load:<6} {r['slice']:<5} {r['pairs']:>7,} pairs  N3->N6 p50 {r['p50_us']} µs, "
                    f"p99 {r['p99_us']} µs, p99.9 {r['p999_us']} µs; PFCP modification p50 {r['pfcp_mod_p50_us']} µs"
                )
    csv_path = xu.write_summary(out, rows)
    page = xu.report(out, rows, delays, links)
    print(f"  summary: {csv_path}\n  report: {page}\n  each run: scout analyze {out}/LOAD/seedN/upf (the probe's run)")
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    """Runs a command in a running emulation's namespace."""
    target = Path(args.run)
    meta_path = target / "run.json"
    if not meta_path.is_file():
        raise UsageError(f"{target}: not a run directory (no run.json); give the -o of a running `scout emulate`")
    meta = json.loads(meta_path.read_text())
    names = (meta.get("emulator") or {}).get("namespaces")
    if meta.get("source") != "emulator" or not names:
        raise UsageError(f"{target}: not an emulation (source {meta.get('source')!r})")
    if meta.get("complete"):
        raise SystemExit(f"error: {target}: that emulation has ended; its namespaces are gone")
    if args.node == "dn":
        ns = names[0]
    else:
        try:
            ns = names[1 + int(args.node.removeprefix("ue"))]
        except (ValueError, IndexError):
            raise UsageError(f"{args.node}: no such node; accepted: dn, ue0..ue{len(names) - 2}") from None
    if not args.command:
        raise UsageError("give the command after --, e.g. scout exec RUN ue0 -- ping 10.45.0.1")
    if not Path("/run/netns", ns).exists():
        raise SystemExit(f"error: namespace {ns} does not exist: is the emulation still running?")
    cmd = ["ip", "netns", "exec", ns, *args.command]
    env = dict(os.environ)
    feeds = (meta.get("emulator") or {}).get("feed") or []
    if isinstance(feeds, list) and args.node != "dn" and int(args.node.removeprefix("ue")) < len(feeds):
        # The UE's live RAN feed (scout.feed), as the scenario's apps get it.
        env["SCOUT_FEED"] = feeds[int(args.node.removeprefix("ue"))]
    return subprocess.call(cmd, env=env)


DEMO_SCENARIOS = ["udp-flood", "attribution-light", "attribution-medium", "attribution-heavy", "mixed"]


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Removes what killed emulators left behind."""
    if os.geteuid() != 0:
        raise SystemExit("error: scout cleanup: needs root (it removes network namespaces)")
    try:
        removed, traces, problems = _native.emulate_cleanup()
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    if removed:
        print(f"removed {len(removed)} namespace(s) of emulators that are gone, and the processes in them: " + ", ".join(removed))
    if traces:
        print(
            f"removed {len(traces)} tracefs instance(s) of emulators that are gone "
            "(their TCP tracepoints were still enabled): " + ", ".join(traces)
        )
    if not removed and not traces and not problems:
        print("nothing to clean up: no namespace or tracefs instance of an emulator that is gone")
    for p in problems:
        print(f"warning: could not remove {p}", file=sys.stderr)
    return 1 if problems else 0


def cmd_recover(args: argparse.Namespace) -> int:
    """Makes a checkpointed run whose producer was killed readable."""
    run = Path(args.run)
    if not (run / "run.json").is_file():
        raise UsageError(f"{run}: not a run directory (no run.json)")
    _check_writable(run)
    try:
        meta = json.loads(_native.recover(str(run)))
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    ev = meta["counts"]["events"]
    kept = (meta["recovered"].get("checkpoint") or {}).get("t_ns")
    upto = f" (up to {kept / 1e9:.1f} s)" if isinstance(kept, int) else ""
    print(
        f"{run}: recovered {ev['packet_events']:,} packet, {ev['slot_events']:,} slot and "
        f"{ev['control_events']:,} control events{upto}; the run stays marked incomplete"
    )
    print(f"  next: scout analyze {run}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from scout import analysis

    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory")
    # Each scenario's run replaces an earlier demo's run, never anything else: check all first.
    for name in DEMO_SCENARIOS:
        rundir.check(out / name, force=True, what=f"-o {out}: {name}:")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in DEMO_SCENARIOS:
        result = run_simulation(resolve_scenario(name, builtin_only=True), out / name, None, args.duration, [], force=True)
        print_summary(name, result, result["wall_s"])
        s = run_analysis(out / name)
        print_analysis(s)
        rows.append((name, result, s))
    reports = {}
    opened = {name: analysis.open(out / name) for name in DEMO_SCENARIOS}
    loads = [a for name, a in opened.items() if name.startswith("attribution-")]
    for name, a in opened.items():
        reports[name] = render_report(a, loads if name.startswith("attribution-") else None)
    # The emulated part: real ping and iperf3 through the same model, where it can run.
    why = _emulator_unavailable(("ping", "iperf3"))
    if why:
        print(f"\nemulate-demo: skipped ({why})")
    else:
        name = "emulate-demo"
        rundir.check(out / name, force=True, what=f"-o {out}: {name}:")
        args_emu = argparse.Namespace(
            scenario=name,
            output=str(out / name),
            force=True,
            duration=args.duration,
            seed=None,
            set=[],
            shell=False,
            no_offload=False,
            probe=False,
            capture=False,
        )
        print()
        cmd_emulate(args_emu)
        s = run_analysis(out / name)
        print_analysis(s)
        reports[name] = render_report(analysis.open(out / name), None)
    print("\nsummary")
    print(f"  {'scenario':<20}{'DL Mbit/s':>10}{'DL p50 ms':>11}{'DL p99 ms':>11}{'drops':>9}{'closes':>9}  top contributor")
    for name, r, s in rows:
        dl = r["summary"]["directions"][0]
        delay = dl["delay"] or {}
        cl = s["closure"]
        top = f"{s['dominant'][0]['layer']}/{s['dominant'][0]['component']}" if s["dominant"] else "-"
        closes = f"{100 * cl['closed'] / cl['n']:.0f} %" if cl["n"] else "-"
        print(
            f"  {name:<20}{dl['throughput_mbps']:>10.1f}{fmt_ms(delay.get('p50_ns')):>11}"
            f"{fmt_ms(delay.get('p99_ns')):>11}{r['summary']['dropped_packets']:>9,}{closes:>9}  {top}"
        )
    print("\nreports:")
    for name, path in reports.items():
        print(f"  {name:<20} {path}")
    print(f'\nruns under {out}/ — try: scout query {out}/udp-flood "SELECT * FROM drops"')
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="scout",
        description="Scout: per-packet telemetry and latency attribution for the 5G user plane.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"scout {__version__} (schema v{_native.schema_version()})")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser(
        "simulate",
        help="run a scenario through the deterministic 5G user-plane simulator",
        description="Simulate SCENARIO (a YAML file or a built-in name) and write a run directory: "
        "run.json plus events/{packet,slot,control}.parquet. Same scenario and seed give identical tables.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="built-in scenarios: udp-flood, attribution-light, attribution-medium, attribution-heavy, "
        "mixed, capacity-trace, bench-60mbps, l4s-anbr, ran-delay, loaded-cell (the others, with apps:, are for emulate)\n"
        "keys follow srsRAN gnb.yaml names; see scenarios/*.yaml and docs/model.md",
    )
    s.add_argument("scenario", help="scenario YAML file or built-in scenario name")
    s.add_argument("-o", "--output", required=True, help="run directory to create")
    s.add_argument("--seed", type=U64, help="random seed (default: the scenario's `seed`)")
    s.add_argument("--duration", type=SECONDS_POSITIVE, help="simulated seconds (default: the scenario's `duration_s`)")
    s.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario key, e.g. --set cell_cfg.common_scs=15 --set traffic[0].rate_mbps=80",
    )
    s.add_argument("--force", action="store_true", help="replace an existing run directory")
    _live_args(s, "the simulation (in simulated time, which runs far faster than the wall clock)")
    s.set_defaults(func=cmd_simulate)

    a = sub.add_parser(
        "analyze",
        help="compute journeys, attribution, profiles, queues, TTI, drops and phases of a run",
        description="Reads RUN/events/*.parquet (any source) and writes RUN/analysis/*.parquet and summary.json. "
        "Tables and rules: docs/attribution.md.",
    )
    a.add_argument("run", help="run directory")
    a.add_argument("--window", type=SECONDS_NONNEGATIVE, help="profile time window in seconds (default 1.0; 0 = whole run only)")
    a.add_argument("--bin", type=SECONDS_POSITIVE, help="queue / drop time-series bin in seconds (default 0.1)")
    a.add_argument(
        "--engine",
        choices=["native", "ibis", "spark"],
        default="native",
        help="how the tables are computed: native = Scout's attribution kernel for journeys, components, "
        "layer_delays and profiles, DuckDB for the rest (default, fastest on one machine); ibis = every table by the "
        "relational expressions of scout.analysis.engine on DuckDB (the reference); spark = those same expressions "
        "on Apache Spark (local[*] unless --spark-master; needs PySpark and Java; docs/spark.md). All give the same "
        "tables (tested).",
    )
    a.add_argument(
        "--spark-master",
        metavar="URL",
        help="Spark master for --engine spark: local[N], spark://HOST:7077, yarn, k8s://... "
        "(default $SCOUT_SPARK_MASTER or local[*]); on a cluster the run directory must be on storage every executor sees",
    )
    a.add_argument(
        "--spark-conf",
        metavar="KEY=VALUE",
        action="append",
        help="a Spark setting for --engine spark, repeatable (e.g. spark.driver.memory=8g, spark.executor.cores=4)",
    )
    a.add_argument(
        "--memory",
        type=size,
        metavar="SIZE",
        help="memory for the analysis's data, e.g. 1G or 512M, beyond the ~200 MB the process itself takes (default: "
        "what the machine, or the memory cgroup scout runs in, has left when the analysis starts). Events that need "
        "more are read in windows of packets, one at a time, and DuckDB spills to RUN/analysis/.spill; the tables "
        'are the same (docs/attribution.md, "Memory")',
    )
    a.set_defaults(func=cmd_analyze)

    r = sub.add_parser(
        "report",
        help="write an interactive HTML report (PNG and PDF figures with --static)",
        description="Writes RUN/report/index.html: one self-contained file that works offline, with the source's "
        "headline figures, attribution by layer and component, delay percentiles, queues with their drops and "
        "overload phases, application RTT over queue sojourn, PRBs per UE per slot and a per-packet journey view "
        "(time series zoom to a single slot). Analyses the run first when needed. With several runs, each report "
        "also compares attribution across them (SCOUT fig. 4). docs/report.md",
    )
    r.add_argument("runs", nargs="+", metavar="RUN", help="run directories")
    r.add_argument("--static", action="store_true", help="also write each figure as PNG and PDF in RUN/report/figures/")
    r.set_defaults(func=cmd_report)

    e = sub.add_parser(
        "export",
        help="export analysis tables (CSV, Parquet) or a Perfetto trace",
        description="packet: journeys + components; tti: per-slot allocations; aggregate: profiles, queues, drops, "
        "phases, correlation. --format perfetto writes Chrome trace JSON for ui.perfetto.dev.",
    )
    e.add_argument("run", help="run directory")
    e.add_argument("--format", choices=["csv", "parquet", "perfetto"], default="csv")
    e.add_argument("--granularity", choices=["packet", "tti", "aggregate"], default="packet")
    e.add_argument("-o", "--output", help="output directory (default RUN/export)")
    e.add_argument(
        "--select",
        choices=["slowest", "dropped", "first", "sample"],
        default="slowest",
        help="perfetto packet selection (default: the slowest delivered packets)",
    )
    e.add_argument("--packets", type=POSITIVE, default=20, help="how many packets to trace (default 20)")
    e.add_argument("--pkt", type=id_list, help="comma-separated packet ids to trace (overrides --select)")
    e.set_defaults(func=cmd_export)

    q = sub.add_parser(
        "query",
        help="run SQL (DuckDB) over a run's event and analysis tables",
        description="Tables: packet_events, slot_events, control_events, and the analysis tables "
        "(journeys, components, profiles, layer_delays, sojourns, queues, tti, drops, drop_series, phases, "
        "correlation, rtt; computed on first use).",
    )
    q.add_argument("run", help="run directory")
    q.add_argument("sql", help="SQL, e.g. \"SELECT reason, count(*) FROM packet_events WHERE point='drop' GROUP BY 1\"")
    q.add_argument("--format", choices=["table", "csv", "json"], default="table")
    q.add_argument(
        "--limit",
        type=NONNEGATIVE,
        metavar="N",
        help="print at most N rows of the result (default: all; 0: none, only the column names)",
    )
    q.set_defaults(func=cmd_query)

    ing = sub.add_parser(
        "ingest",
        help="turn real testbed output into a run (srsRAN gNB logs, pcap/pcapng captures)",
        description="Read real testbed output into a run directory with the same event schema as simulated runs.",
    )
    isub = ing.add_subparsers(dest="source", required=True, metavar="SOURCE")
    sr = isub.add_parser(
        "srsran",
        help="srsRAN Project gNB text logs (plain or gzip)",
        description="Reads srsRAN Project gNB logs (plain or gzip; several files are merged by time: rotated "
        "logs, or a split CU's and DU's logs) and writes each packet's journey: downlink GTP-U RX SDU -> PDCP "
        "TX PDU -> RLC SDU queue -> RLC PDUs -> MAC DL PDU; uplink MAC subPDUs -> RLC segments -> PDCP receive "
        "and reordering -> GTP-U TX PDU; scheduler grants with their HARQ outcomes and BSRs as slot events; "
        "drops (PDCP early-drop bursts, late PDUs, MAC discards). Links the lines do not state are inferred "
        "and listed in run.json 'links' (docs/ingest-srsran.md). Needs the info level for gtpu, pdcp, rlc and "
        "mac; debug adds HARQ-ACK outcomes and MCS.",
    )
    sr.add_argument("logs", nargs="+", metavar="LOG", help="gnb.log files (any order; merged by time)")
    sr.add_argument(
        "--trace",
        action="append",
        default=[],
        metavar="TRACE",
        help="srsRAN event-tracer file (trace: filename; Chrome trace JSON), repeatable: executor waits and run "
        "times become control events on the log's clock",
    )
    sr.add_argument(
        "--metrics",
        action="append",
        default=[],
        metavar="JSONL",
        help="srsRAN JSON metrics saved one object per line (remote-control WebSocket or UDP), repeatable: kept "
        "as aggregates and cross-checked against the per-packet results in the report",
    )
    _keep_going_arg(sr, "a log is damaged part-way (a corrupt or truncated gzip stream)")
    _run_output_args(sr)
    sr.set_defaults(func=cmd_ingest_srsran)
    pc = isub.add_parser(
        "pcap",
        help="pcap/pcapng captures of N3, N6 and N4: UPF forwarding delay and PFCP latency",
        description="Reads pcap and pcapng captures (Ethernet, VLAN, Linux cooked v1/v2, raw IP; IPv4/IPv6; outer "
        "IP fragments reassembled; several files merged by time) and pairs each packet seen inside GTP-U on N3 "
        "with the same packet seen plain on N6 by its identity (inner addresses, IP identification, length, the "
        "first 16 bytes after the IP header), never by nearest timestamp: each pair is a journey whose "
        "`upf processing` is the UPF's forwarding delay. PFCP (N4) requests are paired with their responses by "
        "sequence number and peers (control rows 'pfcp_pair', latency in ns); sessions, TEIDs, UE addresses "
        "and S-NSSAI/DNN label the user-plane pairs. A single capture on 'any' sees both sides "
        "(docs/ingest-pcap.md).",
    )
    pc.add_argument(
        "files", nargs="+", metavar="FILE", help="pcap or pcapng files, merged by time (regular files: each is read twice)"
    )
    pc.add_argument("--gtp-port", type=PORT, action="append", metavar="PORT", help="UDP port of GTP-U (default 2152), repeatable")
    pc.add_argument(
        "--n3",
        action="append",
        default=[],
        metavar="IFACE|ADDR",
        help="only GTP-U on this capture interface (pcapng if_name) or to/from this address counts as N3; repeatable",
    )
    pc.add_argument(
        "--n6",
        action="append",
        default=[],
        metavar="IFACE|ADDR",
        help="only plain packets on this interface or to/from this address count as N6; repeatable",
    )
    pc.add_argument(
        "--window",
        type=SECONDS_POSITIVE,
        default=2.0,
        metavar="S",
        help="seconds a packet waits for its twin on the other side before it counts as unmatched (default 2)",
    )
    _keep_going_arg(pc, "a capture is damaged part-way (cut inside a record, garbage after valid records)")
    _run_output_args(pc)
    pc.set_defaults(func=cmd_ingest_pcap)

    pr = sub.add_parser(
        "probe",
        help="live UPF forwarding delay from TC-BPF programs on N3 and N6 (root)",
        description="Attaches Scout's TC-BPF programs (clsact ingress and egress) to each UPF's N3 and N6 "
        "interfaces inside their network namespaces. In the kernel each packet's identity is computed (the same "
        "key as `scout ingest pcap`), its N3 and N6 sightings are paired in a set-associative table (the oldest "
        "insert of a full set gives way, counted) and pairs go to user space through ring buffers; the run "
        "holds one journey per packet whose `upf processing` is the "
        "UPF's forwarding delay, the programs' counters, ring-buffer loss and their cost per packet from the "
        "kernel's BPF statistics (docs/probe.md). Needs root, BTF and clsact.",
    )
    pr.add_argument("--n3", action="append", default=[], required=True, metavar="NETNS:IFACE", help="a UPF's N3 interface")
    pr.add_argument(
        "--n6",
        action="append",
        default=[],
        required=True,
        metavar="NETNS:IFACE",
        help="its N6 interface (Ethernet or a TUN such as ogstun); repeat --n3/--n6 for several UPFs",
    )
    pr.add_argument("--slice", action="append", default=[], metavar="NAME", help="the slice each UPF serves, in the same order")
    pr.add_argument(
        "--pfcp",
        action="append",
        default=[],
        metavar="NETNS:IFACE",
        help="capture PFCP (N4) live on this interface and pair requests with responses; repeatable",
    )
    pr.add_argument("--duration", type=SECONDS_POSITIVE, metavar="S", help="seconds to probe (default: until Ctrl-C)")
    pr.add_argument("--histogram", action="store_true", help="only per-CPU delay histograms in the kernel (very high rates)")
    pr.add_argument("--window", type=SECONDS_POSITIVE, default=2.0, metavar="S", help="how long a sighting waits for its twin")
    pr.add_argument("--gtp-port", type=PORT, default=2152, metavar="PORT", help="UDP port of GTP-U (default 2152)")
    pr.add_argument(
        "--table-sets",
        type=power_of_two,
        default=_native.PROBE_DEFAULT_TABLE_SETS,
        metavar="N",
        help=f"sets in the kernel's pending table, a power of two, {_native.PROBE_WAYS} sightings each (default "
        f"{_native.PROBE_DEFAULT_TABLE_SETS}: {_native.PROBE_DEFAULT_TABLE_SETS * _native.PROBE_WAYS:,} sightings "
        "waiting for their twin at once, per CPU with --pairing same-cpu; it must hold packets/s x the UPF's delay, "
        "and a larger table costs more per packet: docs/probe.md)",
    )
    pr.add_argument(
        "--pairing",
        choices=["any-cpu", "same-cpu"],
        default="any-cpu",
        help="any-cpu (default): one table shared by all CPUs, right for every UPF; same-cpu: a table per "
        "CPU, cheaper, for UPFs that forward in the kernel (a packet leaves on the CPU it arrived on: gtp5g, "
        "eBPF/XDP UPFs); pairs split across CPUs then count as unmatched",
    )
    _run_output_args(pr)
    _live_args(pr, "the UPFs")
    pr.set_defaults(func=cmd_probe)

    em = sub.add_parser(
        "emulate",
        help="run real applications through the 5G user plane on the wall clock (root)",
        description="Emulates SCENARIO on the wall clock: a network namespace for the data network and one per UE, "
        "joined by TUN devices to the same model the simulator runs. What applications send in a UE's namespace "
        "enters at the UE's PDCP; what they send in the DN's enters at N6; every packet is recorded at every layer. "
        "The scenario's `apps:` are started in their namespaces (output in RUN/apps/); `scout exec RUN ue0 -- CMD` "
        "runs anything else while it runs. Ends after --duration (default: the scenario's duration_s), when the "
        "--shell exits, or on Ctrl-C, and writes the run. Needs root and /dev/net/tun (docs/emulator.md).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  scout emulate emulate-iperf3 -o runs/iperf3         # its iperf3 and ping, 24 s\n"
        "  scout emulate emulate-iperf3 -o runs/shell --shell  # and a shell in UE 0: ping $SCOUT_DN, iperf3 -c ...",
    )
    em.add_argument("scenario", help="scenario YAML file or built-in scenario name")
    em.add_argument("--duration", type=SECONDS_POSITIVE, metavar="S", help="wall-clock seconds (default: the scenario's)")
    em.add_argument("--seed", type=U64, help="random seed of the model (default: the scenario's `seed`)")
    em.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key, as for simulate")
    em.add_argument(
        "--shell",
        action="store_true",
        help="open an interactive shell in UE 0's namespace ($SCOUT_DN is the DN's address); the run is written when it exits",
    )
    em.add_argument(
        "--no-offload",
        action="store_true",
        help="TUN devices without TCP segmentation offload: one packet per system call (slower; for comparison)",
    )
    em.add_argument(
        "--probe",
        action="store_true",
        help="run `scout probe` on every real UPF (slices with upf_process: true) during the emulation: its N3/N6 "
        "pairs and N4 PFCP pairs go to RUN/upf, a run of its own (docs/upf.md); needs BTF and clang-built probe",
    )
    em.add_argument(
        "--capture",
        action="store_true",
        help="capture every real UPF's N3, N6 and N4 during the emulation into RUN/capture/SLICE-IFACE.pcap "
        "(as tcpdump would; for scout ingest pcap)",
    )
    _run_output_args(em)
    _live_args(em, "the emulation")
    em.set_defaults(func=cmd_emulate)

    xp = sub.add_parser(
        "experiment",
        help="run a named study: its runs, a comparison report and summary.csv (tcp-cc: emulator, root)",
        description="Runs the experiment NAME (tcp-cc and rlc-modes through the emulator, as root; l4s-anbr and "
        "ran-delay in the simulator, or with --emulate through the emulator): run directories under OUT, "
        "each analysed and reported, then OUT/report/index.html comparing them and OUT/summary.csv (one row per "
        "configuration, columns in docs/experiments.md). --list names every experiment.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  scout experiment tcp-cc -o runs/tcp-cc",
    )
    xp.add_argument("name", nargs="?", help="the experiment (see --list)")
    xp.add_argument("--list", action="store_true", help="name every experiment and what it does")
    xp.add_argument("-o", "--output", help="directory for the experiment's runs, report and summary.csv")
    xp.add_argument(
        "--duration",
        type=SECONDS_POSITIVE,
        default=None,
        metavar="S",
        help="seconds of traffic per run (default: tcp-cc 20, l4s-anbr 30, ran-delay 20, rlc-modes 40)",
    )
    xp.add_argument(
        "--seeds",
        type=int,
        default=None,
        metavar="N",
        help="l4s-anbr, ran-delay, rlc-modes, upf-slices: runs per configuration (and load; default 5, upf-slices 1)",
    )
    xp.add_argument("--loads", default="low,high", help="l4s-anbr: background loads to run (default low,high)")
    xp.add_argument(
        "--only",
        default=None,
        metavar="NAMES",
        help="l4s-anbr: only these configurations (e.g. constant,l4s-5-7,anbr-40); ran-delay, rlc-modes: only these "
        "values of its dimensions (e.g. dl,poor or none,all,dddsu; udp,poor)",
    )
    xp.add_argument(
        "--emulate",
        action="store_true",
        help="l4s-anbr, ran-delay: real packets through the emulator instead (root; a run takes its duration in wall "
        "time). l4s-anbr: scout-prague from the DN to UE 0, iperf3 UDP to UE 1; ran-delay: scout-prague's Copa or GCC "
        "between the DN and UE 0, Gandalf on the UE's side reading its live RAN feed",
    )
    xp.add_argument(
        "--reports",
        choices=("first", "all", "none"),
        default="first",
        help="l4s-anbr, ran-delay, rlc-modes: write the ordinary report (scout report) of seed 1's run of each configuration "
        "(first, the default), of every run (all: ~3 s a run), or of none; the comparison links them",
    )
    xp.add_argument("--force", action="store_true", help="replace the experiment's earlier runs in OUT")
    xp.add_argument(
        "--hystart",
        choices=("off", "on", "keep"),
        default="off",
        help="tcp-cc: CUBIC's HyStart during the CUBIC run (default off: slow start then fills the RLC queue, and "
        "the sawtooth of drops at its limit shows within 20 s; on: it leaves slow start early and needs ~30 s; "
        "keep: the machine's setting). The machine-wide tcp_cubic parameter is restored afterwards",
    )
    xp.set_defaults(func=cmd_experiment)

    ex = sub.add_parser(
        "exec",
        help="run a command in a running emulation's namespace",
        description="Runs COMMAND in the namespace of NODE (dn, ue0, ue1, …) of the emulation writing RUN.",
    )
    ex.add_argument("run", help="the -o directory of a running `scout emulate`")
    ex.add_argument("node", help="dn, or ueN")
    ex.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    ex.set_defaults(func=cmd_exec)

    cu = sub.add_parser(
        "cleanup",
        help="remove what killed emulators left behind (root)",
        description="An emulator that is killed (kill -9) cannot clean up: its namespaces (scout-PID-dn, scout-PID-ueN) "
        "and the applications in them stay, and so does its tracefs instance (/sys/kernel/tracing/instances/scout-PID), "
        "whose TCP tracepoints go on recording every segment; its TUN devices go with it. The next `scout emulate` "
        "removes them before it starts; `scout cleanup` removes them now (SIGTERM, then SIGKILL, to every process in "
        "the namespaces). Running emulations are not touched.",
    )
    cu.set_defaults(func=cmd_cleanup)

    rc = sub.add_parser(
        "recover",
        help="make the run of a killed emulator or probe readable (up to its last checkpoint)",
        description="`scout emulate` and `scout probe` make their events durable every second (checkpoints). When one "
        "is killed (kill -9, power loss) its run says complete: false and every reader refuses it; `scout recover RUN` "
        "joins the checkpointed parts into the run's tables, so that analyze, report, query and export read it. What "
        "came after the last checkpoint (at most about a second) is lost; run.json stays complete: false and gains "
        "`recovered`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  scout recover runs/tcp && scout analyze runs/tcp",
    )
    rc.add_argument("run", help="the run directory")
    rc.set_defaults(func=cmd_recover)

    d = sub.add_parser(
        "demo",
        help="simulate, analyse and report the built-in scenarios",
        description="Runs udp-flood, attribution-{light,medium,heavy} and mixed, analyses each, writes their reports "
        "(the attribution runs compared across load) and prints a summary table and the reports' paths.",
    )
    d.add_argument("-o", "--output", default="runs/demo", help="directory for the runs (default: runs/demo)")
    d.add_argument("--duration", type=SECONDS_POSITIVE, help="simulated seconds per scenario (default: each scenario's own)")
    d.set_defaults(func=cmd_demo)
    return p


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong and where to read what is accepted."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _undo_unfinished() -> list[str]:
    """Removes what the failed command had begun to write; returns what was removed."""
    removed = []
    while _UNFINISHED:
        what, remove = _UNFINISHED.pop()
        try:
            if remove() is not False:  # False: there was nothing to remove
                removed.append(what)
        except OSError as e:
            removed.append(f"(could not remove {what}: {e.strerror})")
    return removed


#: Taken, and never given back, by whoever reports the command's end (`_fail`, or the watchdog
#: below), so that it is reported once.
_ENDING = threading.Lock()


def _fail(prog: str, message: str, status: int) -> int:
    _ENDING.acquire()
    removed = _undo_unfinished()
    line = f"{prog}: {message}"
    if removed:
        line += "; removed the " + ", ".join(removed)
    print(line, file=sys.stderr)
    return status


_WAKEUP: list[socket.socket] = []

#: How long a command without a graceful stop may take to answer Ctrl-C or SIGTERM on its own.
PROMPT_STOP_S = 0.5


def _stop_promptly_on_signal(prog: str) -> None:
    """For the commands that only read a run and write derived files (analyze, report, export,
    query): a stop signal is answered within `PROMPT_STOP_S` even when the work is inside a native
    phase that does not look at interrupts (DuckDB finalising a COPY or an aggregate can take
    seconds under load). Python's C-level handler writes each signal to a wakeup socket at once;
    a thread waiting on it gives the main thread its chance, then removes the unfinished files
    and exits with the signal's status. Commands with a graceful stop (emulate, simulate, probe,
    which write a run on Ctrl-C) do not use this."""
    r, w = socket.socketpair()
    w.setblocking(False)
    _WAKEUP.append(w)  # the handler writes to its descriptor: it must stay open
    signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)

    def watch() -> None:
        got = r.recv(1)
        if not got:
            return
        time.sleep(PROMPT_STOP_S)
        if not _ENDING.acquire(blocking=False):
            return  # the main thread is reporting the end itself
        signum = got[0]
        what = "stopped by SIGTERM" if signum == signal.SIGTERM else "interrupted (Ctrl-C)"
        removed = _undo_unfinished()
        line = f"{prog}: {what}"
        if removed:
            line += "; removed the " + ", ".join(removed)
        with contextlib.suppress(OSError):
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        os._exit(128 + signum)

    threading.Thread(target=watch, name="scout-stop", daemon=True).start()


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prog = f"scout {args.command}"
    # SIGTERM stops the work like Ctrl-C: native code sees it at its next check and returns.
    signal.signal(signal.SIGTERM, _on_sigterm)
    if args.command in ("analyze", "report", "export", "query"):
        _stop_promptly_on_signal(prog)
        status = _main(args, prog)
        if status in (128 + signal.SIGINT, 128 + signal.SIGTERM) and argv is None:
            # Stopped: native threads (the attribution kernel, DuckDB's workers) may still be
            # running; a normal interpreter exit would destroy them mid-work (C++'s "terminate
            # called without an active exception", status -6). The unfinished files are gone:
            # leave at once, as the stop watcher does.
            with contextlib.suppress(OSError):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(status)
        return status
    return _main(args, prog)


def _main(args: argparse.Namespace, prog: str) -> int:
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (`scout analyze RUN | head`): stop quietly, as Unix tools do on
        # SIGPIPE, with the shell's status for it. Output still buffered would fail again when
        # Python flushes stdout at exit, so stdout goes to /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        _undo_unfinished()
        return 128 + 13
    except Terminated:
        return _fail(prog, "stopped by SIGTERM", 128 + signal.SIGTERM)
    except KeyboardInterrupt:
        return _fail(prog, "interrupted (Ctrl-C)", 128 + signal.SIGINT)
    except SystemExit as e:
        # The commands' own errors (`raise SystemExit("error: ...")`).
        if isinstance(e.code, str):
            return _fail(prog, e.code, 1)
        _undo_unfinished()
        raise
    except (UsageError, RunError) as e:
        return _fail(prog, f"error: {e}", 2 if isinstance(e, UsageError) else 1)
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        return _fail(prog, f"error: {where}{e.strerror or e}", 1)
    except Exception as e:
        if interrupted(e):
            return _fail(prog, "interrupted (Ctrl-C)", 128 + signal.SIGINT)
        duckdb = sys.modules.get("duckdb")
        if duckdb is not None and isinstance(e, duckdb.Error):
            # DuckDB's I/O errors (a full disk, a read-only run) name the file in their first line.
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return _fail(prog, f"error: {first}", 1)
        raise


if __name__ == "__main__":
    sys.exit(main())
