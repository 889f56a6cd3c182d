"""What the commands share: built-in scenarios, progress on stderr, the unfinished work `main`
undoes on failure, output directories and input files checked before any work."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from scout import _native, rundir
from scout.errors import UsageError


def scenarios_dir() -> Path:
    """The built-in scenarios shipped with the source tree."""
    here = Path(__file__).resolve()
    for base in [here.parents[1] / "scenarios", here.parents[3] / "scenarios"]:
        if base.is_dir():
            return base
    raise SystemExit("error: built-in scenarios not found (expected scenarios/ beside python/)")


def resolve_scenario(name: str, builtin_only: bool = False) -> Path:
    """A scenario file: NAME as a path to a file, else the built-in scenario of that name."""
    p = Path(name)
    if p.is_file() and not builtin_only:
        return p
    builtin = scenarios_dir() / f"{name}.yaml"
    if builtin.is_file():
        return builtin
    names = ", ".join(sorted(f.stem for f in scenarios_dir().glob("*.yaml")))
    raise SystemExit(f"error: {name}: no such file, and not a built-in scenario; built-in: {names}")


class Progress:
    """Progress on stderr: a one-line bar on a terminal, else a line per 10 % (CI, a pipe, a log)."""

    def __init__(self, label: str):
        self.label = label
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.tenth = 0

    def __call__(self, frac: float, note: str = "") -> None:
        if self.tty:
            width = 30
            n = int(frac * width)
            line = f"\r{self.label} [{'#' * n}{'.' * (width - n)}] {frac * 100:5.1f}% {note}"
            sys.stderr.write(line[:120].ljust(min(len(line), 120)))
            sys.stderr.flush()
        elif int(frac * 10) > self.tenth:
            self.tenth = int(frac * 10)
            print(f"{self.label}: {self.tenth * 10:3d} %" + (f" ({note})" if note else ""), file=sys.stderr, flush=True)

    def done(self, finished: bool = True) -> float:
        wall = time.monotonic() - self.t0
        if finished and not self.tty and 0 < self.tenth < 10:
            self(1.0)  # the last line says it finished
        if self.tty:
            sys.stderr.write("\r" + " " * 120 + "\r")
        return wall


class Stages(Progress):
    """Progress over named stages (analysis, report): each stage counts as an equal share."""

    def __init__(self, label: str, stages: int):
        super().__init__(label)
        self.stages = max(stages, 1)
        self.done_stages = 0

    def stage(self, name: str) -> None:
        self(min(self.done_stages / self.stages, 1.0), name)
        self.done_stages += 1


#: What the running command has begun to write and not finished: (description, remove), undone
#: by `main` when the command fails or is interrupted.
UNFINISHED: list[tuple[str, Callable[[], bool | None]]] = []


def begin(what: str, remove: Callable[[], bool | None]) -> None:
    UNFINISHED.append((what, remove))


def finished() -> None:
    UNFINISHED.pop()


def fmt_ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.2f}"


LIVE_ADDR = "127.0.0.1:9470"


def live_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--live",
        action="store_true",
        help=f"watch {what} as it runs: a web page of queue occupancy and sojourn, time per layer, drops, per-UE "
        "throughput and app RTT, updated every few hundred ms, and Prometheus metrics at /metrics (docs/live.md)",
    )
    p.add_argument(
        "--live-addr",
        default=LIVE_ADDR,
        metavar="HOST:PORT",
        help=f"where --live listens (default {LIVE_ADDR}: this machine only; port 0 picks a free one)",
    )


def live_server(args: argparse.Namespace):
    """The live view the command's run feeds (``--live``), listening and announced; None without it."""
    if not getattr(args, "live", False):
        return None
    try:
        server = _native.LiveServer(args.live_addr)
    except ValueError as e:
        raise SystemExit(f"error: --live: {e}") from None
    print(f"live: {server.url}  (Prometheus: {server.url}metrics)", file=sys.stderr, flush=True)
    return server


def check_writable(d: Path, what: str = "the analysis tables") -> None:
    """Refuses, before any work, a directory the command cannot write into (a read-only mount)."""
    if not os.access(d, os.W_OK):
        import errno

        code = errno.EROFS if os.access(d, os.R_OK) else errno.EACCES
        raise OSError(code, f"{os.strerror(code)} ({what} are written there)", str(d))


FORCE_HELP = "replace an existing Scout run in -o (only the files Scout wrote there are removed)"


def run_output_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="run directory to create (new or empty)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)


def prepare_run(out: Path, force: bool, what: str) -> None:
    """Checks ``-o`` (rundir.prepare) and registers the unfinished run for removal. The native
    writer removes what it wrote itself; this removes a directory Scout created empty."""
    existed = rundir.prepare(out, force)
    begin(f"unfinished {what} {out}", lambda: rundir.remove_run_outputs(out, keep_dir=existed) if out.exists() else None)


def prepare_output(args: argparse.Namespace) -> Path:
    out = Path(args.output)
    prepare_run(out, args.force, "run")
    return out


def keep_going_arg(p: argparse.ArgumentParser, when: str) -> None:
    p.add_argument(
        "--keep-going",
        action="store_true",
        help=f"exit 0 even when {when}; the run keeps what came before the damage either way and says what was "
        "lost; without it the exit status is 3",
    )


def check_inputs(paths, what: str) -> None:
    """Input files named on the command line exist and are readable, before any work."""
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise UsageError(f"{what} {p}: no such file")
        if p.is_dir():
            raise UsageError(f"{what} {p}: is a directory; give a file")
        try:
            with open(p, "rb") as f:
                f.read(1)
        except OSError as e:
            raise UsageError(f"{what} {p}: cannot be read: {e.strerror}") from None


def progress_printer(t0: float, tty: bool):
    """A progress callback: a bar on a terminal, one line per tenth otherwise (CI, a pipe)."""
    shown = [-1]

    def progress(done: int, total: int) -> None:
        if not total:
            return
        frac = done / total
        rate = done / 1e6 / max(time.monotonic() - t0, 1e-9)
        if tty:
            n = int(frac * 30)
            sys.stderr.write(
                f"\ringesting [{'#' * n}{'.' * (30 - n)}] {frac * 100:5.1f}% ({done / 1e6:,.0f} MB, {rate:,.0f} MB/s)"
            )
            sys.stderr.flush()
        elif int(frac * 10) > shown[0]:
            shown[0] = int(frac * 10)
            print(f"ingesting: {frac:4.0%} ({done / 1e6:,.0f} MB, {rate:,.0f} MB/s)", file=sys.stderr, flush=True)

    return progress


def damaged_status(source: str, damaged: list, keep_going: bool) -> int:
    """Exit status 3 when an input was damaged part-way (the run holds what was readable), 0 with
    --keep-going or when nothing was damaged."""
    if damaged and not keep_going:
        print(
            f"scout ingest {source}: {len(damaged)} damaged input(s): the run holds what was readable; exit status 3 "
            "(--keep-going: 0)",
            file=sys.stderr,
        )
        return 3
    return 0


def ms_text(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f} ms"


def emulator_unavailable(tools: tuple[str, ...] = ()) -> str | None:
    """Why `scout emulate` (and the applications ``tools`` it is to run) cannot run here, if it cannot."""
    if os.geteuid() != 0:
        return "it needs root (network namespaces, TUN devices): run it as root or with sudo"
    if not Path("/dev/net/tun").exists():
        return "this machine has no /dev/net/tun (the kernel's TUN driver)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    return next((f"{t} is not installed" for t in tools if shutil.which(t) is None), None)
