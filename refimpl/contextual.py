r"""Contextual position encoding (CoPE): positions counted by the content, not by the index.

CoPE (Golovneva et al., 2024) lets each query decide which earlier tokens count as a step of
position. A gate :math:`g_{it} = \sigma(s_{it})` of the attention logit says whether key
:math:`t` counts for query :math:`i`; the position of key :math:`j` seen from :math:`i` is the
number of counted tokens between them,

.. math:: p_{ij} = \sum_{t=j}^{i} g_{it},

a fractional value. Learned position embeddings :math:`e[0..P-1]` enter the logit through
:math:`q_i^\top e[p_{ij}]`, linearly interpolated between the integer positions around
:math:`p_{ij}`. With every gate equal to 1, :math:`p_{ij} = i - j + 1`: CoPE counts tokens and
reduces to a learned relative encoding.

Shapes follow :mod:`refimpl.attention`: ``q`` is ``(..., q_len, d)``, ``k`` is
``(..., k_len, d)``, logits are ``(..., q_len, k_len)``; the queries are the last ``q_len`` of
``k_len`` positions.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_float_array, check_positive
from .attention import causal_mask

__all__ = [
    "cope_logits",
    "cope_position_term",
    "cope_positions",
]


def _allowed(q_len: int, k_len: int) -> np.ndarray:
    """Boolean causal pattern: ``True`` where the key is at or before the query."""
    return causal_mask(q_len, k_len) == 0.0


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function without overflow for large negative logits."""
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def cope_positions(logits, *, causal: bool = True) -> np.ndarray:
    r"""CoPE's contextual positions :math:`p_{ij} = \sum_{t \ge j} \sigma(s_{it})`.

    Parameters
    ----------
    logits : array_like, shape (..., q_len, k_len)
        Attention logits :math:`s_{it}` that gate the count.
    causal : bool, default True
        ``True``: future keys (:math:`t > i`, queries right-aligned) have gate 0 and do not
        count. ``False``: every key to the right of :math:`j` counts.

    Returns
    -------
    numpy.ndarray, shape (..., q_len, k_len), float64
        The count of gated tokens from key :math:`j` to the last key, each weighted by its gate.

    Notes
    -----
    Book equation ``eq:cope-positions``.

    Examples
    --------
    >>> cope_positions(np.full((1, 3), 50.0))  # every gate is 1: positions 3, 2, 1
    array([[3., 2., 1.]])
    """
    s = as_float_array(logits, "logits", min_ndim=2).astype(np.float64)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    gates = _sigmoid(s)
    if causal:
        gates = np.where(_allowed(s.shape[-2], s.shape[-1]), gates, 0.0)
    # [eq:cope-positions]: reverse cumulative sum over the keys
    return np.flip(np.cumsum(np.flip(gates, axis=-1), axis=-1), axis=-1)


def cope_position_term(q, positions, pos_emb) -> np.ndarray:
    r"""The logit term :math:`q_i^\top e[p_{ij}]`, interpolated between integer positions.

    Parameters
    ----------
    q : array_like, shape (..., q_len, d)
    positions : array_like, shape (..., q_len, k_len)
        Contextual positions (:func:`cope_positions`), clamped to ``P - 1``.
    pos_emb : array_like, shape (P, d)
        Learned position embeddings :math:`e[0..P-1]`.

    Returns
    -------
    numpy.ndarray, shape (..., q_len, k_len), float64
        :math:`(1 - w)\, q_i^\top e[\lfloor p \rfloor] + w\, q_i^\top e[\lceil p \rceil]`,
        :math:`w = p - \lfloor p \rfloor`.

    Notes
    -----
    Book equation ``eq:cope-term``. Interpolating the scalar logits is the same as
    interpolating the embeddings (the dot product is linear), and costs :math:`P` dot products
    per query instead of one per key.
    """
    qa = as_float_array(q, "q", min_ndim=2).astype(np.float64)
    emb = as_float_array(pos_emb, "pos_emb", ndim=2).astype(np.float64)
    if emb.shape[1] != qa.shape[-1]:
        raise ValueError(f"pos_emb must have shape (P, {qa.shape[-1]}), got {emb.shape}")
    p = as_float_array(positions, "positions", min_ndim=2).astype(np.float64)
    if p.shape[:-1] != qa.shape[:-1]:
        raise ValueError(
            f"positions must have shape (..., q_len, k_len) matching q {qa.shape}, got {p.shape}"
        )
    if np.any(p < 0):
        raise ValueError("positions must be non-negative")
    p = np.minimum(p, emb.shape[0] - 1)
    per_int = qa @ emb.T  # (..., q_len, P): q_i . e[p] for every integer p
    lo = np.floor(p).astype(np.int64)
    hi = np.ceil(p).astype(np.int64)
    w = p - lo
    at_lo = np.take_along_axis(per_int, lo, axis=-1)
    at_hi = np.take_along_axis(per_int, hi, axis=-1)
    return at_hi * w + at_lo * (1.0 - w)  # [eq:cope-term]


def cope_logits(q, k, pos_emb, *, scale: float | None = None, causal: bool = True) -> np.ndarray:
    r"""Attention logits with CoPE: :math:`s_{ij} + q_i^\top e[p_{ij}]`.

    Parameters
    ----------
    q : array_like, shape (..., q_len, d)
    k : array_like, shape (..., k_len, d)
    pos_emb : array_like, shape (P, d)
        Learned position embeddings.
    scale : float, optional
        Scale of the content logits :math:`s = \text{scale}\; q^\top k`, default
        :math:`1/\sqrt{d}`; the gates are the sigmoid of these scaled logits.
    causal : bool, default True
        ``True``: future keys get ``-inf`` and do not count.

    Returns
    -------
    numpy.ndarray, shape (..., q_len, k_len), float64

    Notes
    -----
    Book equations ``eq:cope-positions`` and ``eq:cope-term``. x-transformers
    (``Attention(use_cope=True)``) gates with the scaled, masked logits and adds the position
    term computed with the unscaled query; this function does the same (parity-tested).

    Examples
    --------
    >>> q = np.array([[1.0, 0.0]]); k = np.zeros((2, 2)); e = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> cope_logits(q, k, e)  # gates 1/2: p = 1, 1/2 -> q.e[1] = 1, 0.5 q.e[1] = 0.5
    array([[1. , 0.5]])
    """
    qa = as_float_array(q, "q", min_ndim=2).astype(np.float64)
    ka = as_float_array(k, "k", min_ndim=2).astype(np.float64)
    if qa.shape[-1] != ka.shape[-1]:
        raise ValueError(f"q and k must have the same width, got {qa.shape} and {ka.shape}")
    sc = 1.0 / np.sqrt(qa.shape[-1]) if scale is None else check_positive(scale, "scale")
    s = sc * (qa @ np.swapaxes(ka, -1, -2))
    p = cope_positions(s, causal=causal)
    out = s + cope_position_term(qa, p, pos_emb)
    if causal:
        out = np.where(_allowed(s.shape[-2], s.shape[-1]), out, -np.inf)
    return out
