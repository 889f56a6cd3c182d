"""`scout emulate` and `scout exec` as a user runs them (root; skipped with the reason elsewhere,
never in CI): real applications through the model, Ctrl-C ends it with the run written, and
nothing is left behind."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import scout_cmd as scout

WHY = (
    "not root"
    if os.geteuid() != 0
    else "no /dev/net/tun"
    if not Path("/dev/net/tun").exists()
    else "ping is not installed"
    if shutil.which("ping") is None
    else None
)
if WHY and os.environ.get("CI"):
    raise RuntimeError(f"the emulator's tests must run in CI: {WHY}")
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")


def _running(pid: str) -> bool:
    """Whether process `pid` exists and is not a zombie (one its dead parent left unreaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


SCENARIO = """\
name: emu-test
duration_s: 3
ues: [{count: 1}]
apps:
  - {name: pinger, ns: ue0, at_s: 0.2, cmd: "ping -c 5 -i 0.2 $SCOUT_DN"}
  - {name: policy, ns: dn, at_s: 0.1, cmd: "chrt -p $$"}
  - {name: sleeper, ns: dn, cmd: "sleep 60"}
  - {name: late, ns: ue0, at_s: 30, cmd: "true"}
"""


def test_emulate_runs_the_apps_and_writes_an_analysable_run(tmp_path: Path) -> None:
    sc = tmp_path / "emu.yaml"
    sc.write_text(SCENARIO)
    out = tmp_path / "run"
    r = scout("emulate", str(sc), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "3.0 s emulated" in r.stdout and "app pinger (ue0" in r.stdout and "exit 0" in r.stdout, r.stdout
    assert "app RTT (ping): p50" in r.stdout, r.stdout
    # What still ran at the end was ended by it; what was due after the end never started.
    assert "app sleeper (dn: sleep 60): signal 15 (SIGTERM)" in r.stdout, r.stdout
    assert "app late (ue0: true): not started (due at 30 s, after the emulation's end)" in r.stdout, r.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] is True and meta["source"] == "emulator"
    assert " 0% packet loss" in (out / "apps" / "pinger.out").read_text()
    # The emulator's loop runs at a real-time priority; the applications it starts do not.
    assert "SCHED_OTHER" in (out / "apps" / "policy.out").read_text()
    assert meta["summary"]["app_rtt"]["p50_ns"] > 1e6
    r = scout("analyze", str(out))
    assert r.returncode == 0, r.stderr
    assert "(emulator)" in r.stdout
    # Exact attribution holds for real traffic as for simulated: every packet's delay is explained.
    assert "0 carry unattributed time" in r.stdout, r.stdout
    assert not any(n in namespaces() for n in meta["emulator"]["namespaces"])


def test_a_slice_served_by_a_real_upf_process(tmp_path: Path) -> None:
    """`core.slices[].upf_process: true`: the slice's packets cross Scout's UPF process over real
    GTP-U and PFCP (docs/upf.md); the run says what the UPF did, and analyses."""
    sc = tmp_path / "real-upf.yaml"
    sc.write_text(
        "name: real-upf\nduration_s: 3\ncore: {slices: [{name: embb, upf_process: true}]}\nues: [{count: 1, slice: embb}]\n"
        "apps: [{name: pinger, ns: ue0, at_s: 0.2, cmd: 'ping -c 10 -i 0.1 $SCOUT_DN'}]\n"
    )
    out = tmp_path / "run"
    r = scout("emulate", str(sc), "-o", str(out), "--probe", "--capture")
    assert r.returncode == 0, r.stderr
    assert "real UPF embb" in r.stdout and "1 session(s) established" in r.stdout, r.stdout
    # The probe on the UPF's N3 and N6 paired exactly what the UPF forwarded: a run of its own.
    pr = json.loads((out / "run.json").read_text())["emulator"]["probe"]
    assert "error" not in pr, pr
    counters = json.loads((out / "run.json").read_text())["emulator"]["core"][0]["upf"]["counters"]
    assert (pr["pairs"]["ul"], pr["pairs"]["dl"]) == (counters["ul_forwarded"], counters["dl_forwarded"]), (pr, counters)
    assert (pr["unmatched"]["n3"]["total"], pr["unmatched"]["n6"]["total"]) == (0, 0), pr
    r = scout("analyze", str(out / "upf"))
    assert r.returncode == 0 and "UPF forwarding delay UL, slice embb" in r.stdout, r.stdout + r.stderr
    # A capture of the same UPF's N3, N6 and N4, taken during the run, ingested as a testbed's
    # would be: the same packets paired, one for one, with the same delays (the capture's taps sit
    # just outside the probe's TC hooks: a few µs apart).
    caps = json.loads((out / "run.json").read_text())["emulator"]["capture"]
    assert {Path(c["file"]).name for c in caps} == {"embb-n3.pcap", "embb-n6.pcap", "embb-n4.pcap"}, caps
    assert all(c["dropped_by_kernel"] == 0 and c["error"] is None and c["frames"] > 0 for c in caps), caps
    r = scout("ingest", "pcap", *sorted(str(p) for p in (out / "capture").glob("*.pcap")), "-o", str(tmp_path / "pcap"))
    assert r.returncode == 0, r.stderr

    import duckdb

    def pairs(run: Path) -> dict:
        epoch = json.loads((run / "run.json").read_text())["wall_clock_epoch_s"]
        sql = f"SELECT dir, min(t_ns) AS a, max(t_ns) AS b FROM '{run}/events/packet.parquet' GROUP BY pkt, dir ORDER BY dir, a"
        got: dict = {}
        # By direction: the capture knows no slice name (Scout's PFCP carries no S-NSSAI), and
        # this UPF serves one slice.
        for d, a, b in duckdb.sql(sql).fetchall():
            got.setdefault(d, []).append((epoch * 1e9 + a, b - a))
        return got

    probe, pcap = pairs(out / "upf"), pairs(tmp_path / "pcap")
    assert {k: len(v) for k, v in probe.items()} == {k: len(v) for k, v in pcap.items()}, (probe.keys(), pcap.keys())
    for key, ps in probe.items():
        for (t1, d1), (t2, d2) in zip(ps, pcap[key], strict=True):
            assert abs(t1 - t2) < 2e6 and abs(d1 - d2) < 100e3, (key, t1, t2, d1, d2)
    pfcp = json.loads((tmp_path / "pcap" / "run.json").read_text())["pfcp"]
    assert pfcp["pairs"] == pr["pfcp_pairs"] and pfcp["pairs"] >= 1, (pfcp, pr)
    assert " 0% packet loss" in (out / "apps" / "pinger.out").read_text()
    meta = json.loads((out / "run.json").read_text())
    core = meta["emulator"]["core"][0]
    assert core["upf"]["counters"]["ul_forwarded"] >= 10 and core["upf"]["counters"]["dl_forwarded"] >= 10, core
    assert meta["emulator"]["n3"]["to_core_packets"] >= 10
    r = scout("analyze", str(out))
    assert r.returncode == 0, r.stderr
    assert not any(n in namespaces() for n in meta["emulator"]["namespaces"])
    # The simulator has no real UPF: it says so, naming the key.
    r = scout("simulate", str(sc), "-o", str(tmp_path / "sim"))
    assert r.returncode != 0 and "core.slices[0].upf_process" in r.stderr and "scout emulate" in r.stderr, r.stderr


def cpu_latency_us() -> int:
    """The CPUs' wake-up latency the kernel's PM QoS now allows, µs (all requests combined)."""
    fd = os.open("/dev/cpu_dma_latency", os.O_RDONLY)
    try:
        return struct.unpack("i", os.read(fd, 4))[0]
    finally:
        os.close(fd)


def test_exec_into_a_running_emulation_then_ctrl_c_writes_the_run(tmp_path: Path) -> None:
    sc = tmp_path / "idle.yaml"
    sc.write_text("name: idle\nduration_s: 60\nues: [{count: 2}]\n")
    out = tmp_path / "run"
    latency_before = cpu_latency_us()
    p = subprocess.Popen(
        [sys.executable, "-m", "scout.cli", "emulate", str(sc), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(200):
            if (out / "run.json").exists():
                break
            time.sleep(0.05)
        time.sleep(0.3)
        r = scout("exec", str(out), "ue1", "--", "ping", "-c", "3", "-i", "0.2", "10.45.0.1")
        assert r.returncode == 0 and "3 received" in r.stdout, r.stdout + r.stderr
        r = scout("exec", str(out), "ue7", "--", "true")
        assert r.returncode == 2 and "accepted: dn, ue0..ue1" in r.stderr, r.stderr
        # The data path thread runs as nobody, with no capabilities, while the emulation runs.
        tasks = [t for t in Path(f"/proc/{p.pid}/task").iterdir() if (t / "comm").read_text().strip() == "scout-datapath"]
        assert len(tasks) == 1, "one data path thread"
        status = dict(line.split(":", 1) for line in (tasks[0] / "status").read_text().splitlines())
        assert status["Uid"].split() == ["65534"] * 4 and status["Gid"].split() == ["65534"] * 4, status["Uid"]
        assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0 and status["NoNewPrivs"].strip() == "1"
        # The event writer's thread: its real-time priority and policy (proc(5) stat fields 40, 41).
        writer = [t for t in Path(f"/proc/{p.pid}/task").iterdir() if (t / "comm").read_text().strip() == "scout-writer"]
        assert len(writer) == 1, "one event writer thread"
        stat = (writer[0] / "stat").read_text().rsplit(")", 1)[1].split()
        writer_sched = (int(stat[37]), int(stat[38]))
        # No CPU may idle in a state that takes time to leave while it runs (PM QoS).
        assert cpu_latency_us() == 0
    finally:
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=30)
    assert p.returncode == 0, stderr
    assert "emulated" in stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] is True and meta["emulator"]["stopped_early"] is True
    assert meta["emulator"]["datapath_privileges"]["dropped"] is True
    assert meta["emulator"]["cpu_wakeup_latency"] == {"held": True, "max_us": 0, "device": "/dev/cpu_dma_latency"}
    prio = meta["emulator"]["realtime_priorities"]
    if prio["datapath"] is not None:
        # Where real-time priorities are granted at all (root may be refused one in a cgroup
        # without real-time runtime), each of the two threads on the packets' path has its own.
        assert (prio["datapath"], prio["device_writer"]) == (10, 9), prio
    # The event writer's thread stays an ordinary one (SCHED_OTHER, 0): real-time, it made the
    # slots later and risked the kernel's RT throttling (docs/emulator.md).
    assert writer_sched == (0, 0), writer_sched
    # The request ends with the emulation.
    assert cpu_latency_us() == latency_before
    # How the kernel preempts is recorded; where it lets other tasks' system calls delay the
    # slots, the summary says so.
    kp = meta["emulator"]["kernel_preemption"]
    assert kp["model"] in {"none", "voluntary", "full", "lazy", "rt", "unknown"} and kp["source"], kp
    assert ("kernel preemption: " in stdout) == (kp["model"] in ("none", "voluntary")), stdout
    ul = meta["summary"]["directions"][1]
    assert ul["delivered_packets"] >= 3
    # The emulator's delays come from histograms of fixed size (its memory does not grow with
    # the run): within 1/512 of the exact percentiles, the largest exact.
    d = ul["delay"]
    assert d["relative_precision"] == 1 / 512 and 0 < d["p50_ns"] <= d["p99_ns"] <= d["max_ns"], d
    # Pauses of the data path over 1 ms are counted (a VM's host may take its vCPU away).
    lt = meta["emulator"]["timing"]["long_turns"]
    assert (lt["n"] == 0) == (lt["total_ms"] == 0) and lt["max_ms"] <= lt["total_ms"], lt
    assert not any(n in namespaces() for n in meta["emulator"]["namespaces"])
    # Nor its tracefs instance (its TCP tracepoints would go on recording).
    pid = meta["emulator"]["namespaces"][0].split("-")[1]
    assert not (Path("/sys/kernel/tracing/instances") / f"scout-{pid}").exists()
    r = scout("exec", str(out), "ue0", "--", "true")
    assert r.returncode == 1 and "has ended" in r.stderr, r.stderr


def test_kill_9_leaves_a_run_that_loses_at_most_the_last_second(tmp_path: Path) -> None:
    sc = tmp_path / "pings.yaml"
    sc.write_text(
        "name: pings\nduration_s: 60\nues: [{count: 1}]\n"
        "apps: [{name: pinger, ns: ue0, at_s: 0.1, cmd: 'ping -i 0.05 $SCOUT_DN'}]\n"
    )
    out = tmp_path / "run"
    p = subprocess.Popen(
        [sys.executable, "-m", "scout.cli", "emulate", str(sc), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(400):
            if (out / "run.json").exists():
                break
            time.sleep(0.01)
        seen = time.monotonic()
        time.sleep(3.6)
        p.kill()
        elapsed = time.monotonic() - seen
    finally:
        p.kill()
        p.wait(timeout=30)
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] is False and meta["checkpoint"]["parts"] >= 2, meta.get("checkpoint")
    names = meta["emulator"]["namespaces"]
    assert all(n in namespaces() for n in names), "a killed emulator cannot clean up"
    r = scout("analyze", str(out))
    assert r.returncode == 1 and f"scout recover {out}" in r.stderr, r.stderr
    # `scout cleanup` removes the namespaces and the ping still running in one, and the killed
    # emulator's tracefs instance, whose TCP tracepoints were still recording.
    pinger = subprocess.run(["ip", "netns", "pids", names[1]], capture_output=True, text=True).stdout.split()
    assert pinger, "the application outlives the emulator"
    trace = Path("/sys/kernel/tracing/instances") / f"scout-{names[0].split('-')[1]}"
    if trace.parent.is_dir():
        assert (trace / "events/tcp/tcp_probe/enable").read_text().strip() == "1", "a killed emulator cannot disable it"
    r = scout("cleanup")
    assert r.returncode == 0 and names[0] in r.stdout, r.stdout + r.stderr
    assert not any(n in namespaces() for n in names)
    assert not any(_running(pid) for pid in pinger)
    assert not trace.exists() and (not trace.parent.is_dir() or trace.name in r.stdout), r.stdout
    r = scout("recover", str(out))
    assert r.returncode == 0 and "recovered" in r.stdout, r.stdout + r.stderr
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] is False and "recovered" in meta
    import pyarrow.parquet as pq

    t = pq.read_table(out / "events" / "packet.parquet", columns=["t_ns"]).column("t_ns").to_pylist()
    assert len(t) == meta["counts"]["events"]["packet_events"] > 0
    # Pings every 50 ms until the kill: what is kept reaches to within a second of it (plus the
    # start-up between run.json and the emulator's clock, and this test's own polling).
    lost_s = elapsed - max(t) / 1e9
    print(f"lost {lost_s:.2f} s of {elapsed:.2f} s")
    assert lost_s < 1.3, f"lost {lost_s:.2f} s"
    r = scout("analyze", str(out))
    assert r.returncode == 0 and "(emulator)" in r.stdout, r.stderr


@pytest.mark.skipif(shutil.which("iperf3") is None and not os.environ.get("CI"), reason="iperf3 is not installed")
def test_qos_rules_put_flows_on_their_drbs(tmp_path: Path) -> None:
    sc = tmp_path / "qos.yaml"
    sc.write_text(
        "name: qos\nduration_s: 3\nues: [{count: 1, five_qis: [9, 1]}]\n"
        "qos_rules: [{five_qi: 1, protocol: icmp}, {five_qi: 9, protocol: tcp, remote_port: 5201}]\n"
        "apps:\n"
        "  - {name: server, ns: dn, cmd: iperf3 -s -1}\n"
        "  - {name: up, ns: ue0, at_s: 1.0, cmd: 'iperf3 -c $SCOUT_DN -t 1'}\n"
        "  - {name: ping, ns: ue0, at_s: 0.2, cmd: 'ping -c 5 -i 0.1 $SCOUT_DN'}\n"
    )
    out = tmp_path / "run"
    r = scout("emulate", str(sc), "-o", str(out))
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "run.json").read_text())
    drb = {(f["type"], f["dir"]): f["drb"] for f in meta["flows"]}
    # ICMP both ways on the 5QI 1 DRB (the UE's second), TCP on 5QI 9's (its first).
    assert drb[("icmp", "ul")] == drb[("icmp", "dl")] == 2, meta["flows"]
    assert drb[("tcp", "ul")] == drb[("tcp", "dl")] == 1, meta["flows"]
    rules = meta["emulator"]["qos_rules"]
    # The 5 echoes and replies (and any ICMPv6 the kernel sends), the TCP connection's packets.
    assert rules["packets_per_rule"][0] >= 10 and rules["packets_per_rule"][1] > 100, rules
    assert " 0% packet loss" in (out / "apps" / "ping.out").read_text()
    # The model's events say the same: the ICMP flows' packets at RLC on DRB 2 only.
    icmp = ",".join(str(f["flow"]) for f in meta["flows"] if f["type"] == "icmp")
    sql = f"SELECT DISTINCT drb FROM packet_events WHERE layer = 'rlc' AND flow IN ({icmp})"
    r = scout("query", str(out), sql, "--format", "csv")
    assert r.stdout.split()[1:] == ["2"], r.stdout


def test_emulate_refuses_without_root_or_a_scenario_it_cannot_run(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nduration_s: 1\nues: [{count: 1}]\napps: [{ns: ue3, cmd: 'true'}]\n")
    r = scout("emulate", str(bad), "-o", str(tmp_path / "x"))
    assert r.returncode == 1 and "apps[0].ns" in r.stderr and "accepted: dn, or ue0..ue0" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def sawtooth(depth: list[float], full: float = 0.95, fall: float = 0.85, rise: float = 0.03) -> bool:
    """Whether a queue's depth series fills (a bin at ``full`` of its maximum), then falls (a later
    bin at most ``fall`` of it), then grows again (a later bin at least ``rise`` of the maximum above
    the lowest point since the fill)."""
    top = max(depth, default=0.0)
    filled, low = False, math.inf
    for d in depth:
        if not filled:
            filled = d >= full * top
        elif low <= fall * top and d >= low + rise * top:
            return True
        low = min(low, d) if filled else low
    return False


def test_sawtooth_reads_fill_fall_refill() -> None:
    assert sawtooth([10, 50, 100, 100, 70, 75, 90])
    assert not sawtooth([10, 50, 100, 100, 100, 99])  # full, never falls
    assert not sawtooth([10, 50, 100, 100, 70, 71])  # falls, does not grow again
    assert not sawtooth([10, 70, 100])  # fills only
    assert not sawtooth([])


@pytest.mark.skipif(shutil.which("iperf3") is None and not os.environ.get("CI"), reason="iperf3 is not installed")
def test_experiment_tcp_cc_reproduces_scout_section_7(tmp_path: Path) -> None:
    """CUBIC fills the deep RLC queue, BBR keeps it short at the same throughput, and the sender's
    RTT tracks the RLC sojourn in both (SCOUT §7)."""
    r = scout("experiment", "--list")
    assert r.returncode == 0 and "tcp-cc" in r.stdout
    out = tmp_path / "tcp-cc"
    from scout.experiment import HYSTART

    hystart_before = HYSTART.read_text().strip()
    r = scout("experiment", "tcp-cc", "-o", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    import csv

    from scout.experiment import TCP_CC_COLUMNS

    with (out / "summary.csv").open() as f:
        rd = csv.DictReader(f)
        assert rd.fieldnames == list(TCP_CC_COLUMNS)
        rows = {row["cc"]: {k: float(v) for k, v in row.items() if k != "cc"} for row in rd}
    cubic, bbr = rows["cubic"], rows["bbr"]
    # CUBIC fills the RLC queue to its limit in a sawtooth (HyStart off, the experiment's default):
    # the queue reaches its limit and drops there; the window's multiplicative decrease lets it fall;
    # the cubic growth fills it again. Read from the queue itself — the RLC SDU sojourn in 250 ms
    # bins (the drain rate is the cell's, steady at this SINR, so sojourn is depth) — not from the
    # timing of drop bursts: with a 6 MiB queue one CUBIC epoch (K = ∛(W·β/C)) lasts ~15 s, so
    # whether a second drop burst falls inside the 20 s depends on slow start's overshoot.
    assert "HyStart off" in r.stdout
    r = scout(
        "query",
        str(out / "cubic"),
        "SELECT count(*) FROM packet_events WHERE point = 'drop' AND reason IN ('pdcp_early_drop', 'rlc_queue_full')",
        "--format",
        "csv",
    )
    assert int(r.stdout.split()[1]) >= 100, r.stdout
    r = scout(
        "query",
        str(out / "cubic"),
        "SELECT t_enq // 250000000 AS b, avg(sojourn_ns) AS s FROM sojourns "
        "WHERE layer = 'rlc' AND dir = 'dl' AND queue = 'rlc_sdu' GROUP BY b ORDER BY b",
        "--format",
        "csv",
    )
    depth = [float(line.split(",")[1]) for line in r.stdout.split()[1:]]
    assert sawtooth(depth), [round(d / 1e6) for d in depth]
    assert HYSTART.read_text().strip() == hystart_before, "HyStart restored"
    # The sender's retransmissions, from the kernel (tcp_retransmit_skb): CUBIC's drops come back
    # as retransmissions; BBR, which the model never dropped, repeats only a few (tail-loss probes).
    sql = "SELECT count(*) AS n FROM control_events WHERE kind = 'tcp_retransmit' AND node = 'dn'"
    n = {cc: int(scout("query", str(out / cc), sql, "--format", "csv").stdout.split()[1]) for cc in ("cubic", "bbr")}
    assert n["cubic"] >= 100 and n["bbr"] * 10 < n["cubic"], n
    assert bbr["throughput_mbps"] >= 0.85 * cubic["throughput_mbps"], rows
    assert bbr["rlc_sojourn_p50_ms"] * 5 < cubic["rlc_sojourn_p50_ms"], rows
    assert bbr["app_rtt_p50_ms"] * 3 < cubic["app_rtt_p50_ms"], rows
    for cc, row in rows.items():
        assert row["rtt_sojourn_pearson"] >= 0.8, (cc, row)
        # The analysis finds the RLC queue by itself: the queue whose sojourn the RTT tracks best.
        from scout.analysis import open as open_analysis

        top = open_analysis(out / cc).correlation.to_pandas().iloc[0]
        assert (top.queue, top.dir, top.node) == ("rlc_sdu", "dl", "gnb_du"), (cc, top)
    assert (out / "report" / "index.html").stat().st_size > 20_000
    for cc in ("cubic", "bbr"):
        assert (out / cc / "report" / "index.html").exists()
        assert json.loads((out / cc / "run.json").read_text())["complete"] is True


RECEIVER = """\
import json, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind(("0.0.0.0", 5000))
s.settimeout(3.0)
seen = {}
try:
    while True:
        data, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(1))
        tos = next((c[2][0] for c in anc if c[0] == socket.IPPROTO_IP and c[1] == socket.IP_TOS), None)
        key = data[:3].decode() + "->" + str(tos & 3)
        seen[key] = seen.get(key, 0) + 1
except socket.timeout:
    pass
print(json.dumps(seen))
"""

SENDER = """\
import socket, sys, time
for tos, tag in ((1, b"ect"), (0, b"not")):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    for i in range(100):
        s.sendto(tag + b"x" * 1000, (sys.argv[1], 5000))
        time.sleep(0.002)
"""


def test_l4s_marks_reach_a_real_receiver_in_the_ip_header(tmp_path: Path) -> None:
    # Every ECT(1) packet that waits at all in the DU's RLC queue is marked (a ramp from 0 to
    # 1 µs); the receiver reads the ECN field of what the kernel delivered, which it would have
    # discarded had the rewritten IPv4 header's checksum been wrong (RFC 1812 §5.2.2).
    (tmp_path / "recv.py").write_text(RECEIVER)
    (tmp_path / "send.py").write_text(SENDER)
    py = sys.executable
    sc = tmp_path / "l4s.yaml"
    sc.write_text(
        "name: l4s\nduration_s: 3\nues: [{count: 1}]\n"
        "qos: [{five_qi: 9, l4s: {min_ms: 0, max_ms: 0.001}}]\n"
        "apps:\n"
        f"  - {{name: recv, ns: ue0, cmd: '{py} {tmp_path}/recv.py'}}\n"
        f"  - {{name: send, ns: dn, at_s: 0.3, cmd: '{py} {tmp_path}/send.py $SCOUT_UE'}}\n"
    )
    out = tmp_path / "run"
    r = scout("emulate", str(sc), "-o", str(out), "--duration", "4.5")
    assert r.returncode == 0, r.stderr
    seen = json.loads((out / "apps" / "recv.out").read_text())
    ect_ce, ect_kept = seen.get("ect->3", 0), seen.get("ect->1", 0)
    assert ect_ce + ect_kept == 100 and ect_ce >= 90, seen
    assert seen.get("not->0", 0) == 100, seen
    meta = json.loads((out / "run.json").read_text())
    assert meta["emulator"]["ce_marked"] == ect_ce, meta["emulator"]["ce_marked"]
    # The model's events agree: one ce_mark at the DU's RLC per CE packet delivered.
    r = scout(
        "query", str(out), "SELECT count(*) FROM packet_events WHERE point = 'ce_mark' AND layer = 'rlc'", "--format", "csv"
    )
    assert r.stdout.split()[1:] == [str(ect_ce)], r.stdout


ANBR_LISTENER = """\
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 4747))
s.settimeout(4.0)
try:
    while True:
        data, (addr, port) = s.recvfrom(2048)
        print(addr, port, data.decode())
except socket.timeout:
    pass
"""


def test_anbr_recommendations_reach_the_ues_applications(tmp_path: Path) -> None:
    # The gNB's ANBR (every 200 ms) while the DN pings the UE: each Recommended bit rate MAC CE
    # becomes a UDP datagram to port 4747 in the UE's namespace, one JSON line, as the control
    # event says.
    (tmp_path / "listen.py").write_text(ANBR_LISTENER)
    sc = tmp_path / "anbr.yaml"
    sc.write_text(
        "name: anbr\nduration_s: 3\nues: [{count: 1}]\n"
        "qos: [{five_qi: 9, anbr: {window_ms: 200}}]\n"
        "apps:\n"
        f"  - {{name: listen, ns: ue0, cmd: '{sys.executable} {tmp_path}/listen.py'}}\n"
        "  - {name: ping, ns: dn, at_s: 0.2, cmd: 'ping -c 10 -i 0.2 $SCOUT_UE'}\n"
    )
    out = tmp_path / "run"
    r = scout("emulate", str(sc), "-o", str(out), "--duration", "2.5")
    assert r.returncode == 0, r.stderr
    lines = (out / "apps" / "listen.out").read_text().splitlines()
    msgs = [json.loads(line.split(" ", 2)[2]) for line in lines]
    assert all(line.startswith("10.45.0.1 4747 ") for line in lines), lines
    meta = json.loads((out / "run.json").read_text())
    sent = meta["emulator"]["anbr_sent"]
    # 2.5 s of 200-ms windows; the last may still be on its way when the run ends.
    assert 10 <= sent <= 13 and len(msgs) >= sent - 1, (sent, msgs)
    assert all(m["kind"] == "anbr" and m["drb"] == 1 and m["multiplier"] == 40 for m in msgs)
    sql = "SELECT t_ns, value FROM control_events WHERE kind = 'anbr' ORDER BY t_ns"
    r = scout("query", str(out), sql, "--format", "csv")
    rows = [line.split(",") for line in r.stdout.split()[1:]]
    assert len(rows) == sent
    assert [(m["t_ns"], m["bit_rate_bps"]) for m in msgs] == [(int(t), int(float(v))) for t, v in rows[: len(msgs)]]


ANBR_ASKER = """\
import json, socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 4747))
s.settimeout(0.01)
ask = json.dumps({"bit_rate_bps": 50000000, "drb": 1}).encode()
end, nxt = time.monotonic() + 2.0, 0.0
while time.monotonic() < end + 0.5:
    if time.monotonic() >= nxt and time.monotonic() < end:
        s.sendto(ask, ("10.45.0.1", 4747))
        print("asked", flush=True)
        nxt = time.monotonic() + 0.1
    try:
        print(s.recv(2048).decode(), flush=True)
    except socket.timeout:
        pass
"""


def test_an_application_asks_for_a_bit_rate_and_the_gnb_answers(tmp_path: Path) -> None:
    # The UE's application asks every 100 ms (a datagram to the DN's address, port 4747: the modem
    # command); the UE's MAC takes a query only every 400 ms (bitRateQueryProhibitTimer), sends it
    # in its next PUSCH (the ping replies give it one), and the gNB answers each at once.
    (tmp_path / "ask.py").write_text(ANBR_ASKER)
    sc = tmp_path / "anbrq.yaml"
    sc.write_text(
        "name: anbrq\nduration_s: 3\nues: [{count: 1}]\n"
        "qos: [{five_qi: 9, anbr: {window_ms: 5000, query_prohibit_ms: 400}}]\n"
        "apps:\n"
        f"  - {{name: ask, ns: ue0, at_s: 0.3, cmd: '{sys.executable} {tmp_path}/ask.py'}}\n"
        "  - {name: ping, ns: dn, at_s: 0.1, cmd: 'ping -c 60 -i 0.05 $SCOUT_UE'}\n"
    )
    out = tmp_path / "run"
    r = scout("emulate", str(sc), "-o", str(out), "--duration", "3")
    assert r.returncode == 0, r.stderr
    lines = (out / "apps" / "ask.out").read_text().splitlines()
    asked = lines.count("asked")
    answers = [json.loads(x) for x in lines if x.startswith("{")]
    em = json.loads((out / "run.json").read_text())["emulator"]
    assert 15 <= asked <= 21, lines
    assert em["anbr_queries"] + em["anbr_queries_refused"] == asked, em
    assert 4 <= em["anbr_queries"] <= 6 and em["anbr_query_invalid"] == 0, em
    assert len(answers) == em["anbr_queries"] and all(a["answer"] for a in answers), answers
    sql = "SELECT node, count(*) FROM control_events WHERE kind = 'anbr_query' GROUP BY node ORDER BY node"
    r = scout("query", str(out), sql, "--format", "csv")
    assert r.stdout.split()[1:] == [f"gnb_du,{len(answers)}", f"ue,{em['anbr_queries']}"], r.stdout


FEED_READER = """\
import json
import math
from scout.feed import Feed
seen = []
with Feed() as f:
    first = None
    for ev in f.events(until_s=3.5):
        first = ev["seq"] if first is None else first
        seen.append([ev["seq"], ev["kind"], ev["t_ns"], f.lag_ns(ev), ev.get("dir"), ev.get("value")])
print(json.dumps({"missed": f.missed, "ue": f.ue, "cell": f.cell, "events": seen}))
"""


def test_the_ue_feed_streams_ran_events_live_in_order_under_a_100_mbit_flow(tmp_path: Path) -> None:
    # An application in UE 0's namespace subscribes to its RAN feed ($SCOUT_FEED) while iperf3
    # sends 100 Mbit/s of UDP to it: every event arrives, in the model's order, and soon (the
    # stated latency: 99 % of the non-HARQ events within 5 ms of when the model made them).
    (tmp_path / "read.py").write_text(FEED_READER)
    sc = tmp_path / "feed.yaml"
    sc.write_text(
        "name: feed\nduration_s: 4\nues: [{count: 1}]\n"
        "cell_cfg: {channel_bandwidth_MHz: 40, common_scs: 30, band: 78}\n"
        "apps:\n"
        f"  - {{name: read, ns: ue0, at_s: 0.1, cmd: '{sys.executable} {tmp_path}/read.py'}}\n"
        "  - {name: server, ns: ue0, cmd: 'iperf3 -s -1'}\n"
        "  - {name: send, ns: dn, at_s: 0.4, cmd: 'iperf3 -c $SCOUT_UE -u -b 100M -l 1400 -t 3'}\n"
    )
    out = tmp_path / "run"
    r = scout("emulate", str(sc), "-o", str(out), "--duration", "4")
    assert r.returncode == 0, r.stderr
    got = json.loads((out / "apps" / "read.out").read_text())
    meta = json.loads((out / "run.json").read_text())
    feed = meta["emulator"]["feed"]
    assert got["ue"] == 0 and got["missed"] == 0 and feed["dropped"] == 0, (got["missed"], feed)
    assert got["cell"]["slot_ns"] == 500_000 and got["cell"]["pattern"], got["cell"]
    ev = got["events"]
    seqs = [e[0] for e in ev]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "every event, in order"
    kinds = {e[1] for e in ev}
    assert {"harq", "grant", "bsr"} <= kinds, kinds
    harq = [e for e in ev if e[1] == "harq"]
    assert len(harq) > 3000, len(harq)
    # The model's order: control events' times never go back.
    times = [e[2] for e in ev if e[1] != "harq"]
    assert all(b >= a for a, b in zip(times, times[1:], strict=False))
    lags = sorted(e[3] for e in ev if e[1] != "harq")
    p99 = lags[int(len(lags) * 0.99)]
    # The feed's own latency: an event cannot reach the subscriber before the model made it, and the
    # model runs a slot late when the host keeps the emulator from its CPU (run.json timing.slots:
    # a loaded 2-core CI host once made the slots' p99 20 ms late). The stated 5 ms is on top of that.
    slots_p99_ns = (meta["emulator"]["timing"]["slots"]["p99_us"] or 0) * 1000
    slow = f"(slots' own p99 lateness {slots_p99_ns / 1e6:.2f} ms)"
    median = lags[len(lags) // 2] / 1e6
    assert p99 < 5_000_000 + slots_p99_ns, f"p99 {p99 / 1e6:.2f} ms, median {median:.2f} ms {slow}"
    # The same events as the run's tables: the feed's retransmission events are the run's.
    retx = [e for e in ev if e[1] == "retx_event"]
    sql = "SELECT count(*) FROM control_events WHERE kind = 'retx_event' AND ue = 0"
    r = scout("query", str(out), sql, "--format", "csv")
    assert 0 < len(retx) <= int(r.stdout.split()[1]), (len(retx), r.stdout)


def test_the_l4s_anbr_sweep_runs_in_the_emulator_with_real_packets(tmp_path: Path) -> None:
    # Two configurations through the emulator: scout-prague's constant 60 Mbit/s floods the RLC
    # queue; its Prague on 5-7 ms marks keeps the delay in single-digit ms.
    from scout import experiment

    if experiment.prague_binary() is None:
        subprocess.run(["cargo", "build", "-q", "--release", "-p", "scout-emu", "--bin", "scout-prague"], check=True)
    out = tmp_path / "xl"
    r = scout(
        "experiment", "l4s-anbr", "-o", str(out), "--emulate", "--only", "constant,l4s-5-7",
        "--seeds", "1", "--loads", "low", "--duration", "5",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr + r.stdout
    assert "emulated (scout-prague, iperf3)" in r.stdout, r.stdout
    rows = {row["method"]: row for row in csv.DictReader((out / "summary.csv").open())}
    constant, l4s = float(rows["constant"]["latency_ms"]), float(rows["l4s"]["latency_ms"])
    assert constant > 200 and l4s < 20, (constant, l4s)
    assert float(rows["l4s"]["throughput_mbps"]) > 5, rows["l4s"]
    assert (out / "l4s-5-7-low" / "seed1" / "apps" / "bg.out").is_file()


def test_the_ran_delay_study_runs_in_the_emulator_with_gandalf_reading_the_live_feed(tmp_path: Path) -> None:
    # Copa downloading over the poor channel, without and with Gandalf's retransmission
    # compensation: the receiver in UE 0's namespace reads the UE's live feed, takes each DL
    # retransmission event's T_M out of the one-way delays of the burst it released, and the sender
    # uses the corrected delays.
    import duckdb

    from scout import experiment

    if experiment.prague_binary() is None:
        subprocess.run(["cargo", "build", "-q", "--release", "-p", "scout-emu", "--bin", "scout-prague"], check=True)
    out = tmp_path / "xr"
    r = scout(
        "experiment", "ran-delay", "-o", str(out), "--emulate", "--only", "copa,dl,ul,poor,dddsu,none,retx",
        "--seeds", "1", "--duration", "8", "--reports", "none",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr + r.stdout
    assert "emulated (scout-prague" in r.stdout, r.stdout
    rows = {(row["dir"], row["compensation"]): row for row in csv.DictReader((out / "summary.csv").open())}
    assert len(rows) == 4 and all(float(x["throughput_mbps"]) > 1 for x in rows.values()), rows

    def ends(config: str) -> tuple[dict, dict, Path]:
        run = out / config / "seed1"
        recv, send = (json.loads((run / "apps" / f"{n}.out").read_text().splitlines()[-1]) for n in ("recv", "send"))
        return recv, send, run

    recv, send, _ = ends("copa-none-dl-poor-dddsu")
    assert "compensation" not in recv and "feed" not in recv, "no compensation: the receiver does not subscribe"
    assert send["samples"]["mean_raw_ms"] == send["samples"]["mean_used_ms"]

    recv, send, run = ends("copa-retx-dl-poor-dddsu")
    feed, comp = recv["feed"], recv["compensation"]
    assert feed["missed"] == 0 and feed["ul_buffer_period_ms"] == 20.0, feed
    # Every DL retransmission event the model made while the receiver listened reached it.
    f = str(run / "events" / "control.parquet")
    sql = (
        f"SELECT count(*) FILTER (WHERE t_ns < 8.5e9), count(*), max(value) FROM '{f}' "
        "WHERE kind = 'retx_event' AND dir = 'dl' AND ue = 0"
    )
    before_end, total, max_tm = duckdb.sql(sql).fetchone()
    assert 0 < before_end <= feed["retx_events"] <= total, (feed, before_end, total)
    # Samples were corrected, each by at most the longest T_M; the sender used the corrections.
    assert comp["corrected"] > 50 and 0 < comp["removed_ms"] / comp["corrected"] <= max_tm / 1e6, (comp, max_tm)
    s = send["samples"]
    removed_at_sender = (s["mean_raw_ms"] - s["mean_used_ms"]) * s["n"]
    assert abs(removed_at_sender - comp["removed_ms"]) <= 0.05 * comp["removed_ms"], (s, comp)
    rows_csv = (run / "apps" / "send-samples.csv").read_text().splitlines()
    assert rows_csv[0] == "t_ns,raw_ns,used_ns" and len(rows_csv) == s["n"] + 1

    # The upload: the sender is in UE 0's namespace and corrects both legs itself — its data's
    # delays with the UE's UL events, its acknowledgements' with the DL ones — and low-passes
    # nothing (retx only).
    recv, send, _ = ends("copa-retx-ul-poor-dddsu")
    comp = send["compensation"]
    assert "compensation" not in recv, "the DN's receiver has no feed"
    assert comp["feed"]["missed"] == 0 and comp["feed"]["retx_events"] > 0, comp
    assert comp["data_path"]["corrected"] > 0 and comp["ack_path"]["corrected"] > 0, comp
    assert comp["lowpass_period_ms"] == 0.0
    assert send["samples"]["mean_used_ms"] < send["samples"]["mean_raw_ms"], send["samples"]


def test_the_rlc_modes_study_compares_am_and_um_with_iperf3_through_the_emulator(tmp_path: Path) -> None:
    # Seed 002's study, shortened: UDP over RLC AM and UM on both channels, two 5-s runs each,
    # and one TCP run for CUBIC's window.
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed")
    out = tmp_path / "xm"
    r = scout("experiment", "rlc-modes", "-o", str(out), "--only", "udp", "--seeds", "2", "--duration", "5", "--reports", "none")
    assert r.returncode == 0, r.stderr + r.stdout
    rows = {(x["rlc_mode"], x["channel"]): x for x in csv.DictReader((out / "summary.csv").open())}
    assert set(rows) == {("am", "good"), ("um", "good"), ("am", "poor"), ("um", "poor")}, rows
    thr = {k: (float(x["throughput_mbps"]), float(x["throughput_ci_mbps"])) for k, x in rows.items()}
    # Poor radio: UM carries at least what AM does (no RLC retransmissions, no status PDUs,
    # smaller headers); AM retransmits there and UM never does.
    assert thr[("um", "poor")][0] >= thr[("am", "poor")][0], thr
    assert float(rows[("um", "poor")]["rlc_retx"]) == 0 and float(rows[("um", "good")]["rlc_retx"]) == 0, rows
    # Good radio: the two agree (the model is nearly deterministic: its runs' CIs are narrower
    # than UM's 0.2 % header saving, so the bound is 2 %; docs/experiments.md).
    (a, _), (u, _) = thr[("am", "good")], thr[("um", "good")]
    assert abs(a - u) <= 0.02 * max(a, u), thr
    assert thr[("am", "good")][0] > 3 * thr[("am", "poor")][0], "the poor channel carries far less"
    page = (out / "report" / "index.html").read_text()
    assert "rlc-modes" in page and page.count("<img") >= 3
    out2 = tmp_path / "xm-tcp"
    r = scout("experiment", "rlc-modes", "-o", str(out2), "--only", "tcp,good,am", "--seeds", "1", "--duration", "5")
    assert r.returncode == 0, r.stderr + r.stdout
    (row,) = list(csv.DictReader((out2 / "summary.csv").open()))
    assert float(row["cwnd_mean"]) > 10 and float(row["throughput_mbps"]) > 5, row
    assert (out2 / "tcp-am-good" / "seed1" / "report" / "index.html").is_file()


def test_the_upf_slices_study_measures_each_slices_real_upf_by_identity(tmp_path: Path) -> None:
    # Seed 001's study, shortened: the three loads, 5 s each, three real UPFs and the probe.
    if shutil.which("iperf3") is None:
        pytest.skip("iperf3 is not installed")
    out = tmp_path / "xu"
    r = scout("experiment", "upf-slices", "-o", str(out), "--duration", "5", "--reports", "none")
    assert r.returncode == 0, r.stderr + r.stdout
    lines = (out / "summary.csv").read_text().splitlines()
    assert lines[0] == "slice,load,pairs,p50_us,p99_us,p999_us,pfcp_mod_p50_us,pfcp_mod_p99_us,pairing", lines[0]
    rows = {(x["slice"], x["load"], x["pairing"]): x for x in csv.DictReader((out / "summary.csv").open())}
    slices, loads = ("embb", "urllc", "mmtc"), ("light", "medium", "heavy")
    assert set(rows) == {(s, x, p) for s in slices for x in loads for p in ("identity", "nearest")}, sorted(rows)

    def f(s: str, x: str, k: str, p: str = "identity") -> float:
        return float(rows[(s, x, p)][k])

    for x in loads:
        meta = json.loads((out / x / "seed1" / "run.json").read_text())
        probe = meta["emulator"]["probe"]
        # Every pair is an identity pair: each packet the UPF forwarded, paired with itself. A
        # sighting without its twin is a packet the UPF lost, and the UPF counts every one (on a
        # loaded host, those its N3 socket dropped while it was kept from its CPU, and those still
        # in the socket when it stopped, the emulator's last burst after a stall); or the twin of
        # one of two identical packets in the UPF at once (a TCP ACK re-sent from TIME_WAIT has IP
        # ID 0), the other a duplicate the probe counted.
        lost = ("n3_socket_drops", "n3_unread_at_stop", "ul_queue_full", "ul_no_rule", "ul_far_drop", "ul_malformed")
        lost += ("ul_device_full", "dl_no_rule", "dl_far_drop", "dl_not_buffered", "dl_no_tunnel", "dl_queue_full", "dl_not_ipv4")
        upf_lost = sum(c["upf"]["counters"][k] for c in meta["emulator"]["core"] for k in lost)
        upfs = json.loads((out / x / "seed1" / "upf" / "run.json").read_text())["probe_result"]["upfs"]
        duplicates = sum(u["counters"]["duplicates"] for u in upfs)
        unmatched = probe["unmatched"]["n3"]["total"] + probe["unmatched"]["n6"]["total"]
        assert unmatched == upf_lost + duplicates, (probe, upf_lost, duplicates)
        dups = {u["slice"]: u["counters"]["duplicates"] for u in upfs}
        for c in meta["emulator"]["core"]:
            pairs, forwarded = int(rows[(c["slice"], x, "identity")]["pairs"]), c["upf"]["counters"]["ul_forwarded"]
            assert forwarded - dups[c["slice"]] <= pairs <= forwarded, (x, c, dups)
            # PFCP modification latency under this load, every 200 ms.
            assert len(c["pfcp"]["modification_ms"]) >= 15 and not c["pfcp"]["modification_errors"], c["pfcp"]
        for s in slices:
            assert f(s, x, "pfcp_mod_p50_us") > 0 and f(s, x, "pfcp_mod_p99_us") >= f(s, x, "pfcp_mod_p50_us")
    # eMBB's load reached its UPF: its pairs grow as its rate (5, 20, 50 Mbit/s). Its delay's
    # growth with load (the seed's finding) is not asserted: at these rates, 5 s each on a 2-core
    # host, the UPF's median stays at ~74 µs at every load and its tail is the host's stalls (the
    # UPFs, the emulator and iperf3 share the cores) — runs here gave heavy/light p50 73.6/74.2
    # and 80.7/74.1 µs, p99 1 705/328 and 801/1 288 µs: either order, by chance.
    from scout.experiment_upf import LOADS

    for x in ("medium", "heavy"):
        ratio = f("embb", x, "pairs") / f("embb", "light", "pairs") / (LOADS[x] / LOADS["light"])
        assert 0.8 < ratio < 1.2, (x, [rows[("embb", y, "identity")]["pairs"] for y in loads])
    # Isolation: URLLC's own UPF keeps its median when eMBB's is heavy (its tail is not asserted: on
    # a 2-core host the UPFs, the emulator and iperf3 share the cores, and one run's URLLC p99 at
    # heavy load was 2.6 ms against 0.67 ms light while the medians were 109 and 106 µs).
    assert f("urllc", "heavy", "p50_us") <= 2 * f("urllc", "light", "p50_us"), [rows[("urllc", x, "identity")] for x in loads]
    # The seed's nearest-preceding pairing underestimates a queueing UPF's delay.
    assert f("embb", "heavy", "p50_us", "nearest") < f("embb", "heavy", "p50_us")
    assert (out / "report" / "index.html").is_file()
