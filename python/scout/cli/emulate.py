"""`scout emulate`, `exec`, `cleanup` and `recover`: the real-time emulator and its runs."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from scout import _native
from scout.argtypes import (
    SECONDS_POSITIVE,
    U64,
)
from scout.cli.common import (
    check_writable,
    emulator_unavailable,
    finished,
    live_args,
    live_server,
    prepare_output,
    resolve_scenario,
    run_output_args,
)
from scout.cli.simulate import print_summary
from scout.errors import UsageError


def _app_status(a: dict) -> str:
    """How a scenario's application ended, from its `run.json` `apps` entry."""
    if a.get("started_s") is None:
        return f"not started (due at {a['at_s']:g} s, after the emulation's end)"
    if a.get("exit_code") is not None:
        return f"exit {a['exit_code']}"
    sig = a.get("signal")
    if sig is None:
        return "status unknown (not reaped)"
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = "unknown signal"
    # The emulation ends what still runs with SIGTERM, then SIGKILL 2 s later (docs/emulator.md).
    return f"signal {sig} ({name})"


def cmd_emulate(args: argparse.Namespace) -> int:
    why = emulator_unavailable()
    if why:
        raise SystemExit(f"error: scout emulate: {why}")
    scenario = resolve_scenario(args.scenario)
    out = prepare_output(args)
    tty = sys.stderr.isatty() and not args.shell
    live = live_server(args)
    t0 = time.monotonic()

    def ready(namespaces: list[str]) -> None:
        dn, ues = namespaces[0], namespaces[1:]
        print(
            f"emulate: {len(ues)} UE(s) up: DN {dn} (10.45.0.1), UE 0 {ues[0]} (10.45.0.2)"
            + (f" … UE {len(ues) - 1} {ues[-1]}" if len(ues) > 1 else ""),
            file=sys.stderr,
        )
        print(f"emulate: run a command in one: scout exec {out} ue0 -- ping 10.45.0.1", file=sys.stderr, flush=True)

    last = [-1.0]

    def progress(elapsed: float, duration: float, packets: int) -> None:
        if args.shell:
            return
        line = f"emulate: {elapsed:6.1f} / {duration:g} s, {packets:,} packets through the model"
        if tty:
            sys.stderr.write("\r" + line)
            sys.stderr.flush()
        elif int(elapsed / 10) != int(last[0] / 10):
            print(line, file=sys.stderr, flush=True)
        last[0] = elapsed

    from scout import experiment

    try:
        text = _native.emulate(
            str(scenario),
            str(out),
            seed=args.seed,
            duration=args.duration,
            sets=list(args.set or []),
            shell=args.shell,
            ready=ready,
            progress=progress,
            offload=not args.no_offload,
            upf_binary=str(upf) if (upf := experiment.upf_binary()) else None,
            probe=args.probe,
            capture=args.capture,
            live=live,
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    finished()
    if tty:
        sys.stderr.write("\n")
    meta = json.loads(text)
    wall = time.monotonic() - t0
    result = {
        "summary": meta["summary"],
        "events": meta["counts"]["events"],
        "run": str(out),
        "n3": meta["emulator"].get("n3"),
        "radio": meta.get("radio"),
    }
    print_summary(scenario.stem, result, wall, verb="emulated")
    em = meta["emulator"]
    t = em["timing"]
    print(
        f"  timing: slots late by p50 {t['slots']['p50_us']} µs, p99 {t['slots']['p99_us']} µs, "
        f"max {t['slots']['max_us']} µs; packets written late by p50 {t['packets_written']['p50_us']} µs, "
        f"p99 {t['packets_written']['p99_us']} µs"
        + ("" if em["realtime_priorities"]["datapath"] else " (no real-time priority: not allowed here)")
    )
    lt = t.get("long_turns") or {}
    if lt.get("n"):
        # Each one made every slot due meanwhile late (docs/emulator.md, "Limits").
        print(
            f"  {lt['n']} pause(s) of the data path over 1 ms (longest {lt['max_ms']:.1f} ms, {lt['total_ms']:.0f} ms "
            "in all): its CPU taken away — by a virtual machine's host, a page fault or the kernel"
        )
    kp = em.get("kernel_preemption") or {}
    if kp.get("model") in ("none", "voluntary"):
        # A woken real-time thread waits for the running task's system call (docs/emulator.md).
        print(
            f"  kernel preemption: {kp['model']} ({kp['source']}): under load a slot may wait for another "
            "task's system call to end (preempt=full on the kernel command line: docs/emulator.md)"
        )
    for a in meta.get("apps") or []:
        status = _app_status(a)
        where = f", output {out / a['stdout']}" if a.get("stdout") else ""
        print(f"  app {a['name']} ({a['ns']}: {a['cmd']}): {status}{where}")
    for c in em.get("core") or []:
        # A slice served by Scout's real UPF process (docs/upf.md).
        u, p = c["upf"], c["pfcp"]
        k = u.get("counters", {})
        est = p["establishment_ms"]
        print(
            f"  real UPF {c['slice']} ({c['namespace']}): {k.get('ul_forwarded', 0):,} up and "
            f"{k.get('dl_forwarded', 0):,} down forwarded; N4 association {p['association_ms']:.2f} ms, "
            f"{len(est)} session(s) established in {max(est, default=0):.2f} ms at most"
            + (f"; error: {u['error']}" if "error" in u else "")
        )
        pr = em.get("probe")
        if pr and "error" in pr:
            print(f"    probe: error: {pr['error']}")
    if (em.get("n3") or {}).get("uplink_not_ipv4"):
        print(f"    {em['n3']['uplink_not_ipv4']:,} uplink packets not IPv4, not sent to a real UPF (it forwards IPv4)")
    pr = em.get("probe")
    if pr and "error" not in pr:
        un = pr["unmatched"]
        print(
            f"  probe on the real UPF(s): {pr['pairs']['ul']:,} up and {pr['pairs']['dl']:,} down paired N3<->N6, "
            f"unmatched {un['n3']['total']:,} on N3 and {un['n6']['total']:,} on N6, {pr['pfcp_pairs'] or 0} PFCP "
            f"request/response pairs -> {out / 'upf'} (scout analyze {out / 'upf'})"
        )
    caps = em.get("capture") or []
    if caps:
        frames = sum(c["frames"] for c in caps)
        lost = sum(c["dropped_by_kernel"] for c in caps)
        print(
            f"  capture: {frames:,} frames in {len(caps)} files, {lost:,} dropped by the kernel -> {out / 'capture'} "
            f"(scout ingest pcap {out / 'capture'}/*.pcap -o RUN2)"
        )
        for c in caps:
            if c.get("error"):
                print(f"    capture error: {c['error']}")
    skipped = {k: v for k, v in meta["counts"]["skipped_inputs"].items() if v}
    if skipped:
        print("  not taken into the model: " + ", ".join(f"{k} {v:,}" for k, v in skipped.items()))
    if em.get("cleanup_problems"):
        print("  warning: cleanup: " + "; ".join(em["cleanup_problems"]))
    print(f"next: scout analyze {out}")
    return 0


def run_emulation_quietly(
    scenario: str, run: Path, seed: int, duration: float, sets: list[str], force: bool, probe: bool = False
) -> None:
    """One emulated run of an experiment (`scout emulate SCENARIO -o RUN`, `--probe` with
    ``probe``); the emulator's own progress is the sweep's noise, shown only if the run fails."""
    emu_args = argparse.Namespace(
        scenario=scenario,
        output=str(run),
        force=force,
        duration=duration,
        seed=seed,
        set=sets,
        shell=False,
        no_offload=False,
        probe=probe,
        capture=False,
    )
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            cmd_emulate(emu_args)
    except BaseException:
        sys.stderr.write(said.getvalue())
        raise


def cmd_exec(args: argparse.Namespace) -> int:
    """Runs a command in a running emulation's namespace."""
    target = Path(args.run)
    meta_path = target / "run.json"
    if not meta_path.is_file():
        raise UsageError(f"{target}: not a run directory (no run.json); give the -o of a running `scout emulate`")
    meta = json.loads(meta_path.read_text())
    names = (meta.get("emulator") or {}).get("namespaces")
    if meta.get("source") != "emulator" or not names:
        raise UsageError(f"{target}: not an emulation (source {meta.get('source')!r})")
    if meta.get("complete"):
        raise SystemExit(f"error: {target}: that emulation has ended; its namespaces are gone")
    if args.node == "dn":
        ns = names[0]
    else:
        try:
            ns = names[1 + int(args.node.removeprefix("ue"))]
        except (ValueError, IndexError):
            raise UsageError(f"{args.node}: no such node; accepted: dn, ue0..ue{len(names) - 2}") from None
    if not args.command:
        raise UsageError("give the command after --, e.g. scout exec RUN ue0 -- ping 10.45.0.1")
    if not Path("/run/netns", ns).exists():
        raise SystemExit(f"error: namespace {ns} does not exist: is the emulation still running?")
    cmd = ["ip", "netns", "exec", ns, *args.command]
    env = dict(os.environ)
    feeds = (meta.get("emulator") or {}).get("feed") or []
    if isinstance(feeds, list) and args.node != "dn" and int(args.node.removeprefix("ue")) < len(feeds):
        # The UE's live RAN feed (scout.feed), as the scenario's apps get it.
        env["SCOUT_FEED"] = feeds[int(args.node.removeprefix("ue"))]
    return subprocess.call(cmd, env=env)


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Removes what killed emulators left behind."""
    if os.geteuid() != 0:
        raise SystemExit("error: scout cleanup: needs root (it removes network namespaces)")
    try:
        removed, traces, problems = _native.emulate_cleanup()
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    if removed:
        print(f"removed {len(removed)} namespace(s) of emulators that are gone, and the processes in them: " + ", ".join(removed))
    if traces:
        print(
            f"removed {len(traces)} tracefs instance(s) of emulators that are gone "
            "(their TCP tracepoints were still enabled): " + ", ".join(traces)
        )
    if not removed and not traces and not problems:
        print("nothing to clean up: no namespace or tracefs instance of an emulator that is gone")
    for p in problems:
        print(f"warning: could not remove {p}", file=sys.stderr)
    return 1 if problems else 0


def cmd_recover(args: argparse.Namespace) -> int:
    """Makes a checkpointed run whose producer was killed readable."""
    run = Path(args.run)
    if not (run / "run.json").is_file():
        raise UsageError(f"{run}: not a run directory (no run.json)")
    check_writable(run)
    try:
        meta = json.loads(_native.recover(str(run)))
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    ev = meta["counts"]["events"]
    kept = (meta["recovered"].get("checkpoint") or {}).get("t_ns")
    upto = f" (up to {kept / 1e9:.1f} s)" if isinstance(kept, int) else ""
    print(
        f"{run}: recovered {ev['packet_events']:,} packet, {ev['slot_events']:,} slot and "
        f"{ev['control_events']:,} control events{upto}; the run stays marked incomplete"
    )
    print(f"  next: scout analyze {run}")
    return 0


def add_emulate(sub) -> None:
    """`scout emulate`'s options."""
    em = sub.add_parser(
        "emulate",
        help="run real applications through the 5G user plane on the wall clock (root)",
        description="Emulates SCENARIO on the wall clock: a network namespace for the data network and one per UE, "
        "joined by TUN devices to the same model the simulator runs. What applications send in a UE's namespace "
        "enters at the UE's PDCP; what they send in the DN's enters at N6; every packet is recorded at every layer. "
        "The scenario's `apps:` are started in their namespaces (output in RUN/apps/); `scout exec RUN ue0 -- CMD` "
        "runs anything else while it runs. Ends after --duration (default: the scenario's duration_s), when the "
        "--shell exits, or on Ctrl-C, and writes the run. Needs root and /dev/net/tun (docs/emulator.md).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  scout emulate emulate-iperf3 -o runs/iperf3         # its iperf3 and ping, 24 s\n"
        "  scout emulate emulate-iperf3 -o runs/shell --shell  # and a shell in UE 0: ping $SCOUT_DN, iperf3 -c ...",
    )
    em.add_argument("scenario", help="scenario YAML file or built-in scenario name")
    em.add_argument("--duration", type=SECONDS_POSITIVE, metavar="S", help="wall-clock seconds (default: the scenario's)")
    em.add_argument("--seed", type=U64, help="random seed of the model (default: the scenario's `seed`)")
    em.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key, as for simulate")
    em.add_argument(
        "--shell",
        action="store_true",
        help="open an interactive shell in UE 0's namespace ($SCOUT_DN is the DN's address); the run is written when it exits",
    )
    em.add_argument(
        "--no-offload",
        action="store_true",
        help="TUN devices without TCP segmentation offload: one packet per system call (slower; for comparison)",
    )
    em.add_argument(
        "--probe",
        action="store_true",
        help="run `scout probe` on every real UPF (slices with upf_process: true) during the emulation: its N3/N6 "
        "pairs and N4 PFCP pairs go to RUN/upf, a run of its own (docs/upf.md); needs BTF and clang-built probe",
    )
    em.add_argument(
        "--capture",
        action="store_true",
        help="capture every real UPF's N3, N6 and N4 during the emulation into RUN/capture/SLICE-IFACE.pcap "
        "(as tcpdump would; for scout ingest pcap)",
    )
    run_output_args(em)
    live_args(em, "the emulation")
    em.set_defaults(func=cmd_emulate)


def add_exec(sub) -> None:
    """`scout exec`'s options."""
    ex = sub.add_parser(
        "exec",
        help="run a command in a running emulation's namespace",
        description="Runs COMMAND in the namespace of NODE (dn, ue0, ue1, …) of the emulation writing RUN.",
    )
    ex.add_argument("run", help="the -o directory of a running `scout emulate`")
    ex.add_argument("node", help="dn, or ueN")
    ex.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    ex.set_defaults(func=cmd_exec)


def add_cleanup(sub) -> None:
    """`scout cleanup`'s options."""
    cu = sub.add_parser(
        "cleanup",
        help="remove what killed emulators left behind (root)",
        description="An emulator that is killed (kill -9) cannot clean up: its namespaces (scout-PID-dn, scout-PID-ueN) "
        "and the applications in them stay, and so does its tracefs instance (/sys/kernel/tracing/instances/scout-PID), "
        "whose TCP tracepoints go on recording every segment; its TUN devices go with it. The next `scout emulate` "
        "removes them before it starts; `scout cleanup` removes them now (SIGTERM, then SIGKILL, to every process in "
        "the namespaces). Running emulations are not touched.",
    )
    cu.set_defaults(func=cmd_cleanup)


def add_recover(sub) -> None:
    """`scout recover`'s options."""
    rc = sub.add_parser(
        "recover",
        help="make the run of a killed emulator or probe readable (up to its last checkpoint)",
        description="`scout emulate` and `scout probe` make their events durable every second (checkpoints). When one "
        "is killed (kill -9, power loss) its run says complete: false and every reader refuses it; `scout recover RUN` "
        "joins the checkpointed parts into the run's tables, so that analyze, report, query and export read it. What "
        "came after the last checkpoint (at most about a second) is lost; run.json stays complete: false and gains "
        "`recovered`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  scout recover runs/tcp && scout analyze runs/tcp",
    )
    rc.add_argument("run", help="the run directory")
    rc.set_defaults(func=cmd_recover)
