"""Positions of audio frames: Whisper's sinusoidal table over frames, RoPE over time (frame
indices or seconds) and 2-D time × frequency RoPE for spectrogram patches.

An audio encoder sees a log-mel spectrogram cut into frames (Whisper: 10 ms hops, two frames
per token after its stride-2 convolution) or into patches of a (time, frequency) grid (AST,
BEATs). Time is a sequence axis like text; frequency is a second axis on which patches at the
same height share a band. Each encoding here keeps the relative property along each axis.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    MAX_POSITION,
    as_positions,
    check_base,
    check_count,
    check_dim,
    check_exact_range,
    check_positive,
    check_positive_int,
    check_table_size,
)
from .multiaxis import apply_rope_2d

__all__ = [
    "WHISPER_MAX_TIMESCALE",
    "apply_rope_time_frequency",
    "frame_times",
    "spectrogram_patch_grid",
    "whisper_shift_matrix",
    "whisper_sinusoids",
]

# Whisper's longest timescale (the `max_timescale` default of openai/whisper `sinusoids`).
WHISPER_MAX_TIMESCALE = 10000.0


def _whisper_inv_timescales(channels: int, max_timescale: float) -> np.ndarray:
    c = check_dim(channels, "channels")
    if c < 4:
        raise ValueError(f"channels must be at least 4 (the increment divides by c/2 - 1), got {c}")
    t = check_positive(max_timescale, "max_timescale")
    if t <= 1:
        raise ValueError(f"max_timescale must be greater than 1, got {t}")
    inc = np.log(t) / (c // 2 - 1)
    return np.exp(-inc * np.arange(c // 2))  # [eq:whisper-sinusoids]


def whisper_sinusoids(
    length: int, channels: int, max_timescale: float = WHISPER_MAX_TIMESCALE
) -> np.ndarray:
    r"""Whisper's encoder position table: sines in the first half, cosines in the second.

    Parameters
    ----------
    length : int
        Number of frames (Whisper: 1500 after the stride-2 convolution over 3000 mel frames).
    channels : int
        Model width ``C`` (even, at least 4).
    max_timescale : float, default 10000.0
        Longest timescale ``T``.

    Returns
    -------
    numpy.ndarray, shape (length, C), float64
        ``PE[p, i] = sin(p ω_i)`` and ``PE[p, C/2 + i] = cos(p ω_i)`` with
        :math:`\omega_i = T^{-i/(C/2 - 1)}` (:eq:`eq:whisper-sinusoids`): the exponent divides by
        ``C/2 - 1``, not by ``C/2`` as in :func:`refimpl.absolute.sinusoidal`, so the slowest
        channel has period exactly :math:`2\pi T`; and sin / cos are halves, not interleaved.

    Examples
    --------
    >>> whisper_sinusoids(2, 4, 100.0).round(4).tolist()
    [[0.0, 0.0, 1.0, 1.0], [0.8415, 0.01, 0.5403, 1.0]]
    """
    n = check_count(length, "length", maximum=MAX_POSITION)
    w = _whisper_inv_timescales(channels, max_timescale)
    check_table_size(n, w.shape[0] * 2, "the whisper table (length, channels)")
    ang = np.multiply.outer(np.arange(n, dtype=np.float64), w)
    return np.concatenate([np.sin(ang), np.cos(ang)], axis=1)


def whisper_shift_matrix(
    k: float, channels: int, max_timescale: float = WHISPER_MAX_TIMESCALE
) -> np.ndarray:
    r"""The matrix :math:`M_k` with ``whisper_sinusoids`` row ``p + k`` = :math:`M_k` · row ``p``.

    Parameters
    ----------
    k : float
        Frame offset.
    channels, max_timescale
        As in :func:`whisper_sinusoids`.

    Returns
    -------
    numpy.ndarray, shape (C, C), float64
        Rotation by :math:`k\omega_i` of the pair ``(i, C/2 + i)`` (:eq:`eq:whisper-shift`).

    Examples
    --------
    >>> m = whisper_shift_matrix(3, 8)
    >>> pe = whisper_sinusoids(10, 8)
    >>> bool(np.allclose(m @ pe[2], pe[5]))
    True
    """
    w = _whisper_inv_timescales(channels, max_timescale)
    kk = float(as_positions([k], "k")[0])
    h = w.shape[0]
    c, s = np.cos(kk * w), np.sin(kk * w)
    m = np.zeros((2 * h, 2 * h))
    i = np.arange(h)
    # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
    m[i, i], m[i, h + i] = c, s  # [eq:whisper-shift]
    m[h + i, i], m[h + i, h + i] = -s, c
    return m


def frame_times(
    num_frames: int, *, hop_length: int = 160, sample_rate: int = 16000, stride: int = 1
) -> np.ndarray:
    """Start time in seconds of each encoder frame: ``f · stride · hop_length / sample_rate``.

    Parameters
    ----------
    num_frames : int
    hop_length : int, default 160
        Samples between spectrogram frames (Whisper: 160 at 16 kHz = 10 ms).
    sample_rate : int, default 16000
    stride : int, default 1
        Frames merged per token by the encoder's first layers (Whisper: 2).

    Returns
    -------
    numpy.ndarray, shape (num_frames,), float64
        Usable as RoPE positions in seconds (scale them by tokens per second for indices).
        Each time is the correctly rounded quotient of the exact sample index
        ``f * stride * hop_length`` (an integer, at most 2**53) by ``sample_rate``.

    Examples
    --------
    >>> frame_times(3, stride=2).tolist()
    [0.0, 0.02, 0.04]
    """
    n = check_count(num_frames, "num_frames", maximum=MAX_POSITION)
    hop = check_positive_int(hop_length, "hop_length")
    sr = check_positive_int(sample_rate, "sample_rate")
    st = check_positive_int(stride, "stride")
    check_exact_range(0, max(n - 1, 1) * st * hop, "the last frame's sample index")
    return np.arange(n, dtype=np.int64) * (st * hop) / sr


def spectrogram_patch_grid(n_time: int, n_freq: int, *, order: str = "freq-major"):
    """Time and frequency index of every patch of a spectrogram cut into an ``n_freq × n_time``
    grid, in the order the encoder flattens it.

    Parameters
    ----------
    n_time, n_freq : int
        Patches along time and along the mel axis.
    order : {"freq-major", "time-major"}, default "freq-major"
        ``"freq-major"``: rows are frequency bands (AST flattens its ``(F, T)`` patch grid this
        way); ``"time-major"``: all bands of one time step, then the next (streaming encoders).

    Returns
    -------
    times, freqs : numpy.ndarray of int64, each shape (n_time · n_freq,)

    Examples
    --------
    >>> [a.tolist() for a in spectrogram_patch_grid(3, 2)]
    [[0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1]]
    """
    t = check_positive_int(n_time, "n_time")
    f = check_positive_int(n_freq, "n_freq")
    check_table_size(t, f, "the patch grid (n_time, n_freq)")
    if order not in ("freq-major", "time-major"):
        raise ValueError(f"order must be 'freq-major' or 'time-major', got {order!r}")
    if order == "freq-major":
        ff, tt = np.meshgrid(np.arange(f), np.arange(t), indexing="ij")
    else:
        tt, ff = np.meshgrid(np.arange(t), np.arange(f), indexing="ij")
    return tt.ravel(), ff.ravel()


def apply_rope_time_frequency(
    x, times, freqs, *, base: float = 10000.0, inv_freq=None, pairing: str = "half"
) -> np.ndarray:
    r"""2-D RoPE over (time, frequency) patch coordinates: half of the pairs follow time, half
    the mel band (:func:`refimpl.multiaxis.apply_rope_2d` with rows = time, cols = band).

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
        Queries or keys of the patches; ``dim`` divisible by 4.
    times, freqs : array_like, shape (seq,)
        Time position (frame index or seconds) and band index of every patch.
    base, inv_freq, pairing
        As in :func:`refimpl.multiaxis.apply_rope_2d`.

    Returns
    -------
    numpy.ndarray, shape (..., seq, dim)

    Notes
    -----
    Scores depend on :math:`(\Delta t, \Delta f)` only (:eq:`eq:audio-tf-score`): a sound moved
    in time or transposed in pitch by whole bands keeps its attention pattern.

    Examples
    --------
    >>> y = apply_rope_time_frequency(np.ones((2, 8)), [0, 0], [0, 0])
    >>> bool(np.allclose(y, 1.0))
    True
    """
    check_base(base)
    return apply_rope_2d(x, times, freqs, base=base, inv_freq=inv_freq, pairing=pairing)
