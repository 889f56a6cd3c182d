"""The house stays livable (issue 52): no Rust function over 120 lines and no Rust file over 800
lines outside its tests and generated tables. What is over today is listed below with its size:
it may shrink, never grow, and nothing new may join it (a ratchet until each is split)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_FN_LINES = 120
MAX_FILE_LINES = 800

# Generated tables, not code to read.
GENERATED = {"crates/scout-ran/src/phy/bicm_table.rs"}

# (file, function): its length today. Each is issue 52's to split into named steps.
LONG_FUNCTIONS: dict[tuple[str, str], int] = {}
# File: its length today (tests excluded). Each is issue 52's to split.
LONG_FILES: dict[str, int] = {}

FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?((const|async|unsafe)\s+|extern\s+\"C\"\s+)*fn\s+(\w+)")
STRING = re.compile(r'"([^"\\]|\\.)*"|\'([^\'\\]|\\.)\'')


def code_lines(path: Path) -> list[str]:
    """The file's lines up to its unit-test module (`#[cfg(test)]` followed by `mod`)."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("mod "):
            return lines[:i]
    return lines


def functions(lines: list[str]) -> list[tuple[str, int, int]]:
    """(name, first line, length in lines) of each function with a body, by its braces."""
    out = []
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, started = 0, False
        for j in range(i, len(lines)):
            code = STRING.sub('""', lines[j].split("//")[0])
            for ch in code:
                if ch == "{":
                    depth, started = depth + 1, True
                elif ch == "}":
                    depth -= 1
            if started and depth == 0:
                out.append((m.group(5), i + 1, j - i + 1))
                break
            if not started and code.rstrip().endswith(";"):
                break  # a declaration without a body
    return out


def sources() -> list[Path]:
    return [
        p
        for p in sorted((ROOT / "crates").glob("**/*.rs"))
        if "/tests/" not in p.as_posix() and p.name != "tests.rs" and str(p.relative_to(ROOT)) not in GENERATED
    ]


def test_no_function_or_file_grows_past_its_bound() -> None:
    files = sources()
    assert len(files) > 100, "the Rust sources were not found"
    over = []
    for p in files:
        rel = str(p.relative_to(ROOT))
        lines = code_lines(p)
        bound = LONG_FILES.get(rel, MAX_FILE_LINES)
        if len(lines) > bound:
            over.append(f"{rel}: {len(lines)} lines (bound {bound})")
        for name, line, n in functions(lines):
            bound = LONG_FUNCTIONS.get((rel, name), MAX_FN_LINES)
            if n > bound:
                over.append(f"{rel}:{line}: fn {name} is {n} lines (bound {bound})")
    assert not over, "split these into named steps (issue 52):\n" + "\n".join(over)


def test_the_exceptions_are_still_exceptions() -> None:
    """An entry whose function or file is now within the bound (or gone) leaves the list."""
    stale = []
    for rel, name in LONG_FUNCTIONS:
        p = ROOT / rel
        found = functions(code_lines(p)) if p.exists() else []
        if not any(n > MAX_FN_LINES for f, _, n in found if f == name):
            stale.append(f"{rel} fn {name}")
    for rel in LONG_FILES:
        p = ROOT / rel
        if not p.exists() or len(code_lines(p)) <= MAX_FILE_LINES:
            stale.append(rel)
    assert not stale, "within the bound now: remove from the exceptions: " + ", ".join(stale)


def test_the_measure_counts_a_function_by_its_braces() -> None:
    lines = [
        "pub(crate) fn a(x: u8,",
        "    y: u8) -> u8 {",
        '    let s = "{";',
        "    if x > y { x } else { y } // }",
        "}",
        "fn decl();",
        "fn b() {}",
    ]
    assert functions(lines) == [("a", 1, 5), ("b", 7, 1)]


def crate_imports(src: Path) -> dict[str, set[str]]:
    """Each module of a crate's `src/` (a file, or a directory with its `mod.rs` and parts) and the
    sibling modules its code (not its tests or comments) names as `crate::module`."""
    files = {p.stem: [p] for p in src.glob("*.rs")}
    files |= {d.name: sorted(d.glob("**/*.rs")) for d in src.iterdir() if (d / "mod.rs").is_file()}
    out = {}
    for m, paths in sorted(files.items()):
        code = "\n".join(line.split("//")[0] for p in paths for line in code_lines(p))
        out[m] = set(re.findall(r"crate::(\w+)", code)) & set(files) - {m}
    return out


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of `graph`, or [] when there is none."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str]:
        state[m] = 1
        path.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return path[path.index(d) :] + [d]
            if d not in state and (c := visit(d)):
                return c
        state[m] = 2
        path.pop()
        return []

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return []


def test_the_analysis_kernels_modules_import_no_circle() -> None:
    """scout-analysis: the shared types (dicts, codes, table) below the stages, no stage importing
    one that imports it (issue 52)."""
    graph = crate_imports(ROOT / "crates" / "scout-analysis" / "src")
    assert {"dicts", "journey", "read", "write"} <= set(graph), graph
    assert not cycle(graph), " -> ".join(cycle(graph))


def test_the_circle_finder_finds_a_circle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []
