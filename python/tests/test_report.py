"""`scout report` and `scout demo`: the HTML report opens in headless Chromium with every figure and no errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def scout_cmd(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scout.cli", *args], capture_output=True, text=True, cwd=cwd)


def browser_check(index: Path) -> dict:
    """Opens the report from disk (offline: every other request is refused) and reads what a user sees."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip) is needed to drive the browser")
    errors: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(index.as_uri())
        figs = page.eval_on_selector_all(
            "figure",
            """els => els.map(f => { const s = f.querySelector('svg'); const r = s ? s.getBoundingClientRect() : null;
                 return {name: f.dataset.figure, w: r ? r.width : 0, h: r ? r.height : 0}; })""",
        )
        declared = int(page.eval_on_selector("body", "b => b.dataset.figures"))
        # Interactivity: sorting a table by a column reorders its rows.
        first_before = (
            page.eval_on_selector("#t-comp tbody tr", "r => r.cells[1].textContent")
            if page.query_selector("#t-comp tbody tr")
            else None
        )
        if first_before is not None:
            page.click("#t-comp th:nth-child(2)")
            page.click("#t-comp th:nth-child(2)")
        page.screenshot(path=str(index.parent / "screenshot.png"), full_page=False)
        browser.close()
    return {"errors": errors, "figures": figs, "declared": declared, "requests": requests}


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (scripts/test.sh installs Debian's chromium)")
def test_report_opens_in_headless_chromium_with_every_figure(tmp_path: Path) -> None:
    runs = []
    for name, extra in [("attribution-light", []), ("attribution-heavy", []), ("mixed", [])]:
        out = tmp_path / name
        r = scout_cmd("simulate", name, "-o", str(out), "--duration", "1", *extra)
        assert r.returncode == 0, r.stderr
        runs.append(out)
    r = scout_cmd("report", str(runs[2]))
    assert r.returncode == 0, r.stderr
    index = runs[2] / "report" / "index.html"
    assert str(index) in r.stdout
    res = browser_check(index)
    assert res["errors"] == []
    names = {f["name"] for f in res["figures"]}
    # mixed has pings (RTT figure) and UL + DL.
    assert names == {"attribution", "cdf", "queues", "rtt", "tti"}
    assert len(res["figures"]) == res["declared"]
    assert all(f["w"] > 300 and f["h"] > 100 for f in res["figures"]), res["figures"]
    assert all(u.startswith("file://") or u.startswith("data:") for u in res["requests"]), res["requests"]
    for n in names:
        for ext in ("png", "pdf"):
            f = runs[2] / "report" / "figures" / f"{n}.{ext}"
            assert f.stat().st_size > 1000, f

    # Several runs: each report compares attribution across them (SCOUT fig. 4).
    r = scout_cmd("report", str(runs[0]), str(runs[1]))
    assert r.returncode == 0, r.stderr
    res = browser_check(runs[0] / "report" / "index.html")
    assert res["errors"] == []
    assert "compare" in {f["name"] for f in res["figures"]}


@pytest.mark.skipif(os.environ.get("SCOUT_SKIP_DEMO") == "1", reason="SCOUT_SKIP_DEMO=1")
def test_demo_runs_analyses_and_reports(tmp_path: Path) -> None:
    r = scout_cmd("demo", "-o", str(tmp_path / "demo"), "--duration", "1")
    assert r.returncode == 0, r.stderr
    assert "summary" in r.stdout and "reports:" in r.stdout
    for name in ["udp-flood", "attribution-light", "attribution-medium", "attribution-heavy", "mixed"]:
        assert (tmp_path / "demo" / name / "report" / "index.html").exists()
        assert f"{name}" in r.stdout
    assert "100 %" in r.stdout
