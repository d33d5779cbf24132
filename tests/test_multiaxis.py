"""2-D axial RoPE and multimodal M-RoPE: relative scores, degeneracy, errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import (
    apply_rope,
    apply_rope_2d,
    apply_rope_tables,
    axial_2d_angles,
    cos_sin,
    inv_freq,
    mrope_cos_sin,
)

PAIRINGS = st.sampled_from(["half", "interleaved"])


@given(PAIRINGS, st.integers(-50, 50), st.integers(-50, 50))
def test_apply_rope_tables_equals_apply_rope(pairing, p0, p1):
    rng = np.random.default_rng(p0 + 100 + p1)
    x = rng.normal(size=(3, 2, 12))
    c, s = cos_sin([p0, p1], inv_freq(12))
    np.testing.assert_array_equal(
        apply_rope_tables(x, c, s, pairing=pairing), apply_rope(x, [p0, p1], pairing=pairing)
    )


@given(
    st.tuples(st.integers(0, 40), st.integers(0, 40)),
    st.tuples(st.integers(0, 40), st.integers(0, 40)),
    st.tuples(st.integers(-30, 30), st.integers(-30, 30)),
    PAIRINGS,
)
def test_2d_scores_depend_only_on_row_and_column_offsets(a, b, shift, pairing):
    rng = np.random.default_rng(a[0] * 41 + b[1])
    q, k = rng.normal(size=(2, 16))
    rows = np.array([a[0], b[0]])
    cols = np.array([a[1], b[1]])
    x = np.stack([q, k])
    y1 = apply_rope_2d(x, rows, cols, pairing=pairing)
    y2 = apply_rope_2d(x, rows + shift[0], cols + shift[1], pairing=pairing)
    assert y1[0] @ y1[1] == pytest.approx(y2[0] @ y2[1], rel=1e-9, abs=1e-9)


def test_2d_is_two_1d_ropes_on_the_axis_halves():
    # half pairing: pairs 0..d/4-1 follow the rows, d/4..d/2-1 the columns
    rng = np.random.default_rng(3)
    d = 16
    x = rng.normal(size=(5, d))
    rows, cols = np.array([0, 1, 2, 3, 9]), np.array([4, 0, 7, 1, 2])
    y = apply_rope_2d(x, rows, cols, pairing="interleaved")
    f = inv_freq(d // 2)
    np.testing.assert_allclose(
        y[:, : d // 2],
        apply_rope(x[:, : d // 2], rows, inv_freq=f, pairing="interleaved"),
        atol=1e-13,
    )
    np.testing.assert_allclose(
        y[:, d // 2 :],
        apply_rope(x[:, d // 2 :], cols, inv_freq=f, pairing="interleaved"),
        atol=1e-13,
    )
    # a token on row r, column 0 is rotated by the row only
    y0 = apply_rope_2d(x, rows, np.zeros(5))
    h = d // 2
    ang = axial_2d_angles(rows, np.zeros(5), f)
    assert np.all(ang[:, d // 4 :] == 0)
    np.testing.assert_allclose(y0[:, d // 4 : h], x[:, d // 4 : h])


def test_2d_relative_score_map_is_translation_invariant_on_a_grid():
    rng = np.random.default_rng(4)
    q, k = rng.normal(size=(2, 32))
    H = W = 6
    r, c = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    r, c = r.ravel(), c.ravel()
    qs = apply_rope_2d(np.tile(q, (H * W, 1)), r, c)
    ks = apply_rope_2d(np.tile(k, (H * W, 1)), r, c)
    S = qs @ ks.T
    table = {}
    for a in range(H * W):
        for b in range(H * W):
            key = (r[b] - r[a], c[b] - c[a])
            table.setdefault(key, []).append(S[a, b])
    spread = max(np.ptp(v) for v in table.values())
    assert spread < 1e-11
    assert len(table) == (2 * H - 1) * (2 * W - 1)


@given(
    st.lists(st.integers(0, 100000), min_size=1, max_size=30),
    st.sampled_from(["blocked", "interleaved"]),
)
def test_mrope_text_tokens_reduce_to_1d_rope(pos, layout):
    ids = np.stack([pos, pos, pos])
    f = inv_freq(128, 1e6)
    c, s = mrope_cos_sin(ids, f, [16, 24, 24], layout=layout)
    c1, s1 = cos_sin(pos, f)
    assert np.array_equal(c, c1) and np.array_equal(s, s1)


def test_mrope_sections_assign_pairs_to_axes():
    f = np.full(8, 1.0)
    ids = np.array([[1], [10], [100]])
    c, s = mrope_cos_sin(ids, f, [2, 3, 3])
    ang = np.arctan2(s, c)[0]
    np.testing.assert_allclose(
        ang, np.angle(np.exp(1j * np.array([1, 1, 10, 10, 10, 100, 100, 100])))
    )
    ci, si = mrope_cos_sin(ids, np.full(12, 1.0), [4, 4, 4], layout="interleaved")
    angi = np.arctan2(si, ci)[0]
    want = [1, 10, 100, 1, 10, 100, 1, 10, 100, 1, 10, 100]
    np.testing.assert_allclose(angi, np.angle(np.exp(1j * np.array(want, float))))
    c2, _ = mrope_cos_sin(ids, f, [2, 3, 3], attention_scaling=2.0)
    np.testing.assert_allclose(c2, 2 * c)


def test_mrope_scores_relative_per_axis():
    rng = np.random.default_rng(7)
    q, k = rng.normal(size=(2, 16))
    f = inv_freq(16)
    ids = np.array([[3, 5], [2, 9], [4, 1]])
    c, s = mrope_cos_sin(ids, f, [2, 3, 3])
    y = apply_rope_tables(np.stack([q, k]), c, s)
    c2, s2 = mrope_cos_sin(ids + np.array([[7], [-2], [11]]), f, [2, 3, 3])
    y2 = apply_rope_tables(np.stack([q, k]), c2, s2)
    assert y[0] @ y[1] == pytest.approx(y2[0] @ y2[1], rel=1e-12)


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: apply_rope_2d(np.ones((2, 6)), [0, 1], [0, 1]), ValueError, "divisible by 4"),
        (
            lambda: apply_rope_2d(np.ones((2, 8)), [0, 1], [0]),
            ValueError,
            "rows and cols must have the same length",
        ),
        (lambda: apply_rope_2d(np.ones((2, 8)), [0, 1, 2], [0, 1, 2]), ValueError, "x has seq = 2"),
        (
            lambda: apply_rope_2d(np.ones((2, 8)), [0, 1], [0, 1], inv_freq=[1.0]),
            ValueError,
            "dim // 4 = 2",
        ),
        (
            lambda: apply_rope_2d(np.ones((2, 8)), [0, 1], [0, 1], base=1.0),
            ValueError,
            "base must be greater than 1",
        ),
        (
            lambda: apply_rope_tables(np.ones((2, 4)), np.ones((2, 3)), np.ones((2, 3))),
            ValueError,
            "must be in 1..4",
        ),
        (
            lambda: mrope_cos_sin(np.zeros((2, 4)), np.ones(4), [1, 1, 2]),
            ValueError,
            "shape \\(3, seq\\)",
        ),
        (
            lambda: mrope_cos_sin(np.zeros((3, 4)), np.ones(4), [1, 1, 1]),
            ValueError,
            "must sum to len\\(inv_freq\\)",
        ),
        (
            lambda: mrope_cos_sin(np.zeros((3, 4)), np.ones(4), [2, 2]),
            ValueError,
            "3 or 4 non-negative integers",
        ),
        (
            lambda: mrope_cos_sin(np.zeros((3, 4)), np.ones(4), [2, 1, 1], layout="x"),
            ValueError,
            "layout must be one of",
        ),
        (
            lambda: mrope_cos_sin(np.full((3, 4), np.nan), np.ones(4), [2, 1, 1]),
            ValueError,
            "position_ids must be finite",
        ),
        (
            lambda: mrope_cos_sin(np.array([["a"] * 2] * 3), np.ones(4), [2, 1, 1]),
            TypeError,
            "position_ids must be a numeric",
        ),
    ],
)
def test_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_mrope_attention_scaling_must_be_positive():
    from refimpl import mrope_cos_sin

    with pytest.raises(ValueError, match="attention_scaling must be positive"):
        mrope_cos_sin(np.zeros((3, 2)), [1.0, 0.1], [1, 1, 0], attention_scaling=0.0)
