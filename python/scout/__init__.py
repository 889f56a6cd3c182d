"""Scout: per-packet telemetry and latency attribution for the 5G user plane."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scout.events import Run, open_run

__all__ = ["Run", "open", "open_run", "__version__"]
__version__ = "0.1.0"


def open(run, **kw):  # noqa: A001 - `scout.open(RUN)` is the documented entry point
    """A run's analysis tables as Ibis tables (``.journeys``, ``.components``, ``.profiles``, …).

    Analyses the run first when ``RUN/analysis/`` is missing or older than its events.
    """
    from scout.analysis import open as open_analysis

    return open_analysis(run, **kw)


def __getattr__(name: str):
    # `Run` and `open_run` load pyarrow (0.2 s): only when asked for, so that commands that do not
    # read a run (`scout ingest`, `scout --help`) start without it.
    if name in ("Run", "open_run"):
        from scout import events

        return getattr(events, name)
    raise AttributeError(f"module 'scout' has no attribute {name!r}")
