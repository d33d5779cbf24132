"""Audio positions: Whisper's sinusoids against their formula, the shift matrix (relative
property over frames), RoPE over time and 2-D time x frequency RoPE relative along each axis."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.audio import (
    apply_rope_time_frequency,
    frame_times,
    spectrogram_patch_grid,
    whisper_shift_matrix,
    whisper_sinusoids,
)
from refimpl.rotary import apply_rope

CHANNELS = st.sampled_from([4, 6, 8, 64, 384])


@given(st.integers(1, 40), CHANNELS, st.sampled_from([100.0, 10000.0]))
def test_whisper_sinusoids_match_loop_formula(n, c, t):
    pe = whisper_sinusoids(n, c, t)
    h = c // 2
    for p in (0, n - 1, n // 2):
        for i in range(h):
            w = math.exp(-math.log(t) / (h - 1) * i)
            assert pe[p, i] == pytest.approx(math.sin(p * w), abs=1e-12)
            assert pe[p, h + i] == pytest.approx(math.cos(p * w), abs=1e-12)
    # the slowest channel's frequency is exactly 1 / max_timescale
    assert math.exp(-math.log(t)) == pytest.approx(1 / t)


@given(st.integers(0, 1500), st.integers(-700, 700), CHANNELS)
def test_whisper_shift_matrix_moves_rows(p, k, c):
    if p + k < 0:
        return
    pe = whisper_sinusoids(max(p, p + k) + 1, c)
    m = whisper_shift_matrix(k, c)
    np.testing.assert_allclose(m @ pe[p], pe[p + k], atol=1e-9)
    # M_k is orthogonal and depends on k only: the dot product of rows depends on the offset
    np.testing.assert_allclose(m.T @ m, np.eye(c), atol=1e-12)


@given(st.integers(0, 500), st.integers(0, 500), st.integers(-300, 300))
def test_whisper_dot_products_depend_on_the_frame_offset_only(p, q, shift):
    if min(p, q) + shift < 0:
        return
    pe = whisper_sinusoids(max(p, q) + max(shift, 0) + 1, 64)
    assert pe[p] @ pe[q] == pytest.approx(pe[p + shift] @ pe[q + shift], abs=1e-9)


def test_frame_times_and_rope_over_seconds_equals_rope_over_indices_scaled():
    t = frame_times(6, stride=2)  # Whisper: 20 ms per encoder frame
    np.testing.assert_allclose(t, np.arange(6) * 0.02)
    x = np.random.default_rng(0).normal(size=(6, 16))
    # RoPE over seconds with inv_freq f is RoPE over frame indices with f * 0.02
    f = 10000.0 ** (-np.arange(8) / 8)
    np.testing.assert_allclose(
        apply_rope(x, t, inv_freq=f), apply_rope(x, np.arange(6), inv_freq=f * 0.02), atol=1e-12
    )


POINT = st.tuples(st.integers(0, 200), st.integers(0, 127))


@given(
    POINT,
    POINT,
    st.integers(-100, 100),
    st.integers(-60, 60),
    st.sampled_from(["half", "interleaved"]),
)
def test_time_frequency_rope_is_relative_along_each_axis(a, b, dt, df, pairing):
    rng = np.random.default_rng(a[0] + 7 * b[1])
    q, k = rng.normal(size=(2, 32))
    x = np.stack([q, k])
    times = np.array([a[0], b[0]])
    bands = np.array([a[1], b[1]])
    y = apply_rope_time_frequency(x, times, bands, pairing=pairing)
    for mt, mf in ((dt, 0), (0, df), (dt, df)):
        z = apply_rope_time_frequency(x, times + mt, bands + mf, pairing=pairing)
        assert y[0] @ y[1] == pytest.approx(z[0] @ z[1], rel=1e-9, abs=1e-9)


def test_patch_grid_orders():
    t, f = spectrogram_patch_grid(4, 3)
    assert t.tolist() == [0, 1, 2, 3] * 3 and f.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    t2, f2 = spectrogram_patch_grid(4, 3, order="time-major")
    assert sorted(zip(t2, f2, strict=True)) == sorted(zip(t, f, strict=True))
    assert t2.tolist()[:3] == [0, 0, 0]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: whisper_sinusoids(3, 2), "at least 4"),
        (lambda: whisper_sinusoids(3, 5), "even"),
        (lambda: whisper_sinusoids(3, 8, 1.0), "greater than 1"),
        (lambda: frame_times(3, hop_length=0), "hop_length must be positive"),
        (lambda: spectrogram_patch_grid(2, 2, order="diag"), "order must be"),
        (lambda: apply_rope_time_frequency(np.ones((2, 6)), [0, 1], [0, 1]), "divisible by 4"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
