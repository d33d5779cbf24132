"""Shared helpers for the benchmark scripts: median timings and a plain-text table."""

from __future__ import annotations

import statistics
import time


def median_time(fn, repeats: int = 7, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeats`` runs (after ``warmup`` runs)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paired_ratio(fn, ref, repeats: int = 7, warmup: int = 1) -> tuple[float, float]:
    """Time ``fn()`` and ``ref()`` alternately; return the median time of ``fn`` (seconds) and
    the median of the per-repeat ratios ``fn / ref``.

    On a shared, noisy machine the two timings of one repeat see the same load, so their
    ratio drifts much less than ratios of medians taken minutes apart."""
    for _ in range(warmup):
        ref()
        fn()
    times, ratios = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        ref()
        t1 = time.perf_counter()
        fn()
        t2 = time.perf_counter()
        times.append(t2 - t1)
        ratios.append((t2 - t1) / (t1 - t0))
    return statistics.median(times), statistics.median(ratios)


def print_table(title: str, rows: list[tuple], header: tuple) -> None:
    """Print ``rows`` under ``header`` as a Markdown table."""
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for row in rows:
        cells = [f"{c:.3g}" if isinstance(c, float) else str(c) for c in row]
        print("| " + " | ".join(cells) + " |")
