"""CoPE (refimpl.contextual): loop oracle, reduction to counting, errors."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.contextual import cope_logits, cope_position_term, cope_positions


def _cope_loop(q, k, emb, scale):
    ql, kl = q.shape[0], k.shape[0]
    off = kl - ql
    out = np.full((ql, kl), -math.inf)
    for a in range(ql):
        i = a + off
        s = [scale * float(q[a] @ k[t]) for t in range(kl)]
        for j in range(i + 1):
            p = sum(1.0 / (1.0 + math.exp(-s[t])) for t in range(j, i + 1))
            p = min(p, emb.shape[0] - 1)
            lo, hi = math.floor(p), math.ceil(p)
            w = p - lo
            out[a, j] = s[j] + (1 - w) * float(q[a] @ emb[lo]) + w * float(q[a] @ emb[hi])
    return out


@given(st.integers(1, 7), st.integers(0, 5), st.integers(2, 12), st.integers(0, 999))
def test_cope_equals_loop(ql, extra, n_emb, seed):
    rng = np.random.default_rng(seed)
    d = 4
    q, k = rng.normal(size=(ql, d)), rng.normal(size=(ql + extra, d))
    emb = rng.normal(size=(n_emb, d))
    got = cope_logits(q, k, emb)
    want = _cope_loop(q, k, emb, 1 / math.sqrt(d))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@given(st.integers(1, 9))
def test_gates_of_one_count_tokens(n):
    p = cope_positions(np.full((n, n), 60.0))
    i, j = np.indices((n, n))
    np.testing.assert_allclose(np.where(j <= i, p, 0.0), np.where(j <= i, i - j + 1.0, 0.0))


def test_interpolation_is_linear_in_the_position():
    q = np.array([[1.0, 2.0]])
    emb = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # q.e = 0, 1, 2
    got = cope_position_term(q, np.array([[0.0, 0.25, 1.5, 2.0, 7.0]]), emb)
    np.testing.assert_allclose(got, [[0.0, 0.25, 1.5, 2.0, 2.0]])  # clamped at P - 1


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (lambda: cope_logits(np.ones((2, 4)), np.ones((2, 3)), np.ones((4, 4))), "width"),
        (lambda: cope_logits(np.ones((2, 4)), np.ones((2, 4)), np.ones((4, 3))), "pos_emb"),
        (lambda: cope_positions(np.ones((2, 2)), causal="yes"), "causal"),
        (
            lambda: cope_position_term(np.ones((1, 2)), -np.ones((1, 2)), np.ones((3, 2))),
            "non-negative",
        ),
        (
            lambda: cope_logits(np.ones((2, 4)), np.ones((2, 4)), np.ones((4, 4)), scale=0.0),
            "scale",
        ),
    ],
)
def test_bad_arguments_are_named(call, word):
    with pytest.raises((ValueError, TypeError), match=word):
        call()
