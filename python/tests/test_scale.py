"""Runs at scale: large event tables written as datasets of time-ordered part files; the analysis
within a memory budget (events read in windows of packets give the same tables as one pass, and a
run whose events are several times a cgroup's memory limit analyses inside it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import scout_cmd

from scout import _native, analysis

ROOT = Path(__file__).resolve().parents[2]
KERNEL_TABLES = ("journeys", "components", "layer_delays", "sojourns", "queues", "profiles")


def decoded(t: pa.Table) -> pa.Table:
    """The table with enum columns as plain strings (two writers may number names differently)."""
    cols = [pc.cast(c, c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.table(cols, names=t.column_names)


def same_tables(a: Path, b: Path) -> None:
    for name in KERNEL_TABLES:
        x, y = decoded(pq.read_table(a / f"{name}.parquet")), decoded(pq.read_table(b / f"{name}.parquet"))
        assert x.num_rows == y.num_rows, name
        assert x.num_rows > 0, name
        assert x.equals(y), name


def kernel(run: Path, out: Path, memory: int | None) -> dict:
    meta = json.loads((run / "run.json").read_text())
    duration_ns = int(meta["duration_s"] * 1e9)
    job = _native.attribute_start(str(run / "events"), str(out), 1.0, duration_ns, 100_000_000, memory=memory)
    return json.loads(job.wait())


@pytest.fixture(scope="module")
def foreign_run(tmp_path_factory) -> Path:
    """A simulated run rewritten as another tool would write it: enum columns as plain strings (so
    names are met as read, not declared up front), row groups of 20,000 events with `pkt`
    statistics, and, for the last fifth of the packets, a slice and a queue name no earlier packet
    has (so later windows add names to the tables' dictionaries). The first packet gets one more
    event at the run's end, so the last row group's `pkt` statistics span every id: the windows'
    estimate from statistics falls short there and the count pass cuts them."""
    run = tmp_path_factory.mktemp("mem") / "run"
    r = scout_cmd("simulate", "mixed", "-o", str(run), "--duration", "4")
    assert r.returncode == 0, r.stderr
    f = run / "events" / "packet.parquet"
    t = decoded(pq.read_table(f))
    late = pc.greater(t["pkt"], pc.quantile(t["pkt"], 0.8)[0].as_py())
    t = t.set_column(t.schema.get_field_index("slice"), "slice", pc.if_else(late, "late", t["slice"]))
    q = t["queue"]
    t = t.set_column(t.schema.get_field_index("queue"), "queue", pc.if_else(pc.and_(late, pc.equal(q, "rlc_sdu")), "rlc_late", q))
    first = t.filter(pc.equal(t["pkt"], pc.min(t["pkt"]))).slice(0, 1)
    stray = first.set_column(0, "t_ns", pa.array([pc.max(t["t_ns"]).as_py()], t.schema.field("t_ns").type))
    t = pa.concat_tables([t, stray])
    pq.write_table(t, f, row_group_size=20_000)
    assert t.num_rows > 8 * (1 << 16), "enough events for several of the smallest windows"
    return run


def test_windows_of_packets_give_the_tables_of_one_pass(foreign_run: Path, tmp_path: Path) -> None:
    one = kernel(foreign_run, tmp_path / "one", memory=None)
    # A budget of one byte: the smallest windows (65,536 events), each reading only the row
    # groups whose packet ids overlap it.
    win = kernel(foreign_run, tmp_path / "win", memory=1)
    assert one["windows"] == 1
    assert win["windows"] >= 8, win["windows"]
    # In one pass the kernel also writes `tti`; in windows it leaves it to the database.
    assert one["rows"].pop("tti") > 0 and win["rows"].pop("tti") is None
    assert not (tmp_path / "win" / "tti.parquet").exists()
    for k in ("events", "packets", "closure", "dominant", "rows", "population"):
        assert one[k] == win[k], k
    same_tables(tmp_path / "one", tmp_path / "win")
    slices = set(pq.read_table(tmp_path / "win" / "journeys.parquet", columns=["slice"])["slice"].to_pylist())
    queues = set(pq.read_table(tmp_path / "win" / "sojourns.parquet", columns=["queue"])["queue"].to_pylist())
    assert "late" in slices and "rlc_late" in queues, "names first met in a later window are written"


def test_windows_need_dense_ids_else_one_pass(foreign_run: Path, tmp_path: Path) -> None:
    """Packet ids far apart (not a run's dense numbering) are read in one pass whatever the budget."""
    run = tmp_path / "sparse"
    shutil.copytree(foreign_run, run, ignore=shutil.ignore_patterns("analysis"))
    f = run / "events" / "packet.parquet"
    t = pq.read_table(f)
    t = t.set_column(t.schema.get_field_index("pkt"), "pkt", pc.multiply(t["pkt"], pa.scalar(1_000_003, pa.uint64())))
    pq.write_table(t, f, row_group_size=20_000)
    s = kernel(run, tmp_path / "out", memory=1)
    assert s["windows"] == 1
    assert s["events"] == t.num_rows


def test_memory_option_is_checked_and_reported(foreign_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(foreign_run, run, ignore=shutil.ignore_patterns("analysis"))
    r = scout_cmd("analyze", str(run), "--memory", "12")
    assert r.returncode == 2 and "--memory: 12 is too small; accepted: a size such as 1G" in r.stderr, r.stderr
    r = scout_cmd("analyze", str(run), "--memory", "lots")
    assert r.returncode == 2 and "'lots' is not a size such as" in r.stderr, r.stderr
    r = scout_cmd("analyze", str(run), "--memory", "1G", "--engine", "spark")
    assert r.returncode != 0 and "--memory applies to the native and ibis engines" in r.stderr, r.stderr
    r = scout_cmd("analyze", str(run), "--memory", "1.5GiB")
    assert r.returncode == 0, r.stderr
    s = json.loads((run / "analysis" / "summary.json").read_text())
    assert s["memory"] == {"windows": 1, "budget_bytes": 3 << 29}
    assert not (run / "analysis" / ".spill").exists()


# -- large tables as datasets ------------------------------------------------------------------------


def test_a_large_run_is_written_as_a_dataset_that_every_reader_reads(tmp_path: Path) -> None:
    """With parts of 2^20 rows (the default is 2^26), a 3.5 M-event run's packet table is a
    directory of time-ordered part files; the kernel (in one pass and in windows across files),
    DuckDB and `scout query` read it and give the tables of the same run written as one file."""
    args = ["simulate", "bench-60mbps", "--duration", "25"]
    one, parted = tmp_path / "one", tmp_path / "parted"
    assert scout_cmd(*args, "-o", str(one)).returncode == 0
    r = scout_cmd(*args, "-o", str(parted), env={**os.environ, "SCOUT_EVENTS_PART_ROWS": "1000000"})
    assert r.returncode == 0, r.stderr
    d = parted / "events" / "packet.parquet"
    assert d.is_dir() and (parted / "events" / "slot.parquet").is_file()
    parts = sorted(d.iterdir())
    assert [p.name for p in parts[:2]] == ["part-000000.parquet", "part-000001.parquet"]
    rows = [pq.ParquetFile(p).metadata.num_rows for p in parts]
    assert len(parts) >= 3 and all(n == 1 << 20 for n in rows[:-1]), rows
    assert sum(rows) == pq.ParquetFile(one / "events" / "packet.parquet").metadata.num_rows
    # Parts follow each other in time: each starts within a slot of where the previous ended.
    spans = [pq.read_table(p, columns=["t_ns"])["t_ns"] for p in parts]
    for a, b in zip(spans, spans[1:], strict=False):
        assert pc.min(b).as_py() >= pc.max(a).as_py() - 1_000_000
    assert not list((parted / "events").glob("*partial*"))
    s_one = analysis.analyze(one)
    s_parted = analysis.analyze(parted)
    for k in ("packets", "closure", "delay_ns", "dominant", "drops_total", "headline"):
        assert s_one[k] == s_parted[k], k
    same_tables(one / "analysis", parted / "analysis")
    win = kernel(parted, tmp_path / "win", memory=1)
    assert win["windows"] > len(parts)
    same_tables(one / "analysis", tmp_path / "win")
    q = scout_cmd("query", str(parted), "SELECT count(*) AS n FROM packet_events")
    assert q.returncode == 0 and f"{sum(rows)}" in q.stdout.replace(",", ""), q.stdout + q.stderr


# -- a cgroup's memory limit ------------------------------------------------------------------------


def _cgroup() -> tuple[Path, list[str]] | None:
    """Where a fresh memory cgroup goes (v2, else v1) and the files that limit its memory and
    swap; None when this machine has no memory controller to offer."""
    v2 = Path("/sys/fs/cgroup")
    control = v2 / "cgroup.subtree_control"
    if control.exists() and "memory" in control.read_text().split():
        return v2 / f"scout-test-{os.getpid()}", ["memory.max", "memory.swap.max"]
    v1 = Path("/sys/fs/cgroup/memory")
    if (v1 / "memory.limit_in_bytes").exists():
        return v1 / f"scout-test-{os.getpid()}", ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
    return None


def _in_cgroup(cg: Path, *args: str) -> subprocess.CompletedProcess:
    procs = str(cg / "cgroup.procs")

    def enter() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    return scout_cmd(*args, preexec_fn=enter)


@pytest.fixture
def cgroup_1g():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a memory cgroup")
    found = _cgroup()
    if found is None:
        pytest.skip("no memory cgroup controller (v2 memory.max or v1 memory.limit_in_bytes) on this machine")
    cg, files = found
    cg.mkdir()
    try:
        for name in files:
            f = cg / name
            if f.exists():  # swap accounting may be off (v1 memsw); then the limit is the memory one
                f.write_text("0" if name == "memory.swap.max" else str(1 << 30))
        yield cg
    finally:
        cg.rmdir()


def test_a_run_several_times_the_memory_limit_analyses_within_it(cgroup_1g: Path, tmp_path: Path) -> None:
    """bench-60mbps for 360 s: ~50 M packet events, ~3 GB as Arrow columns, analysed by
    `scout analyze` in a 1 GiB cgroup; the same analysis in one pass is killed there; the windowed
    tables are those of one pass outside it."""
    run = tmp_path / "big"
    r = scout_cmd("simulate", str(ROOT / "scenarios" / "bench-60mbps.yaml"), "-o", str(run), "--duration", "360")
    assert r.returncode == 0, r.stderr
    events = pq.ParquetFile(run / "events" / "packet.parquet")
    arrow_bytes = events.read_row_group(0).nbytes / events.metadata.row_group(0).num_rows * events.metadata.num_rows
    assert arrow_bytes > 2.5 * (1 << 30), f"{arrow_bytes / 2**30:.1f} GiB of events"
    inside = _in_cgroup(cgroup_1g, "analyze", str(run))
    assert inside.returncode == 0, inside.stderr[-2000:]
    assert "memory: events read in" in inside.stdout, inside.stdout
    s = json.loads((run / "analysis" / "summary.json").read_text())
    assert s["memory"]["windows"] > 1 and s["memory"]["budget_bytes"] < 1 << 30
    windowed = tmp_path / "windowed"
    shutil.move(run / "analysis", windowed)
    # The same command told it may use 64 GiB reads everything at once: the cgroup kills it.
    once = _in_cgroup(cgroup_1g, "analyze", str(run), "--memory", "64G")
    assert once.returncode in (-9, 137), (once.returncode, once.stderr[-2000:])
    shutil.rmtree(run / "analysis", ignore_errors=True)
    s_one = analysis.analyze(run, memory=64 << 30)
    assert s_one["memory"]["windows"] == 1
    for k in ("packets", "closure", "delay_ns", "dominant", "drops_total", "headline"):
        assert s_one[k] == s[k], k
    # Row for row, without holding 50 M rows in this process: DuckDB compares the files.
    import duckdb

    for name in KERNEL_TABLES:
        a, b = windowed / f"{name}.parquet", run / "analysis" / f"{name}.parquet"
        diff = duckdb.sql(
            f"SELECT count(*) FROM ((FROM '{a}' EXCEPT ALL FROM '{b}') UNION ALL (FROM '{b}' EXCEPT ALL FROM '{a}'))"
        ).fetchone()[0]
        assert diff == 0, name
