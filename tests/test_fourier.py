"""FoPE (refimpl.fourier): RoPE as the identity case, clipped pairs, a per-token loop oracle,
the relative part of the scores (what survives a common shift and what does not), errors."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.fourier import (
    FOPE_CLIPPED_MODES,
    apply_fope,
    fope_coefficients,
    fope_cos_sin,
    fope_kept,
    fope_series,
)
from refimpl.rotary import apply_rope, inv_freq

half_dims = st.integers(1, 8)
seeds = st.integers(0, 10**6)


def _loop_fope(x, positions, w, cos_coef, sin_coef, train_length, clipped):
    """One token, one head, one pair at a time, in Python floats (half pairing)."""
    x = np.asarray(x, dtype=float)
    heads, seq, d = x.shape
    half = d // 2
    floor = 0.0 if train_length is None else 2 * math.pi / train_length
    kept = [j for j in range(half) if w[j] >= floor]
    out = np.empty_like(x)
    group = heads // cos_coef.shape[0]
    for h in range(heads):
        cc, sc = cos_coef[h // group], sin_coef[h // group]
        for t in range(seq):
            p = float(positions[t])
            for k in range(half):
                if k < cc.shape[1]:
                    c = sum(cc[r, k] * math.cos(w[j] * p) for r, j in enumerate(kept))
                    s = sum(sc[r, k] * math.sin(w[j] * p) for r, j in enumerate(kept))
                else:
                    c, s = 1.0, (1.0 if clipped == "pad-one" else 0.0)
                a, b = x[h, t, k], x[h, t, k + half]
                out[h, t, k] = a * c - b * s
                out[h, t, k + half] = a * s + b * c
    return out


def _complex_pairs(v):
    half = v.shape[-1] // 2
    return v[..., :half] + 1j * v[..., half:]


@given(half_dims, st.sampled_from(["half", "interleaved"]), seeds)
def test_identity_mixing_without_clipping_is_rope(half, pairing, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 5, 2 * half))
    pos = rng.integers(0, 10**5, size=5).astype(float)
    w = inv_freq(2 * half, 10000.0)
    eye = np.eye(half)
    got = apply_fope(x, pos, w, eye, eye, pairing=pairing)
    want = apply_rope(x, pos, inv_freq=w, pairing=pairing)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@given(st.integers(2, 8), st.integers(8, 4096), seeds, st.sampled_from(FOPE_CLIPPED_MODES))
def test_clipped_pairs_carry_no_position(half, train_length, seed, clipped):
    rng = np.random.default_rng(seed)
    w = inv_freq(2 * half, 10000.0)
    kept = fope_kept(w, train_length)
    m = int(kept.sum())
    c, s = fope_coefficients(m, m, std=0.3, seed=seed)
    x = rng.normal(size=(4, 2 * half))
    pos = rng.integers(0, 10**6, size=4)
    y = apply_fope(x, pos, w, c, s, train_length=train_length, clipped=clipped)
    clip = np.arange(m, half)
    a, b = x[:, clip], x[:, clip + half]
    if clipped == "zero-frequency":
        # exactly the input, bit for bit
        assert np.array_equal(y[:, clip], a) and np.array_equal(y[:, clip + half], b)
    else:
        # times 1 + i at every position: (a - b, a + b)
        assert np.array_equal(y[:, clip], a - b) and np.array_equal(y[:, clip + half], a + b)


def test_pad_one_doubles_the_clipped_pairs_scores():
    w = inv_freq(8, 10000.0)
    kept = fope_kept(w, 64)
    m = int(kept.sum())
    assert 0 < m < 4
    c, s = fope_coefficients(m, m, std=0.2, seed=3)
    rng = np.random.default_rng(1)
    q, k = np.zeros((1, 8)), np.zeros((1, 8))
    clip = np.r_[np.arange(m, 4), np.arange(m, 4) + 4]
    q[0, clip], k[0, clip] = rng.normal(size=(2, clip.size))
    for mode, factor in (("zero-frequency", 1.0), ("pad-one", 2.0)):
        sq = apply_fope(q, [17.0], w, c, s, train_length=64, clipped=mode)
        sk = apply_fope(k, [3.0], w, c, s, train_length=64, clipped=mode)
        assert (sq @ sk.T)[0, 0] == pytest.approx(factor * (q @ k.T)[0, 0], rel=1e-12)


@given(st.integers(1, 6), st.sampled_from([None, 16, 100, 3000]), seeds)
def test_matches_the_per_token_loop(half, train_length, seed):
    rng = np.random.default_rng(seed)
    w = inv_freq(2 * half, 100.0)
    m = int(fope_kept(w, train_length).sum())
    n_sets = int(rng.integers(1, 3))
    k_cols = int(rng.integers(0, half + 1))
    c = rng.normal(size=(n_sets, m, k_cols))
    s = rng.normal(size=(n_sets, m, k_cols))
    x = rng.normal(size=(2 * n_sets, 3, 2 * half))
    pos = rng.uniform(0, 5000, size=3)
    for mode in FOPE_CLIPPED_MODES:
        got = apply_fope(x, pos, w, c, s, train_length=train_length, clipped=mode)
        want = _loop_fope(x, pos, w, c, s, train_length, mode)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


@given(half_dims, seeds, st.integers(-5000, 5000))
def test_tables_are_the_exponential_series(half, seed, t):
    rng = np.random.default_rng(seed)
    w = inv_freq(2 * half, 10000.0)
    c, s = rng.normal(size=(2, half, half))
    cos, sin = fope_cos_sin([t], w, c, s)
    freqs, a = fope_series(w, c, s)
    z = np.exp(1j * freqs * t) @ a
    np.testing.assert_allclose(cos[0] + 1j * sin[0], z, atol=1e-10)


def _scores(q, k, m, n, w, c, s):
    return float((apply_fope(q, [m], w, c, s) @ apply_fope(k, [n], w, c, s).T)[0, 0])


@given(half_dims, seeds, st.integers(0, 10**5), st.integers(0, 10**5), st.integers(0, 10**6))
def test_one_exponential_per_pair_keeps_scores_relative(half, seed, m, n, shift):
    # C = S with one non-zero per column (any scale, any frequency): RoPE on permuted,
    # rescaled frequencies, so a common shift leaves the score unchanged.
    rng = np.random.default_rng(seed)
    w = inv_freq(2 * half, 10000.0)
    mono = np.zeros((half, half))
    mono[rng.integers(0, half, size=half), np.arange(half)] = rng.normal(size=half)
    q, k = rng.normal(size=(2, 1, 2 * half))
    a = _scores(q, k, m, n, w, mono, mono)
    b = _scores(q, k, m + shift, n + shift, w, mono, mono)
    assert a == pytest.approx(b, abs=1e-6 * (1 + abs(a)))


@given(half_dims, seeds, st.integers(0, 10**5), st.integers(0, 10**5), st.floats(0.0, 1.0))
def test_scores_are_a_relative_part_plus_a_bounded_remainder(half, seed, m, n, std):
    # s(m, n) = R(m - n) + E(m, n) with R the diagonal terms of the exponential series and
    # |E| <= sum_k |q_k||k_k| ((sum_u |a_uk|)^2 - sum_u |a_uk|^2).
    rng = np.random.default_rng(seed)
    w = inv_freq(2 * half, 10000.0)
    c, s = fope_coefficients(half, half, std=std, seed=seed)
    q, k = rng.normal(size=(2, 1, 2 * half))
    freqs, a = fope_series(w, c, s)
    qk = _complex_pairs(q[0]) * np.conj(_complex_pairs(k[0]))
    relative = float(np.real(np.sum(qk * (np.exp(1j * freqs * (m - n)) @ np.abs(a) ** 2))))
    bound = float(np.sum(np.abs(qk) * (np.abs(a).sum(0) ** 2 - (np.abs(a) ** 2).sum(0))))
    assert abs(_scores(q, k, m, n, w, c, s) - relative) <= bound + 1e-9


def test_what_a_common_shift_breaks():
    # One frequency, cosine and sine coefficients a != b: the score gains
    # (a^2 - b^2)/2 cos(w (m + n)) Re(q conj k), which a shift moves.
    w, a, b = np.array([0.3]), 1.0, 0.5
    q, k = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0]])
    s1 = _scores(q, k, 4, 1, w, [[a]], [[b]])
    s2 = _scores(q, k, 14, 11, w, [[a]], [[b]])
    for m, n, got in ((4, 1, s1), (14, 11, s2)):
        want = (a * a + b * b) / 2 * math.cos(0.3 * (m - n)) + (a * a - b * b) / 2 * math.cos(
            0.3 * (m + n)
        )
        assert got == pytest.approx(want, rel=1e-12)
    assert abs(s1 - s2) > 0.1
    # and mixing two frequencies with C = S: the cross terms move with the shift too
    w2 = np.array([1.0, 0.3])
    mix = np.array([[1.0, 0.0], [0.5, 1.0]])
    q2, k2 = np.array([[1.0, 0.0, 0.0, 0.0]]), np.array([[1.0, 0.0, 0.0, 0.0]])
    assert abs(_scores(q2, k2, 4, 1, w2, mix, mix) - _scores(q2, k2, 14, 11, w2, mix, mix)) > 0.1


def test_kept_frequencies_and_initial_coefficients():
    w = inv_freq(64, 10000.0)
    kept = fope_kept(w, 512)
    assert kept.sum() == 16  # the authors' 60M setting: head 64, L = 512
    assert np.all(2 * np.pi / w[kept] <= 512) and np.all(2 * np.pi / w[~kept] > 512)
    assert fope_kept(w, None).all()
    assert fope_kept([2 * np.pi / 100], 100).tolist() == [True]
    c, s = fope_coefficients(6, 3, std=0.0, heads=2)
    assert c.shape == (2, 6, 3) and np.array_equal(c, s)
    assert np.array_equal(c[0], [[1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0]])
    c1, s1 = fope_coefficients(4, 4, std=0.3, seed=5)
    c2, _ = fope_coefficients(4, 4, std=0.3, seed=5)
    assert np.array_equal(c1, c2) and not np.array_equal(c1, s1)
    assert abs(np.std(fope_coefficients(200, 200, std=0.3)[0] - np.eye(200)) - 0.3) < 0.01


def test_per_head_sets_follow_key_value_groups():
    rng = np.random.default_rng(0)
    w = inv_freq(4, 10000.0)
    c, s = rng.normal(size=(2, 2, 2, 2))
    x = rng.normal(size=(4, 3, 4))  # 4 query heads on 2 key-value heads
    y = apply_fope(x, [0, 5, 9], w, c, s)
    for h in range(4):
        np.testing.assert_array_equal(y[h], apply_fope(x[h], [0, 5, 9], w, c[h // 2], s[h // 2]))


def test_all_clipped_passes_everything_through():
    w = inv_freq(4, 10000.0)
    x = np.arange(8.0).reshape(2, 4)
    y = apply_fope(x, [3, 700], w, np.zeros((0, 0)), np.zeros((0, 0)), train_length=1)
    assert np.array_equal(y, x)


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        (dict(cos_coef=np.eye(3)), ValueError, "cos_coef"),
        (dict(sin_coef=np.eye(2)[None]), ValueError, "same shape"),
        (dict(cos_coef=np.ones((2, 3)), sin_coef=np.ones((2, 3))), ValueError, "cos_coef"),
        (dict(cos_coef=np.ones(2), sin_coef=np.ones(2)), ValueError, "cos_coef"),
        (dict(sin_coef=[[np.nan, 0], [0, 1]]), ValueError, "sin_coef"),
        (dict(train_length=0), ValueError, "train_length"),
        (dict(train_length=2.5), TypeError, "train_length"),
        (dict(train_length=True), TypeError, "train_length"),
        (dict(clipped="zero"), ValueError, "clipped"),
        (dict(pairing="pairs"), ValueError, "pairing"),
        (dict(positions=[0.0]), ValueError, "positions"),
        (dict(positions=[0.0, np.inf]), ValueError, "positions"),
        (dict(inv_freq=[1.0, 0.0]), ValueError, "inv_freq"),
        (dict(inv_freq=[1.0]), ValueError, "len\\(inv_freq\\)"),
        (dict(x=np.ones((2, 4), dtype=complex)), TypeError, "x"),
        (
            dict(x=np.ones((3, 2, 4)), cos_coef=np.ones((2, 2, 2)), sin_coef=np.ones((2, 2, 2))),
            ValueError,
            "head axis",
        ),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, name):
    args = dict(
        x=np.ones((2, 4)),
        positions=[0.0, 1.0],
        inv_freq=[1.0, 0.1],
        cos_coef=np.eye(2),
        sin_coef=np.eye(2),
    )
    args.update(kwargs)
    with pytest.raises(error, match=name):
        apply_fope(**args)


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: fope_coefficients(-1, 2, std=0.1), ValueError, "num_freqs"),
        (lambda: fope_coefficients(2, 2.0, std=0.1), TypeError, "num_pairs"),
        (lambda: fope_coefficients(2, 2, std=-0.1), ValueError, "std"),
        (lambda: fope_coefficients(2, 2, std=0.1, heads=0), ValueError, "heads"),
        (lambda: fope_kept([1.0, -1.0], 4), ValueError, "inv_freq"),
        (
            lambda: fope_series([1.0, 0.5], [[1.0], [1.0]], np.ones((2, 2))),
            ValueError,
            "same shape",
        ),
    ],
)
def test_bad_input_to_the_helpers(call, error, name):
    with pytest.raises(error, match=name):
        call()
