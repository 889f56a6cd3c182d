"""`scout experiment`: named studies run through the emulator, each a set of ordinary run
directories, a comparison report and a ``summary.csv`` (docs/experiments.md).

``tcp-cc`` (SCOUT §7): one iperf3 TCP download through a 20 MHz cell with srsRAN's default deep
RLC queue, once with CUBIC and once with BBR; per run the throughput, the RLC queue's sojourn, the
sender's smoothed RTT (kernel ``tcp_probe``) and how closely the RTT tracks the sojourn.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import html
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

#: Columns of tcp-cc's summary.csv, with their meaning (docs/experiments.md).
TCP_CC_COLUMNS = {
    "cc": "congestion control of the sender (the DN's iperf3 server)",
    "throughput_mbps": "iperf3's received bit rate over its test, Mbit/s",
    "rlc_sojourn_p50_ms": "median time a downlink packet waited in the gNB's RLC SDU queue, ms",
    "rlc_sojourn_p99_ms": "99th percentile of the same, ms",
    "app_rtt_p50_ms": "median smoothed RTT of the sender's socket (tcp_probe srtt, as the analysis takes it), ms",
    "app_rtt_p99_ms": "99th percentile of the same, ms",
    "drops": "packets the model dropped (all layers; RLC queue full among them)",
    "rtt_sojourn_pearson": "Pearson r of the sender's RTT and the RLC sojourn, 100 ms bins (the analysis' correlation)",
}


class Study(Protocol):
    """What a seeded sweep's module (``scout.experiment_NAME``) gives the sweep runner: its
    configurations, ``--only``'s choice among them, a configuration's summary rows from its seeds'
    figures and its progress lines, the summary file. (How a run is made, in the simulator or the
    emulator, is the command's; each module's ``scenario_sets``, ``run_metrics`` and ``report``
    take what its study needs; upf-slices' command pools each load's seeds itself with ``pool``
    before ``summary_rows``, since its report draws the pooled delays.)"""

    def configurations(self) -> list: ...
    def summarize(self, cfg: Any, per_seed: list) -> list[dict]: ...
    def progress(self, cfg: Any, rows: list[dict]) -> list[str]: ...
    def write_summary(self, out: Path, rows: list[dict]) -> Path: ...


@dataclass
class Experiment:
    name: str
    description: str
    scenario: str
    configurations: list[str]


EXPERIMENTS = {
    "tcp-cc": Experiment(
        "tcp-cc",
        "SCOUT §7: CUBIC then BBR, one 20 s iperf3 TCP download each through a 20 MHz cell with a deep RLC "
        "queue; per-layer sojourn against application RTT, throughput, drops",
        "tcp-cc",
        ["cubic", "bbr"],
    ),
    "l4s-anbr": Experiment(
        "l4s-anbr",
        "seed 003: constant rate, UDP Prague on L4S marks at seven threshold pairs, ANBR at three windows and "
        "the hybrid, under a low and a high background load, five seeds each, in the simulator (no root); latency "
        "and throughput with 95 % CIs",
        "l4s-anbr",
        [],
    ),
    "ran-delay": Experiment(
        "ran-delay",
        "seed 004: Copa and GCC with Gandalf's compensation of their delay samples (none, retx, lowpass, all), DL and UL, a good "
        "and a poor channel, the seed's two TDD patterns, five seeds each, in the simulator (no root; --emulate: "
        "real UDP through the emulator, Gandalf reading the UE's live feed); throughput and delay with 95 % CIs",
        "ran-delay",
        [],
    ),
    "rlc-modes": Experiment(
        "rlc-modes",
        "seed 002: iperf3 TCP (CUBIC) and UDP over RLC AM and UM, on a good (-76 dBm RSRP) and a poor (-115 dBm) "
        "channel, five 40-s runs each, through the emulator (root); throughput with 95 % CIs, CUBIC's cwnd from the "
        "kernel, RLC and HARQ retransmissions, the delay per layer",
        "rlc-modes",
        [],
    ),
    "upf-slices": Experiment(
        "upf-slices",
        "seed 001: three slices (eMBB, URLLC, mMTC), each with Scout's real UPF process, eMBB's uplink at 5, 20 and 50 "
        "Mbit/s, through the emulator (root); per slice the N3->N6 delay (p50/p99/p99.9, CDFs) from the probe's identity "
        "pairs and from the seed's nearest-preceding pairing, isolation, PFCP modification latency under each load",
        "upf-slices",
        [],
    ),
}


HYSTART = Path("/sys/module/tcp_cubic/parameters/hystart")


@contextlib.contextmanager
def cubic_hystart(want: str | None):
    """CUBIC's HyStart set to ``want`` (``on``, ``off``; ``None`` or ``keep``: untouched) for the
    duration of the block, then restored; yields a line saying what was done (or ``None``).

    HyStart (Ha and Rhee 2011; Linux's default) leaves slow start when the RTT starts to grow — at
    once in front of a deep RLC queue — after which CUBIC's window grows as a cubic of time and
    needs ~22 s to reach srsRAN's 6 MiB queue. SCOUT §7's sawtooth of drops at the queue limit shows
    within 20 s with it off. It is a machine-wide module parameter (no per-socket or per-namespace
    switch exists), so it is restored even when the run fails.
    """
    if want in (None, "keep") or not HYSTART.exists():
        yield None if want in (None, "keep") else f"   (HyStart: {HYSTART} is absent; left as it is)"
        return
    before = HYSTART.read_text().strip()
    value = "1" if want == "on" else "0"
    HYSTART.write_text(value)
    try:
        yield f"   CUBIC's HyStart {want} for this run ({HYSTART} = {value}; {before} restored after)"
    finally:
        HYSTART.write_text(before)


def tcp_cc_sets(cc: str, seconds: float) -> list[str]:
    """The scenario overrides of one tcp-cc run: the download's congestion control and length."""
    return [
        f"apps[3].cmd=iperf3 -c $SCOUT_DN -t {seconds:g} -R -C {cc} -J",
        f"duration_s={seconds + 3:g}",
    ]


def tcp_cc_metrics(run: Path, cc: str, bin_ns: int = 100_000_000) -> tuple[dict, dict]:
    """One run's summary.csv row, and its time series (for the report). The application's RTT and
    its correlation with the RLC queue are the analysis' own (`correlation`, from
    :func:`scout.analysis.derived.rtt_samples`: the sender's smoothed RTT)."""
    import scout
    from scout.analysis.derived import rtt_samples

    a = scout.open(run)
    con = a.con.con  # DuckDB's own connection
    meta = json.loads((run / "run.json").read_text())
    client = json.loads((run / "apps" / "download.out").read_text())
    mbps = client["end"]["sum_received"]["bits_per_second"] / 1e6
    rlc = "layer = 'rlc' AND dir = 'dl' AND queue = 'rlc_sdu'"
    q = con.execute(
        f"SELECT quantile_cont(sojourn_ns, 0.5) / 1e6, quantile_cont(sojourn_ns, 0.99) / 1e6 FROM sojourns WHERE {rlc}"
    ).fetchone()
    rtt = rtt_samples(a.con.table("control_events"))
    r50, r99 = (float(rtt.rtt_ns.quantile(p)) / 1e6 if len(rtt) else None for p in (0.5, 0.99))
    corr = con.execute("SELECT pearson_r FROM correlation WHERE queue = 'rlc_sdu' AND dir = 'dl'").fetchone()
    pearson = corr[0] if corr and corr[0] is not None and not math.isnan(corr[0]) else None
    soj = dict(
        con.execute(f"SELECT t_enq // {bin_ns} AS b, avg(sojourn_ns) / 1e6 FROM sojourns WHERE {rlc} GROUP BY b").fetchall()
    )
    rb = (rtt.assign(b=rtt.t_ns // bin_ns).groupby("b").rtt_ns.mean() / 1e6).to_dict() if len(rtt) else {}
    cwnd = con.execute(
        f"SELECT t_ns // {bin_ns} AS b, avg(value) FROM control_events "
        "WHERE kind = 'tcp_info' AND node = 'dn' AND dir = 'dl' GROUP BY b ORDER BY b"
    ).fetchall()
    common = sorted(set(soj) & set(rb))
    drops = sum(n for layer in meta["counts"]["drops"].values() for n in layer.values())
    row = {
        "cc": cc,
        "throughput_mbps": round(mbps, 3),
        "rlc_sojourn_p50_ms": round(q[0] or 0.0, 3),
        "rlc_sojourn_p99_ms": round(q[1] or 0.0, 3),
        "app_rtt_p50_ms": None if r50 is None else round(r50, 3),
        "app_rtt_p99_ms": None if r99 is None else round(r99, 3),
        "drops": drops,
        "rtt_sojourn_pearson": None if pearson is None else round(pearson, 3),
    }
    series = {
        "t_s": [b * bin_ns / 1e9 for b in common],
        "sojourn_ms": [soj[b] for b in common],
        "rtt_ms": [rb[b] for b in common],
        "cwnd_t_s": [b * bin_ns / 1e9 for b, _ in cwnd],
        "cwnd": [v for _, v in cwnd],
    }
    return row, series


#: Student's t, 97.5th percentile, by degrees of freedom 1..30; the normal's 1.96 beyond (within
#: 4 % of t at 31 and less after).
T975 = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
]  # fmt: skip


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % confidence interval (Student's t; 0 for a single
    value): the statistic every experiment's summary gives per configuration."""
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, 0.0
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    t = T975[n - 2] if n - 2 < len(T975) else 1.96
    return m, t * sd / math.sqrt(n)


def write_summary(out: Path, rows: list[dict], columns: dict) -> Path:
    path = out / "summary.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns))
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r[k] is None else r[k]) for k in columns})
    return path


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def sweep_report(
    out: Path, name: str, heading: str, intro: str, figs: list[str], alt: str, rows: list[dict], columns: dict, links
) -> Path:
    """OUT/report/index.html of a sweep: its heading, what it runs (`intro`), the figures (base64
    PNGs, from :func:`_png`), and the summary's table with, per row, links to the reports of its
    runs (`links(row)`: hrefs relative to the page, ``../CONFIG/seedN/report/index.html``)."""
    cols = list(columns)

    def run_links(r: dict) -> str:
        return " ".join(f'<a href="{html.escape(h)}">{html.escape(h.split("/")[-3])}</a>' for h in links(r))

    table = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape('' if r[c] is None else str(r[c]))}</td>" for c in cols)
        + f"<td>{run_links(r)}</td></tr>"
        for r in rows
    )
    imgs = "".join(f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b}">' for b in figs)
    page = f"""<!doctype html><meta charset="utf-8"><title>{html.escape(name)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:72em}}td,th{{padding:2px 8px;text-align:right}}
img{{max-width:48%}}</style>
<h1>{html.escape(heading)}</h1>
<p>{html.escape(intro)}</p>
{imgs}
<table><tr>{"".join(f"<th>{c}</th>" for c in cols)}<th>run reports</th></tr>{table}</table>"""
    (out / "report").mkdir(parents=True, exist_ok=True)
    path = out / "report" / "index.html"
    path.write_text(page)
    return path


def tcp_cc_report(out: Path, rows: list[dict], series: dict[str, dict]) -> Path:
    """OUT/report/index.html: sojourn against RTT over time per run, the congestion window, the table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(series), 1, figsize=(10, 3.2 * len(series)), sharex=True, squeeze=False)
    for ax, (cc, s) in zip(axes[:, 0], series.items(), strict=True):
        ax.plot(s["t_s"], s["sojourn_ms"], label="RLC SDU queue sojourn (DL)", color="#c0392b")
        ax.plot(s["t_s"], s["rtt_ms"], label="sender's smoothed RTT (tcp_probe)", color="#2c3e50")
        ax.set_ylabel("ms")
        ax.set_title(f"{cc}: per-layer sojourn against application RTT (100 ms bins)")
        ax.legend(loc="upper left")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time since the emulation started, s")
    sojourn_png = _png(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(10, 3))
    for cc, s in series.items():
        ax.plot(s["cwnd_t_s"], s["cwnd"], label=cc)
    ax.set_ylabel("cwnd, segments")
    ax.set_xlabel("time, s")
    ax.set_title("the sender's congestion window")
    ax.legend()
    ax.grid(alpha=0.3)
    cwnd_png = _png(fig)
    plt.close(fig)
    head = "".join(f"<th title='{html.escape(d)}'>{html.escape(c)}</th>" for c, d in TCP_CC_COLUMNS.items())
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape('' if r[c] is None else str(r[c]))}</td>" for c in TCP_CC_COLUMNS) + "</tr>"
        for r in rows
    )
    runs = "".join(f"<li><a href='../{cc}/report/index.html'>{cc}</a>: the run's own report</li>" for cc in series)
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Scout experiment tcp-cc</title>
<style>body{{font:14px system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}
img{{max-width:100%}}</style></head><body>
<h1>tcp-cc: CUBIC and BBR through a deep RLC queue</h1>
<p>{html.escape(EXPERIMENTS["tcp-cc"].description)}. Each run is an ordinary run directory beside this report.</p>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
<h2>Sojourn and RTT over time</h2><img alt="RLC sojourn and RTT over time" src="data:image/png;base64,{sojourn_png}">
<h2>Congestion window</h2><img alt="congestion window over time" src="data:image/png;base64,{cwnd_png}">
<ul>{runs}</ul></body></html>"""
    (out / "report").mkdir(parents=True, exist_ok=True)
    path = out / "report" / "index.html"
    path.write_text(page)
    return path


def tool_binary(name: str) -> Path | None:
    """One of the emulator's own executables: on PATH, or built in this checkout's
    ``target/release`` (``scripts/setup.sh`` builds them) or, by the test suite, ``target/ci``."""
    import shutil

    found = shutil.which(name)
    if found:
        return Path(found)
    target = Path(__file__).resolve().parents[2] / "target"
    return next((p for p in (target / "release" / name, target / "ci" / name) if p.is_file()), None)


def prague_binary() -> Path | None:
    """``scout-prague`` (the emulator's adaptive sender and receiver, l4s-anbr and ran-delay
    ``--emulate``)."""
    return tool_binary("scout-prague")


def upf_binary() -> Path | None:
    """``scout-upf``, Scout's UPF process (slices with ``upf_process: true``, docs/upf.md)."""
    return tool_binary("scout-upf")


def select(cfgs: list, only: str | None, dims: dict[str, list[str]]) -> list:
    """The configurations ``--only`` keeps: a comma list of values of the sweep's dimensions
    (``dims``: each configuration attribute's values), e.g. ``dl,poor`` or ``none,all,dddsu``;
    within a dimension any value given matches, across dimensions all must. Raises ValueError
    naming an unknown value and what is accepted."""
    if not only:
        return cfgs
    want: dict[str, set[str]] = {}
    for term in (t.strip() for t in only.split(",")):
        dim = next((d for d, values in dims.items() if term in values), None)
        if dim is None:
            accepted = ", ".join(v for values in dims.values() for v in values)
            raise ValueError(f"--only {term}: not a value of any dimension; accepted: {accepted}")
        want.setdefault(dim, set()).add(term)
    return [c for c in cfgs if all(getattr(c, d) in v for d, v in want.items())]
