"""`scout experiment rlc-modes`: seed 002's testbed study of RLC AM against UM, through the
emulator (docs/experiments.md).

An iperf3 download from the DN to UE 0 of a 20 MHz TDD cell (``scenarios/rlc-modes.yaml``) for
each combination of: the transport (``tcp``: one CUBIC stream; ``udp``: iperf3's UDP at
150 Mbit/s, above what the cell carries); the DRB's RLC mode (``am``, ``um``: TS 38.322 §5.2.3 and
§5.2.2; everything else 5QI 9's srsRAN defaults); and the radio (``good``: the seed's -76 dBm RSRP,
``poor``: its -115 dBm, as SINR for a stated noise figure, :func:`sinr_db`). Five runs of 40 s
each, as the seed; each configuration's row in ``summary.csv`` is the mean over them with a 95 %
confidence interval (Student's t). Throughput is what the model delivered to UE 0's applications
after the first second of the transfer; the sender's congestion window comes from the kernel
(``tcp_info`` rows).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from scout import experiment
from scout.events import parquet_source
from scout.experiment import _png, mean_ci, sweep_report

PROTOS = ["tcp", "udp"]
MODES = ["am", "um"]
#: The seed's RSRP conditions (§III), dBm.
RSRP_DBM = {"good": -76.0, "poor": -115.0}
#: The UE's noise figure, dB: 7 dB, the UE receiver noise figure of 3GPP's NR evaluations
#: (TR 38.802 Table A.2.1-1 and A.2.1-3, 7 dB at the UE for below 6 GHz).
NOISE_FIGURE_DB = 7.0
#: The subcarrier spacing RSRP is measured over (the cell's 30 kHz), Hz.
SCS_HZ = 30e3
#: UDP's offered rate, Mbit/s: above the 20 MHz cell's capacity at the good channel.
UDP_MBPS = 150
#: Seconds at the start of each transfer left out of the throughput (TCP's slow start).
WARMUP_S = 1.0

COLUMNS = {
    "proto": "the transport: tcp (one CUBIC stream) or udp (150 Mbit/s offered)",
    "rlc_mode": "the DRB's RLC mode: am or um",
    "channel": "good (RSRP -76 dBm) or poor (-115 dBm), as SINR for a 7 dB noise figure",
    "throughput_mbps": "DL bit rate the model delivered to UE 0's applications after the transfer's first second, "
    "mean over the runs, Mbit/s",
    "throughput_ci_mbps": "half-width of its 95 % confidence interval (Student's t over the runs), Mbit/s",
    "cwnd_mean": "the sender's mean congestion window over the transfer (kernel tcp_probe), segments; empty for udp",
    "cwnd_ci": "half-width of its 95 % confidence interval, segments",
    "rlc_retx": "RLC AM retransmissions of DL PDUs (segments sent again), mean over the runs",
    "harq_retx": "DL HARQ retransmissions, mean over the runs",
    "drops": "DL packets the model dropped (RLC queue full, HARQ failures under UM, ...), mean over the runs",
    "runs": "runs (seeds) behind the row",
}


def sinr_db(rsrp_dbm: float, noise_figure_db: float = NOISE_FIGURE_DB, scs_hz: float = SCS_HZ) -> float:
    """SINR from RSRP: RSRP is the power of one resource element of the reference signal (TS 38.215
    §5.1.1), so against thermal noise over one subcarrier, N = -174 dBm/Hz + 10 log10(Δf) + NF, it
    is RSRP - N (one cell, no interference). 30 kHz and 7 dB: N = -122.2 dBm; -76 dBm gives 46.2
    dB, -115 dBm 7.2 dB."""
    noise = -174.0 + 10 * math.log10(scs_hz) + noise_figure_db
    return round(rsrp_dbm - noise, 1)


@dataclass(frozen=True)
class Config:
    proto: str
    rlc_mode: str
    channel: str

    @property
    def name(self) -> str:
        return f"{self.proto}-{self.rlc_mode}-{self.channel}"


def configurations() -> list[Config]:
    return [Config(p, m, ch) for ch in RSRP_DBM for p in PROTOS for m in MODES]


def select(cfgs: list[Config], only: str | None) -> list[Config]:
    """The configurations `--only` keeps (:func:`scout.experiment.select` over this sweep's
    dimensions)."""
    return experiment.select(cfgs, only, {"proto": PROTOS, "rlc_mode": MODES, "channel": list(RSRP_DBM)})


def scenario_sets(cfg: Config, duration_s: float) -> list[str]:
    """The `--set` overrides of ``scenarios/rlc-modes.yaml`` for one run of ``duration_s`` seconds
    of iperf3 (the emulation lasts 3 s more: iperf3 starts at 1 s and reports at its end)."""
    sinr = sinr_db(RSRP_DBM[cfg.channel])
    mode = "am" if cfg.rlc_mode == "am" else "um-bidir"
    test = "-C cubic" if cfg.proto == "tcp" else f"-u -b {UDP_MBPS}M -l 1400"
    return [
        f"qos=[{{five_qi: 9, rlc: {{mode: {mode}}}}}]",
        f"ues[0].channel={{dl_sinr_db: {sinr:g}, ul_sinr_db: {sinr:g}}}",
        f"apps[3].cmd=iperf3 -c $SCOUT_DN -t {duration_s:g} -R {test} -J",
        f"duration_s={duration_s + 3:g}",
    ]


def run_metrics(run: Path, proto: str, bin_ns: int = 500_000_000) -> tuple[dict, dict]:
    """One run's figures — DL throughput after the transfer's first second, RLC and HARQ
    retransmissions, drops, the sender's mean cwnd — and its cwnd over time (TCP)."""
    import duckdb

    ev = parquet_source(run / "events" / "packet.parquet").replace("'", "''")
    ce = parquet_source(run / "events" / "control.parquet").replace("'", "''")
    with duckdb.connect() as con:
        t0, t1 = con.execute(
            f"SELECT min(t_ns), max(t_ns) FROM '{ev}' WHERE dir = 'dl' AND layer = 'app' AND point = 'deliver'"
        ).fetchone()
        if t0 is None:
            raise RuntimeError(f"{run}: UE 0 received nothing (see {run}/apps/download.err)")
        start = t0 + int(WARMUP_S * 1e9)
        (nbytes,) = con.execute(
            f"SELECT coalesce(sum(bytes), 0) FROM '{ev}' WHERE dir = 'dl' AND layer = 'app' "
            f"AND point = 'deliver' AND t_ns >= {start}"
        ).fetchone()
        (rlc_retx,) = con.execute(
            f"SELECT count(*) FROM '{ev}' WHERE dir = 'dl' AND layer = 'rlc' AND point = 'segment' AND retx > 0"
        ).fetchone()
        (drops,) = con.execute(f"SELECT count(DISTINCT pkt) FROM '{ev}' WHERE dir = 'dl' AND point = 'drop'").fetchone()
        cwnd = con.execute(
            f"SELECT t_ns // {bin_ns} AS b, avg(value) FROM '{ce}' "
            "WHERE kind = 'tcp_info' AND node = 'dn' AND dir = 'dl' GROUP BY b ORDER BY b"
        ).fetchall()
        (cwnd_mean,) = con.execute(
            f"SELECT avg(value) FROM '{ce}' WHERE kind = 'tcp_info' AND node = 'dn' AND dir = 'dl'"
        ).fetchone()
    summary = json.loads((run / "run.json").read_text())["summary"]
    dl = next(d for d in summary["directions"] if d["dir"] == "dl")
    m = {
        "throughput_mbps": nbytes * 8 / max((t1 - start) / 1e9, 1e-9) / 1e6,
        "rlc_retx": rlc_retx,
        "harq_retx": dl["harq_retx"],
        "drops": drops,
        "cwnd_mean": cwnd_mean if proto == "tcp" else None,
    }
    series = {"t_s": [b * bin_ns / 1e9 for b, _ in cwnd], "cwnd": [v for _, v in cwnd]}
    return m, series


def layer_means(run: Path) -> dict[str, float]:
    """Mean time per delivered DL packet in each layer of one analysed run, ms (the analysis'
    attribution: where AM and UM differ)."""
    import scout

    a = scout.open(run)
    rows = a.con.con.execute(
        "SELECT layer, sum(mean_per_pkt_ns) FROM profiles WHERE scope = 'run' AND dir = 'dl' AND window_start_ns IS NULL "
        "AND layer <> 'total' GROUP BY layer"
    ).fetchall()
    return {layer: ns / 1e6 for layer, ns in rows}


def summary_row(cfg: Config, runs: list[dict]) -> dict:
    thr, thr_ci = mean_ci([r["throughput_mbps"] for r in runs])
    cw = [r["cwnd_mean"] for r in runs if r["cwnd_mean"] is not None]
    cwnd, cwnd_ci = mean_ci(cw) if cw else (None, None)
    return {
        "proto": cfg.proto,
        "rlc_mode": cfg.rlc_mode,
        "channel": cfg.channel,
        "throughput_mbps": round(thr, 3),
        "throughput_ci_mbps": round(thr_ci, 3),
        "cwnd_mean": None if cwnd is None else round(cwnd, 1),
        "cwnd_ci": None if cwnd_ci is None else round(cwnd_ci, 1),
        "rlc_retx": round(sum(r["rlc_retx"] for r in runs) / len(runs), 1),
        "harq_retx": round(sum(r["harq_retx"] for r in runs) / len(runs), 1),
        "drops": round(sum(r["drops"] for r in runs) / len(runs), 1),
        "runs": len(runs),
    }


def summarize(cfg: Config, runs: list[dict]) -> list[dict]:
    """A configuration's summary rows from its seeds' figures (one row)."""
    return [summary_row(cfg, runs)]


def progress(c: Config, rows: list[dict]) -> list[str]:
    """A configuration's progress line, from its summary row."""
    (row,) = rows
    cwnd = "" if row["cwnd_mean"] is None else f"  cwnd {row['cwnd_mean']:7.1f} (±{row['cwnd_ci']:.1f})"
    return [
        f"{c.proto} {c.rlc_mode} {c.channel:<4}  throughput {row['throughput_mbps']:7.2f} Mbit/s "
        f"(±{row['throughput_ci_mbps']:.2f}){cwnd}  RLC retx {row['rlc_retx']:g}  HARQ retx {row['harq_retx']:g}"
    ]


def write_summary(out: Path, rows: list[dict]) -> Path:
    return experiment.write_summary(out, rows, COLUMNS)


def report(
    out: Path,
    rows: list[dict],
    series: dict[str, dict],
    layers: dict[str, dict[str, float]],
    links: dict[str, list[str]] | None = None,
) -> Path:
    """OUT/report/index.html: throughput per configuration with CIs (the seed's Figures 3 and 4),
    the mean cwnd (its Figure 5) and seed 1's cwnd over time, per layer the time AM adds per
    delivered packet over UM (seed 1's runs), and the table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = []
    for what, key, ci, label in (
        ("throughput", "throughput_mbps", "throughput_ci_mbps", "Mbit/s delivered to UE 0"),
        ("cwnd", "cwnd_mean", "cwnd_ci", "CUBIC's mean cwnd, segments"),
    ):
        fig, axes = plt.subplots(1, len(RSRP_DBM), figsize=(10, 3.6), sharey=True)
        for ax, ch in zip(axes, RSRP_DBM, strict=True):
            protos = PROTOS if what == "throughput" else ["tcp"]
            width = 0.8 / len(MODES)
            for k, mode in enumerate(MODES):
                pts = [
                    next((r for r in rows if (r["proto"], r["rlc_mode"], r["channel"]) == (p, mode, ch)), None) for p in protos
                ]
                xs = [i + (k - (len(MODES) - 1) / 2) * width for i in range(len(protos))]
                ax.bar(
                    xs,
                    [(p[key] or 0) if p else 0 for p in pts],
                    width,
                    yerr=[(p[ci] or 0) if p else 0 for p in pts],
                    capsize=3,
                    label=f"RLC {mode.upper()}",
                )
            ax.set_xticks(range(len(protos)), [p.upper() for p in protos])
            ax.set_title(f"{ch} channel (RSRP {RSRP_DBM[ch]:g} dBm, SINR {sinr_db(RSRP_DBM[ch]):g} dB)")
            ax.grid(alpha=0.3, axis="y")
        axes[0].set_ylabel(label)
        axes[0].legend()
        figs.append(_png(fig))
        plt.close(fig)
    if series:
        fig, ax = plt.subplots(figsize=(10, 3.6))
        for name, s in sorted(series.items()):
            if s["t_s"]:
                ax.plot(s["t_s"], s["cwnd"], label=name)
        ax.set_xlabel("time, s")
        ax.set_ylabel("cwnd, segments (0.5 s means)")
        ax.set_title("CUBIC's congestion window, seed 1 of each TCP configuration (kernel tcp_probe)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        figs.append(_png(fig))
        plt.close(fig)
    pairs = [(p, ch) for ch in RSRP_DBM for p in PROTOS if f"{p}-am-{ch}" in layers and f"{p}-um-{ch}" in layers]
    if pairs:
        # Where AM and UM differ: per layer, the time AM adds per delivered packet over UM's.
        names = sorted({la for per in layers.values() for la in per}, key=_layer_rank)
        fig, ax = plt.subplots(figsize=(10, 3.6))
        width = 0.8 / len(pairs)
        for k, (p, ch) in enumerate(pairs):
            am, um = layers[f"{p}-am-{ch}"], layers[f"{p}-um-{ch}"]
            xs = [i + (k - (len(pairs) - 1) / 2) * width for i in range(len(names))]
            ax.bar(xs, [am.get(la, 0.0) - um.get(la, 0.0) for la in names], width, label=f"{p.upper()}, {ch}")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xticks(range(len(names)), names)
        ax.set_ylabel("AM − UM, ms per delivered DL packet")
        ax.set_title("Where RLC AM's delay differs from UM's, layer by layer (seed 1; the analysis' attribution)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
        figs.append(_png(fig))
        plt.close(fig)
    links = links or {}

    def run_links(r: dict) -> list[str]:
        return links.get(Config(r["proto"], r["rlc_mode"], r["channel"]).name, [])

    intro = __doc__.split(chr(10) + chr(10))[1].replace(chr(10), " ").replace("``", "")
    heading = "rlc-modes: RLC AM against UM, TCP and UDP, good and poor radio (seed 002)"
    return sweep_report(out, "rlc-modes", heading, intro, figs, "throughput and cwnd per configuration", rows, COLUMNS, run_links)


def _layer_rank(name: str) -> int:
    from scout.analysis.engine import LAYER_ORDER

    return LAYER_ORDER.index(name) if name in LAYER_ORDER else len(LAYER_ORDER)
