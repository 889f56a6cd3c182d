"""`scout experiment l4s-anbr` (seed 003's sweep) on a small subset: the runs, the summary's rows
and columns, the report, and the orderings the model shows (docs/l4s-anbr.md)."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import scout_cmd as scout

from scout import experiment_l4s as xl
from scout.experiment_l4s import Config


def test_the_sweep_writes_runs_a_summary_and_a_report_and_shows_the_seeds_orderings(tmp_path: Path) -> None:
    # Seed 003's orderings (tables 5.1, 5.2), in both loads, over five 30-s seeds: constant rate
    # far above every adaptive method in latency; L4S's latency and throughput rise with its
    # thresholds; ANBR's throughput is the highest of the adaptive methods and its latency grows
    # with its window; the hybrid lies between L4S and ANBR on both axes.
    out = tmp_path / "xl"
    only = "constant,l4s-5-7,l4s-30-50,anbr-40,anbr-200,hybrid-5-7"
    r = scout("experiment", "l4s-anbr", "-o", str(out), "--only", only)
    assert r.returncode == 0, r.stderr
    assert "6 configurations x 2 loads x 5 seeds = 60 runs" in r.stdout, r.stdout
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert list(rows[0]) == list(xl.COLUMNS)
    assert len(rows) == 12 and all(row["runs"] == "5" for row in rows)
    by = {
        (
            Config(
                row["method"],
                float(row["min_ms"]) if row["min_ms"] else None,
                float(row["max_ms"]) if row["max_ms"] else None,
                float(row["window_ms"]) if row["window_ms"] else None,
            ).name,
            row["load"],
        ): row
        for row in rows
    }
    for load in ("low", "high"):
        lat = {k[0]: float(v["latency_ms"]) for k, v in by.items() if k[1] == load}
        thr = {k[0]: float(v["throughput_mbps"]) for k, v in by.items() if k[1] == load}
        adaptive = [k for k in lat if k != "constant"]
        assert lat["constant"] > 500 and lat["constant"] > 10 * max(lat[k] for k in adaptive), (load, lat)
        assert all(float(by[(k, load)]["loss"]) == 0.0 for k in adaptive), load
        assert lat["l4s-5-7"] < lat["l4s-30-50"] and thr["l4s-5-7"] < thr["l4s-30-50"], (load, lat, thr)
        assert lat["l4s-5-7"] < 10, (load, lat)
        assert thr["anbr-40"] > max(thr[k] for k in adaptive if not k.startswith("anbr")), (load, thr)
        assert lat["anbr-40"] < lat["anbr-200"], (load, lat)
        assert lat["l4s-5-7"] < lat["hybrid-5-7"] < lat["anbr-40"], (load, lat)
        assert thr["l4s-5-7"] < thr["hybrid-5-7"] < thr["anbr-40"], (load, thr)
    # Each run is an ordinary run directory; seed 1's are reported, and the comparison links them.
    assert (out / "l4s-5-7-high" / "seed2" / "run.json").is_file()
    assert (out / "l4s-5-7-high" / "seed1" / "report" / "index.html").is_file()
    assert not (out / "l4s-5-7-high" / "seed2" / "report").exists()
    page = (out / "report" / "index.html").read_text()
    assert page.count("<img") == 2 and "hybrid" in page
    assert 'href="../anbr-40-low/seed1/report/index.html"' in page


def test_a_bad_configuration_or_load_is_refused(tmp_path: Path) -> None:
    r = scout("experiment", "l4s-anbr", "-o", str(tmp_path / "x"), "--only", "l4s-1-2")
    assert r.returncode == 2 and "l4s-1-2: no such configuration" in r.stderr, r.stderr
    r = scout("experiment", "l4s-anbr", "-o", str(tmp_path / "x"), "--loads", "medium")
    assert r.returncode == 2 and "accepted: a comma list of low, high" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_mean_ci_is_students_t_up_to_30_degrees_of_freedom() -> None:
    """The 95 % interval's half-width is t(0.975, n-1)·s/√n: 2.776 at 4 degrees of freedom, 2.120 at
    16 and 2.042 at 30 (the table's last), the normal's 1.96 beyond; one value has none."""
    import math

    from scout.experiment import mean_ci

    assert mean_ci([3.0]) == (3.0, 0.0)
    for n, t in ((5, 2.776), (17, 2.120), (31, 2.042), (41, 1.96)):
        values = [float(i % 2) for i in range(n)]  # a sample with a known spread
        m = sum(values) / n
        sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
        mean, half = mean_ci(values)
        assert mean == m
        assert math.isclose(half, t * sd / math.sqrt(n), rel_tol=1e-12), n
