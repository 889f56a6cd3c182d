"""`--live` as a user watches it: during a 26 s emulation and a 16 s probe of the emulation's real
UPF, the page updates in headless Chromium and Prometheus's `/metrics` grows between two scrapes
(docs/live.md). Root (namespaces, TUN, BPF); skipped with the reason elsewhere, never in CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from scout.experiment import upf_binary

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WHY = (
    "not root"
    if os.geteuid() != 0
    else "no /dev/net/tun"
    if not Path("/dev/net/tun").exists()
    else "ping is not installed"
    if shutil.which("ping") is None
    else "Scout's UPF is not built (scripts/setup.sh builds target/release/scout-upf)"
    if upf_binary() is None
    else None
)
if WHY and os.environ.get("CI"):
    raise RuntimeError(f"the live view's tests must run in CI: {WHY}")
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")

# The emulation outlasts the probe's 16 s however slowly the probe starts on a loaded machine
# (at its end the emulator ends the processes in its namespaces, the probe among them: a CI run
# once saw the probe stopped by SIGTERM with a 12-s emulation).
SCENARIO = """\
name: live-test
duration_s: 26
core: {slices: [{name: embb, upf_process: true}]}
ues: [{count: 1, slice: embb}]
apps:
  - {name: pinger, ns: ue0, at_s: 0.2, cmd: "ping -c 500 -i 0.05 $SCOUT_DN"}
"""


def start(args: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    """Starts a scout command with --live on a free port; returns it and its page's URL."""
    f = log.open("w")
    p = subprocess.Popen(
        [sys.executable, "-m", "scout.cli", *args, "--live", "--live-addr", "127.0.0.1:0"],
        stdout=f,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = re.search(r"live: (http://127\.0\.0\.1:\d+/)", log.read_text())
        if m:
            return p, m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.1)
    p.kill()
    raise AssertionError(f"no live URL announced: {log.read_text()}")


def metrics(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url + "metrics", timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def grows(url: str, key: str, wait_s: float = 2.0) -> tuple[float, float]:
    """A metric's value now and `wait_s` later (a key it does not show yet counts as 0)."""
    a = metrics(url).get(key, 0.0)
    time.sleep(wait_s)
    return a, metrics(url).get(key, 0.0)


def page_updates(url: str, charts: list[str]) -> dict:
    """Opens the page in headless Chromium, lets it poll, and reads what a user sees twice."""
    if CHROMIUM is None:
        if os.environ.get("CI"):
            raise AssertionError("Chromium must be installed in CI (scripts/test.sh installs it)")
        pytest.skip("Chromium is not installed")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip) drives the browser")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda x: errors.append(str(x)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url)
        page.wait_for_function("() => Number(document.getElementById('updates')?.textContent) >= 2", timeout=10_000)
        first = page.inner_text("#status")
        page.wait_for_timeout(1500)
        second = page.inner_text("#status")
        points = {c: int(page.get_attribute(f"#c_{c}", "data-points") or 0) for c in charts}
        updates = int(page.inner_text("#updates"))
        page.screenshot(path=str(ROOT / "test-output" / f"live-{charts[0]}.png"))
        browser.close()
    return {"first": first, "second": second, "points": points, "updates": updates, "errors": errors}


def event_time(status: str) -> float:
    return float(re.search(r"event time ([\d.]+) s", status).group(1))


def test_the_live_view_updates_during_an_emulation_and_a_probe_of_its_upf(tmp_path: Path) -> None:
    (ROOT / "test-output").mkdir(exist_ok=True)
    sc = tmp_path / "live.yaml"
    sc.write_text(SCENARIO)
    emu, emu_url = start(["emulate", str(sc), "-o", str(tmp_path / "run")], tmp_path / "emulate.log")
    probe = None
    try:
        # The emulation's UPF namespace (scout-PID-upf0), probed by `scout probe` for 16 s
        # (its pages are read last, ~9 s in on a loaded machine).
        ns = f"scout-{emu.pid}-upf0"
        deadline = time.monotonic() + 15
        while ns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout:
            assert time.monotonic() < deadline and emu.poll() is None, (tmp_path / "emulate.log").read_text()
            time.sleep(0.1)
        time.sleep(0.5)  # the PFCP session is up before the first ping
        probe, probe_url = start(
            ["probe", "--n3", f"{ns}:n3", "--n6", f"{ns}:n6", "--slice", "embb", "--duration", "16"]
            + ["-o", str(tmp_path / "probe")],
            tmp_path / "probe.log",
        )
        time.sleep(1.0)

        # Prometheus: the emulation's figures grow between two scrapes 2 s apart.
        a, b = grows(emu_url, 'scout_events_total{table="packet_events"}')
        assert b > a > 0, (a, b)
        m = metrics(emu_url)
        delivered = 'scout_ue_bytes_total{ue="0",dir="dl",at="delivered"}'
        assert m.get(delivered, 0) > 0, sorted(m)
        assert 0.001 < m['scout_app_rtt_seconds{ue="0",source="ping"}'] < 1.0, m
        rlc = 'scout_queue_sojourn_seconds_count{node="gnb_du",layer="rlc",queue="rlc_sdu",dir="dl"}'
        assert m.get(rlc, 0) > 0, sorted(m)
        # The probe's: packets the UPF forwarded, and their time in it (once it has attached and
        # seen the first: loading its programs takes over a second on a slow host).
        upf_bytes = 'scout_ue_bytes_total{ue="0",dir="dl",at="upf"}'
        deadline = time.monotonic() + 8
        while metrics(probe_url).get(upf_bytes, 0.0) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        a, b = grows(probe_url, upf_bytes)
        assert b > a > 0, ((a, b), (tmp_path / "probe.log").read_text())
        assert metrics(probe_url).get('scout_layer_seconds_count{layer="upf",dir="ul"}', 0) > 0

        # The pages update in a browser: the clock moves and the charts have points.
        e = page_updates(emu_url, ["tput", "rtt", "soj", "layer"])
        assert not e["errors"], e
        assert event_time(e["second"]) > event_time(e["first"]), e
        assert all(n > 0 for n in e["points"].values()), e
        pr = page_updates(probe_url, ["layer", "tput"])
        assert not pr["errors"], pr
        assert event_time(pr["second"]) > event_time(pr["first"]), pr
        assert all(n > 0 for n in pr["points"].values()), pr

        assert probe.wait(timeout=30) == 0, (tmp_path / "probe.log").read_text()
        assert emu.wait(timeout=30) == 0, (tmp_path / "emulate.log").read_text()
        # The live view ends with its run.
        with pytest.raises(OSError):
            metrics(emu_url)
    finally:
        for p in (probe, emu):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
