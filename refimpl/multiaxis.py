"""RoPE over several position axes: axial 2-D RoPE for image patches and Qwen2-VL's
multimodal M-RoPE (temporal, height and width sections over the pairs).

Both assign each rotation pair to one axis; pair ``i`` of a token is rotated by the angle
``p_a(i) * theta_i`` where ``p_a(i)`` is the token's coordinate on the pair's axis. Scores
then depend only on the coordinate differences (key minus query) on every axis.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    as_float_array,
    as_inv_freq,
    as_positions,
    check_base,
    check_choice,
    check_pairing,
    check_real,
)
from .rotary import apply_rope_tables
from .rotary import inv_freq as _inv_freq

__all__ = ["apply_rope_2d", "axial_2d_angles", "mrope_cos_sin"]

MROPE_LAYOUTS = ("blocked", "interleaved")


def axial_2d_angles(rows, cols, inv_freq) -> np.ndarray:
    r"""Angles of axial 2-D RoPE: the first half of the pairs follow the row, the rest the
    column.

    Parameters
    ----------
    rows, cols : array_like, shape (seq,)
        Row and column index of every token (patch).
    inv_freq : array_like, shape (d/4,)
        Frequencies of one axis (the same set is used for both).

    Returns
    -------
    numpy.ndarray, shape (seq, d/2), float64
        ``[rows * inv_freq, cols * inv_freq]`` concatenated along the pair axis.

    Notes
    -----
    Book equation ``eq:rope2d-angles``.

    Examples
    --------
    >>> axial_2d_angles([1, 2], [3, 4], [1.0, 0.5])
    array([[1. , 0.5, 3. , 1.5],
           [2. , 1. , 4. , 2. ]])
    """
    r = as_positions(rows, "rows")
    c = as_positions(cols, "cols")
    if r.shape != c.shape:
        raise ValueError(f"rows and cols must have the same length, got {r.shape} and {c.shape}")
    f = as_inv_freq(inv_freq)
    return np.concatenate(
        [np.multiply.outer(r, f), np.multiply.outer(c, f)], axis=1
    )  # [eq:rope2d-angles]


def apply_rope_2d(
    x, rows, cols, *, base: float = 10000.0, inv_freq=None, pairing: str = "half"
) -> np.ndarray:
    r"""Axial 2-D RoPE for image patches.

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
        Queries or keys of ``seq`` patches; ``dim`` divisible by 4.
    rows, cols : array_like, shape (seq,)
        Patch coordinates.
    base : float, default 10000.0
        Base of the per-axis frequencies :math:`\theta_i = b^{-2i/(d/2)} = b^{-4i/d}`,
        :math:`i = 0, \dots, d/4 - 1` (each axis gets the full geometric range over half the
        pairs, as in Qwen2-VL's vision tower and EVA-02).
    inv_freq : array_like, shape (dim/4,), optional
        Explicit per-axis frequencies (overrides ``base``).
    pairing : {"half", "interleaved"}, default "half"
        Pairs ``0 .. d/4 - 1`` follow the row and ``d/4 .. d/2 - 1`` the column, in either
        pairing.

    Returns
    -------
    numpy.ndarray, shape (..., seq, dim)
        Same floating dtype as ``x``.

    Notes
    -----
    Book equations ``eq:rope2d-angles`` and ``eq:rope2d-score``: the score of two patches is a
    function of :math:`(\Delta\text{row}, \Delta\text{col})` only. Frequencies that are shared
    by the two axes cannot see a diagonal offset as anything but the sum of two axial ones.

    Examples
    --------
    >>> x = np.ones((2, 4))
    >>> y = apply_rope_2d(x, [0, 0], [0, 1], inv_freq=[1.0])
    >>> bool(np.allclose(y[0], x[0])), bool(np.allclose(y[1, [0, 2]], x[1, [0, 2]]))
    (True, True)
    """
    check_pairing(pairing)
    xa = as_float_array(x, "x", min_ndim=2)
    d = xa.shape[-1]
    if d % 4:
        raise ValueError(f"x's last dimension must be divisible by 4 for 2-D RoPE, got {d}")
    if inv_freq is None:
        f = _inv_freq(d // 2, check_base(base))
    else:
        f = as_inv_freq(inv_freq)
        if f.shape[0] != d // 4:
            raise ValueError(f"inv_freq must have dim // 4 = {d // 4} entries, got {f.shape[0]}")
    ang = axial_2d_angles(rows, cols, f)
    if ang.shape[0] != xa.shape[-2]:
        raise ValueError(
            f"rows and cols have {ang.shape[0]} entries but x has seq = {xa.shape[-2]}"
        )
    return apply_rope_tables(xa, np.cos(ang), np.sin(ang), pairing=pairing)


def _mrope_axis_of_pair(half: int, section: tuple[int, int, int], layout: str) -> np.ndarray:
    """Axis (0 = t, 1 = h, 2 = w) that drives each pair."""
    if layout == "blocked":
        return np.repeat(np.arange(3), section)  # [eq:mrope-sections]
    # interleaved (Qwen3-VL): pair j is h if j % 3 == 1 and j < 3 * s_h, w if j % 3 == 2 and
    # j < 3 * s_w, t otherwise
    j = np.arange(half)
    axis = np.zeros(half, dtype=np.int64)
    axis[(j % 3 == 1) & (j < 3 * section[1])] = 1  # [eq:mrope-interleaved]
    axis[(j % 3 == 2) & (j < 3 * section[2])] = 2
    return axis


def mrope_cos_sin(
    position_ids,
    inv_freq,
    mrope_section,
    *,
    layout: str = "blocked",
    attention_scaling: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Multimodal RoPE tables (Qwen2-VL): each pair follows the temporal, height or width
    position of the token.

    Parameters
    ----------
    position_ids : array_like of int, shape (3, seq)
        Rows ``t``, ``h``, ``w`` of every token (text tokens have ``t = h = w``).
    inv_freq : array_like, shape (d/2,)
        Frequencies of the whole head, :math:`\theta_i = b^{-2i/d}` (not per axis).
    mrope_section : sequence of 3 ints
        Pairs per axis, summing to ``d/2`` (Qwen2-VL-7B: ``[16, 24, 24]`` for ``d = 128``).
    layout : {"blocked", "interleaved"}, default "blocked"
        ``"blocked"`` (Qwen2-VL, Qwen2.5-VL): the first ``s_t`` pairs follow ``t``, the next
        ``s_h`` follow ``h``, the last ``s_w`` follow ``w``. ``"interleaved"`` (Qwen3-VL):
        pair ``j`` follows ``h`` if ``j % 3 == 1`` and ``j < 3 s_h``, ``w`` if ``j % 3 == 2``
        and ``j < 3 s_w``, ``t`` otherwise.
    attention_scaling : float, default 1.0
        Multiplies both tables.

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, d/2), float64
        Half-width tables like :func:`refimpl.rotary.cos_sin`; apply them with
        :func:`refimpl.rotary.apply_rope_tables` (half pairing, as Qwen does).

    Notes
    -----
    Book equations ``eq:mrope-sections`` and ``eq:mrope-angle``. For a text token with
    ``t = h = w = p`` every pair sees ``p``, so the tables equal ``cos_sin([p], inv_freq)``.

    References
    ----------
    Wang et al., "Qwen2-VL: enhancing vision-language model's perception of the world at any
    resolution", 2024 (arXiv:2409.12191).

    Examples
    --------
    >>> c, s = mrope_cos_sin([[0, 1], [0, 5], [0, 9]], [1.0, 0.5, 0.25], [1, 1, 1])
    >>> np.arccos(c[1]).round(6)  # pair 0 sees t = 1, pair 1 h = 5, pair 2 w = 9
    array([1.  , 2.5 , 2.25])
    """
    check_choice(layout, "layout", MROPE_LAYOUTS)
    ids = np.asarray(position_ids)
    if ids.dtype == object or ids.dtype.kind not in "iuf":
        raise TypeError(f"position_ids must be a numeric array, got dtype {ids.dtype}")
    if ids.ndim != 2 or ids.shape[0] != 3:
        raise ValueError(f"position_ids must have shape (3, seq) (rows t, h, w), got {ids.shape}")
    ids = ids.astype(np.float64)
    if not np.all(np.isfinite(ids)):
        raise ValueError("position_ids must be finite (found NaN or inf)")
    f = as_inv_freq(inv_freq)
    half = f.shape[0]
    sec = tuple(int(v) for v in np.asarray(mrope_section).reshape(-1))
    if len(sec) != 3 or any(v < 0 for v in sec):
        raise ValueError(f"mrope_section must be 3 non-negative integers, got {mrope_section!r}")
    if sum(sec) != half:
        raise ValueError(
            f"mrope_section must sum to len(inv_freq) = d/2 = {half} pairs, got {sum(sec)}"
        )
    scale = check_real(attention_scaling, "attention_scaling")
    axis = _mrope_axis_of_pair(half, sec, layout)  # (d/2,)
    pos = ids[axis, :].T  # (seq, d/2): position seen by each pair
    ang = pos * f[None, :]  # [eq:mrope-angle]
    return np.cos(ang) * scale, np.sin(ang) * scale
