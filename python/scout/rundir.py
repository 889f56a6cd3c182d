"""The rules for run directories a command writes (``-o DIR``), and removing what Scout wrote.

A run directory holds ``run.json``, ``events/`` and whatever the analysis, report and export add.
Scout writes a run only into a directory that is new, empty, or already a Scout run (with
``--force``), and removes only the names it writes itself: a user's other files in the directory,
or a directory that is not a run, are never touched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from scout.errors import UsageError

#: What Scout writes at the top of a run directory.
RUN_FILES = ("run.json", "run.json.tmp")
RUN_DIRS = ("events", "analysis", "report", "export", "apps")


def is_run(path: Path) -> bool:
    """Whether ``path`` is a directory holding a Scout run (its ``run.json``)."""
    return (path / "run.json").is_file()


def remove_run_outputs(path: Path, keep_dir: bool = False) -> None:
    """Removes what Scout writes in the run directory ``path`` (nothing else); the directory
    itself goes too when that leaves it empty, unless ``keep_dir``."""
    for name in RUN_FILES:
        (path / name).unlink(missing_ok=True)
    for name in RUN_DIRS:
        d = path / name
        if d.is_dir() and not d.is_symlink():
            shutil.rmtree(d)
    for p in path.glob("*.partial"):
        p.unlink(missing_ok=True)
    if not keep_dir:
        try:
            path.rmdir()
        except OSError:
            pass  # other files are the user's


def check(out: Path, force: bool, what: str = "-o") -> bool:
    """Refuses an ``out`` a new run may not be written to; returns whether it exists.

    Accepted: a path that does not exist, an empty directory, or (with ``force``) a directory
    holding a Scout run. Anything else is refused with what is accepted.
    """
    if not out.exists():
        if out.is_symlink():
            raise UsageError(f"{what} {out}: a broken symbolic link; choose another directory")
        return False
    if not out.is_dir():
        raise UsageError(f"{what} {out}: exists and is not a directory; choose a new or empty directory")
    if is_run(out):
        if not force:
            raise UsageError(f"{what} {out}: already holds a run; use --force to replace it or choose another directory")
        return True
    if any(out.iterdir()):
        raise UsageError(
            f"{what} {out}: exists, is not empty and is not a Scout run (no run.json); "
            "choose a new or empty directory (--force replaces Scout runs only)"
        )
    return True


def prepare(out: Path, force: bool, what: str = "-o") -> bool:
    """[check], then removes the Scout files of a run being replaced; returns whether ``out``
    existed."""
    existed = check(out, force, what)
    if existed and is_run(out):
        remove_run_outputs(out, keep_dir=True)
    return existed
