"""Timing helpers shared by the benchmarks and the demo: warm up, repeat,
keep the median, so one slow run (a page fault, the other process) does not
decide a ratio."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_seconds(fn: Callable[[], object], repeats: int = 5, warmup: int = 1, budget_s: float = 10.0) -> float:
    """Median wall time of fn() over `repeats` runs after `warmup` runs.

    Stops early (with at least one timed run) once `budget_s` is spent, so a
    slow reference algorithm on a big shape cannot stall the whole table.
    """
    for _ in range(warmup):
        fn()
    times = []
    spent = 0.0
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        spent += elapsed
        if spent > budget_s:
            break
    return statistics.median(times)


def conv2d_flops(n: int, c: int, h: int, w: int, k: int, kh: int, kw: int, oh: int, ow: int, groups: int = 1) -> float:
    """Multiply-adds x 2 of a direct convolution of that shape."""
    return 2.0 * n * k * oh * ow * (c // groups) * kh * kw


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    last = len(headers) - 1
    # Numbers right-aligned; the first (name) and last (note) columns left.
    out += [
        "  ".join(c.rjust(w) if 0 < i < last else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]
    return "\n".join(out)
