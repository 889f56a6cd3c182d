"""Argument types for the command line: each checks one value and says what is accepted.

argparse turns the ``ArgumentTypeError`` into ``scout CMD: error: argument --x: MESSAGE``.
"""

from __future__ import annotations

import argparse
import math


def _number(text: str, kind, what: str):
    try:
        v = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if kind is float and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not finite; accepted: {what}")
    return v


def int_range(lo: int, hi: int | None = None, what: str = "an integer"):
    """An integer in ``lo..hi`` (``hi`` None: no upper bound)."""
    accepted = f"{what} from {lo:,} to {hi:,}" if hi is not None else f"{what} >= {lo:,}"

    def parse(text: str) -> int:
        v = _number(text, int, accepted)
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{v} is out of range; accepted: {accepted}")
        return v

    parse.__name__ = "integer"  # argparse names the type in its messages
    return parse


def float_range(lo: float, hi: float | None = None, lo_open: bool = False, what: str = "a number of seconds"):
    """A finite number above ``lo`` (``lo_open``) or from ``lo``, up to ``hi``."""
    low = f"> {lo:g}" if lo_open else f">= {lo:g}"
    accepted = f"{what} {low}" + (f" and <= {hi:g}" if hi is not None else "")

    def parse(text: str) -> float:
        v = _number(text, float, accepted)
        if (v <= lo if lo_open else v < lo) or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{text} is out of range; accepted: {accepted}")
        return v

    parse.__name__ = "number"
    return parse


def id_list(text: str) -> list[int]:
    """Comma-separated packet ids (integers >= 0)."""
    ids = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise argparse.ArgumentTypeError(f"{part!r} in {text!r} is not a packet id; accepted: integers >= 0, e.g. 17,42")
        ids.append(int(part))
    return ids


def power_of_two(text: str) -> int:
    """A power of two from 1 to 2^20 (the probe's table sets)."""
    v = _number(text, int, "a power of two")
    if v < 1 or v > 1 << 20 or v & (v - 1):
        raise argparse.ArgumentTypeError(f"{text} is not a power of two from 1 to 1,048,576")
    return v


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def size(text: str) -> int:
    """A size in bytes: a number with an optional binary unit K, M, G or T (``1G``, ``512M``,
    ``1.5GiB``, ``800000000``), at least 64 MiB."""
    accepted = "a size such as 1G, 512M, 1.5GiB or a number of bytes, at least 64M"
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = t[-1:] if t[-1:] in _UNITS else ""
    v = _number(t[: len(t) - len(unit)] if unit else t, float, accepted) * _UNITS[unit]
    if v < 64 << 20:
        raise argparse.ArgumentTypeError(f"{text} is too small; accepted: {accepted}")
    return int(v)


size.__name__ = "size"

U64 = int_range(0, 2**64 - 1)
NONNEGATIVE = int_range(0)
PORT = int_range(1, 65535, "a UDP port")
POSITIVE = int_range(1)
SECONDS_POSITIVE = float_range(0.0, lo_open=True)
SECONDS_NONNEGATIVE = float_range(0.0)
