"""The methods added for current models — proportional (Gemma 4), ntk_alpha (HunYuan) and
llama3 with equal band factors (Llama 4 Scout): their identities proved with SymPy and
checked numerically with hypothesis, against slow loop oracles."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.rotary import inv_freq
from refimpl.scaling import ROPE_SCALINGS, ntk_alpha_base, ntk_base

sp = pytest.importorskip("sympy")

DIMS = st.sampled_from([4, 8, 16, 64, 96, 128, 256, 512])
BASES = st.floats(10.0, 1e7)
FACTORS = st.floats(1.0, 64.0)
PROPORTIONS = st.floats(0.0, 1.0)


# ----------------------------------------------------------------------------- proportional


def _proportional_loop(dim, base, p, factor):
    """Slow oracle: pair by pair, as Gemma 4 defines it."""
    k = int(p * dim // 2)
    return np.array([base ** (-2 * i / dim) / factor if i < k else 0.0 for i in range(dim // 2)])


def test_sympy_proportional_pairs_are_partial_rotary_of_base_b_to_the_p():
    """For i < k with k = p D / 2: b^(-2i/D) = (b^p)^(-2i/(2k)), i.e. the rotated pairs are an
    ordinary partial rotary of width 2k with base b^p — a different base from ordinary partial
    rotary (which keeps b), and the pass-through pairs rotate by the identity."""
    b, i, k, D = sp.symbols("b i k D", positive=True)
    p = 2 * k / D
    lhs = b ** (-2 * i / D)
    rhs = (b**p) ** (-2 * i / (2 * k))
    assert sp.simplify(sp.expand_power_base(lhs / rhs, force=True)) == 1
    assert sp.simplify(sp.powsimp(rhs, force=True) - lhs) == 0
    m = sp.symbols("m", real=True)
    rotation = sp.Matrix([[sp.cos(m * 0), -sp.sin(m * 0)], [sp.sin(m * 0), sp.cos(m * 0)]])
    assert rotation == sp.eye(2)


@given(DIMS, BASES, PROPORTIONS, FACTORS)
def test_proportional_against_loop_and_partial_rotary_identity(dim, base, p, factor):
    out = ROPE_SCALINGS["proportional"](dim=dim, base=base, partial_rotary_factor=p, factor=factor)
    assert out.inv_freq.shape == (dim // 2,) and out.attention_scaling == 1.0
    np.testing.assert_allclose(out.inv_freq, _proportional_loop(dim, base, p, factor), rtol=1e-14)
    k = int(p * dim // 2)
    assert np.all(out.inv_freq[k:] == 0.0) and np.all(out.inv_freq[:k] > 0)
    if k >= 1:  # the rotated pairs: width 2k, base b^(2k/D)
        partial = inv_freq(2 * k, base ** (2 * k / dim)) / factor
        np.testing.assert_allclose(out.inv_freq[:k], partial, rtol=1e-12)
    # exact pass-through: cos 1, sin 0 at any position
    m = np.array([0.0, 1.0, 12345.0, 2.0**31])
    ang = m[:, None] * out.inv_freq[None, k:]
    assert np.all(np.cos(ang) == 1.0) and np.all(np.sin(ang) == 0.0)


@given(DIMS, BASES, FACTORS)
def test_proportional_with_p_one_is_linear(dim, base, factor):
    a = ROPE_SCALINGS["proportional"](dim=dim, base=base, partial_rotary_factor=1.0, factor=factor)
    b = ROPE_SCALINGS["linear"](dim=dim, base=base, factor=factor)
    assert np.array_equal(a.inv_freq, b.inv_freq)


def test_proportional_differs_from_ordinary_partial_rotary():
    """Gemma 4's global layers (D = 512, p = 0.25, b = 1e6): the exponent is over the whole
    head, so pair i turns b^(2i/512) slower, not b^(2i/128) as ordinary partial rotary."""
    out = ROPE_SCALINGS["proportional"](dim=512, base=1e6, partial_rotary_factor=0.25).inv_freq
    ordinary = inv_freq(128, 1e6)
    assert out[0] == ordinary[0] == 1.0
    assert math.isclose(out[63], 1e6 ** (-126 / 512), rel_tol=1e-14)
    assert out[63] / ordinary[63] > 1e4  # the slowest rotated pair is much faster


# ----------------------------------------------------------------------------- ntk_alpha


def test_sympy_ntk_alpha_divides_pair_i_by_alpha_to_the_2i_over_d_minus_2():
    b, a, i, d = sp.symbols("b alpha i d", positive=True)
    base_new = b * a ** (d / (d - 2))
    ratio = (b ** (-2 * i / d)) / (base_new ** (-2 * i / d))
    log_ratio = sp.expand_log(sp.log(ratio), force=True)  # every quantity is positive
    assert sp.simplify(log_ratio - 2 * i / (d - 2) * sp.log(a)) == 0
    # the last pair, i = d/2 - 1, is divided by exactly alpha; pair 0 is kept
    assert sp.simplify(a ** (2 * i / (d - 2)).subs(i, d / 2 - 1) - a) == 0
    assert a ** (2 * i / (d - 2)).subs(i, 0) == 1


@given(DIMS.filter(lambda d: d >= 4), BASES, FACTORS)
def test_ntk_alpha_is_the_ntk_base_with_factor_alpha(dim, base, alpha):
    assert ntk_alpha_base(dim=dim, base=base, alpha=alpha) == ntk_base(
        dim=dim, base=base, factor=alpha
    )
    out = ROPE_SCALINGS["ntk_alpha"](dim=dim, base=base, alpha=alpha).inv_freq
    theta = inv_freq(dim, base)
    assert out[0] == 1.0
    assert math.isclose(theta[-1] / out[-1], alpha, rel_tol=1e-11)
    i = np.arange(dim // 2)
    np.testing.assert_allclose(theta / out, alpha ** (2 * i / (dim - 2)), rtol=1e-11)


def test_ntk_alpha_hunyuan_value():
    # HunYuan's alpha 1000 on a 128-wide head: b' = 1e4 * 1000**(128/126)
    b = ntk_alpha_base(dim=128, base=1e4, alpha=1000.0)
    assert math.isclose(b, 1e4 * 1000.0 ** (128 / 126), rel_tol=1e-15)


# ----------------------------------------------------------------------------- llama3 step


def test_sympy_llama3_blend_tends_to_the_step_as_the_bands_close():
    """With beta = alpha + eps: a pair with r = alpha + t (t > eps > 0) has g = 1 (kept), one
    with r = alpha - t has g = 0 (divided by s); so the limit eps -> 0 is the step, defined
    at r = alpha by the blend's own value there, g = 0."""
    alpha, eps, t = sp.symbols("alpha epsilon t", positive=True)

    def g(r, beta):
        return sp.Min(sp.Max(sp.expand((r - alpha) / (beta - alpha)), 0), 1)

    above = g(alpha + eps + t, alpha + eps)
    assert sp.simplify(above) == 1
    assert sp.simplify(g(alpha - t, alpha + eps)) == 0
    assert sp.simplify(g(alpha, alpha + eps)) == 0


def _llama3_step_loop(dim, base, factor, L, a):
    out = []
    for i in range(dim // 2):
        theta = base ** (-2 * i / dim)
        r = L * theta / (2 * math.pi)
        out.append(theta if r > a else theta / factor)
    return np.array(out)


@given(DIMS, BASES, FACTORS, st.integers(16, 2**20), st.floats(0.25, 8.0))
def test_llama3_equal_band_factors_is_the_step(dim, base, factor, L, a):
    kw = dict(dim=dim, base=base, factor=factor, original_max_position=L)
    step = ROPE_SCALINGS["llama3"](**kw, low_freq_factor=a, high_freq_factor=a).inv_freq
    assert np.all(np.isfinite(step))
    np.testing.assert_allclose(step, _llama3_step_loop(dim, base, factor, L, a), rtol=1e-14)
    # and the limit of the blend: pairs away from the edge agree with a nearly closed band
    near = ROPE_SCALINGS["llama3"](**kw, low_freq_factor=a, high_freq_factor=a * (1 + 1e-9))
    r = L * inv_freq(dim, base) / (2 * np.pi)
    away = np.abs(r / a - 1) > 1e-6
    np.testing.assert_allclose(step[away], near.inv_freq[away], rtol=1e-12)


def test_llama4_scout_step():
    """Llama 4 Scout's values (factor 16, low = high = 1, original 8192, b = 5e5, d = 128):
    pairs making more than one turn over 8192 tokens are kept, the rest divided by 16."""
    out = ROPE_SCALINGS["llama3"](
        dim=128,
        base=5e5,
        factor=16.0,
        original_max_position=8192,
        low_freq_factor=1.0,
        high_freq_factor=1.0,
    ).inv_freq
    theta = inv_freq(128, 5e5)
    kept = 8192 * theta / (2 * np.pi) > 1.0
    assert np.array_equal(out[kept], theta[kept])
    np.testing.assert_allclose(out[~kept], theta[~kept] / 16.0, rtol=1e-15)
    assert kept.sum() == int(np.sum(2 * np.pi / theta < 8192))
