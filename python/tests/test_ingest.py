"""`scout ingest srsran` on the real srsRAN fixtures, then `scout analyze` and `scout report` unchanged."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from helpers import scout_cmd

import scout

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "srsran"
LOG_23_10 = FIXTURES / "srsran-23.10-info-drb.gnb.log"

needs_fixtures = pytest.mark.skipif(
    not LOG_23_10.exists(), reason=f"{FIXTURES} not found (the shared fixtures sit beside the project in CI)"
)


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
    # The release, from the formats of its lines (23.10: no du= in RLC prefixes, cell= in SCHED).
    assert meta["srsran"]["release_from_formats"] == "23.10" and meta["srsran"]["commit"] == "374200d"
    assert "release from the line formats: 23.10" in r.stdout
    # One UE: its CU-UP index bound to its DU index (and C-RNTI) by its own traffic.
    ids = meta["ue_identity"]
    assert [(b["cu_up_ue"], b["ue"], b["c_rnti"]) for b in ids["bindings"]] == [(0, 0, "0x4601")]
    assert ids["unbound_cu_up_ues"] == []

    a = scout.open(out)
    pe = a.con.table("packet_events")
    # Counts of events per layer equal counts of the corresponding lines.
    n_pdcp = count_lines(LOG_23_10, "[PDCP", "DRB1 DL: TX PDU. type=data")
    n_gtpu = count_lines(LOG_23_10, "[GTPU", " DL teid=", "RX SDU.")
    n_rlc_sdu = count_lines(LOG_23_10, "[RLC", "DRB1 DL: TX SDU.")
    n_rlc_pdu = count_lines(LOG_23_10, "[RLC", "DRB1 DL: TX PDU. dc=data") + count_lines(
        LOG_23_10, "[RLC", "DRB1 DL: RETX PDU. dc=data"
    )
    dl = pe.filter(pe.dir == "dl")
    got = dl.group_by(["layer", "point"]).agg(n=dl.count()).to_pandas().set_index(["layer", "point"]).n.to_dict()
    assert got[("pdcp", "proc_end")] == n_pdcp > 100
    assert got[("gtpu", "proc_end")] == n_gtpu
    assert got[("rlc", "enqueue")] == n_rlc_sdu
    unlinked = meta["counts"]["skipped_inputs"]["unlinked_lines"].get("rlc_pdu_without_sdu", 0)
    assert got[("rlc", "segment")] == n_rlc_pdu - unlinked

    # Every PDCP packet reaches RLC and a MAC transmission; segments sum to the SDU.
    j = a.journeys.to_pandas().set_index("pkt")
    j = j[j.dir == "dl"]
    assert len(j) == n_pdcp
    tx = pe.filter((pe.layer == "mac") & (pe.point == "tx") & (pe.dir == "dl")).select("pkt").distinct().count().execute()
    assert tx == n_pdcp
    seg = pe.filter((pe.layer == "rlc") & (pe.point == "segment") & (pe.retx == 0) & (pe.dir == "dl"))
    sums = seg.group_by("pkt").agg(b=seg.bytes.sum(), last=seg.seg_last.any()).to_pandas().set_index("pkt")
    enq = pe.filter((pe.layer == "rlc") & (pe.point == "enqueue")).select("pkt", "bytes").to_pandas().set_index("pkt")
    done = sums[sums["last"]]
    assert len(done) > 100
    assert (done.b == enq.loc[done.index].bytes).all()

    # Attribution: components sum to each packet's measured span; missing points are unattributed.
    cl = a.summary["closure"]
    assert cl["span_n"] == cl["span_closed"] == len(a.journeys.to_pandas())
    assert a.summary["profile_population"] == "observed"
    comps = set(map(tuple, a.components.select("layer", "component").distinct().to_pandas().values))
    assert ("rlc", "queueing_protocol") in comps and ("mac", "scheduling") in comps

    r = scout_cmd("report", str(out))
    assert r.returncode == 0, r.stderr
    page = (out / "report" / "index.html").read_text()
    # What was not used is in the report too, by cause, with its first file:line.
    assert "Input lines not used" in page and f"{LOG_23_10}:" in page
    assert "not turned into events: RLC: Handled status report" in page
    # The log's two UE contexts (the second reuses DU and CU-CP index 0) are two UEs, each listed.
    conns = [c for c in meta["ue_identity"]["connections"] if not c["implicit"]]
    assert [(c["ue"], c["c_rnti"], c["du_ue"], c["cu_cp_ue"]) for c in conns] == [(0, "0x4601", 0, 0), (1, "0x4602", 0, 0)]
    assert set(pe.select("ue").distinct().to_pandas().ue) <= {0, 1}
    assert "UE connections" in page and "0x4602" in page


@needs_fixtures
def test_uplink_journeys_and_slot_rows_match_the_log_lines(tmp_path: Path) -> None:
    out = tmp_path / "sr"
    r = scout_cmd("ingest", "srsran", str(LOG_23_10), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "UL grants" in r.stdout
    meta = json.loads((out / "run.json").read_text())
    text = LOG_23_10.read_text().splitlines()

    def n(*needles: str) -> int:
        return sum(1 for line in text if all(x in line for x in needles))

    a = scout.open(out)
    pe = a.con.table("packet_events")
    ul = pe.filter(pe.dir == "ul")
    got = ul.group_by(["layer", "point"]).agg(n=ul.count()).to_pandas().set_index(["layer", "point"]).n.to_dict()
    reord = sum(int(line.split("queued_sdus=")[1]) for line in text if "DRB1 UL: Reordering timer expired" in line)
    assert got[("rlc", "segment")] == n("[RLC", "DRB1 UL: RX PDU.", "dc=data") > 100
    assert got[("rlc", "deliver")] == n("[RLC", "DRB1 UL: RX SDU. sn=")
    assert got[("pdcp", "proc_begin")] == n("[PDCP", "DRB1 UL: RX PDU. type=data")
    assert got[("pdcp", "deliver")] == n("[PDCP", "DRB1 UL: RX SDU. count=") + reord
    assert got[("gtpu", "proc_end")] == n("[GTPU", " UL teid=", "TX PDU.")
    # Every UL packet that reaches GTP-U crossed RLC and PDCP in order, with the bytes checked:
    # GTP-U PDU = PDCP SDU + 16 (GTP-U header with the PDU session container).
    ev = ul.order_by(["pkt", "t_ns"]).to_pandas()
    gt = ev[(ev.layer == "gtpu")].pkt
    assert len(gt) > 100
    for pkt, g in ev[ev.pkt.isin(gt)].groupby("pkt"):
        steps = [(la, po) for la, po in zip(g.layer, g.point, strict=True) if po not in ("segment", "tx", "rx")]
        assert steps == [("rlc", "deliver"), ("pdcp", "proc_begin"), ("pdcp", "deliver"), ("gtpu", "proc_end")], pkt
        assert g.point.iloc[0] in ("tx", "segment")
    ul_tx = [line for line in text if " UL teid=" in line and "TX PDU." in line]
    gtpu_lens = sorted(int(line.split("pdu_len=")[1].split()[0]) - 16 for line in ul_tx)
    # Each segment's transport block: its PUSCH attempts (HARQ retransmissions after crc=KO) and
    # its decoding; every UL segment that came in a decoded block has both.
    harq = ev[(ev.layer == "mac") & (ev.point == "tx")]
    assert (harq.retx > 0).sum() > 0 and (ev[(ev.layer == "phy") & (ev.point == "rx")].pkt.nunique() > 100)
    assert sorted(ev[ev.layer == "gtpu"].bytes) == gtpu_lens
    # Every link the stitcher checks held: only one segment arrived before its SDU's first.
    assert meta["counts"]["skipped_inputs"]["unlinked_lines"] == {"ul_rlc_segment_before_first": 1}
    assert meta["ingest"]["pending_at_end"] == 0
    # Drops: the same in the events, in run.json and in the analysis.
    drops = a.drops.to_pandas()
    assert int(drops["count"].sum()) == sum(v for r in meta["counts"]["drops"].values() for v in r.values()) == 16

    # Slots: one row per grant in the SCHED lines; the UL ones carry their PUSCH CRC.
    se = a.con.table("slot_events").to_pandas()
    grants = se[se.prbs > 0]
    assert (grants.dir == "dl").sum() == sum(line.count("DL: ue=") for line in text if "Slot decisions" in line)
    n_ul = sum(line.count("UL: ue=") for line in text if "Slot decisions" in line)
    assert (grants.dir == "ul").sum() == n_ul
    ulg = grants[grants.dir == "ul"]
    assert (ulg.ack == True).sum() == n("PUSCH:", "crc=OK")  # noqa: E712
    assert (ulg.ack == False).sum() == n("PUSCH:", "crc=KO")  # noqa: E712
    assert se.bsr_bytes.notna().sum() == meta["ingest"]["slots"]["bsr_reports"] > 100
    assert meta["ingest"]["slots"]["slots_per_frame"] == 10  # 15 kHz: slot indexes 0-9
    # Absolute slots unwrap the SFN: slot = frames since the first stamped line x 10 + slot index.
    assert ((se.slot % 10) == se.slot_in_frame).all()
    assert ((se.sfn - se.slot // 10) % 1024).nunique() == 1
    tti = a.tti.to_pandas()
    assert set(tti.harq.dropna()) == {"ack", "nack"}


CU_LOGGERS = {"GTPU", "PDCP", "SDAP", "CU-CP", "CU-UP", "NGAP", "RRC", "CU-UP-E1", "CU-CP-E1", "CU-CP-F1", "GNB", "ALL"}


@needs_fixtures
def test_split_cu_du_and_rotated_logs_give_the_same_run(tmp_path: Path) -> None:
    """The 23.10 log cut into a CU-side and a DU-side file (given in either order), and into two
    rotated halves (the second also gzip-compressed, as logrotate leaves it), ingests to the same
    events and links as the single file: each file is read on a thread of its own and their
    entries merged by time."""
    lines = LOG_23_10.read_text().splitlines(keepends=True)
    cu, du, side = [], [], None
    for line in lines:
        if line[:4].isdigit():
            side = cu if line[28:38].split("]")[0].strip() in CU_LOGGERS else du
        (side if side is not None else cu).append(line)
    half = len(lines) // 2
    files = {"cu": cu, "du": du, "rot1": lines[:half], "rot2": lines[half:]}
    for name, content in files.items():
        (tmp_path / f"{name}.log").write_text("".join(content))
    (tmp_path / "rot2gz.log").write_bytes(gzip.compress("".join(files["rot2"]).encode()))
    runs = {
        "one": [LOG_23_10],
        "cu_du": ["cu", "du"],
        "du_cu": ["du", "cu"],
        "rotated": ["rot1", "rot2"],
        "rotated_gz": ["rot1", "rot2gz"],
    }
    cols = "t_ns, node, layer, point, dir, ue, drb, sn, seg_offset, bytes, retx, reason"
    metas = {}
    for run, logs in runs.items():
        paths = [str(x) if isinstance(x, Path) else str(tmp_path / f"{x}.log") for x in logs]
        r = scout_cmd("ingest", "srsran", *paths, "-o", str(tmp_path / run))
        assert r.returncode == 0, r.stderr
        metas[run] = json.loads((tmp_path / run / "run.json").read_text())
    for run in ("cu_du", "du_cu", "rotated", "rotated_gz"):
        assert (
            metas[run]["counts"]["skipped_inputs"]["unlinked_lines"] == metas["one"]["counts"]["skipped_inputs"]["unlinked_lines"]
        )
        assert metas[run]["ingest"]["packets"] == metas["one"]["ingest"]["packets"]
        for t in ("packet", "slot", "control"):
            q1 = f"SELECT {cols if t == 'packet' else '*'} FROM '{tmp_path / 'one' / 'events' / f'{t}.parquet'}'"
            q2 = f"SELECT {cols if t == 'packet' else '*'} FROM '{tmp_path / run / 'events' / f'{t}.parquet'}'"
            if t == "control":
                q1, q2 = (q.replace("*", "t_ns, kind, sn, value") for q in (q1, q2))
            diff = duckdb.sql(f"SELECT count(*) FROM (({q1}) EXCEPT ALL ({q2}))").fetchone()[0]
            diff += duckdb.sql(f"SELECT count(*) FROM (({q2}) EXCEPT ALL ({q1}))").fetchone()[0]
            assert diff == 0, (run, t)


@needs_fixtures
def test_more_rotated_logs_than_open_files_allowed(tmp_path: Path) -> None:
    """The 23.10 log cut into 600 rotated files ingests, with at most 64 files open, to the events
    of the single file: a log waits closed until the merge reaches it (then it is opened again)."""
    import resource

    lines = LOG_23_10.read_text().splitlines(keepends=True)
    step = -(-len(lines) // 600)
    paths = []
    for k in range(0, len(lines), step):
        paths.append(tmp_path / f"gnb.log.{k // step:04d}")
        paths[-1].write_text("".join(lines[k : k + step]))
    assert len(paths) >= 500

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    r = subprocess.run(
        [sys.executable, "-m", "scout.cli", "ingest", "srsran", *map(str, paths), "-o", str(tmp_path / "rotated")],
        capture_output=True,
        text=True,
        preexec_fn=limit,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    one = scout_cmd("ingest", "srsran", str(LOG_23_10), "-o", str(tmp_path / "one"))
    assert one.returncode == 0, one.stderr
    a, b = (json.loads((tmp_path / x / "run.json").read_text()) for x in ("one", "rotated"))
    assert a["counts"]["events"] == b["counts"]["events"] and a["ingest"]["packets"] == b["ingest"]["packets"]
    assert len(b["ingest"]["files"]) == len(paths)


def write_event_trace(trace: Path) -> Path:
    """An srsRAN event-tracer file as srsRAN writes it (`"pid": {}`, one event per line, no closing
    bracket after a crash): 200 CU-UP DL executor tasks whose wait grows, an instant event carrying
    the UTC time of day (process start 0.5 s before the log's first entry), and a line cut short."""
    ev = []
    for k in range(200):
        ts = 7_000_000 + k * 5_000
        ev.append(
            f'{{"args": {{}}, "pid": {{}}, "cpu": 1, "tid": "cu_up#0", "dur": {10 + k}, "ts": {ts}, '
            f'"cat": "process", "ph": "X", "name": "cu_up_ue_dl_exec_0_enqueue"}}'
        )
        ev.append(
            f'{{"args": {{}}, "pid": {{}}, "cpu": 1, "tid": "cu_up#0", "dur": 20, "ts": {ts + 10 + k}, '
            f'"cat": "process", "ph": "X", "name": "cu_up_ue_dl_exec_0_run"}}'
        )
    # The log's first entry is 20:04:25.872601; process start 0.5 s before it.
    ev.append(
        '{"args": {"tstamp": "20:04:33.372601"}, "pid": {}, "cpu": 0, "tid": "l1", "ts": 8000000, '
        '"cat": "process", "ph": "i", "s": "g", "name": "on_late_resource_grid"}'
    )
    trace.write_text("[\n" + ",\n".join(ev) + ',\n{"args": {}, "pid": {}, "ts": 9')
    return trace


@needs_fixtures
def test_event_tracer_file_becomes_executor_rows_on_the_log_clock(tmp_path: Path) -> None:
    trace = write_event_trace(tmp_path / "gnb_trace.json")
    out = tmp_path / "sr"
    r = scout_cmd("ingest", "srsran", str(LOG_23_10), "--trace", str(trace), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "400 executor tasks" not in r.stdout and "200 executor tasks" in r.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["trace"]["bad_lines"] == 1 and meta["trace"]["aligned_by"].startswith("tstamp")
    a = scout.open(out)
    ce = a.con.table("control_events").to_pandas()
    q = ce[ce.kind == "exec_queueing"]
    assert len(q) == 200
    # ts 7 s after a process start 0.5 s before the log's first entry: 6.5 s into the run.
    assert q.t_ns.min() == 6_500_000_000
    ex = a.executors.to_pandas()
    whole = ex[ex.window_start_ns.isna()].set_index("executor").loc["cu_up_ue_dl_exec_0"]
    assert whole.tasks == 200 and whole.wait_max_ns == 209_000 and whole.run_mean_ns == 20_000
    assert whole.layer == "cuup_exec" and whole.node == "gnb_cu"
    binned = ex[ex.window_start_ns.notna()]
    assert binned.tasks.sum() == 200 and binned.wait_mean_ns.is_monotonic_increasing
    r = scout_cmd("report", str(out))
    assert r.returncode == 0, r.stderr
    assert "cu_up_ue_dl_exec_0" in (out / "report" / "index.html").read_text()


def write_metrics(mf: Path) -> Path:
    """srsRAN JSON metrics written from the 23.10 fixture's own lines (what srsRAN would report each
    second: RLC TX/RX SDUs of DRB 1, a scheduler dl_brate per UE) and one line of garbage."""
    from datetime import datetime, timezone

    def t_of(line: str) -> float:
        return datetime.strptime(line[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()

    text = LOG_23_10.read_text().splitlines()
    tx = [t_of(x) for x in text if "[RLC" in x and "DRB1 DL: TX SDU." in x]
    rx = [t_of(x) for x in text if "[RLC" in x and "DRB1 UL: RX SDU. sn=" in x]
    start = int(min(tx + rx)) + 1
    end = int(max(tx + rx)) + 1
    lines = []
    for s in range(start, end + 1):
        n_tx = sum(1 for t in tx if s - 1 < t <= s)
        n_rx = sum(1 for t in rx if s - 1 < t <= s)
        m = {"du_id": 0, "ue_id": 0, "drb_id": 1, "tx": {"num_sdus": n_tx}, "rx": {"num_sdus": n_rx}}
        lines.append(json.dumps({"timestamp": float(s), "rlc_metrics": m}))
    for sec in range(start, end + 1):
        ue = {"ue": 0, "dl_brate": 5e4}
        lines.append(json.dumps({"timestamp": float(sec), "cells": [{"cell_metrics": {}, "ue_list": [ue]}]}))
    lines.append("garbage")
    mf.write_text("\n".join(lines) + "\n")
    return mf


@needs_fixtures
def test_metrics_json_is_kept_and_cross_checked_against_the_packets(tmp_path: Path) -> None:
    """RLC metrics written from the fixture's own lines (what srsRAN would report each second) agree
    exactly with Scout's per-packet reconstruction; a report that disagrees shows its ratio."""
    mf = write_metrics(tmp_path / "metrics.jsonl")
    text = LOG_23_10.read_text().splitlines()
    lines = mf.read_text().splitlines()
    tx = [x for x in text if "[RLC" in x and "DRB1 DL: TX SDU." in x]
    rx = [x for x in text if "[RLC" in x and "DRB1 UL: RX SDU. sn=" in x]
    out = tmp_path / "sr"
    r = scout_cmd("ingest", "srsran", str(LOG_23_10), "--metrics", str(mf), "-o", str(out))
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "run.json").read_text())
    assert meta["metrics"]["bad_lines"] == 1 and meta["metrics"]["objects"] == len(lines) - 1
    a = scout.open(out)
    mc = a.metrics_check.to_pandas().set_index("check")
    assert mc.loc["RLC TX SDUs", "metrics_value"] == len(tx) > 100
    assert mc.loc["RLC TX SDUs", "ratio"] == 1.0
    assert mc.loc["RLC RX SDUs", "metrics_value"] == len(rx) > 100
    assert mc.loc["RLC RX SDUs", "ratio"] == 1.0
    assert mc.loc["DL bit rate", "scout_value"] > 0
    r = scout_cmd("report", str(out))
    assert r.returncode == 0, r.stderr
    assert "srsRAN metrics vs per-packet results" in (out / "report" / "index.html").read_text()


def test_bad_logs_get_clear_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.log"
    r = scout_cmd("ingest", "srsran", str(missing), "-o", str(tmp_path / "x"))
    assert r.returncode != 0 and "nope.log" in r.stderr
    empty = tmp_path / "empty.log"
    empty.write_text("no srsRAN lines here\n")
    r = scout_cmd("ingest", "srsran", str(empty), "-o", str(tmp_path / "y"))
    assert r.returncode != 0 and "empty.log" in r.stderr and "no srsRAN log entries" in r.stderr


LOG_24_10 = FIXTURES / "srsran-24.10-debug-srb.gnb.log"


@needs_fixtures
def test_a_recorded_srsran_radio_replays_in_the_simulator(tmp_path: Path) -> None:
    """`channel.model: replay` on an ingested srsRAN run: the simulated UE's DL goes at the MCSs
    srsRAN chose and fails as its HARQ-ACKs did, its UL carries the PUSCH SINR srsRAN measured;
    the summary and run.json say what was replayed; an info-level log (no DL MCS) is refused by key."""
    r = scout_cmd("ingest", "srsran", str(LOG_24_10), "-o", str(tmp_path / "rec"))
    assert r.returncode == 0, r.stderr
    rec = tmp_path / "rec" / "events" / "slot.parquet"
    recorded = (
        duckdb.sql(
            f"SELECT dir, list(DISTINCT mcs) AS mcs, list(DISTINCT sinr_db) AS sinr, "
            f"count(*) FILTER (retx_index = 0 AND ack IS NOT NULL) AS n, "
            f"count(*) FILTER (retx_index = 0 AND ack = false) AS nacks "
            f"FROM '{rec}' WHERE ue = 0 AND (mcs IS NOT NULL OR ack IS NOT NULL) GROUP BY dir"
        )
        .to_df()
        .set_index("dir")
    )
    scenario = tmp_path / "replay.yaml"
    scenario.write_text(
        "name: replay\nduration_s: 6\ncell_cfg: {channel_bandwidth_MHz: 20, common_scs: 30}\n"
        "ues: [{count: 1, channel: {model: replay, run: rec}}]\n"
        "traffic: [{type: udp_cbr, ue: 0, dir: dl, rate_mbps: 5}, {type: udp_cbr, ue: 0, dir: ul, rate_mbps: 1}]\n"
    )
    r = scout_cmd("simulate", str(scenario), "-o", str(tmp_path / "sim"))
    assert r.returncode == 0, r.stderr
    dl = recorded.loc["dl"]
    assert f"radio: UE 0 replays UE 0 of rec (DL {dl.n} first transmissions" in r.stdout, r.stdout
    sim = tmp_path / "sim" / "events" / "slot.parquet"
    got = (
        duckdb.sql(
            f"SELECT dir, list(DISTINCT mcs) AS mcs, list(DISTINCT sinr_db) AS sinr, count(*) AS n "
            f"FROM '{sim}' WHERE ue = 0 AND retx_index = 0 GROUP BY dir"
        )
        .to_df()
        .set_index("dir")
    )
    assert got.loc["dl"].n > 1000
    # Every DL TB at an MCS srsRAN used; the UL at srsRAN's PUSCH SINR (its ZMQ radio's 97 dB).
    assert set(got.loc["dl"].mcs) <= {int(m) for m in dl.mcs}, (got.loc["dl"].mcs, dl.mcs)
    assert set(got.loc["ul"].sinr) == {float(s) for s in recorded.loc["ul"].sinr if s == s}
    meta = json.loads((tmp_path / "sim" / "run.json").read_text())
    rp = meta["radio"][0]["replay"]
    assert (rp["run"], rp["dl"]["with_outcome"], rp["dl"]["first_tx_nacks"]) == ("rec", dl.n, dl.nacks)
    # An info-level log has no DL MCS: refused, naming the key and what is missing.
    r = scout_cmd("ingest", "srsran", str(LOG_23_10), "-o", str(tmp_path / "info"))
    assert r.returncode == 0, r.stderr
    scenario.write_text(scenario.read_text().replace("run: rec", "run: info, replay_ue: 0"))
    r = scout_cmd("simulate", str(scenario), "-o", str(tmp_path / "sim2"))
    assert r.returncode != 0
    assert "ues[0].channel.run" in r.stderr and "no first transmission with an MCS" in r.stderr, r.stderr
