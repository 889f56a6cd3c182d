"""`scout analyze`, `report`, `export` and `query`: a run's analysis and what reads it."""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
from pathlib import Path

from scout.argtypes import (
    NONNEGATIVE,
    POSITIVE,
    SECONDS_NONNEGATIVE,
    SECONDS_POSITIVE,
    id_list,
    size,
)
from scout.cli.common import Stages, begin, check_writable, finished, fmt_ms, ms_text
from scout.errors import RunError, UsageError, interrupted
from scout.quantiles import pcts


def _analysis_progress(run: Path, engine: str = "native") -> Stages:
    from scout import analysis

    return Stages(f"analysing {run.name}", analysis.STAGES[engine])


def _begin_analysis(run: Path) -> None:
    def discard() -> bool:
        from scout import analysis

        return analysis.discard_partial(run)

    begin(f"partial analysis tables in {run / 'analysis'}", discard)


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
    finished()
    return s


def print_analysis(s: dict) -> None:
    cl = s["closure"]
    print(f"analysis of {s['run']} ({s['source']}): {s['events']:,} events in {s['wall_s']:.2f} s")
    pk = s["packets"]
    if s.get("coverage") == "end_to_end" or not pk:
        print("  packets: " + (", ".join(f"{k} {v:,}" for k, v in sorted(pk.items())) or "none"))
    else:
        # The source sees part of each packet's path: a journey ends where the source stops seeing it.
        seen = sum(pk.values())
        rest = ", ".join(f"{k} {v:,}" for k, v in sorted(pk.items()) if k != "incomplete")
        print(f"  packets: {seen:,} seen over the part of the path the source covers" + (f" ({rest})" if rest else ""))
    for d, v in sorted(s["delay_ns"].items()):
        print(f"  {d.upper()} one-way delay: {pcts(v, v['n'])}, max {ms_text(v['max'])}")
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


def open_run(run: str, why: str = ""):
    """A run's analysis for a command, analysing it first (saying so, with progress) when needed."""
    from scout import analysis

    p = Path(run)
    try:
        if not analysis.is_current(p):
            analysis.check_run(p)
            check_writable(p / "analysis" if (p / "analysis").is_dir() else p)
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
    begin(f"unfinished report {a.path / 'report'}", lambda: report.discard(a.path))
    try:
        path = report.render(a, compare, progress=prog.stage, static=static)
    except BaseException:
        prog.done(finished=False)
        raise
    prog.done()
    finished()
    return path


def cmd_report(args: argparse.Namespace) -> int:
    analyses = [open_run(r) for r in args.runs]
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
    check_writable(next(p for p in [out, *out.absolute().parents] if p.exists()), "the exported files")
    a = open_run(args.run)
    written: list[Path] = []
    created = not out.exists()

    def remove_written() -> bool:
        existing = [p for p in written if p.exists()]
        for p in existing:
            p.unlink()
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        return bool(existing)

    begin(f"unfinished export files in {out}", remove_written)
    paths = export.export(
        a, args.format, args.granularity, out, select=args.select, n=args.packets, ids=args.pkt, written=written
    )
    finished()
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
            con = open_run(args.run, why="; the statement needs the analysis tables").con
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


def add_analyze(sub) -> None:
    """`scout analyze`'s options."""
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


def add_report(sub) -> None:
    """`scout report`'s options."""
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


def add_export(sub) -> None:
    """`scout export`'s options."""
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


def add_query(sub) -> None:
    """`scout query`'s options."""
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
