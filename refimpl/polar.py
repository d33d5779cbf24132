r"""PoPE: polar coordinate position embeddings.

PoPE (Gopalakrishnan et al., 2025) decouples *what* from *where*: each feature :math:`j` of a
query or key becomes a magnitude :math:`\mathrm{softplus}(x_j) \ge 0` and a phase
:math:`p\,\theta_j`, one frequency per feature (not per pair),

.. math:: \theta_j = b^{-j/d}, \qquad
          x \mapsto \big(\mathrm{softplus}(x)\cos(p\theta),\ \mathrm{softplus}(x)\sin(p\theta)\big),

so a head of width :math:`d` becomes :math:`2d` features. Keys may carry a learned phase bias
:math:`\delta_j \in [-2\pi, 0]` per head. The score of a query at :math:`m` and a key at
:math:`n` is

.. math:: s_{mn} = \sum_j \mathrm{softplus}(q_j)\,\mathrm{softplus}(k_j)\,
          \cos\big((m - n)\theta_j - \delta_j\big),

a function of :math:`m - n`: the content sets only the magnitudes, the positions only the
phases.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, as_positions, check_base, check_dim

__all__ = [
    "POPE_PHASE_RANGE",
    "apply_pope",
    "pope_inv_freq",
]

# The learned key phase bias is clamped to [-2 pi, 0] (one full turn).
POPE_PHASE_RANGE = (-2.0 * np.pi, 0.0)


def pope_inv_freq(dim: int, base: float = 10000.0) -> np.ndarray:
    r"""PoPE's frequencies :math:`\theta_j = b^{-j/d}`, one per feature.

    Parameters
    ----------
    dim : int
        Head width :math:`d` (any positive integer).
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray, shape (dim,), float64

    Notes
    -----
    Book equation ``eq:pope``.

    Examples
    --------
    >>> pope_inv_freq(4, 16.0)
    array([1.   , 0.5  , 0.25 , 0.125])
    """
    d = check_dim(dim, "dim", even=False)
    b = check_base(base)
    return b ** (-np.arange(d, dtype=np.float64) / d)  # [eq:pope]


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def apply_pope(x, positions, *, base: float = 10000.0, phase_bias=None) -> np.ndarray:
    r"""Embed queries or keys in polar form.

    Parameters
    ----------
    x : array_like, shape (..., seq, dim)
    positions : array_like, shape (seq,)
    base : float, default 10000.0
    phase_bias : array_like, shape (dim,) or broadcastable to (..., 1, dim), optional
        Learned key phase :math:`\delta` (keys only), clamped to :data:`POPE_PHASE_RANGE` as
        the reference implementation does.

    Returns
    -------
    numpy.ndarray, shape (..., seq, 2 * dim), float64
        ``[softplus(x) cos(p theta + delta), softplus(x) sin(p theta + delta)]``.

    Notes
    -----
    Book equation ``eq:pope``. The dot product of a query and a key embedded this way is the
    score formula of the module docstring (tested against a loop).

    Examples
    --------
    >>> apply_pope(np.zeros((1, 1)), [0.0]).round(6)  # softplus(0) = ln 2 at phase 0
    array([[0.693147, 0.      ]])
    """
    xa = as_float_array(x, "x", min_ndim=2).astype(np.float64)
    pos = as_positions(positions)
    if pos.shape[0] != xa.shape[-2]:
        raise ValueError(f"positions must have seq = {xa.shape[-2]} entries, got {pos.shape[0]}")
    theta = pope_inv_freq(xa.shape[-1], base)
    phase = pos[:, None] * theta  # (seq, dim)  [eq:pope]
    if phase_bias is not None:
        delta = as_float_array(phase_bias, "phase_bias", min_ndim=1).astype(np.float64)
        if delta.shape[-1] != xa.shape[-1]:
            raise ValueError(f"phase_bias must have dim = {xa.shape[-1]} entries per head")
        phase = phase + np.clip(delta, *POPE_PHASE_RANGE)
    mag = _softplus(xa)
    return np.concatenate([mag * np.cos(phase), mag * np.sin(phase)], axis=-1)
