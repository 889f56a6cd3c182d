"""The data behind each figure of the report, from the analysis tables by aggregation in DuckDB.

Nothing here reads per-packet rows into Python objects: every figure is a few thousand to a few
hundred thousand numbers (quantiles, per-bin maxima, per-slot sums). The one exception is bounded
the way an exact quantile must be: the percentile chart reads one series (a direction's totals, or
one layer's delays) at a time as a numpy column, which DuckDB's exact quantile would hold too. A
figure the run cannot give is ``None`` with the reason
in ``absent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scout import analysis, events
from scout.analysis.engine import COMPONENTS, LAYER_ORDER

#: At most this many time bins per series: a 60 s run at μ1 (0.5 ms slots) is drawn slot by slot;
#: longer runs are binned coarser (the figure says its bin).
MAX_BINS = 125_000
#: The percentile chart's points: every 0.5 % and the tail (205 exact, interpolated percentiles
#: per series).
PERCENTILES = [i / 200 for i in range(1, 200)] + [0.996, 0.997, 0.998, 0.999, 0.9995, 0.9999]
#: How many queues get a panel (the busiest first).
MAX_QUEUES = 6
#: Packets offered in the journey view.
JOURNEY_PACKETS = 20
#: Drops that happen at a layer with no queue of its own are drawn in a panel of their own.
NO_QUEUE = "(no queue)"


@dataclass
class ReportData:
    """What the page draws; every list is JSON-ready."""

    run: str
    source: str
    covers: str
    bin_ns: int
    attribution: dict | None = None
    percentiles: dict | None = None
    queues: list[dict] = field(default_factory=list)
    rtt: dict | None = None
    cc: dict | None = None
    tti: dict | None = None
    journeys: list[dict] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)


def _rows(con, sql: str, params: list | None = None) -> list[tuple]:
    return con.con.execute(sql, params or []).fetchall()


def layer_order(names) -> list[str]:
    present = set(names)
    return [x for x in LAYER_ORDER if x in present] + sorted(present - set(LAYER_ORDER))


def collect(a: analysis.Analysis, compare: list[analysis.Analysis] | None = None) -> ReportData:
    s = a.summary
    con = a.con
    (t0, t1), *_ = _rows(con, "SELECT min(t_ns), max(t_ns) FROM packet_events") or [(0, 0)]
    duration = max(int((t1 or 0) - (t0 or 0)), 1)
    slot_ns = events.slot_ns(a.meta) or _slot_from_events(con) or 1_000_000
    bin_ns = max(slot_ns, -(-duration // MAX_BINS))
    d = ReportData(
        run=str(s.get("run") or a.path.name),
        source=str(s.get("source")),
        covers=(s.get("headline") or {}).get("covers", ""),
        bin_ns=bin_ns,
    )
    d.attribution = attribution([a, *[c for c in (compare or []) if c is not a]] if compare and len(compare) > 1 else [a])
    d.percentiles = percentiles(a)
    d.queues = queues(a, bin_ns)
    if not d.queues:
        d.absent["queues"] = "this run's events carry no queue occupancy (the source does not see queues)"
    d.rtt = rtt(a)
    if d.rtt is None:
        d.absent["rtt"] = "no application RTT samples (app_rtt control rows) in this run"
    d.cc = cc_samples(a)  # only where a delay-based sender ran: no "absent" line otherwise
    d.tti = tti(a, bin_ns)
    if d.tti is None:
        d.absent["tti"] = "no per-slot allocations (slot_events) in this run"
    d.journeys = journeys(a)
    if not d.journeys:
        d.absent["journey"] = "no packet journeys in this run"
    return d


def _slot_from_events(con) -> int:
    """The slot duration from consecutive slots of the slot table (srsRAN runs have no cell block)."""
    r = _rows(
        con,
        "SELECT median(dt) FROM (SELECT t_ns - lag(t_ns) OVER (ORDER BY t_ns) AS dt FROM "
        "(SELECT DISTINCT t_ns FROM slot_events LIMIT 5000)) WHERE dt > 0",
    )
    return int(r[0][0]) if r and r[0][0] else 0


def attribution(runs: list[analysis.Analysis]) -> dict | None:
    """Mean time per packet in each (direction, layer, component), for each run (SCOUT fig. 4)."""
    out = {"runs": [], "population": runs[0].summary.get("profile_population", "delivered"), "rows": {}}
    for i, r in enumerate(runs):
        out["runs"].append(str(r.summary.get("run") or r.path.name))
        for dir_, layer, comp, v in _rows(
            r.con,
            "SELECT dir, layer, component, mean_per_pkt_ns FROM profiles WHERE scope = 'run' AND "
            "window_start_ns IS NULL AND layer <> 'total' AND mean_per_pkt_ns > 0",
        ):
            out["rows"].setdefault(dir_, {}).setdefault(layer, {}).setdefault(comp, [0.0] * len(runs))[i] = float(v)
    if not out["rows"]:
        return None
    # Layers in path order, components in the one order every figure uses.
    out["rows"] = {
        d: [
            {"layer": la, "components": [{"component": c, "ns": per[la][c]} for c in COMPONENTS if c in per[la]]}
            for la in layer_order(per)
        ]
        for d, per in sorted(out["rows"].items())
    }
    return out


def percentiles(a: analysis.Analysis) -> dict | None:
    """Delay at each percentile per direction: the total (one-way delay of delivered packets, else
    each packet's measured span) and each layer's share.

    Each series' values are read as one numpy column and its percentiles taken there (numpy's
    ``linear`` method is DuckDB's ``quantile_cont``: position ``(n - 1) q``, interpolated). One
    DuckDB aggregate over every layer finalised its 205 quantiles in 1-2 s on a 10 M-row run without
    looking at Ctrl-C; this way the longest step is one layer's scan and sort (~0.1 s), and memory
    holds one series at a time, where the aggregate held them all."""
    delivered = bool((a.summary.get("closure") or {}).get("n"))
    status = "AND status = 'delivered'" if delivered else ""
    total = "delay_ns" if delivered else "span_ns"
    series: dict[str, list[dict]] = {}

    def add(dir_: str, name: str, sql: str, params: list) -> None:
        v = a.con.con.execute(sql, params).fetchnumpy()["x"]
        if len(v):
            ns = np.quantile(v, PERCENTILES, method="linear")
            series.setdefault(dir_, []).append({"name": name, "n": len(v), "ns": [float(x) for x in ns]})

    for (dir_,) in _rows(a.con, f"SELECT DISTINCT dir FROM journeys WHERE {total} IS NOT NULL {status} ORDER BY dir"):
        name = "total" if delivered else "measured span"
        add(dir_, name, f"SELECT {total} AS x FROM journeys WHERE dir = ? AND {total} IS NOT NULL {status}", [dir_])
    for dir_, layer in _rows(a.con, f"SELECT DISTINCT dir, layer FROM layer_delays WHERE ns IS NOT NULL {status} ORDER BY ALL"):
        where = f"dir = ? AND layer = ? AND ns IS NOT NULL {status}"
        add(dir_, layer, f"SELECT ns AS x FROM layer_delays WHERE {where}", [dir_, layer])
    if not series:
        return None
    for d in series:
        series[d] = sorted(series[d], key=lambda x: (x["name"] not in ("total", "measured span"), _layer_rank(x["name"])))
    return {"p": PERCENTILES, "what": "one-way delay" if delivered else "measured span", "series": dict(sorted(series.items()))}


def _layer_rank(name: str) -> int:
    return LAYER_ORDER.index(name) if name in LAYER_ORDER else len(LAYER_ORDER)


def queues(a: analysis.Analysis, bin_ns: int) -> list[dict]:
    """The busiest queues' occupancy per bin, with the drops at each queue (SCOUT fig. 5), and a
    panel for drops at layers that have no queue. Phases are drawn on the bottleneck they name."""
    con = a.con
    busiest = _rows(
        con,
        "SELECT queue, node, dir, any_value(layer), max(queue_bytes) AS peak FROM packet_events "
        "WHERE queue IS NOT NULL AND queue_bytes IS NOT NULL GROUP BY queue, node, dir HAVING peak > 0 "
        f"ORDER BY peak DESC LIMIT {MAX_QUEUES}",
    )
    queue_of_layer = {(layer, node, dir_): q for q, node, dir_, layer, _ in busiest}
    # Every drop goes to the queue it happened at: its own `queue` column, else the queue of its
    # layer at its node and direction, else the panel of drops without a queue.
    drops: dict[tuple, dict[int, dict[str, int]]] = {}
    panels_of = {(x[0], x[1], x[2]) for x in busiest}
    for q, layer, node, dir_, b, reason, n in _rows(
        con,
        f"SELECT queue, layer, node, dir, t_ns // {bin_ns} AS b, reason, count(*) FROM packet_events "
        "WHERE point = 'drop' GROUP BY ALL ORDER BY b",
    ):
        key = (q, node, dir_) if q else None
        if key not in panels_of:
            qq = queue_of_layer.get((layer, node, dir_))
            key = (qq, node, dir_) if qq else (NO_QUEUE, f"{layer} at {node}", dir_)
        drops.setdefault(key, {}).setdefault(int(b), {})[reason or "unknown"] = n
    phases = a.phases.to_pyarrow().to_pylist()
    panels = []
    for q, node, dir_, layer, peak in busiest:
        rows = _rows(
            con,
            f"SELECT t_ns // {bin_ns} AS b, max(queue_bytes) FROM packet_events WHERE queue = ? AND node = ? AND dir = ? "
            "AND queue_bytes IS NOT NULL GROUP BY b ORDER BY b",
            [q, node, dir_],
        )
        panels.append(_panel(q, node, dir_, layer, rows, drops.pop((q, node, dir_), {}), bin_ns, peak))
        panels[-1]["phases"] = [p for p in phases if p["queue"] == q and p["node"] == node]
    for (q, where, dir_), per_bin in sorted(drops.items(), key=lambda kv: str(kv[0])):
        panels.append(_panel(q, where, dir_, None, [], per_bin, bin_ns, 0))
        panels[-1]["phases"] = []
    return panels


def _panel(queue, node, dir_, layer, occupancy, drops, bin_ns, peak) -> dict:
    bins = sorted({b for b, _ in occupancy} | set(drops))
    occ = dict(occupancy)
    reasons = sorted({r for per in drops.values() for r in per})
    return {
        "queue": queue,
        "node": node,
        "dir": dir_,
        "layer": layer,
        "peak_bytes": int(peak or 0),
        "t_s": [b * bin_ns / 1e9 for b in bins],
        "bytes": [occ.get(b) for b in bins] if occupancy else None,
        "drops": {r: [drops.get(b, {}).get(r) for b in bins] for r in reasons},
        "drops_total": sum(sum(per.values()) for per in drops.values()),
    }


def rtt(a: analysis.Analysis) -> dict | None:
    """Application RTT samples and the sojourn of the queue whose sojourn correlates best with it
    (SCOUT fig. 6), both in ms on one axis."""
    from scout.analysis.derived import rtt_samples

    rs = rtt_samples(a.con.table("control_events"))
    if rs.empty:
        return None
    out = {"t_s": (rs.t_ns / 1e9).tolist(), "rtt_ms": (rs.rtt_ns / 1e6).tolist(), "queue": None}
    best = _rows(
        a.con,
        "SELECT queue, node, dir, pearson_r FROM correlation WHERE pearson_r IS NOT NULL AND NOT isnan(pearson_r) "
        "ORDER BY abs(pearson_r) DESC LIMIT 1",
    )
    if best:
        q, node, dir_, r = best[0]
        bin_ns = int((a.summary.get("bin_s") or 0.1) * 1e9)
        so = _rows(
            a.con,
            f"SELECT t_enq // {bin_ns} AS b, avg(sojourn_ns) FROM sojourns WHERE queue = ? AND node = ? AND dir = ? "
            "GROUP BY b ORDER BY b",
            [q, node, dir_],
        )
        out["queue"] = {
            "name": f"{q} at {node} ({dir_})",
            "pearson_r": r,
            "t_s": [b * bin_ns / 1e9 for b, _ in so],
            "sojourn_ms": [v / 1e6 for _, v in so],
            "bin_s": bin_ns / 1e9,
        }
    return out


#: Delay samples drawn per flow at most (evenly thinned beyond).
MAX_CC_SAMPLES = 40_000


def cc_samples(a: analysis.Analysis) -> dict | None:
    """The delay samples each delay-based sender (Copa, GCC) took, as measured and as its
    controller used them after Gandalf's compensation (`cc_sample` rows), against the
    retransmission events of its UE (`retx_event`: T_M, T_R) — seed 004's Figures 15-16."""
    flows = _rows(
        a.con,
        "SELECT sn, any_value(ue), any_value(dir), any_value(json_extract_string(detail, '$.cc')), "
        "any_value(json_extract_string(detail, '$.signal')), count(*) FROM control_events "
        "WHERE kind = 'cc_sample' GROUP BY sn ORDER BY sn",
    )
    if not flows:
        return None
    out = []
    for flow, ue, dir_, cc, signal, n in flows:
        every = max(1, -(-n // MAX_CC_SAMPLES))
        pts = _rows(
            a.con,
            "SELECT t_ns / 1e9, json_extract(detail, '$.raw_ns')::DOUBLE / 1e6, value / 1e6 FROM ("
            "SELECT t_ns, detail, value, row_number() OVER (ORDER BY t_ns) AS i FROM control_events "
            "WHERE kind = 'cc_sample' AND sn = ?) WHERE i % ? = 0 ORDER BY t_ns",
            [flow, every],
        )
        retx = _rows(
            a.con,
            "SELECT t_ns / 1e9, value / 1e6, json_extract_string(detail, '$.layer'), dir FROM control_events "
            "WHERE kind = 'retx_event' AND ue = ? ORDER BY t_ns",
            [ue],
        )
        out.append(
            {
                "flow": int(flow),
                "ue": ue,
                "dir": dir_,
                "cc": cc,
                "signal": signal,
                "every": every,
                "t_s": [r[0] for r in pts],
                "raw_ms": [r[1] for r in pts],
                "used_ms": [r[2] for r in pts],
                "retx": {
                    "t_s": [r[0] for r in retx],
                    "ms": [r[1] for r in retx],
                    "what": [f"{r[2] or 'mac'} {r[3]}" for r in retx],
                },
            }
        )
    return {"flows": out}


def tti(a: analysis.Analysis, bin_ns: int) -> dict | None:
    """PRBs granted to each UE per slot (or per bin of slots), per direction, and HARQ NACKs."""
    rows = _rows(
        a.con,
        f"SELECT dir, ue, t_ns // {bin_ns} AS b, sum(prbs), count(*) FILTER (WHERE harq = 'nack') FROM tti "
        "WHERE ue IS NOT NULL AND prbs IS NOT NULL GROUP BY ALL ORDER BY dir, b",
    )
    if not rows:
        return None
    per_dir: dict[str, dict] = {}
    for dir_, ue, b, prbs, nacks in rows:
        d = per_dir.setdefault(dir_, {"bins": set(), "ues": {}, "nacks": {}})
        d["bins"].add(b)
        d["ues"].setdefault(int(ue), {})[b] = int(prbs)
        if nacks:
            d["nacks"][b] = d["nacks"].get(b, 0) + int(nacks)
    out = {}
    for dir_, d in sorted(per_dir.items()):
        bins = sorted(d["bins"])
        out[dir_] = {
            "t_s": [b * bin_ns / 1e9 for b in bins],
            "ues": {str(u): [v.get(b) for b in bins] for u, v in sorted(d["ues"].items())},
            "nacks": [d["nacks"].get(b) for b in bins],
        }
    return {"bin_s": bin_ns / 1e9, "dirs": out}


def journeys(a: analysis.Analysis) -> list[dict]:
    """The packets offered in the journey view: the slowest delivered ones (or longest spans) and
    the dropped ones, each with its events and its components."""
    delivered = bool((a.summary.get("closure") or {}).get("n"))
    measure = "delay_ns" if delivered else "span_ns"
    cond = "status = 'delivered'" if delivered else "span_ns IS NOT NULL"
    picks = _rows(
        a.con,
        f"(SELECT pkt, 'slowest' AS why FROM journeys WHERE {cond} ORDER BY {measure} DESC, pkt LIMIT {JOURNEY_PACKETS}) "
        f"UNION ALL (SELECT pkt, 'dropped' FROM journeys WHERE status = 'dropped' ORDER BY pkt LIMIT {JOURNEY_PACKETS // 2})",
    )
    if not picks:
        return []
    ids = [int(p) for p, _ in picks]
    why = {int(p): w for p, w in picks}
    idlist = ", ".join(map(str, ids))
    info = {
        int(r[0]): r
        for r in _rows(
            a.con,
            f"SELECT pkt, dir, ue, flow, bytes, status, {measure}, drop_layer, drop_reason FROM journeys WHERE pkt IN ({idlist})",
        )
    }
    events: dict[int, list] = {}
    for pkt, t, node, layer, point, reason in _rows(
        a.con,
        f"SELECT pkt, t_ns, node, layer, point, reason FROM packet_events WHERE pkt IN ({idlist}) ORDER BY pkt, t_ns",
    ):
        events.setdefault(int(pkt), []).append([t, node, layer, point, reason])
    comps: dict[int, list] = {}
    for pkt, layer, comp, ns in _rows(
        a.con, f"SELECT pkt, layer, component, sum(ns) FROM components WHERE pkt IN ({idlist}) GROUP BY ALL"
    ):
        comps.setdefault(int(pkt), []).append({"layer": layer, "component": comp, "ns": int(ns)})
    out = []
    for p in ids:
        if p not in info:
            continue
        _, dir_, ue, flow, nbytes, status, total, dl, dr = info[p]
        ev = events.get(p, [])
        t0 = ev[0][0] if ev else 0
        out.append(
            {
                "pkt": p,
                "why": why[p],
                "dir": dir_,
                "ue": ue,
                "flow": flow,
                "bytes": nbytes,
                "status": status,
                "total_ns": total,
                "drop": f"{dl}/{dr}" if dl else None,
                "events": [[int(t - t0), node, layer, point, reason] for t, node, layer, point, reason in ev],
                "components": sorted(comps.get(p, []), key=lambda c: (_layer_rank(c["layer"]), COMPONENTS.index(c["component"]))),
            }
        )
    return out
