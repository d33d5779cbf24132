"""PoPE (refimpl.polar): the score is a function of the distance; loop oracle; errors."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.polar import apply_pope, pope_inv_freq


def _score_loop(q, k, m, n, base, delta):
    d = len(q)
    total = 0.0
    for j in range(d):
        th = base ** (-j / d)
        sq, sk = math.log1p(math.exp(q[j])), math.log1p(math.exp(k[j]))
        total += sq * sk * math.cos((m - n) * th - delta[j])
    return total


@given(st.integers(1, 9), st.integers(0, 5000), st.integers(0, 5000), st.integers(0, 999))
def test_scores_equal_the_polar_formula(d, m, n, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=d), rng.normal(size=d)
    delta = rng.uniform(-2 * np.pi, 0, size=d)
    eq = apply_pope(q[None], [float(m)])[0]
    ek = apply_pope(k[None], [float(n)], phase_bias=delta)[0]
    assert float(eq @ ek) == pytest.approx(_score_loop(q, k, m, n, 1e4, delta), rel=1e-9, abs=1e-9)


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6))
def test_scores_depend_only_on_the_distance(m, n, shift):
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
    a = apply_pope(q, [m]) @ apply_pope(k, [n]).T
    b = apply_pope(q, [m + shift]) @ apply_pope(k, [n + shift]).T
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_frequencies_one_per_feature_and_bias_clamped():
    np.testing.assert_allclose(pope_inv_freq(3, 8.0), [1.0, 0.5, 0.25])
    x = np.zeros((1, 2))
    far = apply_pope(x, [0.0], phase_bias=[-10.0, 3.0])
    near = apply_pope(x, [0.0], phase_bias=[-2 * np.pi, 0.0])
    np.testing.assert_allclose(far, near)
    with pytest.raises(ValueError, match="positions"):
        apply_pope(np.zeros((2, 4)), [0.0])
    with pytest.raises(ValueError, match="phase_bias"):
        apply_pope(np.zeros((2, 4)), [0.0, 1.0], phase_bias=[0.0])
