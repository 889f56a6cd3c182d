"""`scout experiment l4s-anbr`: seed 003's sweep of network-assisted rate adaptation, in the
simulator (docs/experiments.md, docs/l4s-anbr.md).

UE 0 receives a flow from the DN through a 20 MHz cell (``scenarios/l4s-anbr.yaml``) while UE 1's
background loads it, ``low`` (10 Mbit/s) or ``high`` (20). The flow is, per configuration: a
constant 60 Mbit/s (``constant``); a UDP Prague sender with L4S marking at the DU's RLC queue at one
of the seed's seven threshold pairs (``l4s``); an ANBR-driven sender at a 40, 100 or 200 ms window
(``anbr``); or the hybrid at a threshold pair and a 40 ms window (``hybrid``). Every configuration
runs once per seed; its row in ``summary.csv`` is the mean over the seeds with a 95 % confidence
interval (Student's t).
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

#: The seed's L4S threshold pairs (min, max ms) and ANBR windows (ms); the hybrid takes the pairs
#: but 60-100 (rarely marks: ANBR would decide alone) at a 40 ms window (seed §4.1.5).
PAIRS = [(5, 7), (7, 15), (10, 20), (15, 20), (15, 30), (30, 50), (60, 100)]
WINDOWS = [40, 100, 200]
LOADS = {"low": 10.0, "high": 20.0}
#: The flow's cap and the constant configuration's rate, Mbit/s (above what the cell carries).
RATE_MBPS = 60.0
#: Seconds at the start of each run left out of the figures (the senders' ramp).
WARMUP_S = 2.0

COLUMNS = {
    "method": "constant, l4s, anbr or hybrid",
    "min_ms": "L4S marking starts at this RLC head-of-line sojourn (l4s, hybrid), ms",
    "max_ms": "every ECN-capable packet is marked from this sojourn (l4s, hybrid), ms",
    "window_ms": "ANBR's averaging window (anbr, hybrid), ms",
    "load": "UE 1's background: low (10 Mbit/s) or high (20 Mbit/s)",
    "latency_ms": "UE 0's flow: mean one-way delay of its delivered packets after the warm-up, over the runs, ms",
    "latency_ci_ms": "half-width of the 95 % confidence interval of latency_ms (Student's t over the runs), ms",
    "throughput_mbps": "UE 0's flow: bit rate delivered after the warm-up (by delivery time), mean over the runs, Mbit/s",
    "throughput_ci_mbps": "half-width of its 95 % confidence interval, Mbit/s",
    "loss": "UE 0's flow: packets dropped over packets sent, mean over the runs",
    "runs": "runs (seeds) behind the row",
}


@dataclass(frozen=True)
class Config:
    method: str
    min_ms: float | None = None
    max_ms: float | None = None
    window_ms: float | None = None

    @property
    def name(self) -> str:
        if self.method == "constant":
            return "constant"
        if self.method == "anbr":
            return f"anbr-{self.window_ms:g}"
        pair = f"{self.min_ms:g}-{self.max_ms:g}"
        return f"l4s-{pair}" if self.method == "l4s" else f"hybrid-{pair}"


def configurations() -> list[Config]:
    cfgs = [Config("constant")]
    cfgs += [Config("l4s", a, b) for a, b in PAIRS]
    cfgs += [Config("anbr", window_ms=w) for w in WINDOWS]
    cfgs += [Config("hybrid", a, b, 40) for a, b in PAIRS if (a, b) != (60, 100)]
    return cfgs


def scenario_sets(cfg: Config, load: str) -> list[str]:
    """The `--set` overrides of ``scenarios/l4s-anbr.yaml`` for one configuration and load."""
    sets = []
    if cfg.min_ms is not None:
        sets.append(f"qos[0].l4s={{min_ms: {cfg.min_ms:g}, max_ms: {cfg.max_ms:g}}}")
    if cfg.window_ms is not None:
        sets.append(f"qos[0].anbr={{window_ms: {cfg.window_ms:g}}}")
    if cfg.method == "constant":
        flow = f"{{type: udp_cbr, ue: 0, dir: dl, rate_mbps: {RATE_MBPS:g}, ecn: ect1}}"
    else:
        control = {"l4s": "prague", "anbr": "anbr", "hybrid": "hybrid"}[cfg.method]
        flow = f"{{type: adaptive, ue: 0, control: {control}, max_rate_mbps: {RATE_MBPS:g}}}"
    sets.append(f"traffic[0]={flow}")
    sets.append(f"traffic[1].rate_mbps={LOADS[load]:g}")
    return sets


def flow_metrics(run: Path, warmup_s: float = WARMUP_S) -> dict:
    """UE 0's flow (flow 0) in one run, after the warm-up: the mean one-way delay of the packets it
    sent then and that were delivered, the bit rate delivered then (by delivery time: packets
    still queued at the end do not lower it), and the share of the packets sent then that were
    dropped."""
    import duckdb

    dur = json.loads((run / "run.json").read_text())["duration_s"]
    t0 = int(warmup_s * 1e9)
    f = str(run / "events" / "packet.parquet").replace("'", "''")
    q = f"""
    WITH ev AS (SELECT pkt, t_ns, point, layer, bytes FROM read_parquet('{f}') WHERE flow = 0),
         tx AS (SELECT pkt, t_ns FROM ev WHERE layer = 'app' AND point = 'tx' AND t_ns >= {t0}),
         dv AS (SELECT pkt, t_ns, bytes FROM ev WHERE layer = 'app' AND point = 'deliver'),
         dr AS (SELECT DISTINCT pkt FROM ev WHERE point = 'drop')
    SELECT count(*), avg(dv.t_ns - tx.t_ns), count(dr.pkt),
           (SELECT coalesce(sum(bytes), 0) FROM dv WHERE t_ns >= {t0})
    FROM tx LEFT JOIN dv USING (pkt) LEFT JOIN dr USING (pkt)
    """
    sent, delay_ns, dropped, nbytes = duckdb.sql(q).fetchone()
    secs = max(float(dur) - warmup_s, 1e-9)
    return {
        "latency_ms": delay_ns / 1e6 if delay_ns is not None else float("nan"),
        "throughput_mbps": nbytes * 8 / secs / 1e6,
        "loss": dropped / sent if sent else 0.0,
    }


# Student's t, 97.5th percentile, by degrees of freedom (1..30); the normal's beyond.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131]


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % confidence interval (0 for a single value)."""
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, 0.0
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    t = _T975[n - 2] if n - 2 < len(_T975) else 1.96
    return m, t * sd / math.sqrt(n)


def summary_row(cfg: Config, load: str, runs: list[dict]) -> dict:
    lat, lat_ci = mean_ci([r["latency_ms"] for r in runs])
    thr, thr_ci = mean_ci([r["throughput_mbps"] for r in runs])
    loss, _ = mean_ci([r["loss"] for r in runs])
    return {
        "method": cfg.method,
        "min_ms": cfg.min_ms,
        "max_ms": cfg.max_ms,
        "window_ms": cfg.window_ms,
        "load": load,
        "latency_ms": round(lat, 3),
        "latency_ci_ms": round(lat_ci, 3),
        "throughput_mbps": round(thr, 3),
        "throughput_ci_mbps": round(thr_ci, 3),
        "loss": round(loss, 5),
        "runs": len(runs),
    }


def report(out: Path, rows: list[dict]) -> Path:
    """OUT/report/index.html: throughput against latency per load (the seed's figures 5.1 and
    5.2), and the table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    marker = {"constant": "x", "l4s": "o", "anbr": "D", "hybrid": "s"}
    figs = []
    for load in LOADS:
        sel = [r for r in rows if r["load"] == load and r["method"] != "constant"]
        if not sel:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for method in ("l4s", "anbr", "hybrid"):
            pts = [r for r in sel if r["method"] == method]
            if pts:
                ax.errorbar(
                    [r["latency_ms"] for r in pts],
                    [r["throughput_mbps"] for r in pts],
                    xerr=[r["latency_ci_ms"] for r in pts],
                    yerr=[r["throughput_ci_mbps"] for r in pts],
                    fmt=marker[method],
                    label=method,
                    capsize=2,
                )
                for r in pts:
                    tag = f"{r['window_ms']:g}" if method == "anbr" else f"{r['min_ms']:g}-{r['max_ms']:g}"
                    ax.annotate(
                        tag, (r["latency_ms"], r["throughput_mbps"]), fontsize=7, xytext=(3, 3), textcoords="offset points"
                    )
        ax.set_xlabel("UE 0's mean one-way delay, ms")
        ax.set_ylabel("UE 0's throughput, Mbit/s")
        ax.set_title(f"{load} background load ({LOADS[load]:g} Mbit/s on UE 1)")
        ax.legend()
        ax.grid(alpha=0.3)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        figs.append(base64.b64encode(buf.getvalue()).decode())
    cols = list(COLUMNS)
    table = "".join(
        "<tr>" + "".join(f"<td>{html.escape('' if r[c] is None else str(r[c]))}</td>" for c in cols) + "</tr>" for r in rows
    )
    imgs = "".join(f'<img alt="throughput against latency" src="data:image/png;base64,{b}">' for b in figs)
    page = f"""<!doctype html><meta charset="utf-8"><title>l4s-anbr</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:72em}}td,th{{padding:2px 8px;text-align:right}}
img{{max-width:48%}}</style>
<h1>l4s-anbr: L4S, ANBR and the hybrid (seed 003)</h1>
<p>{html.escape(__doc__.split(chr(10) + chr(10))[1].replace(chr(10), " ").replace("``", ""))}</p>
{imgs}
<table><tr>{"".join(f"<th>{c}</th>" for c in cols)}</tr>{table}</table>"""
    (out / "report").mkdir(parents=True, exist_ok=True)
    path = out / "report" / "index.html"
    path.write_text(page)
    return path


def write_summary(out: Path, rows: list[dict]) -> Path:
    path = out / "summary.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    return path


def prague_binary() -> Path | None:
    """``scout-prague`` (the emulator's adaptive sender): on PATH, or built in this checkout's
    ``target/release``."""
    import shutil

    found = shutil.which("scout-prague")
    if found:
        return Path(found)
    here = Path(__file__).resolve().parents[2] / "target" / "release" / "scout-prague"
    return here if here.is_file() else None


def emulate_sets(cfg: Config, load: str, duration_s: float, binary: Path) -> list[str]:
    """The `--set` overrides of one emulated run: the bearer's marking and ANBR as in the
    simulator; instead of the simulator's sources, ``scout-prague`` from the DN to UE 0 (its
    receiver forwards ANBR) and iperf3's UDP at the load's rate from the DN to UE 1 (10.45.0.3)."""
    sets = [x for x in scenario_sets(cfg, load) if not x.startswith("traffic")]
    control = {"constant": "constant", "l4s": "prague", "anbr": "anbr", "hybrid": "hybrid"}[cfg.method]
    start = f" --start-mbps {RATE_MBPS:g}" if cfg.method == "constant" else ""
    secs = f"{duration_s - 0.5:g}"
    whole = math.ceil(duration_s - 0.5)  # iperf3 -t takes whole seconds
    apps = [
        f"{{name: recv, ns: ue0, cmd: '{binary} recv --seconds {duration_s + 1:g}'}}",
        f"{{name: send, ns: dn, at_s: 0.5, cmd: '{binary} send $SCOUT_UE --control {control} "
        f"--max-mbps {RATE_MBPS:g}{start} --seconds {secs}'}}",
        "{name: bg-server, ns: ue1, cmd: 'iperf3 -s -1'}",
        f"{{name: bg, ns: dn, at_s: 0.3, cmd: 'iperf3 -c 10.45.0.3 -u -b {LOADS[load]:g}M -t {whole}'}}",
    ]
    return [*sets, "traffic=[]", f"apps=[{', '.join(apps)}]"]


def emulated_metrics(run: Path) -> dict:
    """UE 0's flow in an emulated run, from ``scout-prague``'s two ends: the receiver's mean
    one-way delay and rate, and the share of the packets sent that never arrived."""
    recv = json.loads((run / "apps" / "recv.out").read_text().strip().splitlines()[-1])
    send = json.loads((run / "apps" / "send.out").read_text().strip().splitlines()[-1])
    sent = send["packets"]
    return {
        "latency_ms": recv["mean_delay_ms"],
        "throughput_mbps": recv["mbps"],
        "loss": max(0, sent - recv["packets"]) / sent if sent else 0.0,
    }
