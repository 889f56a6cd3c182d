"""`scout ingest pcap` on the real captures, then `scout analyze` and `scout report` unchanged."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import scout_cmd

import scout

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "pcap"
ANY = FIXTURES / "n3-n6-ping-any.pcap"
PFCP = FIXTURES / "pfcp-small.pcap"

needs_fixtures = pytest.mark.skipif(
    not ANY.exists(), reason=f"{FIXTURES} not found (the shared fixtures sit beside the project in CI)"
)


@needs_fixtures
def test_upf_delay_journeys_from_an_any_capture_analyse_and_report(tmp_path: Path) -> None:
    out = tmp_path / "pc"
    r = scout_cmd("ingest", "pcap", str(ANY), str(PFCP), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "UPF forwarding delay UL" in r.stdout and "PFCP:" in r.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["source"] == "pcap" and meta["complete"] is True
    ul = meta["pcap"]["upf_delay"]["ul"]
    assert ul["pairs"] > 3000

    r = scout_cmd("analyze", str(out))
    assert r.returncode == 0, r.stderr
    a = scout.open(out)
    j = a.journeys.to_pandas()
    assert len(j) == ul["pairs"] + meta["pcap"]["upf_delay"]["dl"]["pairs"]
    # Each journey is the UPF's: arrival on N3 (uplink) or N6 (downlink), departure from the UPF;
    # its whole span is the UPF's processing (queueing cannot be told apart from outside).
    comps = a.components.to_pandas()
    assert set(map(tuple, comps[["layer", "component"]].drop_duplicates().values)) == {("upf", "processing")}
    per_pkt = comps.groupby("pkt").ns.sum()
    assert (per_pkt.loc[j.pkt].values == j.span_ns.values).all()
    # The percentiles match the ingest's own figures: one definition (interpolated, numpy's linear).
    ulj = j[j.dir == "ul"].span_ns.values
    assert np.quantile(ulj, [0.5, 0.99], method="linear").tolist() == pytest.approx([ul["p50_ns"], ul["p99_ns"]])
    # PFCP pairs are control rows with their latency.
    pf = a.con.table("control_events").filter(lambda t: t.kind == "pfcp_pair").to_pandas()
    assert len(pf) == meta["pfcp"]["pairs"] > 0
    assert (pf.value > 0).all()
    assert {json.loads(d)["message"] for d in pf.detail} >= {"heartbeat"}

    r = scout_cmd("report", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "report" / "index.html").exists()


def test_bad_captures_get_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "notacapture.pcap"
    bad.write_bytes(b"hello, this is text\n")
    r = scout_cmd("ingest", "pcap", str(bad), "-o", str(tmp_path / "x"))
    assert r.returncode != 0
    assert "notacapture.pcap: byte 0: not a capture: magic" in r.stderr
    short = tmp_path / "short.pcap"
    short.write_bytes(bytes.fromhex("d4c3b2a1020004000000000000000000ffff0000010000000000000000000000"))
    r = scout_cmd("ingest", "pcap", str(short), "-o", str(tmp_path / "y"))
    # Its only record cut short: not a success with 0 frames, but an error that says what the
    # file held and where it stops being readable.
    assert r.returncode == 1, r.stderr
    assert "no packets to read" in r.stderr and "unreadable from byte 24" in r.stderr, r.stderr
    assert not (tmp_path / "y").exists()
    # After a whole record, the same cut is damage: counted, said with its byte offset, and exit
    # status 3 (the run keeps what was readable; --keep-going makes it 0).
    frame = bytes(60)
    rec = bytes.fromhex("0100000000000000") + len(frame).to_bytes(4, "little") * 2 + frame
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(short.read_bytes()[:24] + rec + rec[:20])
    r = scout_cmd("ingest", "pcap", str(cut), "-o", str(tmp_path / "z"))
    assert r.returncode == 3, r.stderr
    assert "damaged:" in r.stdout and f"at byte {24 + len(rec)}" in r.stdout
    meta = json.loads((tmp_path / "z" / "run.json").read_text())
    assert meta["pcap"]["files"][0]["truncated_records"] == 1


def test_capture_oddities_are_said_in_the_summary_and_the_report(tmp_path: Path) -> None:
    """A GTP-U length field that disagrees with its datagram, a PFCP message seen at two capture
    points and a pcapng block without packets: each decoded or skipped as documented, and said."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))
    import seeds  # the fuzz seeds' packet builders

    ps = seeds.packets()
    frames, changed = [], 0
    for t, p, side in ps:
        if side == "n3" and p[9] == 17 and p[28 + 1] == 0xFF:  # a G-PDU: add 4 to its length field
            changed += 1
            g = bytearray(p)
            g[28 + 2 : 28 + 4] = (int.from_bytes(g[30:32], "big") + 4).to_bytes(2, "big")
            p = bytes(g)
        frames.append((t, seeds.eth(p), side))
        if side is None:  # PFCP: seen again at a second capture point, 10 µs later
            frames.append((t + 10_000, seeds.eth(p), side))
    frames.sort(key=lambda f: f[0])
    cap = tmp_path / "odd.pcapng"
    cap.write_bytes(seeds.pcapng(frames))
    out = tmp_path / "run"
    r = scout_cmd("ingest", "pcap", str(cap), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert changed == 9  # 8 G-PDUs and the first fragment of a fragmented one
    assert f"GTP-U length field disagrees with the datagram in {changed} message(s)" in r.stdout, r.stdout
    assert "unmatched: N3 0, N6 0" in r.stdout, r.stdout  # every G-PDU still paired
    assert "4 messages, 1 request/response pairs" in r.stdout and "(4 duplicate sightings" in r.stdout, r.stdout
    assert "1 custom" in r.stdout, r.stdout
    from scout.report.tables import inputs_table

    t = inputs_table(json.loads((out / "run.json").read_text()))
    what = " | ".join(t.what)
    assert "GTP-U length field disagrees" in what and "PFCP messages seen again" in what and "custom" in what, what


def test_probe_reports_bad_interfaces_clearly(tmp_path: Path) -> None:
    r = scout_cmd("probe", "--n3", "nosuchns:eth0", "--n6", "nosuchns:eth1", "-o", str(tmp_path / "p"), "--duration", "1")
    assert r.returncode != 0
    if os.geteuid() != 0:
        assert "needs root" in r.stderr
    else:
        assert "network namespace nosuchns (/var/run/netns/nosuchns)" in r.stderr, r.stderr
    r = scout_cmd("probe", "--n3", "a:x", "--n3", "b:y", "--n6", "a:z", "-o", str(tmp_path / "q"))
    assert r.returncode != 0 and "once per UPF" in r.stderr
