"""`scout report`: one self-contained HTML file (no network), an instrument rather than a poster.

Figures follow SCOUT (seeds/000): attribution by layer and component on a log scale (fig. 4,
across runs when several are given), delay at every percentile per layer, each busy queue's
occupancy with the drops that happened at it and the overload phases (fig. 5), application RTT
over the best-correlated queue's sojourn on one axis (fig. 6), PRBs per UE per slot, and the
journey of a selected packet through every layer. Time series are drawn by uPlot (vendored,
MIT): zoom by dragging down to a single slot, double-click to reset, hover for values. Their data
are aggregated in DuckDB (``data.py``), so a report's cost does not grow with the run's packets.
Each component has one colour in every figure. A figure the source cannot give is absent with
one line saying why; the headline is the source's own (``scout.analysis.headline``).
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

from scout import analysis
from scout.report import data as report_data
from scout.report.tables import connections_table, fmt_ms, inputs_table, summary_tables, table_html

HERE = Path(__file__).parent
#: Progress stages of [render].
STAGES = 4


def discard(run_path: Path) -> bool:
    """Removes a run's report (an unfinished one: no page yet); returns whether there was one."""
    d = Path(run_path) / "report"
    if not d.is_dir() or d.is_symlink():
        return False
    shutil.rmtree(d)
    return True


def _kpis(a: analysis.Analysis) -> str:
    """The source's headline figures; the closure check only where packets were delivered (a
    check over nothing is not shown, let alone in green)."""
    s = a.summary
    hl = s.get("headline") or {}
    parts = []
    for st, n in sorted(s.get("packets", {}).items()):
        label = st if s.get("coverage") == "end_to_end" else ("seen (part of the path)" if st == "incomplete" else st)
        parts.append(f'<span class="kpi">{html.escape(label)}<b>{n:,}</b></span>')
    for d, v in sorted(s.get("delay_ns", {}).items()):
        parts.append(f'<span class="kpi">{d.upper()} one-way p50 / p99<b>{fmt_ms(v["p50"])} / {fmt_ms(v["p99"])} ms</b></span>')
    cl = s.get("closure", {})
    if cl.get("n"):
        ok = cl.get("closed") == cl.get("n")
        parts.append(
            f'<span class="kpi">attribution closes<b class="{"ok" if ok else "bad"}">{cl["closed"]:,} / {cl["n"]:,}</b></span>'
        )
    elif cl.get("span_n"):
        ok = cl.get("span_closed") == cl.get("span_n")
        parts.append(
            f'<span class="kpi">components sum to the measured span<b class="{"ok" if ok else "bad"}">'
            f"{cl['span_closed']:,} / {cl['span_n']:,}</b></span>"
        )
    parts.append(f'<span class="kpi">drops<b>{s.get("drops_total", 0):,}</b></span>')
    figs = "".join(f"<li><b>{html.escape(f['name'])}</b>: {html.escape(f['value'])}</li>" for f in hl.get("figures", []))
    absent = "".join(
        f"<li><b>{html.escape(x['name'])}</b>: not measured — {html.escape(x['why'])}</li>" for x in hl.get("absent", [])
    )
    covers = f'<p class="sub">This source covers {html.escape(hl["covers"])}.</p>' if hl.get("covers") else ""
    return f'<div class="kpis">{"".join(parts)}</div>{covers}<ul class="headline">{figs}{absent}</ul>'


FIGURES = [
    ("attribution", "Latency attribution by layer and component"),
    ("percentiles", "Delay at every percentile, per layer"),
    ("queues", "Queues over time: occupancy, drops where they happened, overload phases"),
    ("rtt", "Application RTT over in-stack sojourn"),
    ("cc", "Delay samples of the delay-based senders against the RAN's retransmission events"),
    ("tti", "PRBs per UE per slot"),
    ("journey", "One packet's journey"),
]


def render(a: analysis.Analysis, compare: list[analysis.Analysis] | None = None, progress=None, static: bool = False) -> Path:
    """Writes RUN/report/index.html (and with ``static`` RUN/report/figures/*.png, *.pdf); returns
    the page's path. ``compare``: runs whose attribution the first figure compares (SCOUT fig. 4).
    ``progress(stage)`` hears of each of [STAGES] stages."""
    say = progress or (lambda _name: None)
    out = a.path / "report"
    out.mkdir(parents=True, exist_ok=True)
    say("figure data")
    d = report_data.collect(a, compare)
    say("tables")
    tables = summary_tables(a)
    figdir = out / "figures"
    if static:
        from scout.report import static as static_figures

        static_figures.write(d, figdir)
    elif figdir.is_dir():
        shutil.rmtree(figdir)  # figures of an earlier report would not match this one
    say("page")
    meta = a.meta
    title = f"Scout report — {html.escape(d.run)}"
    figure_data = {
        "bin_s": d.bin_ns / 1e9,
        "attribution": d.attribution,
        "percentiles": d.percentiles,
        "queues": d.queues,
        "rtt": d.rtt,
        "cc": d.cc,
        "tti": d.tti,
        "journey": d.journeys,
        "absent": d.absent,
    }
    present = [(n, t) for n, t in FIGURES if n not in d.absent and figure_data.get(n)]
    fig_html = "".join(
        f'<figure id="fig-{n}" data-figure="{n}"><h3>{html.escape(t)}</h3><div class="plot" id="plot-{n}"></div>'
        f'<figcaption id="cap-{n}"></figcaption></figure>'
        for n, t in present
    )
    absent_html = "".join(
        f'<p class="absent" data-absent="{n}"><b>{html.escape(t)}</b>: not shown — {html.escape(d.absent[n])}</p>'
        for n, t in FIGURES
        if n in d.absent
    )

    def sec(sid: str, h: str, body: str, filt: str | None = None) -> str:
        f = f'<input class="filter" placeholder="filter rows" data-table="{filt}">' if filt else ""
        return f'<section id="{sid}"><h2>{h}</h2>{f}{body}</section>'

    nav = "".join(
        f'<a href="#{k}">{v}</a> '
        for k, v in [
            ("figures", "figures"),
            ("components", "components"),
            ("drops", "drops"),
            ("ue", "per UE"),
            ("slice", "per slice"),
            ("flow", "per flow"),
            ("run", "run"),
        ]
    )
    counts = meta.get("counts", {})
    inputs = inputs_table(meta)
    inputs_html = table_html(inputs, "t-inputs") if len(inputs) else ""
    conns = connections_table(meta)
    conns_html = table_html(conns, "t-conns") if len(conns) else ""
    subtitle = [f"source: {d.source}", str(meta.get("scenario", {}).get("description") or "")]
    subtitle += [f"seed {meta['seed']}" if meta.get("seed") is not None else ""]
    subtitle += [f"{a.summary.get('events', 0):,} events analysed in {a.summary.get('wall_s', 0)} s"]
    subtitle = [x for x in subtitle if x]
    phases = tables["phases"] if a.summary.get("phases") else ""
    # JSON inside <script>: "</" must not end the element.
    payload = json.dumps(figure_data, separators=(",", ":"), allow_nan=False, default=_json_default).replace("</", "<\\/")
    doc = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{(HERE / "vendor" / "uPlot.min.css").read_text()}</style><style>{(HERE / "page.css").read_text()}</style></head>
<body data-figures="{len(present)}">
<h1>{title}</h1>
<p class="sub">{" · ".join(html.escape(x) for x in subtitle)}</p>
<nav>{nav}</nav>
<section id="kpis">{_kpis(a)}</section>
<section id="figures"><h2>Figures</h2>
<p class="sub">Drag across a time series to zoom (down to one slot), double-click to reset; hover for values.
Time bins: {d.bin_ns / 1e6:g} ms.</p>{fig_html}{absent_html}</section>
{sec("components", "Attribution by layer and component (ms)", tables["components"], "t-comp")}
{sec("drops", "Drops", tables["drops"], "t-drops")}
{sec("phases", "Overload phases", phases) if phases else ""}
{sec("ue", "Per UE", tables["per_ue"], "t-ue")}
{sec("slice", "Per slice", tables["per_slice"])}
{sec("flow", "Per flow", tables["per_flow"], "t-flow")}
{sec("correlation", "Application RTT vs queue sojourn", tables["correlation"]) if d.rtt else ""}
{sec("executors", "Compute executors (srsRAN event tracer)", tables["executors"], "t-exec") if tables["executors"] else ""}
{sec("metrics", "srsRAN metrics vs per-packet results", tables["metrics_check"]) if tables["metrics_check"] else ""}
{sec("connections", "UE connections (srsRAN: indexes, C-RNTI, 5G-S-TMSI)", conns_html, "t-conns") if conns_html else ""}
{sec("inputs", "Input lines not used", inputs_html, "t-inputs") if inputs_html else ""}
<section id="run"><h2>Run</h2><p>Skipped inputs: {html.escape(json.dumps(counts.get("skipped_inputs", {}))[:2000])} ·
telemetry lost: {html.escape(json.dumps(counts.get("telemetry_lost", 0)))} ·
in flight at the end: {html.escape(str(counts.get("in_flight_packets", 0)))}</p>
<details><summary>run.json</summary><pre>{html.escape(json.dumps(meta, indent=1)[:20000])}</pre></details></section>
<script>{(HERE / "vendor" / "uPlot.iife.min.js").read_text()}</script>
<script id="scout-data" type="application/json">{payload}</script>
<script>{(HERE / "page.js").read_text()}</script>
</body></html>
"""
    idx = out / "index.html"
    tmp = out / "index.html.partial"
    tmp.write_text(doc)
    tmp.replace(idx)
    return idx


def _json_default(v):
    """Decimal and numpy values from the database as plain numbers."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)
