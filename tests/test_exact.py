"""The accurate (faithfully rounded) cos/sin path against a 50-digit mpmath oracle.

Hard cases are found two ways: the continued-fraction convergents of theta_i / pi and of
2 theta_i / pi (the positions below 2^31 where sin or cos of pair i comes closest to zero),
and a brute-force scan of a block of positions for the smallest |cos|, |sin| in the table.
"""

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import _exact, cos_sin
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


def max_ulp(pos, dim, base, pairs):
    """Largest ulp error of the accurate path over the given positions and pairs."""
    c, s = cos_sin(pos, dim=dim, base=base, method="accurate")
    co, so = oracle_cos_sin(pos, dim=dim, base=base, pairs=pairs)
    return float(max(ulp_error(c[:, pairs], co).max(), ulp_error(s[:, pairs], so).max()))


# ------------------------------------------------------------------ exact constants, EFTs
@pytest.mark.parametrize(("dim", "base"), CASES)
def test_exact_frequencies_are_triple_doubles_of_the_real_power(dim, base):
    hi, mid, lo = _exact.exact_inv_freq3(dim, base)
    with mpmath.workdps(80):
        for i in range(dim // 2):
            t = _theta_mp(dim, base, int(i))
            assert hi[i] == float(t)  # correctly rounded leading part
            rel = abs((mpmath.mpf(hi[i]) + mpmath.mpf(mid[i]) + mpmath.mpf(lo[i]) - t) / t)
            assert rel < mpmath.mpf(2) ** -150


def test_two_pi_pieces():
    c = _exact._two_pi5()
    for part in c[:4]:  # Cody-Waite pieces: k * part exact for |k| < 2^29
        assert abs(Fraction(part).numerator).bit_length() <= 24  # at most 24 significant bits
    with mpmath.workdps(80):
        err = abs(sum(mpmath.mpf(x) for x in c) - 2 * mpmath.pi)
        assert err < mpmath.mpf(2) ** -150


@given(st.floats(-1e15, 1e15), st.floats(-1e15, 1e15))
def test_two_sum_is_error_free(a, b):
    s, e = _exact._two_sum(np.float64(a), np.float64(b))
    assert Fraction(float(s)) + Fraction(float(e)) == Fraction(a) + Fraction(b)


@given(st.floats(2.0**-40, 2.0**31), st.booleans(), st.floats(1e-8, 8.0))
def test_two_product_is_error_free(a, negative, b):
    # magnitudes as in RoPE tables (no underflow in the error term)
    a, b = np.float64(-a if negative else a), np.float64(b)
    p, e = _exact._two_prod(a, *_exact._split(a), b, *_exact._split(b))
    assert Fraction(float(p)) + Fraction(float(e)) == Fraction(float(a)) * Fraction(float(b))


# ------------------------------------------------------------------------- accuracy
def test_platform_cos_sin_are_within_one_ulp_on_the_reduced_range():
    # the algorithm's assumption: float64 cos/sin are faithful on [-pi, pi]
    r = np.random.default_rng(7).uniform(-np.pi, np.pi, 400)
    co, so = oracle_cos_sin(r, inv_freq=[1.0])
    assert ulp_error(np.cos(r)[:, None], co).max() <= 1.0
    assert ulp_error(np.sin(r)[:, None], so).max() <= 1.0


@pytest.mark.parametrize(("dim", "base"), CASES)
def test_accurate_is_faithful_on_log_spaced_and_random_positions(dim, base):
    rng = np.random.default_rng(dim + int(base))
    pos = np.unique(
        np.concatenate(
            [[0, 1, 2, 3], np.round(np.logspace(1, 9.33, 40)), rng.integers(0, LIMIT, 40)]
        )
    ).astype(np.float64)
    pairs = np.unique(np.r_[0, 1, 2, dim // 4, dim // 2 - 1, rng.integers(0, dim // 2, 3)])
    assert max_ulp(pos, dim, base, pairs) <= 1.0


@pytest.mark.parametrize(("dim", "base"), CASES)
def test_accurate_is_faithful_where_cos_or_sin_is_nearly_zero(dim, base):
    pairs = np.unique(np.r_[1, 2, 3, dim // 8, dim // 2 - 1])
    pos = hard_positions(dim, base, pairs)
    assert pos.size > 20
    c, s = cos_sin(pos, dim=dim, base=base, method="accurate")
    # the convergents really are hard: some entry below 1e-7 in magnitude
    assert min(np.abs(c[:, pairs]).min(), np.abs(s[:, pairs]).min()) < 1e-7
    assert max_ulp(pos, dim, base, pairs) <= 1.0


def test_accurate_is_faithful_on_the_smallest_entries_of_a_scanned_block():
    dim, base = 128, 10000.0
    rng = np.random.default_rng(11)
    block = rng.integers(0, LIMIT, 2**14).astype(np.float64)
    c, s = cos_sin(block, dim=dim, base=base, method="accurate")
    # the 12 smallest |cos| and |sin| entries of the whole (2^14, 64) table
    flat = np.concatenate([np.abs(c).ravel(), np.abs(s).ravel()])
    idx = np.argsort(flat)[:24] % c.size
    rows, cols = np.unravel_index(idx, c.shape)
    assert flat.min() < 1e-5
    for r, i in zip(rows, cols, strict=True):
        co, so = oracle_cos_sin(block[r : r + 1], dim=dim, base=base, pairs=[i])
        assert ulp_error(c[r : r + 1, i : i + 1], co).max() <= 1.0
        assert ulp_error(s[r : r + 1, i : i + 1], so).max() <= 1.0


@given(
    m=st.integers(-(2**31) + 1, 2**31 - 1),
    i=st.integers(0, 63),
    base=st.floats(2.0, 1e7),
)
def test_accurate_entry_matches_the_oracle(m, i, base):
    c, s = cos_sin([m], dim=128, base=base, method="accurate")
    co, so = oracle_cos_sin([m], dim=128, base=base, pairs=[i])
    assert ulp_error(c[:, i : i + 1], co).max() <= 1.0
    assert ulp_error(s[:, i : i + 1], so).max() <= 1.0


@given(m=st.floats(-(2.0**31), 2.0**31), f=st.floats(1e-7, 1.0))
def test_accurate_with_explicit_frequencies_and_fractional_positions(m, f):
    c, s = cos_sin([m], [f], method="accurate")
    co, so = oracle_cos_sin([m], [f])
    assert ulp_error(c, co).max() <= 1.0
    assert ulp_error(s, so).max() <= 1.0


def test_accurate_beats_the_fast_path_by_orders_of_magnitude_at_long_positions():
    pos = np.array([1e6 + 3, 2**31 - 1.0])
    fast = cos_sin(pos, dim=128, method="fast")[0]
    acc = cos_sin(pos, dim=128, method="accurate")[0]
    co, _ = oracle_cos_sin(pos, dim=128, pairs=np.arange(64))
    assert ulp_error(acc, co).max() <= 1.0
    assert ulp_error(fast, co).max() > 1e3


def test_accurate_applies_attention_scaling_afterwards():
    c1, s1 = cos_sin([5, 7], dim=8, method="accurate")
    c2, s2 = cos_sin([5, 7], dim=8, method="accurate", attention_scaling=1.5)
    np.testing.assert_array_equal(c2, 1.5 * c1)
    np.testing.assert_array_equal(s2, 1.5 * s1)


def test_accurate_shapes_and_exact_values():
    c, s = cos_sin([0], dim=6, method="accurate")
    np.testing.assert_array_equal(c, np.ones((1, 3)))
    np.testing.assert_array_equal(s, np.zeros((1, 3)))
    c, s = cos_sin(np.arange(5000), dim=6, method="accurate")  # several blocks
    assert c.shape == s.shape == (5000, 3)
    np.testing.assert_allclose(c**2 + s**2, 1.0, atol=4e-16)


def test_accurate_errors_name_the_argument():
    with pytest.raises(TypeError, match="either inv_freq or dim"):
        cos_sin([1], method="accurate")
    with pytest.raises(ValueError, match="base must be greater than 1"):
        cos_sin([1], dim=4, base=1.0, method="accurate")


def test_accurate_refuses_angles_outside_the_proved_domain():
    """Beyond 2^29 * 2 pi the Cody-Waite products k * C_j are no longer exact (cos(2^33) came
    out 0.57313641 against 0.57313680): every accurate path refuses angles above 2^31 rad."""
    from refimpl.numerics import PIPELINES
    from refimpl.streaming import iter_cos_sin

    assert _exact.MAX_ANGLE == 2.0**31
    with pytest.raises(ValueError, match=r"positions: method='accurate' is proved .*2\*\*31"):
        cos_sin([2**33], [1.0], method="accurate")
    with pytest.raises(ValueError, match=r"positions: method='accurate'"):
        cos_sin([-(2**40)], dim=8, method="accurate")
    with pytest.raises(ValueError, match=r"positions: method='accurate'"):
        cos_sin([2**30], [4.0], method="accurate")  # the angle counts, not the position
    with pytest.raises(ValueError, match=r"positions: method='accurate'"):
        PIPELINES["accurate"]([2**33], dim=8, base=1e4)
    with pytest.raises(ValueError, match=r"positions: method='accurate'"):
        list(iter_cos_sin([0, 2**33], dim=8, method="accurate"))


@pytest.mark.parametrize("position", [2.0**31, 2.0**31 - 1, -(2.0**31), 2.0**31 - 0.375])
def test_accurate_holds_at_the_edge_of_its_domain(position):
    """At the boundary itself the result is still faithful (within 1 ulp of mpmath)."""
    pos = np.array([position])
    c, s = cos_sin(pos, [1.0, 0.5], method="accurate")
    co, so = oracle_cos_sin(pos, [1.0, 0.5])
    assert ulp_error(c, co).max() <= 1.0 and ulp_error(s, so).max() <= 1.0
    c, s = cos_sin(pos, dim=16, method="accurate")
    co, so = oracle_cos_sin(pos, dim=16)
    assert ulp_error(c, co).max() <= 1.0 and ulp_error(s, so).max() <= 1.0
