"""ALiBi and T5 relative-position biases: definitions, properties, slow oracles, errors."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl import (
    alibi_bias,
    alibi_shifted_bias,
    alibi_slopes,
    t5_bias,
    t5_relative_position_bucket,
)

# --- ALiBi slopes ---------------------------------------------------------------------------


def _reference_slopes(n):
    """Loop transcription of the authors' recursive construction (Python floats)."""

    def pow2(k):
        start = 2 ** (-(2 ** -(math.log2(k) - 3)))
        return [start * start**i for i in range(k)]

    if math.log2(n).is_integer():
        return pow2(n)
    p = 2 ** math.floor(math.log2(n))
    return pow2(p) + _reference_slopes(2 * p)[0::2][: n - p]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 8, 12, 16, 20, 24, 40, 64, 96, 100, 128])
def test_slopes_equal_the_recursive_reference(n):
    np.testing.assert_allclose(alibi_slopes(n), _reference_slopes(n), rtol=1e-14)


def test_slopes_known_values():
    # values stated in the ALiBi paper: 8 heads -> 1/2 .. 1/256; 12 heads per spec section 4.1
    assert np.array_equal(alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    want12 = 2.0 ** -np.array([1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5])
    np.testing.assert_allclose(alibi_slopes(12), want12, rtol=1e-15)
    assert np.array_equal(alibi_slopes(1), [2.0**-8])
    assert np.array_equal(alibi_slopes(3), [2.0**-4, 2.0**-8, 2.0**-2])


@given(st.integers(1, 300))
def test_slopes_properties(n):
    s = alibi_slopes(n)
    assert s.shape == (n,) and s.dtype == np.float64
    assert np.all((s > 0) & (s < 1))
    assert len(np.unique(s)) == n  # every head gets its own slope
    p = 1 << (n.bit_length() - 1)
    ratio = s[1:p] / s[: p - 1]
    np.testing.assert_allclose(ratio, 2.0 ** (-8.0 / p), rtol=1e-13)  # geometric prefix


def test_slopes_not_the_truncated_next_power_of_two():
    # trap T12: taking the 16-head list and keeping 12 is a different set
    assert not np.allclose(alibi_slopes(12), alibi_slopes(16)[:12])


@pytest.mark.parametrize("bad", [0, -3])
def test_slopes_reject_non_positive(bad):
    with pytest.raises(ValueError, match=r"n_heads must be (positive|non-negative)"):
        alibi_slopes(bad)


def test_slopes_reject_non_integer():
    with pytest.raises(TypeError, match="n_heads must be an integer"):
        alibi_slopes(4.0)


# --- ALiBi bias -----------------------------------------------------------------------------


def _alibi_oracle(n, ql, kl, causal, slopes):
    out = np.zeros((n, ql, kl))
    for h in range(n):
        for a in range(ql):
            i = a + kl - ql
            for j in range(kl):
                if causal:
                    out[h, a, j] = -slopes[h] * (i - j) if j <= i else -np.inf
                else:
                    out[h, a, j] = -slopes[h] * abs(i - j)
    return out


@given(st.integers(1, 6), st.integers(1, 9), st.integers(0, 6), st.booleans())
def test_alibi_bias_matches_loop_oracle(n, ql, extra, causal):
    kl = ql + extra
    want = _alibi_oracle(n, ql, kl, causal, alibi_slopes(n))
    got = alibi_bias(n, ql, kl, causal=causal)
    assert got.shape == (n, ql, kl)
    assert np.array_equal(got, want)


@given(st.integers(1, 5), st.integers(1, 8), st.integers(0, 5))
def test_shifted_form_gives_the_same_causal_softmax(n, ql, extra):
    kl = ql + extra
    rng = np.random.default_rng(ql * 31 + n)
    s = rng.normal(size=(n, ql, kl))
    paper = refimpl.softmax(s + alibi_bias(n, ql, kl))
    shifted = refimpl.softmax(s + alibi_shifted_bias(n, ql, kl))
    np.testing.assert_allclose(paper, shifted, rtol=1e-12, atol=1e-15)
    # and their difference is a constant m_h * i along each row (on the unmasked entries)
    with np.errstate(invalid="ignore"):  # -inf - -inf on the masked entries
        diff = alibi_shifted_bias(n, ql, kl) - alibi_bias(n, ql, kl)
    i = np.arange(ql) + (kl - ql)
    for h, m in enumerate(alibi_slopes(n)):
        for a in range(ql):
            row = diff[h, a, : i[a] + 1]
            np.testing.assert_allclose(row, m * i[a], rtol=1e-12, atol=1e-12)


def test_shifted_form_differs_without_the_mask():
    s = np.zeros((4, 6, 6))
    sym = refimpl.softmax(s + alibi_bias(4, 6, causal=False))
    shifted = refimpl.softmax(s + alibi_shifted_bias(4, 6, causal=False))
    assert np.max(np.abs(sym - shifted)) > 0.05
    # without the mask the shifted form favours the farthest future key of the first query
    assert np.argmax(shifted[0, 0]) == 5 and np.argmax(sym[0, 0]) == 0


def test_symmetric_bias_is_symmetric_and_non_positive():
    b = alibi_bias(5, 7, causal=False)
    assert np.array_equal(b, np.swapaxes(b, 1, 2))
    assert np.all(b <= 0) and np.all(np.diagonal(b, axis1=1, axis2=2) == 0)
    assert not np.any(np.signbit(np.diagonal(b, axis1=1, axis2=2)))  # +0.0, not -0.0


def test_per_head_slopes_and_out():
    slopes = np.array([0.0, 0.1, 1.0])
    out = np.empty((3, 4, 4))
    res = alibi_bias(3, 4, slopes=slopes, out=out)
    assert res is out
    assert np.all(out[0][np.tril_indices(4)] == 0)
    assert out[2, 3, 0] == -3.0


def test_query_offset():
    b = alibi_bias(1, 2, 5, slopes=[1.0], query_offset=0)
    assert np.array_equal(b[0, 0], [0, -np.inf, -np.inf, -np.inf, -np.inf])


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"slopes": [0.1, 0.2]}, ValueError, "slopes must have n_heads = 3"),
        ({"slopes": [0.1, -0.2, 0.1]}, ValueError, "slopes must be non-negative"),
        ({"slopes": [0.1, np.nan, 0.1]}, ValueError, "slopes must contain only finite"),
        ({"causal": 1}, TypeError, "causal must be a bool"),
        ({"k_len": 0}, ValueError, "k_len must be positive"),
        ({"out": np.empty((3, 4, 4), np.float32)}, ValueError, "out must have dtype"),
        ({"query_offset": -1}, ValueError, "query_offset must be non-negative"),
    ],
)
def test_alibi_errors(kwargs, err, match):
    with pytest.raises(err, match=match):
        alibi_bias(3, 4, **kwargs)


def test_alibi_errors_q_len_and_shifted():
    with pytest.raises(ValueError, match="q_len must be positive"):
        alibi_bias(2, 0)
    with pytest.raises(TypeError, match="causal must be a bool"):
        alibi_shifted_bias(2, 3, causal="yes")


# --- T5 buckets -----------------------------------------------------------------------------


def _bucket_oracle(rel, bidirectional, num_buckets, max_distance):
    """Exact rational arithmetic: the definition with exact logarithm comparisons."""
    out = 0
    nb = num_buckets
    if bidirectional:
        nb //= 2
        out += nb if rel > 0 else 0
        n = abs(rel)
    else:
        n = max(-rel, 0)
    e = nb // 2
    if n < e:
        return out + n
    # largest k with (n/e)^(nb-e) >= (D/e)^k
    k = 0
    lhs = Fraction(n, e) ** (nb - e)
    while lhs >= Fraction(max_distance, e) ** (k + 1):
        k += 1
    return out + min(e + k, nb - 1)


CONFIGS = [(32, 128), (32, 256), (64, 512), (16, 64), (8, 20), (4, 8), (128, 1024)]


@pytest.mark.parametrize(("nb", "md"), CONFIGS)
@pytest.mark.parametrize("bidirectional", [True, False])
def test_buckets_match_exact_oracle(nb, md, bidirectional):
    rel = np.arange(-3 * md, 3 * md + 1)
    got = t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=nb, max_distance=md
    )
    want = [_bucket_oracle(int(r), bidirectional, nb, md) for r in rel]
    assert np.array_equal(got, want)


def test_buckets_verified_table():
    # values from running transformers 5.24 (reference spec section 5, "[verified]")
    rel = np.array([-300, -128, -127, -100, -64, -32, -16, -9, -8, -7, -1, 0])
    bi = [15, 15, 15, 15, 14, 12, 10, 8, 8, 7, 1, 0]
    causal = [31, 31, 31, 30, 26, 21, 16, 9, 8, 7, 1, 0]
    assert np.array_equal(t5_relative_position_bucket(rel), bi)
    assert np.array_equal(t5_relative_position_bucket(rel, bidirectional=False), causal)
    pos = np.array([1, 7, 8, 9, 16, 32, 64, 100, 127, 128, 300])
    assert np.array_equal(
        t5_relative_position_bucket(pos), [17, 23, 24, 24, 26, 28, 30, 31, 31, 31, 31]
    )
    assert np.all(t5_relative_position_bucket(pos, bidirectional=False) == 0)


@given(
    st.sampled_from(CONFIGS),
    st.booleans(),
    st.lists(st.integers(-20000, 20000), min_size=1, max_size=50),
)
def test_bucket_properties(cfg, bidirectional, rels):
    nb, md = cfg
    rel = np.array(rels)
    b = t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=nb, max_distance=md
    )
    assert b.shape == rel.shape and b.dtype == np.int64
    assert np.all((b >= 0) & (b < nb))  # range
    per_dir = nb // 2 if bidirectional else nb
    e = per_dir // 2
    n = np.abs(rel) if bidirectional else np.maximum(-rel, 0)
    off = np.where(rel > 0, per_dir, 0) if bidirectional else np.zeros_like(rel)
    small = n < e
    assert np.array_equal(b[small], (off + n)[small])  # exact region
    far = n >= md
    assert np.all(b[far] == (off + per_dir - 1)[far])  # constant beyond max_distance


@pytest.mark.parametrize(("nb", "md"), CONFIGS)
def test_buckets_monotone_in_distance_per_sign(nb, md):
    d = np.arange(0, 4 * md)
    for sign in (1, -1):
        b = t5_relative_position_bucket(sign * d, num_buckets=nb, max_distance=md)
        assert np.all(np.diff(b[1:]) >= 0)  # non-decreasing in |distance| (d = 0 is bucket 0)
    b = t5_relative_position_bucket(-d, bidirectional=False, num_buckets=nb, max_distance=md)
    assert np.all(np.diff(b) >= 0)
    # every bucket of a direction is used
    assert set(np.unique(b)) == set(range(nb))


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"num_buckets": 31}, ValueError, "num_buckets must be even when bidirectional"),
        ({"num_buckets": 2}, ValueError, "at least 2 buckets per direction"),
        ({"num_buckets": 0}, ValueError, "num_buckets must be positive"),
        ({"max_distance": 8}, ValueError, "max_distance must exceed the exact region"),
        ({"bidirectional": 1}, TypeError, "bidirectional must be a bool"),
        ({"max_distance": 12.5}, TypeError, "max_distance must be an integer"),
    ],
)
def test_bucket_errors(kwargs, err, match):
    with pytest.raises(err, match=match):
        t5_relative_position_bucket(np.arange(3), **kwargs)


def test_bucket_rejects_float_positions():
    with pytest.raises(TypeError, match="relative_position must be an integer array"):
        t5_relative_position_bucket(np.array([1.0, 2.0]))


# --- T5 bias --------------------------------------------------------------------------------


@given(st.integers(1, 8), st.integers(0, 8), st.integers(1, 4), st.booleans())
def test_t5_bias_gathers_the_table(ql, extra, heads, bidirectional):
    kl = ql + extra
    rng = np.random.default_rng(heads * 7 + ql)
    table = rng.normal(size=(8, heads)).astype(np.float32)
    b = t5_bias(table, ql, kl, bidirectional=bidirectional, num_buckets=8, max_distance=10)
    assert b.shape == (heads, ql, kl) and b.dtype == np.float32
    for a in range(ql):
        i = a + kl - ql
        for j in range(kl):
            bucket = _bucket_oracle(j - i, bidirectional, 8, 10)
            assert np.array_equal(b[:, a, j], table[bucket])


def test_t5_bias_is_toeplitz():
    table = np.random.default_rng(0).normal(size=(32, 2))
    b = t5_bias(table, 40, 40)
    for off in range(-39, 40):
        diag = np.diagonal(b, offset=off, axis1=1, axis2=2)
        assert np.all(diag == diag[:, :1])


def test_t5_bias_errors():
    with pytest.raises(ValueError, match="table must have num_buckets = 32 rows"):
        t5_bias(np.zeros((16, 2)), 3, 3)
    with pytest.raises(ValueError, match="table must have 2 dimension"):
        t5_bias(np.zeros(32), 3, 3)
    with pytest.raises(ValueError, match="table must contain only finite"):
        t5_bias(np.full((32, 2), np.inf), 3, 3)
