"""Scout's analysis engine: run directory in, attribution tables out (Ibis over DuckDB).

    import scout
    a = scout.open("runs/udp-flood")      # analyses the run first if RUN/analysis/ is missing or stale
    a.journeys.filter(a.journeys.status == "dropped").to_pandas()
    a.profiles.to_pandas()

Tables (documented in docs/attribution.md): journeys, components, profiles, layer_delays, queues,
sojourns, tti, drops, drop_series, phases, correlation, rtt.

A table is ``RUN/analysis/NAME.parquet``: one file, or (written by Spark, ``engine="spark"``) a
directory of part files; :func:`parquet_source` gives what DuckDB reads for either.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import ibis
import ibis.expr.types as ir

from scout import attribution
from scout.analysis import engine as engine_ibis
from scout.analysis.derived import correlation, metrics_check, phases
from scout.analysis.headline import coverage, headline
from scout.attribution import DEFAULT_BIN_S, DEFAULT_WINDOW_S, Started, check_run
from scout.errors import interrupted
from scout.events import TABLES, RunError, parquet_files, parquet_source

ANALYSIS_VERSION = 10
ENGINES = ("native", "ibis", "spark")
TABLE_NAMES = [
    "journeys",
    "components",
    "profiles",
    "layer_delays",
    "sojourns",
    "queues",
    "tti",
    "drops",
    "drop_series",
    "phases",
    "correlation",
    "rtt",
    "executors",
    "metrics_check",
]
#: How many progress stages an analysis reports, per engine (the attribution kernel, loading the
#: events, each relational table, the headline); progress bars divide by it.
STAGES = {"native": 9, "ibis": 15, "spark": 15}
#: Relational tables that need none of the kernel's: computed while it runs (see `_Beside`).
BESIDE_KERNEL = ("drops", "drop_series", "executors")


def _beside_kernel(pe: ir.Table, ce: ir.Table, bin_ns: int) -> dict[str, Callable[[], ir.Table]]:
    """The expressions of :data:`BESIDE_KERNEL`, by name."""
    return {
        "drops": lambda: engine_ibis.drops(pe),
        "drop_series": lambda: engine_ibis.drop_series(pe, bin_ns),
        "executors": lambda: engine_ibis.executors(ce, bin_ns),
    }


def connect(run_path: Path) -> tuple[ibis.BaseBackend, dict]:
    """A DuckDB connection with the run's event tables registered (checked: complete, version, Parquet)."""
    run = check_run(run_path)
    con = ibis.duckdb.connect()
    for name, fname in TABLES.items():
        f = run.path / "events" / fname
        try:
            con.read_parquet(parquet_source(f), table_name=name)
        except Exception as e:  # DuckDB raises its own IOException/InvalidInputException types
            if interrupted(e):
                raise KeyboardInterrupt from e
            raise RunError(f"{f}: not a readable Parquet file: {e}") from e
    return con, run.meta


def _remove(p: Path) -> None:
    """Removes a table: a file or a dataset directory."""
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink(missing_ok=True)


def _install(tmp: Path, final: Path) -> None:
    """Puts a finished table in place of the previous one (either may be a file or a directory)."""
    if final.is_dir() or tmp.is_dir():
        _remove(final)
    tmp.replace(final)


def discard_partial(run_path: Path) -> bool:
    """Removes the tables an interrupted or failed analysis left unfinished (``*.partial``; its
    ``summary.json`` was removed when it started, so the run counts as not analysed); returns
    whether there were any."""
    partial = list((Path(run_path) / "analysis").glob("*.partial"))
    for p in partial:
        _remove(p)
    return bool(partial)


def _stamp(run_path: Path) -> dict:
    """What the analysis was computed from: changes when the events change."""
    st = {}
    for fname in TABLES.values():
        stats = [p.stat() for p in parquet_files(run_path / "events" / fname)]
        st[fname] = [sum(s.st_size for s in stats), max((s.st_mtime_ns for s in stats), default=0)]
    return st


def analyze(
    run_path: str | Path,
    window_s: float = DEFAULT_WINDOW_S,
    bin_s: float = DEFAULT_BIN_S,
    progress: Callable[[str], None] | None = None,
    engine: str = "native",
    spark_master: str | None = None,
    spark_conf: dict[str, str] | None = None,
    memory: int | None = None,
    started: Started | None = None,
) -> dict:
    """Computes every analysis table into ``RUN/analysis/*.parquet`` and returns the summary.

    ``engine`` computes the per-packet tables (journeys, components, layer_delays, profiles,
    sojourns, queues, and tti when the events are read at once):
    ``native`` with Scout's attribution kernel (Rust, the default: it groups events by packet
    without a database sort), ``ibis`` with the relational expressions of
    :mod:`scout.analysis.engine` (any Ibis backend; the reference the tests compare the kernel
    with). Every other table is relational either way, on DuckDB. ``spark`` runs every table's
    relational expression on Apache Spark (:mod:`scout.analysis.spark`; ``spark_master`` and
    ``spark_conf`` configure the session).

    ``memory``: the bytes the analysis may use (default: what the machine, or the memory cgroup
    the process is in, has available). The kernel reads events that need more in windows of
    packets; DuckDB is given a limit and spills beyond it (docs/attribution.md, "Memory").

    ``started``: the kernel, already started on this run with these options by
    :func:`scout.attribution.start` (``scout analyze`` starts it before importing this module).
    """
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}; accepted: {', '.join(ENGINES)}")
    run_path = Path(run_path)
    t0 = started.t0 if started else time.perf_counter()
    # Until the new summary is written, the run is not analysed (an interruption leaves it so).
    (run_path / "analysis" / "summary.json").unlink(missing_ok=True)
    if engine == "spark":
        from scout.analysis import spark

        if progress:
            progress("event tables into Spark")
        con, meta = spark.connect(run_path, spark_master, spark_conf)
        return _analyze(con, meta, run_path, window_s, bin_s, progress, engine, None, t0)
    # The kernel needs no database: it runs before the connection is made.
    meta = check_run(run_path).meta
    if engine == "native" and started is None:
        started = attribution.start(run_path, meta, window_s, bin_s, memory)
    spill = run_path / "analysis" / ".spill"
    beside = None
    if started is not None and _native_one_pass(meta, memory):
        beside = _Beside(run_path, bin_s, memory, spill)
    try:
        kernel = _kernel(started, progress)
        if beside is not None:
            con, meta, done = beside.result()
        else:
            if progress:
                progress("event tables into DuckDB (for the relational tables)")
            con, meta, done = (*_connect_limited(run_path, memory, spill), ())
    except BaseException:
        if beside is not None:
            beside.cancel()
        raise
    try:
        return _analyze(con, meta, run_path, window_s, bin_s, progress, engine, kernel, t0, memory, done)
    finally:
        con.disconnect()
        _remove(spill)


def _connect_limited(run_path: Path, memory: int | None, spill: Path) -> tuple[ibis.BaseBackend, dict]:
    con, meta = connect(run_path)
    _limit_duckdb(con, memory, spill)
    return con, meta


def _native_one_pass(meta: dict, memory: int | None) -> bool:
    """Whether the kernel reads the run's events at once (then the memory is not only its own)."""
    from scout import _native

    events = int(meta.get("counts", {}).get("events", {}).get("packet_events", 0))
    return bool(events) and _native.attribution_one_pass(events, memory)


class _Beside:
    """DuckDB's connection made, and the tables that need none of the kernel's
    (:data:`BESIDE_KERNEL`) written, on a thread at the lowest CPU priority while the kernel runs —
    only when the kernel reads the events in one pass (else the memory is its own). The kernel's
    threads leave moments idle while they wait for each other; niced, this work takes those and
    not the kernel's time. DuckDB's worker threads inherit the niceness of the thread that opens
    the database: they keep it after the kernel, when nothing else runs."""

    def __init__(self, run_path: Path, bin_s: float, memory: int | None, spill: Path):
        self._out: tuple | None = None
        self._error: BaseException | None = None
        self._con: ibis.BaseBackend | None = None
        self._thread = threading.Thread(
            target=self._work, args=(run_path, bin_s, memory, spill), name="scout-beside-kernel", daemon=True
        )
        self._thread.start()

    def _work(self, run_path: Path, bin_s: float, memory: int | None, spill: Path) -> None:
        try:
            with contextlib.suppress(OSError, AttributeError):  # no such call: the usual priority
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
            con, meta = _connect_limited(run_path, memory, spill)
            self._con = con
            con.raw_sql("SET preserve_insertion_order = false")
            out = run_path / "analysis"
            out.mkdir(exist_ok=True)
            pe, _se, ce = (con.table(n) for n in TABLES)
            for name, expr in _beside_kernel(pe, ce, attribution.bin_ns(bin_s)).items():
                _write_duckdb(con, out, name, expr())
            self._out = (con, meta, BESIDE_KERNEL)
        except BaseException as e:  # raised again on the caller's thread
            self._error = e

    def result(self) -> tuple[ibis.BaseBackend, dict, tuple[str, ...]]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._out is not None
        return self._out

    def cancel(self) -> None:
        """Stops the work (the caller was interrupted or failed) and waits for it."""
        con = self._con
        if con is not None:
            with contextlib.suppress(Exception):
                con.con.interrupt()
        self._thread.join()
        if self._out is not None:
            self._out[0].disconnect()


def _write_duckdb(con: ibis.BaseBackend, out: Path, name: str, expr: ir.Table) -> None:
    """Writes ``expr`` as ``OUT/NAME.parquet`` through ``NAME.parquet.partial``."""
    tmp = out / f"{name}.parquet.partial"
    _remove(tmp)
    con.to_parquet(expr, tmp, compression="zstd")
    _install(tmp, out / f"{name}.parquet")


def _limit_duckdb(con: ibis.BaseBackend, memory: int | None, spill: Path) -> None:
    """Gives DuckDB most of the memory the analysis may use (what is left when the kernel is done:
    the Python process keeps the rest) and a directory to spill to beyond it."""
    from scout import _native

    room = memory or _native.memory_available()
    if room:
        con.raw_sql(f"SET memory_limit = '{max(room * 5 // 8, 64 << 20) >> 20}MiB'")
        con.raw_sql(f"SET temp_directory = '{str(spill).replace(chr(39), chr(39) * 2)}'")


def _kernel(started: Started | None, progress) -> dict | None:
    """The attribution kernel's result (journeys, components, layer_delays, profiles, sojourns,
    queues), waiting for it; None when it was not started (the run's duration must first be
    measured from its events)."""
    if started is None:
        return None
    if progress:
        progress("journeys, components, layer_delays, profiles, sojourns, queues, tti (attribution kernel)")
    return attribution.result(started)


def _analyze(
    con: ibis.BaseBackend,
    meta: dict,
    run_path: Path,
    window_s: float = DEFAULT_WINDOW_S,
    bin_s: float = DEFAULT_BIN_S,
    progress: Callable[[str], None] | None = None,
    engine: str = "native",
    kernel: dict | None = None,
    t0: float | None = None,
    memory: int | None = None,
    done: tuple[str, ...] = (),
) -> dict:
    """Every analysis table; ``kernel`` is the attribution kernel's result if it already ran (from
    ``t0``); ``done``: relational tables already written (beside the kernel)."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}; accepted: {', '.join(ENGINES)}")
    t0 = t0 or time.perf_counter()
    spark = engine == "spark"
    if not spark:
        con.raw_sql("SET preserve_insertion_order = false")
    out = run_path / "analysis"
    out.mkdir(exist_ok=True)
    pe, se, ce = (con.table(n) for n in TABLES)
    duration_ns = attribution.duration_ns(meta)
    if duration_ns <= 0:
        duration_ns = int(pe.t_ns.max().execute() or 0) - int(pe.t_ns.min().execute() or 0)
    window_ns = int(window_s * 1e9) if window_s else None
    bin_ns = attribution.bin_ns(bin_s)
    say = progress or (lambda _msg: None)

    def write(name: str, expr: ir.Table) -> None:
        say(name)
        tmp = out / f"{name}.parquet.partial"
        _remove(tmp)
        if spark:
            from scout.analysis import spark as spark_io

            spark_io.write(con, expr, tmp)
            _install(tmp, out / f"{name}.parquet")
        else:
            _write_duckdb(con, out, name, expr)

    def table(name: str) -> ir.Table:
        f = out / f"{name}.parquet"
        if spark:
            from scout.analysis import spark as spark_io

            return spark_io.read(con, f, f"a_{name}")
        return con.read_parquet(parquet_source(f), table_name=f"a_{name}")

    def write_frame(name: str, df) -> None:
        """A table computed in pandas (from small aggregates): always one file."""
        _remove(out / f"{name}.parquet")
        df.to_parquet(out / f"{name}.parquet")

    if engine == "native":
        if kernel is None:
            started = attribution.start(run_path, meta, window_s, bin_s, memory, max(duration_ns, 1))
            kernel = _kernel(started, say)
        j = table("journeys")
        comp = table("components")
        population = kernel["population"]
    else:
        write("journeys", engine_ibis.journeys(pe, ce))
        j = table("journeys")
        write("components", engine_ibis.components(engine_ibis.steps(pe), j))
        comp = table("components")
        # Profiles describe delivered packets; a source that never sees deliveries (a log, a capture) is
        # profiled over all its packets' measured spans.
        population = "delivered" if int(j.filter(j.status == "delivered").count().execute()) else "observed"
        write("profiles", engine_ibis.profiles(j, comp, window_ns, duration_ns, population))
        write("layer_delays", engine_ibis.layer_delays(comp))
    if kernel is None:  # the kernel writes sojourns and queues beside its four tables
        write("sojourns", engine_ibis.sojourns(pe))
        write("queues", engine_ibis.queues(pe, table("sojourns"), bin_ns))
    so = table("sojourns")
    if kernel is None or kernel["rows"].get("tti") is None:  # the kernel writes it when it can
        write("tti", engine_ibis.tti(se))
    for name, expr in _beside_kernel(pe, ce, bin_ns).items():
        if name not in done:
            write(name, expr())
    say("phases")
    ph = phases(table("queues").to_pandas(), table("drop_series").to_pandas(), j, bin_ns)
    write_frame("phases", ph)
    say("correlation")
    corr, rtt = correlation(ce, so, bin_ns)
    write_frame("correlation", corr)
    write_frame("rtt", rtt)
    say("metrics_check")
    write_frame("metrics_check", metrics_check(ce, pe, table("components")))

    summary = _summary(meta, j, comp, table("drops"), pe, ph, kernel)
    say("headline")
    summary["headline"] = headline(meta, j, table("layer_delays"), se, ce)
    summary.update(
        profile_population=population,
        engine=engine,
        analysis_version=ANALYSIS_VERSION,
        window_s=window_s,
        bin_s=bin_s,
        events=int(meta.get("counts", {}).get("events", {}).get("packet_events", 0))
        + int(meta.get("counts", {}).get("events", {}).get("slot_events", 0))
        + int(meta.get("counts", {}).get("events", {}).get("control_events", 0)),
        wall_s=round(time.perf_counter() - t0, 3),
        stamp=_stamp(run_path),
    )
    if kernel is not None:
        # Windows of packets the kernel read the events in (1: all at once) and its budget.
        summary["memory"] = {"windows": kernel["windows"], "budget_bytes": kernel["memory"]}
    tmp = out / "summary.json.partial"
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    tmp.replace(out / "summary.json")
    return summary


def _closes(t: ir.Table, per: ir.Table, measure: str, prefix: str = "") -> dict:
    """How many packets of ``t`` have components summing exactly to ``measure``, and the
    unattributed time among them."""
    c = t.left_join(per, "pkt")
    row = (
        c.agg(
            n=c.count(),
            closed=(c.total.fill_null(0) == c[measure]).sum(),
            with_unattributed=(c.unattr.fill_null(0) > 0).sum(),
            unattributed_ns=c.unattr.sum(),
        )
        .to_pyarrow()
        .to_pylist()[0]
    )
    return {prefix + k: v for k, v in row.items()}


def _summary(meta, j: ir.Table, comp: ir.Table, drops: ir.Table, pe: ir.Table, ph, kernel: dict | None = None) -> dict:
    """The run's summary; ``kernel`` is what the attribution kernel already counted (closure,
    largest contributors), else they are computed from the tables."""
    status = {r["status"]: int(r["n"]) for r in j.group_by("status").agg(n=j.count()).to_pyarrow().to_pylist()}
    d = j.filter(j.status == "delivered")
    if kernel is not None:
        closure, dominant = kernel["closure"], kernel["dominant"]
    else:
        per = comp.group_by("pkt").agg(total=comp.ns.sum(), unattr=comp.ns.sum(where=comp.component == "unattributed"))
        # Per delivered packet, components sum to the one-way delay; per packet, to its measured span.
        closure = _closes(d, per, "delay_ns") | _closes(j, per, "span_ns", prefix="span_")
        dominant = (
            comp.inner_join(d.select("pkt"), "pkt")
            .group_by(["layer", "component"])
            .agg(ns=comp.ns.sum())
            .order_by([ibis.desc("ns"), "layer", "component"])
            .limit(3)
            .to_pyarrow()
            .to_pylist()
        )
    by_dir = {}
    for r in (
        d.group_by("dir")
        .agg(n=d.count(), p50=d.delay_ns.quantile(0.5), p99=d.delay_ns.quantile(0.99), max=d.delay_ns.max())
        .to_pyarrow()
        .to_pylist()
    ):
        by_dir[r["dir"]] = {k: r[k] for k in ("n", "p50", "p99", "max")}
    dr = drops.group_by(["layer", "reason"]).agg(n=drops["count"].sum()).to_pyarrow().to_pylist()
    ev_drops = int(pe.filter(pe.point == "drop").count().execute())
    return {
        "run": meta.get("scenario", {}).get("name") or meta.get("source"),
        "source": meta.get("source"),
        "coverage": coverage(meta),
        "packets": status,
        "closure": {k: int(v or 0) for k, v in closure.items()},
        "delay_ns": by_dir,
        "drops": {f"{r['layer']}/{r['reason']}": int(r["n"]) for r in dr},
        "drops_total": int(sum(r["n"] for r in dr)),
        "drop_events": ev_drops,
        "dominant": [{"layer": r["layer"], "component": r["component"], "ns": int(r["ns"])} for r in dominant],
        "phases": ph.to_dict("records"),
    }


class Analysis:
    """The analysis tables of one run as Ibis tables (lazy; ``.to_pandas()``, ``.to_pyarrow()``, SQL)."""

    def __init__(self, run_path: Path, con: ibis.BaseBackend, meta: dict, summary: dict):
        self.path = run_path
        self.con = con
        self.meta = meta
        self.summary = summary
        for name in TABLE_NAMES:
            con.read_parquet(parquet_source(run_path / "analysis" / f"{name}.parquet"), table_name=name)

    def table(self, name: str) -> ir.Table:
        if name not in TABLE_NAMES and name not in TABLES:
            raise RunError(f"{self.path}: no table {name!r}; accepted: {', '.join(list(TABLES) + TABLE_NAMES)}")
        return self.con.table(name)

    def sql(self, query: str) -> ir.Table:
        return self.con.sql(query)

    def __getattr__(self, name: str) -> ir.Table:
        if name in TABLE_NAMES or name in TABLES:
            return self.con.table(name)
        raise AttributeError(name)


def is_current(run_path: Path) -> bool:
    f = run_path / "analysis" / "summary.json"
    if not f.exists():
        return False
    try:
        s = json.loads(f.read_text())
    except json.JSONDecodeError:
        return False
    if s.get("analysis_version") != ANALYSIS_VERSION:
        return False
    try:
        return s.get("stamp") == _stamp(run_path)
    except FileNotFoundError:
        return False


def open(run_path: str | Path, **kw) -> Analysis:  # noqa: A001 - scout.open is the documented entry point
    """Opens a run's analysis, computing it first when missing or older than the events."""
    p = Path(run_path)
    con, meta = connect(p)
    if not is_current(p):
        (p / "analysis" / "summary.json").unlink(missing_ok=True)
        _analyze(con, meta, p, **kw)  # the kernel runs inside, after the connection
    summary = json.loads((p / "analysis" / "summary.json").read_text())
    return Analysis(p, con, meta, summary)
