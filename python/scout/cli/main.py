"""The parser and `main`: one-line errors, unfinished work undone on failure or a stop signal,
and the exit statuses of docs/cli.md."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
import time

from scout import __version__, _native
from scout.cli.analyze import add_analyze, add_export, add_query, add_report
from scout.cli.common import UNFINISHED
from scout.cli.demo import add_demo
from scout.cli.emulate import add_cleanup, add_emulate, add_exec, add_recover
from scout.cli.experiment import add_experiment
from scout.cli.ingest import add_ingest
from scout.cli.probe import add_probe
from scout.cli.simulate import add_simulate
from scout.errors import RunError, Terminated, UsageError, interrupted

EPILOG = """\
examples:
  scout demo                                   simulate, analyse and report the built-in scenarios
  scout simulate udp-flood -o runs/flood       a built-in scenario by name
  scout simulate my.yaml -o runs/x --seed 3 --duration 5 --set cell_cfg.common_scs=15
  scout analyze runs/flood                     journeys, attribution, profiles, queues, drops, phases
  scout report runs/flood                      runs/flood/report/index.html + PNG/PDF figures
  scout report runs/light runs/medium runs/heavy   ... with attribution compared across the runs
  scout query runs/flood "SELECT layer, component, sum(ns)/1e6 AS ms FROM components GROUP BY ALL"
  scout export runs/flood --format perfetto    the 20 slowest packets' journeys for ui.perfetto.dev

docs: docs/schema.md (event tables), docs/attribution.md (analysis tables and their exact rules),
      docs/model.md (what the model implements, with 3GPP clauses), docs/cli.md (every command)
"""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="scout",
        description="Scout: per-packet telemetry and latency attribution for the 5G user plane.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"scout {__version__} (schema v{_native.schema_version()})")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_simulate(sub)
    add_analyze(sub)
    add_report(sub)
    add_export(sub)
    add_query(sub)
    add_ingest(sub)
    add_probe(sub)
    add_emulate(sub)
    add_experiment(sub)
    add_exec(sub)
    add_cleanup(sub)
    add_recover(sub)
    add_demo(sub)
    return p


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: what is wrong and where to read what is accepted."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _undo_unfinished() -> list[str]:
    """Removes what the failed command had begun to write; returns what was removed."""
    removed = []
    while UNFINISHED:
        what, remove = UNFINISHED.pop()
        try:
            if remove() is not False:  # False: there was nothing to remove
                removed.append(what)
        except OSError as e:
            removed.append(f"(could not remove {what}: {e.strerror})")
    return removed


#: Taken, and never given back, by whoever reports the command's end (`_fail`, or the watchdog
#: below), so that it is reported once.
_ENDING = threading.Lock()


def _fail(prog: str, message: str, status: int) -> int:
    _ENDING.acquire()
    removed = _undo_unfinished()
    line = f"{prog}: {message}"
    if removed:
        line += "; removed the " + ", ".join(removed)
    print(line, file=sys.stderr)
    return status


_WAKEUP: list[socket.socket] = []


#: How long a command without a graceful stop may take to answer Ctrl-C or SIGTERM on its own.
PROMPT_STOP_S = 0.5


def _stop_promptly_on_signal(prog: str) -> None:
    """For the commands that only read a run and write derived files (analyze, report, export,
    query): a stop signal is answered within `PROMPT_STOP_S` even when the work is inside a native
    phase that does not look at interrupts (DuckDB finalising a COPY or an aggregate can take
    seconds under load). Python's C-level handler writes each signal to a wakeup socket at once;
    a thread waiting on it gives the main thread its chance, then removes the unfinished files
    and exits with the signal's status. Commands with a graceful stop (emulate, simulate, probe,
    which write a run on Ctrl-C) do not use this."""
    r, w = socket.socketpair()
    w.setblocking(False)
    _WAKEUP.append(w)  # the handler writes to its descriptor: it must stay open
    signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)

    def watch() -> None:
        got = r.recv(1)
        if not got:
            return
        time.sleep(PROMPT_STOP_S)
        if not _ENDING.acquire(blocking=False):
            return  # the main thread is reporting the end itself
        signum = got[0]
        what = "stopped by SIGTERM" if signum == signal.SIGTERM else "interrupted (Ctrl-C)"
        removed = _undo_unfinished()
        line = f"{prog}: {what}"
        if removed:
            line += "; removed the " + ", ".join(removed)
        with contextlib.suppress(OSError):
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        os._exit(128 + signum)

    threading.Thread(target=watch, name="scout-stop", daemon=True).start()


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prog = f"scout {args.command}"
    # SIGTERM stops the work like Ctrl-C: native code sees it at its next check and returns.
    signal.signal(signal.SIGTERM, _on_sigterm)
    if args.command in ("analyze", "report", "export", "query"):
        _stop_promptly_on_signal(prog)
        status = _main(args, prog)
        if status in (128 + signal.SIGINT, 128 + signal.SIGTERM) and argv is None:
            # Stopped: native threads (the attribution kernel, DuckDB's workers) may still be
            # running; a normal interpreter exit would destroy them mid-work (C++'s "terminate
            # called without an active exception", status -6). The unfinished files are gone:
            # leave at once, as the stop watcher does.
            with contextlib.suppress(OSError):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(status)
        return status
    return _main(args, prog)


def _main(args: argparse.Namespace, prog: str) -> int:
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (`scout analyze RUN | head`): stop quietly, as Unix tools do on
        # SIGPIPE, with the shell's status for it. Output still buffered would fail again when
        # Python flushes stdout at exit, so stdout goes to /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        _undo_unfinished()
        return 128 + 13
    except Terminated:
        return _fail(prog, "stopped by SIGTERM", 128 + signal.SIGTERM)
    except KeyboardInterrupt:
        return _fail(prog, "interrupted (Ctrl-C)", 128 + signal.SIGINT)
    except SystemExit as e:
        # The commands' own errors (`raise SystemExit("error: ...")`).
        if isinstance(e.code, str):
            return _fail(prog, e.code, 1)
        _undo_unfinished()
        raise
    except (UsageError, RunError) as e:
        return _fail(prog, f"error: {e}", 2 if isinstance(e, UsageError) else 1)
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        return _fail(prog, f"error: {where}{e.strerror or e}", 1)
    except Exception as e:
        if interrupted(e):
            return _fail(prog, "interrupted (Ctrl-C)", 128 + signal.SIGINT)
        duckdb = sys.modules.get("duckdb")
        if duckdb is not None and isinstance(e, duckdb.Error):
            # DuckDB's I/O errors (a full disk, a read-only run) name the file in their first line.
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return _fail(prog, f"error: {first}", 1)
        raise
