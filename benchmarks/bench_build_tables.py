"""cos/sin table building in float64: refimpl's fast tables (np.cos/np.sin of the float64 angle),
angle addition (streaming, method="addition"), accurate (when available), torch float64, and the
mpmath oracle on a small slice; medians, ratios to torch, and the max error against long double.

Run: .venv/bin/python benchmarks/bench_build_tables.py [--log2-positions 20]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import median_time, print_table

import refimpl
from refimpl.streaming import iter_cos_sin


def addition_table(n, theta):
    """The whole table from the streaming angle-addition chunks."""
    return [(c, s) for _, c, s in iter_cos_sin(n, theta, method="addition", chunk=1 << 16)]


def max_error(n, theta, build):
    """Max |error| over the last 4096 positions against a long-double evaluation."""
    pos = np.arange(n - 4096, n)
    c, _ = build(pos)
    exact = np.cos(np.multiply.outer(pos.astype(np.longdouble), theta.astype(np.longdouble)))
    return float(np.max(np.abs(c - exact)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2-positions", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    n = 1 << args.log2_positions
    theta = refimpl.inv_freq(128, 500000.0)  # 64 frequencies
    pos = np.arange(n)
    rows = []
    t_fast = median_time(lambda: refimpl.cos_sin(pos, theta), args.repeats)
    t_add = median_time(lambda: addition_table(n, theta), args.repeats)
    t_torch = None
    try:
        import torch

        torch.set_num_threads(1)
        tf = torch.from_numpy(theta)

        def torch_tables():
            ang = torch.outer(torch.arange(n, dtype=torch.float64), tf)
            return torch.cos(ang), torch.sin(ang)

        t_torch = median_time(torch_tables, args.repeats)
        err_torch = max_error(
            n,
            theta,
            lambda p: (torch.cos(torch.outer(torch.from_numpy(p * 1.0), tf)).numpy(), None),
        )
        rows.append(("torch float64 cos/sin (1 thread)", t_torch * 1e3, 1.0, err_torch))
    except ImportError:
        pass

    def rel(t):
        return t / t_torch if t_torch else float("nan")

    err_fast = max_error(n, theta, lambda p: refimpl.cos_sin(p, theta))
    rows.append(
        ("refimpl cos_sin fast (np.cos of float64 angle)", t_fast * 1e3, rel(t_fast), err_fast)
    )

    def add_slice(p):
        parts = list(iter_cos_sin(p, theta, method="addition", chunk=4096))
        return parts[0][1], parts[0][2]

    err_add = max_error(n, theta, add_slice)
    rows.append(("refimpl streaming method='addition'", t_add * 1e3, rel(t_add), err_add))
    try:
        small = np.arange(n - 256, n)
        t_acc = median_time(lambda: refimpl.cos_sin(small, theta, method="accurate"), 1, 0)
        t_acc *= n / small.size
        err_acc = max_error(n, theta, lambda p: refimpl.cos_sin(p, theta, method="accurate"))
        rows.append(
            ("refimpl cos_sin accurate (scaled from 256 rows)", t_acc * 1e3, rel(t_acc), err_acc)
        )
    except (ImportError, ModuleNotFoundError, NotImplementedError) as exc:
        rows.append(
            (f"refimpl cos_sin accurate: unavailable ({type(exc).__name__})", "-", "-", "-")
        )
    try:
        import mpmath

        mpmath.mp.dps = 30
        few = [(m, f) for m in (n - 1,) for f in theta[:16]]
        t_or = median_time(lambda: [mpmath.cos(mpmath.mpf(m) * mpmath.mpf(f)) for m, f in few], 3)
        t_or *= n * theta.size / len(few)
        rows.append(
            ("mpmath oracle, 30 digits (scaled from 16 entries)", t_or * 1e3, rel(t_or), 0.0)
        )
    except ImportError:
        pass
    print_table(
        f"cos/sin tables, {n} positions x {theta.size} frequencies, float64",
        rows,
        ("method", "median ms", "/ torch", "max |err| at the last 4096 positions"),
    )


if __name__ == "__main__":
    main()
