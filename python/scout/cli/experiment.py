"""`scout experiment`: each named study's runs, summary and comparison report."""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scout import rundir
from scout.argtypes import (
    SECONDS_POSITIVE,
)
from scout.cli.analyze import open_run, print_analysis, render_report, run_analysis
from scout.cli.common import emulator_unavailable, resolve_scenario
from scout.cli.emulate import cmd_emulate, run_emulation_quietly
from scout.cli.simulate import run_simulation
from scout.errors import UsageError


def cmd_experiment(args: argparse.Namespace) -> int:
    from scout import analysis, experiment

    if args.list or not args.name:
        for e in experiment.EXPERIMENTS.values():
            print(f"{e.name:<10} {e.description}")
        if not args.list:
            raise UsageError("give an experiment's name (scout experiment --list names them) and -o OUT")
        return 0
    e = experiment.EXPERIMENTS.get(args.name)
    if e is None:
        raise UsageError(f"{args.name}: no such experiment; accepted: {', '.join(experiment.EXPERIMENTS)}")
    if not args.output:
        raise UsageError("give -o OUT: the directory for the experiment's runs, report and summary.csv")
    if args.seeds is None:
        args.seeds = 1 if e.name == "upf-slices" else 5
    if e.name == "l4s-anbr":
        return run_l4s_anbr(args)
    if e.name == "ran-delay":
        return run_ran_delay(args)
    if e.name == "rlc-modes":
        return run_rlc_modes(args)
    if e.name == "upf-slices":
        return run_upf_slices(args)
    if args.duration is None:
        args.duration = 20.0
    why = emulator_unavailable(("iperf3",))
    if why:
        raise SystemExit(f"error: scout experiment {e.name}: {why}")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory")
    for cfg in e.configurations:
        rundir.check(out / cfg, force=args.force, what=f"-o {out}: {cfg}:")
    out.mkdir(parents=True, exist_ok=True)
    rows, series = [], {}
    for cfg in e.configurations:
        print(f"\n== {e.name}: {cfg} ({args.duration:g} s of iperf3)")
        run_args = argparse.Namespace(
            scenario=e.scenario,
            output=str(out / cfg),
            force=args.force,
            duration=None,
            seed=None,
            set=experiment.tcp_cc_sets(cfg, args.duration),
            shell=False,
            no_offload=False,
            probe=False,
            capture=False,
        )
        with experiment.cubic_hystart(args.hystart if cfg == "cubic" else None) as note:
            if note:
                print(note)
            cmd_emulate(run_args)
        print_analysis(run_analysis(out / cfg))
        render_report(analysis.open(out / cfg), None)
        row, ser = experiment.tcp_cc_metrics(out / cfg, cfg)
        rows.append(row)
        series[cfg] = ser
    csv_path = experiment.write_summary(out, rows, experiment.TCP_CC_COLUMNS)
    report = experiment.tcp_cc_report(out, rows, series)
    print(f"\n{e.name}: summary")
    cols = list(experiment.TCP_CC_COLUMNS)
    print("  " + "  ".join(f"{c:>19}" for c in cols))
    for r in rows:
        print("  " + "  ".join(f"{'' if r[c] is None else r[c]!s:>19}" for c in cols))
    print(f"  summary: {csv_path}\n  report: {report}")
    return 0


@dataclass
class Sweep:
    """A seeded sweep: a run per configuration and seed under ``OUT/NAME/seedN`` (``NAME`` the
    configuration's ``name``), a configuration's summary rows from its seeds' figures, each run's
    ordinary report as ``--reports`` asks. What differs between the experiments is in the three
    functions; `run_sweep` is the loop they share."""

    cfgs: list
    seeds: list[int]
    out: Path
    #: Runs configuration ``c`` for ``seed`` into ``run``; returns the run's figures.
    run: Callable[[Any, Path, int], Any]
    #: A configuration's summary rows from its seeds' figures.
    summarize: Callable[[Any, list], list[dict]]
    #: The progress lines of a configuration, from its summary rows.
    lines: Callable[[Any, list[dict]], list[str]]
    reports: str = "first"
    #: The run directory whose report is written (the probe's run, for upf-slices).
    report_of: Callable[[Path], Path] = lambda run: run


def run_sweep(sw: Sweep) -> tuple[list[dict], dict[str, list[str]]]:
    """Every run of the sweep, in order; returns the summary rows and, per configuration, the
    links (from ``OUT/report/``) to the runs' reports."""
    reported = {"all": sw.seeds, "first": sw.seeds[:1], "none": []}[sw.reports]
    total = len(sw.cfgs) * len(sw.seeds)
    rows: list[dict] = []
    links: dict[str, list[str]] = {}
    done = 0
    for c in sw.cfgs:
        per_seed = []
        for seed in sw.seeds:
            run = sw.out / c.name / f"seed{seed}"
            per_seed.append(sw.run(c, run, seed))
            if seed in reported:
                # The run's ordinary report (analysis first), as `scout report RUN` writes it.
                target = sw.report_of(run)
                with contextlib.redirect_stderr(io.StringIO()):
                    render_report(open_run(str(target)))
                links.setdefault(c.name, []).append(f"../{target.relative_to(sw.out).as_posix()}/report/index.html")
            done += 1
        new = sw.summarize(c, per_seed)
        rows.extend(new)
        for line in sw.lines(c, new):
            print(f"  [{done}/{total}] {line}")
    return rows, links


def _prague(args: argparse.Namespace, name: str, tools: tuple[str, ...]) -> Path | None:
    """scout-prague, the emulator's adaptive sender, for ``--emulate``; None without it."""
    from scout import experiment

    if not args.emulate:
        return None
    why = emulator_unavailable(tools)
    if why:
        raise SystemExit(f"error: scout experiment {name} --emulate: {why}")
    binary = experiment.prague_binary()
    if binary is None:
        raise SystemExit(
            f"error: scout experiment {name} --emulate: scout-prague (the emulator's adaptive sender) is not "
            "built: cargo build --release -p scout-emu --bin scout-prague"
        )
    return binary


def run_l4s_anbr(args: argparse.Namespace) -> int:
    """`scout experiment l4s-anbr`: every configuration at every load and seed, simulated; the
    flow's figures per run, a row per configuration and load, the comparison report."""
    from scout import experiment_l4s as xl

    binary = _prague(args, "l4s-anbr", ("iperf3",))
    loads = [w.strip() for w in args.loads.split(",") if w.strip()]
    if not loads or any(w not in xl.LOADS for w in loads):
        raise UsageError(f"--loads {args.loads}: accepted: a comma list of {', '.join(xl.LOADS)}")

    def select(cfgs: list, only: str | None) -> list:
        return xl.select(cfgs, only, loads)

    warmup = f"the {xl.WARMUP_S:g} s warm-up"
    points, seeds, duration, out = _sweep_runs(args, select, xl.configurations(), 30.0, xl.WARMUP_S, warmup)
    scenario = resolve_scenario("l4s-anbr")
    where = "emulated (scout-prague, iperf3)" if binary else "simulated"
    n_cfgs = len(points) // len(loads)
    print(
        f"l4s-anbr: {n_cfgs} configurations x {len(loads)} loads x {len(seeds)} seeds = {len(points) * len(seeds)} "
        f"runs of {duration:g} s, {where}"
    )

    def run(p, run: Path, seed: int) -> dict:
        if binary is None:
            run_simulation(scenario, run, seed, duration, xl.scenario_sets(p.cfg, p.load), args.force, quiet=True)
            return xl.flow_metrics(run)
        sets = xl.emulate_sets(p.cfg, p.load, duration, binary)
        run_emulation_quietly("l4s-anbr", run, seed, duration + 1.5, sets, args.force)
        return xl.emulated_metrics(run)

    rows, links = run_sweep(Sweep(points, seeds, out, run, xl.summarize, xl.progress, args.reports))
    csv_path = xl.write_summary(out, rows)
    page = xl.report(out, rows, {(p.cfg.name, p.load): links[p.name] for p in points if p.name in links})
    runs_reported = {"all": "every run's report", "first": "seed 1's report", "none": "no run reports"}[args.reports]
    print(
        f"  summary: {csv_path}\n  report: {page} (links {runs_reported} per configuration)\n"
        f"  each run: scout report {out}/CONFIG-LOAD/seedN"
    )
    return 0


def _sweep_runs(args: argparse.Namespace, select, cfgs: list, default_s: float, floor_s: float, floor_text: str):
    """A seeded sweep's arguments checked and its output prepared: the configurations `--only`
    keeps (``select``), the seeds, the duration (more than ``floor_s``), and OUT with no run of
    the sweep in the way (``OUT/CONFIG/seedN``, unless ``--force``)."""
    try:
        cfgs = select(cfgs, args.only)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not cfgs:
        raise UsageError(f"--only {args.only}: selects no configuration")
    if args.seeds < 1:
        raise UsageError(f"--seeds {args.seeds}: accepted: 1 or more")
    duration = args.duration if args.duration is not None else default_s
    if duration <= floor_s:
        raise UsageError(f"--duration {duration:g}: accepted: more than {floor_text}")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: exists and is not a directory")
    seeds = list(range(1, args.seeds + 1))
    for c in cfgs:
        for seed in seeds:
            rundir.check(out / c.name / f"seed{seed}", force=args.force, what=f"-o {out}:")
    out.mkdir(parents=True, exist_ok=True)
    return cfgs, seeds, duration, out


def run_ran_delay(args: argparse.Namespace) -> int:
    """`scout experiment ran-delay`: Copa with each of Gandalf's compensations, both directions,
    both channels, both TDD patterns, every seed, simulated; a row per configuration, the
    comparison report."""
    from scout import experiment_ran_delay as xr

    binary = _prague(args, "ran-delay", ())
    warmup = f"the {xr.WARMUP_S:g} s warm-up"
    cfgs, seeds, duration, out = _sweep_runs(args, xr.select, xr.configurations(), 20.0, xr.WARMUP_S, warmup)
    scenario = resolve_scenario("ran-delay")
    where = "emulated (scout-prague; a run takes its duration in wall time)" if binary else "simulated"
    print(
        f"ran-delay: {len(cfgs)} configurations x {len(seeds)} seeds = {len(cfgs) * len(seeds)} runs of {duration:g} s, {where}"
    )

    def run(c, run: Path, seed: int) -> dict:
        if binary is None:
            run_simulation(scenario, run, seed, duration, xr.scenario_sets(c), args.force, quiet=True)
            return xr.run_metrics(run)
        run_emulation_quietly("ran-delay", run, seed, duration + 1.5, xr.emulate_sets(c, run, duration, binary), args.force)
        return xr.emulated_metrics(run)

    rows, links = run_sweep(Sweep(cfgs, seeds, out, run, xr.summarize, xr.progress, args.reports))
    csv_path = xr.write_summary(out, rows)
    page = xr.report(out, rows, links)
    print(f"  summary: {csv_path}\n  report: {page}\n  each run: scout report {out}/CONFIG/seedN")
    return 0


def run_rlc_modes(args: argparse.Namespace) -> int:
    """`scout experiment rlc-modes`: iperf3 TCP and UDP over RLC AM and UM on a good and a poor
    channel, every seed, through the emulator; a row per configuration, the comparison report."""
    from scout import experiment_rlc as xm

    if args.emulate:
        raise UsageError("--emulate: rlc-modes always runs through the emulator (iperf3 and the kernel's TCP)")
    why = emulator_unavailable(("iperf3",))
    if why:
        raise SystemExit(f"error: scout experiment rlc-modes: {why}")
    floor = xm.WARMUP_S + 1
    cfgs, seeds, duration, out = _sweep_runs(args, xm.select, xm.configurations(), 40.0, floor, f"{floor:g} s")
    n = len(cfgs) * len(seeds)
    print(f"rlc-modes: {len(cfgs)} configurations x {len(seeds)} seeds = {n} runs of {duration:g} s of iperf3, emulated")
    series, layers = {}, {}

    def run(c, run: Path, seed: int) -> dict:
        run_emulation_quietly("rlc-modes", run, seed, duration + 3, xm.scenario_sets(c, duration), args.force)
        m, ser = xm.run_metrics(run, c.proto)
        if seed == seeds[0]:
            # The first seed's run stands for its configuration in the report's figures.
            if c.proto == "tcp":
                series[c.name] = ser
            with contextlib.redirect_stderr(io.StringIO()):
                open_run(str(run))
            layers[c.name] = xm.layer_means(run)
        return m

    rows, links = run_sweep(Sweep(cfgs, seeds, out, run, xm.summarize, xm.progress, args.reports))
    csv_path = xm.write_summary(out, rows)
    page = xm.report(out, rows, series, layers, links)
    print(f"  summary: {csv_path}\n  report: {page}\n  each run: scout report {out}/CONFIG/seedN")
    return 0


def run_upf_slices(args: argparse.Namespace) -> int:
    """`scout experiment upf-slices`: three slices with a real UPF each, eMBB's uplink at the
    light, medium and heavy load, the probe on every UPF; a row per slice, load and pairing, the
    comparison report."""
    from scout import experiment
    from scout import experiment_upf as xu

    if args.emulate:
        raise UsageError("--emulate: upf-slices always runs through the emulator (real UPF processes)")
    why = emulator_unavailable(("iperf3",))
    if why:
        raise SystemExit(f"error: scout experiment upf-slices: {why}")
    if experiment.upf_binary() is None:
        raise SystemExit(
            "error: scout experiment upf-slices: scout-upf is not built (cargo build --release -p scout-emu --bin scout-upf)"
        )
    cfgs, seeds, duration, out = _sweep_runs(args, xu.select, xu.configurations(), 20.0, 2.0, "2 s")
    n = len(cfgs) * len(seeds)
    print(f"upf-slices: {len(cfgs)} loads x {len(seeds)} seeds = {n} runs of {duration:g} s, emulated with 3 real UPFs")
    delays: dict[str, dict] = {}

    def run(c, run: Path, seed: int) -> dict:
        run_emulation_quietly("upf-slices", run, seed, duration + 3, xu.scenario_sets(c, duration), args.force, probe=True)
        return xu.run_metrics(run)

    def summarize(c, per_seed: list[dict]) -> list[dict]:
        # The report's CDFs need each load's pooled delays too.
        delays[c.name] = xu.pool(per_seed)
        return xu.summary_rows(c, delays[c.name])

    rows, links = run_sweep(Sweep(cfgs, seeds, out, run, summarize, xu.progress, args.reports, lambda run: run / "upf"))
    csv_path = xu.write_summary(out, rows)
    page = xu.report(out, rows, delays, links)
    print(f"  summary: {csv_path}\n  report: {page}\n  each run: scout analyze {out}/LOAD/seedN/upf (the probe's run)")
    return 0


def add_experiment(sub) -> None:
    """`scout experiment`'s options."""
    xp = sub.add_parser(
        "experiment",
        help="run a named study: its runs, a comparison report and summary.csv (tcp-cc: emulator, root)",
        description="Runs the experiment NAME (tcp-cc and rlc-modes through the emulator, as root; l4s-anbr and "
        "ran-delay in the simulator, or with --emulate through the emulator): run directories under OUT, "
        "each analysed and reported, then OUT/report/index.html comparing them and OUT/summary.csv (one row per "
        "configuration, columns in docs/experiments.md). --list names every experiment.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  scout experiment tcp-cc -o runs/tcp-cc",
    )
    xp.add_argument("name", nargs="?", help="the experiment (see --list)")
    xp.add_argument("--list", action="store_true", help="name every experiment and what it does")
    xp.add_argument("-o", "--output", help="directory for the experiment's runs, report and summary.csv")
    xp.add_argument(
        "--duration",
        type=SECONDS_POSITIVE,
        default=None,
        metavar="S",
        help="seconds of traffic per run (default: tcp-cc 20, l4s-anbr 30, ran-delay 20, rlc-modes 40)",
    )
    xp.add_argument(
        "--seeds",
        type=int,
        default=None,
        metavar="N",
        help="l4s-anbr, ran-delay, rlc-modes, upf-slices: runs per configuration (and load; default 5, upf-slices 1)",
    )
    xp.add_argument("--loads", default="low,high", help="l4s-anbr: background loads to run (default low,high)")
    xp.add_argument(
        "--only",
        default=None,
        metavar="NAMES",
        help="l4s-anbr: only these configurations (e.g. constant,l4s-5-7,anbr-40); ran-delay, rlc-modes: only these "
        "values of its dimensions (e.g. dl,poor or none,all,dddsu; udp,poor)",
    )
    xp.add_argument(
        "--emulate",
        action="store_true",
        help="l4s-anbr, ran-delay: real packets through the emulator instead (root; a run takes its duration in wall "
        "time). l4s-anbr: scout-prague from the DN to UE 0, iperf3 UDP to UE 1; ran-delay: scout-prague's Copa or GCC "
        "between the DN and UE 0, Gandalf on the UE's side reading its live RAN feed",
    )
    xp.add_argument(
        "--reports",
        choices=("first", "all", "none"),
        default="first",
        help="l4s-anbr, ran-delay, rlc-modes: write the ordinary report (scout report) of seed 1's run of each configuration "
        "(first, the default), of every run (all: ~3 s a run), or of none; the comparison links them",
    )
    xp.add_argument("--force", action="store_true", help="replace the experiment's earlier runs in OUT")
    xp.add_argument(
        "--hystart",
        choices=("off", "on", "keep"),
        default="off",
        help="tcp-cc: CUBIC's HyStart during the CUBIC run (default off: slow start then fills the RLC queue, and "
        "the sawtooth of drops at its limit shows within 20 s; on: it leaves slow start early and needs ~30 s; "
        "keep: the machine's setting). The machine-wide tcp_cubic parameter is restored afterwards",
    )
    xp.set_defaults(func=cmd_experiment)
