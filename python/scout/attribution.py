"""The attribution kernel (Rust, ``scout._native``), started before the rest of the analysis.

``scout analyze`` imports Ibis and pandas for its relational tables (~0.5 s on the bench host);
the kernel needs neither, so :func:`start` runs it on a thread of its own first and the imports
happen while it works (:func:`scout.cli.run_analysis`). Light to import on purpose: json, pathlib
and the extension only.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from scout import _native
from scout.errors import RunError
from scout.events import TABLES, Run, open_run

DEFAULT_WINDOW_S = 1.0
DEFAULT_BIN_S = 0.1


def check_run(run_path: Path) -> Run:
    """The run (checked: complete, schema version, every event table present)."""
    run = open_run(run_path)
    for name, fname in TABLES.items():
        f = run.path / "events" / fname
        if not f.exists():
            raise RunError(f"{f}: missing (the run has no {name} table)")
    return run


def duration_ns(meta: dict) -> int:
    """The run's duration as ``run.json`` states it (0: unknown)."""
    return int(float(meta.get("duration_s") or 0) * 1e9)


def bin_ns(bin_s: float) -> int:
    return max(int(bin_s * 1e9), 1)


@dataclass
class Started:
    """The kernel running: the native handle and when it started (``time.perf_counter``)."""

    job: object
    t0: float

    def stop(self) -> None:
        """Stops it and waits for it (its tables are left ``*.partial``)."""
        self.job.stop()


def start(
    run_path: Path,
    meta: dict,
    window_s: float = DEFAULT_WINDOW_S,
    bin_s: float = DEFAULT_BIN_S,
    memory: int | None = None,
    duration: int | None = None,
) -> Started | None:
    """Starts the kernel (journeys, components, layer_delays, profiles, sojourns, queues, tti) of the
    checked run ``run_path`` within ``memory`` bytes (None: what is available) and returns at once;
    None when the run's duration must first be measured from its events (``run.json`` has none).
    Until the new summary is written, the run counts as not analysed."""
    duration = duration or duration_ns(meta)
    if duration <= 0:
        return None
    out = run_path / "analysis"
    out.mkdir(exist_ok=True)
    (out / "summary.json").unlink(missing_ok=True)
    # Tables an earlier Spark analysis wrote as dataset directories: the kernel writes files.
    for d in out.glob("*.parquet"):
        if d.is_dir():
            shutil.rmtree(d)
    job = _native.attribute_start(str(run_path / "events"), str(out), window_s or None, duration, bin_ns(bin_s), memory=memory)
    return Started(job, time.perf_counter())


def result(started: Started) -> dict:
    """Waits for the kernel; what the summary reports from its tables."""
    try:
        return json.loads(started.job.wait())
    except ValueError as e:
        raise RunError(str(e)) from None
