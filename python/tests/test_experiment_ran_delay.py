"""`scout experiment ran-delay` (seed 004's Copa study) on a subset: the runs, the summary's rows
and columns, the report, and the claims of issue 24 (docs/ue-view.md)."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import scout_cmd as scout

from scout import experiment_ran_delay as xr


def test_retransmission_compensation_raises_copas_throughput_only_where_there_are_retransmissions(
    tmp_path: Path,
) -> None:
    # Copa downloading through DDDSU, five 20-s seeds: on the poor channel (HARQ at 10 % BLER) the
    # compensated Copa's throughput exceeds the uncompensated one's beyond both CIs; on the good
    # channel (next to no retransmissions) the two agree within them.
    out = tmp_path / "rd"
    r = scout("experiment", "ran-delay", "-o", str(out), "--only", "copa,dl,dddsu,none,retx")
    assert r.returncode == 0, r.stderr
    assert "4 configurations x 5 seeds = 20 runs" in r.stdout, r.stdout
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert list(rows[0]) == list(xr.COLUMNS)
    assert len(rows) == 4 and all(row["runs"] == "5" for row in rows)
    by = {
        (row["compensation"], row["channel"]): {k: float(row[k]) for k in ("throughput_mbps", "throughput_ci_mbps", "harq_retx")}
        for row in rows
    }
    none, retx = by["none", "poor"], by["retx", "poor"]
    assert none["harq_retx"] > 500 and retx["harq_retx"] > 500, by
    assert retx["throughput_mbps"] - retx["throughput_ci_mbps"] > none["throughput_mbps"] + none["throughput_ci_mbps"], by
    none, retx = by["none", "good"], by["retx", "good"]
    assert none["harq_retx"] < 5, by
    assert abs(retx["throughput_mbps"] - none["throughput_mbps"]) <= retx["throughput_ci_mbps"] + none["throughput_ci_mbps"], by
    # Each run holds the delay samples Copa took, as measured and as used: equal without
    # compensation; with it, some samples lowered (those a retransmission had lifted), none raised.
    # Seed 1's report draws them against the retransmission events.
    sql = (
        "SELECT count(*), count(*) FILTER (value < json_extract(detail, '$.raw_ns')::BIGINT), "
        "count(*) FILTER (value > json_extract(detail, '$.raw_ns')::BIGINT) FROM control_events WHERE kind = 'cc_sample'"
    )
    for comp in ("none", "retx"):
        r = scout("query", str(out / f"copa-{comp}-dl-poor-dddsu" / "seed1"), sql, "--format", "csv")
        n, lowered, raised = (int(x) for x in r.stdout.splitlines()[1].split(","))
        assert n > 5_000 and raised == 0, (comp, r.stdout)
        assert (lowered == 0) if comp == "none" else (lowered > 100), (comp, r.stdout)
        page = (out / f"copa-{comp}-dl-poor-dddsu" / "seed1" / "report" / "index.html").read_text()
        assert 'data-figure="cc"' in page and "retransmission event" in page
    # In a browser the figure draws the samples and the events, with every other figure.
    from test_report import browser_check, check_page

    for res in browser_check(out / "copa-retx-dl-poor-dddsu" / "seed1" / "report" / "index.html"):
        check_page(res)
        assert res["figures"]["cc"]["points"] > 5_000, res["figures"]["cc"]
    # Every run is an ordinary run directory; seed 1's of each configuration has its report, and
    # the comparison links them.
    page = (out / "report" / "index.html").read_text()
    for c in xr.select(xr.configurations(), "copa,dl,dddsu,none,retx"):
        assert (out / c.name / "seed1" / "report" / "index.html").is_file()
        assert (out / c.name / "seed5" / "run.json").is_file()
        assert f"{c.name}/seed1/report/index.html" in page


def test_only_names_values_of_the_dimensions() -> None:
    cfgs = xr.configurations()
    assert len(cfgs) == 2 * 4 * 2 * 2 * 2
    assert {c.name for c in xr.select(cfgs, "copa,ul,good,all")} == {"copa-all-ul-good-dddsu", "copa-all-ul-good-dddddddsuu"}
    assert len(xr.select(cfgs, "ul,good,all")) == 4, "both controllers"
    r = scout("experiment", "ran-delay", "-o", "/nonexistent/x", "--only", "dl,bogus")
    assert r.returncode == 2 and "bogus" in r.stderr and "accepted" in r.stderr, r.stderr
