"""What the test files share: running the command line, and the fixtures in ``../shared``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: ``../shared/fixtures`` beside the project (CI has it; a user's clone does not).
FIXTURES = ROOT.parent / "shared" / "fixtures"


def scout_cmd(*args: str, **kw) -> subprocess.CompletedProcess:
    """``scout ARGS`` in a child process, output captured (``kw``: ``subprocess.run``'s, e.g. ``cwd``)."""
    return subprocess.run([sys.executable, "-m", "scout.cli", *args], capture_output=True, text=True, **kw)


def shared_fixture(rel: str) -> Path:
    """``../shared/fixtures/REL``; the test is skipped, saying so, where the fixtures are absent."""
    p = FIXTURES / rel
    if not p.exists():
        pytest.skip(f"{p} not found (the shared fixtures sit beside the project in CI)")
    return p
