r"""Positions as inference and training engines pass them to a RoPE kernel.

* ``(B, S)`` position ids, one row per sequence, broadcast against ``x`` of shape
  ``(B, ..., S, D)`` (transformers' ``position_ids``).
* Per-sequence offsets ``offsets (B,)``: sequence ``b``'s token ``t`` sits at position
  ``positions[t] + offsets[b]`` (KV-cache decode, one new token per sequence at different
  positions; flash-attention's ``seqlen_offsets``, FlashInfer's ``offsets``).
* Packed variable-length batches: ``x`` of shape ``(T, H, D)`` holds the documents one after
  another, document ``b`` in rows ``cu_seqlens[b] .. cu_seqlens[b+1] - 1``; positions restart
  at every document (plus its offset): :math:`p_t = t - cu_b + o_b` (book equation
  ``eq:rope-varlen-positions``; flash-attention's ``cu_seqlens``, FlashInfer's ``indptr``).
* Context-parallel shards: a sequence of length :math:`S` is cut into :math:`2\,cp` chunks of
  :math:`c = S / (2\,cp)` tokens and rank :math:`r` holds chunks :math:`r` and
  :math:`2\,cp - 1 - r` (the load-balanced "zigzag" split of TransformerEngine's
  ``_get_freqs_on_this_cp_rank``; book equation ``eq:rope-cp-shard``). A packed batch is
  split document by document, each document's length a multiple of :math:`2\,cp`.

Position ids of any integer dtype are accepted and are exact up to :math:`2^{53}` in magnitude
(the float64 integers); larger ones are refused rather than rounded.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import (
    EXACT_INTEGER,
    MAX_POSITION,
    as_exact_integers,
    as_positions,
    check_count,
    check_exact_range,
    check_positive_int,
)

__all__ = ["context_parallel_indices", "packing_from_position_ids", "varlen_positions"]


def _array(a, name: str) -> np.ndarray:
    try:
        return np.asarray(a)
    except (ValueError, TypeError) as exc:  # ragged nested lists, unconvertible objects
        raise ValueError(f"{name} must be a rectangular array of numbers: {exc}") from None


def _integers(a, name: str, *, ndim: tuple[int, ...]) -> np.ndarray:
    """``a`` as an int64 array of the given dimensionalities, exact (|a| <= 2**53)."""
    return as_exact_integers(a, name, ndim=ndim)


def as_position_ids(positions, name: str = "positions") -> np.ndarray:
    """Positions ``(S,)`` or ``(B, S)`` as float64: integers of any dtype or finite reals,
    exact (within ``+-2**53``); a boolean scalar is refused (a flag is not a position)."""
    try:
        ndim = np.ndim(positions)
    except (ValueError, TypeError):  # ragged: as_positions names the argument in its error
        ndim = 1
    if ndim == 2:
        arr = _array(positions, name)
        return as_positions(arr.reshape(-1), name).reshape(arr.shape)
    if ndim > 2:
        raise ValueError(f"{name} must be (seq,) or (batch, seq), got shape {np.shape(positions)}")
    return as_positions(positions, name)


def _check_cp(cp_rank, cp_size):
    if (cp_rank is None) != (cp_size is None):
        raise TypeError("cp_rank and cp_size must be given together (or neither)")
    if cp_size is None:
        return None
    size = check_positive_int(cp_size, "cp_size")
    rank = check_count(cp_rank, "cp_rank")
    if rank >= size:
        raise ValueError(f"cp_rank must be in 0..cp_size-1 = 0..{size - 1}, got {rank}")
    return rank, size


def context_parallel_indices(seq_len: int, cp_rank: int, cp_size: int) -> np.ndarray:
    r"""Indices into a sequence of the tokens that context-parallel rank ``cp_rank`` holds.

    Parameters
    ----------
    seq_len : int
        Full sequence length :math:`S`, a multiple of ``2 * cp_size``.
    cp_rank, cp_size : int
        Rank :math:`r` and number of ranks :math:`cp` (``0 <= cp_rank < cp_size``).

    Returns
    -------
    numpy.ndarray of int64, shape (seq_len // cp_size,)
        :math:`[r c, (r+1) c) \cup [(2cp-1-r) c, (2cp-r) c)` with :math:`c = S / (2 cp)`.

    Notes
    -----
    Book equation ``eq:rope-cp-shard`` (TransformerEngine's load-balanced split: every rank
    gets one early and one late chunk, so causal attention costs the same on each).

    Examples
    --------
    >>> context_parallel_indices(8, 0, 2)
    array([0, 1, 6, 7])
    >>> context_parallel_indices(8, 1, 2)
    array([2, 3, 4, 5])
    """
    rank, size = _check_cp(cp_rank, cp_size)
    n = check_count(seq_len, "seq_len", maximum=MAX_POSITION)
    if n % (2 * size):
        raise ValueError(f"seq_len must be a multiple of 2 * cp_size = {2 * size}, got {n}")
    c = n // (2 * size)
    first = np.arange(rank * c, (rank + 1) * c)  # [eq:rope-cp-shard]
    second = np.arange((2 * size - 1 - rank) * c, (2 * size - rank) * c)
    return np.concatenate([first, second]).astype(np.int64)


def _check_cu_seqlens(cu_seqlens, total):
    cu = _integers(cu_seqlens, "cu_seqlens", ndim=(1,))
    if cu.shape[0] < 2 or cu[0] != 0:
        raise ValueError("cu_seqlens must be (B+1,) cumulative lengths starting at 0")
    if np.any(np.diff(cu) < 0):
        raise ValueError("cu_seqlens must be non-decreasing (document lengths are >= 0)")
    if total is not None and cu[-1] != total:
        raise ValueError(f"cu_seqlens must end at the number of tokens T = {total}, got {cu[-1]}")
    if cu[-1] > MAX_POSITION:
        raise ValueError(
            f"cu_seqlens must end at most at MAX_POSITION = {MAX_POSITION} tokens (the package's "
            f"limit on a packed batch), got {cu[-1]}"
        )
    return cu


def _check_offsets(offsets, batch):
    """Offsets as an int64 array of ``batch`` entries (a scalar applies to every sequence)."""
    if offsets is None:
        return np.zeros(batch, dtype=np.int64)
    off = _integers(offsets, "offsets", ndim=(0, 1))
    if off.ndim == 0:
        return np.full(batch, int(off), dtype=np.int64)
    if off.shape[0] != batch:
        raise ValueError(f"offsets must have one entry per sequence ({batch}), got {off.shape[0]}")
    return off


def varlen_positions(cu_seqlens, offsets=None, *, cp_rank=None, cp_size=None) -> np.ndarray:
    r"""Positions of the tokens of a packed batch: restart at each document, plus its offset.

    Parameters
    ----------
    cu_seqlens : array_like of int, shape (B+1,)
        Cumulative document lengths (``cu_seqlens[0] == 0``, non-decreasing).
    offsets : int or array_like of int, shape (B,), optional
        Position of each document's first token (e.g. its length in a KV cache).
    cp_rank, cp_size : int, optional
        Return only the tokens context-parallel rank ``cp_rank`` holds of every document (each
        document's length a multiple of ``2 * cp_size``), in the rank's packed order.

    Returns
    -------
    numpy.ndarray of int64, shape (T,) (``T // cp_size`` with context parallelism)
        :math:`p_t = t - cu_b + o_b` for the tokens :math:`t` of document :math:`b`.

    Notes
    -----
    Book equation ``eq:rope-varlen-positions``.

    Examples
    --------
    >>> varlen_positions([0, 3, 5], offsets=[10, 0])
    array([10, 11, 12,  0,  1])
    >>> varlen_positions([0, 4, 8], cp_rank=1, cp_size=2)
    array([1, 2, 1, 2])
    """
    cu = _check_cu_seqlens(cu_seqlens, None)
    off = _check_offsets(offsets, cu.shape[0] - 1)
    cp = _check_cp(cp_rank, cp_size)
    lengths = np.diff(cu)
    if cp is not None and np.any(lengths % (2 * cp[1])):
        raise ValueError(
            f"cu_seqlens: every document's length must be a multiple of 2 * cp_size = "
            f"{2 * cp[1]} for context parallelism, got lengths {lengths.tolist()}"
        )
    parts = []
    for length, o in zip(lengths.tolist(), off.tolist(), strict=True):
        local = np.arange(length, dtype=np.int64)
        if cp is not None:
            local = local[context_parallel_indices(length, *cp)]
        parts.append(local + o)  # [eq:rope-varlen-positions]
    res = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if res.size and np.abs(res).max() > EXACT_INTEGER:
        raise ValueError("offsets: positions (offset + index) must lie within +-2**53")
    return res


def _check_sum_exact(p: np.ndarray, off: np.ndarray) -> None:
    """Refuse positions plus offsets that could leave +-2**53, where float64 sums of integers
    stop being exact (the bound is taken on the extremes before anything is added)."""
    if p.size and off.size:
        low = math.floor(p.min()) + int(off.min())  # Python integers: exact
        high = math.ceil(p.max()) + int(off.max())
        check_exact_range(low, high, "offsets: positions (position + offset)")


_EMULATIONS = (None, "transformers")


def packing_from_position_ids(position_ids, *, emulate: str | None = None) -> np.ndarray:
    r"""Document boundaries of a packed batch, derived from its position ids.

    Parameters
    ----------
    position_ids : array_like of int, shape (B, S) or (3, B, S)
        Position ids of the tokens, row ``b`` holding batch row ``b``; ``(3, B, S)`` are
        M-RoPE ids (temporal, height, width), whose temporal row decides the documents.
    emulate : {None, "transformers"}, optional
        ``None``: the correct boundaries. ``"transformers"``: what transformers' FlashAttention
        path derives (``prepare_fa_kwargs_from_position_ids`` in
        ``modeling_flash_attention_utils.py``): every id flattened with ``reshape(-1)`` and a
        document started wherever the id equals the smallest id -- for M-RoPE ids that reads
        the three rows as one batch three times as long.

    Returns
    -------
    numpy.ndarray of int64, shape (n_docs + 1,)
        ``cu_seqlens`` over the ``B * S`` tokens in row-major order (``3 B S`` for
        ``emulate="transformers"`` on M-RoPE ids, as transformers builds it).

    Notes
    -----
    A document starts at the first token of every batch row and wherever the ids do not
    continue the previous token's: for ``(B, S)`` ids where :math:`p_t \ne p_{t-1} + 1`;
    for M-RoPE where the temporal id falls (:math:`t_i < t_{i-1}`) or a token at
    :math:`(0, 0, 0)` follows one that is not (image patches share a temporal id, so a
    repeated one is no boundary). Compare the result with an engine's ``cu_seqlens`` to find
    documents that attend to each other.

    Examples
    --------
    >>> packing_from_position_ids([[0, 1, 2, 0, 1]])
    array([0, 3, 5])
    >>> ids = np.array([[[0, 1, 1, 1, 0, 1]], [[0, 1, 1, 2, 0, 1]], [[0, 1, 2, 1, 0, 1]]])
    >>> packing_from_position_ids(ids)
    array([0, 4, 6])
    >>> packing_from_position_ids(ids, emulate="transformers")
    array([ 0,  4,  6, 10, 12, 16, 18])
    """
    if emulate not in _EMULATIONS:
        raise ValueError(f"emulate must be one of {_EMULATIONS}, got {emulate!r}")
    ids = _integers(position_ids, "position_ids", ndim=(2, 3))
    if ids.ndim == 3 and ids.shape[0] != 3:
        raise ValueError(
            f"position_ids of 3 dimensions must be M-RoPE ids (3, B, S), got shape {ids.shape}"
        )
    if ids.size == 0:
        raise ValueError(f"position_ids must hold at least one token, got shape {ids.shape}")
    if emulate == "transformers":
        flat = ids.reshape(-1)
        starts = np.flatnonzero(flat == flat.min())
        return np.concatenate([starts, [flat.size]]).astype(np.int64)
    rows = ids[0] if ids.ndim == 3 else ids  # (B, S): the temporal row decides for M-RoPE
    start = np.zeros(rows.shape, dtype=bool)
    start[:, 0] = True
    if ids.ndim == 2:
        start[:, 1:] = rows[:, 1:] != rows[:, :-1] + 1
    else:
        origin = np.all(ids == 0, axis=0)  # (B, S): a token at (0, 0, 0)
        start[:, 1:] = (rows[:, 1:] < rows[:, :-1]) | (origin[:, 1:] & ~origin[:, :-1])
    starts = np.flatnonzero(start.reshape(-1))
    return np.concatenate([starts, [rows.size]]).astype(np.int64)


def plan(xa, out, positions, *, offsets, cu_seqlens, cp_rank, cp_size, rows_by_default):
    """Split a call into jobs ``(x_view, out_view, positions (S,) float64 or None)``, each a
    ``(..., S, D)`` view with one position per row of its second-last axis.

    ``None`` (only with ``rows_by_default``, for tables indexed by the token's row) stands for
    ``0 .. S-1``. Raises naming the argument on every inconsistent combination."""
    cp = _check_cp(cp_rank, cp_size)
    width = 1 if cp is None else cp[1]
    if cu_seqlens is not None:
        if positions is not None:
            raise TypeError(
                "positions must be None with cu_seqlens (packed positions follow from "
                "cu_seqlens and offsets)"
            )
        if xa.ndim < 2:
            raise ValueError(f"x must be (T, ..., D) with cu_seqlens, got shape {xa.shape}")
        _check_cu_seqlens(cu_seqlens, xa.shape[0] * width)
        pos = varlen_positions(cu_seqlens, offsets, cp_rank=cp_rank, cp_size=cp_size)
        return [(np.moveaxis(xa, 0, -2), np.moveaxis(out, 0, -2), pos.astype(np.float64))]
    seq = xa.shape[-2] * width
    if positions is None:
        if not rows_by_default:
            raise TypeError("positions are required (or cu_seqlens for a packed batch)")
        if offsets is None and cp is None:
            return [(xa, out, None)]
        p = np.arange(seq, dtype=np.float64)
    else:
        p = as_position_ids(positions)
    if p.shape[-1] != seq:
        raise ValueError(
            f"positions has {p.shape[-1]} entries but x has seq = {xa.shape[-2]}"
            + ("" if cp is None else f" on each of cp_size = {width} ranks")
            + " (x must be (..., seq, dim) and positions (seq,) or (batch, seq))"
        )
    if offsets is not None:
        off = np.asarray(offsets)
        if off.ndim == 1 and p.ndim == 1 and xa.ndim < 3:
            raise ValueError(
                f"offsets (batch,) need x of shape (batch, ..., seq, dim), got {xa.shape}"
            )
        batch = p.shape[0] if p.ndim == 2 else (xa.shape[0] if off.ndim == 1 else 1)
        off = _check_offsets(offsets, batch)
        _check_sum_exact(p, off)
        p = (p if p.ndim == 2 else p[None]) + off[:, None].astype(np.float64)
        if p.shape[0] == 1 and np.asarray(offsets).ndim == 0:
            p = p[0]
    if cp is not None:
        p = p[..., context_parallel_indices(seq, *cp)]
    if p.ndim == 1:
        return [(xa, out, p)]
    if xa.ndim < 3 or xa.shape[0] != p.shape[0]:
        raise ValueError(
            f"positions (batch, seq) or offsets (batch,) with batch = {p.shape[0]} need x of "
            f"shape (batch, ..., seq, dim), got {xa.shape}"
        )
    return [(xa[b], out[b], p[b]) for b in range(p.shape[0])]
