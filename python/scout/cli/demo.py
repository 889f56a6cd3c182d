"""`scout demo`: the built-in scenarios simulated, analysed and reported."""

from __future__ import annotations

import argparse
from pathlib import Path

from scout import rundir
from scout.argtypes import (
    SECONDS_POSITIVE,
)
from scout.cli.analyze import print_analysis, render_report, run_analysis
from scout.cli.common import emulator_unavailable, fmt_ms, resolve_scenario
from scout.cli.emulate import cmd_emulate
from scout.cli.simulate import print_summary, run_simulation
from scout.errors import UsageError

DEMO_SCENARIOS = ["udp-flood", "attribution-light", "attribution-medium", "attribution-heavy", "mixed"]


def cmd_demo(args: argparse.Namespace) -> int:
    from scout import analysis

    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory")
    # Each scenario's run replaces an earlier demo's run, never anything else: check all first.
    for name in DEMO_SCENARIOS:
        rundir.check(out / name, force=True, what=f"-o {out}: {name}:")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in DEMO_SCENARIOS:
        result = run_simulation(resolve_scenario(name, builtin_only=True), out / name, None, args.duration, [], force=True)
        print_summary(name, result, result["wall_s"])
        s = run_analysis(out / name)
        print_analysis(s)
        rows.append((name, result, s))
    reports = {}
    opened = {name: analysis.open(out / name) for name in DEMO_SCENARIOS}
    loads = [a for name, a in opened.items() if name.startswith("attribution-")]
    for name, a in opened.items():
        reports[name] = render_report(a, loads if name.startswith("attribution-") else None)
    # The emulated part: real ping and iperf3 through the same model, where it can run.
    why = emulator_unavailable(("ping", "iperf3"))
    if why:
        print(f"\nemulate-demo: skipped ({why})")
    else:
        name = "emulate-demo"
        rundir.check(out / name, force=True, what=f"-o {out}: {name}:")
        args_emu = argparse.Namespace(
            scenario=name,
            output=str(out / name),
            force=True,
            duration=args.duration,
            seed=None,
            set=[],
            shell=False,
            no_offload=False,
            probe=False,
            capture=False,
        )
        print()
        cmd_emulate(args_emu)
        s = run_analysis(out / name)
        print_analysis(s)
        reports[name] = render_report(analysis.open(out / name), None)
    print("\nsummary")
    print(f"  {'scenario':<20}{'DL Mbit/s':>10}{'DL p50 ms':>11}{'DL p99 ms':>11}{'drops':>9}{'closes':>9}  top contributor")
    for name, r, s in rows:
        dl = r["summary"]["directions"][0]
        delay = dl["delay"] or {}
        cl = s["closure"]
        top = f"{s['dominant'][0]['layer']}/{s['dominant'][0]['component']}" if s["dominant"] else "-"
        closes = f"{100 * cl['closed'] / cl['n']:.0f} %" if cl["n"] else "-"
        print(
            f"  {name:<20}{dl['throughput_mbps']:>10.1f}{fmt_ms(delay.get('p50_ns')):>11}"
            f"{fmt_ms(delay.get('p99_ns')):>11}{r['summary']['dropped_packets']:>9,}{closes:>9}  {top}"
        )
    print("\nreports:")
    for name, path in reports.items():
        print(f"  {name:<20} {path}")
    print(f'\nruns under {out}/ — try: scout query {out}/udp-flood "SELECT * FROM drops"')
    return 0


def add_demo(sub) -> None:
    """`scout demo`'s options."""
    d = sub.add_parser(
        "demo",
        help="simulate, analyse and report the built-in scenarios",
        description="Runs udp-flood, attribution-{light,medium,heavy} and mixed, analyses each, writes their reports "
        "(the attribution runs compared across load) and prints a summary table and the reports' paths.",
    )
    d.add_argument("-o", "--output", default="runs/demo", help="directory for the runs (default: runs/demo)")
    d.add_argument("--duration", type=SECONDS_POSITIVE, help="simulated seconds per scenario (default: each scenario's own)")
    d.set_defaults(func=cmd_demo)
