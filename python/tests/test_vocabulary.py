"""One vocabulary of `control_events.kind` for every producer (issue 22): the list in
`crates/scout-events/src/schema.rs` (the closed enum `ControlKind`, so no producer can write another)
is documented in `docs/schema.md`, and what the simulator, the srsRAN ingest and the pcap ingest
write stays inside it (the emulator's kinds are checked by its own tests, which need root)."""

from __future__ import annotations

import json
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
    body = re.search(r"\n    ControlKind \{\n(.*?)\n    \}\n", text, re.S)
    assert body, "ControlKind is in schema.rs"
    return re.findall(r'= "([a-z0-9_]+)",', body.group(1))


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
    # One header, whoever wrote the run (scout_events::header): what it covers is a field of it.
    meta = json.loads((out / "run.json").read_text())
    header = {"source", "covers", "tool", "wall_clock_epoch_s", "clock_domains", "slices"}
    assert header <= set(meta), f"run.json header fields missing: {sorted(header - set(meta))}"
    covers = {"simulate": "end_to_end", "srsran": "gnb", "pcap": "upf"}[args[1] if args[0] == "ingest" else args[0]]
    assert meta["covers"] == covers and meta["tool"]["name"] == "scout", meta
    if covers == "upf":
        un = meta["unmatched"]
        assert all(un[s]["total"] == sum(un[s]["by_reason"].values()) for s in ("n3", "n6")), un
    # `sn` means one thing on RLC SDU rows whoever wrote them (issue 52): the packet's PDCP COUNT,
    # the `sn` of its PDCP rows (RLC's own SN is on its segment, tx and rx rows only).
    pe = f"read_parquet('{out}/events/packet.parquet')"
    con = duckdb.connect()
    # And `flow` is one value per packet on every row (a packet's CU and DU rows alike).
    split = con.execute(f"SELECT count(*) FROM (SELECT pkt FROM {pe} GROUP BY pkt HAVING count(DISTINCT flow) > 1)")
    assert split.fetchone()[0] == 0, "packets whose rows carry different flows"
    # ... and names an entry of run.json `flows`, whoever wrote the run.
    listed = {f["flow"] for f in json.loads((out / "run.json").read_text()).get("flows", [])}
    written = {r[0] for r in con.execute(f"SELECT DISTINCT flow FROM {pe}").fetchall()}
    assert written <= listed, f"flows not in run.json flows: {sorted(written - listed)[:10]}"
    if "ingest pcap" in " ".join(args[:2]):
        return
    rows = con.execute(
        f"""WITH p AS (SELECT DISTINCT pkt, sn FROM {pe} WHERE layer = 'pdcp' AND sn IS NOT NULL),
                 r AS (SELECT pkt, sn FROM {pe} WHERE layer = 'rlc' AND sn IS NOT NULL
                       AND point NOT IN ('segment', 'tx', 'rx'))
            SELECT count(*), count(*) FILTER (p.sn IS NOT NULL AND p.sn <> r.sn),
                   count(*) FILTER (p.sn IS NULL) FROM r LEFT JOIN p USING (pkt)"""
    ).fetchone()
    n, differ, without_pdcp = rows
    assert differ == 0, f"{differ} of {n} RLC SDU rows carry an sn other than their packet's PDCP COUNT"
    assert without_pdcp == 0, f"{without_pdcp} of {n} RLC SDU rows carry an sn while their packet has no PDCP COUNT"
