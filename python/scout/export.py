"""`scout export`: analysis tables as CSV or Parquet, and Perfetto / Chrome trace JSON.

Granularity picks the tables: ``packet`` (journeys, components), ``tti`` (per-slot allocations),
``aggregate`` (profiles, queues, drops, phases). Perfetto output shows, for ``packet``, selected
packets' journeys as one process per packet with one track per layer and one slice per interval
(named by its component); for ``tti``, one track per UE and direction with a slice per allocation;
for ``aggregate``, counter tracks of queue occupancy and sojourn.
"""

from __future__ import annotations

import json
from pathlib import Path

import ibis

from scout import analysis, events
from scout.analysis import engine
from scout.errors import UsageError

GRANULARITY_TABLES = {
    "packet": ["journeys", "components"],
    "tti": ["tti"],
    "aggregate": ["profiles", "queues", "drops", "phases", "correlation"],
}
FORMATS = ["csv", "parquet", "perfetto"]
SELECTIONS = ["slowest", "dropped", "first", "sample"]


def export_tables(a: analysis.Analysis, fmt: str, granularity: str, out: Path, written: list[Path]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    for name in GRANULARITY_TABLES[granularity]:
        t = a.table(name)
        path = out / f"{name}.{fmt}"
        written.append(path)
        if fmt == "csv":
            a.con.to_csv(t, path)
        else:
            a.con.to_parquet(t, path, compression="zstd")
    return written


def select_packets(a: analysis.Analysis, how: str, n: int, ids: list[int] | None) -> list[int]:
    j = a.journeys
    if ids:
        return ids
    if how == "slowest":
        e = j.filter(j.status == "delivered").order_by([ibis.desc("delay_ns"), "pkt"])
        if not int(e.count().execute()):
            # A source that sees part of each path (a log, a capture): the longest measured spans.
            e = j.filter(j.span_ns.notnull()).order_by([ibis.desc("span_ns"), "pkt"])
    elif how == "dropped":
        e = j.filter(j.status == "dropped").order_by("t_in_ns")
    elif how == "first":
        e = j.order_by(["t_in_ns", "pkt"])
    else:  # sample: evenly spaced over the run, deterministic
        total = int(j.count().execute())
        step = max(total // max(n, 1), 1)
        e = j.order_by("pkt").mutate(rn=ibis.row_number()).filter(lambda t: t.rn % step == 0)
    return [int(x) for x in e.select("pkt").limit(n).to_pandas().pkt]


def _us(ns: int) -> float:
    return ns / 1000.0


def perfetto_packets(a: analysis.Analysis, pkts: list[int]) -> dict:
    pe = a.con.table("packet_events")
    sel = pe.filter(pe.pkt.isin(pkts))
    st = engine.decode(engine.steps(sel)).order_by(["pkt", "t_ns"]).to_pandas()
    j = a.journeys.filter(a.journeys.pkt.isin(pkts)).to_pandas().set_index("pkt")
    raw = sel.order_by(["pkt", "t_ns"]).to_pandas()
    ev = [{"ph": "M", "name": "process_sort_index", "pid": 0, "args": {"sort_index": 0}}]
    layer_tid = {la: i + 1 for i, la in enumerate(engine.LAYER_ORDER)}
    for order, pkt in enumerate(pkts):
        if pkt not in j.index:
            continue
        r = j.loc[pkt]
        delay = f"{r.delay_ns / 1e6:.3f} ms" if r.status == "delivered" else r.status
        name = f"pkt {pkt} {str(r.dir).upper()} UE {r.ue} flow {r.flow} — {delay}"
        ev.append({"ph": "M", "name": "process_name", "pid": int(pkt), "args": {"name": name}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": int(pkt), "args": {"sort_index": order}})
        for la, tid in layer_tid.items():
            ev.append({"ph": "M", "name": "thread_name", "pid": int(pkt), "tid": tid, "args": {"name": la}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": int(pkt), "tid": tid, "args": {"sort_index": tid}})
        for s in st[st.pkt == pkt].itertuples():
            ev.append(
                {
                    "ph": "X",
                    "name": s.component,
                    "cat": s.layer,
                    "pid": int(pkt),
                    "tid": layer_tid.get(s.layer, 99),
                    "ts": _us(int(s.t_ns)),
                    "dur": _us(int(s.dur_ns)),
                    "args": {"layer": s.layer, "component": s.component, "dur_ns": int(s.dur_ns)},
                }
            )
        for e in raw[raw.pkt == pkt].itertuples():
            ev.append(
                {
                    "ph": "i",
                    "s": "t",
                    "name": f"{e.layer} {e.point}",
                    "pid": int(pkt),
                    "tid": layer_tid.get(e.layer, 99),
                    "ts": _us(int(e.t_ns)),
                    "args": {
                        k: (None if v != v else (v.item() if hasattr(v, "item") else v))
                        for k, v in e._asdict().items()
                        if k not in ("Index",)
                    },
                }
            )
    return {"displayTimeUnit": "ns", "traceEvents": ev, "metadata": {"scout": {"run": str(a.path), "packets": pkts}}}


def perfetto_tti(a: analysis.Analysis, limit_slots: int) -> dict:
    t = a.tti
    # Arrow rows keep NULL as None (pandas would make a missing MCS or PRB count a float NaN).
    rows = t.filter(t.ue.notnull()).order_by(["t_ns", "dir", "ue"]).limit(limit_slots).to_pyarrow().to_pylist()
    slot_ns = events.slot_ns(a.meta) or 500_000
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "cell scheduling"}}]
    tids = {}
    for r in rows:
        key = (r["dir"], int(r["ue"]))
        if key not in tids:
            tids[key] = len(tids) + 1
            ev.append(
                {"ph": "M", "name": "thread_name", "pid": 1, "tid": tids[key], "args": {"name": f"UE {key[1]} {key[0].upper()}"}}
            )
        ev.append(
            {
                "ph": "X",
                "name": f"{r['prbs']} PRB"
                + (f" MCS {r['mcs']}" if r["mcs"] is not None else "")
                + (" retx" if r["is_retx"] else ""),
                "cat": r["harq"] or "",
                "pid": 1,
                "tid": tids[key],
                "ts": _us(int(r["t_ns"])),
                "dur": _us(slot_ns),
                "args": {"tbs": r["tbs"], "harq": r["harq"], "harq_id": r["harq_id"]},
            }
        )
    return {"displayTimeUnit": "ns", "traceEvents": ev}


def perfetto_aggregate(a: analysis.Analysis) -> dict:
    q = a.queues.to_pandas()
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "queues"}}]
    for r in q.itertuples():
        name = f"{r.queue}@{r.node} {r.dir}"
        args = {}
        if r.bytes_max == r.bytes_max:
            args["bytes"] = float(r.bytes_max)
        if r.sojourn_mean_ns == r.sojourn_mean_ns:
            args["sojourn_ms"] = float(r.sojourn_mean_ns) / 1e6
        if args:
            ev.append({"ph": "C", "name": name, "pid": 1, "ts": _us(int(r.t_ns)), "args": args})
    return {"displayTimeUnit": "ns", "traceEvents": ev}


def export(
    a: analysis.Analysis,
    fmt: str,
    granularity: str,
    out: Path,
    select: str = "slowest",
    n: int = 20,
    ids: list[int] | None = None,
    written: list[Path] | None = None,
) -> list[Path]:
    """Writes the export into ``out``; every file is added to ``written`` before it is written,
    so that a caller can remove an unfinished export."""
    written = [] if written is None else written
    if fmt != "perfetto":
        return export_tables(a, fmt, granularity, out, written)
    out.mkdir(parents=True, exist_ok=True)
    if granularity == "packet":
        pkts = select_packets(a, select, n, ids)
        if not pkts:
            why = {
                "dropped": "the run dropped no packet",
                "slowest": "the run has no packet with a measured delay or span",
            }.get(select, "the run has no packet journeys")
            raise UsageError(
                f"nothing to trace: {why}"
                + ("" if ids else f" (--select {select})")
                + "; try another --select, --pkt IDS, or --granularity tti|aggregate"
            )
        trace = perfetto_packets(a, pkts)
    elif granularity == "tti":
        trace = perfetto_tti(a, limit_slots=max(n, 1) * 1000)
    else:
        trace = perfetto_aggregate(a)
    if not any(e.get("ph") != "M" for e in trace.get("traceEvents", [])):
        what = {"tti": "per-slot allocations (slot_events)", "aggregate": "queue telemetry"}.get(granularity, "events")
        raise UsageError(f"nothing to trace: the run has no {what}; try another --granularity")
    path = out / f"trace-{granularity}.json"
    written.append(path)
    path.write_text(json.dumps(trace, separators=(",", ":"), allow_nan=False))
    return [path]
