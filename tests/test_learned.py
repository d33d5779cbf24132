"""Learnable frequencies (scores, analytic gradients vs finite differences, fitting), per-head
RoPE and the mixed encoding."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import (
    apply_rope,
    apply_rope_per_head,
    fit_inv_freq,
    inv_freq,
    max_stable_lr,
    mixed_encoding,
    pair_coefficients,
    relative_defect,
    relative_profile,
    relative_profile_grad,
    rope_scores,
    rope_scores_grad,
    sinusoidal,
)

PAIRINGS = st.sampled_from(["half", "interleaved"])


@given(PAIRINGS, st.integers(0, 1000))
def test_scores_equal_dot_products_of_rotated_vectors(pairing, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(4, 8))
    k = rng.normal(size=(5, 8))
    f = rng.uniform(0.01, 2.0, size=4)
    pq = rng.integers(0, 300, size=4)
    pk = rng.integers(0, 300, size=5)
    want = (
        apply_rope(q, pq, inv_freq=f, pairing=pairing)
        @ apply_rope(k, pk, inv_freq=f, pairing=pairing).T
    )
    got = rope_scores(q, k, pq, f, pairing=pairing, k_positions=pk)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@given(PAIRINGS, st.integers(0, 1000))
def test_gradient_matches_central_finite_differences(pairing, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(3, 6))
    k = rng.normal(size=(3, 6))
    f = rng.uniform(0.05, 1.0, size=3)
    pos = np.array([0.0, 5.0, 17.0])
    g = rope_scores_grad(q, k, pos, f, pairing=pairing, scale=0.5)
    assert g.shape == (3, 3, 3)
    h = 1e-6
    for i in range(3):
        e = np.zeros(3)
        e[i] = h
        fd = (
            rope_scores(q, k, pos, f + e, pairing=pairing, scale=0.5)
            - rope_scores(q, k, pos, f - e, pairing=pairing, scale=0.5)
        ) / (2 * h)
        np.testing.assert_allclose(g[..., i], fd, rtol=1e-5, atol=1e-6)


def test_gradient_vanishes_on_the_diagonal_and_grows_with_distance():
    q = np.ones((1, 2))
    g = rope_scores_grad(q, np.ones((3, 2)), [0.0], [1e-3], k_positions=[0, 10, 100])
    assert g[0, 0, 0] == 0.0
    assert abs(g[0, 2, 0]) > 50 * abs(g[0, 1, 0]) > 0


@given(st.integers(0, 1000))
def test_profile_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    d = np.arange(0, 40.0)
    f = rng.uniform(0.01, 1.0, size=4)
    a, b = rng.normal(size=(2, 4))
    g = relative_profile_grad(d, f, a, b)
    h = 1e-6
    for i in range(4):
        e = np.zeros(4)
        e[i] = h
        fd = (relative_profile(d, f + e, a, b) - relative_profile(d, f - e, a, b)) / (2 * h)
        np.testing.assert_allclose(g[:, i], fd, rtol=1e-5, atol=1e-6)


def test_profile_is_the_score_of_equal_query_and_key():
    rng = np.random.default_rng(2)
    q = rng.normal(size=(1, 8))
    a, b = pair_coefficients(q, q)
    np.testing.assert_allclose(b, 0, atol=1e-15)
    f = inv_freq(8)
    k_pos = np.arange(10.0)
    s = rope_scores(q, np.repeat(q, 10, 0), [0.0], f, k_positions=k_pos)[0]
    np.testing.assert_allclose(s, relative_profile(k_pos, f, a[0, 0]), rtol=1e-12)


def test_fit_recovers_a_correction_of_the_geometric_spectrum():
    d = np.arange(0, 64.0)
    init = inv_freq(16, 100.0)
    a = np.ones(8)
    true = init * np.exp(0.05 * np.random.default_rng(0).standard_normal(8))
    target = relative_profile(d, true, a)
    lr_max = max_stable_lr(d, true, a)
    fit = fit_inv_freq(d, target, init, a, lr=0.5 * lr_max, steps=3000, parametrization="linear")
    assert not fit.diverged
    assert fit.losses[-1] < 1e-6 * fit.losses[0]
    err = np.abs(fit.inv_freq / true - 1)
    assert np.all(err[:5] < 1e-3)  # pairs that turn by several radians over 64 tokens
    # the slowest pair turns by about one radian over the window: barely identifiable, slow
    assert err[-1] > 10 * err[0]
    # four times the stable step diverges
    bad = fit_inv_freq(d, target, init, a, lr=4 * lr_max, steps=3000, parametrization="linear")
    assert bad.diverged or bad.losses[-1] > 1e-3


def test_stable_lr_scales_like_inverse_square_distance():
    f = inv_freq(16, 100.0)
    a = np.ones(8)
    r = max_stable_lr(np.arange(0, 64.0), f, a) / max_stable_lr(np.arange(0, 256.0), f, a)
    assert 8 < r < 32  # 4x the distances -> 9x smaller step (16x if purely 1/D^2)
    assert max_stable_lr(np.arange(0, 64.0), f, a, parametrization="log") > max_stable_lr(
        np.arange(0, 64.0), f, a
    )


def test_fit_from_far_away_gets_stuck_in_a_local_minimum():
    d = np.arange(0, 64.0)
    target = relative_profile(d, [0.9, 0.2, 0.05], np.ones(3))
    fit = fit_inv_freq(d, target, [0.7, 0.25, 0.03], np.ones(3), lr=1e-3, steps=3000)
    assert not fit.diverged and fit.losses[-1] > 0.1


def test_identical_initial_frequencies_never_separate():
    # symmetry: equal frequencies with equal coefficients get equal gradients
    d = np.arange(0, 32.0)
    target = relative_profile(d, [0.8, 0.1], [1.0, 1.0])
    fit = fit_inv_freq(d, target, [0.3, 0.3], [1.0, 1.0], lr=1e-3, steps=300)
    assert fit.inv_freq[0] == fit.inv_freq[1]


def test_per_head_rope_equals_a_loop():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 4, 8))
    f = rng.uniform(0.01, 1, size=(3, 4))
    pos = np.array([0, 3, 7, 20])
    y = apply_rope_per_head(x, pos, f, pairing="interleaved")
    for h in range(3):
        np.testing.assert_allclose(
            y[:, h], apply_rope(x[:, h], pos, inv_freq=f[h], pairing="interleaved")
        )
    assert apply_rope_per_head(x.astype(np.float32), pos, f).dtype == np.float32


def test_mixed_encoding_definition_and_defect():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(10, 8))
    pos = np.arange(10)
    np.testing.assert_allclose(mixed_encoding(x, pos, 0.0), apply_rope(x, pos))
    np.testing.assert_allclose(
        mixed_encoding(x, pos, 2.0), apply_rope(x, pos) + 2 * sinusoidal(pos, 8)
    )
    q, k = rng.normal(size=(2, 8))
    L = 32
    Q, K = np.tile(q, (L, 1)), np.tile(k, (L, 1))
    defects = []
    for alpha in (0.0, 0.3, 1.0):
        h_q = mixed_encoding(Q, np.arange(L), alpha)
        h_k = mixed_encoding(K, np.arange(L), alpha)
        defects.append(float(relative_defect(h_q @ h_k.T)))
    assert defects[0] < 1e-20
    assert defects[1] > 1e-3 and defects[2] > defects[1]
    # the alpha^2 term alone (PE . PE) is relative
    pe = sinusoidal(np.arange(L), 8)
    assert relative_defect(pe @ pe.T) < 1e-20


def test_relative_defect_batches_and_bounds():
    rng = np.random.default_rng(9)
    s = rng.normal(size=(3, 6, 6))
    d = relative_defect(s)
    assert d.shape == (3,) and np.all((d >= 0) & (d <= 1))
    assert relative_defect(np.ones((4, 4))) == 0.0


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (
            lambda: rope_scores(np.ones((2, 4)), np.ones((2, 4)), [0, 1], [1.0]),
            ValueError,
            "inv_freq must have dim/2 = 2",
        ),
        (
            lambda: rope_scores(np.ones((2, 4)), np.ones((2, 3)), [0, 1], [1.0, 1.0]),
            ValueError,
            "share an even feature size",
        ),
        (
            lambda: rope_scores(np.ones((2, 4)), np.ones((2, 4)), [0], [1.0, 1.0]),
            ValueError,
            "must match q_len",
        ),
        (
            lambda: rope_scores(np.ones((2, 4)), np.ones((2, 4)), [0, 1], [1.0, -1.0]),
            ValueError,
            "inv_freq must be positive",
        ),
        (
            lambda: rope_scores_grad(np.ones((2, 4)), np.ones((2, 4)), [0, 1], [1.0, 1.0], scale=0),
            ValueError,
            "scale must be positive",
        ),
        (
            lambda: relative_profile([0, 1], [1.0, 2.0], [1.0]),
            ValueError,
            "one entry per frequency",
        ),
        (
            lambda: fit_inv_freq([0, 1], [1.0], [1.0], [1.0]),
            ValueError,
            "target must have one value per distance",
        ),
        (
            lambda: fit_inv_freq([0, 1], [1.0, 1.0], [1.0], [1.0], lr=0),
            ValueError,
            "lr must be positive",
        ),
        (
            lambda: fit_inv_freq([0, 1], [1.0, 1.0], [1.0], [1.0], steps=0),
            ValueError,
            "steps must be positive",
        ),
        (
            lambda: fit_inv_freq([0, 1], [1.0, 1.0], [1.0], [1.0], parametrization="exp"),
            ValueError,
            "parametrization must be one of",
        ),
        (
            lambda: apply_rope_per_head(np.ones((2, 3, 4)), [0, 1, 2], np.ones((3, 2))),
            ValueError,
            "inv_freq must have shape \\(n_heads, dim/2\\)",
        ),
        (
            lambda: apply_rope_per_head(np.ones((2, 3, 4)), [0, 1, 2], -np.ones((2, 2))),
            ValueError,
            "inv_freq must be positive",
        ),
        (
            lambda: apply_rope_per_head(np.ones((3, 4)), [0, 1, 2], np.ones((1, 2))),
            ValueError,
            "x must have at least 3",
        ),
        (
            lambda: mixed_encoding(np.ones((2, 4)), [0, 1], np.nan),
            ValueError,
            "alpha must be finite",
        ),
        (
            lambda: mixed_encoding(np.ones((2, 4)), [0, 1], 1.0, pe_base=0.5),
            ValueError,
            "pe_base must be greater than 1",
        ),
        (lambda: relative_defect(np.ones((3, 4))), ValueError, "scores must be square"),
        (
            lambda: max_stable_lr([0.0], [1.0], [1.0]),
            ValueError,
            "does not depend on the frequencies",
        ),
        (
            lambda: max_stable_lr([1.0], [1.0], [1.0], parametrization="x"),
            ValueError,
            "parametrization must be one of",
        ),
    ],
)
def test_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()
