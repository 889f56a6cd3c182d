"""What each kind of run measures: the headline figures of a run, and the figures it cannot give.

A simulated or emulated run sees every packet from ingress to egress, so its headline is one-way
delay, throughput, drops and the closure of the attribution. A capture of a UPF (pcap, probe)
sees each packet twice, at N3 and at N6: its headline is the UPF's forwarding delay per direction
and slice, the pairs, and the sightings with no twin (UPF drop candidates). An srsRAN gNB log sees
the gNB's part of the path: its headline is each layer's span, HARQ and RLC retransmissions, and
what part of the path the log covers. A figure a source cannot give is absent with a one-line
reason, never shown as zero.
"""

from __future__ import annotations

import ibis.expr.types as ir

from scout.quantiles import fmt_ms as _ms
from scout.quantiles import pcts

#: What runs written before ``run.json`` said what they cover (``covers``) covered, by producer.
_COVERED_BEFORE = {"simulator": "end_to_end", "emulator": "end_to_end", "srsran": "gnb", "pcap": "upf", "probe": "upf"}


def coverage(meta: dict) -> str:
    """What part of a packet's path the run's events cover (``run.json`` ``covers``): ``end_to_end``
    (ingress to egress), ``gnb`` (a gNB's log) or ``upf`` (a UPF's N3 and N6). The analysis
    branches on this, never on the producer's name."""
    return meta.get("covers") or _COVERED_BEFORE.get(meta.get("source"), "unknown")


def headline(meta: dict, j: ir.Table, ld: ir.Table, se: ir.Table, ce: ir.Table) -> dict:
    """``{"covers", "figures": [{"name", "value"}], "absent": [{"name", "why"}]}`` for what the
    run covers, from its journeys, layer delays, slot and control events."""
    covers = coverage(meta)
    if covers == "upf":
        return _upf(meta, j, ce)
    if covers == "gnb":
        return _gnb(meta, j, ld, se, ce)
    covers = "every packet from ingress to egress (N6 to the UE's application, and back)"
    real = [c["slice"] for c in (meta.get("emulator") or {}).get("core") or []]
    if real:
        # Slices served by a real UPF process: the model sees their packets from the gNB's N3
        # (downlink) and up to it (uplink); the UPF's hop is its own (docs/upf.md).
        covers += (
            f"; for the slice(s) with a real UPF ({', '.join(real)}): from the gNB's N3 to the UE and back to the "
            "gNB's N3 (their uplink packets are 'incomplete': they leave the model there)"
        )
    return {"covers": covers, "figures": [], "absent": []}


def _upf(meta: dict, j: ir.Table, ce: ir.Table) -> dict:
    figures = []
    m = j.filter(j.span_ns.notnull())
    rows = (
        m.group_by(["dir", "slice"])
        .agg(n=m.count(), p50=m.span_ns.quantile(0.5), p99=m.span_ns.quantile(0.99), max=m.span_ns.max())
        .order_by(["dir", "slice"])
        .to_pyarrow()
        .to_pylist()
    )
    for r in rows:
        figures.append(
            {
                "name": f"UPF forwarding delay {r['dir'].upper()}, slice {r['slice']}",
                "value": f"{r['n']:,} packets paired N3↔N6: {pcts(r, r['n'])}, max {_ms(r['max'])}",
            }
        )
    unmatched = _unmatched(meta)
    seen = _sightings(meta)
    for side, why in unmatched.items():
        total = sum(why.values())
        detail = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in why.items() if v)
        other = "n6" if side == "n3" else "n3"
        if total and seen.get(other) == 0:
            # Nothing was captured on the other side: the packets did not vanish at the UPF, their
            # twins were not in the capture.
            meaning = f": {other.upper()} was not captured (no {other.upper()} sighting at all), so no packet could be paired"
        elif total:
            meaning = ": UPF drop candidates, or packets whose other side was not captured"
        else:
            meaning = ""
        figures.append(
            {
                "name": f"{side.upper()} sightings with no twin",
                "value": f"{total:,}" + (f" ({detail})" if detail else "") + meaning,
            }
        )
    pf = ce.filter(ce.kind == "pfcp_pair")
    p = pf.agg(n=pf.count(), p50=pf.value.quantile(0.5), p99=pf.value.quantile(0.99)).to_pyarrow().to_pylist()[0]
    if p["n"]:
        value = f"{p['n']:,} pairs: {pcts(p, p['n'])}"
        figures.append({"name": "N4 (PFCP) response time", "value": value})
    absent = [
        {"name": "one-way delay and its attribution", "why": "the capture sees the UPF only, not the RAN or the UE"},
        {"name": "throughput, loss", "why": "a packet's journey ends at the UPF's other side; delivery is not seen"},
    ]
    if not rows:
        absent.insert(0, {"name": "UPF forwarding delay", "why": "no packet was seen on both N3 and N6"})
    covers = "the UPF only: each packet's N3 and N6 sightings (its span is the UPF's forwarding delay)"
    if p["n"]:
        covers += ", and N4 (PFCP)"
    return {"covers": covers, "figures": figures, "absent": absent}


def _sightings(meta: dict) -> dict:
    """Sightings per side over every capture point, where the source counts them (pcap)."""
    pts = (meta.get("pcap") or {}).get("capture_points")
    if pts is None:
        return {}
    return {side: sum(int(p.get(f"{side}_sightings") or 0) for p in pts) for side in ("n3", "n6")}


def _unmatched(meta: dict) -> dict:
    """Unmatched sightings per side and reason (``run.json`` ``unmatched``, one shape for every
    capture of a UPF)."""
    return {side: dict(v.get("by_reason") or {}) for side, v in (meta.get("unmatched") or {}).items()}


def _gnb(meta: dict, j: ir.Table, ld: ir.Table, se: ir.Table, ce: ir.Table) -> dict:
    figures, absent = [], []
    n_packets = int(j.count().execute())
    if n_packets == 0:
        absent.append(
            {
                "name": "per-packet figures",
                "why": "the log has no data-bearer (DRB) traffic: only signalling (SRB) or none at the levels logged",
            }
        )
    spans = (
        ld.group_by(["dir", "layer"])
        .agg(n=ld.count(), p50=ld.ns.quantile(0.5), p99=ld.ns.quantile(0.99))
        .order_by(["dir", "layer"])
        .to_pyarrow()
        .to_pylist()
    )
    for r in spans:
        figures.append(
            {
                "name": f"{r['dir'].upper()} {r['layer']} span",
                "value": f"{r['n']:,} packets: {pcts(r, r['n'])}",
            }
        )
    m = j.filter(j.span_ns.notnull())
    tot = (
        m.group_by("dir")
        .agg(n=m.count(), p50=m.span_ns.quantile(0.5), p99=m.span_ns.quantile(0.99), rlc=m.rlc_retx.sum().cast("int64"))
        .order_by("dir")
        .to_pyarrow()
        .to_pylist()
    )
    for r in tot:
        figures.append(
            {
                "name": f"{r['dir'].upper()} span through the gNB",
                "value": f"{r['n']:,} packets: {pcts(r, r['n'])}; RLC retransmissions {r['rlc'] or 0:,}",
            }
        )
    h = se.filter(se.ue.notnull() & se.tbs.notnull())
    harq = (
        h.group_by("dir")
        .agg(
            tx=h.count(),
            retx=(h.retx_index > 0).sum().cast("int64"),
            ack=(h.ack == True).sum().cast("int64"),  # noqa: E712
            nack=(h.ack == False).sum().cast("int64"),  # noqa: E712
        )
        .order_by("dir")
        .to_pyarrow()
        .to_pylist()
    )
    lost = _lost_after_max_retx(ce)
    for r in harq:
        figures.append({"name": f"{r['dir'].upper()} HARQ", "value": harq_text(r, lost.get(r["dir"], 0))})
    figures += log_health_figures(meta)
    absent += [
        {"name": "one-way delay and its closure", "why": "the log sees no delivery at the UE's application (nor the core)"},
        {"name": "throughput", "why": "the log has no delivery times; the TTI table has each grant's TBS"},
    ]
    covers = (
        "the gNB as logged: DL from GTP-U reception to the MAC PDU carrying a packet's last segment, "
        "UL from the first PUSCH of its first segment to GTP-U transmission"
    )
    return {"covers": covers, "figures": figures, "absent": absent}


def log_health_figures(meta: dict) -> list[dict]:
    """What the log itself says is wrong (``run.json`` ``ingest.log_health``): its warnings and
    errors per component with the most frequent messages, and a last line cut mid-line."""
    health = (meta.get("ingest") or {}).get("log_health") or {}
    we = health.get("warnings_and_errors") or {}
    out = []
    if we.get("warnings") or we.get("errors"):
        comps = sorted(we["by_component"].items(), key=lambda kv: (-(kv[1]["warnings"] + kv[1]["errors"]), kv[0]))
        per = ", ".join(f"{k} {v['warnings'] + v['errors']:,}" for k, v in comps)
        top = "; ".join(
            f"{m['count']:,} x [{m['component']}] {m['message']} (first at {m['first']})" for m in we["top_messages"][:3]
        )
        out.append(
            {
                "name": "the log's own warnings and errors",
                "value": f"{we['warnings']:,} warning(s), {we['errors']:,} error(s) ({per}); most frequent: {top}",
            }
        )
    for c in health.get("cut_last_lines") or []:
        out.append(
            {"name": "log cut mid-line", "value": f"{c['file']}: its last line ({c['line']:,}) has no line end and was not used"}
        )
    return out


def _lost_after_max_retx(ce: ir.Table) -> dict:
    """Per direction, HARQ processes the scheduler discarded after the maximum number of
    retransmissions (control events ``harq_fail``)."""
    f = ce.filter((ce.kind == "harq_fail") & ce.detail.contains("Maximum number of reTxs") & ce.dir.notnull())
    return {r["dir"]: int(r["n"]) for r in f.group_by("dir").agg(n=f.count()).to_pyarrow().to_pylist()}


def harq_text(r: dict, lost: int) -> str:
    """One direction's HARQ as the log shows it: ``tx`` transmissions of which ``retx`` are
    retransmissions, ``ack``/``nack`` outcomes logged. An outcome the log does not carry (srsRAN
    logs HARQ-ACK only at debug level) is unknown, not an ACK and not a NACK: what the log implies is
    said instead (a retransmission follows a failed attempt; a discard after the maximum number of
    retransmissions follows one more, and the block is lost to HARQ)."""
    tx, retx = int(r["tx"] or 0), int(r["retx"] or 0)
    known = int(r["ack"] or 0) + int(r["nack"] or 0)
    text = f"{tx:,} transmissions ({tx - retx:,} new transport blocks, {retx:,} retransmissions)"
    implied = f"{retx + lost:,} failed attempts implied ({retx:,} retransmitted, {lost:,} lost after the maximum retransmissions)"
    if known == 0:
        return f"{text}; outcome not logged (info level): {implied}"
    text += f"; outcome logged for {known:,}: {int(r['ack'] or 0):,} ACK, {int(r['nack'] or 0):,} NACK/DTX/CRC KO"
    if known < tx:
        text += f"; {tx - known:,} without an outcome in the log"
    if lost:
        text += f"; {lost:,} lost after the maximum retransmissions"
    return text


def closure_is_meaningful(summary: dict) -> bool:
    """The delivered-packet closure check says something only when packets were delivered."""
    return bool((summary.get("closure") or {}).get("n"))
