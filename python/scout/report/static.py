"""PNG and PDF versions of the report's figures (``scout report --static``), for papers and slides.

Drawn with matplotlib from the same aggregated data as the page (``data.ReportData``), with the
same colours and the same rules: attribution on a log scale, axes of amounts starting at zero,
drops on the queue they happened at.
"""

from __future__ import annotations

from pathlib import Path

from scout.report.data import NO_QUEUE, ReportData

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
LAYER_COLORS = {
    "total": "#111111",
    "measured span": "#111111",
    "app": "#8c564b",
    "n6": "#7f7f7f",
    "upf": "#17becf",
    "n3": "#bcbd22",
    "gtpu": "#1f77b4",
    "cuup_exec": "#ff7f0e",
    "sdap": "#9467bd",
    "pdcp": "#2ca02c",
    "f1u": "#d62728",
    "rlc": "#e377c2",
    "mac": "#8c6d31",
    "phy": "#393b79",
}
PHASE_COLORS = {"buildup": "#fde0c5", "saturation": "#f9b4b4", "steady": "#d6d6f5", "drain": "#cfe8cf"}


def write(d: ReportData, figdir: Path) -> list[Path]:
    """Writes each figure the run has as PNG and PDF into ``figdir``; returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figdir.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig, name: str) -> None:
        fig.tight_layout()
        for ext in ("png", "pdf"):
            p = figdir / f"{name}.{ext}"
            fig.savefig(p, dpi=150)
            written.append(p)
        plt.close(fig)

    if d.attribution:
        rows = d.attribution["rows"]
        n = sum(len(r["components"]) for per in rows.values() for r in per)
        fig, axes = plt.subplots(1, len(rows), figsize=(6.5 * len(rows), 1.2 + 0.28 * n / len(rows)), squeeze=False)
        for ax, (dir_, per) in zip(axes[0], rows.items(), strict=True):
            labels, values, colors = [], [], []
            for r in per:
                for c in r["components"]:
                    labels.append(f"{r['layer']} {c['component'].replace('_', ' ')}")
                    values.append(c["ns"][0] / 1e6)
                    colors.append(COMPONENT_COLORS.get(c["component"], "#999"))
            ys = range(len(labels))
            ax.barh(ys, values, color=colors)
            ax.set_yticks(list(ys), labels, fontsize=8)
            ax.invert_yaxis()
            ax.set_xscale("log")
            ax.set_xlabel("ms per packet (log scale)")
            ax.set_title(f"{dir_.upper()}: mean time per packet by layer and component", fontsize=10)
        save(fig, "attribution")
    if d.percentiles:
        ser = d.percentiles["series"]
        fig, axes = plt.subplots(1, len(ser), figsize=(6.5 * len(ser), 4), squeeze=False)
        x = [p * 100 for p in d.percentiles["p"]]
        for ax, (dir_, ss) in zip(axes[0], ser.items(), strict=True):
            for s in ss:
                total = s["name"] in ("total", "measured span")
                ax.plot(x, [v / 1e6 if v and v > 0 else None for v in s["ns"]], label=s["name"],
                        color=LAYER_COLORS.get(s["name"], "#999"), lw=2.2 if total else 1.1)  # fmt: skip
            ax.set_yscale("log")
            ax.set_xlabel("percentile of packets (%)")
            ax.set_ylabel("ms (log scale)")
            ax.set_title(f"{dir_.upper()}: {d.percentiles['what']} and each layer, by percentile", fontsize=10)
            ax.legend(fontsize=7, ncol=2, loc="upper left", frameon=False)
            ax.grid(alpha=0.3)
        save(fig, "percentiles")
    if d.queues:
        panels = d.queues[:6]
        fig, axes = plt.subplots(len(panels), 1, figsize=(11, 2.3 * len(panels)), sharex=True, squeeze=False)
        for ax, q in zip(axes[:, 0], panels, strict=True):
            for p in q["phases"]:
                ax.axvspan(p["start_ns"] / 1e9, p["end_ns"] / 1e9, color=PHASE_COLORS.get(p["phase"], "#eee"), lw=0)
            if q["bytes"]:
                pts = [(t, b / 1e3) for t, b in zip(q["t_s"], q["bytes"], strict=True) if b is not None]
                ax.step([t for t, _ in pts], [b for _, b in pts], where="post", color=LAYER_COLORS.get(q["layer"], "#1f77b4"))
                ax.set_ylabel("kB")
            ax.set_ylim(bottom=0)
            if q["drops"]:
                ax2 = ax.twinx()
                for reason, counts in q["drops"].items():
                    pts = [(t, c) for t, c in zip(q["t_s"], counts, strict=True) if c]
                    ax2.plot([t for t, _ in pts], [c for _, c in pts], ".", ms=3, label=f"drops: {reason}")
                ax2.set_ylim(bottom=0)
                ax2.set_ylabel("drops per bin")
                ax2.legend(fontsize=7, loc="upper right", frameon=False)
            where = f"drops at {q['node']}" if q["queue"] == NO_QUEUE else f"{q['queue']} at {q['node']}"
            ax.set_title(f"{where} ({q['dir']})", fontsize=9, loc="left")
        axes[-1, 0].set_xlabel("time (s)")
        save(fig, "queues")
    if d.rtt:
        fig, ax = plt.subplots(figsize=(11, 3.4))
        ax.plot(d.rtt["t_s"], d.rtt["rtt_ms"], ".", ms=3, color="#1f77b4", label="application RTT")
        q = d.rtt["queue"]
        if q:
            ax.plot(q["t_s"], q["sojourn_ms"], color="#d62728", label=f"{q['name']} sojourn (r = {q['pearson_r']:.2f})")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("ms")
        ax.set_xlabel("time (s)")
        ax.legend(fontsize=8, loc="upper right", frameon=False)
        save(fig, "rtt")
    if d.cc:
        flows = d.cc["flows"]
        fig, axes = plt.subplots(len(flows), 1, figsize=(11, 3.0 * len(flows)), sharex=True, squeeze=False)
        for ax, f in zip(axes[:, 0], flows, strict=True):
            ax.plot(f["t_s"], f["raw_ms"], ".", ms=2, color="#9c9c9c", label="as measured")
            ax.plot(f["t_s"], f["used_ms"], ".", ms=2, color="#1f77b4", label="as the controller used it")
            ax.plot(f["retx"]["t_s"], f["retx"]["ms"], "o", ms=3, color="#d62728", label="retransmission event (T_M, T_R)")
            ax.set_ylim(bottom=0)
            ax.set_ylabel("ms")
            ax.set_title(f"{f['cc']}, flow {f['flow']} ({f['dir']}): {f['signal']} samples", fontsize=9, loc="left")
            ax.legend(fontsize=7, loc="upper right", frameon=False)
        axes[-1, 0].set_xlabel("time (s)")
        save(fig, "cc")
    if d.tti:
        dirs = d.tti["dirs"]
        fig, axes = plt.subplots(len(dirs), 1, figsize=(11, 2.6 * len(dirs)), sharex=True, squeeze=False)
        for ax, (dir_, x) in zip(axes[:, 0], dirs.items(), strict=True):
            for ue, prbs in x["ues"].items():
                pts = [(t, v) for t, v in zip(x["t_s"], prbs, strict=True) if v is not None]
                ax.plot([t for t, _ in pts], [v for _, v in pts], ".", ms=1.5, label=f"UE {ue}")
            ax.set_ylim(bottom=0)
            ax.set_ylabel("PRBs")
            ax.set_title(f"{dir_.upper()}: PRBs per UE", fontsize=9, loc="left")
            ax.legend(fontsize=7, loc="upper right", markerscale=4, frameon=False, ncol=5)
        axes[-1, 0].set_xlabel("time (s)")
        save(fig, "tti")
    return written
