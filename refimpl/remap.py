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
from typing import NamedTuple

import numpy as np

from ._checks import (
    as_float_array,
    as_positions,
    check_count,
    check_int,
    check_positive,
    check_positive_int,
    check_real,
)
from .bias import _query_key_positions
from .multiaxis import MROPE_LAYOUTS, _mrope_section, mrope_axis_of_pair
from .rotary import _resolve_inv_freq, apply_rope, apply_rope_tables, pair_indices

__all__ = [
    "DCA_INTER",
    "DCA_INTRA",
    "DCA_MASKED",
    "DCA_SUCCESSIVE",
    "DualChunkAttention",
    "DualChunkScores",
    "dual_chunk_attention_scores",
    "dual_chunk_query_tables",
    "dual_chunk_relative_positions",
    "relative_rope_scores",
    "rerope_relative_positions",
    "rerotate_keys",
    "rerotate_keys_mrope",
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


#: Codes of :attr:`DualChunkScores.relation`: the key is in the query's chunk, in the chunk
#: just before it, in an earlier chunk, or after the query (masked).
DCA_INTRA, DCA_SUCCESSIVE, DCA_INTER, DCA_MASKED = 0, 1, 2, -1

# vLLM's length scaling of Dual Chunk Attention: s = 0.1 ln(L / L_orig) + 1, at least 1
# (DualChunkFlashAttentionMetadata's scaling_factor), applied to the keys and to the softmax
# scale, so the logits carry s**2.
_DCA_LOG_SLOPE = 0.1


class DualChunkScores(NamedTuple):
    r"""What :func:`dual_chunk_attention_scores` returns.

    Parameters
    ----------
    scores : numpy.ndarray, shape (q_len, k_len)
        The logits ``q . k`` of the three query rotations against the one key rotation, each
        entry from the table its chunk relation selects, times ``length_factor``; ``-inf``
        where the key comes after the query (the causal mask). No softmax scale
        (``1/sqrt(d)``) is applied.
    relation : numpy.ndarray of int8, shape (q_len, k_len)
        :data:`DCA_INTRA` (0), :data:`DCA_SUCCESSIVE` (1), :data:`DCA_INTER` (2) or
        :data:`DCA_MASKED` (-1) per query and key: the chunk-relation mask.
    relative : numpy.ndarray, shape (q_len, k_len)
        The relative position each entry is rotated by, key minus query (as
        :func:`dual_chunk_relative_positions`; ``j - i`` where masked).
    query_positions : numpy.ndarray, shape (3, q_len)
        The positions of the intra, successive and inter query tables of every query.
    key_positions : numpy.ndarray, shape (k_len,)
        The position every key is rotated at, ``p mod (chunk_size - local_size)``.
    length_factor : float
        :math:`s^2` with :math:`s = \max(1, 0.1 \ln(L / L_\text{orig}) + 1)` when the record
        has ``original_max_position``, else 1.
    """

    scores: np.ndarray
    relation: np.ndarray
    relative: np.ndarray
    query_positions: np.ndarray
    key_positions: np.ndarray
    length_factor: float


def _dca_record(dca) -> DualChunkAttention:
    if isinstance(dca, DualChunkAttention):
        return dca
    if isinstance(dca, Mapping):
        return DualChunkAttention.from_config(dca)
    raise TypeError(
        "dca must be a DualChunkAttention record or a dual_chunk_attention_config mapping, "
        f"got {type(dca).__name__}"
    )


def dual_chunk_query_tables(query_positions, dca) -> np.ndarray:
    r"""The three query positions of Dual Chunk Attention for queries at ``query_positions``.

    Parameters
    ----------
    query_positions : array_like of int, shape (q_len,)
    dca : DualChunkAttention or mapping

    Returns
    -------
    numpy.ndarray, shape (3, q_len), float64
        Rows: intra :math:`p \bmod c`; successive :math:`\min(p \bmod c + c,\ \text{size})`;
        inter :math:`\min(2c - 1,\ \text{size})` (vLLM's ``qc`` table at row ``c - 1``), with
        :math:`c` = ``chunk_size - local_size`` and size = ``chunk_size``.

    Examples
    --------
    >>> dual_chunk_query_tables([0, 5, 9], {"chunk_size": 6, "local_size": 2}).tolist()
    [[0.0, 1.0, 1.0], [4.0, 5.0, 5.0], [6.0, 6.0, 6.0]]
    """
    rec = _dca_record(dca)
    p = _dca_positions(query_positions, "query_positions")
    c, size = rec.chunk_len, rec.chunk_size
    intra = p % c  # [eq:remap-dca]
    successive = np.minimum(p % c + c, size)  # [eq:remap-dca]
    inter = np.full_like(p, min(2 * c - 1, size))  # [eq:remap-dca]
    return np.stack([intra, successive, inter]).astype(np.float64)


def _dca_positions(positions, name: str) -> np.ndarray:
    p = as_positions(positions, name)
    if np.any(p < 0) or np.any(p != np.round(p)):
        raise ValueError(f"{name} must be non-negative integers (token positions)")
    return p.astype(np.int64)


def dual_chunk_attention_scores(
    q,
    k,
    positions,
    dca,
    inv_freq=None,
    *,
    base: float = 10000.0,
    pairing: str = "half",
    seq_len: int | None = None,
) -> DualChunkScores:
    r"""The attention logits of Dual Chunk Attention, as vLLM's dual-chunk backend forms them.

    Parameters
    ----------
    q : array_like, shape (q_len, dim)
        Queries before RoPE: the last ``q_len`` of the tokens (``q_len <= k_len``; a
        prefill continuing a cache has fewer queries than keys).
    k : array_like, shape (k_len, dim)
        Keys before RoPE.
    positions : array_like of int, shape (k_len,)
        Position of every key (non-negative integers, ``0 .. k_len - 1`` for one sequence);
        the queries sit at the last ``q_len`` of them.
    dca : DualChunkAttention or mapping
        The model's settings (``dual_chunk_attention_config``).
    inv_freq : array_like, shape (dim/2,), optional
        Frequencies; default :math:`b^{-2i/d}` with ``base``.
    base : float, default 10000.0
    pairing : {"half", "interleaved"}, default "half"
    seq_len : int, optional
        The sequence length :math:`L` of the length scaling (default ``max(positions) + 1``).

    Returns
    -------
    DualChunkScores
        The logits, the chunk-relation mask, the relative positions, the query tables, the
        key positions and the length factor.

    Notes
    -----
    Book equations ``eq:remap-dca`` and ``eq:remap-dca-scores``. With
    :math:`c` = ``chunk_size - local_size``, every key is rotated at :math:`j \bmod c` and
    every query three times (:func:`dual_chunk_query_tables`); a key in the query's chunk
    (:math:`\lfloor i/c \rfloor = \lfloor j/c \rfloor`, causal) is scored against the intra
    query, a key in the chunk before against the successive one, any earlier key against
    the inter one:

    .. math:: s_{ij} = \sigma^2\, (R_{m_{ij}} q_i)^\top (R_{j \bmod c}\, k_j) ,

    :math:`\sigma = \max(1,\ 0.1 \ln(L/L_\text{orig}) + 1)` when ``original_max_position``
    is set (else 1). The successive query is exact for the first ``local_size`` queries of a
    chunk (the local window: :math:`p \bmod c + c \le` ``chunk_size``) and clamped at
    ``chunk_size`` after them, so no relative position exceeds ``chunk_size``.

    This is the arithmetic of vLLM's ``DualChunkRotaryEmbedding`` (file
    ``vllm/model_executor/layers/rotary_embedding/dual_chunk_rope.py``,
    ``_compute_cos_sin_cache`` and ``forward_native``: the ``q``, ``qc`` and
    ``qc[chunk_len - 1]`` tables, keys from ``k`` at ``p mod chunk_len``) and of its
    backend's ``DualChunkFlashAttentionImpl._dual_chunk_flash_attn_prefill_func`` (file
    ``vllm/attention/backends/dual_chunk_flash_attn.py``: intra causal over
    ``[prev_chunk_end_pos, end)``, successive over the chunk before, inter over all earlier
    keys, the key and the softmax scale both multiplied by ``scaling_factor``). The backend
    merges the three softmax passes by their log-sum-exp, which equals one softmax over these
    logits. Its sparse attention (``sparse_attention_config``, above
    ``sparse_attention_threshold`` tokens) then keeps a data-dependent subset of the entries;
    which subset is not computed here.

    Examples
    --------
    >>> q = k = np.tile([1.0, 0.0], (5, 1))
    >>> out = dual_chunk_attention_scores(q, k, np.arange(5), {"chunk_size": 3, "local_size": 1})
    >>> out.relation[4].tolist()  # key chunks 0, 0, 1, 1, 2 seen from the query at 4 (chunk 2)
    [2, 2, 1, 1, 0]
    >>> out.relative[4].tolist()  # inside the local window: the chunk before at exact distances
    [-3.0, -2.0, -2.0, -1.0, 0.0]
    """
    rec = _dca_record(dca)
    qa = as_float_array(q, "q", ndim=2).astype(np.float64)
    ka = as_float_array(k, "k", ndim=2).astype(np.float64)
    if qa.shape[1] != ka.shape[1]:
        raise ValueError(f"q and k must have the same width, got {qa.shape} and {ka.shape}")
    pos = _dca_positions(positions, "positions")
    if pos.shape[0] != ka.shape[0]:
        raise ValueError(f"positions must have one entry per key ({ka.shape[0]}), got {pos.size}")
    if qa.shape[0] > ka.shape[0]:
        raise ValueError(f"q_len ({qa.shape[0]}) must be at most k_len ({ka.shape[0]})")
    theta = _resolve_inv_freq(inv_freq, ka.shape[1] if inv_freq is None else None, base)
    if 2 * theta.shape[0] != ka.shape[1]:
        raise ValueError(f"inv_freq must have dim/2 = {ka.shape[1] // 2} entries")
    length = int(pos.max()) + 1 if seq_len is None else check_int(seq_len, "seq_len", minimum=1)
    c = rec.chunk_len
    qpos = pos[pos.shape[0] - qa.shape[0] :]
    tables = dual_chunk_query_tables(qpos, rec)  # (3, q_len)
    key_pos = (pos % c).astype(np.float64)
    relation = _dca_relation(qpos, pos, c)
    k_rot = apply_rope(ka, key_pos, inv_freq=theta, pairing=pairing)
    logits = np.stack(
        [apply_rope(qa, t, inv_freq=theta, pairing=pairing) @ k_rot.T for t in tables]
    )
    pick = np.maximum(relation, 0)  # masked entries read the intra table, then -inf
    qi = np.arange(qa.shape[0])[:, None]
    factor = _dca_length_factor(rec, length)
    scores = factor * np.take_along_axis(logits, pick[None], axis=0)[0]  # [eq:remap-dca-scores]
    scores[relation == DCA_MASKED] = -np.inf
    relative = key_pos[None, :] - tables[pick, qi]
    relative = np.where(relation == DCA_MASKED, pos[None, :] - qpos[:, None], relative)
    return DualChunkScores(scores, relation, relative, tables, key_pos, factor)


def _dca_relation(qpos: np.ndarray, kpos: np.ndarray, c: int) -> np.ndarray:
    gap = qpos[:, None] // c - kpos[None, :] // c  # chunks between query and key
    rel = np.where(gap == 0, DCA_INTRA, np.where(gap == 1, DCA_SUCCESSIVE, DCA_INTER))
    return np.where(kpos[None, :] > qpos[:, None], DCA_MASKED, rel).astype(np.int8)


def _dca_length_factor(rec: DualChunkAttention, length: int) -> float:
    if rec.original_max_position is None:
        return 1.0
    ratio = length / rec.original_max_position
    s = max(1.0, _DCA_LOG_SLOPE * np.log(ratio) + 1.0)  # [eq:remap-dca-scores]
    return float(s * s)


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


# Position rows a layout reads beyond its sections (blocked: one per section; imrope: t, h, w
# and the fourth row e; the other layouts: t, h, w).
_MROPE_ROWS = {"imrope": 4}


def rerotate_keys_mrope(
    k,
    delta,
    inv_freq=None,
    *,
    mrope_section,
    layout: str = "blocked",
    base: float = 10000.0,
    pairing: str = "half",
) -> np.ndarray:
    r"""Move cached M-RoPE keys by a shift of every position axis: each pair by its axis' shift.

    Parameters
    ----------
    k : array_like, shape (..., seq, dim)
        Keys already rotated by multimodal RoPE at their position ids.
    delta : float or array_like of shape (A,) or (A, seq)
        Shift of each position row (``A`` rows: ``t, h, w`` or the layout's four), the same
        for every key or one per key. A number shifts every row of a three-row layout; the
        four-row layouts (``"imrope"``, a 4-section ``"blocked"``) need the shift of each row
        spelled out, since their fourth row is not a position of the sequence (llama.cpp keeps
        IMROPE's ``e`` row at 0 for text and image tokens, so a text shift is
        ``(d, d, d, 0)``).
    inv_freq : array_like, shape (dim/2,), optional
        Frequencies of the whole head; default :math:`b^{-2i/d}` with ``base``.
    mrope_section : sequence of int
        Pairs per axis, summing to ``dim/2``, in the layout's order (see
        :func:`refimpl.multiaxis.mrope_axis_of_pair`): llama.cpp's ``rope.dimension_sections``
        ``[t, h, w, e]`` for ``"blocked"`` (ggml's MROPE) and ``"imrope"`` (ggml's IMROPE).
    layout : {"blocked", "interleaved", "alternating", "imrope"}, default "blocked"
        Which axis drives each pair (:func:`refimpl.multiaxis.mrope_axis_of_pair`).
    base : float, default 10000.0
    pairing : {"half", "interleaved"}, default "half"
        ggml's MROPE and IMROPE rotate NEOX pairs ``(i, i + dim/2)``: ``"half"``.

    Returns
    -------
    numpy.ndarray, same shape and floating dtype as ``k``
        :math:`R(\Delta_{a(j)})` applied to pair :math:`j`, with :math:`a(j)` the pair's axis:
        keys rotated at position ids :math:`p` become keys rotated at :math:`p + \Delta`
        (the multimodal rotation is a product of commuting per-pair rotations, so a shift
        composes per axis exactly as :func:`rerotate_keys` does for one axis).

    Notes
    -----
    Book equation ``eq:remap-kshift-mrope``. llama.cpp refuses its K-shift for MROPE and IMROPE
    models (``n_pos_per_embd() > 1``); this is the rotation such a shift must apply, tested
    against ``mrope_cos_sin`` at the shifted ids and against ggml's ``ggml_rope_multi``.

    Examples
    --------
    >>> from refimpl import inv_freq, mrope_cos_sin
    >>> f, sec = inv_freq(8), [2, 1, 1]
    >>> ids = np.array([[3], [5], [7]])
    >>> k0 = np.ones((1, 8))
    >>> k = apply_rope_tables(k0, *mrope_cos_sin(ids, f, sec))
    >>> moved = rerotate_keys_mrope(k, [2, 2, 2], f, mrope_section=sec)
    >>> bool(np.allclose(moved, apply_rope_tables(k0, *mrope_cos_sin(ids + 2, f, sec))))
    True
    """
    ka = as_float_array(k, "k", min_ndim=2)
    seq, d = ka.shape[-2], ka.shape[-1]
    if layout not in MROPE_LAYOUTS:
        raise ValueError(f"layout must be one of {MROPE_LAYOUTS}, got {layout!r}")
    sec = _mrope_section(mrope_section, layout)
    axis = mrope_axis_of_pair(sec, layout)  # (d/2,) row of each pair
    n_rows = len(sec) if layout == "blocked" else _MROPE_ROWS.get(layout, 3)
    theta = _resolve_inv_freq(inv_freq, d if inv_freq is None else None, base)
    if 2 * theta.shape[0] != d or sum(sec) != theta.shape[0]:
        raise ValueError(
            f"mrope_section must sum to dim/2 = {d // 2} pairs and inv_freq have as many "
            f"entries, got sum {sum(sec)} and {theta.shape[0]}"
        )
    shift = _mrope_shift(delta, n_rows, seq)  # (A, seq)
    ang = shift[axis, :].T * theta  # (seq, d/2)  [eq:remap-kshift-mrope]
    return apply_rope_tables(ka, np.cos(ang), np.sin(ang), pairing=pairing)


def _mrope_shift(delta, n_rows: int, seq: int) -> np.ndarray:
    """``delta`` as one shift per position row and key, ``(n_rows, seq)`` float64."""
    if np.ndim(delta) == 0:
        dl = np.float64(check_real(delta, "delta"))
    else:
        dl = as_float_array(delta, "delta", min_ndim=1).astype(np.float64)
    if dl.ndim == 0:
        if n_rows != 3:
            raise ValueError(
                f"delta must give the shift of each of the {n_rows} position rows (shape "
                f"({n_rows},) or ({n_rows}, seq)): the fourth row is not the sequence position "
                "(llama.cpp's IMROPE keeps e = 0 for text and image tokens)"
            )
        return np.full((n_rows, seq), float(dl))
    if dl.shape == (n_rows,):
        return np.repeat(dl[:, None], seq, axis=1)
    if dl.shape == (n_rows, seq):
        return dl
    raise ValueError(
        f"delta must be a number, shape ({n_rows},) or ({n_rows}, seq) = ({n_rows}, {seq}), "
        f"got {dl.shape}"
    )
