"""`scout query` runs what DuckDB accepts, and every SQL and Python example in the README and
docs/ runs as written (against a run of the source the example is about)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import scout_cmd

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


#: How each run the docs name is made (a simulated scenario, or a fixture ingested).
RUNS = {
    "runs/flood": ["simulate", "udp-flood", "--duration", "1"],
    "runs/udp-flood": ["simulate", "udp-flood", "--duration", "1"],
    "runs/mixed": ["simulate", "mixed", "--duration", "1"],
    "runs/testbed": ["ingest", "srsran", str(FIXTURES / "srsran" / "srsran-23.10-info-drb.gnb.log")],
    "runs/upf": ["ingest", "pcap", str(FIXTURES / "pcap" / "n3-n6-ping-any.pcap")],
    # 12 s: the scenario's upload (1 s to 11 s) ends within it.
    "runs/iperf3": ["emulate", "emulate-iperf3", "--duration", "12"],
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A directory with the runs the docs name, made on first use."""
    return tmp_path_factory.mktemp("docs")


def make_run(workdir: Path, name: str) -> None:
    if (workdir / name / "run.json").exists():
        return
    argv = RUNS[name]
    if argv[0] == "ingest" and not Path(argv[2]).exists():
        pytest.skip(f"{argv[2]} is absent (the shared fixtures are not beside this clone)")
    if argv[0] == "emulate" and (os.geteuid() != 0 or shutil.which("iperf3") is None):
        assert not os.environ.get("CI"), "the emulator's examples must run in CI"
        pytest.skip("the emulator needs root and iperf3")
    r = scout_cmd(*argv, "-o", name, cwd=workdir)
    assert r.returncode == 0, r.stderr


def doc_queries() -> list[tuple[str, str, str]]:
    """(where, run, sql) for every `scout query RUN "SQL"` and every ```sql block of the docs."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in re.finditer(r"""scout query (runs/[\w-]+) (?:"(.*?)"|'(.*?)')""", text, re.S):
            line = text[: m.start()].count("\n") + 1
            found.append((f"{doc.name}:{line}", m.group(1), m.group(2) or m.group(3)))
        for m in re.finditer(r"```sql\n(.*?)```", text, re.S):
            line = text[: m.start()].count("\n") + 1
            # The docs' bare SQL blocks are about the srsRAN testbed run (checked: only that doc has them).
            assert doc.name == "ingest-srsran.md", f"{doc.name}:{line}: which run is this SQL block about?"
            found.append((f"{doc.name}:{line}", "runs/testbed", m.group(1)))
    return found


QUERIES = doc_queries()


#: Words the docs and the help use for "your scenario", not a scenario's name.
SCENARIO_PLACEHOLDERS = {"SCENARIO", "my.yaml"}


def scenario_examples() -> list[tuple[str, str]]:
    """(where, scenario) for every `scout simulate X` and `scout emulate X` in the README, docs/,
    the built-in scenarios' comments and the command line's help and messages."""
    sources = [*DOCS, *sorted((ROOT / "scenarios").glob("*.yaml")), *sorted((ROOT / "python" / "scout").glob("*.py"))]
    found = []
    for src in sources:
        text = src.read_text()
        for m in re.finditer(r"scout (?:simulate|emulate) ([^\s`'\"]+)", text):
            if m.group(1).startswith("-") or m.group(1) in SCENARIO_PLACEHOLDERS:
                continue
            found.append((f"{src.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}", m.group(1)))
    return found


def test_every_scenario_an_example_names_exists() -> None:
    """A user copies an example: the scenario it names is a file of the tree or a built-in one."""
    from scout.cli import resolve_scenario

    examples = scenario_examples()
    assert len(examples) >= 10, examples
    missing = []
    for where, name in examples:
        path = ROOT / name
        if not path.is_file():
            try:
                resolve_scenario(name, builtin_only=True)
            except SystemExit:
                missing.append(f"{where}: {name}")
    assert not missing, "examples name scenarios that do not exist:\n" + "\n".join(missing)


def test_the_readme_names_every_built_in_scenario_and_benchmark() -> None:
    """A scenario or benchmark the README does not name is one a user will not find."""
    readme = (ROOT / "README.md").read_text()
    listed = readme.split("Built-in scenarios (`scenarios/`):", 1)[1].split("\n\n", 1)[0]
    names = set(re.findall(r"`([a-z0-9|-]+)`", listed))
    # `attribution-light|medium|heavy` names three scenarios.
    names |= {f"attribution-{level}" for n in names for level in n.removeprefix("attribution-").split("|") if "|" in n}
    missing = [f.stem for f in sorted((ROOT / "scenarios").glob("*.yaml")) if f.stem not in names]
    assert not missing, f"scenarios/ has scenarios the README's list does not name: {missing}"
    unnamed = [f.name for f in sorted((ROOT / "bench").glob("*.sh")) if f"bench/{f.name}" not in readme]
    assert not unnamed, f"bench/ has benchmarks the README does not name: {unnamed}"


def test_docs_cli_describes_every_command_and_option() -> None:
    """docs/cli.md is the reference of the command line: every command and long option is in it."""
    import argparse

    from scout.cli import build_parser

    doc = (ROOT / "docs" / "cli.md").read_text()
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    missing = []
    for name, parser in commands.choices.items():
        if f"scout {name}" not in doc:
            missing.append(f"scout {name}")
        for action in parser._actions:
            missing += [
                f"scout {name} {o}" for o in action.option_strings if o.startswith("--") and o != "--help" and o not in doc
            ]
    assert not missing, f"docs/cli.md does not describe: {missing}"


def test_the_docs_have_queries() -> None:
    assert len(QUERIES) >= 6, QUERIES


@pytest.mark.parametrize("where,run,sql", QUERIES, ids=[q[0] for q in QUERIES])
def test_every_sql_example_in_the_docs_runs(workdir: Path, where: str, run: str, sql: str) -> None:
    assert run in RUNS, f"{where}: no recipe for {run}; add one to RUNS"
    make_run(workdir, run)
    r = scout_cmd("query", run, sql, "--format", "csv", cwd=workdir)
    assert r.returncode == 0, f"{where}: {r.stderr}"
    assert r.stdout.strip(), f"{where}: no output"


def python_examples() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for m in re.finditer(r"```python\n(.*?)```", text, re.S):
            if "import scout" in m.group(1):
                found.append((f"{doc.name}:{text[: m.start()].count(chr(10)) + 1}", m.group(1)))
    return found


@pytest.mark.parametrize("where,code", python_examples(), ids=[p[0] for p in python_examples()])
def test_every_python_example_in_the_docs_runs(workdir: Path, where: str, code: str) -> None:
    for name in set(re.findall(r'"(runs/[\w-]+)"', code)):
        make_run(workdir, name)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=workdir)
    assert r.returncode == 0, f"{where}: {r.stderr}"


# ---- scout query as DuckDB users expect ---------------------------------------------------------


@pytest.fixture(scope="module")
def flood(workdir: Path) -> Path:
    make_run(workdir, "runs/flood")
    return workdir / "runs" / "flood"


def query(run: Path, sql: str, *extra: str) -> subprocess.CompletedProcess:
    r = scout_cmd("query", str(run), sql, *extra)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r


def test_duckdb_statements_run_as_written(flood: Path, tmp_path: Path) -> None:
    from scout import analysis

    shown = query(flood, "SHOW TABLES", "--format", "csv").stdout.split()
    assert set(shown[1:]) == set(analysis.TABLES) | set(analysis.TABLE_NAMES)
    listed = query(flood, "SELECT table_name FROM information_schema.tables ORDER BY 1", "--format", "csv").stdout
    assert set(listed.split()[1:]) == set(analysis.TABLES) | set(analysis.TABLE_NAMES)
    cols = query(flood, "DESCRIBE journeys", "--format", "csv").stdout
    assert "delay_ns" in cols and "status" in cols
    assert "null_percentage" in query(flood, "SUMMARIZE packet_events").stdout
    assert "memory_limit" in query(flood, "PRAGMA database_size").stdout
    out = tmp_path / "drops.csv"
    query(flood, f"COPY (SELECT * FROM drops) TO '{out}' (HEADER)")
    assert out.read_text().startswith("layer") or "," in out.read_text()
    two = query(flood, "SET threads = 1; SELECT 41 + 1 AS answer", "--format", "csv").stdout.split()
    assert two == ["answer", "42"]


def test_limit_zero_prints_no_rows_and_nullable_integers_stay_integers(flood: Path) -> None:
    r = query(flood, "SELECT pkt, sn FROM packet_events", "--limit", "0")
    assert r.stdout.split() == ["pkt", "sn"] and "(0 rows)" in r.stderr
    r = query(flood, "SELECT * FROM (VALUES (1, 7), (2, NULL)) t(a, b) ORDER BY a", "--format", "csv")
    assert r.stdout.split() == ["a,b", "1,7", "2,"], r.stdout
    r = query(flood, "(SELECT sn FROM packet_events WHERE sn IS NOT NULL LIMIT 3) UNION ALL SELECT NULL")
    for v in r.stdout.split()[1:]:
        assert v == "None" or re.fullmatch(r"\d+", v), r.stdout


def test_the_grafana_dashboard_queries_only_metrics_the_live_view_exposes() -> None:
    """docs/grafana-scout.json and docs/live.md name exactly the metrics `/metrics` writes."""
    import json

    root = Path(__file__).resolve().parents[2]
    source = (root / "crates" / "scout-live" / "src" / "metrics.rs").read_text()
    exposed = set(re.findall(r'head\(\s*&mut out,\s*"(scout_\w+)"', source))
    assert len(exposed) >= 12, exposed
    dash = json.loads((root / "docs" / "grafana-scout.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {re.sub(r"_(bucket|sum|count)$", "", m) for e in exprs for m in re.findall(r"scout_\w+", e)}
    assert used <= exposed, used - exposed
    documented = set(re.findall(r"`(scout_\w+)`", (root / "docs" / "live.md").read_text()))
    assert exposed <= documented, exposed - documented
