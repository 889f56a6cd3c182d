"""`scout experiment upf-slices`: seed 001's testbed study of per-slice UPFs under load, through
the emulator with Scout's real UPF processes (docs/experiments.md, docs/upf.md).

Three slices, each served by a UPF process of its own in its own namespace (``scenarios/upf-slices.yaml``):
eMBB's UE sends bulk UDP uplink (iperf3) at 5, 20 or 50 Mbit/s — the light, medium and heavy
loads —, URLLC's pings every 10 ms, mMTC's downloads 200 kB over TCP every 0.5 s; the SMF modifies
a session of each slice every 200 ms. ``scout probe`` on every UPF's N3 and N6 pairs each packet's
two sightings by its identity; each slice's N3→N6 (uplink) forwarding delay comes from those
pairs. The seed paired each N6 departure with the nearest preceding N3 arrival instead: the same
sightings paired that way show its bias. The PFCP modification latency is the SMF's, from request
to response.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from scout import experiment
from scout.events import parquet_source
from scout.experiment import _png, sweep_report

#: eMBB's uplink rate per load, Mbit/s (the seed's light, medium, heavy).
LOADS = {"light": 5, "medium": 20, "heavy": 50}
SLICES = ["embb", "urllc", "mmtc"]
PAIRINGS = ["identity", "nearest"]
#: Seconds before the applications start (the emulation lasts this much longer than the load).
LEAD_S = 1.0
#: iperf3's datagram: an IP packet of 1328 bytes fits the UE's 1400-byte MTU unfragmented.
EMBB_DATAGRAM = 1300

COLUMNS = {
    "slice": "embb, urllc or mmtc (a UPF process each)",
    "load": "light, medium or heavy: eMBB's uplink at 5, 20 or 50 Mbit/s",
    "pairs": "uplink packets of the slice paired N3 -> N6 (identity: by the probe; nearest: every N6 departure)",
    "p50_us": "median N3 -> N6 forwarding delay, µs",
    "p99_us": "99th percentile, µs",
    "p999_us": "99.9th percentile, µs",
    "pfcp_mod_p50_us": "median PFCP session modification latency of the slice's UPF (the SMF's request to response), µs",
    "pfcp_mod_p99_us": "99th percentile, µs",
    "pairing": "identity (each packet's own two sightings) or nearest (the seed's: the nearest preceding N3 arrival)",
}


@dataclass(frozen=True)
class Config:
    load: str

    @property
    def name(self) -> str:
        return self.load


def configurations() -> list[Config]:
    return [Config(x) for x in LOADS]


def select(cfgs: list[Config], only: str | None) -> list[Config]:
    return experiment.select(cfgs, only, {"load": list(LOADS)})


def scenario_sets(cfg: Config, duration_s: float) -> list[str]:
    """The `--set` overrides of ``scenarios/upf-slices.yaml`` for one load of ``duration_s``
    seconds (the emulation lasts 3 s more: the apps start at 1 s and iperf3 reports at its end)."""
    d = f"{duration_s:g}"
    rate = LOADS[cfg.load]
    loop = (
        f"end=$(($(date +%s) + {int(duration_s)})); while [ $(date +%s) -lt $end ]; "
        "do iperf3 -c $SCOUT_DN -p 5202 -R -n 200K > /dev/null || sleep 0.2; sleep 0.5; done"
    )
    return [
        f"apps[2].cmd=iperf3 -c $SCOUT_DN -p 5201 -u -b {rate}M -l {EMBB_DATAGRAM} -t {d} -J",
        f"apps[3].cmd=ping -i 0.01 -s 56 -w {d} -q $SCOUT_DN",
        f"apps[4].cmd={loop}",
        f"duration_s={duration_s + 3:g}",
    ]


def _q(values, qs: list[float]) -> list[float | None]:
    import numpy as np

    if len(values) == 0:
        return [None] * len(qs)
    return [float(x) for x in np.quantile(np.asarray(values, dtype=np.float64), qs, method="linear")]


def run_metrics(run: Path) -> dict:
    """One load's figures per slice: the uplink N3 -> N6 delays by identity pairing and by the
    seed's nearest-preceding pairing (µs), the PFCP modification latencies (µs), and the counts
    that say every pair is an identity pair."""
    import duckdb
    import numpy as np

    meta = json.loads((run / "run.json").read_text())
    em = meta["emulator"]
    probe = em.get("probe") or {}
    if "error" in probe or not (run / "upf" / "run.json").is_file():
        raise RuntimeError(f"{run}: the probe on the UPFs did not run: {probe.get('error', 'no upf/ run')}")
    ev = parquet_source(run / "upf" / "events" / "packet.parquet").replace("'", "''")
    with duckdb.connect() as con:
        rows = con.execute(
            f"SELECT slice, dir, min(t_ns) AS t_in, max(t_ns) AS t_out FROM '{ev}' GROUP BY pkt, slice, dir"
        ).fetchall()
    out: dict[str, dict] = {}
    for s in SLICES:
        ul = [(a, b) for (sl, d, a, b) in rows if sl == s and d == "ul"]
        arrivals = np.sort(np.array([a for a, _ in ul], dtype=np.int64))
        departures = np.sort(np.array([b for _, b in ul], dtype=np.int64))
        identity = [(b - a) / 1e3 for a, b in ul]
        # The seed's method: each N6 departure with the nearest N3 arrival before it.
        k = np.searchsorted(arrivals, departures, side="right") - 1
        nearest = ((departures[k >= 0] - arrivals[k[k >= 0]]) / 1e3).tolist()
        core = next((c for c in em.get("core") or [] if c["slice"] == s), None)
        mods = [m * 1e3 for m in (core or {}).get("pfcp", {}).get("modification_ms", [])]
        counters = (core or {}).get("upf", {}).get("counters", {})
        out[s] = {
            "identity": identity,
            "nearest": nearest,
            "pfcp_mod_us": mods,
            "pairs_dl": sum(1 for (sl, d, _, _) in rows if sl == s and d == "dl"),
            "forwarded": (counters.get("ul_forwarded"), counters.get("dl_forwarded")),
        }
    out["_probe"] = {"unmatched": probe.get("unmatched"), "pairs": probe.get("pairs")}
    return out


def summary_rows(cfg: Config, m: dict) -> list[dict]:
    rows = []
    for s in SLICES:
        mod = _q(m[s]["pfcp_mod_us"], [0.5, 0.99])
        for pairing in PAIRINGS:
            d = m[s][pairing]
            p50, p99, p999 = _q(d, [0.5, 0.99, 0.999])
            rows.append(
                {
                    "slice": s,
                    "load": cfg.load,
                    "pairs": len(d),
                    "p50_us": None if p50 is None else round(p50, 1),
                    "p99_us": None if p99 is None else round(p99, 1),
                    "p999_us": None if p999 is None else round(p999, 1),
                    "pfcp_mod_p50_us": None if mod[0] is None else round(mod[0], 1),
                    "pfcp_mod_p99_us": None if mod[1] is None else round(mod[1], 1),
                    "pairing": pairing,
                }
            )
    return rows


def pool(runs: list[dict]) -> dict:
    """The seeds' delays pooled per slice (each seed's figures, as ``run_metrics`` gives them)."""
    merged = runs[0]
    for m in runs[1:]:
        for s in SLICES:
            for k in ("identity", "nearest", "pfcp_mod_us"):
                merged[s][k] = merged[s][k] + m[s][k]
    return merged


def progress(c: Config, rows: list[dict]) -> list[str]:
    """A load's progress lines (a slice each), from its identity-paired summary rows."""
    return [
        f"{c.load:<6} {r['slice']:<5} {r['pairs']:>7,} pairs  N3->N6 p50 {r['p50_us']} µs, "
        f"p99 {r['p99_us']} µs, p99.9 {r['p999_us']} µs; PFCP modification p50 {r['pfcp_mod_p50_us']} µs"
        for r in rows
        if r["pairing"] == "identity"
    ]


def write_summary(out: Path, rows: list[dict]) -> Path:
    return experiment.write_summary(out, rows, COLUMNS)


def report(out: Path, rows: list[dict], delays: dict[str, dict], links: dict[str, list[str]] | None = None) -> Path:
    """OUT/report/index.html: each slice's N3 -> N6 delay CDF per load (identity pairing), the
    isolation figure (each slice's p99 against eMBB's load), identity against nearest pairing,
    PFCP modification latency per load, and the table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    figs = []
    fig, axes = plt.subplots(1, len(SLICES), figsize=(12, 3.6), sharey=True)
    for ax, s in zip(axes, SLICES, strict=True):
        for load, m in delays.items():
            d = np.sort(np.asarray(m[s]["identity"]))
            if len(d):
                ax.plot(d, np.arange(1, len(d) + 1) / len(d), label=f"{load} ({LOADS[load]} Mbit/s eMBB)")
        ax.set_xscale("log")
        ax.set_xlabel("N3 -> N6 delay, µs (log)")
        ax.set_title(f"{s}: uplink through its UPF")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("CDF (identity pairing)")
    axes[0].legend(fontsize=8)
    figs.append(_png(fig))
    plt.close(fig)

    loads = [x for x in LOADS if x in delays]
    ident = [r for r in rows if r["pairing"] == "identity"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    for s in SLICES:
        pts = [next((r for r in ident if r["slice"] == s and r["load"] == x), None) for x in loads]
        axes[0].plot(loads, [p["p99_us"] if p else None for p in pts], marker="o", label=s)
        axes[1].plot(loads, [p["pfcp_mod_p50_us"] if p else None for p in pts], marker="o", label=f"{s} p50")
        axes[1].plot(loads, [p["pfcp_mod_p99_us"] if p else None for p in pts], marker="x", linestyle="--", label=f"{s} p99")
    axes[0].set_ylabel("p99 N3 -> N6 delay, µs")
    axes[0].set_title("Isolation: does eMBB's load move the other slices' UPFs?")
    axes[1].set_ylabel("PFCP session modification, µs")
    axes[1].set_title("N4 under data-plane load (every 200 ms, per UPF)")
    for ax in axes:
        ax.set_xlabel("load (eMBB uplink)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    figs.append(_png(fig))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(12, 3.6))
    width = 0.8 / len(loads) if loads else 0.8
    for k, load in enumerate(loads):
        for j, pairing in enumerate(PAIRINGS):
            pts = [next((r for r in rows if (r["slice"], r["load"], r["pairing"]) == (s, load, pairing)), None) for s in SLICES]
            xs = [i * 2 + j + (k - (len(loads) - 1) / 2) * width for i in range(len(SLICES))]
            p99 = [(p["p99_us"] or 0) if p else 0 for p in pts]
            ax.bar(xs, p99, width, label=f"{pairing}, {load}", hatch="//" if pairing == "nearest" else None)
    ax.set_xticks([i * 2 + 0.5 for i in range(len(SLICES))], SLICES)
    ax.set_ylabel("p99 N3 -> N6 delay, µs")
    ax.set_title("The same sightings paired by identity and by the seed's nearest preceding arrival")
    ax.legend(fontsize=7, ncol=3)
    ax.grid(alpha=0.3, axis="y")
    figs.append(_png(fig))
    plt.close(fig)

    links = links or {}
    intro = __doc__.split(chr(10) + chr(10))[1].replace(chr(10), " ").replace("``", "")
    heading = "upf-slices: three real UPFs, one per slice, under load (seed 001)"
    return sweep_report(
        out,
        "upf-slices",
        heading,
        intro,
        figs,
        "forwarding delay per slice, load and pairing",
        rows,
        COLUMNS,
        lambda r: links.get(r["load"], []) if r["pairing"] == "identity" and r["slice"] == "embb" else [],
    )
