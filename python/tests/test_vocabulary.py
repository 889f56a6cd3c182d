"""One vocabulary of `control_events.kind` for every producer (issue 22): the list in
`crates/scout-events/src/schema.rs` (`CONTROL_KINDS`) is documented in `docs/schema.md`, and what
the simulator, the srsRAN ingest and the pcap ingest write stays inside it (the emulator's kinds
are checked by its own tests, which need root)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"


def vocabulary() -> list[str]:
    text = (ROOT / "crates/scout-events/src/schema.rs").read_text()
    body = re.search(r"pub const CONTROL_KINDS: &\[&str\] = &\[(.*?)\];", text, re.S)
    assert body, "CONTROL_KINDS is in schema.rs"
    return re.findall(r'"([a-z0-9_]+)"', body.group(1))


def kinds_of(run: Path) -> set[str]:
    con = duckdb.connect()
    rows = con.execute(f"SELECT DISTINCT kind FROM read_parquet('{run}/events/control.parquet')").fetchall()
    return {r[0] for r in rows}


def test_every_kind_is_documented() -> None:
    kinds = vocabulary()
    assert len(kinds) == len(set(kinds)) and len(kinds) > 30
    doc = (ROOT / "docs/schema.md").read_text()
    missing = [k for k in kinds if f"`{k}`" not in doc]
    assert not missing, f"kinds without a description in docs/schema.md: {missing}"


@pytest.mark.parametrize(
    ("args", "fixture"),
    [
        (["simulate", "scenarios/mixed.yaml", "--duration", "3"], None),
        (["simulate", "scenarios/udp-flood.yaml", "--duration", "4"], None),
        (["ingest", "srsran"], "srsran/srsran-23.10-info-drb.gnb.log"),
        (["ingest", "srsran"], "srsran/srsran-24.10-debug-srb.gnb.log"),
        (["ingest", "pcap"], "pcap/pfcp-small.pcap"),
    ],
)
def test_every_producer_writes_only_the_vocabulary(tmp_path: Path, args: list[str], fixture: str | None) -> None:
    if fixture is not None:
        path = FIXTURES / fixture
        if not path.exists():
            pytest.skip(f"{path} is absent (the shared fixtures are not beside this clone)")
        args = [*args, str(path)]
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "scout.cli", *args, "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    written = kinds_of(out)
    assert written, "the run wrote control events"
    assert written <= set(vocabulary()), f"outside the vocabulary: {sorted(written - set(vocabulary()))}"
