"""Additive attention biases that encode relative position: ALiBi's linear penalties and T5's
bucketed, learned per-head biases.

Conventions: biases have shape ``(n_heads, q_len, k_len)`` and are added to the attention
logits before the softmax; relative position = key position - query position. When
``k_len > q_len`` the queries are the *last* ``q_len`` positions (decoding with a cache), as in
:func:`refimpl.attention.causal_mask`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._checks import as_float_array, check_count, check_out, check_positive_int

__all__ = [
    "alibi_bias",
    "alibi_shifted_bias",
    "alibi_slopes",
    "t5_bias",
    "t5_relative_position_bucket",
]


def _geometric_slopes(n: int) -> np.ndarray:
    """The power-of-two slope list 2^(-8h/n), h = 1..n (n a power of two)."""
    h = np.arange(1, n + 1, dtype=np.float64)
    return np.exp2(-8.0 * h / n)  # [eq:alibi-slopes]


def alibi_slopes(n_heads: int) -> np.ndarray:
    r"""ALiBi's head-specific slopes :math:`m_h`, for any number of heads.

    Parameters
    ----------
    n_heads : int
        Number of attention heads (positive).

    Returns
    -------
    numpy.ndarray, shape (n_heads,), float64
        For :math:`n = 2^a` heads, :math:`m_h = 2^{-8h/n}`, :math:`h = 1, \dots, n` (a geometric
        sequence that starts and has ratio :math:`2^{-8/n}`). Otherwise, with
        :math:`P = 2^{\lfloor \log_2 n \rfloor}`, the :math:`P` slopes of :math:`P` heads
        followed by every other slope of the :math:`2P` list, :math:`2^{-8h/(2P)}` for
        :math:`h = 1, 3, 5, \dots`, the first :math:`n - P` of them.

    Notes
    -----
    Book equations ``eq:alibi-slopes`` and ``eq:alibi-slopes-any``. This is the order of the
    authors' reference code, which BLOOM and MPT share. Each entry is an exact power of two
    raised to a rational exponent, computed with ``exp2`` (correctly rounded for the integer
    exponents of power-of-two head counts). BLOOM computes the same values in float32 with
    ``pow`` (relative differences up to 5e-7 for 12 or more heads).

    References
    ----------
    Press, Smith and Lewis, "Train short, test long: attention with linear biases enables
    input length extrapolation", ICLR 2022.

    Examples
    --------
    >>> alibi_slopes(4) * 256
    array([64., 16.,  4.,  1.])
    >>> alibi_slopes(3) * 256  # 2^-4, 2^-8 (two heads), then 2^-2 (first of the 4-head list)
    array([16.,  1., 64.])
    """
    n = check_positive_int(n_heads, "n_heads")
    p = 1 << (n.bit_length() - 1)  # largest power of two <= n
    slopes = _geometric_slopes(p)
    if p == n:
        return slopes
    extra = _geometric_slopes(2 * p)[0::2][: n - p]  # [eq:alibi-slopes-any]
    return np.concatenate([slopes, extra])


def _check_slopes(slopes, n_heads: int) -> np.ndarray:
    s = as_float_array(slopes, "slopes", ndim=1).astype(np.float64)
    if s.shape[0] != n_heads:
        raise ValueError(f"slopes must have n_heads = {n_heads} entries, got {s.shape[0]}")
    if np.any(s < 0):
        raise ValueError("slopes must be non-negative (a negative slope rewards distance)")
    return s


def _query_key_positions(q_len, k_len, query_offset):
    ql = check_positive_int(q_len, "q_len")
    kl = ql if k_len is None else check_positive_int(k_len, "k_len")
    off = kl - ql if query_offset is None else check_count(query_offset, "query_offset")
    i = np.arange(ql, dtype=np.float64) + off  # query positions
    j = np.arange(kl, dtype=np.float64)  # key positions
    return ql, kl, i, j


def alibi_bias(
    n_heads: int,
    q_len: int,
    k_len: int | None = None,
    *,
    causal: bool = True,
    slopes=None,
    query_offset: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    r"""ALiBi bias in the paper's form, :math:`B_h[i, j] = -m_h\,(i - j)`.

    Parameters
    ----------
    n_heads : int
        Number of heads.
    q_len : int
        Number of queries.
    k_len : int, optional
        Number of keys (default ``q_len``).
    causal : bool, default True
        ``True``: :math:`-m_h (i - j)` for keys :math:`j \le i` and ``-inf`` for future keys
        (the causal mask is part of the bias). ``False``: the symmetric
        :math:`-m_h\,|i - j|` for every key (bidirectional use).
    slopes : array_like, shape (n_heads,), optional
        Per-head slopes (non-negative); default :func:`alibi_slopes`.
    query_offset : int, optional
        Position of the first query; default ``k_len - q_len`` (queries are the last
        ``q_len`` positions).
    out : numpy.ndarray, optional
        float64 array of shape ``(n_heads, q_len, k_len)`` to write into.

    Returns
    -------
    numpy.ndarray, shape (n_heads, q_len, k_len), float64

    Notes
    -----
    Book equations ``eq:alibi-bias`` (causal) and ``eq:alibi-bias-symmetric``. Codebases add
    :math:`+m_h j` instead (:func:`alibi_shifted_bias`); under the causal mask the two give the
    same softmax, without it they do not (book, ALiBi page).

    Examples
    --------
    >>> alibi_bias(1, 3, slopes=[0.5])[0]
    array([[ 0. , -inf, -inf],
           [-0.5,  0. , -inf],
           [-1. , -0.5,  0. ]])
    >>> alibi_bias(1, 2, causal=False, slopes=[0.5])[0]
    array([[ 0. , -0.5],
           [-0.5,  0. ]])
    """
    n = check_positive_int(n_heads, "n_heads")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    m = alibi_slopes(n) if slopes is None else _check_slopes(slopes, n)
    ql, kl, i, j = _query_key_positions(q_len, k_len, query_offset)
    out = check_out(out, (n, ql, kl), np.dtype(np.float64))
    res = np.empty((n, ql, kl)) if out is None else out
    dist = i[:, None] - j[None, :]  # (q_len, k_len): i - j
    if causal:
        res[...] = m[:, None, None] * (j[None, :] - i[:, None])  # [eq:alibi-bias] = -m (i - j)
        res[:, dist < 0] = -np.inf
    else:
        res[...] = 0.0 - m[:, None, None] * np.abs(dist)  # [eq:alibi-bias-symmetric]
    return res


def alibi_shifted_bias(
    n_heads: int,
    q_len: int,
    k_len: int | None = None,
    *,
    causal: bool = True,
    slopes=None,
    query_offset: int | None = None,
) -> np.ndarray:
    r"""The form several codebases add instead of the paper's: :math:`B_h[i, j] = +m_h\,j`.

    It differs from :func:`alibi_bias` by :math:`m_h i`, a constant along each query row, so
    under the causal mask the softmax is the same; without the mask it is not (future keys get
    the *largest* bonus).

    Parameters
    ----------
    n_heads, q_len, k_len, slopes, query_offset
        As in :func:`alibi_bias`.
    causal : bool, default True
        Add the causal mask (``-inf`` for keys after the query).

    Returns
    -------
    numpy.ndarray, shape (n_heads, q_len, k_len), float64

    Notes
    -----
    Book equation ``eq:alibi-shifted``. This is what the ALiBi authors' fairseq code and
    transformers' BLOOM add (BLOOM counts key positions over non-padding tokens).

    Examples
    --------
    >>> alibi_shifted_bias(1, 2, slopes=[0.5])[0]
    array([[ 0. , -inf],
           [ 0. ,  0.5]])
    """
    n = check_positive_int(n_heads, "n_heads")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    m = alibi_slopes(n) if slopes is None else _check_slopes(slopes, n)
    ql, kl, i, j = _query_key_positions(q_len, k_len, query_offset)
    res = np.broadcast_to(m[:, None, None] * j[None, None, :], (n, ql, kl)).copy()
    if causal:
        res[:, (i[:, None] - j[None, :]) < 0] = -np.inf  # [eq:alibi-shifted]
    return res


def _check_t5_args(bidirectional, num_buckets, max_distance):
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be a bool, got {type(bidirectional).__name__}")
    nb = check_positive_int(num_buckets, "num_buckets")
    md = check_positive_int(max_distance, "max_distance")
    if bidirectional:
        if nb % 2:
            raise ValueError(
                f"num_buckets must be even when bidirectional (half per direction), got {nb}"
            )
        nb //= 2
    if nb < 2:
        raise ValueError(
            f"num_buckets must leave at least 2 buckets per direction, got {num_buckets}"
        )
    max_exact = nb // 2
    if md <= max_exact:
        raise ValueError(
            f"max_distance must exceed the exact region ({max_exact} buckets), got {md}"
        )
    return nb, max_exact, md


@functools.lru_cache(maxsize=32)
def _log_bucket_table(nb: int, max_exact: int, md: int) -> np.ndarray:
    """Bucket of every distance 0 .. md, computed exactly with integers.

    For ``max_exact <= n < md`` the bucket is ``max_exact + k`` with ``k`` the largest integer
    such that ``k <= ln(n / e) / ln(md / e) * (nb - e)``, i.e.
    ``n**(nb - e) * e**k >= md**k * e**(nb - e)`` (``e = max_exact``).
    """
    e, span = max_exact, nb - max_exact
    table = np.empty(md + 1, dtype=np.int64)
    table[:e] = np.arange(e)  # [eq:t5-bucket-exact]
    lhs_e = e**span
    for n in range(e, md + 1):
        # float64 guess, then exact integer correction
        k = math.floor(math.log(n / e) / math.log(md / e) * span)
        k = max(k, 0)
        while k > 0 and n**span * e**k < md**k * lhs_e:
            k -= 1
        while n**span * e ** (k + 1) >= md ** (k + 1) * lhs_e:
            k += 1
        table[n] = min(e + k, nb - 1)  # [eq:t5-bucket-log]
    table.flags.writeable = False
    return table


def t5_relative_position_bucket(
    relative_position,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> np.ndarray:
    r"""T5's bucket index for each relative position (key - query).

    Parameters
    ----------
    relative_position : array_like of int
        Key position minus query position, any shape.
    bidirectional : bool, default True
        ``True`` (encoder): half of the buckets for keys at or before the query, half (offset
        ``num_buckets // 2``) for keys after it. ``False`` (decoder): all buckets for the past;
        every future key shares bucket 0 with distance 0.
    num_buckets : int, default 32
        Total number of buckets (even when bidirectional).
    max_distance : int, default 128
        Distances at or beyond this share the last bucket of their direction.

    Returns
    -------
    numpy.ndarray of int64, same shape as ``relative_position``

    Notes
    -----
    Book equations ``eq:t5-bucket-exact`` and ``eq:t5-bucket-log``. With :math:`N` buckets per
    direction and :math:`e = N/2`, a distance :math:`n < e` has its own bucket :math:`n`; larger
    distances get :math:`\min\left(e + \lfloor \frac{\ln(n/e)}{\ln(D/e)} (N - e) \rfloor,
    N - 1\right)` with :math:`D` = ``max_distance``. The floor is computed *exactly* (integer
    comparisons), not with a float logarithm; transformers' float32 version agrees with it for
    the configurations tested in ``tests/parity``.

    References
    ----------
    Raffel et al., "Exploring the limits of transfer learning with a unified text-to-text
    transformer", JMLR 2020.

    Examples
    --------
    >>> t5_relative_position_bucket([-300, -16, -1, 0, 1, 16, 300])
    array([15, 10,  1,  0, 17, 26, 31])
    >>> t5_relative_position_bucket([-16, 0, 5], bidirectional=False)
    array([16,  0,  0])
    """
    rel = np.asarray(relative_position)
    if rel.dtype == object or rel.dtype.kind not in "iu":
        raise TypeError(f"relative_position must be an integer array, got dtype {rel.dtype}")
    rel = rel.astype(np.int64)
    nb, max_exact, md = _check_t5_args(bidirectional, num_buckets, max_distance)
    table = _log_bucket_table(nb, max_exact, md)
    if bidirectional:
        offset = np.where(rel > 0, nb, 0)  # [eq:t5-bucket-direction]
        n = np.abs(rel)
    else:
        offset = np.zeros_like(rel)
        n = np.maximum(-rel, 0)  # [eq:t5-bucket-direction]
    return offset + table[np.minimum(n, md)]


def t5_bias(
    table,
    q_len: int,
    k_len: int,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
    query_offset: int | None = None,
) -> np.ndarray:
    r"""T5's relative attention bias: a learned value per (bucket, head), gathered by bucket.

    Parameters
    ----------
    table : array_like, shape (num_buckets, n_heads)
        The learned bias of every bucket for every head (transformers stores it as the weight
        of ``relative_attention_bias``, an embedding of ``num_buckets`` rows).
    q_len, k_len : int
        Numbers of queries and keys.
    bidirectional, num_buckets, max_distance
        As in :func:`t5_relative_position_bucket`.
    query_offset : int, optional
        Position of the first query; default ``k_len - q_len`` (queries are the last ones).

    Returns
    -------
    numpy.ndarray, shape (n_heads, q_len, k_len)
        ``bias[h, i, j] = table[bucket(j - i), h]``; same floating dtype as ``table``.

    Notes
    -----
    Book equation ``eq:t5-bias``. T5 adds this bias without scaling the logits by
    :math:`1/\sqrt{d}` and computes it once, in the first layer, for all layers.

    Examples
    --------
    >>> table = np.arange(8.0).reshape(4, 2)  # 4 buckets, 2 heads
    >>> t5_bias(table, 2, 2, num_buckets=4, max_distance=4)[1]
    array([[1., 7.],
           [3., 1.]])
    """
    tab = as_float_array(table, "table", ndim=2)
    nb = check_positive_int(num_buckets, "num_buckets")
    if tab.shape[0] != nb:
        raise ValueError(
            f"table must have num_buckets = {nb} rows (one per bucket), got shape {tab.shape}"
        )
    _, _, i, j = _query_key_positions(q_len, k_len, query_offset)
    rel = (j[None, :] - i[:, None]).astype(np.int64)  # (q_len, k_len): key - query
    b = t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=nb, max_distance=max_distance
    )
    return np.moveaxis(tab[b], -1, 0)  # [eq:t5-bias]
