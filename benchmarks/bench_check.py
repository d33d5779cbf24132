"""Cost of one check_rope at d = 128 (blind fit included), as a multiple of one apply_rope call
over the same probe: the identity rows at every default position, ``(P * d, d)``.

Rows: a plain RoPE checked blind and against a base; a YaRN profile checked blind (the family
fit searches the registry's parameter grid) and against its spec; the same probe judged from
recorded rows with check_rope_arrays. Each row is timed alternately with the apply_rope call
(``paired_ratio``), so machine load affects both alike.

Run: ``cd benchmarks && OPENBLAS_NUM_THREADS=1 ../.venv/bin/python bench_check.py [--dim 128]``
(one BLAS thread: on a shared machine a multi-threaded LAPACK makes the per-position least
squares of check_rope_arrays tens of times slower than its single-threaded cost).
"""

from __future__ import annotations

import argparse
import types

import numpy as np
from _common import paired_ratio, print_table

import refimpl
from refimpl.check import check_rope, check_rope_arrays
from refimpl.scaling import ROPE_SCALINGS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    d = args.dim
    probe = check_rope(refimpl.apply_rope, dim=d).positions  # the default probe positions
    x = np.tile(np.eye(d), (len(probe), 1))  # (P * d, d): what the checker feeds
    pos = np.repeat(probe, d)

    def one_apply():
        refimpl.apply_rope(x, pos)

    yarn = ROPE_SCALINGS["yarn"](dim=d, base=1e4, factor=8.0, original_max_position=4096)

    def yarn_fn(v, p):
        return refimpl.apply_rope(
            v, p, inv_freq=yarn.inv_freq, attention_scaling=yarn.attention_scaling
        )

    spec = types.SimpleNamespace(
        dim=d, rotary_dim=d, base=1e4, inv_freq=yarn.inv_freq, pairing="half",
        attention_scaling=yarn.attention_scaling, rope_type="yarn", params={"factor": 8.0},
    )  # fmt: skip
    rows_pos = np.repeat(probe, d)
    rows_x = np.random.default_rng(0).standard_normal((len(rows_pos), d))
    rows_y = refimpl.apply_rope(rows_x, rows_pos)
    cases = [
        ("plain RoPE, blind", lambda: check_rope(refimpl.apply_rope, dim=d)),
        ("plain RoPE, base given", lambda: check_rope(refimpl.apply_rope, dim=d, base=1e4)),
        ("YaRN, blind (family fit)", lambda: check_rope(yarn_fn, dim=d)),
        ("YaRN, expected spec", lambda: check_rope(yarn_fn, dim=d, expected=spec)),
        ("recorded rows (check_rope_arrays)",
         lambda: check_rope_arrays(rows_pos, rows_x, rows_y, dim=d)),
    ]  # fmt: skip
    rows = []
    for name, fn in cases:
        t, ratio = paired_ratio(fn, one_apply, repeats=args.repeats)
        rows.append((name, t * 1e3, ratio))
    print_table(
        f"check_rope at d = {d}, {len(probe)} probe positions ({len(pos)} x {d} probe rows)",
        rows,
        ("check", "time (ms)", "x one apply_rope over the probe"),
    )


if __name__ == "__main__":
    main()
