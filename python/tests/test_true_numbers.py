"""Every number Scout says about real data is true (issue 49): the profiles' counts add up, the
summaries say what the tables say with one percentile definition, an outcome a log does not carry
is unknown (not zero), the numerology a log states is used, the log's own warnings and a cut last
line are said, and a capture without N6 says so instead of calling packets drop candidates.

The invariants (``invariants.py``) run here on every fixture and every built-in scenario (the
emulated ones as root, shortened).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from invariants import FIXTURES, ROOT, check_profiles, counts_in_meta, fixture
from invariants import scout_cmd as scout

INFO_2026 = ROOT / "crates" / "scout-ingest" / "tests" / "data" / "info-2026-unknown-outcomes.gnb.log"


def ingest(tmp_path: Path, kind: str, *files: Path) -> tuple[Path, str, str]:
    """Ingests and analyses; (run, ingest's output, analysis's output)."""
    out = tmp_path / "run"
    r = scout("ingest", kind, *map(str, files), "-o", str(out))
    assert r.returncode == 0, r.stderr
    a = scout("analyze", str(out))
    assert a.returncode == 0, a.stderr
    return out, r.stdout, a.stdout


SRSRAN = ["srsran/srsran-23.10-info-drb.gnb.log", "srsran/srsran-24.10-debug-srb.gnb.log"]
PCAPS = sorted(p.name for p in (FIXTURES / "pcap").glob("*.pcap*")) if (FIXTURES / "pcap").exists() else ["(absent)"]


@pytest.mark.parametrize("rel", SRSRAN)
def test_srsran_fixtures_keep_the_invariants(tmp_path: Path, rel: str) -> None:
    out, ing, _ = ingest(tmp_path, "srsran", fixture(rel))
    s = check_profiles(out)
    counts_in_meta(ing, json.loads((out / "run.json").read_text()))
    if "23.10" in rel:
        # Issue 49: no packet was delivered (a log sees none), so the profile describes every
        # observed packet; `delivered` counts delivered ones: 0, and the 16 drops are drops.
        p = pq.read_table(out / "analysis" / "profiles.parquet").to_pandas()
        run = p[(p.scope == "run") & p.window_start_ns.isna() & (p.layer == "total")]
        assert s["profile_population"] == "observed"
        assert int(run.delivered.sum()) == 0 and int(run.dropped.sum()) == 16
        assert int(run.offered.sum()) == int(run.packets.sum()) == 411


@pytest.mark.parametrize("name", PCAPS)
def test_pcap_fixtures_keep_the_invariants(tmp_path: Path, name: str) -> None:
    f = fixture(f"pcap/{name}")
    out = tmp_path / "run"
    r = scout("ingest", "pcap", str(f), "-o", str(out))
    assert r.returncode in (0, 3), r.stderr  # 3: a damaged capture (its valid part is kept)
    meta = json.loads((out / "run.json").read_text())
    counts_in_meta(r.stdout, meta)
    if not meta["counts"]["offered_packets"]:
        return  # nothing to analyse: no user-plane packet in this capture
    a = scout("analyze", str(out))
    assert a.returncode == 0, a.stderr
    check_profiles(out)
    # One percentile definition: the ingest's UPF delay is the profile's total (observed span).
    p = pq.read_table(out / "analysis" / "profiles.parquet").to_pandas()
    run = p[(p.scope == "run") & p.window_start_ns.isna() & (p.layer == "total")]
    for d, u in meta["pcap"]["upf_delay"].items():
        if u["pairs"]:
            row = run[run.dir == d].iloc[0]
            assert (row.p50_ns, row.p99_ns, row.max_ns) == pytest.approx((u["p50_ns"], u["p99_ns"], u["max_ns"]))


def test_the_any_capture_says_the_same_percentiles_in_ingest_and_analyze(tmp_path: Path) -> None:
    out, ing, ana = ingest(tmp_path, "pcap", fixture("pcap/n3-n6-ping-any.pcap"))
    meta = json.loads((out / "run.json").read_text())
    for d in ("ul", "dl"):
        u = meta["pcap"]["upf_delay"][d]
        p50 = f"p50 {u['p50_ns'] / 1e6:.3f} ms"
        assert p50 in ing and p50 in ana, (p50, ing, ana)
        # Fewer pairs than a p99 needs: marked wherever it is shown.
        if u["pairs"] < 100:
            assert f"(of {u['pairs']:,} samples; a p99 needs 100)" in ing


def test_an_info_log_says_an_unlogged_harq_outcome_is_unknown(tmp_path: Path) -> None:
    out, ing, ana = ingest(tmp_path, "srsran", INFO_2026)
    meta = json.loads((out / "run.json").read_text())
    counts_in_meta(ing, meta)
    want = (
        "DL HARQ: 8 transmissions (4 new transport blocks, 4 retransmissions); outcome not logged (info level): "
        "5 failed attempts implied (4 retransmitted, 1 lost after the maximum retransmissions)"
    )
    assert want in ing and want in ana, (ing, ana)
    assert "0 NACK" not in ing + ana
    s = json.loads((out / "analysis" / "summary.json").read_text())
    dl = next(f for f in s["headline"]["figures"] if f["name"] == "DL HARQ")
    assert "outcome not logged" in dl["value"]
    # The numerology the configuration dump states, not the guess from slot indices below 10.
    assert "20 slots/frame (stated by the configuration dump's common_scs at" in ing, ing
    assert meta["ingest"]["slots"]["numerology"]["stated"] is True
    # The log's own warnings and errors, and its cut last line, in the ingest's summary and the
    # analysis's headline (which the report shows).
    assert "the log's own warnings and errors: 4 warning(s), 1 error(s) (OFH 3, PHY 1, RF 1)" in ing, ing
    assert "3 x [OFH] warning: Sector#N: missed incoming User-Plane PRACH messages" in ing
    assert "cut mid-line at its end: line 25 has no line end and was not used" in ing
    names = {f["name"]: f["value"] for f in s["headline"]["figures"]}
    assert names["the log's own warnings and errors"].startswith("4 warning(s), 1 error(s)")
    assert "line (25)" in names["log cut mid-line"]


def test_a_capture_without_n6_says_n6_was_not_captured(tmp_path: Path) -> None:
    """Issue 49: a capture with no N6 sighting called its N3 packets 'UPF drop candidates'."""
    src = fixture("pcap/n3-n6-ping-any.pcap")
    # The same capture with only its N3 side kept: --n3 and --n6 name sides; an --n6 that
    # matches nothing leaves every N6 frame out.
    out = tmp_path / "run"
    r = scout("ingest", "pcap", str(src), "-o", str(out), "--n6", "192.0.2.99")
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "run.json").read_text())
    seen = {s: sum(p[f"{s}_sightings"] for p in meta["pcap"]["capture_points"]) for s in ("n3", "n6")}
    assert seen["n6"] == 0 and seen["n3"] > 0, seen
    assert "N6 was not captured" in r.stdout, r.stdout
    a = scout("analyze", str(out))
    assert a.returncode == 0, a.stderr
    assert "UPF drop candidates" not in a.stdout and "N6 was not captured" in a.stdout, a.stdout


SIMULATED = ["udp-flood", "attribution-light", "mixed", "capacity-trace", "bench-60mbps", "l4s-anbr", "ran-delay", "loaded-cell"]
EMULATED = ["emulate-demo", "emulate-iperf3", "tcp-cc", "rlc-modes", "upf-slices"]
ROOT_NEEDED = pytest.mark.skipif(os.geteuid() != 0, reason="scout emulate needs root (network namespaces, TUN)")


@pytest.mark.parametrize(
    "command,scenario,duration",
    [("simulate", s, "1.5") for s in SIMULATED] + [pytest.param("emulate", s, "3", marks=ROOT_NEEDED) for s in EMULATED],
)
def test_built_in_scenarios_keep_the_invariants(tmp_path: Path, command: str, scenario: str, duration: str) -> None:
    """Every built-in scenario, simulated or (as root) emulated, shortened."""
    out = tmp_path / scenario
    r = scout(command, scenario, "-o", str(out), "--duration", duration)
    assert r.returncode == 0, r.stderr
    a = scout("analyze", str(out))
    assert a.returncode == 0, a.stderr
    s = check_profiles(out)
    assert s["profile_population"] == "delivered"
