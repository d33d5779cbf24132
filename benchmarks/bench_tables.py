"""Cost of the RoPE cos/sin tables: fast float64 vs accurate (faithful) vs mpmath.

Run: ``.venv/bin/python benchmarks/bench_tables.py [--positions 1048576] [--dim 128]``.
Prints one table whose ratios are all measured in this run: median wall-clock and CPU seconds
of ``cos_sin(method="fast")`` and ``cos_sin(method="accurate")`` for a (positions, dim/2) table,
and the mpmath oracle's cost per entry, extrapolated to the same table.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from refimpl import cos_sin
from refimpl.numerics import oracle_cos_sin


def _timed(fn, repeats):
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=2**20)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--base", type=float, default=10000.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--oracle-entries", type=int, default=400)
    args = ap.parse_args()

    pos = np.arange(args.positions, dtype=np.float64)
    entries = args.positions * (args.dim // 2)
    cos_sin(pos[:8], dim=args.dim, base=args.base, method="accurate")  # warm the theta cache

    def fast():
        cos_sin(pos, dim=args.dim, base=args.base, method="fast")

    def accurate():
        cos_sin(pos, dim=args.dim, base=args.base, method="accurate")

    # interleave the two so that machine load affects both alike
    f_runs, a_runs = [], []
    for _ in range(args.repeats):
        f_runs.append(_timed(fast, 1))
        a_runs.append(_timed(accurate, 1))
    fw = statistics.median(r[0] for r in f_runs)
    fc = statistics.median(r[1] for r in f_runs)
    aw = statistics.median(r[0] for r in a_runs)
    ac = statistics.median(r[1] for r in a_runs)

    rng = np.random.default_rng(0)
    sample = rng.integers(0, 2**31, args.oracle_entries).astype(np.float64)
    pair = [args.dim // 4]
    ow, _ = _timed(lambda: oracle_cos_sin(sample, dim=args.dim, base=args.base, pairs=pair), 1)
    per_entry = ow / args.oracle_entries

    print(f"table: {args.positions} positions x {args.dim // 2} pairs = {entries} entries")
    print(f"(median of {args.repeats} interleaved runs; mpmath from {args.oracle_entries} entries)")
    print()
    print(f"{'method':<22}{'wall s':>12}{'cpu s':>12}{'ns/entry':>12}{'x fast':>10}")
    print(f"{'fast (float64)':<22}{fw:12.3f}{fc:12.3f}{fw / entries * 1e9:12.1f}{1.0:10.2f}")
    print(
        f"{'accurate (faithful)':<22}{aw:12.3f}{ac:12.3f}{aw / entries * 1e9:12.1f}{aw / fw:10.2f}"
    )
    print(
        f"{'mpmath oracle (extrap.)':<22}{per_entry * entries:12.0f}{'':>12}"
        f"{per_entry * 1e9:12.0f}{per_entry * entries / fw:10.0f}"
    )
    print()
    print(f"accurate / fast: {aw / fw:.2f} (wall), {ac / fc:.2f} (cpu); goal <= 3")
    print(f"mpmath: {per_entry * 1e6:.1f} us per (cos, sin) entry at 50 digits")


if __name__ == "__main__":
    main()
