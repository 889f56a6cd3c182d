"""The analysis on Apache Spark: the same Ibis expressions as on DuckDB, run by PySpark.

``scout analyze RUN --engine spark`` (``analyze(run, engine="spark")``) computes every table with
the relational expressions of :mod:`scout.analysis.engine` on a Spark session: ``local[*]`` by
default (all of this machine's cores), or a cluster given by ``--spark-master URL`` /
``SCOUT_SPARK_MASTER``. Spark's executors read the run's Parquet files (in parallel, by row group)
and write each per-packet table as a Parquet dataset: ``RUN/analysis/NAME.parquet/`` is then a
directory of ``part-*.parquet`` files, which every reader of a run accepts (DuckDB through a glob,
pyarrow directly). On a cluster the run directory must be on storage every executor sees at the
same path (NFS, a shared mount): docs/spark.md.

Spark has no unsigned integers: it reads the events' ``uint64`` columns (the packet id,
``queue_bytes``) as DECIMAL(20, 0). They are cast to signed 64-bit integers when the tables are
registered (ids and byte counts stay far below 2^63), so joins and sums run on integers.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from scout.events import TABLES, RunError, parquet_files

#: The JVM's logging configuration (errors only).
LOG4J2 = Path(__file__).with_name("spark-log4j2.properties")
#: Spark versions Ibis's PySpark backend supports (ibis-framework 10–12).
PYSPARK_REQUIREMENT = "pyspark>=3.5,<4.1"
INSTALL_HINT = (
    f"install it with: .venv/bin/pip install '{PYSPARK_REQUIREMENT}' (or run SCOUT_WITH_SPARK=1 scripts/setup.sh); "
    "Spark also needs a Java runtime (17 or newer)"
)


def _pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import SparkSession
    except ImportError:
        raise RunError(f"--engine spark needs PySpark, which is not installed; {INSTALL_HINT}") from None
    return SparkSession


def parse_conf(items: list[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` settings (``--spark-conf spark.driver.memory=4g``) as a dict; a clear error otherwise."""
    conf = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RunError(f"--spark-conf {item!r}: expected KEY=VALUE, e.g. spark.driver.memory=4g")
        conf[key.strip()] = value
    return conf


def session(master: str | None = None, conf: dict[str, str] | None = None):
    """The Spark session the analysis runs on (created once per process, reused after).

    ``master``: a Spark master URL (``spark://host:7077``, ``yarn``, ``k8s://…``, ``local[4]``);
    default ``SCOUT_SPARK_MASTER`` or ``local[*]``.
    """
    spark_session = _pyspark()
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise RunError(
            "--engine spark needs a Java runtime (17 or newer) on PATH or in JAVA_HOME, and none was found "
            "(SCOUT_WITH_SPARK=1 scripts/setup.sh installs Debian's default-jre-headless)"
        )
    master = master or os.environ.get("SCOUT_SPARK_MASTER") or "local[*]"
    b = spark_session.builder.master(master).appName("scout-analyze")
    # Timestamps are integers (t_ns), but keep Spark from applying the host's zone anywhere.
    b = b.config("spark.sql.session.timeZone", "UTC")
    # Quiet: scout prints its own progress (no console progress bars, no INFO/WARN log lines).
    b = b.config("spark.ui.showConsoleProgress", "false")
    b = b.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J2}")
    if master.startswith("local"):
        # One machine: the driver on loopback (no traffic leaves the host, no warning about the
        # host name), no web UI on a port, and few shuffle partitions (the default 200 is for
        # clusters; adaptive execution coalesces further).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        b = b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        b = b.config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", str(4 * (os.cpu_count() or 2)))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    try:
        s = b.getOrCreate()
    except Exception as e:  # the JVM did not start: no Java, a bad master URL, a bad setting
        raise RunError(f"Spark did not start (master {master}): {_why(e)}") from None
    s.sparkContext.setLogLevel("ERROR")
    return s


def _why(e: Exception) -> str:
    """The cause of a Spark error in one line: the deepest Java ``Caused by:`` when there is one
    (Py4J's own first line only says which call failed)."""
    text = str(e).strip()
    causes = [ln.split("Caused by:", 1)[1].strip() for ln in text.splitlines() if ln.strip().startswith("Caused by:")]
    if causes:
        return causes[-1]
    return text.splitlines()[0] if text else type(e).__name__


def _register(s, path: Path, name: str):
    """Registers a Parquet file or dataset as temporary view ``name``, unsigned 64-bit columns as signed."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType

    try:
        df = s.read.parquet(str(path))
    except Exception as e:  # AnalysisException and friends: not Parquet, unreadable
        raise RunError(f"{path}: not a readable Parquet file: {_why(e)}") from None
    for f in df.schema.fields:
        if isinstance(f.dataType, DecimalType) and f.dataType.scale == 0:
            df = df.withColumn(f.name, F.col(f.name).cast("long"))
    df.createOrReplaceTempView(name)


def connect(run_path: Path, master: str | None = None, conf: dict[str, str] | None = None):
    """An Ibis connection to a Spark session with the run's event tables registered (checked first:
    complete, schema version, every table present)."""
    import ibis
    import pyarrow.parquet as pq

    from scout.analysis import check_run

    run = check_run(run_path)
    # The footers first, on the driver: the other engines' message, before Spark starts (and its
    # tasks fail with a stack trace).
    for fname in TABLES.values():
        for f in parquet_files(run.path / "events" / fname):
            try:
                pq.read_metadata(f)
            except Exception as e:  # pyarrow raises ArrowInvalid / OSError for anything not Parquet
                raise RunError(f"{f}: not a readable Parquet file: {e}") from None
    s = session(master, conf)
    for name, fname in TABLES.items():
        _register(s, run.path / "events" / fname, name)
    return ibis.pyspark.connect(s), run.meta


def write(con, expr, path: Path) -> None:
    """Writes ``expr`` as a Parquet dataset (a directory of part files, written by the executors)."""
    con.to_parquet(expr, path, mode="overwrite", compression="zstd")


def read(con, path: Path, name: str):
    """A table the analysis wrote, as an Ibis table on the session."""
    _register(_pyspark().getActiveSession(), path, name)
    return con.table(name)
