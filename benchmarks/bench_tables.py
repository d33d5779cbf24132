"""Cost and accuracy of building RoPE cos/sin tables in float64, measured in one run.

For each table size (positions x dim, default 4 096 x 128 and 131 072 x 128, base 5e5), rows:
plain ``np.cos``/``np.sin`` of ``np.outer(positions, inv_freq)``, torch float64 (one thread, if
installed), refimpl's ``cos_sin`` methods ``"fast"``, ``"addition"`` (in memory and streamed),
``"accurate"`` and ``"correct"`` (integer positions, and the same count of fractional
positions ``m + 0.5``), and the mpmath oracle's cost per entry extrapolated to the whole table.
Timings are CPU seconds of this process (``time.process_time``: every method here runs on one
thread, and other processes on a shared machine do not count), medians of repeats interleaved
across methods; compare ratios only within one run. Errors are in float64 ulps against the mpmath
oracle on a random sample of entries of the same table (``correct`` must show 0).

Single-threaded: ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` are set to 1 before NumPy loads.
``--profile`` adds where the time of ``method="correct"`` goes (cProfile, own time per
function) for the largest table.

Run: ``cd benchmarks && ../.venv/bin/python bench_tables.py [--sizes 4096 131072] [--dim 128]``
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import cProfile
import io
import pstats
import statistics
import time

import numpy as np
from _common import print_table

import refimpl
from refimpl.numerics import oracle_cos_sin, ulp_error
from refimpl.streaming import iter_cos_sin

FAST = "cos_sin fast (np.cos of the float64 angle)"
CORRECT = "cos_sin method='correct', integer positions"
CORRECT_FRAC = "cos_sin method='correct', fractional positions m + 0.5"


def _streamed(n, theta):
    """Angle-addition tables of positions 0..n-1, streamed in chunks (not kept)."""
    for _ in iter_cos_sin(n, theta, method="addition", chunk=1 << 16):
        pass


def _methods(n, d, b):
    """name -> (callable returning (cos, sin) or None, positions, exact frequencies?)."""
    pos = np.arange(n, dtype=np.float64)
    frac = pos + 0.5
    theta = refimpl.inv_freq(d, b)
    out = {
        "np.cos/np.sin of np.outer(positions, inv_freq)": (
            lambda: (np.cos(np.outer(pos, theta)), np.sin(np.outer(pos, theta))),
            pos,
            False,
        ),
        FAST: (lambda: refimpl.cos_sin(pos, theta), pos, False),
        "cos_sin method='addition' (in memory)": (
            lambda: refimpl.cos_sin(pos, theta, method="addition"),
            pos,
            False,
        ),
        "streaming method='addition' (not kept)": (lambda: _streamed(n, theta), pos, False),
        "cos_sin method='accurate', exact base**(-2i/d)": (
            lambda: refimpl.cos_sin(pos, dim=d, base=b, method="accurate"),
            pos,
            True,
        ),
        CORRECT: (lambda: refimpl.cos_sin(pos, dim=d, base=b, method="correct"), pos, True),
        CORRECT_FRAC: (
            lambda: refimpl.cos_sin(frac, dim=d, base=b, method="correct"),
            frac,
            True,
        ),
    }
    try:
        import torch

        torch.set_num_threads(1)
        tt, tp = torch.from_numpy(theta), torch.from_numpy(pos)

        def torch_tables():
            ang = torch.outer(tp, tt)
            return torch.cos(ang).numpy(), torch.sin(ang).numpy()

        out = {"torch float64 cos/sin (1 thread)": (torch_tables, pos, False), **out}
    except ImportError:
        pass
    return out, theta


def bench(n, d, b, repeats, sample, rng):
    """Median times (interleaved repeats), ratios to the fast path and sampled ulp errors."""
    methods, theta = _methods(n, d, b)
    refimpl.cos_sin(np.arange(300.0), dim=d, base=b, method="correct")  # warm the caches
    times = {name: [] for name in methods}
    for _ in range(repeats):
        for name, (fn, _, _) in methods.items():
            t0 = time.process_time()
            fn()
            times[name].append(time.process_time() - t0)
    med = {name: statistics.median(v) for name, v in times.items()}
    ratio = {  # per-repeat ratio to the fast path of the same repeat, then the median
        name: statistics.median(t / f for t, f in zip(v, times[FAST], strict=True))
        for name, v in times.items()
    }
    rows_idx = rng.integers(0, n, sample)
    pair = rng.integers(0, d // 2, sample)
    errors = {}
    oracles = {}
    for name, (fn, pos, exact) in methods.items():
        tables = fn()
        if tables is None:
            errors[name] = "-"
            continue
        key = (exact, pos[0])
        if key not in oracles:
            oracles[key] = [
                oracle_cos_sin(
                    pos[r : r + 1], *(() if exact else (theta,)), dim=d, base=b, pairs=[i]
                )
                for r, i in zip(rows_idx, pair, strict=True)
            ]
        worst = 0.0
        for (oc, os_), r, i in zip(oracles[key], rows_idx, pair, strict=True):
            for got, want in ((tables[0], oc), (tables[1], os_)):
                worst = max(
                    worst, float(ulp_error(np.asarray(got)[r : r + 1, i : i + 1], want)[0, 0])
                )
        errors[name] = worst
    t0 = time.perf_counter()
    oracle_cos_sin(np.arange(50.0), dim=d, base=b, pairs=[1])
    per_entry = (time.perf_counter() - t0) / 50
    return med, ratio, errors, per_entry


def profile_correct(n, d, b, top=10) -> str:
    """cProfile's own time per function of one ``method="correct"`` table."""
    pos = np.arange(n, dtype=np.float64)
    prof = cProfile.Profile()
    prof.enable()
    refimpl.cos_sin(pos, dim=d, base=b, method="correct")
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 131072])
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--base", type=float, default=500000.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sample", type=int, default=200, help="entries checked against mpmath")
    ap.add_argument("--profile", action="store_true", help="where the correct path's time goes")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    d, b = args.dim, args.base
    for n in args.sizes:
        med, ratio, errors, per_entry = bench(n, d, b, args.repeats, args.sample, rng)
        rows = [(name, med[name] * 1e3, ratio[name], errors[name]) for name in med]
        total = per_entry * n * (d // 2)
        rows.append(("mpmath oracle (per-entry cost x entries)", total * 1e3,
                     total / med[FAST], 0.0))  # fmt: skip
        print_table(
            f"cos/sin tables, {n} positions x {d // 2} pairs (dim {d}), base {b:g}, float64, "
            f"one thread (CPU ms, median of {args.repeats} interleaved runs; ratio = median of "
            f"per-run ratios; errors on {args.sample} sampled entries against mpmath)",
            rows,
            ("method", "median CPU ms", "/ fast", "max error (ulp)"),
        )
        print(
            f"\ncorrect / fast = {ratio[CORRECT]:.2f} (integer positions; goal about 1.5, at "
            f"most 2), {ratio[CORRECT_FRAC]:.2f} (fractional positions)"
        )
    if args.profile:
        print(f"\nwhere method='correct' spends its time ({max(args.sizes)} positions):\n")
        print(profile_correct(max(args.sizes), d, b))


if __name__ == "__main__":
    main()
