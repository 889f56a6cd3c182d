"""Reading run directories: ``run.json`` and the event tables as Arrow (zero-copy from Parquet).

Light to import (pyarrow, 0.2 s, loads when a table is read): the analysis checks a run and starts
its kernel before its own heavy imports (:mod:`scout.attribution`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scout import _native
from scout.errors import RunError

if TYPE_CHECKING:
    import pyarrow as pa

TABLES = {
    "packet_events": "packet.parquet",
    "slot_events": "slot.parquet",
    "control_events": "control.parquet",
}


def parquet_source(f: Path) -> str:
    """What DuckDB reads for a table: the file, or the part files of a dataset directory (a large
    run's event tables, ``events/TABLE.parquet/part-NNNNNN.parquet``; tables Spark wrote)."""
    return str(f / "*.parquet") if f.is_dir() else str(f)


def parquet_files(f: Path) -> list[Path]:
    """The Parquet files of a table: the file itself, or a dataset directory's part files in order."""
    return sorted(p for p in f.glob("*.parquet") if p.is_file()) if f.is_dir() else [f]


@dataclass
class Run:
    """A run directory: its metadata and its event tables."""

    path: Path
    meta: dict

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        """One event table as an Arrow table (memory-mapped, zero-copy where Parquet allows)."""
        if name not in TABLES:
            raise RunError(f"{self.path}: no table {name!r}; accepted: {', '.join(TABLES)}")
        import pyarrow as pa
        import pyarrow.parquet as pq

        f = self.path / "events" / TABLES[name]
        if not f.exists():
            raise RunError(f"{f}: missing (the run has no {name} table)")
        try:
            return pq.read_table(f, columns=columns, memory_map=True)
        except (pa.ArrowInvalid, OSError) as e:
            raise RunError(f"{f}: not a readable Parquet file: {e}") from e

    @property
    def packet_events(self) -> pa.Table:
        return self.table("packet_events")

    @property
    def slot_events(self) -> pa.Table:
        return self.table("slot_events")

    @property
    def control_events(self) -> pa.Table:
        return self.table("control_events")


def slot_ns(meta: dict) -> int:
    """The slot duration a run's metadata states: the simulator's cell, else a 10 ms frame
    (TS 38.211 §4.3.1) over the slots per frame the srsRAN ingest inferred; 0 when unknown."""
    spf = ((meta.get("ingest") or {}).get("slots") or {}).get("slots_per_frame")
    return int((meta.get("cell") or {}).get("slot_ns") or 0) or (10_000_000 // int(spf) if spf else 0)


def open_run(path: str | Path) -> Run:
    """Opens a run directory, checking it is complete (or recovered: ``scout recover``) and of a
    schema version this Scout reads."""
    p = Path(path)
    rj = p / "run.json"
    if not rj.exists():
        raise RunError(f"{rj}: missing; {p} is not a Scout run directory")
    try:
        meta = json.loads(rj.read_text())
    except json.JSONDecodeError as e:
        raise RunError(f"{rj}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    version = meta.get("schema_version")
    if not isinstance(version, int) or version > _native.schema_version():
        raise RunError(
            f"{rj}: schema_version {version!r} is not supported; this Scout reads versions "
            f"<= {_native.schema_version()} (upgrade Scout)"
        )
    if not meta.get("complete", False) and "recovered" not in meta:
        if "checkpoint" in meta:
            kept = (meta["checkpoint"].get("rows") or {}).get("packet_events")
            raise RunError(
                f"{rj}: the run is incomplete: its producer ({meta.get('source', '?')}) stopped without finishing, "
                f"after {meta['checkpoint'].get('parts', 0)} checkpoint(s) ({kept or 0:,} packet events); if it was "
                f"killed, `scout recover {p}` makes what it wrote readable"
            )
        raise RunError(f"{rj}: the run is incomplete (the producer did not finish; it may have crashed)")
    return Run(p, meta)
