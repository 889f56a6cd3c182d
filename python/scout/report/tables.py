"""The report's tables: attribution, drops, phases, per UE / slice / flow, correlation, executors,
metrics cross-check, UE connections and unused input lines, as sortable, filterable HTML."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from scout import analysis

MS = 1e6


def table_html(df: pd.DataFrame, table_id: str, fmt: dict | None = None) -> str:
    fmt = fmt or {}
    if df.empty:
        return f'<p class="empty" id="{table_id}">none</p>'
    head = "".join(
        f"<th>{html.escape(str(c)[:-3] + '_ms' if fmt.get(c) is fmt_ms and str(c).endswith('_ns') else str(c))}</th>"
        for c in df.columns
    )
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, row, strict=True):
            f = fmt.get(c)
            if v is None or (isinstance(v, float) and np.isnan(v)):
                s = ""
            elif f:
                s = f(v)
            elif isinstance(v, float):
                s = f"{v:.4g}"
            else:
                s = str(v)
            cells.append(f'<td data-v="{html.escape(str(v))}">{html.escape(s)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="sortable" id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def fmt_ms(v) -> str:
    return f"{v / MS:.3f}"


def connections_table(meta: dict) -> pd.DataFrame:
    """UE connections of an srsRAN run (`run.json` `ue_identity.connections`): which indexes,
    C-RNTI and 5G-S-TMSI each UE id had, and how a returning UE was recognised."""
    conns = (meta.get("ue_identity") or {}).get("connections") or []
    cols = ["ue", "du_ue", "cu_up_ue", "cu_cp_ue", "c_rnti", "five_g_s_tmsi", "start_s", "end_s", "line", "ue_decided_by"]
    rows = [{c: x.get(c) for c in cols} for x in conns if not x.get("implicit")]
    return pd.DataFrame(rows, columns=cols)


def inputs_table(meta: dict) -> pd.DataFrame:
    """What of an ingested source was not used, by cause, with the first example (file:line)."""
    rows = []
    ing = meta.get("ingest") or {}
    for f in ing.get("files", []):
        name = f.get("file", "")
        for key, what in [
            ("orphan_lines", "lines before the first log entry"),
            ("invalid_utf8_lines", "lines that are not UTF-8 (read with replacement characters)"),
            ("overlong_lines", "lines longer than 1 MiB (skipped)"),
            ("impossible_time_lines", "entries with an impossible time (skipped)"),
            ("out_of_order_entries", "entries older than one before them (asynchronous logger)"),
        ]:
            if f.get(key):
                rows.append([what, "reader", f[key], name])
        if f.get("cut_last_line"):
            rows.append(["last line cut mid-line (no line end; not used)", "reader", 1, f"{name}:{f['cut_last_line']}"])
        gaps = f.get("skipped_log_lines_markers") or []
        if gaps:
            rows.append(["srslog 'Potentially skipped log lines' markers", "reader", len(gaps), f"{name}:{gaps[0]}"])
    sk = (meta.get("counts") or {}).get("skipped_inputs") or {}
    first = sk.get("unlinked_first") or {}
    for cause, n in sorted((sk.get("unlinked_lines") or {}).items(), key=lambda kv: -kv[1]):
        rows.append([f"could not be linked: {cause}", cause.split("_")[0] if "_" in cause else "", n, first.get(cause, "")])
    for x in sk.get("per_packet_lines_not_turned_into_events") or []:
        layer = x["message"].split(":")[0]
        rows.append([f"not turned into events: {x['message']}", layer, x["count"], x.get("first", x.get("first_line"))])
    if ing.get("srb_lines"):
        rows.append(["signalling-bearer (SRB) lines, not user plane", "", ing["srb_lines"], ""])
    rows += _pcap_rows(meta)
    for key in ("trace", "metrics"):
        t = meta.get(key) or {}
        if t.get("bad_lines"):
            rows.append([f"{key} lines that are not events", key, t["bad_lines"], ", ".join(t.get("first_bad_lines", []))])
    return pd.DataFrame(rows, columns=["what", "layer", "count", "first"])


def _pcap_rows(meta: dict) -> list[list]:
    """What of a capture was not used (`scout ingest pcap`), by cause."""
    pc, pf = meta.get("pcap") or {}, meta.get("pfcp") or {}
    if not pc:
        return []
    rows = []
    for f in pc.get("files", []):
        name = f.get("file", "")
        if f.get("damage"):
            d = f["damage"]
            rows.append(
                [
                    f"damaged file, not read from here: {d['reason']}",
                    "capture",
                    d.get("bytes_not_read") or 0,
                    f"{name}: byte {d['offset']}",
                ]
            )
        if f.get("impossible_time_frames"):
            rows.append(["packets with a time before 1970 or after 2200 (skipped)", "capture", f["impossible_time_frames"], name])
        for kind, n in (f.get("other_block_types") or {}).items():
            rows.append([f"pcapng blocks without packets: {kind}", "capture", n, name])
    sk = (meta.get("counts") or {}).get("skipped_inputs") or {}
    for x in sk.get("frames_not_decoded") or []:
        rows.append([f"frames not decoded: {x['cause']}", "capture", x["count"], x.get("first", "")])
    un = meta.get("unmatched") or {}
    for side in ("n3", "n6"):
        u = (un.get(side) or {}).get("by_reason") or {}
        for key, what in (("no_twin_within_window", "no twin within the window"), ("capture_ended", "the capture ended first")):
            if u.get(key):
                rows.append([f"{side.upper()} sightings without their twin: {what}", side, u[key], ""])
    if pc.get("not_user_plane_frames"):
        rows.append(
            ["frames of other traffic (not between a tunnel's inner addresses)", "capture", pc["not_user_plane_frames"], ""]
        )
    if pc.get("gtpu_length_field_mismatch"):
        rows.append(
            [
                "GTP-U length field disagrees with the datagram (decoded from the datagram)",
                "gtpu",
                pc["gtpu_length_field_mismatch"],
                "",
            ]
        )
    for x in pf.get("undecodable") or []:
        rows.append([f"PFCP messages not decoded: {x['cause']}", "pfcp", x["count"], x.get("first", "")])
    if pf.get("responses_without_request"):
        rows.append(["PFCP responses whose request is not in the capture", "pfcp", pf["responses_without_request"], ""])
    if pf.get("duplicate_sightings"):
        rows.append(["PFCP messages seen again at another capture point (counted once)", "pfcp", pf["duplicate_sightings"], ""])
    return rows


def summary_tables(a: analysis.Analysis) -> dict[str, str]:
    p = a.profiles
    whole = p.filter(p.window_start_ns.isnull() & (p.layer == "total"))
    cols = ["key", "dir", "offered", "delivered", "dropped", "loss", "throughput_bps", "p50_ns", "p99_ns", "max_ns"]
    ms = {c: fmt_ms for c in ("p50_ns", "p99_ns", "max_ns")}
    ms["throughput_bps"] = lambda v: f"{v / 1e6:.2f} Mbit/s"
    ms["loss"] = lambda v: f"{100 * v:.2f} %"
    if a.summary.get("profile_population", "delivered") != "delivered":
        # The source sees part of each path: no delivery, so no throughput or loss to show (the
        # headline says why); the delays are the measured spans.
        cols = ["key", "dir", "offered", "dropped", "p50_ns", "p99_ns", "max_ns"]

    def per(scope: str, name: str) -> pd.DataFrame:
        df = whole.filter(whole.scope == scope).to_pandas()[cols].rename(columns={"key": name})
        # Sorted by key (numerically where the keys are numbers: UE 2 before UE 10), then direction.
        order = pd.to_numeric(df[name], errors="coerce")
        return df.assign(_o=order.fillna(np.inf), _k=df[name]).sort_values(["_o", "_k", "dir"]).drop(columns=["_o", "_k"])

    per_ue, per_slice, per_flow = per("ue", "ue"), per("slice", "slice"), per("flow", "flow")
    drops = a.drops.to_pandas()
    dfmt = {"first_ns": lambda v: f"{v / 1e9:.3f} s", "last_ns": lambda v: f"{v / 1e9:.3f} s"}
    ph = a.phases.to_pandas()
    phfmt = {
        "start_ns": lambda v: f"{v / 1e9:.3f} s",
        "end_ns": lambda v: f"{v / 1e9:.3f} s",
        "queue_bytes_mean": lambda v: f"{v / 1e3:.1f} kB",
    }
    corr = a.correlation.to_pandas()
    cfmt = {"sojourn_mean_ns": fmt_ms, "rtt_mean_ns": fmt_ms}
    comp = p.filter((p.scope == "run") & p.window_start_ns.isnull() & (p.layer != "total")).to_pandas()[
        ["dir", "layer", "component", "count", "mean_per_pkt_ns", "mean_ns", "p50_ns", "p99_ns", "max_ns"]
    ]
    comp = comp.sort_values(["dir", "mean_per_pkt_ns"], ascending=[True, False])
    ex = a.executors
    ex = ex.filter(ex.window_start_ns.isnull()).drop("window_start_ns").to_pandas()
    efmt = {c: fmt_ms for c in ("wait_mean_ns", "wait_p99_ns", "wait_max_ns", "run_mean_ns", "run_max_ns")}
    efmt["busy"] = lambda v: f"{100 * v:.1f} %"
    mc = a.metrics_check.to_pandas()

    def _num(v: float) -> str:
        return "" if pd.isna(v) else f"{v:,.3f}" if abs(v) < 100 else f"{v:,.0f}"

    mfmt = {c: _num for c in ("metrics_value", "scout_value")}
    mfmt.update({"window_start_ns": lambda v: f"{v / 1e9:.3f} s", "window_end_ns": lambda v: f"{v / 1e9:.3f} s"})
    mfmt["ratio"] = lambda v: "" if pd.isna(v) else f"{v:.3f}"
    return {
        "metrics_check": table_html(mc, "t-metrics", mfmt) if len(mc) else "",
        "executors": table_html(ex, "t-exec", efmt) if len(ex) else "",
        "per_ue": table_html(per_ue, "t-ue", ms),
        "per_slice": table_html(per_slice, "t-slice", ms),
        "per_flow": table_html(per_flow, "t-flow", ms),
        "drops": table_html(drops, "t-drops", dfmt),
        "phases": table_html(ph, "t-phases", phfmt),
        "correlation": table_html(corr, "t-corr", cfmt),
        "components": table_html(
            comp, "t-comp", {c: fmt_ms for c in ("mean_per_pkt_ns", "mean_ns", "p50_ns", "p99_ns", "max_ns")}
        ),
    }
