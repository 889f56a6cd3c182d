"""`scout simulate`: a scenario through the deterministic simulator, and its summary."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from scout import _native
from scout.argtypes import (
    SECONDS_POSITIVE,
    U64,
)
from scout.cli.common import Progress, finished, fmt_ms, live_args, live_server, prepare_run, resolve_scenario


def replay_lines(radio: list) -> list[str]:
    """One line per UE whose radio replays a recorded run (``channel.model: replay``)."""
    lines = []
    for r in radio:
        rp = r.get("replay")
        if not rp:
            continue
        parts = []
        for d in ("dl", "ul"):
            s = rp.get(d)
            if not s:
                parts.append(f"{d.upper()} not recorded (constant SINR)")
                continue
            bler = s["first_tx_nacks"] / s["with_outcome"] if s["with_outcome"] else 0.0
            mcs = "recorded MCS" if s["with_mcs"] else "link adaptation on the recorded SINR"
            parts.append(f"{d.upper()} {s['with_outcome']:,} first transmissions, {bler:.1%} failed, {mcs}")
        lines.append(f"radio: UE {r['ue']} replays UE {rp['recorded_ue']} of {rp['run']} ({'; '.join(parts)})")
    return lines


def print_summary(name: str, result: dict, wall: float, verb: str = "simulated") -> None:
    s = result["summary"]
    ev = result["events"]
    n_ev = sum(ev.values())
    if verb == "simulated":
        print(f"\n{name}: {s['duration_s']:.1f} s simulated in {wall:.2f} s ({s['duration_s'] / wall:.0f}x real time)")
    else:
        print(f"\n{name}: {s['duration_s']:.1f} s emulated")
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
    to_core = (result.get("n3") or {}).get("to_core_packets")
    if to_core:
        print(f"  uplink handed to real UPF(s) at the gNB's N3: {to_core:,} (the model's journeys end there)")
    if s.get("app_rtt"):
        r = s["app_rtt"]
        print(f"  app RTT (ping): p50 {fmt_ms(r['p50_ns'])} ms, p99 {fmt_ms(r['p99_ns'])} ms")
    for line in replay_lines(result.get("radio") or []):
        print("  " + line)
    if result.get("apps_not_run"):
        a = result["apps_not_run"]
        print(f"  note: the scenario's {a['count']} app(s) were not run: {a['why']}")


def run_simulation(scenario: Path, out: Path, seed, duration, sets, force: bool, quiet: bool = False, live=None) -> dict:
    prepare_run(out, force, "run")
    prog = Progress(f"simulating {scenario.stem}")
    try:
        text = _native.simulate(
            str(scenario),
            str(out),
            seed=seed,
            duration=duration,
            sets=list(sets),
            progress=None if quiet else prog,
            live=live,
        )
    except ValueError as e:
        prog.done(finished=False)
        raise SystemExit(f"error: {e}") from None
    except BaseException:
        prog.done(finished=False)
        raise
    finished()
    wall = prog.done()
    result = json.loads(text)
    result["wall_s"] = wall
    return result


def cmd_simulate(args: argparse.Namespace) -> int:
    scenario = resolve_scenario(args.scenario)
    out = Path(args.output)
    live = live_server(args)
    result = run_simulation(scenario, out, args.seed, args.duration, args.set or [], args.force, live=live)
    print_summary(scenario.stem, result, result["wall_s"])
    return 0


def add_simulate(sub) -> None:
    """`scout simulate`'s options."""
    s = sub.add_parser(
        "simulate",
        help="run a scenario through the deterministic 5G user-plane simulator",
        description="Simulate SCENARIO (a YAML file or a built-in name) and write a run directory: "
        "run.json plus events/{packet,slot,control}.parquet. Same scenario and seed give identical tables.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="built-in scenarios: udp-flood, attribution-light, attribution-medium, attribution-heavy, "
        "mixed, capacity-trace, bench-60mbps, l4s-anbr, ran-delay, loaded-cell (the others, with apps:, are for emulate)\n"
        "keys follow srsRAN gnb.yaml names; see scenarios/*.yaml and docs/model.md",
    )
    s.add_argument("scenario", help="scenario YAML file or built-in scenario name")
    s.add_argument("-o", "--output", required=True, help="run directory to create")
    s.add_argument("--seed", type=U64, help="random seed (default: the scenario's `seed`)")
    s.add_argument("--duration", type=SECONDS_POSITIVE, help="simulated seconds (default: the scenario's `duration_s`)")
    s.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a scenario key, e.g. --set cell_cfg.common_scs=15 --set traffic[0].rate_mbps=80",
    )
    s.add_argument("--force", action="store_true", help="replace an existing run directory")
    live_args(s, "the simulation (in simulated time, which runs far faster than the wall clock)")
    s.set_defaults(func=cmd_simulate)
