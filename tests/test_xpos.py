"""xPos: scale table, application, relative-only scores, errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import apply_rope, apply_xpos, inv_freq, xpos_scale, xpos_zeta


def test_zeta_definition_and_range():
    z = xpos_zeta(64)
    i = np.arange(32)
    np.testing.assert_allclose(z, (2 * i / 64 + 0.4) / 1.4, rtol=1e-15)
    assert z[0] == pytest.approx(0.4 / 1.4) and np.all(np.diff(z) > 0) and z[-1] < 1


@given(st.lists(st.integers(-4000, 4000), min_size=1, max_size=20), st.sampled_from([4, 8, 64]))
def test_scale_is_a_power_of_zeta(pos, dim):
    s = xpos_scale(pos, dim)
    z = xpos_zeta(dim)
    assert s.shape == (len(pos), dim // 2)
    for r, p in enumerate(pos):
        np.testing.assert_allclose(s[r], z ** (p / 512.0), rtol=1e-13)


@given(
    st.integers(0, 3000),
    st.integers(0, 3000),
    st.integers(0, 500),
    st.sampled_from(["half", "interleaved"]),
)
def test_score_depends_only_on_the_offset(m, n, shift, pairing):
    rng = np.random.default_rng(m + 7 * n)
    q, k = rng.normal(size=(2, 2, 16))
    pos = np.array([m, n], dtype=float)
    q1, k1 = apply_xpos(q, k, pos, pairing=pairing)
    q2, k2 = apply_xpos(q, k, pos + shift, pairing=pairing)
    s1 = q1[0] @ k1[1]
    s2 = q2[0] @ k2[1]
    assert s1 == pytest.approx(s2, rel=1e-9, abs=1e-9)


def test_matches_the_slow_definition_and_decays():
    rng = np.random.default_rng(0)
    d = 8
    q, k = rng.normal(size=(2, 5, d))
    pos = np.array([0, 3, 100, 700, 1500])
    qx, kx = apply_xpos(q, k, pos, pairing="interleaved")
    z = xpos_zeta(d)
    f = inv_freq(d)
    for a, m in enumerate(pos):
        for b, n in enumerate(pos):
            want = 0.0
            for i in range(d // 2):
                q1, q2 = q[a, 2 * i], q[a, 2 * i + 1]
                k1, k2 = k[b, 2 * i], k[b, 2 * i + 1]
                phi = (n - m) * f[i]
                pair = (q1 * k1 + q2 * k2) * np.cos(phi) + (q2 * k1 - q1 * k2) * np.sin(phi)
                want += z[i] ** ((m - n) / 512.0) * pair
            assert qx[a] @ kx[b] == pytest.approx(want, rel=1e-10, abs=1e-10)
    # decay: with equal unit pairs and zero rotation, the past-key score shrinks with distance
    ones = np.ones((2, d))
    scores = []
    for dist in (0, 256, 512, 1024):
        qq, kk = apply_xpos(ones, ones, [dist, 0], inv_freq=np.full(d // 2, 1e-12))
        scores.append(qq[0] @ kk[1])
    assert np.all(np.diff(scores) < 0)


def test_reduces_to_rope_when_gamma_is_large_and_offset_cancels():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(2, 6, 8))
    qx, _ = apply_xpos(q, k, np.arange(6), gamma=1e12)
    np.testing.assert_allclose(qx, apply_rope(q, np.arange(6)), atol=1e-9)
    qa, ka = apply_xpos(q, k, np.arange(6), scale_offset=3.0)
    qb, kb = apply_xpos(q, k, np.arange(6))
    np.testing.assert_allclose(qa @ ka.T, qb @ kb.T, rtol=1e-12, atol=1e-12)
    assert not np.allclose(qa, qb)


def test_dtype_kept():
    q = np.ones((3, 4), np.float32)
    qx, kx = apply_xpos(q, q, [0, 1, 2])
    assert qx.dtype == np.float32 and kx.dtype == np.float32
    qi, _ = apply_xpos(np.ones((3, 4), int), np.ones((3, 4), int), [0, 1, 2])
    assert qi.dtype == np.float64


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: xpos_zeta(5), ValueError, "dim must be even"),
        (lambda: xpos_zeta(4, gamma=0.0), ValueError, "gamma must be positive"),
        (lambda: xpos_scale([0], 4, scale_base=-1.0), ValueError, "scale_base must be positive"),
        (lambda: xpos_scale([np.nan], 4), ValueError, "positions must be finite"),
        (
            lambda: apply_xpos(np.ones((2, 4)), np.ones((3, 4)), [0, 1]),
            ValueError,
            "q and k must have the same shape",
        ),
        (
            lambda: apply_xpos(np.ones((2, 4)), np.ones((2, 4)), [0, 1, 2]),
            ValueError,
            "positions has 3 entries",
        ),
        (
            lambda: apply_xpos(np.ones((2, 5)), np.ones((2, 5)), [0, 1]),
            ValueError,
            "q's last dimension must be even",
        ),
        (
            lambda: apply_xpos(np.ones((2, 4)), np.ones((2, 4)), [0, 1], inv_freq=[1.0]),
            ValueError,
            "inv_freq must have dim // 2 = 2",
        ),
        (
            lambda: apply_xpos(np.ones((2, 4)), np.ones((2, 4)), [0, 1], pairing="odd"),
            ValueError,
            "pairing must be one of",
        ),
        (
            lambda: apply_xpos(np.ones((2, 4)), np.ones((2, 4)), [0, 1], scale_offset=np.inf),
            ValueError,
            "scale_offset must be finite",
        ),
    ],
)
def test_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_xpos_scale_refuses_factors_outside_the_float64_range():
    """zeta_0**(m/B) used to underflow to 0 (or overflow to inf) silently for long positions."""
    xpos_scale([2 * 10**5], 8)  # inside: exp(-2e5/512 * 1.25) ~ e^-489
    for far in ([3 * 10**5], [-(3 * 10**5)]):
        with pytest.raises(ValueError, match="positions / scale_base too large"):
            xpos_scale(far, 8)
    with pytest.raises(ValueError, match="positions / scale_base too large"):
        apply_xpos(np.ones((1, 4)), np.ones((1, 4)), [10**6])
    q = np.ones((2, 4))
    qx, kx = apply_xpos(q, q, [10**6, 10**6 + 1], scale_offset=10**6)  # centred: fine
    assert np.all(np.isfinite(qx)) and np.all(np.isfinite(kx))
    with pytest.raises(ValueError, match="inv_freq must be positive"):
        apply_xpos(q, q, [0, 1], inv_freq=[1.0, -1.0])
    with pytest.raises(ValueError, match="inv_freq must be a rectangular array"):
        apply_xpos(q, q, [0, 1], inv_freq=[[1.0], [1.0, 2.0]])
