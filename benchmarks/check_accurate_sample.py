"""Independent check of ``cos_sin(method="correct")`` (``"accurate"`` is the same tables): a
fresh random sample of (position, pair) entries against the 50-digit mpmath oracle.

Run: ``.venv/bin/python benchmarks/check_accurate_sample.py [--entries 100000] [--seed 2024]``
(a few minutes). Draws configurations with ``dim`` even in [2, 512] and ``base`` log-uniform
in [2, 1e7], then positions uniform in [0, 2^31) (one in five fractional, one in ten negated)
and a random pair; prints the number of entries that differ from the oracle (the claim is 0),
the smallest |cos| or |sin| met, and how often the fallback tiers ran. The fallback rate is
measured on whole tables (every entry of the sampled configurations' 4 096-row tables), since
the anchored step only runs on runs of integer positions.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from refimpl import ExactFrequencies, _correct, cos_sin
from refimpl.numerics import oracle_cos_sin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--per-config", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--tables", type=int, default=40, help="whole tables for the fallback rate")
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    mismatches, done, smallest = 0, 0, np.inf
    stats: dict = {}
    worst = None
    while done < args.entries:
        n = min(args.per_config, args.entries - done)
        dim = 2 * int(rng.integers(1, 257))
        base = float(np.exp(rng.uniform(np.log(2.0), np.log(1e7))))
        pos = rng.integers(0, 2**31, n).astype(np.float64)
        frac = rng.random(n) < 0.2
        pos[frac] += rng.random(int(frac.sum()))
        pos[rng.random(n) < 0.1] *= -1
        pairs = rng.integers(0, dim // 2, n)
        freqs = ExactFrequencies.power(dim, base)
        c, s = _correct.correct_cos_sin(pos, freqs, 1.0, stats)
        assert np.array_equal((c, s), cos_sin(pos, dim=dim, base=base, method="correct"))
        for j in range(n):
            co, so = oracle_cos_sin(pos[j : j + 1], dim=dim, base=base, pairs=pairs[j : j + 1])
            i = pairs[j]
            if c[j, i] != co[0, 0] or s[j, i] != so[0, 0]:
                mismatches += 1
                worst = (float(pos[j]), int(i), dim, base)
            smallest = min(smallest, abs(co[0, 0]), abs(so[0, 0]))
        done += n
    print(f"entries: {done} (seed {args.seed}), {time.perf_counter() - t0:.0f} s")
    print(f"entries differing from the oracle: {mismatches} (claim: 0)")
    if worst is not None:
        print(f"  one of them (position, pair, dim, base): {worst}")
    print(f"smallest |cos| or |sin| in the sample: {smallest:.3e}")
    print(
        f"sample tables: {stats['entries']} entries computed, {stats['direct']} redone by the "
        f"direct step, {stats['exact']} by the exact integer loop"
    )
    table = {}
    for _ in range(args.tables):  # whole tables: anchored runs of integer positions
        dim = 2 * int(rng.integers(32, 129))
        base = float(np.exp(rng.uniform(np.log(1e4), np.log(1e7))))
        start = int(rng.integers(0, 2**31 - 4096)) if rng.random() < 0.5 else 0
        freqs = ExactFrequencies.power(dim, base)
        _correct.correct_cos_sin(np.arange(start, start + 4096.0), freqs, 1.0, table)
    e = table["entries"]
    print(
        f"whole tables: {e} entries, {table['direct']} undecided by the anchored step "
        f"({table['direct'] / e:.2e}), {table['exact']} by the direct step too "
        f"({table['exact'] / e:.2e})"
    )


if __name__ == "__main__":
    main()
