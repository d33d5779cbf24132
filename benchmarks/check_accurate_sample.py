"""Independent check of ``cos_sin(method="accurate")``: 10^5 random (position, pair) entries
against the 50-digit mpmath oracle.

Run: ``.venv/bin/python benchmarks/check_accurate_sample.py [--entries 100000] [--seed 2024]``
(a few minutes). Draws configurations with ``dim`` even in [2, 512] and ``base`` log-uniform
in [2, 1e7], then positions uniform in [0, 2^31) (one in five fractional) and a random pair;
prints the largest ulp error (the claim is <= 1), the histogram of ulp errors, and, for
comparison, the fast float64 path on the same entries.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from refimpl import cos_sin
from refimpl.numerics import oracle_cos_sin, ulp_error


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--per-config", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    acc_ulps, fast_ulps, smallest = [], [], np.inf
    worst = (0.0, None)
    done = 0
    while done < args.entries:
        n = min(args.per_config, args.entries - done)
        dim = 2 * int(rng.integers(1, 257))
        base = float(np.exp(rng.uniform(np.log(2.0), np.log(1e7))))
        pos = rng.integers(0, 2**31, n).astype(np.float64)
        frac = rng.random(n) < 0.2
        pos[frac] += rng.random(int(frac.sum()))
        pairs = rng.integers(0, dim // 2, n)
        ca, sa = cos_sin(pos, dim=dim, base=base, method="accurate")
        cf, sf = cos_sin(pos, dim=dim, base=base, method="fast")
        for j in range(n):
            co, so = oracle_cos_sin(pos[j : j + 1], dim=dim, base=base, pairs=pairs[j : j + 1])
            i = pairs[j]
            e = max(
                ulp_error(ca[j : j + 1, i : i + 1], co)[0, 0],
                ulp_error(sa[j : j + 1, i : i + 1], so)[0, 0],
            )
            acc_ulps.append(e)
            fast_ulps.append(
                max(
                    ulp_error(cf[j : j + 1, i : i + 1], co)[0, 0],
                    ulp_error(sf[j : j + 1, i : i + 1], so)[0, 0],
                )
            )
            smallest = min(smallest, abs(co[0, 0]), abs(so[0, 0]))
            if e > worst[0]:
                worst = (e, (float(pos[j]), int(i), dim, base))
        done += n
    acc = np.array(acc_ulps)
    fast = np.array(fast_ulps)
    print(f"entries: {acc.size} (seed {args.seed}), {time.perf_counter() - t0:.0f} s")
    print(f"smallest |cos| or |sin| in the sample: {smallest:.3e}")
    print(f"accurate: max ulp error {acc.max():.3f}  (claim: <= 1)")
    for v in (0.0, 1.0):
        print(f"  entries with ulp error == {v:.0f}: {int(np.sum(acc == v))}")
    print(f"  entries with ulp error > 1: {int(np.sum(acc > 1))}")
    print(f"  worst entry (position, pair, dim, base): {worst[1]}")
    print(f"fast float64: max ulp error {fast.max():.3e}, median {np.median(fast):.3e}")


if __name__ == "__main__":
    main()
