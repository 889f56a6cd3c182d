"""The ``scout`` command line. Each command parses its options and calls a library function."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from scout import __version__, _native

EPILOG = """\
examples:
  scout demo                                   simulate the built-in scenarios and summarise them
  scout simulate udp-flood -o runs/flood       a built-in scenario by name
  scout simulate my.yaml -o runs/x --seed 3 --duration 5 --set cell_cfg.common_scs=15

docs: docs/schema.md (event tables), docs/model.md (what the model implements, with 3GPP clauses)
"""


def scenarios_dir() -> Path:
    """The built-in scenarios shipped with the source tree."""
    here = Path(__file__).resolve()
    for base in [here.parent / "scenarios", here.parents[2] / "scenarios"]:
        if base.is_dir():
            return base
    raise SystemExit("error: built-in scenarios not found (expected scenarios/ beside python/)")


def resolve_scenario(name: str) -> Path:
    p = Path(name)
    if p.exists():
        return p
    builtin = scenarios_dir() / f"{name}.yaml"
    if builtin.exists():
        return builtin
    names = ", ".join(sorted(f.stem for f in scenarios_dir().glob("*.yaml")))
    raise SystemExit(f"error: {name}: no such file, and not a built-in scenario; built-in: {names}")


class Progress:
    """A one-line progress bar on stderr (silent when stderr is not a terminal, except at the end)."""

    def __init__(self, label: str):
        self.label = label
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()

    def __call__(self, frac: float) -> None:
        if not self.tty:
            return
        width = 30
        n = int(frac * width)
        sys.stderr.write(f"\r{self.label} [{'#' * n}{'.' * (width - n)}] {frac * 100:5.1f}%")
        sys.stderr.flush()

    def done(self) -> float:
        wall = time.monotonic() - self.t0
        if self.tty:
            sys.stderr.write("\r" + " " * (len(self.label) + 45) + "\r")
        return wall


def fmt_ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.2f}"


def print_summary(name: str, result: dict, wall: float) -> None:
    s = result["summary"]
    ev = result["events"]
    n_ev = sum(ev.values())
    print(f"\n{name}: {s['duration_s']:.1f} s simulated in {wall:.2f} s ({s['duration_s'] / wall:.0f}x real time)")
    print(f"  run directory: {result['run']}")
    print(f"  events: {n_ev:,} ({ev['packet_events']:,} packet, {ev['slot_events']:,} slot, {ev['control_events']:,} control)")
    hdr = f"  {'dir':<4}{'offered':>10}{'delivered':>11}{'Mbit/s':>9}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'HARQ retx':>11}"
    print(hdr)
    for d in s["directions"]:
        if d["offered_packets"] == 0:
            continue
        delay = d["delay"] or {}
        print(
            f"  {d['dir']:<4}{d['offered_packets']:>10,}{d['delivered_packets']:>11,}{d['throughput_mbps']:>9.1f}"
            f"{fmt_ms(delay.get('p50_ns')):>9}{fmt_ms(delay.get('p90_ns')):>9}{fmt_ms(delay.get('p99_ns')):>9}"
            f"{d['harq_retx']:>11,}"
        )
    drops = s.get("drops") or {}
    if drops:
        parts = [f"{layer}/{reason}: {v['packets']:,}" for layer, rs in drops.items() for reason, v in rs.items()]
        print("  drops: " + ", ".join(parts))
    else:
        print("  drops: none")
    print(f"  in flight at end: {s['in_flight_packets']:,}")
    if s.get("app_rtt"):
        r = s["app_rtt"]
        print(f"  app RTT (ping): p50 {fmt_ms(r['p50_ns'])} ms, p99 {fmt_ms(r['p99_ns'])} ms")


def run_simulation(scenario: Path, out: Path, seed, duration, sets, force: bool, quiet: bool = False) -> dict:
    if out.exists() and (out / "run.json").exists():
        if not force:
            raise SystemExit(f"error: {out}: already holds a run; use --force to replace it or choose another -o")
        shutil.rmtree(out)
    prog = Progress(f"simulating {scenario.stem}")
    try:
        text = _native.simulate(
            str(scenario),
            str(out),
            seed=seed,
            duration=duration,
            sets=list(sets),
            progress=None if quiet else prog,
        )
    except ValueError as e:
        prog.done()
        raise SystemExit(f"error: {e}") from None
    wall = prog.done()
    result = json.loads(text)
    result["wall_s"] = wall
    return result


def cmd_simulate(args: argparse.Namespace) -> int:
    scenario = resolve_scenario(args.scenario)
    out = Path(args.output)
    result = run_simulation(scenario, out, args.seed, args.duration, args.set or [], args.force)
    print_summary(scenario.stem, result, result["wall_s"])
    return 0


DEMO_SCENARIOS = ["udp-flood", "attribution-light", "attribution-medium", "attribution-heavy", "mixed"]


def cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in DEMO_SCENARIOS:
        result = run_simulation(resolve_scenario(name), out / name, None, None, [], force=True)
        print_summary(name, result, result["wall_s"])
        rows.append((name, result))
    print("\nsummary")
    print(f"  {'scenario':<20}{'DL Mbit/s':>10}{'DL p50 ms':>11}{'DL p99 ms':>11}{'drops':>9}{'run':>6}")
    for name, r in rows:
        dl = r["summary"]["directions"][0]
        delay = dl["delay"] or {}
        print(
            f"  {name:<20}{dl['throughput_mbps']:>10.1f}{fmt_ms(delay.get('p50_ns')):>11}"
            f"{fmt_ms(delay.get('p99_ns')):>11}{r['summary']['dropped_packets']:>9,}  {r['run']}"
        )
    print(f"\nruns written under {out}/ (events in events/*.parquet, metadata in run.json)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="scout",
        description="Scout: per-packet telemetry and latency attribution for the 5G user plane.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"scout {__version__} (schema v{_native.schema_version()})")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser(
        "simulate",
        help="run a scenario through the deterministic 5G user-plane simulator",
        description="Simulate SCENARIO (a YAML file or a built-in name) and write a run directory: "
        "run.json plus events/{packet,slot,control}.parquet. Same scenario and seed give identical tables.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="built-in scenarios: udp-flood, attribution-light, attribution-medium, attribution-heavy, "
        "mixed, bench-60mbps\nkeys follow srsRAN gnb.yaml names; see scenarios/*.yaml and docs/model.md",
    )
    s.add_argument("scenario", help="scenario YAML file or built-in scenario name")
    s.add_argument("-o", "--output", required=True, help="run directory to create")
    s.add_argument("--seed", type=int, help="random seed (default: the scenario's `seed`)")
    s.add_argument("--duration", type=float, help="simulated seconds (default: the scenario's `duration_s`)")
    s.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario key, e.g. --set cell_cfg.common_scs=15 --set traffic[0].rate_mbps=80",
    )
    s.add_argument("--force", action="store_true", help="replace an existing run directory")
    s.set_defaults(func=cmd_simulate)

    d = sub.add_parser(
        "demo",
        help="simulate the built-in scenarios and print their summaries",
        description="Runs udp-flood, attribution-{light,medium,heavy} and mixed, and prints a summary of each.",
    )
    d.add_argument("-o", "--output", default="runs/demo", help="directory for the runs (default: runs/demo)")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
