"""`scout probe`: the live TC-BPF probe on real UPFs."""

from __future__ import annotations

import argparse
import json
import sys

from scout import _native
from scout.argtypes import (
    PORT,
    SECONDS_POSITIVE,
    power_of_two,
)
from scout.cli.common import finished, live_args, live_server, prepare_output, run_output_args


def cmd_probe(args: argparse.Namespace) -> int:
    out = prepare_output(args)
    tty = sys.stderr.isatty()
    live = live_server(args)

    def progress(elapsed: float, pairs: int, lost: int) -> None:
        if elapsed == 0.0:
            # The first call: every program is attached.
            until = f"for {args.duration:g} s" if args.duration is not None else "until Ctrl-C"
            print(f"probe: attached ({args.pairing} pairing); probing {until}", file=sys.stderr, flush=True)
            return
        line = f"probe: {elapsed:6.1f} s, {pairs:,} packets paired N3<->N6, ring-buffer loss {lost:,}"
        if tty:
            sys.stderr.write("\r" + line)
            sys.stderr.flush()
        elif int(elapsed) % 10 == 0:
            print(line, file=sys.stderr, flush=True)

    try:
        meta = json.loads(
            _native.probe(
                args.n3,
                args.n6,
                str(out),
                args.slice,
                args.duration,
                args.histogram,
                args.window,
                args.gtp_port,
                progress,
                args.pfcp,
                args.table_sets,
                args.pairing,
                live,
            )
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    finished()
    if tty:
        sys.stderr.write("\n")
    pr, un = meta["probe_result"], meta["unmatched"]
    print(f"probed {len(pr['upfs'])} UPF(s) for {pr['duration_s']:.1f} s -> {out}")
    print(
        f"  pairs: UL {pr['pairs']['ul']:,}, DL {pr['pairs']['dl']:,} (kernel: {pr['pairs_in_kernel']:,}); "
        f"ring-buffer loss {pr['ringbuf_lost']:,}; unmatched N3 {un['n3']['total']:,}, N6 {un['n6']['total']:,}"
    )
    for side in ("n3", "n6"):
        why = {k: v for k, v in un[side]["by_reason"].items() if v}
        if why:
            print(f"  unmatched {side.upper()} by reason: " + ", ".join(f"{k} {v:,}" for k, v in why.items()))
    full = un["n3"]["by_reason"]["table_full"] + un["n6"]["by_reason"]["table_full"]
    if full:
        print(
            f"  warning: the kernel's pending table was full {full:,} times (sightings given up before their twin "
            f"came); give a larger --table-sets (now {args.table_sets:,} sets)"
        )
    if pr["pending_table_unread"]:
        print(f"  warning: could not read what was still waiting in the kernel for: {', '.join(pr['pending_table_unread'])}")
    if pr["cost_ns_per_packet"] is not None:
        print(f"  probe cost: {pr['cost_ns_per_packet']:.0f} ns per packet ({pr['cost_from']})")
    for p in pr.get("pfcp", []):
        print(
            f"  PFCP on {p['interface']}: {p['messages']:,} messages, {p['pairs']:,} pairs, "
            f"{len(p['unanswered_requests']):,} unanswered, {p['undecodable']:,} undecodable"
        )
    for u in pr["upfs"]:
        c = u["counters"]
        print(
            f"  {u['n3']} / {u['n6']} ({u['slice']}): N3 {c['n3_sightings']:,}, N6 {c['n6_sightings']:,} sightings; "
            f"not GTP-U {c['not_gtpu']:,}, not IP {c['not_ip']:,}, malformed {c['malformed']:,}, "
            f"duplicates {c['duplicates']:,}"
        )
    print(f"next: scout analyze {out}")
    return 0


def add_probe(sub) -> None:
    """`scout probe`'s options."""
    pr = sub.add_parser(
        "probe",
        help="live UPF forwarding delay from TC-BPF programs on N3 and N6 (root)",
        description="Attaches Scout's TC-BPF programs (clsact ingress and egress) to each UPF's N3 and N6 "
        "interfaces inside their network namespaces. In the kernel each packet's identity is computed (the same "
        "key as `scout ingest pcap`), its N3 and N6 sightings are paired in a set-associative table (the oldest "
        "insert of a full set gives way, counted) and pairs go to user space through ring buffers; the run "
        "holds one journey per packet whose `upf processing` is the "
        "UPF's forwarding delay, the programs' counters, ring-buffer loss and their cost per packet from the "
        "kernel's BPF statistics (docs/probe.md). Needs root, BTF and clsact.",
    )
    pr.add_argument("--n3", action="append", default=[], required=True, metavar="NETNS:IFACE", help="a UPF's N3 interface")
    pr.add_argument(
        "--n6",
        action="append",
        default=[],
        required=True,
        metavar="NETNS:IFACE",
        help="its N6 interface (Ethernet or a TUN such as ogstun); repeat --n3/--n6 for several UPFs",
    )
    pr.add_argument("--slice", action="append", default=[], metavar="NAME", help="the slice each UPF serves, in the same order")
    pr.add_argument(
        "--pfcp",
        action="append",
        default=[],
        metavar="NETNS:IFACE",
        help="capture PFCP (N4) live on this interface and pair requests with responses; repeatable",
    )
    pr.add_argument("--duration", type=SECONDS_POSITIVE, metavar="S", help="seconds to probe (default: until Ctrl-C)")
    pr.add_argument("--histogram", action="store_true", help="only per-CPU delay histograms in the kernel (very high rates)")
    pr.add_argument("--window", type=SECONDS_POSITIVE, default=2.0, metavar="S", help="how long a sighting waits for its twin")
    pr.add_argument("--gtp-port", type=PORT, default=2152, metavar="PORT", help="UDP port of GTP-U (default 2152)")
    pr.add_argument(
        "--table-sets",
        type=power_of_two,
        default=_native.PROBE_DEFAULT_TABLE_SETS,
        metavar="N",
        help=f"sets in the kernel's pending table, a power of two, {_native.PROBE_WAYS} sightings each (default "
        f"{_native.PROBE_DEFAULT_TABLE_SETS}: {_native.PROBE_DEFAULT_TABLE_SETS * _native.PROBE_WAYS:,} sightings "
        "waiting for their twin at once, per CPU with --pairing same-cpu; it must hold packets/s x the UPF's delay, "
        "and a larger table costs more per packet: docs/probe.md)",
    )
    pr.add_argument(
        "--pairing",
        choices=["any-cpu", "same-cpu"],
        default="any-cpu",
        help="any-cpu (default): one table shared by all CPUs, right for every UPF; same-cpu: a table per "
        "CPU, cheaper, for UPFs that forward in the kernel (a packet leaves on the CPU it arrived on: gtp5g, "
        "eBPF/XDP UPFs); pairs split across CPUs then count as unmatched",
    )
    run_output_args(pr)
    live_args(pr, "the UPFs")
    pr.set_defaults(func=cmd_probe)
