"""`scout experiment l4s-anbr` (seed 003's sweep) on a small subset: the runs, the summary's rows
and columns, the report, and the orderings the model shows (docs/l4s-anbr.md)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from scout import experiment_l4s as xl


def scout(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scout.cli", *args], capture_output=True, text=True)


def test_the_sweep_writes_runs_a_summary_and_a_report_and_l4s_holds_latency_by_its_thresholds(tmp_path: Path) -> None:
    out = tmp_path / "xl"
    only = "constant,l4s-5-7,l4s-15-30,l4s-60-100,anbr-40,hybrid-5-7"
    r = scout("experiment", "l4s-anbr", "-o", str(out), "--only", only, "--seeds", "2", "--duration", "6")
    assert r.returncode == 0, r.stderr
    assert "6 configurations x 2 loads x 2 seeds = 24 runs" in r.stdout, r.stdout
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert list(rows[0]) == list(xl.COLUMNS)
    assert len(rows) == 12 and all(row["runs"] == "2" for row in rows)
    by = {(row["method"], row["min_ms"], row["window_ms"], row["load"]): row for row in rows}
    for load in ("low", "high"):
        lat = {k[:3]: float(v["latency_ms"]) for k, v in by.items() if k[3] == load}
        constant = lat[("constant", "", "")]
        adaptive = [v for k, v in lat.items() if k[0] != "constant"]
        # Constant rate into a deep buffer: seconds; every adaptive method: tens of ms at most.
        assert constant > 500 and max(adaptive) < 100, (load, lat)
        # L4S's latency rises with its thresholds.
        l4s = [lat[("l4s", m, "")] for m in ("5", "15", "60")]
        assert l4s == sorted(l4s) and l4s[0] < 10, (load, l4s)
        assert float(by[("l4s", "5", "", load)]["loss"]) == 0.0
    # Each run is an ordinary run directory; the report compares them.
    assert (out / "l4s-5-7-high" / "seed2" / "run.json").is_file()
    page = (out / "report" / "index.html").read_text()
    assert page.count("<img") == 2 and "hybrid" in page


def test_a_bad_configuration_or_load_is_refused(tmp_path: Path) -> None:
    r = scout("experiment", "l4s-anbr", "-o", str(tmp_path / "x"), "--only", "l4s-1-2")
    assert r.returncode == 2 and "l4s-1-2: no such configuration" in r.stderr, r.stderr
    r = scout("experiment", "l4s-anbr", "-o", str(tmp_path / "x"), "--loads", "medium")
    assert r.returncode == 2 and "accepted: a comma list of low, high" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()
