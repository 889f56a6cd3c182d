"""`scout experiment l4s-anbr`: seed 003's sweep of network-assisted rate adaptation, in the
simulator (docs/experiments.md, docs/l4s-anbr.md).

UE 0 receives 3GPP generic video (TR 38.838, 60 frames/s) from the DN through a 20 MHz cell
(``scenarios/l4s-anbr.yaml``) while UE 1's on/off background loads it as the seed's does (§4.1.2),
scaled to this cell: ``low`` (18 Mbit/s while on; on Pareto, mean 0.4 s, shape 1.5; off lognormal,
mean 1.38 s, sigma 0.8: 4 Mbit/s on average) or ``high`` (10.5 Mbit/s while on; on and off
exponential, means 60 and 30 ms: 7 Mbit/s on average). The video's encoder runs, per
configuration: at a constant 45 Mbit/s (``constant``, above what the cell carries); at the rate of
UDP Prague with L4S marking at the DU's RLC queue at one of the seed's seven threshold pairs
(``l4s``); at the ANBR recommendation at a 40, 100 or 200 ms window (``anbr``); or at the hybrid's
rate at a threshold pair and a 40 ms window (``hybrid``). Every configuration runs once per seed;
its row in ``summary.csv`` is the mean over the seeds with a 95 % confidence interval (Student's
t).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from scout import experiment
from scout.events import parquet_source
from scout.experiment import _png, mean_ci, sweep_report

#: The seed's L4S threshold pairs (min, max ms) and ANBR windows (ms); the hybrid takes the pairs
#: but 60-100 (rarely marks: ANBR would decide alone) at a 40 ms window (seed §4.1.5).
PAIRS = [(5, 7), (7, 15), (10, 20), (15, 20), (15, 30), (30, 50), (60, 100)]
WINDOWS = [40, 100, 200]
#: UE 1's background per load: the seed's on/off sources (§4.1.2), their on-rates scaled to this
#: cell (the seed's cell carried ~64 Mbit/s, this one ~39); `mean_mbps` is what they average.
LOADS = {
    "low": {
        "rate_mbps": 18.0,
        "on": "{dist: pareto, mean_s: 0.4, shape: 1.5}",
        "off": "{dist: lognormal, mean_s: 1.377, sigma: 0.8}",
        "mean_mbps": 4.0,
    },
    "high": {
        "rate_mbps": 10.5,
        "on": "{dist: exponential, mean_s: 0.06}",
        "off": "{dist: exponential, mean_s: 0.03}",
        "mean_mbps": 7.0,
    },
}
#: The video's cap and the constant configuration's rate, Mbit/s (above what the cell carries).
RATE_MBPS = 45.0
#: The video's frame rate (the seed's, TR 38.838's AR/VR default).
FPS = 60
#: Seconds at the start of each run left out of the figures (the senders' ramp).
WARMUP_S = 2.0

COLUMNS = {
    "method": "constant, l4s, anbr or hybrid",
    "min_ms": "L4S marking starts at this RLC head-of-line sojourn (l4s, hybrid), ms",
    "max_ms": "every ECN-capable packet is marked from this sojourn (l4s, hybrid), ms",
    "window_ms": "ANBR's averaging window (anbr, hybrid), ms",
    "load": "UE 1's on/off background: low (4 Mbit/s on average) or high (7 Mbit/s)",
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


@dataclass(frozen=True)
class LoadPoint:
    """A configuration at one background load: the sweep's unit (its runs in ``OUT/CONFIG-LOAD``)."""

    cfg: Config
    load: str

    @property
    def name(self) -> str:
        return f"{self.cfg.name}-{self.load}"


def configurations() -> list[Config]:
    cfgs = [Config("constant")]
    cfgs += [Config("l4s", a, b) for a, b in PAIRS]
    cfgs += [Config("anbr", window_ms=w) for w in WINDOWS]
    cfgs += [Config("hybrid", a, b, 40) for a, b in PAIRS if (a, b) != (60, 100)]
    return cfgs


def select(cfgs: list[Config], only: str | None, loads: list[str]) -> list[LoadPoint]:
    """The configurations `--only` keeps (a comma list of their names), each at every load of
    ``loads`` in its order. Raises ValueError naming what is not a configuration."""
    if only:
        wanted = [w.strip() for w in only.split(",") if w.strip()]
        names = {c.name for c in cfgs}
        bad = [w for w in wanted if w not in names]
        if bad:
            raise ValueError(f"--only {','.join(bad)}: no such configuration; accepted: {', '.join(sorted(names))}")
        cfgs = [c for c in cfgs if c.name in wanted]
    return [LoadPoint(c, load) for c in cfgs for load in loads]


def scenario_sets(cfg: Config, load: str) -> list[str]:
    """The `--set` overrides of ``scenarios/l4s-anbr.yaml`` for one configuration and load."""
    sets = []
    if cfg.min_ms is not None:
        sets.append(f"qos[0].l4s={{min_ms: {cfg.min_ms:g}, max_ms: {cfg.max_ms:g}}}")
    if cfg.window_ms is not None:
        sets.append(f"qos[0].anbr={{window_ms: {cfg.window_ms:g}}}")
    control = {"constant": "constant", "l4s": "prague", "anbr": "anbr", "hybrid": "hybrid"}[cfg.method]
    start = f"start_rate_mbps: {RATE_MBPS:g}, " if cfg.method == "constant" else ""
    sets.append(
        f"traffic[0]={{type: adaptive, ue: 0, control: {control}, {start}max_rate_mbps: {RATE_MBPS:g}, video: {{fps: {FPS}}}}}"
    )
    bg = LOADS[load]
    sets.append(f"traffic[1]={{type: on_off, ue: 1, dir: dl, rate_mbps: {bg['rate_mbps']:g}, on: {bg['on']}, off: {bg['off']}}}")
    return sets


def flow_metrics(run: Path, warmup_s: float = WARMUP_S) -> dict:
    """UE 0's flow (flow 0) in one run, after the warm-up: the mean one-way delay of the packets it
    sent then and that were delivered, the bit rate delivered then (by delivery time: packets
    still queued at the end do not lower it), and the share of the packets sent then that were
    dropped."""
    import duckdb

    dur = json.loads((run / "run.json").read_text())["duration_s"]
    t0 = int(warmup_s * 1e9)
    f = parquet_source(run / "events" / "packet.parquet").replace("'", "''")
    q = f"""
    WITH ev AS (SELECT pkt, t_ns, point, layer, bytes FROM read_parquet('{f}') WHERE flow = 0),
         tx AS (SELECT pkt, t_ns FROM ev WHERE layer = 'app' AND point = 'tx' AND t_ns >= {t0}),
         dv AS (SELECT pkt, t_ns, bytes FROM ev WHERE layer = 'app' AND point = 'deliver'),
         dr AS (SELECT DISTINCT pkt FROM ev WHERE point = 'drop')
    SELECT count(*), avg(dv.t_ns - tx.t_ns), count(dr.pkt),
           (SELECT coalesce(sum(bytes), 0) FROM dv WHERE t_ns >= {t0})
    FROM tx LEFT JOIN dv USING (pkt) LEFT JOIN dr USING (pkt)
    """
    with duckdb.connect() as con:
        sent, delay_ns, dropped, nbytes = con.sql(q).fetchone()
    secs = max(float(dur) - warmup_s, 1e-9)
    return {
        "latency_ms": delay_ns / 1e6 if delay_ns is not None else float("nan"),
        "throughput_mbps": nbytes * 8 / secs / 1e6,
        "loss": dropped / sent if sent else 0.0,
    }


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


def summarize(p: LoadPoint, runs: list[dict]) -> list[dict]:
    """A point's summary rows from its seeds' figures (one row)."""
    return [summary_row(p.cfg, p.load, runs)]


def progress(p: LoadPoint, rows: list[dict]) -> list[str]:
    """A point's progress line, from its summary row."""
    (row,) = rows
    return [
        f"{p.cfg.name:<14} {p.load:<4}  latency {row['latency_ms']:9.2f} ms (±{row['latency_ci_ms']:.2f})  "
        f"throughput {row['throughput_mbps']:6.2f} Mbit/s (±{row['throughput_ci_mbps']:.2f})  loss {row['loss']:.4f}"
    ]


def report(out: Path, rows: list[dict], links: dict[tuple[str, str], list[str]] | None = None) -> Path:
    """OUT/report/index.html: throughput against latency per load (the seed's figures 5.1 and
    5.2), and the table, each row linking the reports of its runs (`links`, by configuration name
    and load, relative to the page)."""
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
        ax.set_title(f"{load} background load (on/off, {LOADS[load]['mean_mbps']:g} Mbit/s on average on UE 1)")
        ax.legend()
        ax.grid(alpha=0.3)
        figs.append(_png(fig))
        plt.close(fig)
    links = links or {}

    def run_links(r: dict) -> list[str]:
        return links.get((Config(r["method"], r["min_ms"], r["max_ms"], r["window_ms"]).name, r["load"]), [])

    intro = __doc__.split(chr(10) + chr(10))[1].replace(chr(10), " ").replace("``", "")
    heading = "l4s-anbr: L4S, ANBR and the hybrid (seed 003)"
    return sweep_report(out, "l4s-anbr", heading, intro, figs, "throughput against latency", rows, COLUMNS, run_links)


def write_summary(out: Path, rows: list[dict]) -> Path:
    return experiment.write_summary(out, rows, COLUMNS)


def emulate_sets(cfg: Config, load: str, duration_s: float, binary: Path) -> list[str]:
    """The `--set` overrides of one emulated run: the bearer's marking and ANBR as in the
    simulator; instead of the simulator's sources, ``scout-prague``'s video from the DN to UE 0 (its
    receiver forwards ANBR) and iperf3's UDP from the DN to UE 1 (10.45.0.3) at the load's mean
    rate (iperf3 does not switch on and off)."""
    sets = [x for x in scenario_sets(cfg, load) if not x.startswith("traffic")]
    control = {"constant": "constant", "l4s": "prague", "anbr": "anbr", "hybrid": "hybrid"}[cfg.method]
    start = f" --start-mbps {RATE_MBPS:g}" if cfg.method == "constant" else ""
    secs = f"{duration_s - 0.5:g}"
    whole = math.ceil(duration_s - 0.5)  # iperf3 -t takes whole seconds
    apps = [
        f"{{name: recv, ns: ue0, cmd: '{binary} recv --seconds {duration_s + 1:g}'}}",
        f"{{name: send, ns: dn, at_s: 0.5, cmd: '{binary} send $SCOUT_UE --control {control} "
        f"--max-mbps {RATE_MBPS:g}{start} --video-fps {FPS} --seconds {secs}'}}",
        "{name: bg-server, ns: ue1, cmd: 'iperf3 -s -1'}",
        f"{{name: bg, ns: dn, at_s: 0.3, cmd: 'iperf3 -c 10.45.0.3 -u -b {LOADS[load]['mean_mbps']:g}M -t {whole}'}}",
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
