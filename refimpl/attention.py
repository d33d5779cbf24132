"""Attention helpers: scaled dot-product scores, a stable softmax, attention with an optional
additive bias and causal mask, and the entropy of attention rows."""

from __future__ import annotations

import numpy as np

from ._checks import (
    as_float_array,
    as_real_array,
    check_axis,
    check_flag,
    check_positive,
    check_positive_int,
    result_dtype,
)

__all__ = ["attention", "attention_entropy", "attention_scores", "causal_mask", "softmax"]


def attention_scores(q, k, *, scale: float | None = None) -> np.ndarray:
    r"""Scaled dot products :math:`s_{mn} = \langle q_m, k_n \rangle \cdot \text{scale}`.

    Parameters
    ----------
    q : array_like, shape (..., q_len, d)
    k : array_like, shape (..., k_len, d)
    scale : float, optional
        Default :math:`1/\sqrt{d}`.

    Returns
    -------
    numpy.ndarray, shape (..., q_len, k_len)

    Notes
    -----
    Book equation ``eq:attn-scores``.

    Examples
    --------
    >>> attention_scores([[1.0, 0.0]], [[2.0, 0.0], [0.0, 1.0]], scale=1.0)
    array([[2., 0.]])
    """
    qa = as_float_array(q, "q", min_ndim=2)
    ka = as_float_array(k, "k", min_ndim=2)
    if qa.shape[-1] != ka.shape[-1]:
        raise ValueError(f"q and k must have the same feature size, got {qa.shape} and {ka.shape}")
    d = qa.shape[-1]
    sc = 1.0 / np.sqrt(d) if scale is None else check_positive(scale, "scale")
    q64, k64 = qa.astype(np.float64, copy=False), ka.astype(np.float64, copy=False)
    s = (q64 @ np.swapaxes(k64, -1, -2)) * sc  # [eq:attn-scores]
    return s.astype(result_dtype(qa, ka), copy=False)


def softmax(x, axis: int = -1) -> np.ndarray:
    r"""Numerically stable softmax; entries equal to ``-inf`` get weight 0.

    Parameters
    ----------
    x : array_like, shape (..., n)
        Logits; ``-inf`` marks a masked entry. NaN and ``+inf`` are rejected.
    axis : int, default -1
        Axis along which the weights sum to 1.

    Returns
    -------
    numpy.ndarray, same shape as ``x``
        :math:`p_j = e^{x_j - \max x} / \sum_l e^{x_l - \max x}`, computed in float64 and
        rounded once to ``x``'s floating dtype (float64 for integers and lists).

    Raises
    ------
    ValueError
        If a row is made only of ``-inf`` (fully masked): its softmax is undefined, and
        returning NaN would hide the bug. Also for a 0-d ``x``, an empty axis, or an
        ``axis`` out of range (``axis`` must be an integer, not a bool or float).

    Notes
    -----
    Book equation ``eq:softmax``.

    Examples
    --------
    >>> softmax([0.0, np.log(3.0)])
    array([0.25, 0.75])
    """
    a = as_real_array(x, "x")
    if a.ndim == 0:
        raise ValueError("x must have at least one dimension (the axis the weights sum over)")
    ax = check_axis(axis, a.ndim)
    if a.shape[ax] == 0:
        raise ValueError(
            f"x must not be empty along axis {axis} (no weights can sum to 1), got shape {a.shape}"
        )
    dtype = result_dtype(a)
    a = a.astype(np.float64, copy=False)
    if np.any(np.isnan(a)) or np.any(a == np.inf):
        raise ValueError("x must not contain NaN or +inf")
    mx = np.max(a, axis=ax, keepdims=True)
    if np.any(mx == -np.inf):
        raise ValueError("softmax of a row whose entries are all -inf (fully masked) is undefined")
    e = np.exp(a - mx)
    p = e / np.sum(e, axis=ax, keepdims=True)  # [eq:softmax]
    return p.astype(dtype, copy=False)


def causal_mask(q_len: int, k_len: int | None = None) -> np.ndarray:
    """Additive causal mask: 0 where key position <= query position, ``-inf`` elsewhere.

    Parameters
    ----------
    q_len : int
        Number of queries (positive).
    k_len : int, optional
        Number of keys, at least ``q_len``; default ``q_len``. When ``k_len > q_len`` the
        queries are the last ``q_len`` positions (decoding with a cache).

    Returns
    -------
    numpy.ndarray, shape (q_len, k_len), float64
        ``mask[i, j] = 0`` if ``j <= i + (k_len - q_len)`` else ``-inf``.

    Notes
    -----
    Book equation ``eq:causal-mask``.

    Examples
    --------
    >>> causal_mask(2)
    array([[  0., -inf],
           [  0.,   0.]])
    """
    ql = check_positive_int(q_len, "q_len")
    kl = ql if k_len is None else check_positive_int(k_len, "k_len")
    if kl < ql:
        raise ValueError(f"k_len ({kl}) must be at least q_len ({ql}) for a causal mask")
    i = np.arange(ql)[:, None] + (kl - ql)
    j = np.arange(kl)[None, :]
    return np.where(j <= i, 0.0, -np.inf)  # [eq:causal-mask]


def attention(
    q,
    k,
    v,
    *,
    bias=None,
    causal: bool = False,
    scale: float | None = None,
    return_weights: bool = False,
):
    r"""Softmax attention :math:`\mathrm{softmax}(q k^\top \cdot \text{scale} + B)\, v`.

    Parameters
    ----------
    q : array_like, shape (..., q_len, d)
    k : array_like, shape (..., k_len, d)
    v : array_like, shape (..., k_len, d_v)
    bias : array_like, optional
        Additive bias broadcastable to ``(..., q_len, k_len)`` (ALiBi, T5), e.g.
        ``(n_heads, q_len, k_len)``.
    causal : bool, default False
        Mask keys after the query (see :func:`causal_mask`). Must be a bool: a string such
        as ``"no"`` is refused, not read as true.
    scale : float, optional
        Default :math:`1/\sqrt{d}`.
    return_weights : bool, default False
        Also return the attention weights (a bool, like ``causal``).

    Returns
    -------
    out : numpy.ndarray, shape (..., q_len, d_v)
    weights : numpy.ndarray, shape (..., q_len, k_len), only if ``return_weights``

    Notes
    -----
    Book equation ``eq:attention``.

    Examples
    --------
    >>> q = k = np.eye(2)
    >>> v = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> attention(q, k, v, causal=True)[0]
    array([1., 0.])
    """
    causal = check_flag(causal, "causal")
    return_weights = check_flag(return_weights, "return_weights")
    qa = as_float_array(q, "q", min_ndim=2)
    ka = as_float_array(k, "k", min_ndim=2)
    va = as_float_array(v, "v", min_ndim=2)
    if ka.shape[-2] == 0:
        raise ValueError(f"k must have at least one key (row), got shape {ka.shape}")
    dtype = result_dtype(qa, ka, va)
    # computed in float64, rounded once to the inputs' dtype at the end
    s = attention_scores(qa.astype(np.float64), ka.astype(np.float64), scale=scale)
    if va.shape[-2] != s.shape[-1]:
        raise ValueError(f"v has {va.shape[-2]} rows but k has {s.shape[-1]}")
    if bias is not None:
        b = as_real_array(bias, "bias")
        if b.ndim < 2:
            raise ValueError(f"bias must have at least 2 dimensions, got shape {b.shape}")
        if np.any(np.isnan(b)) or np.any(b == np.inf):
            raise ValueError("bias must not contain NaN or +inf (-inf masks a key)")
        if b.shape[-2:] != s.shape[-2:]:
            raise ValueError(
                f"bias must end in (q_len, k_len) = {s.shape[-2:]}, got shape {b.shape}"
            )
        try:
            np.broadcast_shapes(b.shape, s.shape)
        except ValueError:
            raise ValueError(
                f"bias of shape {b.shape} does not broadcast to scores {s.shape}"
            ) from None
        s = s + b  # [eq:attention]
    if causal:
        s = s + causal_mask(s.shape[-2], s.shape[-1])
    w = softmax(s, axis=-1)
    out = w @ va.astype(np.float64, copy=False)  # [eq:attention]
    out, w = out.astype(dtype, copy=False), w.astype(dtype, copy=False)
    return (out, w) if return_weights else out


def attention_entropy(weights, axis: int = -1) -> np.ndarray:
    r"""Shannon entropy (nats) of attention rows, :math:`H = -\sum_j p_j \log p_j`.

    Parameters
    ----------
    weights : array_like, shape (..., k_len)
        Attention weights; every row must be non-negative and sum to 1 (within the rounding
        of its dtype).
    axis : int, default -1
        The axis of a row.

    Returns
    -------
    numpy.ndarray, shape (...,)
        Entropy of each row in nats; zero weights contribute 0. It lies between 0 (all weight
        on one key) and :math:`\log k_{len}` (uniform).

    Notes
    -----
    Book equation ``eq:attn-entropy``.

    Examples
    --------
    >>> float(attention_entropy([0.5, 0.5]).round(6))
    0.693147
    """
    p = as_float_array(weights, "weights", min_ndim=1)
    ax = check_axis(axis, p.ndim)
    dtype = p.dtype
    p = p.astype(np.float64, copy=False)
    if np.any(p < 0):
        raise ValueError("weights must be non-negative")
    sums = np.sum(p, axis=ax)
    # a row rounded once to `dtype` sums to 1 within n * eps / 2; allow that (at least 1e-6)
    n = p.shape[ax]
    tol = max(1e-6, float(np.finfo(dtype).eps) * n)
    if not np.allclose(sums, 1.0, rtol=0.0, atol=tol):
        raise ValueError("weights must sum to 1 along axis (rows of a softmax)")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return np.sum(terms, axis=ax).astype(dtype, copy=False)  # [eq:attn-entropy]
