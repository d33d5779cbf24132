"""Properties, oracles and error paths of refimpl.attention."""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import oracles
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.attention import (
    attention,
    attention_entropy,
    attention_scores,
    causal_mask,
    softmax,
)
from refimpl.rotary import apply_rope

finite = st.floats(-20.0, 20.0, allow_nan=False, allow_infinity=False)


@given(
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=finite)
)
def test_softmax_rows_sum_to_one_and_match_oracle(x):
    p = softmax(x)
    assert p.shape == x.shape
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-12)
    for idx in np.ndindex(x.shape[:-1]):
        np.testing.assert_allclose(p[idx], oracles.softmax(list(x[idx])), rtol=1e-12, atol=1e-15)


@given(
    x=hnp.arrays(np.float64, (3, 5), elements=finite),
    c=st.floats(-100, 100),
)
def test_softmax_is_shift_invariant(x, c):
    np.testing.assert_allclose(softmax(x + c), softmax(x), atol=1e-12)


def test_softmax_axis_masking_and_dtype():
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(softmax(x, axis=0).sum(axis=0), [1.0, 1.0])
    p = softmax([0.0, -np.inf, 0.0])
    np.testing.assert_array_equal(p, [0.5, 0.0, 0.5])
    x32 = np.array([0.1, 0.7, -3.0], dtype=np.float32)
    p32 = softmax(x32)
    assert p32.dtype == np.float32
    np.testing.assert_array_equal(p32, softmax(x32.astype(np.float64)).astype(np.float32))
    assert softmax([1, 2]).dtype == np.float64
    # large logits do not overflow
    np.testing.assert_allclose(softmax([1000.0, 1000.0]), [0.5, 0.5])


def test_softmax_errors():
    with pytest.raises(ValueError, match=r"fully masked"):
        softmax([[0.0, 1.0], [-np.inf, -np.inf]])
    with pytest.raises(ValueError, match=r"x must not contain NaN or \+inf"):
        softmax([0.0, np.nan])
    with pytest.raises(ValueError, match=r"x must not contain NaN or \+inf"):
        softmax([0.0, np.inf])
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        softmax(["a"])


@given(
    q_len=st.integers(1, 6),
    extra=st.integers(0, 5),
)
def test_causal_mask_definition(q_len, extra):
    k_len = q_len + extra
    m = causal_mask(q_len, k_len)
    assert m.shape == (q_len, k_len)
    for i in range(q_len):
        for j in range(k_len):
            # query i sits at absolute position i + extra (the last q_len positions)
            assert m[i, j] == (0.0 if j <= i + extra else -np.inf)
    # every row keeps at least one key, so the softmax is defined
    assert np.all(np.max(m, axis=-1) == 0.0)


def test_causal_mask_errors():
    with pytest.raises(ValueError, match=r"k_len \(2\) must be at least q_len \(3\)"):
        causal_mask(3, 2)
    with pytest.raises(ValueError, match="q_len must be positive"):
        causal_mask(0)
    with pytest.raises(TypeError, match="k_len must be an integer"):
        causal_mask(2, 2.0)


@st.composite
def qkv(draw):
    d = draw(st.integers(1, 6))
    q_len = draw(st.integers(1, 5))
    k_len = q_len + draw(st.integers(0, 3))
    dv = draw(st.integers(1, 4))
    q = draw(hnp.arrays(np.float64, (q_len, d), elements=st.floats(-3, 3)))
    k = draw(hnp.arrays(np.float64, (k_len, d), elements=st.floats(-3, 3)))
    v = draw(hnp.arrays(np.float64, (k_len, dv), elements=st.floats(-3, 3)))
    return q, k, v


@given(data=qkv(), causal=st.booleans(), use_bias=st.booleans(), seed=st.integers(0, 1000))
def test_attention_matches_loop_oracle(data, causal, use_bias, seed):
    q, k, v = data
    bias = np.random.default_rng(seed).normal(size=(q.shape[0], k.shape[0])) if use_bias else None
    out, w = attention(q, k, v, bias=bias, causal=causal, return_weights=True)
    o_ref, w_ref = oracles.attention(
        q.tolist(),
        k.tolist(),
        v.tolist(),
        causal=causal,
        bias=None if bias is None else bias.tolist(),
    )
    np.testing.assert_allclose(w, w_ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(out, o_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, atol=1e-12)


@given(data=qkv(), seed=st.integers(0, 2**32 - 1))
def test_attention_without_positions_is_permutation_equivariant(data, seed):
    """Permuting the tokens (queries, keys and values together) permutes the output rows."""
    q, k, v = data
    n = min(q.shape[0], k.shape[0])
    q, k, v = q[:n], k[:n], v[:n]
    perm = np.random.default_rng(seed).permutation(n)
    out = attention(q, k, v)
    np.testing.assert_allclose(attention(q[perm], k[perm], v[perm]), out[perm], atol=1e-12)
    # permuting only keys and values leaves the output unchanged: attention sees a set
    np.testing.assert_allclose(attention(q, k[perm], v[perm]), out, atol=1e-12)


def test_rope_breaks_permutation_equivariance():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 8))
    perm = np.array([4, 2, 0, 1, 3])
    pos = np.arange(5)

    def layer(tokens):
        q = apply_rope(tokens, pos)
        return attention(q, q, tokens)

    assert np.max(np.abs(layer(x[perm]) - layer(x)[perm])) > 1e-3


def test_attention_scores_scale_and_batch():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 3, 4, 8))
    k = rng.standard_normal((2, 3, 5, 8))
    s = attention_scores(q, k)
    assert s.shape == (2, 3, 4, 5)
    np.testing.assert_allclose(s[1, 2, 3, 4], q[1, 2, 3] @ k[1, 2, 4] / math.sqrt(8))
    np.testing.assert_allclose(attention_scores(q, k, scale=1.0), s * math.sqrt(8))


def test_attention_bias_shapes_broadcast_over_heads():
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((3, 2, 4, 6))  # (heads=2, seq=4, d=6) each
    bias = rng.standard_normal((2, 4, 4))
    out = attention(q, k, v, bias=bias)
    for h in range(2):
        np.testing.assert_allclose(out[h], attention(q[h], k[h], v[h], bias=bias[h]))
    # a -inf bias masks a key exactly like the causal mask
    np.testing.assert_allclose(
        attention(q[0], k[0], v[0], bias=causal_mask(4)), attention(q[0], k[0], v[0], causal=True)
    )


def test_attention_dtype_is_kept_and_rounded_once():
    rng = np.random.default_rng(6)
    q, k, v = rng.standard_normal((3, 4, 8)).astype(np.float32)
    out, w = attention(q, k, v, causal=True, return_weights=True)
    assert out.dtype == np.float32 and w.dtype == np.float32
    o64, w64 = attention(
        *(a.astype(np.float64) for a in (q, k, v)), causal=True, return_weights=True
    )
    np.testing.assert_array_equal(out, o64.astype(np.float32))
    np.testing.assert_array_equal(w, w64.astype(np.float32))
    assert attention_scores(q, k).dtype == np.float32
    np.testing.assert_array_equal(
        attention_scores(q, k),
        attention_scores(q.astype(float), k.astype(float)).astype(np.float32),
    )


def test_attention_errors():
    q = np.ones((2, 4))
    with pytest.raises(ValueError, match="q and k must have the same feature size"):
        attention_scores(q, np.ones((2, 3)))
    with pytest.raises(ValueError, match="v has 3 rows but k has 2"):
        attention(q, q, np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"bias must end in \(q_len, k_len\)"):
        attention(q, q, q, bias=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="bias must have at least 2 dimensions"):
        attention(q, q, q, bias=np.zeros(2))
    with pytest.raises(ValueError, match="bias must not contain NaN"):
        attention(q, q, q, bias=np.full((2, 2), np.nan))
    with pytest.raises(TypeError, match="bias must be a real numeric array"):
        attention(q, q, q, bias=np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="does not broadcast to scores"):
        attention(
            np.ones((3, 2, 4)), np.ones((3, 2, 4)), np.ones((3, 2, 4)), bias=np.zeros((2, 2, 2))
        )
    with pytest.raises(ValueError, match="fully masked"):
        bias = np.zeros((2, 2))
        bias[1, :] = -np.inf
        attention(q, q, q, bias=bias)
    with pytest.raises(ValueError, match="scale must be positive"):
        attention_scores(q, q, scale=0.0)
    with pytest.raises(ValueError, match="scale must be finite"):
        attention_scores(q, q, scale=np.nan)
    with pytest.raises(ValueError, match="q must have at least 2 dimension"):
        attention_scores(np.ones(4), q)
    with pytest.raises(ValueError, match="k must contain only finite values"):
        attention_scores(q, np.full((2, 4), np.inf))


@given(hnp.arrays(np.float64, (3, 6), elements=finite))
def test_entropy_bounds_and_oracle(x):
    p = softmax(x)
    h = attention_entropy(p)
    assert h.shape == (3,)
    assert np.all(h >= -1e-12) and np.all(h <= math.log(6) + 1e-12)
    for r in range(3):
        assert h[r] == pytest.approx(oracles.entropy(list(p[r])), abs=1e-12)


def test_entropy_extremes_and_dtype():
    assert attention_entropy([1.0, 0.0, 0.0]) == 0.0
    assert attention_entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8))
    p32 = softmax(np.random.default_rng(0).normal(size=(4, 4096)).astype(np.float32))
    assert attention_entropy(p32).dtype == np.float32  # float32 rows pass the sum check
    np.testing.assert_allclose(
        attention_entropy([[0.5, 1.0], [0.5, 0.0]], axis=0), [math.log(2), 0.0]
    )


def test_entropy_errors():
    with pytest.raises(ValueError, match="weights must be non-negative"):
        attention_entropy([1.5, -0.5])
    with pytest.raises(ValueError, match="weights must sum to 1"):
        attention_entropy([0.5, 0.4])
    with pytest.raises(ValueError, match="weights must contain only finite"):
        attention_entropy([np.nan, 1.0])


def test_attention_flags_must_be_booleans():
    """causal="no" used to apply the mask (any truthy value did)."""
    q = k = v = np.eye(3)
    for flag in ("causal", "return_weights"):
        for bad in ("no", 1, 0, None, 1.0, np.array(True)):
            with pytest.raises(TypeError, match=f"{flag} must be a boolean"):
                attention(q, k, v, **{flag: bad})
    masked = attention(q, k, v, causal=np.True_)
    np.testing.assert_array_equal(masked, attention(q, k, v, causal=True))
    assert not np.array_equal(masked, attention(q, k, v, causal=False))
    _, w = attention(q, k, v, return_weights=np.bool_(True))
    assert w.shape == (3, 3)
    with pytest.raises(ValueError, match="k must have at least one key"):
        attention(np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 3)))


def test_softmax_and_entropy_refuse_empty_rows_and_non_integer_axes():
    with pytest.raises(ValueError, match="x must not be empty along axis"):
        softmax([])
    with pytest.raises(ValueError, match="x must not be empty along axis"):
        softmax(np.ones((2, 0)))
    assert softmax(np.ones((0, 3))).shape == (0, 3)  # no rows: nothing to normalise
    with pytest.raises(ValueError, match="x must have at least one dimension"):
        softmax(1.0)
    for bad in (0.5, True, "0", None):
        with pytest.raises(TypeError, match="axis must be an integer"):
            softmax(np.ones((2, 2)), axis=bad)
        with pytest.raises(TypeError, match="axis must be an integer"):
            attention_entropy(np.full((2, 2), 0.5), axis=bad)
    with pytest.raises(ValueError, match=r"axis must be in \[-2, 2\)"):
        softmax(np.ones((2, 2)), axis=2)
    np.testing.assert_array_equal(softmax(np.eye(2), axis=np.int64(0)), softmax(np.eye(2).T).T)
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        softmax([1j])
    with pytest.raises(ValueError, match="x must be a rectangular array"):
        softmax([[1.0], [1.0, 2.0]])
