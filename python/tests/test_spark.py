"""`--engine spark`: the analysis's Ibis expressions on Apache Spark (local mode) give the same
tables as on DuckDB, for every built-in scenario and every kind of source."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from test_analysis import schemas as schemas  # noqa: F401 - the fixture synthetic_run needs
from test_analysis import scout_cmd, shared_fixture, synthetic_run
from test_ingest import write_event_trace, write_metrics

from scout import analysis
from scout.analysis import TABLE_NAMES

ROOT = Path(__file__).resolve().parents[2]

WHY = None
if importlib.util.find_spec("pyspark") is None:
    WHY = "PySpark is not installed (SCOUT_WITH_SPARK=1 scripts/setup.sh installs it)"
elif shutil.which("java") is None:
    WHY = "no Java runtime (Spark needs Java 17 or newer)"
if WHY and os.environ.get("CI"):
    raise RuntimeError(f"test_spark must run in CI: {WHY}")
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")

# The built-in scenarios compared, with a duration long enough to exercise their tables
# (udp-flood: until PDCP's early drop sheds load, for drops and phases). Each comparison costs
# 10-40 s of Spark; the scenarios below it are left out because another one compared carries the
# same event mix, or because the simulator runs nothing of them.
SCENARIOS = {
    "udp-flood": 3,
    "mixed": 2,
    "attribution-heavy": 1,
    "capacity-trace": 2,
    "l4s-anbr": 1,
    "ran-delay": 1,
    "loaded-cell": 1,
}
NOT_COMPARED = {
    "attribution-light": "attribution-heavy's cell and traffic at a lower load",
    "attribution-medium": "attribution-heavy's cell and traffic at a lower load",
    "bench-60mbps": "one UDP CBR flow on a constant channel: attribution-heavy carries four",
    # Applications only: the simulator runs no traffic of them (its run has no packets).
    "emulate-demo": "real applications only (scout emulate)",
    "emulate-iperf3": "real applications only (scout emulate)",
    "tcp-cc": "real applications only (scout emulate)",
    "rlc-modes": "real applications only (scout emulate)",
    "upf-slices": "real UPF processes (scout emulate; the simulator refuses it)",
}
SOURCES = ["synthetic", "srsran", "pcap", *SCENARIOS]


def test_every_builtin_scenario_is_compared_or_said_why_not() -> None:
    names = {p.stem for p in (ROOT / "scenarios").glob("*.yaml")}
    assert names == set(SCENARIOS) | set(NOT_COMPARED), "add the new scenario to SCENARIOS (or NOT_COMPARED, with why)"
    assert not set(SCENARIOS) & set(NOT_COMPARED)


def _run(tmp_path: Path, source: str, schemas) -> Path:
    out = tmp_path / source
    if source == "synthetic":
        return synthetic_run(tmp_path, schemas)
    if source == "srsran":
        # The srsRAN log with an executor trace and JSON metrics beside it: executors and
        # metrics_check have rows.
        log = shared_fixture("srsran/srsran-23.10-info-drb.gnb.log")
        trace, metrics = write_event_trace(tmp_path / "trace.json"), write_metrics(tmp_path / "metrics.jsonl")
        r = scout_cmd("ingest", "srsran", str(log), "--trace", str(trace), "--metrics", str(metrics), "-o", str(out))
    elif source == "pcap":
        r = scout_cmd("ingest", "pcap", str(shared_fixture("pcap/n3-n6-ping-any.pcap")), "-o", str(out))
    else:
        r = scout_cmd("simulate", source, "-o", str(out), "--duration", str(SCENARIOS[source]))
    assert r.returncode == 0, r.stderr
    return out


def _normalised(df: pd.DataFrame) -> pd.DataFrame:
    """Values only: Spark has no unsigned integers (a uint8 comes back as int16) and writes strings
    without dictionaries; nulls as None/NaN."""
    df = df.copy()
    for c in df.columns:
        col = df[c]
        if col.dtype.name == "category" or col.dtype == object or col.dtype.name.startswith("str"):
            df[c] = col.astype(object).where(col.notna(), None)
        elif col.dtype.kind in "iub" or col.dtype.name.startswith(("Int", "UInt", "boolean")):
            df[c] = col.astype("float64") if col.isna().any() else col.astype("int64")
    return df


def assert_same_tables(a_run: Path, b_run: Path) -> dict[str, int]:
    """Every analysis table of two runs holds the same rows (in any order; floats to 1e-9 relative);
    returns the row count of each table."""
    rows = {}
    for name in TABLE_NAMES:
        a = _normalised(pq.read_table(a_run / "analysis" / f"{name}.parquet").to_pandas())
        b = _normalised(pq.read_table(b_run / "analysis" / f"{name}.parquet").to_pandas())
        assert sorted(a.columns) == sorted(b.columns), (name, set(a.columns) ^ set(b.columns))
        assert len(a) == len(b), (name, len(a), len(b))
        b = b[list(a.columns)]
        # Sorted by every exact column, then the floats.
        keys = [c for c in a.columns if a[c].dtype.kind != "f"] + [c for c in a.columns if a[c].dtype.kind == "f"]
        a = a.sort_values(keys, na_position="first").reset_index(drop=True)
        b = b.sort_values(keys, na_position="first").reset_index(drop=True)
        for c in a.columns:
            x, y = a[c], b[c]
            if x.dtype.kind == "f" or y.dtype.kind == "f":
                same = np.isclose(x.astype(float), y.astype(float), rtol=1e-9, atol=1e-6, equal_nan=True)
            else:
                same = ((x == y) | (x.isna() & y.isna())).to_numpy()
            assert same.all(), (name, c, x[~same].head(3).tolist(), y[~same].head(3).tolist())
        rows[name] = len(a)
    return rows


_ROWS: dict[str, dict[str, int]] = {}


def assert_same_summaries(s_duck: dict, s_spark: dict) -> None:
    assert s_spark["engine"] == "spark"
    for k in ("packets", "closure", "profile_population", "delay_ns", "drops", "drops_total", "drop_events", "phases"):
        assert s_duck[k] == s_spark[k], k
    assert s_duck["dominant"] == s_spark["dominant"]
    assert s_duck["headline"] == s_spark["headline"]


# `mixed` is compared by the command-line test below (one Spark analysis, not two).
@pytest.mark.parametrize("source", [s for s in SOURCES if s != "mixed"])
def test_spark_and_duckdb_give_the_same_tables(tmp_path: Path, schemas, source: str) -> None:  # noqa: F811
    run = _run(tmp_path, source, schemas)
    spark_run = tmp_path / f"{source}-spark"
    shutil.copytree(run, spark_run, ignore=shutil.ignore_patterns("analysis"))
    s_duck = analysis.analyze(run, engine="ibis")
    s_spark = analysis.analyze(spark_run, engine="spark")
    assert_same_summaries(s_duck, s_spark)
    # Spark wrote its per-packet tables as datasets (directories of part files).
    assert (spark_run / "analysis" / "journeys.parquet").is_dir()
    _ROWS[source] = assert_same_tables(run, spark_run)


def test_scout_analyze_engine_spark_from_the_command_line(tmp_path: Path, schemas) -> None:  # noqa: F811
    """The command a user types: progress, the summary, the same tables as DuckDB's, which a report
    and a query then read; and switching back to the default engine replaces the datasets with
    files."""
    duck_run = _run(tmp_path, "mixed", schemas)
    run = tmp_path / "mixed-spark"
    shutil.copytree(duck_run, run, ignore=shutil.ignore_patterns("analysis"))
    spark = ["--engine", "spark", "--spark-master", "local[2]", "--spark-conf", "spark.sql.shuffle.partitions=4"]
    r = scout_cmd("analyze", str(run), *spark)
    assert r.returncode == 0, r.stderr
    assert "attribution closes for" in r.stdout and "Traceback" not in r.stderr
    s_spark = json.loads((run / "analysis" / "summary.json").read_text())
    assert_same_summaries(analysis.analyze(duck_run, engine="ibis"), s_spark)
    assert (run / "analysis" / "journeys.parquet").is_dir()
    _ROWS["mixed"] = assert_same_tables(duck_run, run)
    r = scout_cmd("query", str(run), "SELECT count(*) AS n FROM journeys")
    assert r.returncode == 0, r.stderr
    r = scout_cmd("report", str(run))
    assert r.returncode == 0, r.stderr
    r = scout_cmd("analyze", str(run))
    assert r.returncode == 0, r.stderr
    assert (run / "analysis" / "journeys.parquet").is_file()


def test_the_comparison_covered_every_table() -> None:
    """Across the runs compared above, every table had rows in at least one (none compared empty only)."""
    if len(_ROWS) < len(SOURCES):
        pytest.skip("runs only after every comparison above passed")
    empty = [t for t in TABLE_NAMES if not any(r[t] for r in _ROWS.values())]
    assert not empty, empty


def test_bad_spark_options_are_one_clear_line(tmp_path: Path) -> None:
    run = tmp_path / "r"
    assert scout_cmd("simulate", "mixed", "-o", str(run), "--duration", "1").returncode == 0
    r = scout_cmd("analyze", str(run), "--engine", "spark", "--spark-conf", "spark.driver.memory")
    assert r.returncode != 0 and "expected KEY=VALUE" in r.stderr and "Traceback" not in r.stderr
    r = scout_cmd("analyze", str(run), "--spark-master", "local[2]")
    assert r.returncode != 0 and "--engine spark only" in r.stderr
    (run / "events" / "packet.parquet").write_text("garbage")
    r = scout_cmd("analyze", str(run), "--engine", "spark")
    assert r.returncode != 0 and "packet.parquet: not a readable Parquet file" in r.stderr and "Traceback" not in r.stderr
