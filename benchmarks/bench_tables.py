"""Cost and accuracy of building RoPE cos/sin tables in float64, measured in one run.

Rows: torch float64 (one thread, if installed), refimpl's fast tables (``np.cos``/``np.sin`` of
the float64 angle), angle addition (``cos_sin(method="addition")`` in memory, and streamed by
``refimpl.streaming``), the faithful
``cos_sin(method="accurate")`` with given frequencies and with exact ``base**(-2i/d)``, and the
mpmath oracle's cost per entry extrapolated to the whole table. Timings are medians of
repeats interleaved across methods, so machine load affects all rows alike; errors are in
float64 ulps against the mpmath oracle on a random sample of entries of the same table.

Run: ``cd benchmarks && ../.venv/bin/python bench_tables.py [--log2-positions 20] [--dim 128]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import print_table

import refimpl
from refimpl.numerics import oracle_cos_sin, ulp_error
from refimpl.streaming import iter_cos_sin


def _addition(n, theta, keep=True):
    """Angle-addition tables of positions 0..n-1, streamed in chunks (joined when ``keep``)."""
    parts = [
        (c, s) if keep else None
        for _, c, s in iter_cos_sin(n, theta, method="addition", chunk=1 << 16)
    ]
    if keep:
        return np.concatenate([c for c, _ in parts]), np.concatenate([s for _, s in parts])
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2-positions", type=int, default=20)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--base", type=float, default=500000.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sample", type=int, default=300, help="entries checked against mpmath")
    args = ap.parse_args()
    n, d, b = 1 << args.log2_positions, args.dim, args.base
    pos = np.arange(n, dtype=np.float64)
    theta = refimpl.inv_freq(d, b)
    refimpl.cos_sin(pos[:8], dim=d, base=b, method="accurate")  # warm the exact-theta cache

    methods = {
        "refimpl cos_sin fast (np.cos of the float64 angle)": lambda: refimpl.cos_sin(pos, theta),
        "refimpl cos_sin method='addition' (in memory)": lambda: refimpl.cos_sin(
            pos, theta, method="addition"
        ),
        "refimpl streaming method='addition'": lambda: _addition(n, theta, keep=False),
        "refimpl cos_sin accurate, given inv_freq": lambda: refimpl.cos_sin(
            pos, theta, method="accurate"
        ),
        "refimpl cos_sin accurate, exact base**(-2i/d)": lambda: refimpl.cos_sin(
            pos, dim=d, base=b, method="accurate"
        ),
    }
    try:
        import torch

        torch.set_num_threads(1)
        tt, tp = torch.from_numpy(theta), torch.from_numpy(pos)

        def torch_tables():
            ang = torch.outer(tp, tt)
            return torch.cos(ang).numpy(), torch.sin(ang).numpy()

        methods = {"torch float64 cos/sin (1 thread)": torch_tables, **methods}
    except ImportError:
        pass

    times = {name: [] for name in methods}
    for _ in range(args.repeats):  # interleaved repeats
        for name, fn in methods.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    med = {name: statistics.median(v) for name, v in times.items()}

    rng = np.random.default_rng(0)
    rows_idx = rng.integers(0, n, args.sample)
    pair = int(rng.integers(0, d // 2))
    t0 = time.perf_counter()
    exact_c, _ = oracle_cos_sin(pos[rows_idx], theta, pairs=[pair])
    per_entry = (time.perf_counter() - t0) / args.sample
    exact_exp_c, _ = oracle_cos_sin(pos[rows_idx], dim=d, base=b, pairs=[pair])

    def err(name, fn):
        table = _addition(n, theta) if "streaming" in name else fn()
        c = table[0][rows_idx, pair]
        ref = exact_exp_c if "exact base" in name else exact_c
        return float(np.max(ulp_error(c, ref[:, 0])))

    fast_t = med["refimpl cos_sin fast (np.cos of the float64 angle)"]
    torch_t = med.get("torch float64 cos/sin (1 thread)")
    rows = []
    for name, fn in methods.items():
        rows.append(
            (name, med[name] * 1e3, med[name] / fast_t,
             med[name] / torch_t if torch_t else "-", err(name, fn))
        )  # fmt: skip
    total = per_entry * n * (d // 2)
    rows.append(
        ("mpmath oracle (per-entry cost x entries)", total * 1e3, total / fast_t,
         total / torch_t if torch_t else "-", 0.0)
    )  # fmt: skip
    print_table(
        f"cos/sin tables, {n} positions x {d // 2} pairs, base {b:g}, float64 "
        f"(median of {args.repeats} interleaved runs; errors on {args.sample} sampled entries "
        f"of pair {pair} against mpmath)",
        rows,
        ("method", "median ms", "/ fast", "/ torch", "max error (ulp)"),
    )
    acc = med["refimpl cos_sin accurate, exact base**(-2i/d)"] / fast_t
    print(f"\naccurate (exact base) / fast = {acc:.2f} (goal <= 3)")
    print(f"mpmath oracle: {per_entry * 1e6:.0f} us per entry")
    if torch_t:
        add = med["refimpl cos_sin method='addition' (in memory)"] / torch_t
        met = "met" if add <= 1.0 else "NOT met"
        print(
            f"cos_sin(method='addition') / torch float64 = {add:.2f} "
            f"(goal <= 1 at the fast path's accuracy) -> {met}"
        )


if __name__ == "__main__":
    main()
