"""The ``scout`` command line. Each command parses its options and calls a library function.

One module per group of commands, each with its options (``add_*``) beside its code (``cmd_*``):
``simulate``, ``analyze`` (with report, export, query), ``ingest``, ``probe``, ``emulate`` (with
exec, cleanup, recover), ``experiment``, ``demo``; ``common`` holds what they share and ``main``
the parser, the exit statuses and the handling of failures and stop signals.
"""

import os

# Analysis runs in DuckDB; numpy's BLAS threads would only spin beside the Rust readers.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from scout.cli.analyze import run_analysis  # noqa: E402
from scout.cli.common import resolve_scenario  # noqa: E402
from scout.cli.main import build_parser, main  # noqa: E402

__all__ = ["build_parser", "main", "resolve_scenario", "run_analysis"]
