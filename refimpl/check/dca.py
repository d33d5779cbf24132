"""Dual Chunk Attention: an implementation's attention logits judged against
:func:`refimpl.remap.dual_chunk_attention_scores`, and a wrong chunk size, local window,
chunk relation or length scaling named from the relative positions the logits reveal."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .._checks import check_dim, check_int, check_pairing, check_positive
from ..remap import (
    DCA_INTER,
    DCA_INTRA,
    DCA_MASKED,
    DCA_SUCCESSIVE,
    _dca_record,
    dual_chunk_attention_scores,
    dual_chunk_relative_positions,
)
from ..rotary import _resolve_inv_freq, pair_indices
from ._base import _error, _note

# Logits agree when within this fraction of the largest logit (float32 attention leaves
# ~1e-6; a relative position off by one moves a logit by theta_0 ~ 1 of its size).
_DCA_TOL = 1e-4
# A measured relative position is an integer when within this of one (a float32 pipeline
# reads the slowest pair's angle to ~1e-7 rad, i.e. 1e-3 positions at theta = 1e-4; a wrong
# base moves it by whole positions times the frequency ratio).
_REL_INT_TOL = 0.05
# Two length factors are the same within this relative amount (float32 logits carry 1e-6).
_FACTOR_TOL = 1e-3
# The probe holds a few (n, n) matrices: n above this would take more than ~100 MB.
_MAX_DCA_PROBE = 2048
# Chunks the default probe spans: intra, successive, inter, and a full chunk of queries on
# both sides of the local window.
_PROBE_CHUNKS = 4

_RELATION_WORDS = {
    DCA_INTRA: "the query's own chunk (intra)",
    DCA_SUCCESSIVE: "the chunk just before the query's (successive)",
    DCA_INTER: "earlier chunks (inter)",
}
_TABLE_WORDS = ("intra", "successive", "inter")


@dataclasses.dataclass
class DualChunkReport:
    """The verdict of :func:`check_dual_chunk_attention`.

    Attributes
    ----------
    ok : bool
        The logits match the reference within the tolerance.
    findings : list of Finding
        The cause when they do not: the chunk size or local window the logits follow, the
        chunk relation scored with the wrong query table, ordinary RoPE, the length scaling.
    chunk_size, local_size : int or None
        The settings the logits follow (the declared ones when they pass; fitted from the
        measured relative positions otherwise; None when no setting explains them).
    length_factor : float
        The measured factor on the logits (the reference has :math:`s^2`, 1 without
        ``original_max_position``).
    relative : numpy.ndarray, shape (n, n)
        The relative position (key minus query) each logit was rotated by, read from the
        slowest pair; NaN where the reference masks the entry.
    max_error : float
        Largest logit error relative to the largest reference logit.
    """

    ok: bool
    findings: list
    chunk_size: int | None
    local_size: int | None
    length_factor: float
    relative: np.ndarray
    max_error: float

    def __str__(self) -> str:
        head = f"dual chunk attention check: {'PASS' if self.ok else 'FAIL'}"
        lines = [
            head,
            f"  chunk_size {self.chunk_size}, local_size {self.local_size}, "
            f"length factor {self.length_factor:.6g}, max error {self.max_error:.3g}",
        ]
        return "\n".join(lines + [f"  - [{f.severity}] {f}" for f in self.findings])


def check_dual_chunk_attention(
    fn_scores: Callable,
    dca,
    *,
    dim: int = 64,
    base: float = 10000.0,
    pairing: str = "half",
    seq_len: int | None = None,
    softmax_scale: float = 1.0,
    tolerance: float = _DCA_TOL,
) -> DualChunkReport:
    r"""Check the attention logits of a Dual Chunk Attention implementation.

    Parameters
    ----------
    fn_scores : callable
        ``fn_scores(q, k, positions) -> logits``: ``q`` and ``k`` ``(n, dim)`` before RoPE,
        ``positions`` ``(n,)`` int64 (``0 .. n-1``), ``logits`` ``(n, n)`` as the
        implementation feeds them to the softmax (entries after the query are ignored).
    dca : DualChunkAttention or mapping
        The settings the implementation is meant to follow.
    dim : int, default 64
    base : float, default 10000.0
    pairing : {"half", "interleaved"}, default "half"
        The RoPE the implementation applies.
    seq_len : int, optional
        Tokens probed (default: four chunks, ``4 (chunk_size - local_size)``, so that every
        chunk relation and both sides of the local window appear), at most 2048: check the
        code with a scaled-down record (Qwen2.5-1M's chunk of 253952 positions needs a
        million tokens).
    softmax_scale : float, default 1.0
        The scale the implementation's logits include (``1/sqrt(dim)`` if it returns them
        scaled).
    tolerance : float, default 1e-4
        Allowed logit error relative to the largest logit.

    Returns
    -------
    DualChunkReport

    Notes
    -----
    The reference is :func:`refimpl.remap.dual_chunk_attention_scores` on random ``q`` and
    ``k``. When it differs, two more calls read the relative position of every logit: with
    every query and key a unit vector on the slowest pair (frequency :math:`\theta`),
    ``k`` on its first feature gives :math:`\sigma^2\cos(\mathrm{rel}\,\theta)` and on its
    second :math:`-\sigma^2\sin(\mathrm{rel}\,\theta)`, so ``atan2`` gives
    :math:`\mathrm{rel}` (unique while :math:`n\theta < \pi`) and the norm the length factor.
    The relative positions are then matched against :func:`dual_chunk_relative_positions`
    for every chunk length and chunk size, against ordinary RoPE, against vLLM's "critical"
    query tables (which choose sparse-attention indices, not the scores), and entry by entry
    against the three query tables of the declared settings.

    Examples
    --------
    >>> import numpy as np, refimpl
    >>> dca = refimpl.DualChunkAttention(chunk_size=12, local_size=4)
    >>> ok = lambda q, k, p: refimpl.dual_chunk_attention_scores(q, k, p, dca).scores
    >>> check_dual_chunk_attention(ok, dca, dim=16).ok
    True
    >>> wrong = refimpl.DualChunkAttention(chunk_size=12, local_size=2)
    >>> bad = lambda q, k, p: refimpl.dual_chunk_attention_scores(q, k, p, wrong).scores
    >>> rep = check_dual_chunk_attention(bad, dca, dim=16)
    >>> rep.ok, rep.chunk_size, rep.local_size
    (False, 12, 2)
    """
    if not callable(fn_scores):
        raise TypeError("fn_scores must be callable as fn_scores(q, k, positions)")
    rec = _dca_record(dca)
    d = check_dim(dim)
    check_pairing(pairing)
    scale = check_positive(softmax_scale, "softmax_scale")
    tol = check_positive(tolerance, "tolerance")
    n = _probe_length(rec, seq_len)
    theta = _resolve_inv_freq(None, d, base)
    if n * theta[-1] >= np.pi:
        raise ValueError(
            f"seq_len={n} is too long to read relative positions from the slowest pair of "
            f"dim={d}, base={base:g} (n theta < pi needed): use a larger base or dim, or "
            "fewer tokens"
        )
    pos = np.arange(n)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, n, d))
    ref = dual_chunk_attention_scores(q, k, pos, rec, base=base, pairing=pairing)
    seen = ref.relation != DCA_MASKED
    got = _call(fn_scores, q, k, pos, n) / scale
    big = float(np.max(np.abs(ref.scores[seen])))
    finite = np.isfinite(got) | ~seen
    compared = seen & finite
    err = float(np.max(np.abs(got[compared] - ref.scores[compared]), initial=0.0)) / big
    rel, mag = _read_relative(fn_scores, n, d, theta, pairing, pos, scale)
    rel = np.where(seen, rel, np.nan)
    factor = float(np.median(mag[seen]))
    findings = _mask_findings(finite, ref.relation)
    if not findings and err <= tol:
        note = (
            f"the logits match Dual Chunk Attention (chunk_size {rec.chunk_size}, local_size "
            f"{rec.local_size}) within {tol:g} of the largest logit."
        )
        return DualChunkReport(
            True, [_note(note)], rec.chunk_size, rec.local_size, factor, rel, err
        )
    size, local, words = _diagnose(rel, mag, seen & finite, ref, rec, factor, n)
    findings += [_error(w) for w in words]
    if not findings:
        findings.append(
            _error(
                f"the logits differ from the reference by {err:.3g} of the largest logit with "
                "the right relative positions and length factor: check the frequencies "
                "(base, pairing) and the rotation of q and k."
            )
        )
    return DualChunkReport(False, findings, size, local, factor, rel, err)


def _probe_length(rec, seq_len) -> int:
    if seq_len is not None:
        n = check_int(seq_len, "seq_len", minimum=2, maximum=_MAX_DCA_PROBE)
        return n
    n = _PROBE_CHUNKS * rec.chunk_len
    if n > _MAX_DCA_PROBE:
        raise ValueError(
            f"chunk_size - local_size = {rec.chunk_len} needs {n} tokens to show every chunk "
            f"relation, more than {_MAX_DCA_PROBE}: check the code with a scaled-down "
            "DualChunkAttention(chunk_size=..., local_size=...) or pass seq_len="
        )
    return n


def _call(fn_scores, q, k, pos, n) -> np.ndarray:
    out = fn_scores(q.copy(), k.copy(), pos.copy())
    if hasattr(out, "detach"):
        out = out.detach().cpu().double().numpy()
    out = np.asarray(out, dtype=np.float64)
    if out.shape != (n, n):
        raise ValueError(f"fn_scores must return ({n}, {n}) logits, got {out.shape}")
    return out


def _read_relative(fn_scores, n, d, theta, pairing, pos, scale):
    """Relative positions and magnitudes from two calls on the slowest pair."""
    i1, i2 = pair_indices(d, pairing)
    a, b = int(i1[-1]), int(i2[-1])
    q = np.zeros((n, d))
    q[:, a] = 1.0
    k_cos, k_sin = np.zeros((n, d)), np.zeros((n, d))
    k_cos[:, a], k_sin[:, b] = 1.0, 1.0
    c = _call(fn_scores, q, k_cos, pos, n) / scale  # sigma^2 cos(rel theta)
    s = -_call(fn_scores, q, k_sin, pos, n) / scale  # sigma^2 sin(rel theta)
    with np.errstate(invalid="ignore"):
        return np.arctan2(s, c) / theta[-1], np.hypot(c, s)


def _mask_findings(finite, relation) -> list:
    out = []
    for code, words in _RELATION_WORDS.items():
        bad = int(np.sum(~finite & (relation == code)))
        if bad:
            out.append(
                _error(
                    f"{bad} logits of keys in {words} are masked (not finite): Dual Chunk "
                    "Attention attends to every earlier key, the chunk relation only chooses "
                    "the query table."
                )
            )
    return out


def _diagnose(rel, mag, ok_entries, ref, rec, factor, n):
    """``(chunk_size, local_size, findings)`` explaining measured relative positions."""
    words = []
    expected = ref.length_factor
    if abs(factor / expected - 1.0) > _FACTOR_TOL:
        words.append(_factor_words(factor, expected))
    r = rel[ok_entries]
    if np.any(np.abs(r - np.round(r)) > _REL_INT_TOL):
        words.append(
            "the logits are not RoPE at integer relative positions with the declared base and "
            "pairing (the slowest pair's angle is not a whole number of steps): check the "
            "frequencies before the chunk settings."
        )
        return None, None, words
    rel = np.round(rel)
    if np.array_equal(rel[ok_entries], ref.relative[ok_entries]):
        return rec.chunk_size, rec.local_size, words
    qpos = np.arange(n)
    true = (qpos[None, :] - qpos[:, None]).astype(float)
    if np.array_equal(rel[ok_entries], true[ok_entries]):
        words.append(
            "the logits use ordinary RoPE's relative positions (key - query): no dual chunk "
            f"remapping (expected chunks of {rec.chunk_len} positions, local_size "
            f"{rec.local_size})."
        )
        return None, None, words
    fit = _fit_settings(rel, ok_entries, rec, n)
    if fit is not None:
        words.append(_settings_words(fit, rec))
        return fit[0], fit[1], words
    critical = _critical_relative(rec, n)
    if np.array_equal(rel[ok_entries], critical[ok_entries]):
        words.append(
            "the successive and inter queries use vLLM's critical tables (successive at "
            "p mod c + c without the clamp at chunk_size, inter at p mod c + chunk_size), which "
            "choose sparse-attention indices; the logits use qc (clamped) and qc[c - 1]."
        )
        return None, None, words
    words += _relation_words(rel, ok_entries, ref)
    return None, None, words


def _factor_words(factor: float, expected: float) -> str:
    if abs(factor - 1.0) <= _FACTOR_TOL * expected:
        return (
            f"the length scaling is missing: the logits carry no factor, expected s**2 = "
            f"{expected:.6g} (vLLM multiplies the keys and the softmax scale by "
            f"s = 0.1 ln(L / original_max_position_embeddings) + 1)."
        )
    if abs(factor / np.sqrt(expected) - 1.0) <= _FACTOR_TOL:
        return (
            f"the length scaling is applied once (s = {factor:.6g}) where the logits need "
            f"s**2 = {expected:.6g}: vLLM scales the keys and the softmax scale (or the "
            "queries when decoding) by s."
        )
    return f"the logits carry a factor {factor:.6g}, expected {expected:.6g}."


def _fit_settings(rel, ok_entries, rec, n):
    """``(chunk_size, local_size)`` whose relative positions equal ``rel``, preferring the
    declared chunk size, then the declared local size; None when none does."""
    target = rel[ok_entries]
    found = []
    for c in range(1, n + 1):
        sizes = set(range(c, 2 * c)) | ({rec.chunk_size} if rec.chunk_size >= c else set())
        for size in sorted(sizes):
            cand = dual_chunk_relative_positions(n, chunk_size=size, local_size=size - c)
            if np.array_equal(cand[ok_entries], target):
                found.append((size, size - c))
    if not found:
        return None
    # a size of 2c - 1 or more clamps nothing: the declared one is as good as any of them
    for pick in (
        [f for f in found if f[0] == rec.chunk_size],
        [f for f in found if f[1] == rec.local_size],
        found,
    ):
        if pick:
            return pick[0]
    return None


def _settings_words(fit, rec) -> str:
    size, local = fit
    c = size - local
    if size == rec.chunk_size:
        return (
            f"the local window is local_size = {local}, not the declared {rec.local_size}: the "
            f"logits follow chunks of {c} positions (chunk_size - local_size) instead of "
            f"{rec.chunk_len}."
        )
    if local == rec.local_size:
        return (
            f"the chunk size is {size}, not the declared chunk_size = {rec.chunk_size} (local_size "
            f"{local} as declared): the logits follow chunks of {c} positions instead of "
            f"{rec.chunk_len}."
        )
    return (
        f"the logits follow chunk_size = {size}, local_size = {local} (chunks of {c} positions), "
        f"not the declared {rec.chunk_size} and {rec.local_size}."
    )


def _critical_relative(rec, n) -> np.ndarray:
    """Relative positions with vLLM's critical query tables in place of qc and qc[c - 1]."""
    c, size = rec.chunk_len, rec.chunk_size
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    gap = i // c - j // c
    query = np.where(gap == 0, i % c, np.where(gap == 1, i % c + c, i % c + size))
    return np.where(j > i, j - i, j % c - query).astype(float)


def _relation_words(rel, ok_entries, ref) -> list[str]:
    """Per chunk relation: how many logits use another relation's query table (or the true
    distance)."""
    n = rel.shape[0]
    true = (np.arange(n)[None, :] - np.arange(n)[:, None]).astype(float)
    out = []
    for code in (DCA_INTRA, DCA_SUCCESSIVE, DCA_INTER):
        sel = ok_entries & (ref.relation == code)
        wrong = sel & (rel != ref.relative)
        if not np.any(wrong):
            continue
        used = []
        for t, name in enumerate(_TABLE_WORDS):
            cand = ref.key_positions[None, :] - ref.query_positions[t][:, None]
            hits = int(np.sum(wrong & (rel == cand)))
            if hits:
                used.append(f"{hits} with the {name} query")
        hits = int(np.sum(wrong & (rel == true)))
        if hits:
            used.append(f"{hits} at the true distance")
        detail = ", ".join(used) if used else "none of the three query tables"
        out.append(
            f"{int(wrong.sum())} of {int(sel.sum())} logits of keys in {_RELATION_WORDS[code]} "
            f"use another relative position ({detail}): the chunk relation chooses the wrong "
            "query table."
        )
    return out
