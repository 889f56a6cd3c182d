"""One percentile definition, and how a summary shows it.

Every percentile Scout prints is the analysis tables' (DuckDB's ``quantile_cont``: position
``(n - 1) q`` in the sorted values, interpolated; ``scout_events::quantile`` in Rust, numpy's
``linear``). A percentile over fewer samples than it needs is marked where it is shown: over 18
samples a p99 is the neighbour of the largest, not a tail.
"""

from __future__ import annotations

import math


def fmt_ms(ns) -> str:
    """``0.047 ms``, or ``-`` for no value."""
    return "-" if ns is None else f"{ns / 1e6:.3f} ms"


def samples_needed(q: float) -> int:
    """The fewest samples for which the q-quantile says something about the tail: ceil(1 / (1 - q))
    (p50: 2, p90: 10, p99: 100, p99.9: 1000); ``scout_events::quantile::samples_needed`` is the same."""
    return math.ceil(1 / (1 - q) - 1e-9)


def pct(name: str, q: float, ns, n: int) -> str:
    """``p99 0.047 ms``, marked when ``n`` samples are fewer than the percentile needs."""
    text = f"{name} {fmt_ms(ns)}"
    if ns is not None and n < samples_needed(q):
        text += f" (of {n:,} samples; a {name} needs {samples_needed(q):,})"
    return text


def pcts(r: dict, n: int, keys: tuple = (("p50", 0.5), ("p99", 0.99))) -> str:
    """``p50 …, p99 …`` of a row with those keys (ns), each marked as :func:`pct` does."""
    return ", ".join(pct(k, q, r.get(k), n) for k, q in keys)
