"""`scout experiment ran-delay`: seed 004's study of delay-based congestion control over a RAN, in
the simulator (docs/ue-view.md, docs/experiments.md).

A Copa flow (Arun and Balakrishnan, NSDI 2018; δ = 0.5) or a GCC flow (WebRTC's delay-gradient
controller; it starts at 10 Mbit/s, WebRTC's start-up probes not being modelled) runs between a
server in the DN and UE 0
of a 20 MHz TDD cell (``scenarios/ran-delay.yaml``) for each combination of: the direction (``dl``:
the server sends, the UE acknowledges through its uplink buffer, BSR and grants; ``ul``: the UE
sends); the channel (``good``: 30 dB, no HARQ retransmissions; ``poor``: 12 dB, HARQ at OLLA's
10 % BLER); the seed's two TDD configurations (its Figure 27, 30 kHz: ``dddsu`` and
``dddddddsuu``); and Gandalf's compensation of Copa's RTT samples (``none``; ``retx``: each
retransmission event's delay T_M taken out of the samples it inflated, on the data's and the
acknowledgements' path; ``lowpass``: the RTT low-passed at the UE's uplink buffer period; ``all``).
Every configuration runs once per seed; its row in ``summary.csv`` is the mean over the seeds with
a 95 % confidence interval (Student's t).

With ``--emulate`` the same configurations run through the real-time emulator with real packets:
``scout-prague``'s Copa or GCC over UDP, Gandalf on the UE's side reading the UE's live RAN feed
(docs/ue-view.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scout import experiment
from scout.experiment import _png, mean_ci, sweep_report
from scout.experiment_l4s import flow_metrics

CCS = ["copa", "gcc"]
COMPENSATIONS = ["none", "retx", "lowpass", "all"]
#: GCC's start rate, Mbit/s (Copa's slow start needs none: the scenario's 2).
GCC_START_MBPS = 10.0
DIRS = ["dl", "ul"]
#: The channels: SINR (dB) both ways.
CHANNELS = {"good": 30.0, "poor": 12.0}
#: The seed's TDD UL-DL configurations (its Figure 27, 0.5 ms slots), in srsRAN's keys, with the
#: commercial gNBs' HARQ timing it measured (its Tables 4-6): no PUCCH in the special slot, the DL
#: retransmission kd = 6 (first) or 5 (second) slots after the NACK, the UL retransmission's grant
#: 6 slots after the failed PUSCH. With these the model's k1, kd, ku, k2 and T_M per slot index
#: are the seed's (docs/ue-view.md).
TDDS = {
    "dddsu": (
        "{dl_ul_tx_period: 5, nof_dl_slots: 3, nof_dl_symbols: 10, nof_ul_slots: 1, nof_ul_symbols: 0}",
        6,
    ),
    "dddddddsuu": (
        "{dl_ul_tx_period: 10, nof_dl_slots: 7, nof_dl_symbols: 10, nof_ul_slots: 2, nof_ul_symbols: 0}",
        5,
    ),
}
#: The UL retransmission's grant delay after a failed PUSCH (the seed's Ku), slots.
UL_RETX_DELAY_SLOTS = 6
#: Seconds at the start of each run left out of the figures (Copa's slow start).
WARMUP_S = 2.0

COLUMNS = {
    "cc": "the congestion controller: copa or gcc",
    "compensation": "Gandalf's compensation of its RTT samples: none, retx, lowpass or all",
    "dir": "direction of the data: dl (server to UE) or ul",
    "channel": "good (30 dB, no retransmissions) or poor (12 dB, HARQ at 10 % BLER)",
    "tdd": "the TDD pattern: dddsu or dddddddsuu (seed 004, Figure 27)",
    "throughput_mbps": "the flow's bit rate delivered after the warm-up, mean over the runs, Mbit/s",
    "throughput_ci_mbps": "half-width of its 95 % confidence interval (Student's t over the runs), Mbit/s",
    "delay_ms": "mean one-way delay of the flow's packets sent after the warm-up, mean over the runs, ms",
    "delay_ci_ms": "half-width of its 95 % confidence interval, ms",
    "harq_retx": "HARQ retransmissions in the run (both directions), mean over the runs",
    "runs": "runs (seeds) behind the row",
}


@dataclass(frozen=True)
class Config:
    cc: str
    compensation: str
    dir: str
    channel: str
    tdd: str

    @property
    def name(self) -> str:
        return f"{self.cc}-{self.compensation}-{self.dir}-{self.channel}-{self.tdd}"


def configurations() -> list[Config]:
    return [Config(cc, comp, d, ch, tdd) for cc in CCS for tdd in TDDS for ch in CHANNELS for d in DIRS for comp in COMPENSATIONS]


def select(cfgs: list[Config], only: str | None) -> list[Config]:
    """The configurations `--only` keeps (:func:`scout.experiment.select` over this sweep's
    dimensions)."""
    return experiment.select(
        cfgs, only, {"compensation": COMPENSATIONS, "dir": DIRS, "channel": list(CHANNELS), "tdd": list(TDDS), "cc": CCS}
    )


def scenario_sets(cfg: Config) -> list[str]:
    """The `--set` overrides of ``scenarios/ran-delay.yaml`` for one configuration."""
    sinr = CHANNELS[cfg.channel]
    return [
        f"cell_cfg.tdd_ul_dl_cfg={TDDS[cfg.tdd][0]}",
        f"cell_cfg.pdsch.harq_retx_delay_slots={TDDS[cfg.tdd][1]}",
        f"cell_cfg.pusch.harq_retx_delay_slots={UL_RETX_DELAY_SLOTS}",
        f"ues[0].channel={{dl_sinr_db: {sinr:g}, ul_sinr_db: {sinr:g}}}",
        f"traffic[0].dir={cfg.dir}",
        f"traffic[0].control={cfg.cc}",
        f"traffic[0].compensation={cfg.compensation}",
        *([f"traffic[0].start_rate_mbps={GCC_START_MBPS:g}"] if cfg.cc == "gcc" else []),
    ]


def run_metrics(run: Path) -> dict:
    """The Copa flow's figures in one run (flow 0; its acknowledgements are flow 1), and the run's
    HARQ retransmissions."""
    import json

    m = flow_metrics(run, WARMUP_S)
    summary = json.loads((run / "run.json").read_text())["summary"]
    m["harq_retx"] = sum(d["harq_retx"] for d in summary["directions"])
    return m


def emulate_sets(cfg: Config, run: Path, duration_s: float, binary: Path) -> list[str]:
    """The `--set` overrides of one emulated run: the cell, channel and HARQ timing as in the
    simulator; instead of the simulator's adaptive source, ``scout-prague`` — its sender in the DN
    (``dl``) or in UE 0 (``ul``), its receiver at the other end — with the configuration's
    controller and compensation, Gandalf on the UE's side reading the UE's live feed, and the
    simulator's 10 ms of wire on the feedback path. The sender's delay samples go to
    ``RUN/apps/send-samples.csv``."""
    sets = [x for x in scenario_sets(cfg) if not x.startswith("traffic")]
    recv_ns, send_ns, dest = ("ue0", "dn", "$SCOUT_UE") if cfg.dir == "dl" else ("dn", "ue0", "$SCOUT_DN")
    start = GCC_START_MBPS if cfg.cc == "gcc" else 2.0
    samples = run.resolve() / "apps" / "send-samples.csv"
    apps = [
        f"{{name: recv, ns: {recv_ns}, cmd: '{binary} recv --seconds {duration_s + 1:g} --compensation {cfg.compensation} "
        f"--warmup-s {WARMUP_S:g}'}}",
        f"{{name: send, ns: {send_ns}, at_s: 0.5, cmd: '{binary} send {dest} --control {cfg.cc} --start-mbps {start:g} "
        f"--max-mbps 200 --seconds {duration_s - 0.5:g} --compensation {cfg.compensation} --feedback-ms 10 "
        f"--samples {samples}'}}",
    ]
    return [*sets, "traffic=[]", f"apps=[{', '.join(apps)}]"]


def emulated_metrics(run: Path) -> dict:
    """The flow's figures in an emulated run, from ``scout-prague``'s receiver (packets sent after
    the warm-up, counted from the first one's sending), and the run's HARQ retransmissions; what
    Gandalf did at each end (``compensation``: the receiver's and the sender's reports)."""
    import json

    def last_line(name: str) -> dict:
        path = run / "apps" / f"{name}.out"
        lines = path.read_text().strip().splitlines() if path.is_file() else []
        if not lines:
            err = (run / "apps" / f"{name}.err").read_text().strip() if (run / "apps" / f"{name}.err").is_file() else ""
            raise RuntimeError(f"{path}: scout-prague's {name} reported nothing ({err or 'no error output'})")
        return json.loads(lines[-1])

    recv, send = last_line("recv"), last_line("send")
    summary = json.loads((run / "run.json").read_text())["summary"]
    return {
        "latency_ms": recv["mean_delay_ms"],
        "throughput_mbps": recv["mbps"],
        "harq_retx": sum(d["harq_retx"] for d in summary["directions"]),
        "compensation": {"receiver": recv.get("compensation"), "sender": send.get("compensation")},
    }


def summary_row(cfg: Config, runs: list[dict]) -> dict:
    thr, thr_ci = mean_ci([r["throughput_mbps"] for r in runs])
    delay, delay_ci = mean_ci([r["latency_ms"] for r in runs])
    retx, _ = mean_ci([float(r["harq_retx"]) for r in runs])
    return {
        "cc": cfg.cc,
        "compensation": cfg.compensation,
        "dir": cfg.dir,
        "channel": cfg.channel,
        "tdd": cfg.tdd,
        "throughput_mbps": round(thr, 3),
        "throughput_ci_mbps": round(thr_ci, 3),
        "delay_ms": round(delay, 3),
        "delay_ci_ms": round(delay_ci, 3),
        "harq_retx": round(retx, 1),
        "runs": len(runs),
    }


def summarize(cfg: Config, runs: list[dict]) -> list[dict]:
    """A configuration's summary rows from its seeds' figures (one row)."""
    return [summary_row(cfg, runs)]


def progress(c: Config, rows: list[dict]) -> list[str]:
    """A configuration's progress line, from its summary row."""
    (row,) = rows
    return [
        f"{c.cc:<4} {c.compensation:<8} {c.dir} {c.channel:<4} {c.tdd:<10}  throughput "
        f"{row['throughput_mbps']:6.2f} Mbit/s (±{row['throughput_ci_mbps']:.2f})  delay {row['delay_ms']:7.2f} ms "
        f"(±{row['delay_ci_ms']:.2f})  HARQ retx {row['harq_retx']:g}"
    ]


def write_summary(out: Path, rows: list[dict]) -> Path:
    return experiment.write_summary(out, rows, COLUMNS)


def report(out: Path, rows: list[dict], links: dict[str, list[str]] | None = None) -> Path:
    """OUT/report/index.html: per direction and TDD pattern, Copa's throughput with each
    compensation on both channels (the seed's Figures 18 and 19), and the table, each row linking
    the reports of its runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = []
    for cc in CCS:
        for d, tdd in ((d, tdd) for d in DIRS for tdd in TDDS):
            sel = [r for r in rows if r["cc"] == cc and r["dir"] == d and r["tdd"] == tdd]
            if not sel:
                continue
            fig, ax = plt.subplots(figsize=(6.5, 3.8))
            width = 0.8 / max(len(CHANNELS), 1)
            for k, ch in enumerate(CHANNELS):
                pts = [next((r for r in sel if r["channel"] == ch and r["compensation"] == c), None) for c in COMPENSATIONS]
                xs = [i + (k - (len(CHANNELS) - 1) / 2) * width for i in range(len(COMPENSATIONS))]
                ax.bar(
                    xs,
                    [p["throughput_mbps"] if p else 0 for p in pts],
                    width,
                    yerr=[p["throughput_ci_mbps"] if p else 0 for p in pts],
                    capsize=3,
                    label=f"{ch} channel",
                )
            ax.set_xticks(range(len(COMPENSATIONS)), COMPENSATIONS)
            ax.set_xlabel("Gandalf's compensation of its delay samples")
            ax.set_ylabel(f"{cc}'s throughput, Mbit/s")
            ax.set_title(f"{cc}: {d.upper()}, TDD {tdd.upper()}")
            ax.legend()
            ax.grid(alpha=0.3, axis="y")
            figs.append(_png(fig))
            plt.close(fig)
    links = links or {}

    def run_links(r: dict) -> list[str]:
        return links.get(Config(r["cc"], r["compensation"], r["dir"], r["channel"], r["tdd"]).name, [])

    intro = __doc__.split(chr(10) + chr(10))[1].replace(chr(10), " ").replace("``", "")
    heading = "ran-delay: Copa, GCC and the RAN's delays (seed 004)"
    return sweep_report(out, "ran-delay", heading, intro, figs, "throughput per compensation", rows, COLUMNS, run_links)
