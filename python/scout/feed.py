"""A UE's RAN events, live, during ``scout emulate``: the client of the emulator's per-UE feed
(docs/ue-view.md), as CellNinjia's applications read a modem's diagnostics (seed 004 §4.2).

An application in the UE's namespace (a scenario ``apps:`` entry, or ``scout exec RUN ue0 --``)
finds its UE's socket in ``$SCOUT_FEED``; from anywhere else give the run directory and the UE::

    from scout.feed import Feed

    with Feed() as feed:                       # $SCOUT_FEED
        for ev in feed.events(kinds={"harq", "retx_event"}):
            if ev["kind"] == "retx_event":
                print(ev["dir"], ev["value"] / 1e6, "ms")

    Feed(run="runs/emu", ue=1)                 # the run's run.json names the sockets

Each event is a dict: ``t_ns`` (the model's time, ns since the emulation started), ``kind``
(``harq`` for a HARQ transmission, else the ``control_events`` kind: ``bsr``, ``sr``, ``grant``,
``rlc_status``, ``poll``, ``harq_fail``, ``retx_event``, ``anbr``, ``anbr_query``, ``app_rtt``),
``seq`` (per UE from 0) and that kind's fields. ``Feed.missed`` counts the events this subscriber
did not get (gaps in ``seq``: it read too slowly and the emulator's backlog for it overflowed).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable, Iterator
from pathlib import Path


class FeedError(Exception):
    """No feed to connect to: what was looked for and where."""


def socket_path(run: str | os.PathLike | None = None, ue: int = 0) -> str:
    """UE ``ue``'s feed socket: ``$SCOUT_FEED`` when no run is given, else the one the run's
    ``run.json`` names."""
    if run is None:
        path = os.environ.get("SCOUT_FEED")
        if not path:
            raise FeedError("$SCOUT_FEED is not set: run inside an emulation's UE namespace, or give run= and ue=")
        return path
    meta_path = Path(run) / "run.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as e:
        raise FeedError(f"{meta_path}: cannot read the run's metadata ({e})") from None
    paths = (meta.get("emulator") or {}).get("feed") or []
    if isinstance(paths, dict):  # a finished run: its totals, the sockets gone
        raise FeedError(f"{run}: that emulation has ended; its feeds are gone")
    if not 0 <= ue < len(paths):
        raise FeedError(f"{run}: no feed for UE {ue} (the emulation has {len(paths)} UE feed(s))")
    return paths[ue]


class Feed:
    """One subscription to a UE's feed: ``events()`` yields its events in order."""

    def __init__(
        self,
        path: str | None = None,
        *,
        run: str | os.PathLike | None = None,
        ue: int = 0,
        connect_timeout: float = 5.0,
    ) -> None:
        self.path = path or socket_path(run, ue)
        self.missed = 0
        deadline = time.monotonic() + connect_timeout
        while True:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self._sock.connect(self.path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as e:
                self._sock.close()
                if time.monotonic() >= deadline:
                    raise FeedError(f"{self.path}: no emulation serves this feed ({e.strerror})") from None
                time.sleep(0.05)
        self._file = self._sock.makefile("rb")
        hello = json.loads(self._file.readline() or b"{}")
        if hello.get("kind") != "hello":
            raise FeedError(f"{self.path}: not a Scout feed (first line {hello!r})")
        #: ``CLOCK_MONOTONIC`` (ns) at the emulation's time 0: ``t0_ns + ev["t_ns"]`` is when an
        #: event happened on this machine's monotonic clock.
        self.t0_ns: int = hello["t0_monotonic_ns"]
        self.ue: int = hello["ue"]
        #: The cell as the UE's configuration tells it: ``prbs``, ``slot_ns``, the TDD
        #: ``pattern``, ``sr_period_slots``, ``periodic_bsr_ms``, ``retx_bsr_ms``.
        self.cell: dict = hello.get("cell") or {}
        self._next_seq = hello.get("next_seq")

    def events(self, kinds: Iterable[str] | None = None, until_s: float | None = None) -> Iterator[dict]:
        """The events as they come (those of ``kinds`` only, if given), until the emulation ends
        or ``until_s`` seconds have passed."""
        wanted = set(kinds) if kinds is not None else None
        end = None if until_s is None else time.monotonic() + until_s
        while True:
            if end is not None:
                left = end - time.monotonic()
                if left <= 0:
                    return
                self._sock.settimeout(left)
            try:
                line = self._file.readline()
            except TimeoutError:
                return
            if not line:
                return
            ev = json.loads(line)
            seq = ev.get("seq")
            if seq is not None:
                if self._next_seq is not None and seq > self._next_seq:
                    self.missed += seq - self._next_seq
                self._next_seq = seq + 1
            if wanted is None or ev.get("kind") in wanted:
                yield ev

    def lag_ns(self, ev: dict) -> int:
        """How long after it happened ``ev`` is being handled now (a HARQ row's ``t_ns`` is its
        slot's start: it is known once its outcome is, k1 slots later)."""
        return time.monotonic_ns() - (self.t0_ns + ev["t_ns"])

    def close(self) -> None:
        self._file.close()
        self._sock.close()

    def __enter__(self) -> Feed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
