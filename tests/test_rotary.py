"""Properties, oracles and error paths of refimpl.rotary."""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import oracles
import pytest
from hypothesis import given
from hypothesis import strategies as st

import refimpl
from refimpl.rotary import (
    angles,
    apply_rope,
    apply_rope_complex,
    cos_sin,
    half_to_interleaved_weights,
    interleaved_to_half_weights,
    inv_freq,
    pair_indices,
    pairing_permutation,
    rotation_matrix,
)

PAIRINGS = ["half", "interleaved"]

# ---------------------------------------------------------------- strategies

half_dims = st.integers(1, 8)  # d/2
bases = st.floats(1.5, 1e6, allow_nan=False, allow_infinity=False)
positions_f = st.floats(-1000.0, 1000.0, allow_nan=False, allow_infinity=False)
pairings = st.sampled_from(PAIRINGS)
finite = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def rope_inputs(draw, max_seq=5):
    """x of shape (seq, d), positions (seq,), base, pairing."""
    h = draw(half_dims)
    seq = draw(st.integers(1, max_seq))
    x = draw(hnp.arrays(np.float64, (seq, 2 * h), elements=finite))
    pos = np.array(draw(st.lists(positions_f, min_size=seq, max_size=seq)))
    return x, pos, draw(bases), draw(pairings)


# ---------------------------------------------------------------- inv_freq / angles / cos_sin


@given(h=half_dims, base=bases)
def test_inv_freq_matches_loop_oracle_and_decreases(h, base):
    f = inv_freq(2 * h, base)
    assert f.shape == (h,) and f.dtype == np.float64
    np.testing.assert_allclose(f, oracles.inv_freq(2 * h, base), rtol=1e-14)
    assert f[0] == 1.0  # 0-based: theta_0 = 1 rad/token
    assert np.all(np.diff(f) < 0)
    assert f[-1] > 1.0 / base  # the smallest is base**(-(d-2)/d), never 1/base


def test_inv_freq_known_values():
    np.testing.assert_allclose(inv_freq(8, 10000.0), [1.0, 0.1, 0.01, 0.001], rtol=1e-15)
    np.testing.assert_allclose(inv_freq(2, 500000.0), [1.0])


@given(
    pos=st.lists(positions_f, min_size=1, max_size=6),
    f=st.lists(st.floats(1e-6, 2.0), min_size=1, max_size=5),
)
def test_angles_are_the_outer_product(pos, f):
    a = angles(pos, f)
    assert a.shape == (len(pos), len(f))
    for m, p in enumerate(pos):
        for i, th in enumerate(f):
            assert a[m, i] == p * th


@given(h=half_dims, base=bases, pos=st.lists(positions_f, min_size=1, max_size=6))
def test_cos_sin_matches_math_and_dim_equals_inv_freq(h, base, pos):
    f = inv_freq(2 * h, base)
    c, s = cos_sin(pos, f)
    c2, s2 = cos_sin(pos, dim=2 * h, base=base)
    np.testing.assert_array_equal(c, c2)
    np.testing.assert_array_equal(s, s2)
    for m, p in enumerate(pos):
        for i, th in enumerate(f):
            assert c[m, i] == pytest.approx(math.cos(p * th), abs=1e-12)
            assert s[m, i] == pytest.approx(math.sin(p * th), abs=1e-12)
    np.testing.assert_allclose(c**2 + s**2, 1.0, atol=1e-12)


@given(scale=st.floats(0.1, 10.0), pos=st.lists(positions_f, min_size=1, max_size=4))
def test_cos_sin_attention_scaling_multiplies(scale, pos):
    c1, s1 = cos_sin(pos, dim=6)
    cs, ss = cos_sin(pos, dim=6, attention_scaling=scale)
    np.testing.assert_allclose(cs, scale * c1, rtol=1e-15, atol=0)
    np.testing.assert_allclose(ss, scale * s1, rtol=1e-15, atol=0)


# ---------------------------------------------------------------- the rotation matrix


@given(h=half_dims, base=bases, pairing=pairings)
def test_R0_is_identity(h, base, pairing):
    np.testing.assert_array_equal(
        rotation_matrix(0, inv_freq(2 * h, base), pairing=pairing), np.eye(2 * h)
    )


@given(h=half_dims, base=bases, m=positions_f, n=positions_f, pairing=pairings)
def test_Rm_Rn_is_R_m_plus_n(h, base, m, n, pairing):
    f = inv_freq(2 * h, base)
    lhs = rotation_matrix(m, f, pairing=pairing) @ rotation_matrix(n, f, pairing=pairing)
    np.testing.assert_allclose(lhs, rotation_matrix(m + n, f, pairing=pairing), atol=1e-9)


@given(h=half_dims, base=bases, m=positions_f, n=positions_f, pairing=pairings)
def test_RmT_Rn_is_R_n_minus_m(h, base, m, n, pairing):
    f = inv_freq(2 * h, base)
    lhs = rotation_matrix(m, f, pairing=pairing).T @ rotation_matrix(n, f, pairing=pairing)
    np.testing.assert_allclose(lhs, rotation_matrix(n - m, f, pairing=pairing), atol=1e-9)


@given(h=half_dims, base=bases, m=positions_f, pairing=pairings)
def test_rotation_matrix_is_orthogonal_with_det_one(h, base, m, pairing):
    R = rotation_matrix(m, inv_freq(2 * h, base), pairing=pairing)
    np.testing.assert_allclose(R.T @ R, np.eye(2 * h), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-9)


@given(h=half_dims, base=bases, m=positions_f, pairing=pairings)
def test_rotation_matrix_matches_loop_oracle(h, base, m, pairing):
    f = inv_freq(2 * h, base)
    np.testing.assert_allclose(
        rotation_matrix(m, f, pairing=pairing),
        oracles.rotation_matrix(m, list(f), pairing),
        atol=1e-12,
    )


def test_rotation_matrix_sign_is_counter_clockwise():
    # e_1 rotated by +90 degrees is e_2: multiplication by exp(+i m theta)
    R = rotation_matrix(1.0, [math.pi / 2], pairing="interleaved")
    np.testing.assert_allclose(R @ [1.0, 0.0], [0.0, 1.0], atol=1e-15)


# ---------------------------------------------------------------- apply_rope


@given(rope_inputs())
def test_apply_rope_equals_matrix_oracle_and_complex(data):
    x, pos, base, pairing = data
    d = x.shape[-1]
    f = inv_freq(d, base)
    y = apply_rope(x, pos, base=base, pairing=pairing)
    by_matrix = np.stack(
        [rotation_matrix(p, f, pairing=pairing) @ v for p, v in zip(pos, x, strict=True)]
    )
    np.testing.assert_allclose(y, by_matrix, atol=1e-10)
    np.testing.assert_allclose(y, oracles.rope(x.tolist(), list(pos), list(f), pairing), atol=1e-10)
    if pairing == "interleaved":
        np.testing.assert_allclose(y, apply_rope_complex(x, pos, f), atol=1e-10)
        np.testing.assert_allclose(
            apply_rope_complex(x, pos, f),
            oracles.rope_complex(x.tolist(), list(pos), list(f)),
            atol=1e-10,
        )


@given(rope_inputs())
def test_apply_rope_base_and_inv_freq_agree(data):
    x, pos, base, pairing = data
    f = inv_freq(x.shape[-1], base)
    np.testing.assert_array_equal(
        apply_rope(x, pos, base=base, pairing=pairing),
        apply_rope(x, pos, inv_freq=f, pairing=pairing),
    )


@given(rope_inputs())
def test_apply_rope_preserves_norms(data):
    x, pos, base, pairing = data
    y = apply_rope(x, pos, base=base, pairing=pairing)
    np.testing.assert_allclose(
        np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12, atol=1e-12
    )


@given(rope_inputs())
def test_apply_rope_at_position_zero_is_identity(data):
    x, _, base, pairing = data
    np.testing.assert_array_equal(
        apply_rope(x, np.zeros(x.shape[0]), base=base, pairing=pairing), x
    )


@given(
    h=half_dims,
    base=bases,
    pairing=pairings,
    m=positions_f,
    n=positions_f,
    shift=positions_f,
    seed=st.integers(0, 2**32 - 1),
)
def test_scores_depend_only_on_n_minus_m(h, base, pairing, m, n, shift, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 1, 2 * h))
    s1 = (
        apply_rope(q, [m], base=base, pairing=pairing)
        @ apply_rope(k, [n], base=base, pairing=pairing).T
    )
    s2 = (
        apply_rope(q, [m + shift], base=base, pairing=pairing)
        @ apply_rope(k, [n + shift], base=base, pairing=pairing).T
    )
    # and equal to q . R_{n-m} k (key minus query)
    s3 = q @ rotation_matrix(n - m, inv_freq(2 * h, base), pairing=pairing) @ k.T
    np.testing.assert_allclose(s1, s2, atol=1e-8)
    np.testing.assert_allclose(s1, s3, atol=1e-8)


@given(rope_inputs())
def test_pairings_agree_after_permutation(data):
    x, pos, base, _ = data
    p = pairing_permutation(x.shape[-1])
    np.testing.assert_allclose(
        apply_rope(x, pos, base=base, pairing="interleaved")[..., p],
        apply_rope(x[..., p], pos, base=base, pairing="half"),
        atol=1e-12,
    )
    f = inv_freq(x.shape[-1], base)
    P = np.eye(x.shape[-1])[p]  # x_half = P x_interleaved
    np.testing.assert_allclose(
        P @ rotation_matrix(1.7, f, pairing="interleaved") @ P.T,
        rotation_matrix(1.7, f, pairing="half"),
        atol=1e-15,
    )


@given(
    rot_h=st.integers(1, 4),
    extra=st.integers(0, 5),
    seq=st.integers(1, 4),
    base=bases,
    pairing=pairings,
    seed=st.integers(0, 2**32 - 1),
)
def test_partial_rotary_rotates_head_and_keeps_tail(rot_h, extra, seq, base, pairing, seed):
    r = 2 * rot_h
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, seq, r + extra))
    pos = rng.uniform(-50, 50, seq)
    y = apply_rope(x, pos, base=base, pairing=pairing, rotary_dim=r)
    np.testing.assert_array_equal(y[..., r:], x[..., r:])
    np.testing.assert_allclose(
        y[..., :r], apply_rope(x[..., :r], pos, base=base, pairing=pairing), atol=0
    )
    # frequencies use the rotary width as denominator: base**(-2i/r)
    f = inv_freq(r, base)
    np.testing.assert_allclose(
        y[0],
        oracles.rope(x[0].tolist(), list(pos), list(f), pairing, rotary_dim=r),
        atol=1e-10,
    )
    y2 = apply_rope(x, pos, inv_freq=f, pairing=pairing, rotary_dim=r)
    np.testing.assert_array_equal(y, y2)
    if extra:  # a short inv_freq never implies a partial rotation
        with pytest.raises(ValueError, match=f"pass rotary_dim={r}"):
            apply_rope(x, pos, inv_freq=f, pairing=pairing)


@given(data=rope_inputs(), scale=st.floats(0.1, 10.0))
def test_attention_scaling_multiplies_rotated_features(data, scale):
    x, pos, base, pairing = data
    y1 = apply_rope(x, pos, base=base, pairing=pairing)
    ys = apply_rope(x, pos, base=base, pairing=pairing, attention_scaling=scale)
    np.testing.assert_allclose(ys, scale * y1, rtol=1e-14, atol=1e-14)


def test_attention_scaling_does_not_touch_pass_through():
    x = np.ones((1, 6))
    y = apply_rope(x, [0.0], rotary_dim=2, attention_scaling=2.0)
    np.testing.assert_array_equal(y, [[2.0, 2.0, 1.0, 1.0, 1.0, 1.0]])


@given(data=rope_inputs(), dtype=st.sampled_from([np.float32, np.float16]))
def test_dtype_kept_and_rounded_once(data, dtype):
    x, pos, base, pairing = data
    xl = x.astype(dtype)
    y = apply_rope(xl, pos, base=base, pairing=pairing)
    assert y.dtype == dtype
    ref = apply_rope(xl.astype(np.float64), pos, base=base, pairing=pairing)
    np.testing.assert_array_equal(y, ref.astype(dtype))
    if pairing == "interleaved":
        yc = apply_rope_complex(xl, pos, inv_freq(x.shape[-1], base))
        assert yc.dtype == dtype


def test_ints_and_lists_become_float64():
    y = apply_rope([[1, 0], [0, 1]], [0, 1])
    assert y.dtype == np.float64
    y = apply_rope(np.array([[1, 0]], dtype=np.int32), [3])
    assert y.dtype == np.float64


def test_apply_rope_batch_axes_broadcast_over_heads():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 8))  # (batch, heads, seq, dim)
    pos = np.arange(4) + 7
    y = apply_rope(x, pos, pairing="interleaved")
    for b in range(2):
        for hh in range(3):
            np.testing.assert_array_equal(
                y[b, hh], apply_rope(x[b, hh], pos, pairing="interleaved")
            )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_apply_rope_out(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 8)).astype(dtype)
    out = np.empty_like(x)
    res = apply_rope(x, [1, 2, 3], out=out)
    assert res is out
    np.testing.assert_array_equal(out, apply_rope(x, [1, 2, 3]))


def test_apply_rope_first_pair_rotates_one_radian_per_token():
    # the book's convention, checked against values written from the definition
    x = np.array([[1.0, 0.0, 0.0, 0.0]])
    for pairing, (a, b) in (("half", (0, 2)), ("interleaved", (0, 1))):
        y = apply_rope(x, [2.0], pairing=pairing)
        assert y[0, a] == pytest.approx(math.cos(2.0))
        assert y[0, b] == pytest.approx(math.sin(2.0))


# ---------------------------------------------------------------- permutations and weights


@pytest.mark.parametrize("dim", [2, 4, 8, 64])
def test_pairing_permutation_definition(dim):
    p = pairing_permutation(dim)
    assert sorted(p) == list(range(dim))
    h = dim // 2
    for i in range(h):
        assert p[i] == 2 * i and p[i + h] == 2 * i + 1
    first_h, second_h = pair_indices(dim, "half")
    first_i, second_i = pair_indices(dim, "interleaved")
    np.testing.assert_array_equal(p[first_h], first_i)
    np.testing.assert_array_equal(p[second_h], second_i)


@given(
    n_heads=st.integers(1, 4),
    h=st.integers(1, 4),
    d_in=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_weight_conversions_are_inverse_and_match_oracle(n_heads, h, d_in, seed):
    rng = np.random.default_rng(seed)
    rows = n_heads * 2 * h
    w = rng.standard_normal((rows, d_in))
    b = rng.standard_normal(rows)
    w_half = interleaved_to_half_weights(w, n_heads)
    np.testing.assert_array_equal(w_half, w[oracles.interleaved_to_half_rows(rows, n_heads)])
    np.testing.assert_array_equal(half_to_interleaved_weights(w_half, n_heads), w)
    np.testing.assert_array_equal(
        interleaved_to_half_weights(half_to_interleaved_weights(w, n_heads), n_heads), w
    )
    np.testing.assert_array_equal(
        half_to_interleaved_weights(interleaved_to_half_weights(b, n_heads), n_heads), b
    )
    # the same as transformers' view (n_heads, d/2, 2, in) -> swap axes 1, 2
    viewed = w.reshape(n_heads, h, 2, d_in).transpose(0, 2, 1, 3).reshape(rows, d_in)
    np.testing.assert_array_equal(w_half, viewed)


def _heads(y, n, hd):
    """(seq, n*hd) -> (n, seq, hd)"""
    return y.reshape(y.shape[0], n, hd).transpose(1, 0, 2)


@given(
    n_kv=st.integers(1, 3),
    group=st.integers(1, 3),
    h=st.integers(1, 4),
    seq=st.integers(1, 5),
    base=bases,
    seed=st.integers(0, 2**32 - 1),
)
def test_switching_pairing_with_converted_weights_keeps_scores(n_kv, group, h, seq, base, seed):
    """Toy GQA attention: Meta-style (interleaved) weights and RoPE vs converted weights with
    half-split RoPE give identical q.k for every head."""
    rng = np.random.default_rng(seed)
    hd, n_q, d_model = 2 * h, n_kv * group, 6
    wq = rng.standard_normal((n_q * hd, d_model))
    wk = rng.standard_normal((n_kv * hd, d_model))
    x = rng.standard_normal((seq, d_model))
    pos = np.arange(seq) + rng.integers(0, 100)

    def scores(wq_, wk_, pairing):
        q = apply_rope(_heads(x @ wq_.T, n_q, hd), pos, base=base, pairing=pairing)
        k = apply_rope(_heads(x @ wk_.T, n_kv, hd), pos, base=base, pairing=pairing)
        k = np.repeat(k, group, axis=0)  # each key head serves `group` query heads
        return q @ np.swapaxes(k, -1, -2)  # (n_q, seq, seq)

    s_meta = scores(wq, wk, "interleaved")
    s_hf = scores(
        interleaved_to_half_weights(wq, n_q), interleaved_to_half_weights(wk, n_kv), "half"
    )
    np.testing.assert_allclose(s_hf, s_meta, atol=1e-9)
    # and back
    s_back = scores(
        half_to_interleaved_weights(interleaved_to_half_weights(wq, n_q), n_q),
        half_to_interleaved_weights(interleaved_to_half_weights(wk, n_kv), n_kv),
        "interleaved",
    )
    np.testing.assert_allclose(s_back, s_meta, atol=1e-9)


def test_gqa_trap_permuting_keys_with_query_head_count_changes_scores():
    rng = np.random.default_rng(3)
    n_q, n_kv, hd, d_model, seq = 4, 2, 8, 16, 6
    wq = rng.standard_normal((n_q * hd, d_model))
    wk = rng.standard_normal((n_kv * hd, d_model))
    x = rng.standard_normal((seq, d_model))
    pos = np.arange(seq)

    def scores(wq_, wk_, pairing):
        q = apply_rope(_heads(x @ wq_.T, n_q, hd), pos, pairing=pairing)
        k = np.repeat(apply_rope(_heads(x @ wk_.T, n_kv, hd), pos, pairing=pairing), 2, axis=0)
        return q @ np.swapaxes(k, -1, -2)

    good = scores(
        interleaved_to_half_weights(wq, n_q), interleaved_to_half_weights(wk, n_kv), "half"
    )
    wrong = scores(
        interleaved_to_half_weights(wq, n_q), interleaved_to_half_weights(wk, n_q), "half"
    )
    np.testing.assert_allclose(good, scores(wq, wk, "interleaved"), atol=1e-9)
    assert np.max(np.abs(wrong - good)) > 1.0


def test_using_the_wrong_pairing_changes_scores():
    # the symptom behind many "gibberish after a few tokens" reports
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((2, 1, 16))
    s = {p: apply_rope(q, [40.0], pairing=p) @ apply_rope(k, [0.0], pairing=p).T for p in PAIRINGS}
    assert abs(s["half"] - s["interleaved"]).item() > 1e-3


# ---------------------------------------------------------------- error paths


@pytest.mark.parametrize(
    ("dim", "exc", "msg"),
    [
        (7, ValueError, "dim must be even"),
        (0, ValueError, "dim must be positive"),
        (-4, ValueError, "dim must be positive"),
        (4.0, TypeError, "dim must be an integer"),
        (True, TypeError, "dim must be an integer"),
        ("8", TypeError, "dim must be an integer"),
    ],
)
def test_inv_freq_rejects_bad_dim(dim, exc, msg):
    with pytest.raises(exc, match=msg):
        inv_freq(dim)
    with pytest.raises(exc, match=msg):
        pairing_permutation(dim)


@pytest.mark.parametrize(
    ("base", "exc", "msg"),
    [
        (1.0, ValueError, "base must be greater than 1"),
        (0.5, ValueError, "base must be greater than 1"),
        (-10.0, ValueError, "base must be greater than 1"),
        (float("nan"), ValueError, "base must be finite"),
        (float("inf"), ValueError, "base must be finite"),
        ("10000", TypeError, "base must be a real number"),
    ],
)
def test_bad_base(base, exc, msg):
    with pytest.raises(exc, match=msg):
        inv_freq(8, base)
    with pytest.raises(exc, match=msg):
        apply_rope(np.ones((1, 4)), [0], base=base)
    with pytest.raises(exc, match=msg):
        cos_sin([0], dim=4, base=base)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_positions(bad):
    with pytest.raises(ValueError, match="positions must be finite"):
        apply_rope(np.ones((2, 4)), [0.0, bad])
    with pytest.raises(ValueError, match="positions must be finite"):
        angles([bad], [1.0])
    with pytest.raises(ValueError, match="positions must be finite"):
        apply_rope_complex(np.ones((1, 2)), [bad], [1.0])


def test_position_errors():
    with pytest.raises(ValueError, match=r"positions must be \(seq,\) or \(batch, seq\)"):
        apply_rope(np.ones((2, 4)), [[[0, 1]]])
    with pytest.raises(ValueError, match=r"batch = 1 need x of shape \(batch, \.\.\., seq, dim\)"):
        apply_rope(np.ones((2, 4)), [[0, 1]])  # (batch, seq) ids need a batch axis on x
    with pytest.raises(TypeError, match="positions must be integers or reals"):
        apply_rope(np.ones((1, 4)), ["a"])
    with pytest.raises(ValueError, match=r"positions has 3 entries but x has seq = 2"):
        apply_rope(np.ones((2, 4)), [0, 1, 2])
    with pytest.raises(ValueError, match=r"positions has 1 entries but x has seq = 2"):
        apply_rope_complex(np.ones((2, 4)), [0], [1.0, 0.1])
    with pytest.raises(ValueError, match="below 2\\*\\*53"):
        angles(np.array([2**60], dtype=np.int64), [1.0])


def test_x_errors():
    with pytest.raises(ValueError, match="x must have at least 2 dimension"):
        apply_rope(np.ones(4), [0])
    with pytest.raises(ValueError, match="x must contain only finite values"):
        apply_rope([[1.0, np.nan]], [0])
    with pytest.raises(TypeError, match="x must be a real numeric array"):
        apply_rope(np.ones((1, 2), dtype=complex), [0])
    with pytest.raises(ValueError, match="x's last dimension must be even"):
        apply_rope(np.ones((1, 5)), [0])
    with pytest.raises(ValueError, match="x's last dimension"):
        apply_rope_complex(np.ones((1, 4)), [0], [1.0])


def test_rotary_dim_and_inv_freq_errors():
    x = np.ones((1, 8))
    with pytest.raises(ValueError, match="rotary_dim=10 exceeds the feature dimension of x"):
        apply_rope(x, [0], rotary_dim=10)
    with pytest.raises(ValueError, match="rotary_dim must be even"):
        apply_rope(x, [0], rotary_dim=3)
    with pytest.raises(ValueError, match="rotary_dim must be positive"):
        apply_rope(x, [0], rotary_dim=0)
    with pytest.raises(TypeError, match="rotary_dim must be an integer"):
        apply_rope(x, [0], rotary_dim=4.0)
    with pytest.raises(ValueError, match="inv_freq has 2 entries but rotary_dim=8 needs 4"):
        apply_rope(x, [0], inv_freq=[1.0, 0.1], rotary_dim=8)
    with pytest.raises(ValueError, match="exceeds the feature dimension"):
        apply_rope(x, [0], inv_freq=np.ones(5))
    with pytest.raises(ValueError, match="inv_freq must be positive"):
        apply_rope(x, [0], inv_freq=[1.0, 0.0, 0.1, 0.01])
    with pytest.raises(ValueError, match="inv_freq must not be empty"):
        angles([0], [])
    with pytest.raises(ValueError, match="inv_freq must have 1 dimension"):
        angles([0], [[1.0]])
    with pytest.raises(ValueError, match="inv_freq must contain only finite"):
        angles([0], [np.inf])
    with pytest.raises(ValueError, match=r"inv_freq has 2 entries but dim=8 needs dim // 2 = 4"):
        cos_sin([0], [1.0, 0.5], dim=8)
    with pytest.raises(TypeError, match="cos_sin needs either inv_freq or dim"):
        cos_sin([0])


@pytest.mark.parametrize(
    ("pairing", "exc", "msg"),
    [
        ("neox", ValueError, "pairing must be one of"),
        ("Half", ValueError, "pairing must be one of"),
        (None, TypeError, "pairing must be a string"),
        (1, TypeError, "pairing must be a string"),
    ],
)
def test_unknown_pairing(pairing, exc, msg):
    with pytest.raises(exc, match=msg):
        apply_rope(np.ones((1, 4)), [0], pairing=pairing)
    with pytest.raises(exc, match=msg):
        rotation_matrix(0.0, [1.0], pairing=pairing)
    with pytest.raises(exc, match=msg):
        pair_indices(4, pairing)


def test_cos_sin_method_and_scaling_errors():
    with pytest.raises(ValueError, match="method must be one of"):
        cos_sin([0], dim=4, method="exact")
    with pytest.raises(ValueError, match="attention_scaling must be finite"):
        cos_sin([0], dim=4, attention_scaling=np.nan)
    with pytest.raises(ValueError, match="attention_scaling must be finite"):
        apply_rope(np.ones((1, 4)), [0], attention_scaling=np.inf)
    with pytest.raises(TypeError, match="attention_scaling must be a real number"):
        apply_rope(np.ones((1, 4)), [0], attention_scaling="2")


def test_rotation_matrix_errors():
    with pytest.raises(ValueError, match="position must be finite"):
        rotation_matrix(np.nan, [1.0])
    with pytest.raises(TypeError, match="position must be a real number"):
        rotation_matrix([1.0], [1.0])


def test_out_errors():
    x = np.ones((2, 4))
    with pytest.raises(ValueError, match=r"out must have shape \(2, 4\)"):
        apply_rope(x, [0, 1], out=np.empty((2, 5)))
    with pytest.raises(ValueError, match="out must have dtype float64"):
        apply_rope(x, [0, 1], out=np.empty((2, 4), dtype=np.float32))
    with pytest.raises(TypeError, match=r"out must be a numpy\.ndarray"):
        apply_rope(x, [0, 1], out=[[0.0] * 4] * 2)


def test_weight_conversion_errors():
    with pytest.raises(ValueError, match="w has 12 rows, not divisible by n_heads=5"):
        interleaved_to_half_weights(np.ones((12, 3)), 5)
    with pytest.raises(ValueError, match=r"head_dim \(rows // n_heads\) must be even"):
        interleaved_to_half_weights(np.ones((6, 3)), 2)
    with pytest.raises(ValueError, match="n_heads must be positive"):
        half_to_interleaved_weights(np.ones((8, 3)), 0)
    with pytest.raises(TypeError, match="n_heads must be an integer"):
        half_to_interleaved_weights(np.ones((8, 3)), 2.0)
    with pytest.raises(ValueError, match="w must be a weight"):
        interleaved_to_half_weights(np.ones((2, 2, 2)), 1)
    with pytest.raises(TypeError, match="w must be a numeric array"):
        interleaved_to_half_weights(np.array(["a", "b"]), 1)


def test_top_level_reexports():
    for name in ("apply_rope", "rotation_matrix", "pairing_permutation", "cos_sin"):
        assert getattr(refimpl, name) is globals()[name]


# ---------------------------------------------------------------- the reference rotation


@given(data=rope_inputs(max_seq=6), dtype=st.sampled_from([np.float64, np.float32, np.float16]))
def test_reference_rotation_is_the_loop_formula_and_the_kernel_equals_it(data, dtype):
    """reference_rotation is the loop oracle's formula bit for bit; apply_rope is the
    reference rounded once to the input's dtype, bit for bit."""
    from refimpl.rotary import reference_rotation

    x, pos, base, pairing = data
    x = x.astype(dtype)
    d = x.shape[-1]
    c, s = cos_sin(pos, dim=d, base=base)
    ref = reference_rotation(x, c, s, pairing=pairing)
    loop = np.array(
        oracles.rope(x.astype(np.float64).tolist(), pos.tolist(), oracles_freqs(d, base), pairing)
    )
    assert np.array_equal(ref, loop)
    got = apply_rope(x, pos, base=base, pairing=pairing)
    assert np.array_equal(got, ref.astype(dtype))


def oracles_freqs(d, base):
    """The package's float64 frequencies (the loop oracle takes them as given)."""
    return inv_freq(d, base).tolist()


def test_reference_rotation_errors():
    from refimpl.rotary import reference_rotation

    with pytest.raises(ValueError, match=r"cos and sin must both have shape \(seq, r/2\)"):
        reference_rotation(np.ones((3, 4)), np.ones((3, 1)), np.ones((3, 1)))
    with pytest.raises(ValueError, match="dim must be even"):
        reference_rotation(np.ones((3, 5)), np.ones((3, 2)), np.ones((3, 2)))
