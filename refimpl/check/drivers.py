"""Drivers around the stages: operators that take cos/sin (or angles) as inputs, APIs that take
a start offset instead of per-token positions, and scripted sequences of calls whose
frequencies depend on the call (dynamic NTK, LongRoPE's switch, caches keyed on earlier
calls)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from .._checks import MAX_POSITION, as_positions, check_dim, check_int, check_pairing
from ._base import DEFAULT_TOLERANCE, MAX_CHECK_DIM, _error, _note
from .report import RopeReport

# Largest cache (rows x pairs) built for an operator that gathers rows by position id: 2**24
# float64 entries are 128 MiB per table; the default probe (32769 rows x 128 pairs at d = 256)
# needs 2**22.
_MAX_CACHE_ELEMENTS = 2**24

#: Tables an operator can take: half-width cos/sin ``(seq, r/2)``, full-width cos/sin as
#: transformers builds them (``cat(c, c)``, for half-split pairs) or repeated per pair (for
#: interleaved pairs), or the angles themselves (Transformer Engine's ``freqs``).
OPERATOR_TABLES = ("half", "full", "repeated", "angles")


def _tables(theta: np.ndarray, positions: np.ndarray, tables: str, scale: float):
    """The tables of ``positions`` (one row per position) in the layout ``tables``."""
    ang = np.multiply.outer(np.asarray(positions, dtype=np.float64), theta)  # (seq, r/2)
    if tables == "angles":
        return (ang,)
    c, s = scale * np.cos(ang), scale * np.sin(ang)
    if tables == "full":
        c, s = np.concatenate([c, c], axis=-1), np.concatenate([s, s], axis=-1)
    elif tables == "repeated":
        c, s = np.repeat(c, 2, axis=-1), np.repeat(s, 2, axis=-1)
    return c, s


def check_rope_operator(
    op: Callable,
    *,
    dim: int,
    base: float = 10000.0,
    inv_freq=None,
    tables: str = "half",
    pairing: str | None = None,
    rotary_dim: int | None = None,
    attention_scaling: float = 1.0,
    positions: Sequence[float] | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    output_order: str | None = None,
    backend: str = "auto",
    position_ids: bool = False,
) -> RopeReport:
    r"""Check an operator that applies given cos/sin tables (or angles): ``op(x, cos, sin)``.

    The operator is handed the reference tables of the probed positions, one row per row of
    ``x`` (or, with ``position_ids=True``, a cache of rows ``0 .. max(positions)`` and the
    position of every row), so what it can get wrong is how it applies them: pairing, sign,
    output order, the rotated width, the table layout it reads, the cache row it gathers, its
    arithmetic. It is then checked as :func:`check_rope` checks a function, against the
    frequencies it was given.

    Parameters
    ----------
    op : callable
        ``op(x, cos, sin)`` (or ``op(x, angles)`` for ``tables="angles"``) returning the
        rotated ``x``; ``x`` is ``(seq, dim)`` float64, the tables ``(seq, width)``.
    dim : int
        Feature width of ``x``.
    base : float, default 10000.0
        Base of the frequencies the tables are built from (:math:`\theta_i = b^{-2i/r}`).
    inv_freq : array_like, shape (r/2,), optional
        The frequencies instead (scaled ones, for example).
    tables : {"half", "full", "repeated", "angles"}, default "half"
        Layout the operator takes (:data:`OPERATOR_TABLES`): ``(seq, r/2)`` cos/sin
        (flash-attention's ``apply_rotary_emb``, ONNX ``RotaryEmbedding``), ``(seq, r)`` as
        ``cat(c, c)`` (transformers), ``(seq, r)`` repeated per pair, or angles ``(seq, r/2)``.
    pairing : {"half", "interleaved"}, optional
        Expected pairing (the tables do not fix it: the operator chooses).
    rotary_dim : int, optional
        Width of the tables (default ``dim``): a partial-rotary operator rotates the first
        ``rotary_dim`` features and passes the rest through.
    attention_scaling : float, default 1.0
        Multiplied into cos/sin; the operator must apply the tables as given.
    positions, tolerance, output_order, backend
        As for :func:`check_rope`.
    position_ids : bool, default False
        The operator gathers its rows itself: it is called ``op(x, cos_cache, sin_cache,
        position_ids)`` (``op(x, angle_cache, position_ids)`` for ``tables="angles"``) with
        caches of ``max(positions) + 1`` rows in the layout ``tables`` and ``position_ids``
        ``(seq,)`` int64, as ONNX ``RotaryEmbedding`` with ``position_ids``, vLLM's
        ``cos_sin_cache`` and FlashInfer's ``apply_rope_with_cos_sin_cache`` take them.

    Returns
    -------
    RopeReport
        The report of :func:`check_rope` on ``fn(x, p) = op(x, cos[p], sin[p])`` (or
        ``op(x, cos, sin, p)``) against the frequencies and factor the tables hold.

    Examples
    --------
    >>> import numpy as np, refimpl
    >>> def op(x, cos, sin):  # rotate_half with half-width tables
    ...     h = x.shape[-1] // 2
    ...     x1, x2 = x[:, :h], x[:, h:]
    ...     return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=1)
    >>> check_rope_operator(op, dim=8).ok
    True
    """
    from .api import check_rope

    d = check_dim(dim, maximum=MAX_CHECK_DIM)
    r = d if rotary_dim is None else check_dim(rotary_dim, "rotary_dim")
    if r > d:
        raise ValueError(f"rotary_dim={r} exceeds dim={d}")
    if tables not in OPERATOR_TABLES:
        raise ValueError(f"tables must be one of {OPERATOR_TABLES}, got {tables!r}")
    if not callable(op):
        raise TypeError(f"op must be callable as op(x, cos, sin), got {type(op).__name__}")
    if pairing is not None:
        check_pairing(pairing)
    from ..rotary import _resolve_inv_freq

    theta = _resolve_inv_freq(inv_freq, r if inv_freq is None else None, base)
    if 2 * len(theta) != r:
        raise ValueError(f"inv_freq must have rotary_dim/2 = {r // 2} entries, got {len(theta)}")
    from .._checks import check_positive

    scale = check_positive(attention_scaling, "attention_scaling")

    if not isinstance(position_ids, bool):
        raise TypeError(f"position_ids must be True or False, got {position_ids!r}")
    if position_ids and positions is not None:
        _check_cache_positions(positions, r)

    def fn(x, p):
        p = np.asarray(p)
        if not position_ids:
            return op(x, *_tables(theta, p, tables, scale))
        cache = _tables(theta, np.arange(int(np.max(p)) + 1), tables, scale)
        return op(x, *cache, p.astype(np.int64))

    spec = _OperatorSpec(d, r, theta, pairing, scale)
    return check_rope(
        fn, dim=d, expected=spec, pairing=pairing, positions=positions, tolerance=tolerance,
        output_order=output_order, backend=backend,
    )  # fmt: skip


def _check_cache_positions(positions, r: int) -> None:
    """Positions that index a cache: non-negative integers, the cache within its bound."""
    pos = as_positions(positions, maximum=MAX_POSITION)
    if np.any(pos < 0) or np.any(pos != np.round(pos)):
        raise ValueError(
            "positions must be non-negative integers with position_ids=True (they index the "
            "cache's rows)"
        )
    rows = int(np.max(pos)) + 1 if pos.size else 0
    if rows * (r // 2) > _MAX_CACHE_ELEMENTS:
        raise ValueError(
            f"positions up to {rows - 1} need a cache of {rows} x {r // 2} entries, more than "
            f"{_MAX_CACHE_ELEMENTS}: probe smaller positions"
        )


@dataclasses.dataclass(frozen=True)
class _OperatorSpec:
    """The expectation an operator is judged against: the frequencies of its tables."""

    dim: int
    rotary_dim: int
    inv_freq: np.ndarray
    pairing: str | None
    attention_scaling: float


def from_start_offset(fn_offset: Callable) -> Callable:
    r"""Adapt an API that rotates a contiguous range from a start offset to ``fn(x, positions)``.

    Parameters
    ----------
    fn_offset : callable
        ``fn_offset(x, offset)`` rotating the rows of ``x`` (``(seq, dim)``) at positions
        ``offset, offset + 1, ...`` (MLX's ``mx.fast.rope(..., offset=)``, vLLM's or
        flash-attention's ``seqlen_offsets``, a KV-cache decode step).

    Returns
    -------
    callable
        ``fn(x, positions)``: each row is rotated by one call of ``fn_offset`` on that row
        alone (a range of length 1) at its position, so any per-token positions can be
        probed.

    Examples
    --------
    >>> import numpy as np, refimpl
    >>> ranged = lambda x, o: refimpl.apply_rope(x, np.arange(len(x)) + o)
    >>> fn = from_start_offset(ranged)
    >>> x = np.eye(4)[:2]
    >>> bool(np.allclose(fn(x, [7, 3]), refimpl.apply_rope(x, [7, 3])))
    True
    """
    if not callable(fn_offset):
        raise TypeError("fn_offset must be callable as fn_offset(x, offset)")

    def fn(x, positions):
        x = np.asarray(x)
        pos = np.asarray(positions)
        rows = [np.asarray(fn_offset(x[i : i + 1], int(pos[i])), dtype=np.float64) for i in
                range(len(pos))]  # fmt: skip
        return np.concatenate(rows, axis=0) if rows else np.zeros_like(x, dtype=np.float64)

    return fn


# --------------------------------------------------------------------------------------------
# scripted calls: length-dependent and stateful implementations

#: Length policies a scripted sequence of calls can be judged by (``policy=``):
#:
#: - ``"transformers"``: the frequencies of each call's own length, dynamic NTK growing with the
#:   longest call since it last fell below the original context (transformers' rotary module,
#:   ``_dynamic_frequency_update``; LongRoPE's long factors beyond the original context);
#: - ``"per_call"``: each call's own length, no state;
#: - ``"vllm"``: one fixed length for every call, ``max_model_len`` (vLLM builds its cos/sin
#:   cache once, for the served length: dynamic NTK at that length, LongRoPE's long factors
#:   whenever it exceeds the original context);
#: - ``"table_length"``: the length of a cos/sin table that starts at ``table_length`` rows and
#:   grows to the longest call when a call exceeds it, never shrinking (a cache extended on
#:   demand, as transformers' rotary modules did before 4.38; llama.cpp's allocated context,
#:   which no call exceeds).
POLICIES = ("transformers", "per_call", "vllm", "table_length")

# The keyword that gives each fixed-length policy its length.
_POLICY_LENGTH = {"vllm": "max_model_len", "table_length": "table_length"}


def _policy_lengths(seq_lens: list[int], policy: str, original: int | None, length) -> list[int]:
    """The length each call's frequencies are computed for, under ``policy`` (``length``: the
    fixed-length policies' ``max_model_len`` or initial ``table_length``)."""
    if policy == "vllm":
        return [length] * len(seq_lens)  # [eq:check-call-policy]
    if policy == "table_length":
        out, rows = [], length
        for n in seq_lens:
            rows = max(rows, n)  # [eq:check-call-policy]
            out.append(rows)
        return out
    if policy == "per_call" or original is None:
        return list(seq_lens)
    out, cached = [], original
    for n in seq_lens:
        if n > cached:
            cached = n  # [eq:check-call-policy]
        elif n < original and cached > original:
            cached = original
        out.append(cached)
    return out


def _read_policy(policy, max_model_len, table_length) -> int | None:
    """The policy's fixed length (None for the per-call policies); each length keyword is
    required by its policy and refused by the others."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    given = {"max_model_len": max_model_len, "table_length": table_length}
    needed = _POLICY_LENGTH.get(policy)
    for name, value in given.items():
        if value is not None and name != needed:
            raise ValueError(f"{name}= is used only with policy={_policy_of(name)!r}")
    if needed is None:
        return None
    if given[needed] is None:
        raise ValueError(f"policy={policy!r} needs {needed}= (the length it fixes)")
    return check_int(given[needed], needed, minimum=1, maximum=MAX_POSITION)


def _policy_of(keyword: str) -> str:
    return next(p for p, k in _POLICY_LENGTH.items() if k == keyword)


def _call_matrices(fn, d: int, positions: np.ndarray, seq_len: int) -> np.ndarray:
    """One call of ``fn(x, positions, seq_len)`` with identity rows at ``positions``."""
    x = np.tile(np.eye(d), (len(positions), 1))
    out = fn(x, np.repeat(positions, d), seq_len)
    if hasattr(out, "detach"):
        out = out.detach().cpu().double().numpy()
    out = np.asarray(out, dtype=np.float64)
    if out.shape != x.shape:
        raise ValueError(f"fn must return an array of the input's shape {x.shape}, got {out.shape}")
    return np.transpose(out.reshape(len(positions), d, d), (0, 2, 1))


def _probe_subset(pos: np.ndarray) -> np.ndarray:
    """The positions of a call that are probed: its first, last, and powers of two between."""
    lo, hi = int(pos.min()), int(pos.max())
    keep = {lo, hi, *(m for m in (0, 1, 2, 3) if lo <= m <= hi)}
    k = 1
    while k <= hi:
        if k >= lo:
            keep.add(k)
        k *= 2
    return np.array(sorted(keep), dtype=np.float64)


def _spec_rotate(spec, x, positions):
    """``spec``'s rotation at any positions (its frequencies and layout; a length-dependent
    spec's own refusal of positions beyond its length is what an engine's table ignores)."""
    from ..rotary import apply_rope

    return apply_rope(
        x, positions, inv_freq=spec.inv_freq, pairing=spec.pairing,
        attention_scaling=spec.attention_scaling, rotary_dim=spec.rotary_dim,
        rotary_offset=spec.rotary_offset, output_order=spec.output_order,
    )  # fmt: skip


def _spec_matrices(spec, positions: np.ndarray) -> np.ndarray:
    d = spec.dim
    out = _spec_rotate(spec, np.tile(np.eye(d), (len(positions), 1)), np.repeat(positions, d))
    return np.transpose(out.reshape(len(positions), d, d), (0, 2, 1))


def _max_error(R, ref) -> float:
    return float(np.max(np.abs(R - ref)))


@dataclasses.dataclass
class CallReport:
    """The verdict on a scripted sequence of calls (:func:`check_rope` with ``calls=``).

    Attributes
    ----------
    ok : bool
        Every call matches the frequencies of its length under the judged policy.
    findings : list of Finding
        Per failing call, the length whose frequencies it used when one explains it (a fixed
        length: vLLM's ``max_model_len`` or a table-length switch; an earlier call's length: a
        stale cache).
    lengths : list of int
        The length each call was judged for.
    used : list of int or None
        The length whose frequencies each call matches (None: none of the candidates).
    errors : list of float
        Largest entry error of each call's maps against the judged spec.
    """

    ok: bool
    findings: list
    lengths: list
    used: list
    errors: list

    def __str__(self) -> str:
        lines = [f"RoPE call sequence: {'PASS' if self.ok else 'FAIL'}"]
        for k, (n, u, e) in enumerate(zip(self.lengths, self.used, self.errors, strict=True)):
            lines.append(f"  call {k}: judged for length {n}, matches {u}, error {e:.3g}")
        lines += [f"  - [{f.severity}] {f}" for f in self.findings]
        return "\n".join(lines)


def check_calls(
    fn,
    *,
    config,
    calls,
    policy: str = "transformers",
    tolerance=DEFAULT_TOLERANCE,
    max_model_len: int | None = None,
    table_length: int | None = None,
):
    """The call driver behind ``check_rope(fn, config=..., calls=...)`` (see there)."""
    from ..config import rope_from_config

    length = _read_policy(policy, max_model_len, table_length)
    if not callable(fn):
        raise TypeError("fn must be callable as fn(x, positions, seq_len)")
    script = _read_calls(calls)
    base_spec = rope_from_config(config, seq_len=max(n for _, n in script))
    params = base_spec.params
    original = params.get("original_max_position", params.get("max_position"))
    original = original or base_spec.max_position
    lengths = _policy_lengths([n for _, n in script], policy, original, length)
    specs: dict[int, object] = {}

    def spec_for(n):
        if n not in specs:
            specs[n] = rope_from_config(config, seq_len=n)
        return specs[n]

    scaled = int((original or 1) * float(params.get("factor", 1.0) or 1.0))  # served length
    candidates = sorted({n for _, n in script} | {original or 1, base_spec.max_position or 1}
                        | set(lengths) | {scaled})  # fmt: skip
    findings, used, errors = [], [], []
    for k, ((pos, n), judged) in enumerate(zip(script, lengths, strict=True)):
        probe = _probe_subset(pos)
        R = _call_matrices(fn, base_spec.dim, probe, n)
        allowed = tolerance * (1.0 + np.max(np.abs(probe)))
        err = _max_error(R, _spec_matrices(spec_for(judged), probe))
        errors.append(err)
        fits = [c for c in [judged, *candidates]
                if _max_error(R, _spec_matrices(spec_for(c), probe)) <= allowed]  # fmt: skip
        if not fits and base_spec.rope_type == "dynamic":
            fits = _solve_dynamic_length(R, probe, spec_for, allowed)
        match = (judged if judged in fits else max(fits)) if fits else None  # the longest fits
        used.append(match)
        if err <= allowed:
            continue
        seen = max([length or 0] + [m for _, m in script[: k + 1]])
        words = _call_words(k, n, judged, match, script, original, policy, seen)
        findings.append(_error(words))
    ok = not findings
    if ok:
        what = policy if length is None else f"{policy}, {_POLICY_LENGTH[policy]}={length}"
        findings.append(_note(f"every call matches the frequencies of its length ({what})."))
    return CallReport(ok, findings, lengths, used, errors)


def _slowest_angle(R, probe, spec) -> float | None:
    """The slowest pair's frequency measured from the maps ``R`` (at the largest probed
    position where its angle is below pi), in the spec's layout; None for layouts whose
    pairs move (an output permutation)."""
    from ..rotary import pair_indices

    if getattr(spec, "output_order", "same") != "same":
        return None
    i1, i2 = pair_indices(spec.rotary_dim, spec.pairing)
    a, b = int(i1[-1]) + spec.rotary_offset, int(i2[-1]) + spec.rotary_offset
    ok = probe * float(spec.inv_freq[-1]) < np.pi / 2
    if not np.any(ok & (probe > 0)):
        return None
    k = int(np.flatnonzero(ok & (probe > 0))[-1])
    return float(np.arctan2(R[k, b, a], R[k, a, a]) / probe[k])


def _solve_dynamic_length(R, probe, spec_for, allowed) -> list[int]:
    """The length whose dynamic-NTK frequencies the maps use, by bisection on the slowest
    pair's frequency (non-increasing in the length); ``[]`` when no length matches."""
    lo, hi = 1, MAX_POSITION
    theta = _slowest_angle(R, probe, spec_for(lo))
    if theta is None or spec_for(hi).inv_freq[-1] > theta:
        return []
    while hi - lo > 1:  # invariant: inv_freq(lo) > theta >= inv_freq(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if spec_for(mid).inv_freq[-1] > theta else (lo, mid)
    return [
        n for n in (hi, lo, hi + 1) if _max_error(R, _spec_matrices(spec_for(n), probe)) <= allowed
    ][:1]


def _call_words(k, n, judged, match, script, original, policy, seen) -> str:
    """Why call ``k`` failed: the length whose frequencies it used, named as the policy or
    the mistake that uses it."""
    head = f"call {k} (seq_len {n}) should use the frequencies of length {judged} ({policy})"
    if match is None:
        return head + " but matches none of the lengths tried: check the scaling at this length."
    if match == seen and match != n and k > 0:
        return (
            head + f" but uses those of length {match}, the longest call so far: a cos/sin "
            "table grown for a longer call and never shrunk (declare policy='table_length' "
            "if the engine is meant to do that; transformers resets below the original context)."
        )
    earlier = [j for j in range(k) if script[j][1] == match and match != n]
    if earlier:
        return (
            head + f" but uses those of length {match}, an earlier call's (call {earlier[-1]}): "
            "a cache keyed on an earlier call (recompute, or drop the cache, when the length "
            "changes its frequencies)."
        )
    if match == original and n > (original or 0):
        return head + f" but keeps those of the original context {match}: the length switch "
        "never happens (dynamic scaling or the long factors never applied)."
    return (
        head + f" but uses those of a fixed length {match} at every length: vLLM computes them "
        "once for max_model_len, llama.cpp for the allocated context. Declare "
        f"policy='vllm', max_model_len={match} (or policy='table_length', table_length={match}) "
        "if the engine is meant to do that, or fix the switch."
    )


def _read_calls(calls) -> list[tuple[np.ndarray, int]]:
    if isinstance(calls, (str, bytes)) or not isinstance(calls, Sequence) or not calls:
        raise TypeError("calls must be a non-empty sequence of (positions, seq_len) pairs")
    out = []
    for item in calls:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError("calls must be a non-empty sequence of (positions, seq_len) pairs")
        pos = as_positions(item[0], "calls positions", maximum=MAX_POSITION)
        if pos.size == 0:
            raise ValueError("calls: every call needs at least one position")
        n = check_int(item[1], "calls seq_len", minimum=1, maximum=MAX_POSITION)
        out.append((pos, n))
    return out
