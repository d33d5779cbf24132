"""Additive attention biases that encode relative position: ALiBi's linear penalties, T5's
bucketed, learned per-head biases, and the functional biases that generalise them (Kerple's
kernels, Sandwich's sinusoidal inner products, FIRE's learned function of normalised distance).

Conventions: biases have shape ``(n_heads, q_len, k_len)`` and are added to the attention
logits before the softmax; relative position = key position - query position. When
``k_len > q_len`` the queries are the *last* ``q_len`` positions (decoding with a cache), as in
:func:`refimpl.attention.causal_mask`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._checks import (
    MAX_POSITION,
    as_float_array,
    check_base,
    check_choice,
    check_count,
    check_dim,
    check_out,
    check_positive,
    check_positive_int,
    check_table_size,
)

__all__ = [
    "KERPLE_FORMS",
    "T5_MAX_BUCKETS",
    "T5_MAX_DISTANCE",
    "alibi_bias",
    "alibi_shifted_bias",
    "alibi_slopes",
    "fire_bias",
    "kerple_bias",
    "sandwich_bias",
    "t5_bias",
    "t5_relative_position_bucket",
]

KERPLE_FORMS = ("log", "power")
# T5's exact bucket table has max_distance + 1 entries: 2**24 keeps it at 128 MiB (real
# configs use 128); more buckets than that have no use either.
T5_MAX_DISTANCE = 2**24
T5_MAX_BUCKETS = 2**16
# Kerple's power kernel -r1 |i-j|^r2 is conditionally positive definite only for 0 < r2 <= 2.
_KERPLE_MAX_POWER = 2.0


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


def _query_key_positions(q_len, k_len, query_offset, per_pair: int = 1):
    """Query and key positions as float64 (exact: every position is at most MAX_POSITION),
    after checking that a result of ``per_pair`` values per (query, key) pair (heads, or an
    intermediate's width) stays within MAX_TABLE_ELEMENTS."""
    ql = check_positive_int(q_len, "q_len", maximum=MAX_POSITION)
    kl = ql if k_len is None else check_positive_int(k_len, "k_len", maximum=MAX_POSITION)
    off = (
        kl - ql
        if query_offset is None
        else check_count(query_offset, "query_offset", maximum=MAX_POSITION)
    )
    if off + ql - 1 > MAX_POSITION:
        raise ValueError(
            f"query_offset + q_len - 1 (the last query position) must be at most MAX_POSITION "
            f"= {MAX_POSITION}, got {off + ql - 1}"
        )
    check_table_size(ql * kl, per_pair, "the bias (q_len * k_len, heads)")
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
    ql, kl, i, j = _query_key_positions(q_len, k_len, query_offset, n)
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
    ql, kl, i, j = _query_key_positions(q_len, k_len, query_offset, n)
    res = np.broadcast_to(m[:, None, None] * j[None, None, :], (n, ql, kl)).copy()
    if causal:
        res[:, (i[:, None] - j[None, :]) < 0] = -np.inf  # [eq:alibi-shifted]
    return res


def _check_t5_args(bidirectional, num_buckets, max_distance):
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be a bool, got {type(bidirectional).__name__}")
    nb = check_positive_int(num_buckets, "num_buckets", maximum=T5_MAX_BUCKETS)
    md = check_positive_int(max_distance, "max_distance", maximum=T5_MAX_DISTANCE)
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
    if rel.size and (
        rel.max() > MAX_POSITION or (rel.dtype.kind == "i" and rel.min() < -MAX_POSITION)
    ):
        raise ValueError(
            f"relative_position must lie within +-{MAX_POSITION} (the package's position limit), "
            f"got values up to {rel.max()} and down to {rel.min()}"
        )
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
    _, _, i, j = _query_key_positions(q_len, k_len, query_offset, tab.shape[1])
    rel = (j[None, :] - i[:, None]).astype(np.int64)  # exact: |positions| <= MAX_POSITION
    b = t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=nb, max_distance=max_distance
    )
    return np.moveaxis(tab[b], -1, 0)  # [eq:t5-bias]


def _head_params(values, name: str, *, n_heads: int | None = None) -> np.ndarray:
    """A positive per-head parameter vector (shape (n_heads,))."""
    v = as_float_array(values, name, ndim=1).astype(np.float64)
    if v.shape[0] == 0:
        raise ValueError(f"{name} must have one entry per head, got none")
    if n_heads is not None and v.shape[0] != n_heads:
        raise ValueError(f"{name} must have n_heads = {n_heads} entries, got {v.shape[0]}")
    if np.any(v <= 0):
        raise ValueError(f"{name} must be positive for every head, got {v.tolist()}")
    return v


def _causal_fill(values: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Set future keys (i - j < 0) to -inf, the causal mask as part of the bias."""
    values[:, dist < 0] = -np.inf
    return values


def kerple_bias(
    q_len: int,
    k_len: int | None = None,
    *,
    r1,
    r2,
    form: str = "log",
    causal: bool = True,
    query_offset: int | None = None,
) -> np.ndarray:
    r"""Kerple's kernelised relative bias, log or power form.

    Parameters
    ----------
    q_len, k_len : int
        Numbers of queries and keys (``k_len`` defaults to ``q_len``).
    r1, r2 : array_like, shape (n_heads,)
        The learned positive parameters of every head.
    form : {"log", "power"}, default "log"
        ``"log"``: :math:`-r_1 \log(1 + r_2 |i - j|)`; ``"power"``: :math:`-r_1 |i - j|^{r_2}`
        with :math:`0 < r_2 \le 2`.
    causal : bool, default True
        ``True``: future keys get ``-inf``. ``False``: the symmetric bias for every key.
    query_offset : int, optional
        Position of the first query (default ``k_len - q_len``).

    Returns
    -------
    numpy.ndarray, shape (n_heads, q_len, k_len), float64

    Notes
    -----
    Book equations ``eq:kerple-log`` and ``eq:kerple-power`` (Chi et al., 2022). The power form
    with :math:`r_2 = 1` is ALiBi with slope :math:`r_1`.

    Examples
    --------
    >>> kerple_bias(1, 3, r1=[1.0], r2=[1.0], form="power")[0]
    array([[-2., -1., -0.]])
    """
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    kind = check_choice(form, "form", KERPLE_FORMS)
    a = _head_params(r1, "r1")
    b = _head_params(r2, "r2", n_heads=a.shape[0])
    if kind == "power" and np.any(b > _KERPLE_MAX_POWER):
        raise ValueError(f"r2 must be <= 2 in the power form (a valid kernel), got {b.tolist()}")
    _, _, i, j = _query_key_positions(q_len, k_len, query_offset, a.shape[0])
    dist = i[:, None] - j[None, :]  # (q_len, k_len): i - j
    r = np.abs(dist)[None, :, :]
    if kind == "log":
        res = -a[:, None, None] * np.log1p(b[:, None, None] * r)  # [eq:kerple-log]
    else:
        res = -a[:, None, None] * r ** b[:, None, None]  # [eq:kerple-power]
    return _causal_fill(res, dist) if causal else res


def sandwich_bias(
    scales,
    q_len: int,
    k_len: int | None = None,
    *,
    dim: int = 128,
    base: float = 10000.0,
    causal: bool = True,
    query_offset: int | None = None,
) -> np.ndarray:
    r"""Sandwich's parameter-free bias: inner products of sinusoidal encodings.

    Parameters
    ----------
    scales : array_like, shape (n_heads,)
        :math:`\lambda_h > 0`, the weight of the bias in every head.
    q_len, k_len : int
        Numbers of queries and keys (``k_len`` defaults to ``q_len``).
    dim : int, default 128
        Width :math:`\bar d` of the sinusoidal encodings (even).
    base : float, default 10000.0
        Base of their frequencies :math:`\omega_k = b^{-2k/\bar d}`.
    causal : bool, default True
        ``True``: future keys get ``-inf``.
    query_offset : int, optional
        Position of the first query (default ``k_len - q_len``).

    Returns
    -------
    numpy.ndarray, shape (n_heads, q_len, k_len), float64
        :math:`\lambda_h\, p_i^\top p_j = \lambda_h \sum_k \cos((i - j)\,\omega_k)`.

    Notes
    -----
    Book equation ``eq:sandwich-bias`` (Chi et al., 2023). The inner product of two sinusoidal
    encodings depends only on :math:`i - j` (the book proves it), so the bias is relative;
    adding a constant (the paper's :math:`-\bar d/2`) leaves every softmax unchanged.

    Examples
    --------
    >>> sandwich_bias([1.0], 1, 2, dim=2)[0]  # cos(1), cos(0)
    array([[0.54030231, 1.        ]])
    """
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    lam = _head_params(scales, "scales")
    d = check_dim(dim, "dim")
    b = check_base(base)
    omega = b ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (dim/2,)
    _, _, i, j = _query_key_positions(q_len, k_len, query_offset, max(lam.shape[0], d // 2))
    dist = i[:, None] - j[None, :]
    inner = np.cos(dist[:, :, None] * omega).sum(axis=-1)  # [eq:sandwich-bias]
    res = lam[:, None, None] * inner[None, :, :]
    return _causal_fill(res, dist) if causal else res


def _fire_mlp(mlp):
    """Validate FIRE's MLP weights ``(w1, b1, w2, b2)`` (hidden ``(H,)``, out ``(n_heads, H)``)."""
    if not isinstance(mlp, (tuple, list)) or len(mlp) != 4:
        raise TypeError("mlp must be a tuple (w1, b1, w2, b2) of the MLP's weights")
    w1 = as_float_array(mlp[0], "mlp w1", ndim=1).astype(np.float64)
    b1 = as_float_array(mlp[1], "mlp b1", ndim=1).astype(np.float64)
    w2 = as_float_array(mlp[2], "mlp w2", ndim=2).astype(np.float64)
    b2 = as_float_array(mlp[3], "mlp b2", ndim=1).astype(np.float64)
    if not (w1.shape == b1.shape and w2.shape[1] == w1.shape[0] and b2.shape[0] == w2.shape[0]):
        raise ValueError(
            "mlp shapes must be w1 (H,), b1 (H,), w2 (n_heads, H), b2 (n_heads,), got "
            f"{w1.shape}, {b1.shape}, {w2.shape}, {b2.shape}"
        )
    return w1, b1, w2, b2


def fire_bias(
    mlp,
    q_len: int,
    k_len: int | None = None,
    *,
    c: float = 1.0,
    threshold: float = 512.0,
    query_offset: int | None = None,
) -> np.ndarray:
    r"""FIRE's learned bias of the normalised, log-compressed distance (causal).

    Parameters
    ----------
    mlp : tuple (w1, b1, w2, b2)
        Weights of :math:`f_\theta(x) = W_2\,\mathrm{ReLU}(w_1 x + b_1) + b_2`: ``w1`` and
        ``b1`` of shape ``(H,)``, ``w2`` of shape ``(n_heads, H)``, ``b2`` of shape
        ``(n_heads,)`` (one hidden layer, as in the paper).
    q_len, k_len : int
        Numbers of queries and keys (``k_len`` defaults to ``q_len``).
    c : float, default 1.0
        :math:`c > 0` in :math:`\psi(x) = \log(c x + 1)` (learned in the paper).
    threshold : float, default 512.0
        :math:`L > 0`: queries before position :math:`L` normalise by :math:`\psi(L)`.
    query_offset : int, optional
        Position of the first query (default ``k_len - q_len``).

    Returns
    -------
    numpy.ndarray, shape (n_heads, q_len, k_len), float64
        :math:`f_\theta\big(\psi(i - j) / \psi(\max(L, i))\big)` for :math:`j \le i`,
        ``-inf`` for future keys.

    Notes
    -----
    Book equation ``eq:fire-bias`` (Li et al., 2024). The normalised input lies in
    :math:`[0, 1]` at every length, which is how FIRE transfers to longer inputs; with the
    normalisation removed (a huge :math:`L`) and a linear :math:`f` it is a log-distance
    Kerple-like bias.

    Examples
    --------
    >>> mlp = ([1.0], [0.0], [[-1.0]], [0.0])  # f(x) = -max(x, 0)
    >>> fire_bias(mlp, 1, 3, threshold=1.0)[0].round(4)  # psi(2)/psi(2), psi(1)/psi(2), 0
    array([[-1.    , -0.6309, -0.    ]])
    """
    w1, b1, w2, b2 = _fire_mlp(mlp)
    cc = check_positive(c, "c")
    big_l = check_positive(threshold, "threshold")
    width = max(w2.shape[0], w1.shape[0])  # heads, and the hidden layer (q_len, k_len, H)
    _, _, i, j = _query_key_positions(q_len, k_len, query_offset, width)
    dist = i[:, None] - j[None, :]
    num = np.log1p(cc * np.maximum(dist, 0.0))
    den = np.log1p(cc * np.maximum(big_l, i))[:, None]
    x = num / den  # (q_len, k_len) in [0, 1]  [eq:fire-bias]
    hidden = np.maximum(x[..., None] * w1 + b1, 0.0)  # (q_len, k_len, H)
    res = np.moveaxis(hidden @ w2.T + b2, -1, 0)  # (n_heads, q_len, k_len)
    return _causal_fill(np.ascontiguousarray(res), dist)
