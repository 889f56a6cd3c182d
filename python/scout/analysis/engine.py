"""The analysis as Ibis expressions: events in, journeys / components / profiles / queues / tti / drops out.

Everything here is relational (filters, joins, windows, group-bys) so the same expressions run on
any Ibis backend; DuckDB is the default. The attribution rules are documented in docs/attribution.md
and are the single source of truth for what each component means.
"""

from __future__ import annotations

import ibis
import ibis.expr.types as ir

# Order of points at equal timestamps. An interval between two events is attributed by the event
# that ends it, so within a group of simultaneous events the one that *ends* an activity must come
# first: a radio reception or a processing end closes what came before; an arrival closes a link;
# a delivery closes a reassembly or reordering hold (an uplink PDCP delivery and the GTP-U enqueue
# it causes share a timestamp, and the hold is the delivery's); an enqueue, head-of-line, segment
# or proc_begin starts something new.
POINT_RANK = {
    "rx": 0,
    "proc_end": 1,
    "arrive": 2,
    "deliver": 3,
    "tx": 4,
    "enqueue": 5,
    "dequeue": 6,
    "hol": 7,
    "segment": 8,
    "proc_begin": 9,
    "ce_mark": 10,
    "drop": 11,
}

# Among simultaneous events of the same point, lower layers first (a delivery climbs the stack).
LAYER_RANK = {
    "phy": 0,
    "mac": 1,
    "rlc": 2,
    "f1u": 3,
    "pdcp": 4,
    "sdap": 5,
    "cuup_exec": 6,
    "gtpu": 7,
    "n3": 8,
    "upf": 9,
    "n6": 10,
    "app": 11,
}

COMPONENTS = [
    "processing",
    "queueing_compute",
    "queueing_protocol",
    "scheduling",
    "retransmission",
    "reordering",
    "transport",
    "unattributed",
]

# Layers in the order a downlink packet crosses them (used to order figures and tables).
LAYER_ORDER = ["n6", "upf", "n3", "gtpu", "cuup_exec", "sdap", "pdcp", "f1u", "rlc", "mac", "phy", "app"]

PERCENTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}


def _rank_expr(col: ir.StringColumn, table: dict[str, int], default: int) -> ir.IntegerColumn:
    return col.cases(*[(k, v) for k, v in table.items()], else_=default)


P = POINT_RANK  # point codes: the tie rank doubles as a compact code
L = LAYER_RANK
C = {c: i for i, c in enumerate(COMPONENTS)}
_P_NAMES = {v: k for k, v in P.items()}
_L_NAMES = {v: k for k, v in L.items()}


def steps(pe: ir.Table) -> ir.Table:
    """Each packet's events in order, one row per interval between consecutive events.

    Columns: pkt, t_ns (interval start), dur_ns, lc (layer code), cc (component code); map codes
    with :func:`decode`. Only intervals inside the journey are kept (up to the app delivery or the
    drop, else the last event), so per packet the durations telescope to exactly ``end - first``.

    Events are ordered by one int64 key, ``t_ns * 1024 + point code * 64 + layer code * 4 + min(retx, 3)``
    (valid for t_ns in [0, ~104 days)), so the window sorts one integer column and a single LEAD
    of the key tells the next event's time, point, layer and retransmission index.
    """
    ev = pe.select(
        "pkt",
        "t_ns",
        "retx",
        pc=_rank_expr(pe.point, P, 12).cast("int64"),
        lc=_rank_expr(pe.layer, L, 15).cast("int64"),
        exec_q=pe.queue.endswith("_exec").fill_null(False),
    )
    is_terminal = ((ev.pc == P["deliver"]) & (ev.lc == L["app"])) | (ev.pc == P["drop"])
    ev = ev.mutate(
        # One int64 carries the order and everything the next interval's rule needs about an event:
        # t_ns * 1024 + point code * 64 + layer code * 4 + min(retx, 3).
        key=(ev.t_ns << 10) + (ev.pc << 6) + (ev.lc << 2) + ibis.least(ev.retx, 3).cast("int64"),
        terminal=ibis.ifelse(is_terminal, ev.t_ns, None),
    )
    w = ibis.window(group_by=ev.pkt, order_by=ev.key)
    s = ev.mutate(
        nk=ev.key.lead().over(w),
        # The journey ends at the app delivery or the drop; a packet with neither ends at its last event.
        end_ns=ev.terminal.min().over(ibis.window(group_by=ev.pkt)),
    )
    s = s.filter(s.nk.notnull())
    # Bit operations, not `//` (which some backends compile to float division and would round t_ns).
    s = s.mutate(nt=s.nk >> 10, np=(s.nk >> 6) & 15, nl=(s.nk >> 2) & 15, nr=s.nk & 3)
    s = s.filter((s.nt > s.t_ns) & (s.end_ns.isnull() | (s.nt <= s.end_ns)))
    queued = s.pc.isin([P["enqueue"], P["hol"], P["dequeue"]])
    # The fallbacks on the start event: a queue's wait, or a worker's processing ending in a drop.
    by_start = queued | (s.pc == P["proc_begin"])
    cc = ibis.cases(
        (s.np == P["arrive"], C["transport"]),
        (s.np == P["proc_begin"], C["queueing_compute"]),
        (s.np == P["proc_end"], C["processing"]),
        (s.np.isin([P["hol"], P["dequeue"]]), C["queueing_protocol"]),
        ((s.np == P["segment"]) & (s.nr > 0), C["retransmission"]),
        (s.np == P["segment"], C["scheduling"]),
        ((s.np == P["tx"]) & (s.nl == L["mac"]) & (s.nr > 0), C["retransmission"]),
        ((s.np == P["tx"]) & (s.nl == L["mac"]), C["scheduling"]),
        (s.np == P["rx"], C["transport"]),
        ((s.np == P["deliver"]) & s.nl.isin([L["rlc"], L["pdcp"]]), C["reordering"]),
        ((s.pc == P["enqueue"]) & s.exec_q, C["queueing_compute"]),
        (queued, C["queueing_protocol"]),
        (s.pc == P["proc_begin"], C["processing"]),
        else_=C["unattributed"],
    )
    # The layer of the rule that fired: the ending event's, except the two fallbacks on the start.
    by_next = [P[x] for x in ("arrive", "proc_begin", "proc_end", "hol", "dequeue", "tx", "rx", "deliver")]
    layer = ibis.cases(
        (s.np == P["segment"], ibis.ifelse(s.nr > 0, L["rlc"], L["mac"])),
        ((s.np == P["tx"]) & (s.nl != L["mac"]), ibis.ifelse(by_start, s.lc, s.nl)),
        ((s.np == P["deliver"]) & ~s.nl.isin([L["rlc"], L["pdcp"]]), ibis.ifelse(by_start, s.lc, s.nl)),
        (s.np.isin(by_next), s.nl),
        (by_start, s.lc),
        else_=s.nl,
    )
    return s.select("pkt", "t_ns", dur_ns=s.nt - s.t_ns, lc=layer, cc=cc)


def decode(t: ir.Table) -> ir.Table:
    """Replaces the `lc`/`cc` codes of :func:`steps` by the layer and component names."""
    return t.mutate(
        layer=t.lc.cases(*_L_NAMES.items(), else_="other"),
        component=t.cc.cases(*enumerate(COMPONENTS), else_="unattributed"),
    ).drop("lc", "cc")


def components(st: ir.Table, j: ir.Table | None = None) -> ir.Table:
    """Per packet, layer and component: the summed duration (positive durations only).

    With the journeys ``j``, the rows are pre-joined with the packet's direction, UE, flow, slice,
    ingress time and status, so profiles group without joining again.
    """
    g = st.group_by(["pkt", "lc", "cc"]).agg(ns=st.dur_ns.sum().cast("int64"))
    c = decode(g).select("pkt", "layer", "component", "ns")
    if j is None:
        return c
    attrs = j.select("pkt", "dir", "ue", "flow", "slice", "t_in_ns", "status")
    return c.inner_join(attrs, "pkt").select("pkt", "dir", "ue", "flow", "slice", "t_in_ns", "status", "layer", "component", "ns")


def journeys(pe: ir.Table, ce: ir.Table) -> ir.Table:
    """One row per packet: ingress/egress, one-way delay, fate, identity, segment and retransmission counts."""
    is_app_deliver = (pe.point == "deliver") & (pe.layer == "app")
    is_drop = pe.point == "drop"
    j = pe.group_by("pkt").agg(
        dir=pe.dir.max(),
        ue=pe.ue.max(),
        rnti=pe.rnti.max(),
        flow=pe.flow.max(),
        slice=pe.slice.max(),
        qfi=pe.qfi.max(),
        drb=pe.drb.max(),
        t_in_ns=pe.t_ns.min(),
        t_last_ns=pe.t_ns.max(),
        t_out_ns=pe.t_ns.min(where=is_app_deliver),
        t_drop_ns=pe.t_ns.min(where=is_drop),
        drop_layer=pe.layer.max(where=is_drop),
        drop_reason=pe.reason.max(where=is_drop),
        # At the ingress event: the earliest; among simultaneous ones the highest layer (where the
        # packet entered: the app's send, N6), then the lowest point code. t_ns * 256 + rank is
        # unique per packet's (time, layer, point) for t_ns in [0, ~417 days).
        bytes=pe.bytes.argmin(
            (pe.t_ns << 8) + ((15 - _rank_expr(pe.layer, L, 15)) << 4).cast("int64") + _rank_expr(pe.point, P, 12).cast("int64")
        ),
        segments=((pe.point == "segment") & (pe.retx == 0)).sum().cast("int64"),
        harq_retx=((pe.point == "tx") & (pe.layer == "mac") & (pe.retx > 0)).sum().cast("int64"),
        rlc_retx=((pe.point == "segment") & (pe.retx > 0)).sum().cast("int64"),
        ce=((pe.point == "ce_mark") | (pe.ecn == 3)).any(),
        n_events=pe.count(),
    )
    # The packet id's own type (uint64 in the events; a backend without unsigned types reads it signed).
    inflight = ce.filter(ce.kind == "in_flight").select(pkt=ce.sn.cast(pe.pkt.type()), in_flight=ibis.literal(True))
    j = j.left_join(inflight, "pkt").drop("pkt_right")
    status = ibis.cases(
        (j.t_out_ns.notnull(), "delivered"),
        (j.t_drop_ns.notnull(), "dropped"),
        (j.in_flight.fill_null(False), "in_flight"),
        else_="incomplete",
    )
    end = j.t_out_ns.fill_null(j.t_drop_ns).fill_null(j.t_last_ns)
    return j.mutate(
        status=status,
        delay_ns=j.t_out_ns - j.t_in_ns,
        span_ns=end - j.t_in_ns,
    ).drop("in_flight", "t_last_ns")


def _stats(col: ir.NumericColumn) -> dict:
    """Count, mean, max and the exact percentiles (one sort per group: all quantiles in one call)."""
    return {"count": col.count(), "mean_ns": col.mean(), "max_ns": col.max(), "qs": col.quantile(list(PERCENTILES.values()))}


def _unpack(t: ir.Table) -> ir.Table:
    return t.mutate(**{f"{name}_ns": t.qs[i] for i, name in enumerate(PERCENTILES)}).drop("qs")


# Every scope is also split by direction ("run" is the whole run per direction).
SCOPES = {"run": None, "ue": "ue", "flow": "flow", "slice": "slice"}
WINDOW_SCOPES = ["run", "ue"]


def profiles(j: ir.Table, comp: ir.Table, window_ns: int | None, duration_ns: int, population: str = "delivered") -> ir.Table:
    """Statistics per scope (run / ue / flow / slice, each by direction) × layer × component, whole
    run and per window.

    ``population`` is ``delivered`` (packets that reached the destination application: rows with
    layer = component = 'total' describe their one-way delay) or ``observed`` (for sources that
    never see the delivery, such as logs and captures: every packet, and 'total' is its measured
    span); every row names it. The other rows describe one component at one layer over the
    population's packets that spent time in it. ``packets`` counts the population's packets of the
    scope and ``mean_per_pkt_ns`` divides the summed component by it, which is what a stacked
    attribution bar shows. ``offered`` splits by status into ``delivered``, ``dropped``,
    ``in_flight`` and ``incomplete`` whatever the population.
    """
    if population not in POPULATIONS:
        raise ValueError(f"population {population!r}; accepted: {', '.join(POPULATIONS)}")
    parts = []
    windows = [(j.mutate(window=ibis.literal(-1, "int64")), comp.mutate(window=ibis.literal(-1, "int64")), SCOPES)]
    if window_ns:
        windows.append(
            (
                j.mutate(window=(j.t_in_ns // window_ns).cast("int64")),
                comp.mutate(window=(comp.t_in_ns // window_ns).cast("int64")),
                {k: SCOPES[k] for k in WINDOW_SCOPES},
            )
        )
    for jw, cw, scopes in windows:
        cj = cw.filter(cw.status == "delivered") if population == "delivered" else cw
        for scope, key in scopes.items():
            kexpr = (lambda t, key=key: t[key].cast("string")) if key else (lambda t: ibis.literal("all"))
            # Totals: one-way delay, throughput and loss.
            g = jw.mutate(scope=ibis.literal(scope), key=kexpr(jw))
            in_pop = (g.status == "delivered") if population == "delivered" else (g.span_ns.notnull())
            measure = g.delay_ns if population == "delivered" else g.span_ns
            tot = g.group_by(["scope", "key", "dir", "window"]).agg(
                **_stats(measure),
                packets=in_pop.sum(),
                offered=g.count(),
                delivered=(g.status == "delivered").sum(),
                dropped=(g.status == "dropped").sum(),
                in_flight=(g.status == "in_flight").sum(),
                incomplete=(g.status == "incomplete").sum(),
                delivered_bytes=g.bytes.sum(where=g.status == "delivered"),
                sum_ns=measure.sum(),
            )
            tot = _unpack(tot).mutate(layer=ibis.literal("total"), component=ibis.literal("total"))
            parts.append(tot)
            c = cj.mutate(scope=ibis.literal(scope), key=kexpr(cj))
            per = _unpack(
                c.group_by(["scope", "key", "dir", "window", "layer", "component"]).agg(**_stats(c.ns), sum_ns=c.ns.sum())
            )
            cnt = tot.select("scope", "key", "dir", "window", *_COUNT_COLUMNS)
            per = per.inner_join(cnt, ["scope", "key", "dir", "window"])
            parts.append(per)
    cols = [
        "scope",
        "key",
        "dir",
        "window",
        "layer",
        "component",
        "count",
        "mean_ns",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "p999_ns",
        "max_ns",
        "sum_ns",
        *_COUNT_COLUMNS,
    ]
    u = ibis.union(*[p.select(*[p[c].cast(_PROFILE_TYPES[c]).name(c) for c in cols]) for p in parts])
    span = ibis.literal(window_ns if window_ns else duration_ns, "int64")
    span = ibis.ifelse(u.window < 0, ibis.literal(max(duration_ns, 1), "int64"), span)
    r = u.mutate(
        window_start_ns=ibis.ifelse(u.window < 0, None, u.window * (window_ns or 1)),
        mean_per_pkt_ns=u.sum_ns / u.packets.nullif(0),
        throughput_bps=u.delivered_bytes.fill_null(0).cast("float64") * 8e9 / span.cast("float64"),
        loss=u.dropped / u.offered.nullif(0),
    ).drop("window")
    ints = [c for c, t in _PROFILE_TYPES.items() if t == "int64" and c in r.columns]
    r = r.mutate(**{c: r[c].cast("int64") for c in ints}, population=ibis.literal(population, "string"))
    # The kernel's column order (crates/scout-analysis/src/write.rs).
    first = ["scope", "key", "dir", "layer", "component", "count", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns"]
    first += ["max_ns", "sum_ns", "population", "packets", "offered", "delivered", "dropped", "in_flight", "incomplete"]
    return r.select(*first, *[c for c in r.columns if c not in first])


#: What a profile describes: delivered packets (by one-way delay), or, for sources that see no
#: delivery (logs, captures), every observed packet (by its measured span).
POPULATIONS = ("delivered", "observed")
#: Per scope: the population's packets, and the packets by status (they add up to ``offered``).
_COUNT_COLUMNS = ["packets", "offered", "delivered", "dropped", "in_flight", "incomplete", "delivered_bytes"]


_PROFILE_TYPES = {
    "scope": "string",
    "key": "string",
    "dir": "string",
    "window": "int64",
    "layer": "string",
    "component": "string",
    "count": "int64",
    "mean_ns": "float64",
    "p50_ns": "float64",
    "p90_ns": "float64",
    "p99_ns": "float64",
    "p999_ns": "float64",
    "max_ns": "int64",
    "sum_ns": "int64",
    "packets": "int64",
    "offered": "int64",
    "delivered": "int64",
    "dropped": "int64",
    "in_flight": "int64",
    "incomplete": "int64",
    "delivered_bytes": "int64",
}


def layer_delays(comp: ir.Table) -> ir.Table:
    """Per packet and layer: the time spent in that layer (all components), for CDFs; `status` tells
    delivered packets from those whose journey the source saw only in part."""
    return comp.group_by(["pkt", "dir", "ue", "status", "layer"]).agg(ns=comp.ns.sum().cast("int64"))


def sojourns(pe: ir.Table) -> ir.Table:
    """Per packet and queue: time from `enqueue` to leaving the queue.

    Executor queues (`*_exec`) are left at the packet's next `proc_begin`; protocol queues at its
    first `segment` or `dequeue` (for the RLC SDU queue: the start of its transmission).
    """
    enq = pe.filter((pe.point == "enqueue") & pe.queue.notnull()).select(
        "pkt", "node", "layer", "queue", "dir", "ue", "drb", t_enq="t_ns"
    )
    leave = pe.filter(pe.point.isin(["proc_begin", "segment", "dequeue"])).select(pkt2="pkt", t_leave="t_ns", lpoint="point")
    is_exec = enq.queue.endswith("_exec")
    jn = enq.inner_join(
        leave,
        [
            enq.pkt == leave.pkt2,
            leave.t_leave >= enq.t_enq,
            ibis.ifelse(is_exec, leave.lpoint == "proc_begin", leave.lpoint != "proc_begin"),
        ],
    )
    g = jn.group_by(["pkt", "node", "layer", "queue", "dir", "ue", "drb", "t_enq"]).agg(t_leave=jn.t_leave.min())
    return g.mutate(sojourn_ns=g.t_leave - g.t_enq)


def queues(pe: ir.Table, so: ir.Table, bin_ns: int) -> ir.Table:
    """Occupancy and sojourn per queue over time, in bins of ``bin_ns``.

    Occupancy comes from the `queue_bytes`/`queue_pkts` the events carry (after each event);
    sojourn is that of the packets that entered the queue in the bin; drops are those at the queue's layer.
    """
    occ = pe.filter(pe.queue.notnull() & pe.queue_bytes.notnull())
    occ = occ.mutate(bin=(occ.t_ns // bin_ns).cast("int64"))
    o = occ.group_by(["node", "layer", "queue", "dir", "bin"]).agg(
        bytes_max=occ.queue_bytes.max(),
        bytes_mean=occ.queue_bytes.mean(),
        pkts_max=occ.queue_pkts.max(),
        pkts_mean=occ.queue_pkts.mean(),
        enqueues=(occ.point == "enqueue").sum().cast("int64"),
    )
    s = so.mutate(bin=(so.t_enq // bin_ns).cast("int64"))
    sg = s.group_by(["node", "layer", "queue", "dir", "bin"]).agg(
        sojourn_mean_ns=s.sojourn_ns.mean(),
        sojourn_max_ns=s.sojourn_ns.max(),
        sojourn_n=s.count(),
    )
    q = o.outer_join(sg, ["node", "layer", "queue", "dir", "bin"])
    q = q.select(
        node=q.node.fill_null(q.node_right),
        layer=q.layer.fill_null(q.layer_right),
        queue=q.queue.fill_null(q.queue_right),
        dir=q.dir.fill_null(q.dir_right),
        t_ns=q.bin.fill_null(q.bin_right) * bin_ns,
        bytes_max=q.bytes_max,
        bytes_mean=q.bytes_mean,
        pkts_max=q.pkts_max,
        pkts_mean=q.pkts_mean,
        enqueues=q.enqueues.fill_null(0).cast("int64"),
        sojourn_mean_ns=q.sojourn_mean_ns,
        sojourn_max_ns=q.sojourn_max_ns,
        sojourn_n=q.sojourn_n.fill_null(0),
    )
    return q.order_by(["queue", "node", "dir", "t_ns"])


def drops(pe: ir.Table) -> ir.Table:
    """Drops per layer, reason, node, direction, UE, slice and flow: how many, bytes, first and last time."""
    d = pe.filter(pe.point == "drop")
    return (
        d.group_by(["layer", "reason", "node", "dir", "ue", "slice", "flow"])
        .agg(count=d.count(), bytes=d.bytes.sum(), first_ns=d.t_ns.min(), last_ns=d.t_ns.max())
        .order_by([ibis.desc("count"), "layer", "reason", "ue", "flow"])
    )


def executors(ce: ir.Table, bin_ns: int) -> ir.Table:
    """Compute executors seen in a trace (srsRAN's executor tracer: ``exec_queueing`` and ``exec_run``
    control rows): per executor, over the whole run (``window_start_ns`` null) and per bin, the tasks,
    their wait for a worker (mean, p99, max) and run time (mean, max), and the share of the bin the
    executor was running (``busy``)."""
    e = ce.filter(ce.kind.isin(["exec_queueing", "exec_run"]))
    e = e.mutate(executor=e.detail.re_extract(r'"executor":"([^"]*)"', 1))
    wait, run = e.kind == "exec_queueing", e.kind == "exec_run"

    def agg(t: ir.Table, keys: list) -> ir.Table:
        w, r = t.kind == "exec_queueing", t.kind == "exec_run"
        return t.group_by(keys).agg(
            node=t.node.arbitrary(),
            layer=t.layer.arbitrary(),
            tasks=w.sum(),
            wait_mean_ns=t.value.mean(where=w),
            wait_p99_ns=t.value.quantile(0.99, where=w),
            wait_max_ns=t.value.max(where=w),
            run_mean_ns=t.value.mean(where=r),
            run_max_ns=t.value.max(where=r),
            run_sum_ns=t.value.sum(where=r),
        )

    del wait, run
    whole = agg(e, ["executor"]).mutate(window_start_ns=ibis.null().cast("int64"))
    span = e.t_ns.max() - e.t_ns.min() + bin_ns
    whole = whole.mutate(busy=whole.run_sum_ns / span.as_scalar().cast("float64"))
    b = e.mutate(window_start_ns=(e.t_ns // bin_ns) * bin_ns)
    binned = agg(b, ["executor", "window_start_ns"])
    binned = binned.mutate(busy=binned.run_sum_ns / float(bin_ns))
    cols = ["executor", "node", "layer", "window_start_ns", "tasks", "wait_mean_ns", "wait_p99_ns", "wait_max_ns"]
    cols += ["run_mean_ns", "run_max_ns", "busy"]
    return whole.select(cols).union(binned.select(cols)).order_by(["executor", "window_start_ns"])


def drop_series(pe: ir.Table, bin_ns: int) -> ir.Table:
    d = pe.filter(pe.point == "drop")
    d = d.mutate(t_ns=(d.t_ns // bin_ns) * bin_ns)
    return d.group_by(["t_ns", "layer", "reason"]).agg(count=d.count()).order_by(["t_ns", "layer", "reason"])


def tti(se: ir.Table) -> ir.Table:
    """Per slot and direction: each UE's allocation and HARQ outcome, and the cell's utilisation."""
    return se.mutate(
        harq=ibis.cases((se.ack == True, "ack"), (se.ack == False, "nack"), else_=None),  # noqa: E712
        utilisation=se.prbs_used.cast("float64") / se.prbs_total.nullif(0).cast("float64"),
        is_retx=se.retx_index > 0,
    ).order_by(["t_ns", "dir", "ue"])
