r"""FoPE: Fourier position embedding.

FoPE (Hua et al., 2025) keeps RoPE's rotation step but replaces the single frequency of each
pair by a short Fourier series over the RoPE frequencies, and removes the frequencies that a
model trained on :math:`L` tokens never sees complete a period.

*Clipping.* A frequency :math:`\omega_j` is kept when its period fits in the training length,

.. math:: \omega_j \ge \omega_{\mathrm{floor}} = 2\pi / L ;

the :math:`M` kept frequencies form the basis of the series, and the pairs that carry no
series are *clipped*: they get frequency zero (:math:`\cos = 1`, :math:`\sin = 0`), so they
pass through unrotated.

*Series.* Pair :math:`k < K` of head :math:`h` at position :math:`t` is multiplied by

.. math:: z_{hk}(t) = \sum_{j<M} C_{hjk}\cos(\omega_j t) + i\,S_{hjk}\sin(\omega_j t),

with separate cosine and sine coefficient matrices :math:`C, S` of shape ``(M, K)`` (shared by
all heads) or ``(H, M, K)`` (one per head, as the authors' code and vLLM's
``FourierRotaryEmbedding`` use). With :math:`C = S = I` and nothing clipped this is RoPE. The
same :math:`z` is a series of complex exponentials at :math:`\pm\omega_j`,

.. math:: z_{hk}(t) = \sum_j \tfrac{C_{hjk} + S_{hjk}}{2} e^{i\omega_j t}
          + \tfrac{C_{hjk} - S_{hjk}}{2} e^{-i\omega_j t}

(:func:`fope_series`), which is how the scores' relative part is read off.

The authors' code and vLLM fill the clipped pairs with :math:`\cos = \sin = 1` instead
(``clipped="pad-one"`` here): the pair is then multiplied by :math:`1 + i` at every position,
which doubles its score contribution and still depends on no position.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    as_float_array,
    as_inv_freq,
    as_positions,
    check_choice,
    check_count,
    check_nonnegative,
    check_positive_int,
)
from .rotary import pair_indices

__all__ = [
    "FOPE_CLIPPED_MODES",
    "apply_fope",
    "fope_coefficients",
    "fope_cos_sin",
    "fope_kept",
    "fope_series",
]

#: What a clipped pair is multiplied by: ``"zero-frequency"`` (the frequency set to zero:
#: cos = 1, sin = 0, the pair passes through) or ``"pad-one"`` (cos = sin = 1, what the
#: authors' code and vLLM's FourierRotaryEmbedding compute with ``F.pad(..., value=1)``).
FOPE_CLIPPED_MODES = ("zero-frequency", "pad-one")


def fope_kept(inv_freq, train_length: int | None) -> np.ndarray:
    r"""Which RoPE frequencies FoPE keeps: those whose period fits in the training length.

    Parameters
    ----------
    inv_freq : array_like, shape (d/2,)
        The RoPE frequencies :math:`\omega_j` (positive).
    train_length : int or None
        Training length :math:`L`; None keeps every frequency.

    Returns
    -------
    numpy.ndarray of bool, shape (d/2,)
        ``inv_freq >= 2 pi / L``: a period :math:`2\pi/\omega_j` longer than :math:`L` is
        clipped. (The authors' code clips ``inv_freq < 2 pi / L``, the same set; vLLM keeps
        ``inv_freq > 2 pi / L``, which differs only for a period of exactly :math:`L`.)

    Notes
    -----
    Book equation ``eq:fope-clip``.

    Examples
    --------
    >>> fope_kept([1.0, 0.1, 0.01], 100).tolist()
    [True, True, False]
    """
    w = as_inv_freq(inv_freq)
    if train_length is None:
        return np.ones(w.shape, dtype=bool)
    n = check_positive_int(train_length, "train_length")
    return w >= 2.0 * np.pi / n  # [eq:fope-clip]


def fope_coefficients(
    num_freqs: int, num_pairs: int, *, std: float, heads: int | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Coefficient matrices as FoPE initialises them: a (strided) identity plus Gaussian noise.

    Parameters
    ----------
    num_freqs : int
        :math:`M`, the number of kept frequencies (rows).
    num_pairs : int
        :math:`K`, the number of pairs that carry a series (columns).
    std : float
        Standard deviation of the noise, drawn independently for :math:`C` and :math:`S`.
        The authors' code draws it with ``torch.nn.init.xavier_normal_(gain=sigma)``, whose
        standard deviation is ``sigma * sqrt(2 / (fan_in + fan_out))`` (for a tensor
        ``(H, M, K)``: ``fan_in = M K``, ``fan_out = H K``).
    heads : int, optional
        Number of per-head coefficient sets; None gives shared ``(M, K)`` matrices.
    seed : int, default 0

    Returns
    -------
    cos_coef, sin_coef : numpy.ndarray, each shape (M, K) or (heads, M, K), float64
        Column :math:`k` has a one in row :math:`k\lceil M/K\rceil` (when that row exists),
        as the authors' ``get_step_eye``; with :math:`M = K` the identity.

    Notes
    -----
    Book equation ``eq:fope-init``.

    Examples
    --------
    >>> c, s = fope_coefficients(3, 3, std=0.0)
    >>> bool(np.array_equal(c, np.eye(3)) and np.array_equal(s, np.eye(3)))
    True
    """
    m = check_count(num_freqs, "num_freqs")
    k = check_count(num_pairs, "num_pairs")
    sd = check_nonnegative(std, "std")
    lead = () if heads is None else (check_positive_int(heads, "heads"),)
    rng = np.random.default_rng(check_count(seed, "seed"))
    eye = np.zeros((m, k))
    if m and k:
        step = -(-m // k)
        cols = np.arange(k)
        rows = cols * step
        eye[rows[rows < m], cols[rows < m]] = 1.0
    shape = (*lead, m, k)
    cos_coef = eye + sd * rng.standard_normal(shape)  # [eq:fope-init]
    sin_coef = eye + sd * rng.standard_normal(shape)  # [eq:fope-init]
    return cos_coef, sin_coef


def _coefficients(cos_coef, sin_coef, num_kept: int, half: int):
    c = as_float_array(cos_coef, "cos_coef").astype(np.float64)
    s = as_float_array(sin_coef, "sin_coef").astype(np.float64)
    for name, a in (("cos_coef", c), ("sin_coef", s)):
        if a.ndim not in (2, 3):
            raise ValueError(f"{name} must have shape (M, K) or (heads, M, K), got {a.shape}")
        if a.shape[-2] != num_kept:
            raise ValueError(
                f"{name} must have M = {num_kept} rows (one per kept frequency), "
                f"got shape {a.shape}"
            )
        if a.shape[-1] > half:
            raise ValueError(
                f"{name} must have at most K = d/2 = {half} columns (pairs), got shape {a.shape}"
            )
    if c.shape != s.shape:
        raise ValueError(
            f"cos_coef and sin_coef must have the same shape, got {c.shape} and {s.shape}"
        )
    return c, s


def fope_cos_sin(
    positions,
    inv_freq,
    cos_coef,
    sin_coef,
    *,
    train_length: int | None = None,
    clipped: str = "zero-frequency",
) -> tuple[np.ndarray, np.ndarray]:
    r"""FoPE's tables: the real and imaginary parts of :math:`z_{hk}(t)` for every pair.

    Parameters
    ----------
    positions : array_like, shape (seq,)
    inv_freq : array_like, shape (d/2,)
        The RoPE frequencies :math:`\omega_j`.
    cos_coef, sin_coef : array_like, each shape (M, K) or (H, M, K)
        :math:`C` and :math:`S`; :math:`M` = number of kept frequencies
        (:func:`fope_kept`), :math:`K \le d/2` pairs carry a series.
    train_length : int, optional
        :math:`L` for the clipping; None keeps every frequency.
    clipped : {"zero-frequency", "pad-one"}, default "zero-frequency"
        What pairs :math:`K \dots d/2 - 1` get: cos 1 and sin 0, or cos = sin = 1 (the
        authors' code and vLLM; see :data:`FOPE_CLIPPED_MODES`).

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, d/2) or (H, seq, d/2), float64
        ``cos[..., t, k]`` :math:`= \sum_j C_{jk}\cos\omega_j t`, ``sin`` likewise with
        :math:`S` and :math:`\sin`. They are not a rotation's tables:
        :math:`\cos^2 + \sin^2 \ne 1` in general.

    Notes
    -----
    Book equations ``eq:fope-clip`` and ``eq:fope-series``.

    Examples
    --------
    >>> c, s = fope_cos_sin([0.0, 1.0], [1.0], [[1.0]], [[1.0]])
    >>> np.allclose(c[:, 0], np.cos([0.0, 1.0])) and np.allclose(s[:, 0], np.sin([0.0, 1.0]))
    True
    """
    pos = as_positions(positions)
    w = as_inv_freq(inv_freq)
    kept = fope_kept(w, train_length)
    mode = check_choice(clipped, "clipped", FOPE_CLIPPED_MODES)
    c_coef, s_coef = _coefficients(cos_coef, sin_coef, int(kept.sum()), w.shape[0])
    angle = pos[:, None] * w[kept]  # (seq, M)  [eq:fope-series]
    cos = np.cos(angle) @ c_coef  # (..., seq, K)  [eq:fope-series]
    sin = np.sin(angle) @ s_coef  # [eq:fope-series]
    pad = [(0, 0)] * (cos.ndim - 1) + [(0, w.shape[0] - cos.shape[-1])]
    cos = np.pad(cos, pad, constant_values=1.0)  # clipped pairs: cos 0 = 1
    sin = np.pad(sin, pad, constant_values=1.0 if mode == "pad-one" else 0.0)
    return cos, sin


def fope_series(inv_freq, cos_coef, sin_coef, *, train_length: int | None = None):
    r"""FoPE's series as complex exponentials: frequencies and coefficients.

    Parameters
    ----------
    inv_freq : array_like, shape (d/2,)
    cos_coef, sin_coef : array_like, each shape (M, K) or (H, M, K)
    train_length : int, optional

    Returns
    -------
    freqs : numpy.ndarray, shape (2M,)
        :math:`(\omega_0, \dots, \omega_{M-1}, -\omega_0, \dots, -\omega_{M-1})` for the kept
        frequencies.
    coef : numpy.ndarray, shape (2M, K) or (H, 2M, K), float64
        :math:`(C + S)/2` for the positive frequencies, :math:`(C - S)/2` for the negative
        ones, so that :math:`z_{hk}(t) = \sum_u a_{huk} e^{i \nu_u t}`.

    Notes
    -----
    Book equation ``eq:fope-exponentials``. A pair's series has one term per output
    (:math:`C = S`, one non-zero per column) exactly when its scores are relative.

    Examples
    --------
    >>> f, a = fope_series([1.0], [[3.0]], [[1.0]])
    >>> f.tolist(), a[:, 0].tolist()
    ([1.0, -1.0], [2.0, 1.0])
    """
    w = as_inv_freq(inv_freq)
    kept = fope_kept(w, train_length)
    c, s = _coefficients(cos_coef, sin_coef, int(kept.sum()), w.shape[0])
    freqs = np.concatenate([w[kept], -w[kept]])
    coef = np.concatenate([(c + s) / 2.0, (c - s) / 2.0], axis=-2)  # [eq:fope-exponentials]
    return freqs, coef


def apply_fope(
    x,
    positions,
    inv_freq,
    cos_coef,
    sin_coef,
    *,
    train_length: int | None = None,
    clipped: str = "zero-frequency",
    pairing: str = "half",
) -> np.ndarray:
    r"""Embed queries or keys with FoPE.

    Parameters
    ----------
    x : array_like, shape (..., seq, d) for shared coefficients, (..., H_x, seq, d) per head
        With per-head coefficients ``(H, M, K)``, ``H_x`` must be a multiple of ``H``: head
        ``g`` uses set ``g // (H_x / H)``, as vLLM groups query heads on their key-value head.
    positions : array_like, shape (seq,)
    inv_freq : array_like, shape (d/2,)
    cos_coef, sin_coef : array_like, each shape (M, K) or (H, M, K)
    train_length : int, optional
    clipped : {"zero-frequency", "pad-one"}, default "zero-frequency"
    pairing : {"half", "interleaved"}, default "half"
        The authors' code and vLLM use the half pairing.

    Returns
    -------
    numpy.ndarray, shape of ``x``, float64
        Every pair :math:`(x_a, x_b)` becomes :math:`(x_a c - x_b s,\ x_a s + x_b c)` with
        the tables of :func:`fope_cos_sin`: the pair, read as :math:`x_a + i x_b`, times
        :math:`z_{hk}(t)`.

    Notes
    -----
    Book equation ``eq:fope-apply``. With ``cos_coef = sin_coef = I`` and no clipping this
    is :func:`refimpl.rotary.apply_rope` with the same ``inv_freq`` (tested).

    Examples
    --------
    >>> eye = np.eye(1)
    >>> apply_fope([[1.0, 0.0]], [np.pi / 2], [1.0], eye, eye).round(6) + 0.0
    array([[0., 1.]])
    """
    xa = as_float_array(x, "x", min_ndim=2).astype(np.float64)
    w = as_inv_freq(inv_freq)
    if xa.shape[-1] != 2 * w.shape[0]:
        raise ValueError(
            f"x must have d = 2 * len(inv_freq) = {2 * w.shape[0]} features, got {xa.shape[-1]}"
        )
    cos, sin = fope_cos_sin(
        positions, w, cos_coef, sin_coef, train_length=train_length, clipped=clipped
    )
    if cos.shape[-2] != xa.shape[-2]:
        raise ValueError(f"positions must have seq = {xa.shape[-2]} entries, got {cos.shape[-2]}")
    if cos.ndim == 3:
        heads = cos.shape[0]
        if xa.ndim < 3 or xa.shape[-3] % heads:
            raise ValueError(
                f"x must have a head axis (-3) that is a multiple of the {heads} "
                f"coefficient sets, got shape {xa.shape}"
            )
        group = xa.shape[-3] // heads
        cos, sin = np.repeat(cos, group, axis=0), np.repeat(sin, group, axis=0)
    first, second = pair_indices(xa.shape[-1], pairing)
    x1, x2 = xa[..., first], xa[..., second]
    out = np.empty_like(xa)
    out[..., first] = x1 * cos - x2 * sin  # [eq:fope-apply]
    out[..., second] = x1 * sin + x2 * cos  # [eq:fope-apply]
    return out
