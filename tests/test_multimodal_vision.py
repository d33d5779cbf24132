"""Vision 2-D RoPE variants (Pixtral, Llama 4, timm, RoPE-Mixed) against loop oracles written
from the model sources, and the relative property of each (hypothesis)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.multiaxis import (
    apply_rope_tables,
    llama4_vision_angles,
    pixtral_angles,
    pixtral_flat_ids,
    rope_mixed_angles,
    rope_mixed_fit,
    rope_mixed_frequencies,
    rope_mixed_frequency_grad,
    rope_mixed_scores,
    timm_pixel_bands,
    timm_rope_angles,
)

DIMS = st.sampled_from([4, 8, 16, 64])


@given(DIMS, st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=1, max_size=9))
def test_pixtral_matches_loop_oracle(d, pts):
    rows, cols = (np.array(v) for v in zip(*pts, strict=True))
    got = pixtral_angles(rows, cols, dim=d, base=10000.0)
    for n, (r, c) in enumerate(pts):
        for j in range(d // 2):
            # pair j < D/4 uses theta_{2j} with h; pair D/4 + j uses theta_{2j+1} with w
            i, pos = (2 * j, r) if j < d // 4 else (2 * (j - d // 4) + 1, c)
            assert got[n, j] == pytest.approx(pos * 10000.0 ** (-2 * i / d), rel=1e-15)


def test_pixtral_flat_ids_decode_to_the_same_rows_and_columns():
    rows, cols = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    flat = pixtral_flat_ids(rows.ravel(), cols.ravel(), 24)
    np.testing.assert_array_equal(flat // 24, rows.ravel())
    np.testing.assert_array_equal(flat % 24, cols.ravel())
    with pytest.raises(ValueError, match="cols must lie in"):
        pixtral_flat_ids([0], [24], 24)


@given(st.integers(1, 6), st.sampled_from([4, 8, 16]))
def test_llama4_matches_loop_oracle(side, d):
    got = llama4_vision_angles(side, dim=d, base=10000.0)
    assert got.shape == (side * side + 1, d // 2)
    f = [10000.0 ** (-2 * j / (d // 2)) for j in range(d // 4)]
    for p in range(side * side):
        x, y = p % side, p // side
        want = [(x + 1) * t for t in f] + [(y + 1) * t for t in f]
        np.testing.assert_allclose(got[p], want, rtol=1e-15)
    assert np.all(got[-1] == 0)  # class token: angle 0


@given(st.integers(1, 8), st.sampled_from([2.0, 16.0, 224.0]), st.booleans())
def test_timm_bands_match_formula(n, res, linear):
    got = timm_pixel_bands(n, max_res=res, linear=linear)
    for k in range(n):
        frac = k / (n - 1) if n > 1 else 0.0
        want = (1 + frac * (res / 2 - 1)) if linear else 2 ** (frac * (math.log2(res) - 1))
        assert got[k] == pytest.approx(math.pi * want, rel=1e-14)


@given(
    st.integers(1, 7),
    st.integers(1, 7),
    st.sampled_from([4, 8, 16]),
    st.one_of(st.none(), st.tuples(st.integers(1, 9), st.integers(1, 9))),
)
def test_timm_angles_match_loop_oracle(h, w, d, ref):
    got = timm_rope_angles((h, w), dim=d, max_res=32.0, ref_feat_shape=ref)
    bands = timm_pixel_bands(d // 4, max_res=32.0)
    n = 0
    for i in range(h):
        for j in range(w):
            y = -1.0 + 2.0 * i / (h - 1) if h > 1 else -1.0
            x = -1.0 + 2.0 * j / (w - 1) if w > 1 else -1.0
            if ref is not None:
                y, x = y / h * ref[0], x / w * ref[1]
            np.testing.assert_allclose(
                got[n], np.concatenate([y * bands, x * bands]), rtol=1e-12, atol=1e-12
            )
            n += 1


def test_timm_coordinates_span_minus_one_to_one_at_any_resolution():
    for shape in ((4, 4), (16, 16)):
        a = timm_rope_angles(shape, dim=8, max_res=8.0)
        # the first row band (pi) sees -1 at the top row and +1 at the bottom row
        assert a[0, 0] == pytest.approx(-np.pi) and a[-1, 0] == pytest.approx(np.pi)
    # ref_feat_shape maps a 16 x 16 grid onto the 4 x 4 pretraining extent (coords x 4 / 16)
    b = timm_rope_angles((16, 16), dim=8, max_res=8.0, ref_feat_shape=(4, 4))
    assert b[-1, 0] == pytest.approx(np.pi / 4)


@given(st.sampled_from([4, 8, 16]), st.integers(1, 4), st.integers(0, 10**6))
def test_rope_mixed_init_matches_formula(d, heads, seed):
    f = rope_mixed_frequencies(d, heads, base=10.0, seed=seed)
    alpha = np.random.default_rng(seed).uniform(0, 2 * np.pi, size=(heads, 1))
    mag = 10.0 ** (-4 * np.arange(d // 4) / d)
    np.testing.assert_allclose(
        f[0], np.hstack([mag * np.cos(alpha), mag * np.cos(alpha + np.pi / 2)])
    )
    np.testing.assert_allclose(
        f[1], np.hstack([mag * np.sin(alpha), mag * np.sin(alpha + np.pi / 2)])
    )


POINT = st.tuples(st.integers(-30, 30), st.integers(-30, 30))


@given(POINT, POINT, POINT, st.integers(0, 1000))
def test_every_variant_is_relative_in_both_axes(a, b, shift, seed):
    rng = np.random.default_rng(seed)
    d = 16
    q, k = rng.normal(size=(2, d))
    rows = np.array([a[0], b[0]])
    cols = np.array([a[1], b[1]])
    f = rng.uniform(-1, 1, size=(2, 1, d // 2))
    variants = {
        "pixtral": (lambda r, c: pixtral_angles(r, c, dim=d), "half"),
        "mixed": (lambda r, c: rope_mixed_angles(c, r, f)[0], "interleaved"),
    }
    for make, pairing in variants.values():
        sc = []
        for r, c in ((rows, cols), (rows + shift[0], cols + shift[1])):
            ang = make(r, c)
            y = apply_rope_tables(np.stack([q, k]), np.cos(ang), np.sin(ang), pairing=pairing)
            sc.append(y[0] @ y[1])
        assert sc[0] == pytest.approx(sc[1], rel=1e-9, abs=1e-9)


def test_rope_mixed_sees_diagonals_that_axial_frequencies_cannot():
    # one mixed frequency vector at 45 degrees: the offset (1, -1) does not rotate the pair
    f = np.array([[[1.0]], [[1.0]]])
    assert rope_mixed_angles([1], [-1], f)[0, 0, 0] == 0.0
    assert rope_mixed_angles([1], [1], f)[0, 0, 0] == 2.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: pixtral_angles([0], [0], dim=6), "divisible by 4"),
        (lambda: pixtral_angles([0, 1], [0], dim=8), "same length"),
        (lambda: llama4_vision_angles(0, dim=8), "side must be positive"),
        (lambda: timm_pixel_bands(4, max_res=1.0), "at least 2"),
        (lambda: timm_rope_angles((4,), dim=8), "feat_shape must be"),
        (lambda: timm_rope_angles((4, 4), dim=8, ref_feat_shape=(4,)), "ref_feat_shape must"),
        (lambda: rope_mixed_frequencies(10, 2), "divisible by 4"),
        (lambda: rope_mixed_angles([0], [0], np.ones((3, 1, 2))), "shape \\(2, n_heads, k\\)"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def mixed_case(seed, heads=2, d=8, n=5, m=4):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(heads, n, d))
    k = rng.normal(size=(heads, m, d))
    zq = rng.integers(-6, 7, size=(n, 2)).astype(float)
    zk = rng.integers(-6, 7, size=(m, 2)).astype(float)
    f = rope_mixed_frequencies(d, heads, seed=seed) * rng.uniform(0.5, 1.5)
    return q, k, zq, zk, f


@given(st.integers(0, 10**6), st.sampled_from(["interleaved", "half"]))
def test_rope_mixed_scores_are_the_rotated_dot_products(seed, pairing):
    q, k, zq, zk, f = mixed_case(seed)
    got = rope_mixed_scores(q, k, zq, zk, f, pairing=pairing)
    aq = rope_mixed_angles(zq[:, 0], zq[:, 1], f)  # (H, n, D/2)
    ak = rope_mixed_angles(zk[:, 0], zk[:, 1], f)
    for h in range(q.shape[0]):
        rq = apply_rope_tables(q[h], np.cos(aq[h]), np.sin(aq[h]), pairing=pairing)
        rk = apply_rope_tables(k[h], np.cos(ak[h]), np.sin(ak[h]), pairing=pairing)
        np.testing.assert_allclose(got[h], rq @ rk.T, atol=1e-10)


# central differences with step h: truncation ~h^2 |s'''| and rounding ~eps |s| / h
FD_STEP = 1e-6
FD_TOL = 1e-5


@given(st.integers(0, 10**6), st.sampled_from(["interleaved", "half"]))
def test_rope_mixed_frequency_grad_matches_finite_differences(seed, pairing):
    q, k, zq, zk, f = mixed_case(seed)
    g_up = np.random.default_rng(seed + 1).normal(size=(2, 5, 4))
    grad = rope_mixed_frequency_grad(q, k, zq, zk, f, g_up, pairing=pairing)
    assert grad.shape == f.shape
    for idx in np.ndindex(f.shape):
        fp, fm = f.copy(), f.copy()
        fp[idx] += FD_STEP
        fm[idx] -= FD_STEP
        lp = np.sum(g_up * rope_mixed_scores(q, k, zq, zk, fp, pairing=pairing))
        lm = np.sum(g_up * rope_mixed_scores(q, k, zq, zk, fm, pairing=pairing))
        assert grad[idx] == pytest.approx((lp - lm) / (2 * FD_STEP), abs=FD_TOL, rel=FD_TOL)


def test_rope_mixed_fit_recovers_a_turned_teacher():
    rng = np.random.default_rng(3)
    yy, xx = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    pos = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(float)
    q, k = rng.normal(size=(2, 1, 16, 8))
    f0 = rope_mixed_frequencies(8, 1, seed=0)
    c, s = np.cos(0.6), np.sin(0.6)  # the teacher turns every vector by 0.6 rad, scales 0.8
    teacher = 0.8 * np.stack([c * f0[0] - s * f0[1], s * f0[0] + c * f0[1]])
    target = rope_mixed_scores(q, k, pos, pos, teacher)
    f, losses = rope_mixed_fit(q, k, pos, target, f0, steps=250, lr=0.02)
    assert losses[0] > 1.0 and losses[-1] < 1e-8 * losses[0]
    np.testing.assert_allclose(f, teacher, atol=1e-4)
    # the fit starts where it is told and moves nothing when it starts at the answer
    same, flat = rope_mixed_fit(q, k, pos, target, teacher, steps=5)
    assert flat.max() < 1e-20 and np.allclose(same, teacher, atol=1e-6)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: rope_mixed_scores(
                np.ones((1, 2, 4)),
                np.ones((1, 2, 4)),
                [[0, 0]] * 2,
                [[0, 0]] * 2,
                np.ones((2, 1, 3)),
            ),
            "must have shape \\(1, n, 6\\)",
        ),
        (
            lambda: rope_mixed_scores(
                np.ones((1, 2, 4)), np.ones((1, 2, 4)), [[0, 0]], [[0, 0]] * 2, np.ones((2, 1, 2))
            ),
            "q_pos must have shape",
        ),
        (
            lambda: rope_mixed_scores(
                np.ones((1, 1, 4)), np.ones((1, 1, 4)), [[0, 0]], [[0, 0]], np.ones((3, 1, 2))
            ),
            "freqs must have shape",
        ),
        (
            lambda: rope_mixed_frequency_grad(
                np.ones((1, 1, 4)),
                np.ones((1, 1, 4)),
                [[0, 0]],
                [[0, 0]],
                np.ones((2, 1, 2)),
                np.ones((1, 2, 1)),
            ),
            "upstream must have",
        ),
        (
            lambda: rope_mixed_fit(
                np.ones((1, 1, 4)),
                np.ones((1, 1, 4)),
                [[0, 0]],
                np.ones((1, 1, 1)),
                np.ones((2, 1, 2)),
                steps=0,
            ),
            "steps",
        ),
    ],
)
def test_rope_mixed_training_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
