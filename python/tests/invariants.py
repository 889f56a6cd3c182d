"""Invariants every analysed run keeps, whatever its source (issue 49): the tests of each source
call them on their runs.

- ``profiles``: per row, ``delivered + dropped + in_flight + incomplete = offered``; one
  population per run, and ``packets`` is its size (delivered packets, or every observed one).
- The summary's numbers are the tables': the one-way delay percentiles of ``summary.json`` are the
  ``profiles`` run-scope totals (one percentile definition), its packet counts the journeys'.
- Every count a summary line prints appears in ``run.json`` (:func:`counts_in_meta`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import FIXTURES, ROOT, scout_cmd
from helpers import shared_fixture as fixture

# What the test files import from here (the shared helpers live in helpers.py).
__all__ = ["FIXTURES", "ROOT", "check_profiles", "counts_in_meta", "fixture", "scout_cmd"]


def check_profiles(run: Path) -> dict:
    """The profile invariants of an analysed run; returns its summary."""
    s = json.loads((run / "analysis" / "summary.json").read_text())
    p = pq.read_table(run / "analysis" / "profiles.parquet").to_pandas()
    if not s["packets"]:
        assert len(p) == 0, "profile rows of a run without packets"
        return s
    assert len(p), f"{run}: no profile rows"
    parts = p.delivered + p.dropped + p.in_flight + p.incomplete
    bad = p[parts != p.offered]
    assert bad.empty, bad.head(3).to_dict("records")
    assert set(p.population) == {s["profile_population"]}, (set(p.population), s["profile_population"])
    pop = s["profile_population"]
    want = p.delivered if pop == "delivered" else p.offered
    assert (p.packets == want).all(), p[p.packets != want].head(3).to_dict("records")
    # The whole run, per direction: the journeys' counts, and the summary's percentiles.
    run_tot = p[(p.scope == "run") & p.window_start_ns.isna() & (p.layer == "total")]
    for status in ("delivered", "dropped", "in_flight", "incomplete"):
        assert int(run_tot[status].sum()) == int(s["packets"].get(status, 0)), (status, s["packets"])
    for d, v in s["delay_ns"].items():
        row = run_tot[run_tot.dir == d].iloc[0]
        assert row.delivered == v["n"]
        for k in ("p50", "p99"):
            assert row[f"{k}_ns"] == pytest.approx(v[k], rel=1e-12), (d, k)
        assert row.max_ns == v["max"]
    return s


#: Numbers a summary line prints that are not counts: units, definitions, the 3GPP and srsRAN
#: constants the wording names.
NOT_COUNTS = {"2", "10", "50", "99", "100", "1970", "2200", "1", "0"}


def _numbers(v, out: set[str]) -> None:
    if isinstance(v, bool):
        return
    if isinstance(v, int | float):
        out.add(str(int(v)) if float(v).is_integer() else repr(v))
    elif isinstance(v, str):
        out.update(re.findall(r"\d+", v))
    elif isinstance(v, dict):
        for x in v.values():
            _numbers(x, out)
    elif isinstance(v, list):
        out.add(str(len(v)))
        for x in v:
            _numbers(x, out)


def counts_in_meta(stdout: str, meta: dict) -> None:
    """Every count a summary prints (integers, with thousands separators, after its first line:
    that one gives sizes and times) is a value in ``run.json``, or a number in one of its texts."""
    have: set[str] = set()
    _numbers(meta, have)
    missing = []
    for line in stdout.splitlines()[1:]:
        if line.startswith("next:"):
            continue
        # Times, sizes, rates and ratios are not counts: drop "0.048 ms", "45.2%", "1.1 MB", "x2^mu".
        text = re.sub(r"\d[\d,]*\.\d+|\d+(\.\d+)?\s*(%|ms|us|µs|MB|kHz|s\b)|2\^mu|10 x", " ", line)
        for tok in re.findall(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\w.])|(?<![\w.\-])\d+(?![\w.])", text):
            n = tok.replace(",", "")
            if n not in have and n not in NOT_COUNTS:
                missing.append((n, line.strip()))
    assert not missing, missing
