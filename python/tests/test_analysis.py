"""The analysis engine: exact answers on synthetic events, closure on every built-in scenario, bad runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import scout_cmd, shared_fixture

import scout
from scout import analysis
from scout.analysis.derived import OVERLOAD_REASONS
from scout.events import TABLES, RunError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def schemas(tmp_path_factory) -> dict[str, pa.Schema]:
    """The writer's Arrow schemas, read from a tiny simulated run (one definition: the Rust writer)."""
    out = tmp_path_factory.mktemp("schema") / "run"
    r = scout_cmd("simulate", "mixed", "-o", str(out), "--duration", "0.05")
    assert r.returncode == 0, r.stderr
    return {name: pq.read_schema(out / "events" / f) for name, f in TABLES.items()}


def write_run(path: Path, schemas: dict, packets: list[dict], slots=(), controls=(), **meta) -> Path:
    """A run directory holding exactly the given events (unset columns are null / 0)."""
    (path / "events").mkdir(parents=True)
    defaults = {"retx": 0, "ecn": 0, "ue": 0, "flow": 0, "bytes": 100, "slice": "default", "dir": "dl"}
    rows = {"packet_events": packets, "slot_events": list(slots), "control_events": list(controls)}
    for name, f in TABLES.items():
        schema = schemas[name]
        full = []
        for r in rows[name]:
            d = {k: None for k in schema.names}
            for k, v in defaults.items():
                if k in d and not schema.field(k).nullable:
                    d[k] = v
            d.update(r)
            full.append(d)
        pq.write_table(pa.Table.from_pylist(full, schema=schema), path / "events" / f)
    m = {
        "schema_version": 1,
        "source": "synthetic",
        "complete": True,
        "duration_s": meta.pop("duration_s", 1.0),
        "counts": {"events": {k: len(v) for k, v in rows.items()}},
    }
    m.update(meta)
    (path / "run.json").write_text(json.dumps(m))
    return path


def ev(t, node, layer, point, pkt, **kw) -> dict:
    return {"t_ns": t, "node": node, "layer": layer, "point": point, "pkt": pkt, **kw}


def dl_packet(pkt: int, t0: int = 0) -> list[dict]:
    """A DL packet with every kind of interval; its attribution is worked out by hand below."""
    e = [
        (0, "dn", "app", "tx", {}),
        (1000, "upf", "n6", "arrive", {}),
        (1000, "upf", "upf", "enqueue", {"queue": "upf_exec", "queue_bytes": 100, "queue_pkts": 1}),
        (1500, "upf", "upf", "proc_begin", {}),
        (1800, "upf", "upf", "proc_end", {}),
        (2800, "gnb_cu", "n3", "arrive", {}),
        (2800, "gnb_cu", "gtpu", "enqueue", {"queue": "gtpu_rx_exec", "queue_bytes": 144, "queue_pkts": 1}),
        (3000, "gnb_cu", "gtpu", "proc_begin", {}),
        (3200, "gnb_cu", "gtpu", "proc_end", {}),
        (3200, "gnb_cu", "cuup_exec", "enqueue", {"queue": "cuup_exec", "queue_bytes": 100, "queue_pkts": 1}),
        (3700, "gnb_cu", "pdcp", "proc_begin", {}),
        (4000, "gnb_cu", "pdcp", "proc_end", {"sn": 7}),
        (4500, "gnb_du", "f1u", "arrive", {"sn": 7}),
        (4500, "gnb_du", "rlc", "enqueue", {"queue": "rlc_sdu", "queue_bytes": 5000, "queue_pkts": 4}),
        (9000, "gnb_du", "rlc", "hol", {"queue": "rlc_sdu", "queue_bytes": 103, "queue_pkts": 1}),
        (10000, "gnb_du", "rlc", "segment", {"seg_offset": 0, "seg_last": False, "bytes": 60}),
        (10071, "gnb_du", "mac", "tx", {"seg_offset": 0, "bytes": 60}),
        (10500, "ue", "phy", "rx", {"seg_offset": 0, "bytes": 60}),
        (11000, "gnb_du", "rlc", "segment", {"seg_offset": 60, "seg_last": True, "bytes": 43}),
        (11071, "gnb_du", "mac", "tx", {"seg_offset": 60, "bytes": 43}),
        (13071, "gnb_du", "mac", "tx", {"seg_offset": 60, "bytes": 43, "retx": 1}),
        (13500, "ue", "phy", "rx", {"seg_offset": 60, "bytes": 43, "retx": 1}),
        (13500, "ue", "rlc", "deliver", {}),
        (15000, "ue", "pdcp", "deliver", {}),
        (15000, "ue", "app", "deliver", {}),
    ]
    # Emission order is not time order (as in real runs): shuffle deterministically.
    rows = [ev(t0 + t, n, la, p, pkt, **kw) for t, n, la, p, kw in e]
    return rows[1::2] + rows[0::2]


DL_EXPECTED = {
    ("n6", "transport"): 1000,
    ("upf", "queueing_compute"): 500,
    ("upf", "processing"): 300,
    ("n3", "transport"): 1000,
    ("gtpu", "queueing_compute"): 200,
    ("gtpu", "processing"): 200,
    ("pdcp", "queueing_compute"): 500,
    ("pdcp", "processing"): 300,
    ("f1u", "transport"): 500,
    ("rlc", "queueing_protocol"): 4500,
    ("mac", "scheduling"): 1000 + 71 + 500 + 71,
    ("phy", "transport"): 429 + 429,
    ("mac", "retransmission"): 2000,
    ("pdcp", "reordering"): 1500,
}


@pytest.fixture
def synthetic(tmp_path: Path, schemas) -> Path:
    return synthetic_run(tmp_path, schemas)


def synthetic_run(tmp_path: Path, schemas) -> Path:
    packets = dl_packet(1)
    # Ten simple packets with known delays: app tx -> n6 arrive -> app deliver (the last hop is unmeasured).
    delays = [3000, 1000, 7000, 2000, 9000, 4000, 10000, 5000, 6000, 8000]
    for i, d in enumerate(delays):
        pkt = 100 + i
        t = 20_000 + i * 1000
        packets += [
            ev(t, "dn", "app", "tx", pkt, flow=1),
            ev(t + 400, "upf", "n6", "arrive", pkt, flow=1),
            ev(t + d, "ue", "app", "deliver", pkt, flow=1),
        ]
    # A packet dropped by PDCP early drop, and one still in flight at the end.
    packets += [
        ev(50_000, "dn", "app", "tx", 200, flow=2, ue=1),
        ev(51_000, "gnb_cu", "pdcp", "drop", 200, flow=2, ue=1, reason="pdcp_early_drop"),
        ev(52_000, "dn", "app", "tx", 201, flow=2, ue=1),
        ev(53_000, "gnb_du", "rlc", "enqueue", 201, flow=2, ue=1, queue="rlc_sdu", queue_bytes=100, queue_pkts=1),
    ]
    controls = [{"t_ns": 60_000, "node": "gnb_du", "layer": "rlc", "kind": "in_flight", "sn": 201, "value": 100.0}]
    slots = [
        {"t_ns": 10000, "slot": 20, "sfn": 0, "slot_in_frame": 20, "dir": "dl", "ue": 0, "prbs": 10, "mcs": 20,
         "tbs": 60, "harq_id": 0, "retx_index": 0, "ack": True},
        {"t_ns": 10000, "slot": 20, "sfn": 0, "slot_in_frame": 20, "dir": "dl", "prbs": 10, "prbs_used": 10,
         "prbs_total": 40, "nof_ues_scheduled": 1},
    ]  # fmt: skip
    return write_run(tmp_path / "syn", schemas, packets, slots, controls)


def test_components_are_exact_on_a_hand_worked_packet(synthetic: Path) -> None:
    a = scout.open(synthetic)
    c = a.components.filter(a.components.pkt == 1).to_pandas()
    got = {(r.layer, r.component): int(r.ns) for r in c.itertuples()}
    assert got == DL_EXPECTED
    j = a.journeys.filter(a.journeys.pkt == 1).to_pandas().iloc[0]
    assert j.status == "delivered" and j.delay_ns == 15000 == sum(DL_EXPECTED.values())
    assert (j.segments, j.harq_retx, j.rlc_retx, j.t_in_ns, j.t_out_ns) == (2, 1, 0, 0, 15000)


def test_an_uplink_pdcp_hold_is_reordering_though_gtpu_enqueues_at_the_same_time(tmp_path: Path, schemas) -> None:
    """At the CU-UP an uplink PDCP delivery and the GTP-U enqueue it causes share a timestamp; the
    hold before them is PDCP's reordering (it was `gtpu unattributed` while deliveries sorted last,
    seen on the first emulated TCP runs)."""
    e = [
        (0, "ue", "app", "tx"), (0, "ue", "pdcp", "proc_end"), (0, "ue", "rlc", "enqueue"),
        (16000, "ue", "rlc", "hol"), (16000, "ue", "rlc", "segment"), (16035, "ue", "mac", "tx"),
        (16500, "gnb_du", "phy", "rx"), (16500, "gnb_du", "rlc", "deliver"), (16550, "gnb_cu", "f1u", "arrive"),
        (16550, "gnb_cu", "cuup_exec", "enqueue"), (16550, "gnb_cu", "pdcp", "proc_begin"),
        (16557, "gnb_cu", "pdcp", "proc_end"), (21000, "gnb_cu", "pdcp", "deliver"), (21000, "gnb_cu", "gtpu", "enqueue"),
        (21003, "gnb_cu", "gtpu", "proc_begin"), (21008, "gnb_cu", "gtpu", "proc_end"), (21200, "upf", "n3", "arrive"),
        (21200, "upf", "upf", "enqueue"), (21208, "upf", "upf", "proc_begin"), (21212, "upf", "upf", "proc_end"),
        (22212, "dn", "n6", "arrive"), (22212, "dn", "app", "deliver"),
    ]  # fmt: skip
    kw = {"enqueue": {"queue": "q", "queue_bytes": 100, "queue_pkts": 1}}
    rows = [ev(t, n, la, p, 1, dir="ul", **kw.get(p, {})) for t, n, la, p in e]
    for engine in ("native", "ibis"):
        run = write_run(tmp_path / engine, schemas, rows[::-1])
        analysis.analyze(run, engine=engine)
        c = scout.open(run).components.to_pandas()
        got = {(r.layer, r.component): int(r.ns) for r in c.itertuples() if r.ns}
        assert got.get(("pdcp", "reordering")) == 21000 - 16557, (engine, got)
        assert not any(k[1] == "unattributed" for k in got), (engine, got)
        assert sum(got.values()) == 22212


def test_unmeasured_hops_are_unattributed_and_closure_still_holds(synthetic: Path) -> None:
    a = scout.open(synthetic)
    c = a.components.filter(a.components.pkt == 100).to_pandas()
    got = {(r.layer, r.component): int(r.ns) for r in c.itertuples()}
    assert got == {("n6", "transport"): 400, ("app", "unattributed"): 2600}
    cl = a.summary["closure"]
    assert cl["n"] == cl["closed"] == 11
    assert cl["with_unattributed"] == 10


def test_percentiles_are_exact(synthetic: Path) -> None:
    a = scout.open(synthetic)
    p = a.profiles
    row = p.filter((p.scope == "flow") & (p.key == "1") & (p.layer == "total") & p.window_start_ns.isnull()).to_pandas()
    assert len(row) == 1
    r = row.iloc[0]
    d = np.array([3000, 1000, 7000, 2000, 9000, 4000, 10000, 5000, 6000, 8000], dtype=float)
    assert r["count"] == 10 and r.max_ns == 10000 and r.mean_ns == pytest.approx(d.mean(), abs=0)
    for name, q in analysis.engine.PERCENTILES.items():
        assert r[f"{name}_ns"] == pytest.approx(np.percentile(d, q * 100), abs=1e-6), name
    # The hand-worked packet's RLC queueing shows in the per-UE component profile.
    q = p.filter((p.scope == "ue") & (p.key == "0") & (p.layer == "rlc") & (p.component == "queueing_protocol"))
    q = q.filter(q.window_start_ns.isnull()).to_pandas().iloc[0]
    assert q.p50_ns == 4500 and q.mean_per_pkt_ns == pytest.approx(4500 / 11)


def test_fates_drops_sojourns_and_tti(synthetic: Path) -> None:
    a = scout.open(synthetic)
    j = a.journeys.to_pandas().set_index("pkt")
    assert j.loc[200].status == "dropped" and j.loc[200].drop_reason == "pdcp_early_drop"
    assert j.loc[200].drop_layer == "pdcp" and j.loc[200].span_ns == 1000
    assert j.loc[201].status == "in_flight"
    d = a.drops.to_pandas()
    assert d[["layer", "reason", "count"]].values.tolist() == [["pdcp", "pdcp_early_drop", 1]]
    s = a.sojourns.filter(a.sojourns.pkt == 1).to_pandas().set_index("queue").sojourn_ns.to_dict()
    assert s == {"upf_exec": 500, "gtpu_rx_exec": 200, "cuup_exec": 500, "rlc_sdu": 5500}
    t = a.tti.to_pandas()
    cell = t[t.ue.isna()].iloc[0]
    assert cell.utilisation == pytest.approx(0.25)
    assert t[t.ue.notna()].iloc[0].harq == "ack"


def _dl_components_us(run: Path) -> dict[tuple[str, str], float]:
    """Each (layer, component)'s time per delivered DL packet, µs."""
    import duckdb

    a = run / "analysis"
    c = duckdb.connect()
    dl = f"(SELECT pkt FROM read_parquet('{a / 'journeys.parquet'}') WHERE status = 'delivered' AND dir = 'dl')"
    (n,) = c.sql(f"SELECT count(*) FROM {dl}").fetchone()
    rows = c.sql(
        f"SELECT layer, component, sum(ns) FROM read_parquet('{a / 'components.parquet'}') JOIN {dl} USING (pkt) GROUP BY ALL"
    ).fetchall()
    return {(layer, comp): ns / n / 1e3 for layer, comp, ns in rows}


def test_attribution_scenarios_show_compute_queueing_rivalling_scheduling_at_heavy_load(tmp_path: Path) -> None:
    """SCOUT §5, fig. 4: queueing at the GTP-U and F1-U executors grows with load until it rivals
    MAC scheduling at heavy load; processing stays flat; on a single server no link dominates."""
    comp = {}
    for level in ("light", "heavy"):
        out = tmp_path / level
        r = scout_cmd("simulate", f"attribution-{level}", "-o", str(out), "--duration", "2")
        assert r.returncode == 0, r.stderr
        assert scout_cmd("analyze", str(out)).returncode == 0
        comp[level] = _dl_components_us(out)

    def queueing(level: str) -> float:
        return sum(comp[level].get((layer, "queueing_compute"), 0.0) for layer in ("gtpu", "f1u"))

    light, heavy = queueing("light"), queueing("heavy")
    scheduling = comp["heavy"][("mac", "scheduling")]
    assert heavy > 10 * light, (light, heavy)
    assert heavy > 0.5 * scheduling, f"GTP-U + F1-U queueing {heavy:.0f} µs vs scheduling {scheduling:.0f} µs"
    for level, c in comp.items():
        assert c[("gtpu", "processing")] == pytest.approx(comp["light"][("gtpu", "processing")], rel=0.1)
        assert c[("n6", "transport")] < 0.1 * max(c.values()), (level, sorted(c.items(), key=lambda x: -x[1])[:3])


@pytest.mark.parametrize(
    "scenario,duration",
    [
        ("udp-flood", 8),
        ("attribution-light", 1),
        ("attribution-medium", 1),
        ("attribution-heavy", 1),
        ("mixed", 2),
        ("capacity-trace", 6),
    ],
)
def test_attribution_closes_on_every_scenario(tmp_path: Path, scenario: str, duration: int) -> None:
    out = tmp_path / scenario
    sets = ["--set", "traffic[0].stop_s=5"] if scenario == "udp-flood" else []
    r = scout_cmd("simulate", scenario, "-o", str(out), "--duration", str(duration), *sets)
    assert r.returncode == 0, r.stderr
    r = scout_cmd("analyze", str(out))
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "analysis" / "summary.json").read_text())
    cl = s["closure"]
    assert cl["n"] > 100
    assert cl["closed"] == cl["n"], cl
    assert cl["with_unattributed"] == 0 and cl["unattributed_ns"] == 0
    # Dropped packets too: a worker's time before it dropped one is its processing.
    assert cl["span_with_unattributed"] == 0 and cl["span_unattributed_ns"] == 0, cl
    meta = json.loads((out / "run.json").read_text())
    counted = sum(n for reasons in meta["counts"]["drops"].values() for n in reasons.values())
    assert s["drops_total"] == s["drop_events"] == counted
    assert s["packets"].get("delivered", 0) == meta["counts"]["delivered_packets"]
    # One percentile definition: the simulator's summary and the analysis agree.
    for d in meta["summary"]["directions"]:
        if d["delay"]:
            a = s["delay_ns"][d["dir"]]
            assert d["delay"]["p50_ns"] == pytest.approx(a["p50"], rel=1e-9), (d["dir"], d["delay"], a)
            assert d["delay"]["p99_ns"] == pytest.approx(a["p99"], rel=1e-9), (d["dir"], d["delay"], a)
    if scenario == "udp-flood":
        assert counted > 0
        phases = [p["phase"] for p in s["phases"]]
        assert phases[0] == "buildup" and "drain" in phases and "steady" in phases
        # Every overload drop counts in exactly one phase.
        overload = sum(n for reasons in meta["counts"]["drops"].values() for r, n in reasons.items() if r in OVERLOAD_REASONS)
        assert sum(p["drops"] for p in s["phases"]) == overload


def test_executor_queueing_grows_with_load(tmp_path: Path) -> None:
    means = []
    for level in ["light", "heavy"]:
        out = tmp_path / level
        assert scout_cmd("simulate", f"attribution-{level}", "-o", str(out), "--duration", "1").returncode == 0
        a = scout.open(out)
        p = a.profiles
        q = p.filter((p.scope == "run") & (p.dir == "dl") & (p.component == "queueing_compute") & p.window_start_ns.isnull())
        means.append(float(q.to_pandas().mean_per_pkt_ns.sum()))
    assert means[1] > 2 * means[0] > 0


def test_bad_runs_get_clear_errors(tmp_path: Path, synthetic: Path) -> None:
    missing = tmp_path / "missing"
    shutil.copytree(synthetic, missing)
    (missing / "events" / "slot.parquet").unlink()
    with pytest.raises(RunError, match=r"slot\.parquet: missing"):
        scout.open(missing)
    r = scout_cmd("analyze", str(missing))
    assert r.returncode != 0 and "slot.parquet: missing" in r.stderr

    corrupt = tmp_path / "corrupt"
    shutil.copytree(synthetic, corrupt)
    f = corrupt / "events" / "packet.parquet"
    f.write_bytes(f.read_bytes()[:200])
    r = scout_cmd("analyze", str(corrupt))
    assert r.returncode != 0 and "packet.parquet" in r.stderr and "Parquet" in r.stderr

    newer = tmp_path / "newer"
    shutil.copytree(synthetic, newer)
    m = json.loads((newer / "run.json").read_text())
    m["schema_version"] = 99
    (newer / "run.json").write_text(json.dumps(m))
    r = scout_cmd("report", str(newer))
    assert r.returncode != 0 and "schema_version 99" in r.stderr and "run.json" in r.stderr


def test_query_and_exports(tmp_path: Path, synthetic: Path) -> None:
    r = scout_cmd("query", str(synthetic), "SELECT status, count(*) AS n FROM journeys GROUP BY 1 ORDER BY 1", "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["status,n", "delivered,11", "dropped,1", "in_flight,1"]
    r = scout_cmd("query", str(synthetic), "SELECT nope FROM packet_events")
    assert r.returncode != 0 and "nope" in r.stderr and "tables:" in r.stderr

    r = scout_cmd("export", str(synthetic), "--format", "perfetto", "--pkt", "1", "-o", str(tmp_path / "x"))
    assert r.returncode == 0, r.stderr
    trace = json.loads((tmp_path / "x" / "trace-packet.json").read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sum(e["args"]["dur_ns"] for e in slices) == 15000
    assert {(e["cat"], e["name"]) for e in slices} == set(DL_EXPECTED)
    # Slices on one track never overlap (Perfetto requires proper nesting).
    by_track: dict = {}
    for e in sorted(slices, key=lambda e: e["ts"]):
        k = (e["pid"], e["tid"])
        assert e["ts"] >= by_track.get(k, -1)
        by_track[k] = e["ts"] + e["dur"]
    for fmt in ["csv", "parquet"]:
        for gran in ["packet", "tti", "aggregate"]:
            o = tmp_path / f"{fmt}-{gran}"
            r = scout_cmd("export", str(synthetic), "--format", fmt, "--granularity", gran, "-o", str(o))
            assert r.returncode == 0, r.stderr
            assert sorted(p.name for p in o.iterdir())
    j = pq.read_table(tmp_path / "parquet-packet" / "journeys.parquet")
    assert j.num_rows == 13


# The tables the attribution kernel writes, with the columns that identify a row.
KERNEL_TABLES = {
    "journeys": ["pkt"],
    "components": ["pkt", "layer", "component"],
    "layer_delays": ["pkt", "layer"],
    "profiles": ["scope", "key", "dir", "window_start_ns", "layer", "component"],
    "sojourns": ["pkt", "node", "layer", "queue", "dir", "ue", "drb", "t_enq"],
    "queues": ["queue", "node", "dir", "t_ns", "layer"],
    "tti": ["t_ns", "dir", "ue", "harq_id", "retx_index", "rnti", "prbs", "tbs", "mcs", "bsr_bytes", "cqi"],
    # Relational, written while the kernel runs (`analysis._Beside`) by the default engine.
    "drops": ["layer", "reason", "node", "dir", "ue", "slice", "flow"],
    "drop_series": ["t_ns", "layer", "reason"],
    "executors": ["executor", "node", "layer", "window_start_ns"],
}


def _kernel_run(tmp_path: Path, source: str, schemas) -> Path:
    """A run of each kind of source: synthetic events, two simulated scenarios, an srsRAN log, a pcap."""
    out = tmp_path / source
    if source == "synthetic":
        return synthetic_run(tmp_path, schemas)
    if source in ("mixed", "udp-flood"):
        sets = ["--set", "traffic[0].stop_s=1.5"] if source == "udp-flood" else []
        r = scout_cmd("simulate", source, "-o", str(out), "--duration", "2", *sets)
    elif source == "srsran":
        r = scout_cmd("ingest", "srsran", str(shared_fixture("srsran/srsran-23.10-info-drb.gnb.log")), "-o", str(out))
    else:
        r = scout_cmd("ingest", "pcap", str(shared_fixture("pcap/n3-n6-ping-any.pcap")), "-o", str(out))
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("source", ["synthetic", "mixed", "udp-flood", "srsran", "pcap"])
def test_kernel_and_relational_engine_agree(tmp_path: Path, schemas, source: str) -> None:
    """The attribution kernel (default) and the Ibis expressions give the same tables, row for
    row (floats — means, interpolated percentiles, rates — to 1e-9 relative), and the same summary;
    the kernel's `tti` is in the expression's order (t_ns, dir, ue; nulls last)."""
    run = _kernel_run(tmp_path, source, schemas)
    ibis_run = tmp_path / f"{source}-ibis"
    shutil.copytree(run, ibis_run, ignore=shutil.ignore_patterns("analysis"))
    s_native = analysis.analyze(run, engine="native")
    s_ibis = analysis.analyze(ibis_run, engine="ibis")
    for k in ("packets", "closure", "profile_population", "delay_ns", "drops_total"):
        assert s_native[k] == s_ibis[k], k
    assert {(d["layer"], d["component"]) for d in s_native["dominant"]} == {
        (d["layer"], d["component"]) for d in s_ibis["dominant"]
    }
    assert s_native["packets"], "the run has packets"
    for name, keys in KERNEL_TABLES.items():
        a = pq.read_table(run / "analysis" / f"{name}.parquet").to_pandas()
        b = pq.read_table(ibis_run / "analysis" / f"{name}.parquet").to_pandas()
        assert sorted(a.columns) == sorted(b.columns), name
        assert len(a) == len(b), name
        # A capture of the UPF's interfaces sees no queue, nor slots.
        if name in ("journeys", "components", "layer_delays", "profiles", "sojourns", "queues", "tti"):
            assert len(a) > 0 or (name in ("sojourns", "queues", "tti") and source == "pcap"), name
        if name == "tti":
            if len(a):
                assert b"scout.analysis" in pq.read_metadata(run / "analysis" / "tti.parquet").metadata, "the kernel wrote it"
            order = a[["t_ns", "dir", "ue"]].astype({"dir": object})
            assert order.equals(order.sort_values(["t_ns", "dir", "ue"], na_position="last", kind="stable")), source
        for df in (a, b):
            for c in df.columns:
                if df[c].dtype.name == "category":
                    df[c] = df[c].astype(object)
        a = a.sort_values(keys, na_position="first").reset_index(drop=True)
        b = b[list(a.columns)].sort_values(keys, na_position="first").reset_index(drop=True)
        for c in a.columns:
            x, y = a[c], b[c]
            if x.dtype.kind == "f" or y.dtype.kind == "f":
                assert np.allclose(x.astype(float), y.astype(float), rtol=1e-9, atol=1e-6, equal_nan=True), (name, c)
            else:
                same = (x == y) | (x.isna() & y.isna())
                assert same.all(), (name, c, a[~same].head(3).to_dict("records"), y[~same].head(3).tolist())


def test_kernel_codes_are_the_relational_engines() -> None:
    from scout import _native
    from scout.analysis import engine

    points, layers, components = _native.attribution_codes()
    assert {p: i for i, p in enumerate(points)} == engine.POINT_RANK
    assert {name: i for i, name in enumerate(layers)} == engine.LAYER_RANK
    assert components == engine.COMPONENTS


def test_kernel_reports_bad_events_by_file_and_column(tmp_path: Path, schemas) -> None:
    run = write_run(tmp_path / "bad", schemas, dl_packet(1))
    t = pq.read_table(run / "events" / "packet.parquet").drop_columns(["point"])
    pq.write_table(t, run / "events" / "packet.parquet")
    with pytest.raises(RunError, match=r"packet\.parquet: column point: missing"):
        analysis.analyze(run)


def test_scout_analyze_starts_the_kernel_before_the_relational_imports(tmp_path: Path) -> None:
    """`scout analyze` runs the attribution kernel while Python imports Ibis and pandas: starting
    it needs none of them (nor pyarrow); stopping it leaves the run not analysed, and a later
    analysis gives the tables of one that was never stopped."""
    run = tmp_path / "run"
    assert scout_cmd("simulate", "mixed", "-o", str(run), "--duration", "1").returncode == 0
    code = f"""
import sys
from pathlib import Path
from scout import attribution
run = Path({str(run)!r})
started = attribution.start(run, attribution.check_run(run).meta)
heavy = sorted(m for m in ("ibis", "pandas", "pyarrow", "duckdb") if m in sys.modules)
print(heavy)
print(attribution.result(started)["rows"]["journeys"])
stopped = attribution.start(run, attribution.check_run(run).meta)
stopped.stop()
try:
    stopped.job.wait()
except ValueError as e:
    print("wait after stop:", e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    heavy, journeys, after = r.stdout.strip().splitlines()
    assert heavy == "[]", f"starting the kernel imported {heavy}"
    assert int(journeys) == pq.read_metadata(run / "analysis" / "journeys.parquet").num_rows > 0
    assert "already waited for or stopped" in after
    assert not (run / "analysis" / "summary.json").exists()
    s = analysis.analyze(run)
    assert pq.read_metadata(run / "analysis" / "journeys.parquet").num_rows == int(journeys)
    r = scout_cmd("analyze", str(run))
    assert r.returncode == 0, r.stderr
    assert json.loads((run / "analysis" / "summary.json").read_text())["events"] == s["events"]
