"""On real data, the analysis says what the source measured and nothing else (the fixtures: an
srsRAN 23.10 DRB log, an srsRAN 24.10 SRB-only log, a UPF capture on `any`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"


def scout_cmd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scout.cli", *args], capture_output=True, text=True)


def fixture(rel: str) -> Path:
    p = FIXTURES / rel
    if not p.exists():
        pytest.skip(f"{p} is absent (the shared fixtures are not beside this clone)")
    return p


def ingest_and_analyse(tmp_path: Path, kind: str, rel: str, *extra: str) -> tuple[str, str, dict]:
    out = tmp_path / "run"
    r = scout_cmd("ingest", kind, str(fixture(rel)), "-o", str(out), *extra)
    assert r.returncode == 0, r.stderr
    a = scout_cmd("analyze", str(out))
    assert a.returncode == 0, a.stderr
    return r.stdout, a.stdout, json.loads((out / "analysis" / "summary.json").read_text())


def test_a_gnb_log_reports_spans_and_retransmissions_not_vacuous_checks(tmp_path: Path) -> None:
    _, out, s = ingest_and_analyse(tmp_path, "srsran", "srsran/srsran-23.10-info-drb.gnb.log")
    assert "0 of 0" not in out, "no check over nothing"
    assert "covers: the gNB as logged" in out
    names = [f["name"] for f in s["headline"]["figures"]]
    assert "DL rlc span" in names and "UL HARQ" in names and "DL span through the gNB" in names
    assert {x["name"] for x in s["headline"]["absent"]} >= {"throughput", "one-way delay and its closure"}
    # Its drops are a missing session and PDUs outside the PDCP receive window: no queue filled, so
    # there is no overload and no phase.
    assert s["drops"] and s["phases"] == [], s["phases"]
    assert "phase " not in out


def test_an_srb_only_log_says_it_has_no_drb_traffic_and_its_release_range(tmp_path: Path) -> None:
    ing, out, s = ingest_and_analyse(tmp_path, "srsran", "srsran/srsran-24.10-debug-srb.gnb.log")
    assert "no data-bearer (DRB) traffic" in ing
    # Its lines allow 24.04 to 25.04 (an SRB's PDCP PDU carries no is_retx= in 24.10); never "24.04" alone.
    assert "release from the line formats: 24.04–25.04" in ing
    assert "packets: none" in out
    assert any("DRB" in x["why"] for x in s["headline"]["absent"])


def test_a_upf_capture_reports_forwarding_delay_and_unmatched_sightings(tmp_path: Path) -> None:
    _, out, s = ingest_and_analyse(tmp_path, "pcap", "pcap/n3-n6-ping-any.pcap")
    assert "incomplete" not in out and "0 of 0" not in out
    assert "UPF forwarding delay UL, slice default: 3,914 packets paired" in out
    assert "N6 sightings with no twin: 35 (capture ended 2, no twin within window 33): UPF drop candidates" in out
    assert s["phases"] == []


def test_a_side_option_that_matches_nothing_is_warned_about(tmp_path: Path) -> None:
    r = scout_cmd("ingest", "pcap", str(fixture("pcap/n3-n6-ping-any.pcap")), "-o", str(tmp_path / "r"), "--n3", "eth7")
    assert r.returncode == 0, r.stderr
    assert "warning: --n3 eth7 matched no frame" in r.stdout
