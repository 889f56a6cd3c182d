"""Tables derived from small aggregates: overload phases and RTT ↔ sojourn correlation.

These run on binned series (a few thousand rows), so they are plain pandas; the heavy lifting
(binning millions of events) is done relationally in :mod:`scout.analysis.engine`.
"""

from __future__ import annotations

import json

import ibis.expr.types as ir
import numpy as np
import pandas as pd

PHASE_COLUMNS = ["phase", "start_ns", "end_ns", "queue", "node", "queue_bytes_mean", "drops", "description"]

# The thresholds of the phase rules (docs/attribution.md, "phases").
FULL_FRACTION = 0.9  # a queue is "at its limit" at >= 90 % of the largest occupancy it reached
STEADY_TOLERANCE = 0.25  # steady overload: the 1 s rolling drop rate within ±25 % of its median
STEADY_WINDOW_S = 1.0
#: Drops that mean a queue filled (or held a packet too long because it was full): the only drops an
#: overload's phases are derived from. Others (no session, a PDU outside the receive window, HARQ
#: or ARQ giving up) say nothing of a queue at its limit.
OVERLOAD_REASONS = frozenset(
    {"rlc_queue_full", "pdcp_early_drop", "pdcp_discard_timer", "exec_queue_full", "f1u_queue_full", "link_queue_full"}
)


def phases(queues: pd.DataFrame, drop_series: pd.DataFrame, journeys: ir.Table, bin_ns: int) -> pd.DataFrame:
    """Buildup, saturation, steady overload and drain of an overloaded run (SCOUT §6).

    Empty when no queue filled: no drop of an [OVERLOAD_REASONS] kind (no overload to describe).
    """
    drop_series = drop_series[drop_series.reason.isin(OVERLOAD_REASONS)]
    if drop_series.empty or queues.empty:
        return pd.DataFrame(columns=PHASE_COLUMNS)
    j = journeys
    ext = j.agg(t0=j.t_in_ns.min(), t_stop=j.t_in_ns.max(), t_end=j.t_out_ns.max()).to_pandas().iloc[0]
    t0, t_stop = int(ext.t0), int(ext.t_stop)
    t_end = int(ext.t_end) if pd.notna(ext.t_end) else t_stop
    t_end = max(t_end, t_stop)

    # The bottleneck: the protocol queue that held the most bytes (executor queues only if none).
    q = queues[queues.bytes_max.notna()]
    proto = q[~q.queue.str.endswith("_exec")]
    q = proto if not proto.empty else q
    peak = q.groupby(["queue", "node", "dir"]).bytes_max.max().sort_values(ascending=False)
    (qname, qnode, qdir), qmax = peak.index[0], float(peak.iloc[0])
    series = (
        q[(q.queue == qname) & (q.node == qnode) & (q.dir == qdir)].set_index("t_ns").sort_index()[["bytes_max", "bytes_mean"]]
    )
    full = series.index[series.bytes_max >= FULL_FRACTION * qmax]
    t_full = int(full[0]) if len(full) else t_stop

    d = drop_series.groupby("t_ns")["count"].sum().sort_index()
    t_first_drop = int(d.index[0])
    t_sat = max(min(t_full, t_first_drop), t0)

    # Steady overload begins when the drop rate, smoothed over 1 s, settles near its median.
    idx = np.arange((t_sat // bin_ns) * bin_ns, max(t_stop, t_sat + bin_ns), bin_ns)
    rate = d.reindex(idx, fill_value=0).astype(float)
    t_steady = t_stop
    if len(rate) > 0:
        roll = rate.rolling(max(int(STEADY_WINDOW_S * 1e9 / bin_ns), 1), min_periods=1).mean()
        med = float(np.median(rate.values))
        ok = roll.index[(roll - med).abs() <= STEADY_TOLERANCE * max(med, 1e-9)]
        ok = ok[ok > t_sat]
        if len(ok):
            t_steady = int(ok[0])
    t_steady = min(max(t_steady, t_sat), t_stop)

    spans = [
        ("buildup", t0, t_sat, f"{qname} at {qnode} grows towards its limit; no drops yet"),
        ("saturation", t_sat, t_steady, f"{qname} reaches its limit; drops start and rise"),
        ("steady", t_steady, t_stop, "overloaded steady state: input shed to the carried rate, queue full"),
        ("drain", t_stop, t_end, "the sender stopped; queues empty while delivery continues"),
    ]
    rows = []
    for name, a, b, desc in spans:
        if b <= a:
            continue
        # Each drop bin counts in the one span where it starts; the first span also takes the bin
        # its start falls in (a bin straddling a later boundary once counted in both spans).
        lo = (a // bin_ns) * bin_ns if not rows else a
        s = series[(series.index >= a) & (series.index < b)]
        rows.append(
            {
                "phase": name,
                "start_ns": int(a),
                "end_ns": int(b),
                "queue": qname,
                "node": qnode,
                "queue_bytes_mean": float(s.bytes_mean.mean()) if len(s) else float("nan"),
                "drops": int(d[(d.index >= lo) & (d.index < b)].sum()),
                "description": desc,
            }
        )
    return pd.DataFrame(rows, columns=PHASE_COLUMNS)


def rtt_samples(ce: ir.Table) -> pd.DataFrame:
    """Application RTT samples (`t_ns`, `ue`, `rtt_ns`): the smoothed RTT of TCP senders where the
    run has them (`tcp_info` rows of a socket receiving pure ACKs, from the emulator's
    `tcp_probe`), else the pings' `app_rtt` rows."""
    t = ce.filter(ce.kind == "tcp_info").select("t_ns", "ue", "detail").order_by("t_ns").to_pandas()
    if not t.empty:
        d = pd.json_normalize([json.loads(x) for x in t.detail])
        sender = (d.data_len == 0).to_numpy()
        out = pd.DataFrame(
            {"t_ns": t.t_ns.to_numpy()[sender], "ue": t.ue.to_numpy()[sender], "rtt_ns": d.srtt_us[sender] * 1000.0}
        )
        if not out.empty:
            return out.reset_index(drop=True)
    r = ce.filter(ce.kind == "app_rtt")
    return r.select("t_ns", "ue", rtt_ns=r.value).order_by("t_ns").to_pandas()


def correlation(ce: ir.Table, sojourns: ir.Table, bin_ns: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Application RTT samples (:func:`rtt_samples`) against each queue's sojourn, time-aligned in
    bins (SCOUT §7, fig. 6): an RTT sample by its time, a sojourn by when the packet left the queue.

    Returns (per-queue Pearson correlation over the bins where both exist, the binned RTT series).
    """
    rtt = rtt_samples(ce)
    cols = ["node", "queue", "dir", "layer", "bins", "pearson_r", "sojourn_mean_ns", "rtt_mean_ns"]
    if rtt.empty:
        return pd.DataFrame(columns=cols), rtt
    # A packet's sojourn is binned by when it left the queue: the RTT sample that includes it is
    # taken one return path later (its ACK), not when it entered (a second earlier in a deep queue).
    s = sojourns.filter(sojourns.t_leave.notnull())
    s = s.mutate(bin=(s.t_leave // bin_ns))
    keys = ["node", "queue", "dir", "layer", "bin"]
    # In key order: the database returns groups in any order, and a mean over them (below) would
    # then differ in its last bits from run to run.
    sb = s.group_by(keys).agg(m=s.sojourn_ns.mean()).order_by(keys).to_pandas()
    rb = rtt.assign(bin=rtt.t_ns // bin_ns).groupby("bin").rtt_ns.mean()
    rows = []
    for (node, queue, d, layer), g in sb.groupby(["node", "queue", "dir", "layer"]):
        g = g.set_index("bin").m
        both = pd.concat([g, rb], axis=1, join="inner").dropna()
        both.columns = ["sojourn", "rtt"]
        r_val = float("nan")
        if len(both) >= 3 and both.sojourn.std() > 0 and both.rtt.std() > 0:
            r_val = float(np.corrcoef(both.sojourn, both.rtt)[0, 1])
        rows.append(
            {
                "node": node,
                "queue": queue,
                "dir": d,
                "layer": layer,
                "bins": len(both),
                "pearson_r": r_val,
                "sojourn_mean_ns": float(g.mean()),
                "rtt_mean_ns": float(both.rtt.mean()) if len(both) else float("nan"),
            }
        )
    # Ties (and NaNs) in the queues' order, so that the table is the same on every run.
    out = pd.DataFrame(rows, columns=cols).sort_values(
        ["pearson_r", "node", "queue", "dir", "layer"],
        ascending=[False, True, True, True, True],
        na_position="last",
        kind="mergesort",
    )
    return out.reset_index(drop=True), rtt


METRICS_CHECK_COLUMNS = [
    "check",
    "ue",
    "drb",
    "window_start_ns",
    "window_end_ns",
    "reports",
    "metrics_value",
    "scout_value",
    "ratio",
    "unit",
    "note",
]


def metrics_check(ce: ir.Table, pe: ir.Table, comp: ir.Table) -> pd.DataFrame:
    """srsRAN's own JSON metrics (``metrics_*`` control rows) against what Scout reconstructed from the
    per-packet lines, over the same window: the window of a series of periodic reports is the period
    before its first report up to its last one (the period is the median gap between reports; 1 s,
    srsRAN's default, when there is a single report).

    - RLC TX SDUs (``tx.num_sdus``) against DL RLC enqueues of that UE and DRB;
    - RLC RX SDUs (``rx.num_sdus``) against UL RLC deliveries;
    - PDCP DL / UL average latency against Scout's mean PDCP time per packet (srsRAN measures SDU
      arrival to PDU hand-off in DL and PDU arrival to in-order delivery in UL; Scout's PDCP time is
      its processing, and in UL also its reordering hold);
    - scheduler ``dl_brate`` per UE against the bytes of that UE's MAC transmissions over the window.
    """
    m = ce.filter(ce.kind.startswith("metrics_")).select("t_ns", "kind", "ue", "drb", "value").to_pandas()
    if m.empty:
        return pd.DataFrame(columns=METRICS_CHECK_COLUMNS)

    def window(t: pd.Series) -> tuple[int, int]:
        ts = np.sort(t.unique())
        period = int(np.median(np.diff(ts))) if len(ts) > 1 else 1_000_000_000
        return int(ts[0]) - period, int(ts[-1])

    def count(layer: str, point: str, d: str, ue, drb, lo: int, hi: int) -> int:
        f = (pe.layer == layer) & (pe.point == point) & (pe.dir == d) & (pe.t_ns > lo) & (pe.t_ns <= hi)
        if ue is not None and not pd.isna(ue):
            f = f & (pe.ue == int(ue))
        if drb is not None and not pd.isna(drb):
            f = f & (pe.drb == int(drb))
        return int(pe.filter(f).count().execute())

    rows = []
    for kind, layer, point, d, label in [
        ("metrics_rlc_tx", "rlc", "enqueue", "dl", "RLC TX SDUs"),
        ("metrics_rlc_rx", "rlc", "deliver", "ul", "RLC RX SDUs"),
    ]:
        for (ue, drb), g in m[m.kind == kind].groupby(["ue", "drb"], dropna=False):
            lo, hi = window(g.t_ns)
            mv = float(g.value.sum())
            sv = count(layer, point, d, ue, drb, lo, hi)
            note = "sum of the reports" + ("" if mv == sv else "; differs: lines lost (log gaps) or outside the reports")
            rows.append([label, ue, drb, lo, hi, len(g), mv, float(sv), sv / mv if mv else np.nan, "SDUs", note])
    j = comp.filter(comp.layer == "pdcp")
    for kind, d, label in [("metrics_pdcp_dl", "dl", "PDCP DL latency"), ("metrics_pdcp_ul", "ul", "PDCP UL latency")]:
        g = m[m.kind == kind]
        if g.empty:
            continue
        lo, hi = window(g.t_ns)
        pk = pe.filter((pe.layer == "pdcp") & (pe.dir == d) & (pe.t_ns > lo) & (pe.t_ns <= hi)).select("pkt").distinct()
        per_pkt = j.filter(j.pkt.isin(pk.pkt)).group_by("pkt").agg(ns=j.ns.sum()).ns.mean().execute()
        sv = float(per_pkt) if per_pkt is not None and not pd.isna(per_pkt) else np.nan
        mv = float(g.value.mean())
        note = "mean of the reports' averages vs Scout's mean PDCP time per packet (different start and end points)"
        rows.append([label, None, None, lo, hi, len(g), mv, sv, sv / mv if mv else np.nan, "ns", note])
    for ue, g in m[m.kind == "metrics_sched_ue"].groupby("ue", dropna=False):
        lo, hi = window(g.t_ns)
        f = (pe.layer == "mac") & (pe.point == "tx") & (pe.dir == "dl") & (pe.t_ns > lo) & (pe.t_ns <= hi)
        if not pd.isna(ue):
            f = f & (pe.ue == int(ue))
        b = pe.filter(f).bytes.sum().execute()
        sv = float(b or 0) * 8e9 / (hi - lo)
        mv = float(g.value.mean())
        note = "mean dl_brate vs RLC payload bytes in MAC PDUs over the window (MAC headers and padding excluded)"
        rows.append(["DL bit rate", ue, None, lo, hi, len(g), mv, sv, sv / mv if mv else np.nan, "bit/s", note])
    return pd.DataFrame(rows, columns=METRICS_CHECK_COLUMNS)
