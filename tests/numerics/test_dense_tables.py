"""Every entry of whole correctly rounded tables against MPFR (gmpy2), and the table paths bit
for bit: d = 64, 128, 256 at bases 1e4, 1e5, 1e6, 1e7 for positions 0..4095 (3.7 million
entries), plus long runs and sampled positions up to 2^31 with the attention scaling folded in.

MPFR evaluates theta = base^(-2i/d), m theta, cos and sin at 256 bits, each correctly rounded
at that precision, and ``float()`` rounds the 256-bit value to nearest: the float64 nearest
the exact value unless it lies within about 2^-250 of a midpoint (none does here; the
entries where the two roundings could differ would show as mismatches, and there are none).
"""

from __future__ import annotations

import numpy as np
import pytest

from refimpl import ExactFrequencies, _correct, cos_sin

gmpy2 = pytest.importorskip("gmpy2", reason="the numerics extra (make test-numerics)")

PREC = 256


def _mpfr_tables(pos, dim, base, scale=1.0):
    """Correctly rounded cos and sin tables from MPFR at PREC bits."""
    ctx = gmpy2.get_context()
    ctx.precision = PREC
    b = gmpy2.mpfr(base)
    s = gmpy2.mpfr(scale)
    c_out = np.empty((pos.size, dim // 2))
    s_out = np.empty_like(c_out)
    for i in range(dim // 2):
        theta = b ** (gmpy2.mpfr(-2 * i) / dim)
        for r, m in enumerate(pos.tolist()):
            x = gmpy2.mpfr(m) * theta
            c_out[r, i] = float(s * gmpy2.cos(x))
            s_out[r, i] = float(s * gmpy2.sin(x))
    return c_out, s_out


@pytest.mark.parametrize("dim", [64, 128, 256])
@pytest.mark.parametrize("base", [1e4, 1e5, 1e6, 1e7])
def test_whole_tables_below_2_to_12_equal_mpfr(dim, base):
    pos = np.arange(4096.0)
    stats = {}
    c, s = _correct.correct_cos_sin(pos, ExactFrequencies.power(dim, base), 1.0, stats)
    want_c, want_s = _mpfr_tables(pos, dim, base)
    assert np.array_equal(c, want_c) and np.array_equal(s, want_s)
    assert stats["exact"] <= stats["entries"] * 1e-4  # the exact loop stays rare


def test_sampled_positions_to_the_limit_with_a_scale_equal_mpfr():
    rng = np.random.default_rng(31)
    pos = np.concatenate([rng.integers(-(2**31), 2**31, 3000).astype(float), rng.random(500) * 1e6])
    for dim, base, scale in ((128, 500000.0, 1.0), (64, 1e4, 1.2079441541679836)):
        c, s = cos_sin(pos, dim=dim, base=base, attention_scaling=scale, method="correct")
        want_c, want_s = _mpfr_tables(pos, dim, base, scale)
        assert np.array_equal(c, want_c) and np.array_equal(s, want_s)


def test_a_long_run_equals_its_gathered_and_direct_forms():
    f = ExactFrequencies.power(128, 500000.0)
    pos = np.arange(2**31 - 2**17, 2**31, dtype=np.float64)
    run = cos_sin(pos, f, method="correct")
    perm = np.random.default_rng(0).permutation(pos.size)
    gathered = cos_sin(pos[perm], f, method="correct")
    sample = np.random.default_rng(1).integers(0, pos.size, 2000)
    direct = [cos_sin(pos[k : k + 1], f, method="correct") for k in sample[:200]]
    for j in (0, 1):
        assert np.array_equal(gathered[j], run[j][perm])
        assert np.array_equal(np.concatenate([d[j] for d in direct]), run[j][sample[:200]])
    want_c, want_s = _mpfr_tables(pos[sample], 128, 500000.0)
    assert np.array_equal(run[0][sample], want_c) and np.array_equal(run[1][sample], want_s)
