"""Exact numbers behind the correctly rounded tables: Python-integer fixed point against
mpmath, the exact frequencies, the error-free transformations, and the hard positions.

Hard cases are found two ways: the continued-fraction convergents of theta_i / pi and of
2 theta_i / pi (the positions below 2^31 where sin or cos of pair i comes closest to zero,
:func:`hard_positions`, shared with tests/test_correct.py), and a brute-force scan of a block
of positions for the smallest |cos|, |sin| in the table.
"""

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import ExactFrequencies, _correct, _exact, cos_sin
from refimpl.numerics import oracle_cos_sin, ulp_error

LIMIT = 2**31
CASES = [(128, 10000.0), (128, 500000.0), (64, 2.0), (512, 1e7), (96, 1e6)]


def _theta_mp(dim, base, i):
    return mpmath.mpf(base) ** (-mpmath.mpf(2 * i) / dim)


def _convergent_denominators(x, limit=LIMIT, odd_numerator=False):
    """Denominators q < limit of the continued-fraction convergents p/q of the real x > 0."""
    out = []
    p0, q0, p1, q1 = 0, 1, 1, 0
    y = x
    for _ in range(80):
        a = int(mpmath.floor(y))
        p0, q0, p1, q1 = p1, q1, a * p1 + p0, a * q1 + q0
        if q1 >= limit:
            break
        if q1 > 0 and (not odd_numerator or p1 % 2):
            out.append(q1)
        frac = y - a
        if frac == 0:
            break
        y = 1 / frac
    return out


def hard_positions(dim, base, pairs):
    """Positions below 2^31 where sin (convergents of theta/pi) or cos (convergents of
    2 theta / pi with odd numerator) of one of ``pairs`` comes closest to zero."""
    found = set()
    with mpmath.workdps(80):
        for i in pairs:
            t = _theta_mp(dim, base, int(i))
            found.update(_convergent_denominators(t / mpmath.pi))
            found.update(_convergent_denominators(2 * t / mpmath.pi, odd_numerator=True))
    return np.array(sorted(found), dtype=np.float64)


# ------------------------------------------------------------------ fixed point, frequencies
def _mp(q):
    return mpmath.mpf(q.numerator) / q.denominator


@pytest.mark.parametrize("bits", [64, 200, 640])
def test_fixed_point_logarithm_exponential_and_pi(bits):
    with mpmath.workprec(bits + 64):
        for n in (1, 2, 3, 10**7, 2**61 - 1, 10**40 + 7):
            assert abs(mpmath.mpf(_exact._ln_int(n, bits)) / 2**bits - mpmath.log(n)) < 4 * (
                mpmath.mpf(2) ** -bits
            )
        for y in (-700.5, -3.25, 0.0, 1e-9, 42.0):
            got = _mp(_exact._exp_int(int(mpmath.mpf(y) * 2**bits), bits))
            want = mpmath.exp(mpmath.mpf(int(mpmath.mpf(y) * 2**bits)) / 2**bits)
            assert abs(got / want - 1) < mpmath.mpf(2) ** -(bits - 20)
        assert abs(_mp(_exact._pi_fraction(bits)) - mpmath.pi) < mpmath.mpf(2) ** -bits


@pytest.mark.parametrize(("dim", "base"), CASES)
def test_exact_frequencies_are_the_real_power(dim, base):
    f = ExactFrequencies.power(dim, base)
    hi, mid, lo = f.triple()
    with mpmath.workdps(100):
        for i, t in enumerate(f.approx(300)):
            want = _theta_mp(dim, base, i)
            assert abs(_mp(t) / want - 1) < mpmath.mpf(2) ** -300
            assert hi[i] == float(want)  # the float64 nearest the real theta
            rel = abs((mpmath.mpf(hi[i]) + mpmath.mpf(mid[i]) + mpmath.mpf(lo[i]) - want) / want)
            assert rel < mpmath.mpf(2) ** -150


def test_binary_frequencies_are_taken_exactly():
    f = ExactFrequencies.binary([1.0, 0.1])
    assert [Fraction(v) for v in f.approx(100)] == [Fraction(1.0), Fraction(0.1)]
    assert len(f) == 2 and np.array_equal(f.float64(), [1.0, 0.1])
    with pytest.raises(ValueError, match="values must be positive"):
        ExactFrequencies.binary([1.0, 0.0])
    with pytest.raises(ValueError, match="divisors must have dim // 2 = 2 entries"):
        ExactFrequencies.power(4, 10.0, divisors=[1.0])


@given(st.floats(-1e15, 1e15), st.floats(-1e15, 1e15))
def test_two_sum_is_error_free(a, b):
    s, e = _correct._two_sum(np.float64(a), np.float64(b))
    assert Fraction(float(s)) + Fraction(float(e)) == Fraction(a) + Fraction(b)
    s2, e2 = _correct._two_sum_o(*(np.array([v]) for v in (a, b)), *(np.empty(1) for _ in "set"))
    assert (s2[0], e2[0]) == (s, e)
    d, f = _correct._two_sum_o(
        np.array([a]), np.array([b]), np.empty(1), np.empty(1), np.empty(1), negate=True
    )
    assert Fraction(float(d[0])) + Fraction(float(f[0])) == Fraction(a) - Fraction(b)


@given(st.floats(2.0**-40, 2.0**31), st.booleans(), st.floats(1e-8, 8.0))
def test_two_product_is_error_free(a, negative, b):
    # magnitudes as in RoPE tables (no underflow in the error term)
    a, b = np.float64(-a if negative else a), np.float64(b)
    p, e = _correct._two_prod(a, *_correct._split(a), b, *_correct._split(b))
    assert Fraction(float(p)) + Fraction(float(e)) == Fraction(float(a)) * Fraction(float(b))


def test_the_smallest_entries_of_a_scanned_block_are_correctly_rounded():
    dim, base = 128, 10000.0
    rng = np.random.default_rng(11)
    block = rng.integers(0, LIMIT, 2**14).astype(np.float64)
    c, s = cos_sin(block, dim=dim, base=base, method="correct")
    # the 12 smallest |cos| and |sin| entries of the whole (2^14, 64) table
    flat = np.concatenate([np.abs(c).ravel(), np.abs(s).ravel()])
    idx = np.argsort(flat)[:24] % c.size
    rows, cols = np.unravel_index(idx, c.shape)
    assert flat.min() < 1e-5
    for r, i in zip(rows, cols, strict=True):
        co, so = oracle_cos_sin(block[r : r + 1], dim=dim, base=base, pairs=[i])
        assert c[r, i] == co[0, 0] and s[r, i] == so[0, 0]


def test_correct_beats_the_fast_path_by_orders_of_magnitude_at_long_positions():
    pos = np.array([1e6 + 3, 2**31 - 1.0])
    fast = cos_sin(pos, dim=128, method="fast")[0]
    exact = cos_sin(pos, dim=128, method="correct")[0]
    co, _ = oracle_cos_sin(pos, dim=128, pairs=np.arange(64))
    assert np.array_equal(exact, co)
    assert ulp_error(fast, co).max() > 1e3


def test_every_table_path_refuses_angles_outside_the_domain():
    """Angles above 2^31 rad are refused by every path that computes exact angles."""
    from refimpl.numerics import PIPELINES
    from refimpl.streaming import iter_cos_sin

    assert _exact.MAX_ANGLE == 2.0**31
    with pytest.raises(ValueError, match=r"positions: method='accurate'"):
        PIPELINES["accurate"]([2**33], dim=8, base=1e4)
    with pytest.raises(ValueError, match=r"positions: method='correct'"):
        list(iter_cos_sin([0, 2**33], dim=8, method="correct"))
    with pytest.raises(ValueError, match=r"positions: method='correct'"):
        next(iter_cos_sin(2**31, [1.5], method="correct"))  # a count: checked up front
