"""xPos: RoPE with a per-pair exponential scale that makes attention decay with distance.

Queries at position ``m`` are multiplied by :math:`\\zeta_i^{m/B}` and keys at ``n`` by
:math:`\\zeta_i^{-n/B}` (pair ``i``, :math:`0 < \\zeta_i < 1`), then both are rotated as in RoPE;
the score of a pair is then multiplied by :math:`\\zeta_i^{(m-n)/B}`, a function of the
relative position only.
"""

from __future__ import annotations

import numpy as np

from ._checks import (
    as_float_array,
    as_inv_freq,
    as_positions,
    check_dim,
    check_pairing,
    check_positive,
    check_real,
    result_dtype,
)
from .rotary import apply_rope, pair_indices

__all__ = ["apply_xpos", "xpos_scale", "xpos_zeta"]

# Largest |ln| of a scale factor: float64's normal range is [2^-1022, 2^1024), i.e.
# |ln| < 708.39; beyond it a factor underflows towards 0 or overflows to inf, and the scores
# (products of a factor and its inverse) become 0, inf or NaN.
_MAX_LOG_SCALE = 708.0


def xpos_zeta(dim: int, *, gamma: float = 0.4) -> np.ndarray:
    r"""The per-pair decay bases :math:`\zeta_i = (2i/d + \gamma)/(1 + \gamma)`.

    Parameters
    ----------
    dim : int
        Rotary width :math:`d` (even).
    gamma : float, default 0.4
        Offset :math:`\gamma > 0`; larger values bring every :math:`\zeta_i` closer to 1
        (weaker decay).

    Returns
    -------
    numpy.ndarray, shape (dim // 2,), float64
        Increasing from :math:`\gamma/(1+\gamma)` (pair 0, the fastest rotation, decays most)
        towards 1.

    Notes
    -----
    Book equation ``eq:xpos-zeta``.

    Examples
    --------
    >>> xpos_zeta(4, gamma=0.4)
    array([0.28571429, 0.64285714])
    """
    d = check_dim(dim)
    g = check_positive(gamma, "gamma")
    i = np.arange(d // 2, dtype=np.float64)
    return (2.0 * i / d + g) / (1.0 + g)  # [eq:xpos-zeta]


def xpos_scale(positions, dim: int, *, scale_base: float = 512.0, gamma: float = 0.4) -> np.ndarray:
    r"""xPos scale factors :math:`\zeta_i^{m / B}` for every position and pair.

    Parameters
    ----------
    positions : array_like, shape (seq,)
        Positions :math:`m` (any real; peers centre them, see :func:`apply_xpos`).
    dim : int
        Rotary width :math:`d` (even).
    scale_base : float, default 512.0
        :math:`B`: the distance over which pair :math:`i` decays by the factor :math:`\zeta_i`.
    gamma : float, default 0.4

    Returns
    -------
    numpy.ndarray, shape (seq, dim // 2), float64
        ``scale[m, i] = zeta_i ** (positions[m] / scale_base)``.

    Notes
    -----
    Book equation ``eq:xpos-scale``. Queries are multiplied by this table and keys divided by
    it. For long sequences the individual factors over- or underflow (with the defaults,
    :math:`\zeta_0^{m/B}` leaves the normal float32 range near :math:`m = 3.6 \cdot 10^4`
    and the float64 range near :math:`m = 2.9 \cdot 10^5`); only their ratios enter the
    scores, which is why peers centre the positions. Positions whose factor would leave the
    normal float64 range (:math:`|\ln \zeta_0^{m/B}| > 708`) are refused with a ValueError
    rather than returned as 0 or inf.

    References
    ----------
    Sun et al., "A length-extrapolatable transformer", ACL 2023 (arXiv:2212.10554).

    Examples
    --------
    >>> xpos_scale([0, 512], 4).round(6)
    array([[1.      , 1.      ],
           [0.285714, 0.642857]])
    """
    pos = as_positions(positions)
    zeta = xpos_zeta(dim, gamma=gamma)
    base = check_positive(scale_base, "scale_base")
    expo = pos[:, None] / base  # (seq, 1)
    if pos.size:
        worst = float(np.max(np.abs(expo))) * float(-np.log(zeta[0]))  # |ln zeta_0^(m/B)|
        if worst > _MAX_LOG_SCALE:
            raise ValueError(
                f"positions / scale_base too large: zeta_0**(m/B) = exp(+-{worst:.4g}) leaves "
                f"the normal float64 range (|ln| <= {_MAX_LOG_SCALE}); centre the positions "
                "(apply_xpos's scale_offset) or raise scale_base"
            )
    return zeta[None, :] ** expo  # [eq:xpos-scale]


def apply_xpos(
    q,
    k,
    positions,
    *,
    base: float = 10000.0,
    inv_freq=None,
    pairing: str = "half",
    scale_base: float = 512.0,
    gamma: float = 0.4,
    scale_offset: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Apply xPos to queries and keys that share the same positions.

    Parameters
    ----------
    q, k : array_like, shape (..., seq, dim)
        Queries and keys (same shape).
    positions : array_like, shape (seq,)
        Positions used for the rotation.
    base, inv_freq, pairing
        As in :func:`refimpl.rotary.apply_rope` (default: half pairing).
    scale_base, gamma
        As in :func:`xpos_scale`.
    scale_offset : float, default 0.0
        Subtracted from the positions in the scale's exponent only:
        :math:`q' = R_m q \odot \zeta^{(m - c)/B}`, :math:`k' = R_n k \odot \zeta^{-(n - c)/B}`.
        It cancels in every score. rotary-embedding-torch uses :math:`c = \lfloor N/2 \rfloor`
        (N = seq), torchscale :math:`c = \lceil N/2 \rceil`, to keep the factors near 1.

    Returns
    -------
    q_out, k_out : numpy.ndarray, shape (..., seq, dim)
        Same floating dtype as the inputs (float64 otherwise); computed in float64.

    Notes
    -----
    Book equations ``eq:xpos-apply`` and ``eq:xpos-score``: the score of query ``m`` and key
    ``n`` is :math:`\sum_i \zeta_i^{(m-n)/B}\,\langle q_i, R((n-m)\theta_i) k_i\rangle`
    (pair by pair), a function of :math:`n - m` only.

    Examples
    --------
    >>> q = k = np.array([[1.0, 0.0], [1.0, 0.0]])
    >>> qx, kx = apply_xpos(q, k, [0, 512], inv_freq=[1e-9])
    >>> float((qx[1] @ kx[0]).round(6))  # zeta_0 = 0.4/1.4, one scale_base apart
    0.285714
    """
    check_pairing(pairing)
    qa = as_float_array(q, "q", min_ndim=2)
    ka = as_float_array(k, "k", min_ndim=2)
    if qa.shape != ka.shape:
        raise ValueError(f"q and k must have the same shape, got {qa.shape} and {ka.shape}")
    dim = qa.shape[-1]
    pos = as_positions(positions)
    if pos.shape[0] != qa.shape[-2]:
        raise ValueError(
            f"positions has {pos.shape[0]} entries but q and k have seq = {qa.shape[-2]}"
        )
    c = check_real(scale_offset, "scale_offset")
    d = check_dim(dim, "q's last dimension")
    if inv_freq is not None and as_inv_freq(inv_freq).shape != (d // 2,):
        raise ValueError(
            f"inv_freq must have dim // 2 = {d // 2} entries, got shape {np.shape(inv_freq)}"
        )
    scale = xpos_scale(pos - c, d, scale_base=scale_base, gamma=gamma)  # (seq, d/2)
    first, second = pair_indices(d, pairing)
    full = np.empty((pos.shape[0], d))
    full[:, first] = scale
    full[:, second] = scale
    q64 = qa.astype(np.float64) * full  # [eq:xpos-apply]
    k64 = ka.astype(np.float64) / full  # [eq:xpos-apply]
    qo = apply_rope(q64, pos, base=base, inv_freq=inv_freq, pairing=pairing)
    ko = apply_rope(k64, pos, base=base, inv_freq=inv_freq, pairing=pairing)
    dtype = result_dtype(qa, ka)
    return qo.astype(dtype, copy=False), ko.astype(dtype, copy=False)
