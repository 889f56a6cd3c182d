"""The command line is safe and stoppable: output directories, bad arguments, Ctrl-C and SIGTERM,
read-only places and full disks. Each case is run as a user would run it, in a subprocess."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import scout_cmd

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"


def one_line_error(r: subprocess.CompletedProcess) -> str:
    """The command failed with exactly one line on stderr and no traceback; returns the line."""
    assert r.returncode != 0, r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    # Progress lines ("simulating x:  40 %") may come before the error.
    lines = [x for x in r.stderr.splitlines() if x.strip() and not re.search(r": +\d+ %( \(.*\))?$", x)]
    assert len(lines) == 1, r.stderr
    return lines[0]


def simulated(tmp_path_factory, scenario: str, seconds: str) -> Path:
    out = tmp_path_factory.mktemp(scenario) / scenario
    r = scout_cmd("simulate", scenario, "-o", str(out), "--duration", seconds)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return simulated(tmp_path_factory, "udp-flood", "1")


# ---- output directories -------------------------------------------------------------------------


def test_an_output_directory_that_is_not_a_run_is_never_touched(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("a user's notes")
    for extra in ([], ["--force"]):
        line = one_line_error(scout_cmd("simulate", "udp-flood", "-o", str(notes), "--duration", "1", *extra))
        assert "not empty and is not a Scout run" in line
        assert (notes / "mine.txt").read_text() == "a user's notes"
    line = one_line_error(scout_cmd("simulate", "udp-flood", "-o", "/", "--force", "--duration", "1"))
    assert "is not a Scout run" in line
    line = one_line_error(scout_cmd("simulate", "udp-flood", "-o", str(notes / "mine.txt"), "--duration", "1"))
    assert "not a directory" in line
    # The demo's directory holds its runs: a non-run where a run would go is refused before any work.
    (notes / "udp-flood").mkdir()
    (notes / "udp-flood" / "keep").write_text("x")
    line = one_line_error(scout_cmd("demo", "-o", str(notes), "--duration", "0.2"))
    assert "udp-flood" in line and "not a Scout run" in line
    assert sorted(p.name for p in notes.iterdir()) == ["mine.txt", "udp-flood"]


def test_force_removes_only_what_scout_wrote(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert scout_cmd("simulate", "udp-flood", "-o", str(out), "--duration", "0.5").returncode == 0
    assert scout_cmd("analyze", str(out)).returncode == 0
    (out / "notes.md").write_text("what I saw")
    (out / "plots").mkdir()
    r = scout_cmd("simulate", "udp-flood", "-o", str(out), "--duration", "0.5")
    assert "--force" in one_line_error(r)
    r = scout_cmd("simulate", "udp-flood", "-o", str(out), "--duration", "0.5", "--force")
    assert r.returncode == 0, r.stderr
    assert (out / "notes.md").read_text() == "what I saw" and (out / "plots").is_dir()
    assert not (out / "analysis").exists(), "the old run's analysis went with it"


def test_an_empty_directory_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = scout_cmd("simulate", "udp-flood", "-o", str(tmp_path / "empty"), "--duration", "0.3")
    assert r.returncode == 0, r.stderr


# ---- bad arguments ------------------------------------------------------------------------------

BAD_ARGUMENTS = [
    (["simulate", "udp-flood", "-o", "{tmp}/x", "--seed", "-1"], "--seed"),
    (["simulate", "udp-flood", "-o", "{tmp}/x", "--seed", "2e3"], "--seed"),
    (["simulate", "udp-flood", "-o", "{tmp}/x", "--duration", "nan"], "--duration"),
    (["simulate", "udp-flood", "-o", "{tmp}/x", "--duration", "-3"], "--duration"),
    (["simulate", "no-such-scenario", "-o", "{tmp}/x"], "no-such-scenario"),
    (["simulate", "udp-flood", "-o", "{tmp}/x", "--set", "cell_cfg.common_scs=7"], "common_scs"),
    (["analyze", "{run}", "--bin", "0"], "--bin"),
    (["analyze", "{run}", "--bin", "-1"], "--bin"),
    (["analyze", "{run}", "--window", "-1"], "--window"),
    (["analyze", "{tmp}/nothing"], "run.json"),
    (["report", "{tmp}/nothing"], "run.json"),
    (["export", "{run}", "--pkt", "abc"], "--pkt"),
    (["export", "{run}", "--packets", "-5"], "--packets"),
    (["export", "{run}", "--format", "xml"], "--format"),
    (["export", "{run}", "-o", "{tmp}/a-file"], "not a directory"),
    (["query", "{run}", "SELEC 1"], "query failed"),
    (["query", "{run}", "SELECT 1", "--limit", "-1"], "--limit"),
    (["query", "{tmp}/nothing", "SELECT 1"], "run.json"),
    (["ingest", "pcap", "{tmp}/a-file", "-o", "{tmp}/p", "--gtp-port", "99999"], "--gtp-port"),
    (["ingest", "pcap", "{tmp}/a-file", "-o", "{tmp}/p", "--window", "-1"], "--window"),
    (["ingest", "pcap", "{tmp}/missing.pcap", "-o", "{tmp}/p"], "no such file"),
    (["ingest", "pcap", "{tmp}", "-o", "{tmp}/p"], "is a directory"),
    (["ingest", "srsran", "{tmp}/missing.log", "-o", "{tmp}/s"], "no such file"),
    (["ingest", "srsran", "{tmp}/a-file", "--trace", "{tmp}/missing.json", "-o", "{tmp}/s"], "--trace"),
    (["ingest", "srsran", "{tmp}/a-file", "--metrics", "{tmp}/missing.jsonl", "-o", "{tmp}/s"], "--metrics"),
    (["probe", "--n3", "x:y", "--n6", "x:z", "-o", "{tmp}/pr", "--table-sets", "3"], "--table-sets"),
    (["probe", "--n3", "x:y", "--n6", "x:z", "-o", "{tmp}/pr", "--gtp-port", "0"], "--gtp-port"),
    (["probe", "--n3", "x:y", "--n6", "x:z", "-o", "{tmp}/pr", "--duration", "-2"], "--duration"),
    (["demo", "--duration", "0"], "--duration"),
    (["no-such-command"], "invalid choice"),
]


@pytest.mark.parametrize("argv,names", BAD_ARGUMENTS, ids=[" ".join(a[:3]) + " " + n for a, n in BAD_ARGUMENTS])
def test_bad_arguments_get_one_line_and_no_traceback(tmp_path: Path, run: Path, argv: list[str], names: str) -> None:
    (tmp_path / "a-file").write_text("not a capture\n")
    args = [a.format(tmp=tmp_path, run=run) for a in argv]
    r = scout_cmd(*args)
    line = one_line_error(r)
    assert names in line, line
    assert r.returncode in (1, 2)
    # Nothing was left behind by a refused command.
    for name in ("x", "p", "s", "pr"):
        assert not (tmp_path / name).exists(), name


# ---- stopping -----------------------------------------------------------------------------------


def _stop_after(argv: list[str], delay_s: float, sig: int, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    """Starts ``scout ARGV``, sends ``sig`` after ``delay_s``; returns the result and how long it
    took to stop."""
    p = subprocess.Popen(
        [sys.executable, "-m", "scout.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd
    )
    time.sleep(delay_s)
    assert p.poll() is None, "the command ended before it could be stopped: give it more work"
    p.send_signal(sig)
    t = time.monotonic()
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, p.returncode, out, err), time.monotonic() - t


@pytest.mark.parametrize("sig,status,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_simulation_stops_within_a_second_and_leaves_no_run(tmp_path: Path, sig: int, status: int, word: str) -> None:
    r, took = _stop_after(["simulate", "bench-60mbps", "-o", "long", "--duration", "3000"], 2.0, sig, tmp_path)
    assert took < 1.0, f"took {took:.2f} s to stop"
    assert r.returncode == status
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert word in last and "removed the unfinished run long" in last, r.stderr
    assert not (tmp_path / "long").exists()


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> Path:
    """A run large enough that its analysis takes a few seconds here."""
    return simulated(tmp_path_factory, "bench-60mbps", "200")


def test_ctrl_c_in_analyze_report_and_export_removes_what_was_unfinished(big_run: Path) -> None:
    # At 0.3 s the kernel runs while the relational part is still being imported; at 1 s, later.
    for after in (0.3, 1.0):
        r, took = _stop_after(["analyze", str(big_run)], after, signal.SIGINT, big_run.parent)
        # (Within 2.5 s: these hosts differ; a stop that waits for the work to end takes longer.)
        assert r.returncode == 130 and took < 2.5, (after, r.returncode, took, r.stderr)
        assert "Traceback" not in r.stderr and "interrupted" in r.stderr, (after, r.stderr)
        analysis = big_run / "analysis"
        assert not (analysis / "summary.json").exists(), "an interrupted analysis is not a finished one"
        assert not list(analysis.glob("*.partial")), (after, list(analysis.iterdir()))
    assert scout_cmd("analyze", str(big_run)).returncode == 0
    r, took = _stop_after(["report", str(big_run)], 1.5, signal.SIGINT, big_run.parent)
    assert r.returncode == 130 and took < 2.5, (r.returncode, took, r.stderr)
    # What the report had begun is removed (on a slow host it may not have begun writing yet).
    assert "interrupted" in r.stderr and not (big_run / "report").exists(), r.stderr
    out = big_run.parent / "csv"
    r, took = _stop_after(["export", str(big_run), "--format", "csv", "-o", str(out)], 1.5, signal.SIGINT, big_run.parent)
    assert r.returncode == 130 and took < 2.5, (r.returncode, took, r.stderr)
    assert "Traceback" not in r.stderr and "interrupted" in r.stderr
    assert not out.exists(), "an interrupted export leaves no half-written file (nor the directory it made)"


def test_duckdbs_form_of_ctrl_c_is_told_from_a_bad_file(tmp_path: Path) -> None:
    """DuckDB catches SIGINT during a query and raises RuntimeError("Query interrupted"): code that
    turns database errors into "not a readable Parquet file" must let it through as Ctrl-C (a
    report stopped while it opened the run's tables said the file was unreadable, status 1)."""
    import threading

    import duckdb

    from scout.errors import interrupted

    # SIGINT itself, in a process of its own (DuckDB's handler is in place only while a query runs).
    script = (
        "import duckdb, os, signal, threading\n"
        "from scout.errors import interrupted\n"
        "threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        "    duckdb.sql('SELECT count(*) FROM range(100000000000) t(x) WHERE x % 7 = 3').fetchall()\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, interrupted(e))\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["RuntimeError", "True"], (r.stdout, r.stderr[-500:])
    con = duckdb.connect()
    threading.Timer(0.2, con.interrupt).start()
    with pytest.raises(Exception) as stopped:
        con.sql("SELECT count(*) FROM range(100000000000) t(x) WHERE x % 7 = 3").fetchall()
    assert interrupted(stopped.value), repr(stopped.value)
    (tmp_path / "bad.parquet").write_text("garbage")
    with pytest.raises(Exception) as bad:
        con.read_parquet(str(tmp_path / "bad.parquet"))
    assert not interrupted(bad.value), repr(bad.value)


def test_an_interrupted_ingest_leaves_no_run(tmp_path: Path) -> None:
    log = FIXTURES / "srsran" / "srsran-23.10-info-drb.gnb.log"
    if not log.exists():
        pytest.skip(f"{log} is absent (the shared fixtures are not beside this clone)")
    # Several hundred MB of real log lines: ingest takes seconds, long enough to interrupt.
    big = tmp_path / "big.gnb.log"
    text = log.read_bytes()
    with big.open("wb") as f:
        for _ in range(300):
            f.write(text)
    r, took = _stop_after(["ingest", "srsran", str(big), "-o", "ing"], 1.0, signal.SIGINT, tmp_path)
    assert r.returncode == 130 and took < 1.0, (r.returncode, took, r.stderr)
    assert "removed the unfinished run ing" in r.stderr
    assert not (tmp_path / "ing").exists()


# ---- read-only places and full disks (root: tmpfs mounts) ----------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs (a read-only or full file system)")
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_read_only_runs_and_places_get_one_line(tmp_path: Path, run: Path) -> None:
    with tmpfs(tmp_path / "ro", "64m") as ro:
        shutil.copytree(run / "events", ro / "r" / "events")
        shutil.copy(run / "run.json", ro / "r" / "run.json")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        for argv in (["analyze", f"{ro}/r"], ["report", f"{ro}/r"], ["export", str(run), "-o", f"{ro}/x"]):
            line = one_line_error(scout_cmd(*argv))
            assert "Read-only file system" in line, line
        # Reading works: a query over the events needs no analysis.
        r = scout_cmd("query", f"{ro}/r", "SELECT count(*) AS n FROM packet_events")
        assert r.returncode == 0, r.stderr


def test_a_full_disk_gets_one_line_and_leaves_no_partial_files(tmp_path: Path, run: Path) -> None:
    with tmpfs(tmp_path / "full", "400k") as full:
        line = one_line_error(scout_cmd("simulate", "bench-60mbps", "-o", f"{full}/r", "--duration", "5"))
        assert "No space left on device" in line and "removed the unfinished run" in line
        assert list(full.iterdir()) == [], "nothing is left to keep the disk full"
    with tmpfs(tmp_path / "full2", "3m") as full:
        shutil.copytree(run, full / "r", ignore=shutil.ignore_patterns("analysis", "report"))
        free = shutil.disk_usage(full).free
        (full / "fill").write_bytes(b"\0" * max(free - 20_000, 0))
        line = one_line_error(scout_cmd("analyze", f"{full}/r"))
        assert "No space left on device" in line
        assert not list((full / "r" / "analysis").glob("*.partial"))


# ---- progress off a terminal --------------------------------------------------------------------


def test_progress_is_a_line_per_tenth_off_a_terminal(tmp_path: Path) -> None:
    r = scout_cmd("simulate", "udp-flood", "-o", str(tmp_path / "r"), "--duration", "2")
    assert r.returncode == 0
    lines = [x for x in r.stderr.splitlines() if x.startswith("simulating udp-flood:")]
    assert [x.split(":")[1].strip() for x in lines] == [f"{p} %" for p in range(10, 101, 10)]
    r = scout_cmd("report", str(tmp_path / "r"))
    assert r.returncode == 0, r.stderr
    assert "analysing first" in r.stderr, "a command that must analyse first says so"
    assert any(x.startswith("analysing r:") for x in r.stderr.splitlines())
    assert [x.split(":")[1].split("%")[0].strip() for x in r.stderr.splitlines() if x.startswith("report r:")][-1] == "100"
