r"""Training-free context extension as position maps: ReRoPE, Self-Extend, Dual Chunk
Attention, and re-rotating cached keys.

Each method keeps the model's RoPE and changes only the relative positions its attention
sees. A method is therefore a *relative-position matrix* ``rel[i, j]`` (key minus query, the
package convention), and the attention scores it produces are

.. math:: s_{ij} = q_i^\top R(\mathrm{rel}_{ij})\, k_j

(:func:`relative_rope_scores`; with ``rel[i, j] = j - i`` this is ordinary RoPE). Queries are
the last ``q_len`` of ``k_len`` positions (decoding with a cache), as in
:func:`refimpl.attention.causal_mask`. Only keys at or before the query (``j <= i``) are
remapped; future keys keep their exact relative position (a causal mask removes them).

Engines do not build these matrices: they rotate queries and keys with remapped *absolute*
positions, once per regime (ReRoPE: two attention passes; Dual Chunk Attention: three query
rotations against one key rotation; llama.cpp's Self-Extend: arithmetic on the KV cache's
positions, :func:`self_extend_cache_positions`). The matrices are what those procedures are
meant to produce, and the book's figure draws them side by side.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from ._checks import as_float_array, check_count, check_positive, check_positive_int
from .bias import _query_key_positions
from .rotary import _resolve_inv_freq, apply_rope, pair_indices

__all__ = [
    "DualChunkAttention",
    "dual_chunk_relative_positions",
    "relative_rope_scores",
    "rerope_relative_positions",
    "rerotate_keys",
    "self_extend_cache_positions",
    "self_extend_relative_positions",
]


def _grid(q_len, k_len, query_offset):
    """Query and key positions (int64) and the causal distance ``i - j`` of every pair (the
    queries are the last ``q_len`` keys unless ``query_offset`` says otherwise, as for the
    biases)."""
    _, _, qi, kj = _query_key_positions(q_len, k_len, query_offset)
    i = qi.astype(np.int64)[:, None]  # (q_len, 1) query positions
    j = kj.astype(np.int64)[None, :]  # (1, k_len) key positions
    return i, j, i - j


def rerope_relative_positions(
    q_len: int,
    k_len: int | None = None,
    *,
    window: int,
    leak: float | None = None,
    query_offset: int | None = None,
) -> np.ndarray:
    r"""ReRoPE's relative positions: distances clipped at a window (or leaking beyond it).

    Parameters
    ----------
    q_len, k_len : int
        Number of queries and keys (``k_len`` defaults to ``q_len``).
    window : int
        :math:`w \ge 1`: distances up to :math:`w` are exact.
    leak : float, optional
        :math:`k > 1` for leaky ReRoPE: beyond the window the distance grows with slope
        :math:`1/k`. ``None``: clipped (slope 0).
    query_offset : int, optional
        Position of the first query (default ``k_len - q_len``).

    Returns
    -------
    numpy.ndarray, shape (q_len, k_len), float64
        ``rel[i, j] = -D(i - j)`` for ``j <= i``, with :math:`D(\delta) = \min(\delta, w)`
        (ReRoPE) or :math:`D(\delta) = w + (\delta - w)/k` for :math:`\delta > w` (leaky);
        ``j - i`` for future keys.

    Notes
    -----
    Book equation ``eq:remap-rerope``. The clipped form never shows the model a distance it
    did not see in training, whatever the input length; leaky ReRoPE keeps distances ordered.

    Examples
    --------
    >>> rerope_relative_positions(1, 6, window=2)
    array([[-2., -2., -2., -2., -1.,  0.]])
    >>> rerope_relative_positions(1, 6, window=2, leak=2.0)
    array([[-3.5, -3. , -2.5, -2. , -1. ,  0. ]])
    """
    w = check_positive_int(window, "window")
    _, _, dist = _grid(q_len, k_len, query_offset)
    dist = dist.astype(np.float64)
    if leak is None:
        far = np.full_like(dist, float(w))  # [eq:remap-rerope]
    else:
        k = check_positive(leak, "leak")
        if k <= 1.0:
            raise ValueError(f"leak must be > 1 (the slope beyond the window is 1/leak), got {k}")
        far = w + (dist - w) / k  # [eq:remap-rerope]
    return np.where(dist > w, -far, -dist)


def self_extend_relative_positions(
    q_len: int,
    k_len: int | None = None,
    *,
    group: int,
    window: int,
    query_offset: int | None = None,
) -> np.ndarray:
    r"""Self-Extend's relative positions: exact inside a neighbour window, grouped beyond it.

    Parameters
    ----------
    q_len, k_len : int
        Number of queries and keys (``k_len`` defaults to ``q_len``).
    group : int
        Group size :math:`G \ge 1` (llama.cpp ``grp_attn_n``).
    window : int
        Neighbour window :math:`W \ge 1` (the paper's :math:`w_n`).
    query_offset : int, optional
        Position of the first query (default ``k_len - q_len``).

    Returns
    -------
    numpy.ndarray, shape (q_len, k_len), float64
        For a query at :math:`i` and key at :math:`j \le i`: :math:`j - i` when
        :math:`i - j < W`, otherwise the grouped positions'
        :math:`\lfloor j/G \rfloor - (\lfloor i/G \rfloor + W - \lfloor W/G \rfloor)`.

    Notes
    -----
    Book equation ``eq:remap-self-extend`` (Jin et al., 2024). The shift
    :math:`W - \lfloor W/G \rfloor` makes the grouped distance continue the neighbour
    distances at the window's edge (exactly when :math:`G` divides :math:`W`); the
    largest distance the model sees at length :math:`L` is about :math:`W + (L - W)/G`.
    ``group=1`` is ordinary RoPE.

    Examples
    --------
    >>> self_extend_relative_positions(1, 8, group=2, window=2)
    array([[-4., -4., -3., -3., -2., -2., -1.,  0.]])
    """
    g = check_positive_int(group, "group")
    w = check_positive_int(window, "window")
    i, j, dist = _grid(q_len, k_len, query_offset)
    grouped = j // g - (i // g + w - w // g)  # [eq:remap-self-extend]
    return np.where(dist >= w, grouped, j - i).astype(np.float64)


@dataclasses.dataclass(frozen=True)
class DualChunkAttention:
    """A model's Dual Chunk Attention settings (``dual_chunk_attention_config``).

    Attributes
    ----------
    chunk_size : int
        ``chunk_size``: the longest relative position any query sees (Qwen2.5-1M: 262144).
    local_size : int
        ``local_size``: the overlap kept local; chunks are ``chunk_size - local_size``
        positions long (Qwen2.5-1M: 8192).
    original_max_position : int or None
        ``original_max_position_embeddings`` when the config states it.
    extra : tuple of (str, object)
        The config's other keys (vLLM's sparse-attention settings, for example), kept as
        read so that a description can list them; nothing here interprets them.

    Notes
    -----
    transformers reads the key into the config and ignores it (its attention is ordinary
    RoPE attention); vLLM and SGLang run Dual Chunk Attention when it is present.
    """

    chunk_size: int
    local_size: int
    original_max_position: int | None = None
    extra: tuple = ()

    def __post_init__(self):
        size = check_positive_int(self.chunk_size, "chunk_size")
        local = check_count(self.local_size, "local_size")
        if size - local < 1:
            raise ValueError(f"chunk_size - local_size must be >= 1, got {size} - {local}")
        if self.original_max_position is not None:
            check_positive_int(self.original_max_position, "original_max_position_embeddings")

    @property
    def chunk_len(self) -> int:
        """Length of a chunk, ``chunk_size - local_size``."""
        return self.chunk_size - self.local_size

    @classmethod
    def from_config(cls, value) -> DualChunkAttention:
        """The record of a config's ``dual_chunk_attention_config`` mapping.

        ``chunk_size`` and ``local_size`` are required; a missing one raises ValueError
        naming it.
        """
        if not isinstance(value, Mapping):
            raise TypeError(
                "dual_chunk_attention_config must be a mapping, got " + type(value).__name__
            )
        for key in ("chunk_size", "local_size"):
            if key not in value:
                raise ValueError(f"dual_chunk_attention_config lacks the key {key!r}")
        known = ("chunk_size", "local_size", "original_max_position_embeddings")
        extra = tuple(sorted((str(k), v) for k, v in value.items() if k not in known))
        return cls(
            chunk_size=value["chunk_size"],
            local_size=value["local_size"],
            original_max_position=value.get("original_max_position_embeddings"),
            extra=extra,
        )


def dual_chunk_relative_positions(
    q_len: int,
    k_len: int | None = None,
    *,
    chunk_size: int,
    local_size: int,
    query_offset: int | None = None,
) -> np.ndarray:
    r"""Dual Chunk Attention's relative positions (intra-, successive- and inter-chunk).

    Parameters
    ----------
    q_len, k_len : int
        Number of queries and keys (``k_len`` defaults to ``q_len``).
    chunk_size : int
        ``dual_chunk_attention_config.chunk_size`` (Qwen2.5-1M: 262144).
    local_size : int
        ``local_size`` (Qwen2.5-1M: 8192); chunks are :math:`c = ` ``chunk_size - local_size``
        positions long.
    query_offset : int, optional
        Position of the first query (default ``k_len - q_len``).

    Returns
    -------
    numpy.ndarray, shape (q_len, k_len), float64
        Keys sit at :math:`j \bmod c`. A key in the query's own chunk sees the query at
        :math:`i \bmod c` (intra); a key in the chunk just before sees it at
        :math:`\min(i \bmod c + c,\ \text{chunk\_size})` (successive); a key in any earlier
        chunk sees it at :math:`\min(2c - 1,\ \text{chunk\_size})` (inter). ``rel`` is key
        position minus query position.

    Notes
    -----
    Book equation ``eq:remap-dca``. These are the maps of vLLM's ``DualChunkRotaryEmbedding``
    (its query tables ``q``, ``qc`` and ``qc[c - 1]``), which Qwen2.5-1M uses; the paper is
    An et al., 2024. Every relative position stays within ``chunk_size`` of zero.

    Examples
    --------
    >>> dual_chunk_relative_positions(1, 7, chunk_size=3, local_size=1)  # c = 2
    array([[-3., -2., -3., -2., -2., -1.,  0.]])
    """
    size = check_positive_int(chunk_size, "chunk_size")
    local = check_count(local_size, "local_size")
    c = size - local
    if c < 1:
        raise ValueError(f"chunk_size - local_size must be >= 1, got {size} - {local}")
    i, j, _ = _grid(q_len, k_len, query_offset)
    key_pos = j % c
    q_intra = i % c
    q_succ = np.minimum(i % c + c, size)  # [eq:remap-dca]
    q_inter = min(2 * c - 1, size)
    chunk_gap = i // c - j // c
    query_pos = np.where(chunk_gap == 0, q_intra, np.where(chunk_gap == 1, q_succ, q_inter))
    rel = np.where(chunk_gap >= 0, key_pos - query_pos, j - i)
    return rel.astype(np.float64)


def self_extend_cache_positions(
    n_tokens: int, *, group: int, window: int, batch: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    r"""Positions llama.cpp's Self-Extend leaves in the KV cache (``grp_attn_n``/``grp_attn_w``).

    Parameters
    ----------
    n_tokens : int
        Tokens processed.
    group : int
        ``grp_attn_n`` (:math:`G`).
    window : int
        ``grp_attn_w`` (:math:`W`), a multiple of ``group`` (llama.cpp asserts it).
    batch : int, default 1
        Tokens evaluated per step (the grouping runs before each step).

    Returns
    -------
    query_positions : numpy.ndarray, shape (n_tokens,), int64
        The position each token was evaluated at.
    cache_positions : numpy.ndarray, shape (n_tokens,), int64
        The positions of the cached keys after the last step.

    Notes
    -----
    Book equation ``eq:remap-self-extend-cache``. Before each step, while the next position
    :math:`n` reaches :math:`g_i + W`, the example programs run (``ib = G g_i / W``,
    ``bd = (W/G)(G-1)``, ``dd = W/G - ib\,bd - W``): add ``ib*bd`` to positions in
    :math:`[g_i, n)`, integer-divide positions in :math:`[g_i + ib\,bd, g_i + ib\,bd + W)` by
    :math:`G`, add ``dd`` to :math:`[g_i + ib\,bd + W, n + ib\,bd)`, then :math:`n` drops by
    ``bd`` and :math:`g_i` grows by :math:`W/G`. This is a procedure on the cache, not the
    paper's two-regime attention (:func:`self_extend_relative_positions`): it groups every
    completed window, including recent ones.

    Examples
    --------
    >>> q, kv = self_extend_cache_positions(6, group=2, window=2)
    >>> q.tolist(), kv.tolist()
    ([0, 1, 1, 2, 2, 3], [0, 0, 1, 1, 2, 3])
    """
    n_tok = check_count(n_tokens, "n_tokens")
    g = check_positive_int(group, "group")
    w = check_positive_int(window, "window")
    step = check_positive_int(batch, "batch")
    if w % g:
        raise ValueError(f"window must be a multiple of group, got window={w}, group={g}")
    cache = np.empty(0, dtype=np.int64)
    queries = np.empty(n_tok, dtype=np.int64)
    n_past, ga_i = 0, 0
    for start in range(0, n_tok, step):
        cache, n_past, ga_i = _group_cache(cache, n_past, ga_i, g, w)
        m = min(step, n_tok - start)
        new = np.arange(n_past, n_past + m, dtype=np.int64)
        queries[start : start + m] = new
        cache = np.concatenate([cache, new])
        n_past += m
    return queries, cache


def _group_cache(cache, n_past, ga_i, g, w):
    """One pass of the grouping loop over the cache positions (``seq_add``/``seq_div``)."""
    cache = cache.copy()
    while n_past >= ga_i + w:
        ib = (g * ga_i) // w
        bd = (w // g) * (g - 1)
        dd = (w // g) - ib * bd - w
        for lo, hi, op in (
            (ga_i, n_past, ("add", ib * bd)),
            (ga_i + ib * bd, ga_i + ib * bd + w, ("div", g)),
            (ga_i + ib * bd + w, n_past + ib * bd, ("add", dd)),
        ):
            sel = (cache >= lo) & (cache < hi)  # [eq:remap-self-extend-cache]
            cache[sel] = cache[sel] + op[1] if op[0] == "add" else cache[sel] // op[1]
        n_past -= bd
        ga_i += w // g
    return cache, n_past, ga_i


def relative_rope_scores(
    q,
    k,
    relative,
    inv_freq=None,
    *,
    dim: int | None = None,
    base: float = 10000.0,
    pairing: str = "half",
) -> np.ndarray:
    r"""RoPE attention scores for any matrix of relative positions.

    Parameters
    ----------
    q : array_like, shape (q_len, dim)
    k : array_like, shape (k_len, dim)
    relative : array_like, shape (q_len, k_len)
        Key position minus query position of every pair (e.g. from the maps above).
    inv_freq : array_like, shape (dim/2,), optional
        Frequencies; default :math:`b^{-2i/d}` with ``dim`` and ``base``.
    dim : int, optional
        Head width when ``inv_freq`` is not given (default: the width of ``q``).
    base : float, default 10000.0
    pairing : {"half", "interleaved"}, default "half"

    Returns
    -------
    numpy.ndarray, shape (q_len, k_len), float64
        :math:`s_{ij} = q_i^\top R(\mathrm{rel}_{ij}) k_j
        = \sum_p a_{ij,p}\cos(\mathrm{rel}_{ij}\theta_p) + b_{ij,p}\sin(\mathrm{rel}_{ij}\theta_p)`
        with :math:`a = q_1 k_1 + q_2 k_2`, :math:`b = q_2 k_1 - q_1 k_2` per pair.

    Notes
    -----
    Book equation ``eq:remap-scores``. With ``relative[i, j] = n_j - m_i`` this equals the dot
    products of :func:`refimpl.apply_rope` outputs at positions :math:`m_i`, :math:`n_j`
    (tested), which is the relative property :math:`R_m^\top R_n = R_{n-m}`.

    Examples
    --------
    >>> relative_rope_scores([[1.0, 0.0]], [[1.0, 0.0]], [[2.0]], [0.5]).round(6)  # cos(1)
    array([[0.540302]])
    """
    qa = as_float_array(q, "q", ndim=2).astype(np.float64)
    ka = as_float_array(k, "k", ndim=2).astype(np.float64)
    if qa.shape[1] != ka.shape[1]:
        raise ValueError(f"q and k must have the same width, got {qa.shape} and {ka.shape}")
    rel = as_float_array(relative, "relative", ndim=2).astype(np.float64)
    if rel.shape != (qa.shape[0], ka.shape[0]):
        raise ValueError(
            f"relative must have shape (q_len, k_len) = {(qa.shape[0], ka.shape[0])}, "
            f"got {rel.shape}"
        )
    d = qa.shape[1] if dim is None and inv_freq is None else dim
    theta = _resolve_inv_freq(inv_freq, d, base)
    if 2 * theta.shape[0] != qa.shape[1]:
        raise ValueError(f"inv_freq must have dim/2 = {qa.shape[1] // 2} entries")
    i1, i2 = pair_indices(qa.shape[1], pairing)
    a = qa[:, None, i1] * ka[None, :, i1] + qa[:, None, i2] * ka[None, :, i2]  # (q, k, d/2)
    b = qa[:, None, i2] * ka[None, :, i1] - qa[:, None, i1] * ka[None, :, i2]
    phase = rel[:, :, None] * theta  # [eq:remap-scores]
    return np.sum(a * np.cos(phase) + b * np.sin(phase), axis=-1)


def rerotate_keys(
    k, delta, inv_freq=None, *, base: float = 10000.0, pairing: str = "half"
) -> np.ndarray:
    r"""Move cached, already-rotated keys by :math:`\Delta` positions: :math:`R(\Delta) k`.

    Parameters
    ----------
    k : array_like, shape (..., seq, dim)
        Keys rotated at their positions :math:`p`.
    delta : float or array_like of shape (seq,)
        Shift of every key (llama.cpp's K-shift after dropping or moving tokens).
    inv_freq : array_like, shape (dim/2,), optional
        Default :math:`b^{-2i/d}` with ``base``.
    base : float, default 10000.0
    pairing : {"half", "interleaved"}, default "half"

    Returns
    -------
    numpy.ndarray, same shape and floating dtype as ``k``
        :math:`R(\Delta) R(p) k_0 = R(p + \Delta) k_0`: exact in real arithmetic; in floating
        point each shift adds one rotation's rounding (the book measures float32 and bfloat16).

    Notes
    -----
    Book equation ``eq:remap-kshift``.

    Examples
    --------
    >>> k0 = np.array([[1.0, 0.0]])
    >>> moved = rerotate_keys(apply_rope(k0, [3.0]), 2.0)
    >>> bool(np.allclose(moved, apply_rope(k0, [5.0])))
    True
    """
    ka = as_float_array(k, "k", min_ndim=2)
    seq = ka.shape[-2]
    dl = as_float_array(delta, "delta", min_ndim=0).astype(np.float64)
    if dl.ndim == 0:
        dl = np.full(seq, float(dl))
    elif dl.shape != (seq,):
        raise ValueError(f"delta must be a number or have shape (seq,) = ({seq},), got {dl.shape}")
    return apply_rope(ka, dl, base=base, inv_freq=inv_freq, pairing=pairing)  # [eq:remap-kshift]
