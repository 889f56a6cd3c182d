"""End-to-end tests of the scout command and the run-directory reader, as a user runs them."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import scout_cmd

import scout
from scout import _native
from scout.events import RunError, open_run

ROOT = Path(__file__).resolve().parents[2]


def digest(run: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted((run / "events").glob("*.parquet"))}


def test_simulate_writes_a_complete_readable_run(tmp_path: Path) -> None:
    out = tmp_path / "flood"
    r = scout_cmd("simulate", "udp-flood", "-o", str(out), "--duration", "3")
    assert r.returncode == 0, r.stderr
    assert "drops:" in r.stdout and "Mbit/s" in r.stdout
    run = open_run(out)
    assert run.meta["complete"] is True and run.meta["source"] == "simulator"
    assert run.meta["schema_version"] == _native.schema_version()
    pe = run.packet_events
    assert pe.num_rows == run.meta["counts"]["events"]["packet_events"]
    assert set(pe.column_names) == set(dict(_native.schema_columns())["packet_events"])
    # Enumerations are dictionary-encoded in the files.
    assert str(pe.schema.field("layer").type).startswith("dictionary")
    meta = pq.read_metadata(out / "events" / "packet.parquet")
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert meta.metadata[b"scout.schema_version"] == b"1"
    # Drops counted in run.json equal drop events.
    drops = pe.filter(pc.equal(pe["point"], "drop")).num_rows
    counted = sum(n for reasons in run.meta["counts"]["drops"].values() for n in reasons.values())
    assert drops == counted


def test_same_seed_gives_byte_identical_tables(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, seed in [(a, "4"), (b, "4"), (c, "5")]:
        r = scout_cmd("simulate", "mixed", "-o", str(out), "--duration", "1", "--seed", seed)
        assert r.returncode == 0, r.stderr
    assert digest(a) == digest(b)
    assert digest(a) != digest(c)


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    r = scout_cmd("simulate", "udp-flood", "-o", str(tmp_path / "x"), "--set", "cell_cfg.common_scs=45")
    assert r.returncode != 0
    assert "cell_cfg.common_scs" in r.stderr and "15, 30, 60, 120" in r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nduration_s: 1\nues: [{count: 1, chanel: {}}]\ntraffic: []\n")
    r = scout_cmd("simulate", str(bad), "-o", str(tmp_path / "y"))
    assert r.returncode != 0 and "ues[0]" in r.stderr and "chanel" in r.stderr and "channel" in r.stderr
    assert not (tmp_path / "y").exists(), "no run directory for an invalid scenario"
    r = scout_cmd("simulate", "no-such-scenario", "-o", str(tmp_path / "z"))
    assert r.returncode != 0 and "built-in" in r.stderr
    assert "Traceback" not in r.stderr


def test_live_changes_nothing_in_the_run_and_a_bad_address_is_a_clear_error(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    r = scout_cmd("simulate", "mixed", "-o", str(a), "--duration", "2")
    assert r.returncode == 0, r.stderr
    r = scout_cmd("simulate", "mixed", "-o", str(b), "--duration", "2", "--live", "--live-addr", "127.0.0.1:0")
    assert r.returncode == 0, r.stderr
    assert re.search(r"live: http://127\.0\.0\.1:\d+/ +\(Prometheus: http://127\.0\.0\.1:\d+/metrics\)", r.stderr), r.stderr
    for f in ("packet.parquet", "slot.parquet", "control.parquet"):
        assert pq.read_table(a / "events" / f).equals(pq.read_table(b / "events" / f)), f
    r = scout_cmd("simulate", "mixed", "-o", str(tmp_path / "c"), "--live", "--live-addr", "nowhere")
    assert r.returncode == 1 and "--live" in r.stderr and "nowhere" in r.stderr and "HOST:PORT" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "c").exists()


def test_existing_run_is_not_overwritten_without_force(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert scout_cmd("simulate", "mixed", "-o", str(out), "--duration", "0.2").returncode == 0
    r = scout_cmd("simulate", "mixed", "-o", str(out), "--duration", "0.2")
    assert r.returncode != 0 and "--force" in r.stderr
    assert scout_cmd("simulate", "mixed", "-o", str(out), "--duration", "0.2", "--force").returncode == 0


def test_reader_rejects_incomplete_newer_and_corrupt_runs(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert scout_cmd("simulate", "mixed", "-o", str(out), "--duration", "0.2").returncode == 0
    meta = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**meta, "schema_version": 99}))
    with pytest.raises(RunError, match="schema_version 99"):
        open_run(out)
    (out / "run.json").write_text(json.dumps({**meta, "complete": False}))
    with pytest.raises(RunError, match="incomplete"):
        open_run(out)
    (out / "run.json").write_text(json.dumps(meta))
    (out / "events" / "slot.parquet").write_bytes(b"not parquet")
    with pytest.raises(RunError, match="slot.parquet"):
        _ = open_run(out).slot_events
    with pytest.raises(RunError, match="not a Scout run"):
        open_run(tmp_path)


def test_help_explains_commands() -> None:
    r = scout_cmd("--help")
    assert r.returncode == 0 and "simulate" in r.stdout and "demo" in r.stdout
    r = scout_cmd("simulate", "--help")
    assert "--set" in r.stdout and "srsRAN" in r.stdout
    assert scout.__version__ in scout_cmd("--version").stdout


def test_schema_doc_documents_every_column_and_enum_value() -> None:
    doc = (ROOT / "docs" / "schema.md").read_text()
    for table, cols in _native.schema_columns():
        assert f"`{table}`" in doc, table
        for c in cols:
            assert f"`{c}`" in doc, f"{table}.{c} is not documented in docs/schema.md"
    for enum, values in _native.schema_enums():
        for v in values:
            assert f"`{v}`" in doc, f"{enum} value {v} is not documented in docs/schema.md"


def test_builtin_names_are_not_confused_with_directories(tmp_path: Path) -> None:
    # A run directory named like a built-in scenario (e.g. left by `-o udp-flood`) must not shadow it.
    (tmp_path / "mixed").mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "scout.cli", "simulate", "mixed", "-o", "run", "--duration", "0.2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "run" / "run.json").exists()


def test_the_cli_starts_without_the_analysis_dependencies() -> None:
    # pyarrow alone takes 0.2 s to import: commands that do not read a run (ingest, --help) must
    # not pay it, nor the Ibis/DuckDB stack.
    code = "import sys, scout.cli; print(sorted(m for m in ('pyarrow', 'duckdb', 'ibis') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert scout.open_run is open_run


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    """`scout analyze RUN | head` and the like: the reader closes the pipe before the command has
    written; the command stops with the shell's SIGPIPE status (141), without a traceback."""
    out = tmp_path / "flood"
    assert scout_cmd("simulate", "udp-flood", "-o", str(out), "--duration", "1").returncode == 0
    for args in (["analyze", str(out)], ["query", str(out), "SELECT * FROM packet_events"]):
        p = subprocess.Popen(
            [sys.executable, "-m", "scout.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert p.stdout is not None
        p.stdout.close()
        _, err = p.communicate()
        assert p.returncode == 141, (args, err)
        assert "Traceback" not in err and "BrokenPipe" not in err, (args, err)
