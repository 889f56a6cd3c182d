"""`scout ingest srsran` and `scout ingest pcap`: real data into a run directory."""

from __future__ import annotations

import argparse
import json
import sys
import time

from scout import _native
from scout.argtypes import (
    PORT,
    SECONDS_POSITIVE,
)
from scout.cli.common import (
    check_inputs,
    damaged_status,
    finished,
    keep_going_arg,
    ms_text,
    prepare_output,
    progress_printer,
    run_output_args,
)
from scout.quantiles import pcts


def cmd_ingest_srsran(args: argparse.Namespace) -> int:
    check_inputs(args.logs, "LOG")
    check_inputs(args.trace, "--trace")
    check_inputs(args.metrics, "--metrics")
    out = prepare_output(args)
    t0 = time.monotonic()
    tty = sys.stderr.isatty()
    progress = progress_printer(t0, tty)

    try:
        meta = json.loads(
            _native.ingest_srsran(
                [str(p) for p in args.logs],
                str(out),
                progress,
                [str(t) for t in args.trace],
                [str(m) for m in args.metrics],
            )
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    finished()
    if tty:
        sys.stderr.write("\n")
    wall = time.monotonic() - t0
    ing = meta["ingest"]
    counts = meta["counts"]
    nbytes = sum(f["bytes"] for f in ing["files"])
    print(f"ingested {len(ing['files'])} srsRAN log(s), {nbytes / 1e6:,.1f} MB in {wall:.2f} s -> {out}")
    sv = meta.get("srsran") or {}
    if sv:
        built = f" (commit {sv['commit']}, branch {sv['branch']})" if sv.get("commit") else ""
        print(f"  srsRAN release from the line formats: {sv['release_from_formats']}{built}")
    for f in ing["files"]:
        gaps = len(f["skipped_log_lines_markers"])
        print(
            f"  {f['file']}: {f['entries']:,} entries, {f['continuation_lines']:,} continuation lines, "
            f"{f['orphan_lines']:,} orphan, {f['out_of_order_entries']:,} out of order, {gaps} log gap marker(s)"
        )
        if f.get("impossible_time_lines"):
            print(
                f"  {f['file']}: {f['impossible_time_lines']:,} line(s) with an impossible time (outside 1970-2200, "
                f"or no such hour) skipped, the first at line {f['first_impossible_time_line']:,}"
            )
        if f.get("overlong_lines"):
            print(
                f"  {f['file']}: {f['overlong_lines']:,} line(s) longer than 1 MiB skipped, the first at line "
                f"{f['first_overlong_line']:,}"
            )
    ev = counts["events"]
    if not ing["packets"]:
        srb = f" ({ing['srb_lines']:,} signalling-bearer lines)" if ing.get("srb_lines") else ""
        print(
            f"  no data-bearer (DRB) traffic in the log{srb}: no packet journeys; per-packet analysis needs user-plane "
            "traffic logged at the info level for gtpu, pdcp, rlc and mac (docs/ingest-srsran.md)"
        )
    print(
        f"  packets: {ing['packets']:,} (waiting somewhere at the end: {ing['pending_at_end']:,}); events: "
        f"{ev['packet_events']:,} packet, {ev['slot_events']:,} slot, {ev['control_events']:,} control"
    )
    tr = meta.get("trace")
    if tr:
        print(
            f"  trace: {tr['events']:,} events ({tr['executor_tasks']:,} executor tasks, {tr['instants']:,} instant, "
            f"{tr['overflows']:,} overflow markers, {tr['bad_lines']:,} unreadable lines); clock: {tr['aligned_by']}"
        )
    mt = meta.get("metrics")
    if mt:
        print(
            f"  metrics: {mt['objects']:,} objects -> {mt['control_rows']:,} rows ({mt['unknown_objects']:,} of "
            f"other kinds, {mt['bad_lines']:,} unreadable lines)"
        )
    sl = ing.get("slots") or {}
    if sl.get("dl_grants") or sl.get("ul_grants"):
        num = sl.get("numerology") or {}
        how = f"stated by {num['from']} at {num['at']}" if num.get("stated") else "inferred: the log states no subcarrier spacing"
        print(
            f"  slots: {sl['dl_grants']:,} DL and {sl['ul_grants']:,} UL grants; {sl['bsr_reports']:,} BSRs; "
            f"{sl.get('csi_reports', 0):,} CSI reports; "
            f"{sl['harq_discards']:,} HARQ discards; {sl['slots_per_frame']} slots/frame ({how})"
        )
        if sl.get("numerology_conflicts"):
            print(f"  numerology: {sl['numerology_conflicts']:,} statement(s) of another subcarrier spacing (not used)")
        for d, h in (sl.get("harq") or {}).items():
            if h["transmissions"]:
                print(f"  {d.upper()} HARQ: {harq_line(h)}")
    health = ing.get("log_health") or {}
    we = health.get("warnings_and_errors") or {}
    if we.get("warnings") or we.get("errors"):
        comps = sorted(we["by_component"].items(), key=lambda kv: -(kv[1]["warnings"] + kv[1]["errors"]))
        print(
            f"  the log's own warnings and errors: {we['warnings']:,} warning(s), {we['errors']:,} error(s) ("
            + ", ".join(f"{k} {v['warnings'] + v['errors']:,}" for k, v in comps[:6])
            + (", ..." if len(comps) > 6 else "")
            + ")"
        )
        for m in we["top_messages"][:3]:
            print(f"    {m['count']:>7,} x [{m['component']}] {m['level']}: {m['message']} (first at {m['first']})")
    for c in health.get("cut_last_lines") or []:
        print(f"  {c['file']}: cut mid-line at its end: line {c['line']:,} has no line end and was not used")
    for k, v in (counts.get("drops") or {}).items():
        print(f"  drops at {k}: " + ", ".join(f"{r} {n:,}" for r, n in v.items()))
    damaged = counts["skipped_inputs"].get("damaged_files") or []
    for d in damaged:
        print(
            f"  damaged: {d['file']} after line {d['after_line']:,}: {d['reason']}; "
            "the rest not read (the lines before it are kept)"
        )
    sk = counts["skipped_inputs"]
    if sk.get("unlinked_lines"):
        print("  lines that could not be linked: " + ", ".join(f"{k} {v:,}" for k, v in sk["unlinked_lines"].items()))
    nh = sk.get("per_packet_lines_not_turned_into_events", [])
    if nh:
        print(
            f"  per-packet messages not turned into events yet: {sum(x['count'] for x in nh):,} lines, e.g. "
            + "; ".join(f"{x['message']} ({x['count']:,}, first at line {x['first_line']})" for x in nh[:3])
        )
    print(f"next: scout analyze {out}   (inferred links are listed in run.json 'links')")
    return damaged_status("srsran", damaged, args.keep_going)


def harq_line(h: dict) -> str:
    """One direction's HARQ from ``run.json`` ``ingest.slots.harq``: an outcome the log does not
    carry is said to be unknown, with what the log implies (docs/ingest-srsran.md)."""
    text = (
        f"{h['transmissions']:,} transmissions ({h['new_transport_blocks']:,} new transport blocks, "
        f"{h['retransmissions']:,} retransmissions)"
    )
    implied = (
        f"{h['failed_attempts_implied']:,} failed attempts implied ({h['retransmissions']:,} retransmitted, "
        f"{h['lost_after_max_retx']:,} lost after the maximum retransmissions)"
    )
    if not h["outcome_logged"]:
        return f"{text}; outcome not logged (info level): {implied}"
    text += f"; outcome logged for {h['outcome_logged']:,}: {h['ack']:,} ACK, {h['nack']:,} NACK/DTX/CRC KO"
    if h["outcome_not_logged"]:
        text += f"; {h['outcome_not_logged']:,} without an outcome in the log"
    if h["lost_after_max_retx"]:
        text += f"; {h['lost_after_max_retx']:,} lost after the maximum retransmissions"
    return text


def cmd_ingest_pcap(args: argparse.Namespace) -> int:
    check_inputs(args.files, "FILE")
    out = prepare_output(args)
    t0 = time.monotonic()
    tty = sys.stderr.isatty()
    try:
        meta = json.loads(
            _native.ingest_pcap(
                [str(p) for p in args.files],
                str(out),
                progress_printer(t0, tty),
                args.gtp_port or [2152],
                args.n3,
                args.n6,
                args.window,
            )
        )
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    finished()
    if tty:
        sys.stderr.write("\n")
    wall = time.monotonic() - t0
    pc, pf, counts = meta["pcap"], meta["pfcp"], meta["counts"]
    print(f"ingested {len(pc['files'])} capture(s), {pc['frames']:,} frames in {wall:.2f} s -> {out}")
    for d in ("ul", "dl"):
        u = pc["upf_delay"][d]
        if u["pairs"]:
            q = {"p50": u["p50_ns"], "p99": u["p99_ns"]}
            print(
                f"  UPF forwarding delay {d.upper()}: {u['pairs']:,} packets paired N3<->N6 by identity; "
                f"{pcts(q, u['pairs'])}, max {ms_text(u['max_ns'])}"
            )
    un = meta["unmatched"]
    seen = {s: sum(p[f"{s}_sightings"] for p in pc["capture_points"]) for s in ("n3", "n6")}
    print(
        f"  unmatched: N3 {un['n3']['total']:,}, N6 {un['n6']['total']:,} "
        f"(duplicate sightings at other capture points: N3 {pc['duplicate_sightings']['n3']:,}, "
        f"N6 {pc['duplicate_sightings']['n6']:,}); not user-plane frames: {pc['not_user_plane_frames']:,}"
    )
    for side, other in (("n3", "n6"), ("n6", "n3")):
        if seen[side] and not seen[other]:
            print(
                f"  {other.upper()} was not captured (no {other.upper()} sighting in the capture): the {seen[side]:,} "
                f"{side.upper()} sightings have no twin to pair with; that is not a loss at the UPF"
            )
    if pc["gtpu_other_messages"]:
        print("  other GTP-U messages: " + ", ".join(f"{k} {v:,}" for k, v in pc["gtpu_other_messages"].items()))
    if pc.get("gtpu_length_field_mismatch"):
        print(
            f"  GTP-U length field disagrees with the datagram in {pc['gtpu_length_field_mismatch']:,} message(s): "
            "decoded from the datagram, as Wireshark does"
        )
    if pf["messages"]:
        print(
            f"  PFCP: {pf['messages']:,} messages, {pf['pairs']:,} request/response pairs, "
            f"{len(pf['unanswered_requests']):,} unanswered, {pf['responses_without_request']:,} responses without "
            f"request, {pf['retransmissions']:,} retransmissions, {pf['sequence_number_reuse']:,} requests reusing "
            f"an open sequence number, {len(pf['sessions']):,} sessions"
            + (
                f" ({pf['duplicate_sightings']:,} duplicate sightings at other capture points)"
                if pf.get("duplicate_sightings")
                else ""
            )
        )
    for side, opts in (pc.get("side_option_matches") or {}).items():
        for o in opts:
            if not o["frames"]:
                ifaces = sorted({p["iface"] for p in pc.get("capture_points", []) if p.get("iface")})
                seen = f"; the capture's interfaces: {', '.join(ifaces)}" if ifaces else " (the capture names no interfaces)"
                print(f"  warning: --{side} {o['value']} matched no frame (neither an interface nor an address seen){seen}")
    for f in pc["files"]:
        if f.get("other_blocks"):
            kinds = ", ".join(f"{n:,} {k}" for k, n in (f.get("other_block_types") or {}).items())
            print(f"  {f['file']}: {f['other_blocks']:,} pcapng block(s) without packets skipped ({kinds})")
        if f.get("impossible_time_frames"):
            print(
                f"  {f['file']}: {f['impossible_time_frames']:,} packet(s) with a time before 1970 or after 2200 "
                "(a bad if_tsoffset or if_tsresol) skipped"
            )
    damaged = counts["skipped_inputs"].get("damaged_files") or []
    for d in damaged:
        lost = f"{d['bytes_not_read']:,} bytes after it not read" if d.get("bytes_not_read") is not None else "the rest not read"
        print(f"  damaged: {d['file']} at byte {d['offset']:,}: {d['reason']}; {lost} (the frames before it are kept)")
    bad = counts["skipped_inputs"]["frames_not_decoded"]
    if bad:
        print(
            f"  frames not decoded: {sum(x['count'] for x in bad):,}, e.g. "
            + "; ".join(f"{x['cause']} ({x['count']:,}, first at {x['first']})" for x in bad[:3])
        )
    print(f"next: scout analyze {out}")
    return damaged_status("pcap", damaged, args.keep_going)


def add_ingest(sub) -> None:
    """`scout ingest srsran and ingest pcap`'s options."""
    ing = sub.add_parser(
        "ingest",
        help="turn real testbed output into a run (srsRAN gNB logs, pcap/pcapng captures)",
        description="Read real testbed output into a run directory with the same event schema as simulated runs.",
    )
    isub = ing.add_subparsers(dest="source", required=True, metavar="SOURCE")
    sr = isub.add_parser(
        "srsran",
        help="srsRAN Project gNB text logs (plain or gzip)",
        description="Reads srsRAN Project gNB logs (plain or gzip; several files are merged by time: rotated "
        "logs, or a split CU's and DU's logs) and writes each packet's journey: downlink GTP-U RX SDU -> PDCP "
        "TX PDU -> RLC SDU queue -> RLC PDUs -> MAC DL PDU; uplink MAC subPDUs -> RLC segments -> PDCP receive "
        "and reordering -> GTP-U TX PDU; scheduler grants with their HARQ outcomes and BSRs as slot events; "
        "drops (PDCP early-drop bursts, late PDUs, MAC discards). Links the lines do not state are inferred "
        "and listed in run.json 'links' (docs/ingest-srsran.md). Needs the info level for gtpu, pdcp, rlc and "
        "mac; debug adds HARQ-ACK outcomes and MCS.",
    )
    sr.add_argument("logs", nargs="+", metavar="LOG", help="gnb.log files (any order; merged by time)")
    sr.add_argument(
        "--trace",
        action="append",
        default=[],
        metavar="TRACE",
        help="srsRAN event-tracer file (trace: filename; Chrome trace JSON), repeatable: executor waits and run "
        "times become control events on the log's clock",
    )
    sr.add_argument(
        "--metrics",
        action="append",
        default=[],
        metavar="JSONL",
        help="srsRAN JSON metrics saved one object per line (remote-control WebSocket or UDP), repeatable: kept "
        "as aggregates and cross-checked against the per-packet results in the report",
    )
    keep_going_arg(sr, "a log is damaged part-way (a corrupt or truncated gzip stream)")
    run_output_args(sr)
    sr.set_defaults(func=cmd_ingest_srsran)
    pc = isub.add_parser(
        "pcap",
        help="pcap/pcapng captures of N3, N6 and N4: UPF forwarding delay and PFCP latency",
        description="Reads pcap and pcapng captures (Ethernet, VLAN, Linux cooked v1/v2, raw IP; IPv4/IPv6; outer "
        "IP fragments reassembled; several files merged by time) and pairs each packet seen inside GTP-U on N3 "
        "with the same packet seen plain on N6 by its identity (inner addresses, IP identification, length, the "
        "first 16 bytes after the IP header), never by nearest timestamp: each pair is a journey whose "
        "`upf processing` is the UPF's forwarding delay. PFCP (N4) requests are paired with their responses by "
        "sequence number and peers (control rows 'pfcp_pair', latency in ns); sessions, TEIDs, UE addresses "
        "and S-NSSAI/DNN label the user-plane pairs. A single capture on 'any' sees both sides "
        "(docs/ingest-pcap.md).",
    )
    pc.add_argument(
        "files", nargs="+", metavar="FILE", help="pcap or pcapng files, merged by time (regular files: each is read twice)"
    )
    pc.add_argument("--gtp-port", type=PORT, action="append", metavar="PORT", help="UDP port of GTP-U (default 2152), repeatable")
    pc.add_argument(
        "--n3",
        action="append",
        default=[],
        metavar="IFACE|ADDR",
        help="only GTP-U on this capture interface (pcapng if_name) or to/from this address counts as N3; repeatable",
    )
    pc.add_argument(
        "--n6",
        action="append",
        default=[],
        metavar="IFACE|ADDR",
        help="only plain packets on this interface or to/from this address count as N6; repeatable",
    )
    pc.add_argument(
        "--window",
        type=SECONDS_POSITIVE,
        default=2.0,
        metavar="S",
        help="seconds a packet waits for its twin on the other side before it counts as unmatched (default 2)",
    )
    keep_going_arg(pc, "a capture is damaged part-way (cut inside a record, garbage after valid records)")
    run_output_args(pc)
    pc.set_defaults(func=cmd_ingest_pcap)
