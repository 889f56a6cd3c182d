"""`scout ingest srsran` on the real srsRAN fixtures, then `scout analyze` and `scout report` unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import scout

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "srsran"
LOG_23_10 = FIXTURES / "srsran-23.10-info-drb.gnb.log"

needs_fixtures = pytest.mark.skipif(
    not LOG_23_10.exists(), reason=f"{FIXTURES} not found (the shared fixtures sit beside the project in CI)"
)


def scout_cmd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scout.cli", *args], capture_output=True, text=True)


def count_lines(path: Path, *needles: str) -> int:
    return sum(1 for line in path.read_text().splitlines() if all(n in line for n in needles))


@needs_fixtures
def test_every_dl_drb_pdcp_pdu_becomes_a_journey_to_a_mac_transmission(tmp_path: Path) -> None:
    out = tmp_path / "sr"
    r = scout_cmd("ingest", "srsran", str(LOG_23_10), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "ingested 1 srsRAN log" in r.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["source"] == "srsran" and meta["complete"] is True
    assert "gtpu_to_pdcp" in meta["links"] and meta["links"]["gtpu_to_pdcp"].startswith("inferred")

    a = scout.open(out)
    pe = a.con.table("packet_events")
    # Counts of events per layer equal counts of the corresponding lines.
    n_pdcp = count_lines(LOG_23_10, "[PDCP", "DRB1 DL: TX PDU. type=data")
    n_gtpu = count_lines(LOG_23_10, "[GTPU", " DL teid=", "RX SDU.")
    n_rlc_sdu = count_lines(LOG_23_10, "[RLC", "DRB1 DL: TX SDU.")
    n_rlc_pdu = count_lines(LOG_23_10, "[RLC", "DRB1 DL: TX PDU. dc=data") + count_lines(
        LOG_23_10, "[RLC", "DRB1 DL: RETX PDU. dc=data"
    )
    got = pe.group_by(["layer", "point"]).agg(n=pe.count()).to_pandas().set_index(["layer", "point"]).n.to_dict()
    assert got[("pdcp", "proc_end")] == n_pdcp > 100
    assert got[("gtpu", "proc_end")] == n_gtpu
    assert got[("rlc", "enqueue")] == n_rlc_sdu
    unlinked = meta["counts"]["skipped_inputs"]["unlinked_lines"].get("rlc_pdu_without_sdu", 0)
    assert got[("rlc", "segment")] == n_rlc_pdu - unlinked

    # Every PDCP packet reaches RLC and a MAC transmission; segments sum to the SDU.
    j = a.journeys.to_pandas().set_index("pkt")
    assert len(j) == n_pdcp
    tx = pe.filter((pe.layer == "mac") & (pe.point == "tx")).select("pkt").distinct().count().execute()
    assert tx == n_pdcp
    seg = pe.filter((pe.layer == "rlc") & (pe.point == "segment") & (pe.retx == 0))
    sums = seg.group_by("pkt").agg(b=seg.bytes.sum(), last=seg.seg_last.any()).to_pandas().set_index("pkt")
    enq = pe.filter((pe.layer == "rlc") & (pe.point == "enqueue")).select("pkt", "bytes").to_pandas().set_index("pkt")
    done = sums[sums["last"]]
    assert len(done) > 100
    assert (done.b == enq.loc[done.index].bytes).all()

    # Attribution: components sum to each packet's measured span; missing points are unattributed.
    cl = a.summary["closure"]
    assert cl["span_n"] == cl["span_closed"] == n_pdcp
    assert a.summary["profile_population"] == "all"
    comps = set(map(tuple, a.components.select("layer", "component").distinct().to_pandas().values))
    assert ("rlc", "queueing_protocol") in comps and ("mac", "scheduling") in comps

    r = scout_cmd("report", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "report" / "index.html").exists()


def test_bad_logs_get_clear_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.log"
    r = scout_cmd("ingest", "srsran", str(missing), "-o", str(tmp_path / "x"))
    assert r.returncode != 0 and "nope.log" in r.stderr
    empty = tmp_path / "empty.log"
    empty.write_text("no srsRAN lines here\n")
    r = scout_cmd("ingest", "srsran", str(empty), "-o", str(tmp_path / "y"))
    assert r.returncode != 0 and "empty.log" in r.stderr and "no srsRAN log entries" in r.stderr
