"""`scout report` and `scout demo`: the report opens in headless Chromium at two window sizes with
every figure drawn, nothing overlapping, no errors and no network; screenshots are kept."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest
from helpers import scout_cmd

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SIZES = [(1400, 900), (720, 1000)]
#: Where the screenshots are kept for a person to look at (gitignored); their paths are printed in
#: the test summary.
SHOTS = ROOT / "test-output" / "report"
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (scripts/test.sh installs Debian's chromium)"
)

#: Elements that must not overlap one another (unless one contains the other).
BLOCKS = (
    "h1, h2, h3, nav, .kpi, ul.headline, figure, figcaption, .panel-title, .uplot, .u-legend, .legend-row, "
    "p.absent, section > table, select, table.journey-events, input.filter"
)

OVERLAPS = """sel => {
  const els = Array.from(document.querySelectorAll(sel)).filter(e => e.getClientRects().length);
  const out = [];
  for (let i = 0; i < els.length; i++) for (let j = i + 1; j < els.length; j++) {
    const a = els[i], b = els[j];
    if (a.contains(b) || b.contains(a)) continue;
    const r = a.getBoundingClientRect(), s = b.getBoundingClientRect();
    const w = Math.min(r.right, s.right) - Math.max(r.left, s.left), h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
    if (w > 1 && h > 1) out.push(a.className + '|' + a.tagName + ' / ' + b.className + '|' + b.tagName + ' ' + w + 'x' + h);
  }
  // Texts of one SVG figure (labels of bars and axes) do not overlap either.
  document.querySelectorAll('figure svg').forEach(svg => {
    const ts = Array.from(svg.querySelectorAll('text')).map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < ts.length; i++) for (let j = i + 1; j < ts.length; j++) {
      const r = ts[i][1], s = ts[j][1];
      const w = Math.min(r.right, s.right) - Math.max(r.left, s.left), h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
      if (w > 1 && h > 1) out.push('text "' + ts[i][0] + '" / "' + ts[j][0] + '"');
    }
  });
  return out;
}"""


def browser_check(index: Path) -> list[dict]:
    """Opens the report from disk at each of SIZES (every request but the file itself is recorded)
    and reads what a user sees; screenshots go beside the report."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip) is needed to drive the browser")
    results = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        for w, h in SIZES:
            errors: list[str] = []
            requests: list[str] = []
            page = browser.new_page(viewport={"width": w, "height": h})
            page.on("console", lambda m, e=errors: e.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda x, e=errors: e.append(f"page error: {x}"))
            page.on("request", lambda r, q=requests: q.append(r.url))
            page.goto(index.as_uri())
            res = {
                "size": (w, h),
                "errors": errors,
                "requests": requests,
                "figures": page.evaluate("window.scoutFigures"),
                "declared": int(page.eval_on_selector("body", "b => b.dataset.figures")),
                "present": page.eval_on_selector_all("figure", "els => els.map(f => f.dataset.figure)"),
                "absent": page.eval_on_selector_all("p.absent", "els => els.map(p => p.dataset.absent)"),
                "sizes": page.eval_on_selector_all(
                    "figure .plot",
                    "els => els.map(e => [e.id, e.getBoundingClientRect().width, e.getBoundingClientRect().height])",
                ),
                "overlaps": page.evaluate(OVERLAPS, BLOCKS),
                "overflow": page.evaluate("document.documentElement.scrollWidth - window.innerWidth"),
                "kpis": page.eval_on_selector_all(".kpi", "els => els.map(e => e.textContent)"),
                "text": page.inner_text("body"),
            }
            if page.query_selector("#journey-select option:nth-child(2)"):
                page.select_option("#journey-select", index=1)
                res["journey_after_select"] = page.evaluate("window.scoutFigures.journey.points")
            SHOTS.mkdir(parents=True, exist_ok=True)
            run = index.parent.parent
            shot = SHOTS / f"{run.parent.name}-{run.name}-{w}x{h}.png"
            page.screenshot(path=str(shot), full_page=True)
            warnings.warn(f"screenshot: {shot}", stacklevel=1)
            res["screenshot"] = shot
            page.close()
            results.append(res)
        browser.close()
    return results


def check_page(res: dict) -> None:
    assert res["errors"] == [], res["errors"]
    assert all(u.startswith(("file://", "data:")) for u in res["requests"]), res["requests"]
    assert res["overlaps"] == [], res["overlaps"]
    assert res["overflow"] <= 0, f"the page is {res['overflow']} px wider than the window"
    assert len(res["present"]) == res["declared"]
    for name in res["present"]:
        assert res["figures"].get(name, {}).get("points", 0) > 0, f"figure {name} is empty: {res['figures']}"
    for fid, w, h in res["sizes"]:
        assert w > 200 and h > 40, (fid, w, h)
    assert res["screenshot"].stat().st_size > 10_000


@needs_chromium
def test_a_simulated_run_has_every_figure_at_two_sizes(tmp_path: Path) -> None:
    out = tmp_path / "mixed"
    assert scout_cmd("simulate", "mixed", "-o", str(out), "--duration", "2").returncode == 0
    r = scout_cmd("report", str(out), "--static")
    assert r.returncode == 0, r.stderr
    index = out / "report" / "index.html"
    assert str(index) in r.stdout
    for res in browser_check(index):
        check_page(res)
        # mixed has UL and DL, pings (RTT figure), slots, queues.
        assert set(res["present"]) == {"attribution", "percentiles", "queues", "rtt", "tti", "journey"}
        assert res["journey_after_select"] > 0
        assert any("attribution closes" in k for k in res["kpis"])
    for name in ("attribution", "percentiles", "queues", "rtt", "tti"):
        for ext in ("png", "pdf"):
            assert (out / "report" / "figures" / f"{name}.{ext}").stat().st_size > 1000


@needs_chromium
def test_several_runs_compare_attribution(tmp_path: Path) -> None:
    runs = []
    for name in ("attribution-light", "attribution-heavy"):
        runs.append(tmp_path / name)
        assert scout_cmd("simulate", name, "-o", str(runs[-1]), "--duration", "1").returncode == 0
    r = scout_cmd("report", *map(str, runs))
    assert r.returncode == 0, r.stderr
    res = browser_check(runs[0] / "report" / "index.html")[0]
    check_page(res)
    assert "attribution-light, attribution-heavy" in res["text"]


@needs_chromium
@pytest.mark.parametrize(
    "kind,rel,absent,headline",
    [
        ("pcap", "pcap/n3-n6-ping-any.pcap", {"queues", "rtt", "tti"}, "UPF forwarding delay UL"),
        ("srsran", "srsran/srsran-23.10-info-drb.gnb.log", {"rtt"}, "DL rlc span"),
    ],
)
def test_real_sources_show_only_what_they_measured(tmp_path: Path, kind: str, rel: str, absent: set, headline: str) -> None:
    src = FIXTURES / rel
    if not src.exists():
        pytest.skip(f"{src} is absent (the shared fixtures are not beside this clone)")
    out = tmp_path / "run"
    assert scout_cmd("ingest", kind, str(src), "-o", str(out)).returncode == 0
    assert scout_cmd("report", str(out)).returncode == 0
    for res in browser_check(out / "report" / "index.html"):
        check_page(res)
        assert absent <= set(res["absent"]), res["absent"]
        assert headline in res["text"]
        assert not any("attribution closes" in k for k in res["kpis"]), "no check over no delivered packet"
        assert "0.00 Mbit/s" not in res["text"] and "throughput_bps" not in res["text"]
        assert "not measured" in res["text"]


@pytest.mark.skipif(os.environ.get("SCOUT_SKIP_DEMO") == "1", reason="SCOUT_SKIP_DEMO=1")
def test_demo_runs_analyses_and_reports(tmp_path: Path) -> None:
    r = scout_cmd("demo", "-o", str(tmp_path / "demo"), "--duration", "1")
    assert r.returncode == 0, r.stderr
    assert "summary" in r.stdout and "reports:" in r.stdout
    for name in ["udp-flood", "attribution-light", "attribution-medium", "attribution-heavy", "mixed"]:
        assert (tmp_path / "demo" / name / "report" / "index.html").exists()
        assert f"{name}" in r.stdout
    assert "100 %" in r.stdout
