"""`scout report`: a self-contained HTML report (inline SVG, no network) plus PNG and PDF figures.

Figures follow SCOUT (seeds/000) figs. 4–6: per-layer stacked attribution (across runs when several
are given), per-layer delay CDFs, queue occupancy and sojourn over time with drops and phases,
application RTT against queue sojourn, and a per-TTI scheduling view.
"""

from __future__ import annotations

import html
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from scout import analysis  # noqa: E402
from scout.analysis.engine import COMPONENTS, LAYER_ORDER  # noqa: E402

COMPONENT_COLORS = {
    "processing": "#4e79a7",
    "queueing_compute": "#f28e2b",
    "queueing_protocol": "#e15759",
    "scheduling": "#76b7b2",
    "retransmission": "#59a14f",
    "reordering": "#edc948",
    "transport": "#b07aa1",
    "unattributed": "#9c9c9c",
}
PHASE_COLORS = {"buildup": "#fde0c5", "saturation": "#f9b4b4", "steady": "#d6d6f5", "drain": "#cfe8cf"}
MS = 1e6


@dataclass
class Figure:
    name: str
    title: str
    caption: str
    svg: str


def _save(fig, name: str, figdir: Path, title: str, caption: str) -> Figure:
    fig.savefig(figdir / f"{name}.png", dpi=150, bbox_inches="tight")
    fig.savefig(figdir / f"{name}.pdf", bbox_inches="tight")
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and DOCTYPE for inline use
    return Figure(name, title, caption, svg)


def _layers_present(names) -> list[str]:
    present = set(names)
    return [x for x in LAYER_ORDER if x in present] + sorted(present - set(LAYER_ORDER))


def _stack(ax, xs: list[str], series) -> None:
    """Stacked bars over ``xs``; ``series`` yields (label, values, colour); all-zero series are left out."""
    bottom = np.zeros(len(xs))
    for label, vals, color in series:
        if vals.sum() > 0:
            ax.bar(xs, vals, bottom=bottom, label=label, color=color)
            bottom += vals


def _legend_twin(ax, ax2) -> None:
    """One legend for a plot and its twin y-axis."""
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")


def fig_attribution(a: analysis.Analysis, figdir: Path) -> Figure:
    p = a.profiles
    rows = p.filter((p.scope == "run") & p.window_start_ns.isnull() & (p.layer != "total")).to_pandas()
    dirs = sorted(rows.dir.unique()) or ["dl"]
    fig, axes = plt.subplots(1, len(dirs), figsize=(6.5 * len(dirs), 4.2), squeeze=False)
    for ax, d in zip(axes[0], dirs, strict=True):
        r = rows[rows.dir == d]
        layers = _layers_present(r.layer)
        _stack(
            ax,
            layers,
            (
                (
                    c,
                    np.array([r[(r.layer == la) & (r.component == c)].mean_per_pkt_ns.sum() / MS for la in layers]),
                    COMPONENT_COLORS[c],
                )
                for c in COMPONENTS
            ),
        )
        who = "delivered packet" if a.summary.get("profile_population", "delivered") == "delivered" else "packet (measured span)"
        ax.set_title(f"{d.upper()}: mean time per {who}, by layer and component")
        ax.margins(y=0.1)
        ax.set_ylabel("ms per packet")
        ax.tick_params(axis="x", rotation=45)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(f"Latency attribution — {a.summary.get('run')}")
    return _save(
        fig,
        "attribution",
        figdir,
        "Latency attribution by layer",
        "Stacked bars: each layer's share of the one-way delay, split into components (mean over delivered packets).",
    )


def fig_compare(analyses: list[analysis.Analysis], figdir: Path) -> Figure:
    """SCOUT fig. 4: per-layer stacked attribution across runs (load levels)."""
    names, per = [], []
    for a in analyses:
        p = a.profiles
        r = p.filter((p.scope == "run") & (p.dir == "dl") & p.window_start_ns.isnull() & (p.layer != "total")).to_pandas()
        names.append(a.summary.get("run") or a.path.name)
        per.append(r)
    allr = pd.concat(per) if per else pd.DataFrame(columns=["layer"])
    layers = _layers_present(allr.layer)
    cmap = plt.get_cmap("tab20")
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    _stack(
        axes[0],
        names,
        ((la, np.array([r[r.layer == la].mean_per_pkt_ns.sum() / MS for r in per]), cmap(i % 20)) for i, la in enumerate(layers)),
    )
    axes[0].set_title("DL: mean delay per packet by layer")
    axes[0].set_ylabel("ms per packet")
    axes[0].legend(fontsize=7, ncol=2, loc="upper left")
    _stack(
        axes[1],
        names,
        ((c, np.array([r[r.component == c].mean_per_pkt_ns.sum() / MS for r in per]), COMPONENT_COLORS[c]) for c in COMPONENTS),
    )
    axes[1].set_title("DL: mean delay per packet by component")
    axes[1].set_ylabel("ms per packet")
    axes[1].legend(fontsize=7, loc="upper left")
    for ax in axes:
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle("Attribution across runs")
    return _save(
        fig,
        "compare",
        figdir,
        "Attribution across runs",
        "Per-layer and per-component stacked delay for each run given to `scout report` (SCOUT fig. 4).",
    )


def fig_cdf(a: analysis.Analysis, figdir: Path) -> Figure:
    ld = a.layer_delays
    j = a.journeys
    # Delivered packets' one-way delay; for sources that see only part of each journey (logs,
    # captures), every packet's measured span.
    n_delivered = int(j.filter(j.status == "delivered").count().execute())
    if n_delivered:
        jj, ldd, total_col, what = j.filter(j.status == "delivered"), ld.filter(ld.status == "delivered"), "delay_ns", "one-way"
    else:
        jj, ldd, total_col, what = j, ld, "span_ns", "measured span"
    dirs = sorted(jj.select("dir").distinct().to_pandas().dir) or ["dl"]
    fig, axes = plt.subplots(1, len(dirs), figsize=(6.5 * len(dirs), 4.2), squeeze=False)
    for ax, d in zip(axes[0], dirs, strict=True):
        dd = ldd.filter(ldd.dir == d).select("layer", "ns").to_pandas()
        tot = jj.filter(jj.dir == d).select(total_col).to_pandas()[total_col]
        series = [(f"{what} (total)", tot)] + [(la, dd[dd.layer == la].ns) for la in _layers_present(dd.layer)]
        for label, v in series:
            v = np.sort(v.dropna().to_numpy(dtype=float)) / MS
            v = v[v > 0]
            if len(v) == 0:
                continue
            y = np.arange(1, len(v) + 1) / len(v)
            ax.step(v, y, where="post", label=label, lw=2.2 if label.endswith("(total)") else 1.2)
        ax.set_xscale("log")
        ax.set_xlabel("delay (ms, log scale)")
        ax.set_ylabel("fraction of delivered packets" if n_delivered else "fraction of packets")
        ax.set_title(f"{d.upper()}: per-layer delay CDF")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right")
    return _save(
        fig,
        "cdf",
        figdir,
        "Per-layer delay CDFs",
        f"Time each packet spent in each layer, and its {what} ({'delivered packets' if n_delivered else 'all packets'}).",
    )


def fig_queues(a: analysis.Analysis, figdir: Path) -> Figure:
    q = a.queues.to_pandas()
    ds = a.drop_series.to_pandas()
    ph = a.phases.to_pandas()
    if q.empty:
        fig, ax = plt.subplots(figsize=(8, 2))
        ax.text(0.5, 0.5, "no queue telemetry in this run", ha="center", va="center")
        ax.axis("off")
        return _save(fig, "queues", figdir, "Queues over time", "This run's events carry no queue occupancy.")
    # The four busiest queues: by peak occupancy, then peak sojourn; queues that never held anything are left out.
    g = q.groupby(["queue", "node", "dir"]).agg(b=("bytes_max", "max"), s=("sojourn_max_ns", "max")).fillna(0)
    g = g[(g.b > 0) | (g.s > 0)].sort_values(["b", "s"], ascending=False)
    if g.empty:
        g = q.groupby(["queue", "node", "dir"]).agg(b=("bytes_max", "max")).fillna(0)
    keys = list(g.index[:4])
    fig, axes = plt.subplots(len(keys), 1, figsize=(11, 2.6 * len(keys)), sharex=True, squeeze=False)
    for ax, (qn, node, d) in zip(axes[:, 0], keys, strict=True):
        s = q[(q.queue == qn) & (q.node == node) & (q.dir == d)].sort_values("t_ns")
        t = s.t_ns / 1e9
        for _, r in ph.iterrows():
            ax.axvspan(r.start_ns / 1e9, r.end_ns / 1e9, color=PHASE_COLORS.get(r.phase, "#eee"), alpha=0.6, lw=0)
        ax.plot(t, s.bytes_max / 1e3, color="#1f77b4", label="occupancy (kB, max per bin)")
        ax.set_ylabel("kB")
        ax2 = ax.twinx()
        ax2.plot(t, s.sojourn_mean_ns / MS, color="#d62728", label="sojourn (ms, mean per bin)")
        ax2.set_ylabel("sojourn ms")
        if not ds.empty:
            dsum = ds.groupby("t_ns")["count"].sum()
            ax.bar(
                dsum.index / 1e9,
                dsum.values / max(dsum.max(), 1) * max(float(s.bytes_max.max() or 0) / 1e3, 1) * 0.3,
                width=(a.summary.get("bin_s") or 0.1),
                color="black",
                alpha=0.35,
                label="drops (scaled)",
            )
        ax.set_title(f"{qn} at {node} ({d})")
        _legend_twin(ax, ax2)
    axes[-1, 0].set_xlabel("time (s)")
    phases_note = ", ".join(f"{r.phase} (shaded)" for _, r in ph.iterrows()) or "no overload phases"
    return _save(
        fig,
        "queues",
        figdir,
        "Queue occupancy and sojourn over time",
        f"The four queues that held the most bytes; drops overlaid in grey; {phases_note} (SCOUT fig. 5).",
    )


def fig_rtt(a: analysis.Analysis, figdir: Path) -> Figure | None:
    rtt = a.rtt.to_pandas()
    if rtt.empty:
        return None
    corr = a.correlation.to_pandas()
    so = a.sojourns
    fig, ax = plt.subplots(figsize=(11, 3.6))
    ax.plot(rtt.t_ns / 1e9, rtt.rtt_ns / MS, ".", ms=3, color="#1f77b4", label="application RTT (ms)")
    ax.set_ylabel("RTT ms")
    ax.set_xlabel("time (s)")
    label = "no queue"
    if not corr.empty:
        best = corr.dropna(subset=["pearson_r"]).head(1)
        pick = best.iloc[0] if len(best) else corr.iloc[0]
        s = so.filter((so.queue == pick.queue) & (so.node == pick.node) & (so.dir == pick.dir))
        bin_ns = int((a.summary.get("bin_s") or 0.1) * 1e9)
        s = s.mutate(b=(s.t_enq // bin_ns) * bin_ns).group_by("b").agg(m=s.sojourn_ns.mean()).order_by("b").to_pandas()
        ax2 = ax.twinx()
        ax2.plot(s.b / 1e9, s.m / MS, color="#d62728", label=f"{pick.queue} sojourn at {pick.node} (ms)")
        ax2.set_ylabel("sojourn ms")
        label = f"{pick.queue} at {pick.node} {pick.dir}, r = {pick.pearson_r:.2f}"
        _legend_twin(ax, ax2)
    ax.set_title(f"Application RTT against queue sojourn ({label})")
    return _save(
        fig,
        "rtt",
        figdir,
        "Application RTT vs queue sojourn",
        "Time-aligned RTT samples and the best-correlated queue (SCOUT fig. 6).",
    )


def fig_tti(a: analysis.Analysis, figdir: Path) -> Figure:
    t = a.tti
    ue = t.filter(t.ue.notnull())
    bin_ns = 10_000_000
    g = (
        ue.mutate(b=(ue.t_ns // bin_ns))
        .group_by(["dir", "ue", "b"])
        .agg(prbs=ue.prbs.sum(), nacks=(ue.harq == "nack").sum())
        .to_pandas()
    )
    dirs = sorted(g.dir.unique()) or ["dl"]
    fig, axes = plt.subplots(
        len(dirs), 1, figsize=(11, 2.2 + 0.35 * max(g.ue.nunique(), 1)) if len(g) else (11, 2), squeeze=False
    )
    for ax, d in zip(axes[:, 0], dirs, strict=True):
        gd = g[g.dir == d]
        if gd.empty:
            ax.axis("off")
            continue
        ues = sorted(gd.ue.unique())
        b0, b1 = int(gd.b.min()), int(gd.b.max())
        m = np.zeros((len(ues), b1 - b0 + 1))
        for r in gd.itertuples():
            m[ues.index(r.ue), int(r.b) - b0] = r.prbs
        im = ax.imshow(
            m, aspect="auto", interpolation="nearest", cmap="viridis", extent=(b0 * 0.01, (b1 + 1) * 0.01, len(ues) - 0.5, -0.5)
        )
        ax.set_yticks(range(len(ues)), [f"UE {int(u)}" for u in ues])
        ax.set_title(f"{d.upper()} scheduling: PRBs allocated per UE per 10 ms")
        fig.colorbar(im, ax=ax, label="PRB·slots")
    axes[-1, 0].set_xlabel("time (s)")
    return _save(
        fig, "tti", figdir, "Scheduling per TTI", "PRBs granted to each UE over time (sum over the slots of each 10 ms bin)."
    )


def _table(df: pd.DataFrame, table_id: str, fmt: dict | None = None) -> str:
    fmt = fmt or {}
    if df.empty:
        return f'<p class="empty" id="{table_id}">none</p>'
    head = "".join(
        f"<th>{html.escape(str(c)[:-3] + '_ms' if fmt.get(c) is _ms and str(c).endswith('_ns') else str(c))}</th>"
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


def _ms(v) -> str:
    return f"{v / MS:.3f}"


def _connections_table(meta: dict) -> pd.DataFrame:
    """UE connections of an srsRAN run (`run.json` `ue_identity.connections`): which indexes,
    C-RNTI and 5G-S-TMSI each UE id had, and how a returning UE was recognised."""
    conns = (meta.get("ue_identity") or {}).get("connections") or []
    cols = ["ue", "du_ue", "cu_up_ue", "cu_cp_ue", "c_rnti", "five_g_s_tmsi", "start_s", "end_s", "line", "ue_decided_by"]
    rows = [{c: x.get(c) for c in cols} for x in conns if not x.get("implicit")]
    return pd.DataFrame(rows, columns=cols)


def _inputs_table(meta: dict) -> pd.DataFrame:
    """What of an ingested source was not used, by cause, with the first example (file:line)."""
    rows = []
    ing = meta.get("ingest") or {}
    for f in ing.get("files", []):
        name = f.get("file", "")
        for key, what in [
            ("orphan_lines", "lines before the first log entry"),
            ("invalid_utf8_lines", "lines that are not UTF-8 (read with replacement characters)"),
            ("out_of_order_entries", "entries older than one before them (asynchronous logger)"),
        ]:
            if f.get(key):
                rows.append([what, "reader", f[key], name])
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
    for key in ("trace", "metrics"):
        t = meta.get(key) or {}
        if t.get("bad_lines"):
            rows.append([f"{key} lines that are not events", key, t["bad_lines"], ", ".join(t.get("first_bad_lines", []))])
    return pd.DataFrame(rows, columns=["what", "layer", "count", "first"])


def _summary_tables(a: analysis.Analysis) -> dict[str, str]:
    p = a.profiles
    whole = p.filter(p.window_start_ns.isnull() & (p.layer == "total"))
    cols = ["key", "dir", "offered", "delivered", "dropped", "loss", "throughput_bps", "p50_ns", "p99_ns", "max_ns"]
    ms = {c: _ms for c in ("p50_ns", "p99_ns", "max_ns")}
    ms["throughput_bps"] = lambda v: f"{v / 1e6:.2f} Mbit/s"
    ms["loss"] = lambda v: f"{100 * v:.2f} %"
    per_ue = whole.filter(whole.scope == "ue").to_pandas()[cols].rename(columns={"key": "ue"})
    per_slice = whole.filter(whole.scope == "slice").to_pandas()[cols].rename(columns={"key": "slice"})
    per_flow = whole.filter(whole.scope == "flow").to_pandas()[cols].rename(columns={"key": "flow"})
    drops = a.drops.to_pandas()
    dfmt = {"first_ns": lambda v: f"{v / 1e9:.3f} s", "last_ns": lambda v: f"{v / 1e9:.3f} s"}
    ph = a.phases.to_pandas()
    phfmt = {
        "start_ns": lambda v: f"{v / 1e9:.3f} s",
        "end_ns": lambda v: f"{v / 1e9:.3f} s",
        "queue_bytes_mean": lambda v: f"{v / 1e3:.1f} kB",
    }
    corr = a.correlation.to_pandas()
    cfmt = {"sojourn_mean_ns": _ms, "rtt_mean_ns": _ms}
    comp = p.filter((p.scope == "run") & p.window_start_ns.isnull() & (p.layer != "total")).to_pandas()[
        ["dir", "layer", "component", "count", "mean_per_pkt_ns", "mean_ns", "p50_ns", "p99_ns", "max_ns"]
    ]
    comp = comp.sort_values(["dir", "mean_per_pkt_ns"], ascending=[True, False])
    ex = a.executors
    ex = ex.filter(ex.window_start_ns.isnull()).drop("window_start_ns").to_pandas()
    efmt = {c: _ms for c in ("wait_mean_ns", "wait_p99_ns", "wait_max_ns", "run_mean_ns", "run_max_ns")}
    efmt["busy"] = lambda v: f"{100 * v:.1f} %"
    mc = a.metrics_check.to_pandas()

    def _num(v: float) -> str:
        return "" if pd.isna(v) else f"{v:,.3f}" if abs(v) < 100 else f"{v:,.0f}"

    mfmt = {c: _num for c in ("metrics_value", "scout_value")}
    mfmt.update({"window_start_ns": lambda v: f"{v / 1e9:.3f} s", "window_end_ns": lambda v: f"{v / 1e9:.3f} s"})
    mfmt["ratio"] = lambda v: "" if pd.isna(v) else f"{v:.3f}"
    return {
        "metrics_check": _table(mc, "t-metrics", mfmt) if len(mc) else "",
        "executors": _table(ex, "t-exec", efmt) if len(ex) else "",
        "per_ue": _table(per_ue, "t-ue", ms),
        "per_slice": _table(per_slice, "t-slice", ms),
        "per_flow": _table(per_flow, "t-flow", ms),
        "drops": _table(drops, "t-drops", dfmt),
        "phases": _table(ph, "t-phases", phfmt),
        "correlation": _table(corr, "t-corr", cfmt),
        "components": _table(comp, "t-comp", {c: _ms for c in ("mean_per_pkt_ns", "mean_ns", "p50_ns", "p99_ns", "max_ns")}),
    }


JS = r"""
document.querySelectorAll('table.sortable th').forEach(function (th, i) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var asc = th.getAttribute('data-asc') !== '1';
    table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('data-asc'); });
    th.setAttribute('data-asc', asc ? '1' : '0');
    rows.sort(function (a, b) {
      var x = a.cells[i].getAttribute('data-v'), y = b.cells[i].getAttribute('data-v');
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
      return asc ? c : -c;
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
  });
});
document.querySelectorAll('input.filter').forEach(function (inp) {
  inp.addEventListener('input', function () {
    var t = document.getElementById(inp.getAttribute('data-table'));
    if (!t || !t.tBodies.length) return;
    var q = inp.value.toLowerCase();
    Array.prototype.forEach.call(t.tBodies[0].rows, function (r) {
      r.style.display = r.textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
    });
  });
});
document.querySelectorAll('figure').forEach(function (f) {
  f.addEventListener('click', function () { f.classList.toggle('wide'); });
});
"""

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1280px;padding:1em 2em;color:#222}
h1{margin-bottom:.2em} .sub{color:#666;margin-top:0}
nav a{margin-right:1em} section{margin:2em 0}
figure{margin:1em 0;border:1px solid #ddd;padding:.5em;cursor:zoom-in;max-width:900px}
figure.wide{max-width:none;cursor:zoom-out} figure svg{width:100%;height:auto}
figcaption{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:12.5px;margin:.5em 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right} th{background:#f3f3f3;cursor:pointer}
td:first-child,th:first-child{text-align:left}
.kpi{display:inline-block;border:1px solid #ddd;padding:.4em .9em;margin:.2em;border-radius:4px}
.kpi b{display:block;font-size:18px} .ok{color:#2a7d2a} .bad{color:#b22}
input.filter{margin:.3em 0;padding:2px 6px}
"""


def _kpis(a: analysis.Analysis) -> str:
    s = a.summary
    cl = s.get("closure", {})
    parts = []
    for st, n in sorted(s.get("packets", {}).items()):
        parts.append(f'<span class="kpi">{html.escape(st)}<b>{n:,}</b></span>')
    for d, v in sorted(s.get("delay_ns", {}).items()):
        parts.append(f'<span class="kpi">{d.upper()} one-way p50 / p99<b>{_ms(v["p50"])} / {_ms(v["p99"])} ms</b></span>')
    ok = cl.get("closed") == cl.get("n")
    parts.append(
        f'<span class="kpi">attribution closes<b class="{"ok" if ok else "bad"}">'
        f"{cl.get('closed', 0):,} / {cl.get('n', 0):,}</b></span>"
    )
    parts.append(
        f'<span class="kpi">with unattributed time<b class="{"bad" if cl.get("with_unattributed") else "ok"}">'
        f"{cl.get('with_unattributed', 0):,}</b></span>"
    )
    parts.append(f'<span class="kpi">drops<b>{s.get("drops_total", 0):,}</b></span>')
    return "".join(parts)


#: Progress stages of [render]: each figure, the tables, the page.
STAGES = 8


def discard(run_path: Path) -> bool:
    """Removes a run's report (an unfinished one: a figure half-written, no page); returns whether
    there was one."""
    d = Path(run_path) / "report"
    if not d.is_dir() or d.is_symlink():
        return False
    shutil.rmtree(d)
    return True


def render(a: analysis.Analysis, compare: list[analysis.Analysis] | None = None, progress=None) -> Path:
    """Writes RUN/report/index.html and RUN/report/figures/*.{png,pdf}; returns the HTML path.

    ``compare``: runs, in the order given, whose attribution one figure compares (SCOUT fig. 4).
    ``progress(stage_name)`` is told each of [STAGES] stages as it starts.
    """
    say = progress or (lambda _name: None)
    out = a.path / "report"
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    say("attribution")
    figs = [fig_attribution(a, figdir)]
    say("comparison")
    if compare and len(compare) > 1:
        figs.append(fig_compare(compare, figdir))
    say("delay CDF")
    figs.append(fig_cdf(a, figdir))
    say("queues")
    figs.append(fig_queues(a, figdir))
    say("RTT")
    r = fig_rtt(a, figdir)
    if r:
        figs.append(r)
    say("TTI")
    figs.append(fig_tti(a, figdir))
    say("tables")
    tables = _summary_tables(a)
    meta = a.meta
    title = f"Scout report — {html.escape(str(a.summary.get('run')))}"
    fig_html = "".join(
        f'<figure id="fig-{f.name}" data-figure="{f.name}"><h3>{html.escape(f.title)}</h3>{f.svg}'
        f"<figcaption>{html.escape(f.caption)} "
        f'<a href="figures/{f.name}.png">PNG</a> · <a href="figures/{f.name}.pdf">PDF</a></figcaption></figure>'
        for f in figs
    )

    def sec(sid: str, h: str, body: str, filt: str | None = None) -> str:
        f = f'<input class="filter" placeholder="filter rows" data-table="{filt}">' if filt else ""
        return f'<section id="{sid}"><h2>{h}</h2>{f}{body}</section>'

    desc = html.escape(str(meta.get("scenario", {}).get("description", "")))
    nav = "".join(
        f'<a href="#{k}">{v}</a> '
        for k, v in [
            ("figures", "figures"),
            ("components", "components"),
            ("drops", "drops"),
            ("phases", "phases"),
            ("ue", "per UE"),
            ("slice", "per slice"),
            ("flow", "per flow"),
            ("correlation", "RTT correlation"),
            ("run", "run"),
        ]
    )
    counts = meta.get("counts", {})
    skipped = counts.get("skipped_inputs", {})
    inputs = _inputs_table(meta)
    inputs_html = _table(inputs, "t-inputs") if len(inputs) else ""
    conns = _connections_table(meta)
    conns_html = _table(conns, "t-conns") if len(conns) else ""
    doc = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>
<body data-figures="{len(figs)}">
<h1>{title}</h1>
<p class="sub">source: {html.escape(str(meta.get("source")))} · {desc}
 · seed {html.escape(str(meta.get("seed", "")))} · {a.summary.get("events", 0):,} events
 analysed in {a.summary.get("wall_s", 0)} s</p>
<nav>{nav}</nav>
<section id="kpis">{_kpis(a)}</section>
<section id="figures"><h2>Figures</h2><p class="sub">Click a figure to widen it.</p>{fig_html}</section>
{sec("components", "Attribution by layer and component (ms)", tables["components"], "t-comp")}
{sec("drops", "Drops", tables["drops"], "t-drops")}
{sec("phases", "Overload phases", tables["phases"])}
{sec("ue", "Per UE", tables["per_ue"], "t-ue")}
{sec("slice", "Per slice", tables["per_slice"])}
{sec("flow", "Per flow", tables["per_flow"], "t-flow")}
{sec("correlation", "Application RTT vs queue sojourn", tables["correlation"])}
{sec("executors", "Compute executors (srsRAN event tracer)", tables["executors"], "t-exec") if tables["executors"] else ""}
{sec("metrics", "srsRAN metrics vs per-packet results", tables["metrics_check"]) if tables["metrics_check"] else ""}
{sec("connections", "UE connections (srsRAN: indexes, C-RNTI, 5G-S-TMSI)", conns_html, "t-conns") if conns_html else ""}
{sec("inputs", "Input lines not used", inputs_html, "t-inputs") if inputs_html else ""}
<section id="run"><h2>Run</h2><p>Skipped inputs: {html.escape(json.dumps(skipped))} ·
telemetry lost: {html.escape(json.dumps(counts.get("telemetry_lost", 0)))} ·
in flight at the end: {html.escape(str(counts.get("in_flight_packets", 0)))}</p>
<details><summary>run.json</summary><pre>{html.escape(json.dumps(meta, indent=1)[:20000])}</pre></details></section>
<script>{JS}</script>
</body></html>
"""
    say("page")
    idx = out / "index.html"
    tmp = out / "index.html.partial"
    tmp.write_text(doc)
    tmp.replace(idx)
    return idx
