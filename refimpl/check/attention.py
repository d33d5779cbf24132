"""Beyond the rotation: the softmax scale and query temperature each layer applies, judged
against :func:`refimpl.config.rope_schedule` (its ``QueryScaling`` per layer), and NoPE layers
that must rotate nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .._checks import MAX_DIM, as_positions, check_positive_int
from ._base import _error, _note

# Scores agree when within this fraction of the largest score (float32 attention leaves
# ~1e-6; a missing temperature of Llama 4 at 8192 tokens changes scores by 7e-2).
_SCORE_TOL = 1e-4
# Positions probed by default: small ones and both sides of Llama 4's floor_scale (8192) and
# of a typical original context (4096, 32768).
_DEFAULT_POSITIONS = (0, 1, 2, 3, 5, 4095, 4096, 8190, 8191, 8192, 20000, 32768, 40000)


@dataclasses.dataclass
class AttentionScaleReport:
    """The verdict of :func:`check_attention_scale`.

    Attributes
    ----------
    ok : bool
        Every layer's scores match the reference.
    findings : list of Finding
        One per failing layer, naming the cause (softmax scale missing or applied twice, the
        query temperature missing, a NoPE layer that rotates).
    errors : dict
        Layer index -> largest score error relative to the largest reference score.
    """

    ok: bool
    findings: list
    errors: dict

    def __str__(self) -> str:
        head = f"attention scale check: {'PASS' if self.ok else 'FAIL'}"
        return "\n".join([head] + [f"  - [{f.severity}] {f}" for f in self.findings])


def _reference_scores(q, k, pos, layer, head_dim):
    spec, qs = layer.spec, layer.query_scaling
    if spec is not None:
        q, k = spec.apply(q, pos), spec.apply(k, pos)
    temp = qs(pos) if qs is not None else np.ones(len(pos))
    soft = qs.softmax_scale if qs is not None else 1.0
    return (q * temp[:, None]) @ k.T * (soft / np.sqrt(head_dim)), temp, soft


def check_attention_scale(
    fn_scores: Callable, schedule, *, head_dim: int | None = None, positions=None
) -> AttentionScaleReport:
    r"""Check the attention logits of every layer against a model's schedule.

    Parameters
    ----------
    fn_scores : callable
        ``fn_scores(layer_index, q, k, positions) -> scores`` with ``q`` and ``k`` of shape
        ``(seq, head_dim)`` (before RoPE) and ``scores`` ``(seq, seq)``: the logits the layer
        feeds to the softmax, RoPE, query temperature and softmax scale included.
    schedule : RopeSchedule
        From :func:`refimpl.rope_schedule` (a config or path is read with it).
    head_dim : int, optional
        Width of q and k (default: the first RoPE layer's ``dim``; needed when no layer has
        RoPE).
    positions : array_like, optional
        Positions of the tokens (default: both sides of 4096, 8192 and 32768).

    Returns
    -------
    AttentionScaleReport

    Notes
    -----
    The reference logits of a layer are
    :math:`s_{ij} = \tau(p_i)\,\langle R_{p_i} q_i, R_{p_j} k_j \rangle\, c / \sqrt{d}`
    with :math:`\tau` the layer's :class:`refimpl.QueryScaling` (1 without one), :math:`c` its
    ``softmax_scale`` (MLA's :math:`\mathrm{mscale}^2`) and :math:`R` the layer's RoPE (the
    identity for NoPE layers).

    Examples
    --------
    >>> import numpy as np, refimpl
    >>> sched = refimpl.rope_schedule({"model_type": "llama", "hidden_size": 64,
    ...                                "num_attention_heads": 4, "num_hidden_layers": 2})
    >>> def scores(i, q, k, p):
    ...     spec = sched[i].spec
    ...     return spec.apply(q, p) @ spec.apply(k, p).T / np.sqrt(spec.dim)
    >>> check_attention_scale(scores, sched).ok
    True
    """
    if not callable(fn_scores):
        raise TypeError("fn_scores must be callable as fn_scores(layer, q, k, positions)")
    if not hasattr(schedule, "layers"):
        from ..config import rope_schedule

        schedule = rope_schedule(schedule)
    specs = [layer.spec for layer in schedule if layer.spec is not None]
    if head_dim is not None:
        head_dim = check_positive_int(head_dim, "head_dim", maximum=MAX_DIM)
    d = head_dim if head_dim is not None else (specs[0].dim if specs else None)
    if d is None:
        raise ValueError("head_dim is required when no layer of the schedule has RoPE")
    pos = as_positions(_DEFAULT_POSITIONS if positions is None else positions)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, len(pos), d))
    findings, errors = [], {}
    for layer in schedule:
        ref, temp, soft = _reference_scores(q, k, pos, layer, d)
        got = np.asarray(fn_scores(layer.index, q.copy(), k.copy(), pos.copy()), dtype=float)
        if got.shape != ref.shape:
            raise ValueError(
                f"fn_scores must return ({len(pos)}, {len(pos)}) scores, got {got.shape}"
            )
        scale = float(np.max(np.abs(ref)))
        errors[layer.index] = float(np.max(np.abs(got - ref))) / scale
        if errors[layer.index] > _SCORE_TOL:
            why = _explain(got, ref, q, k, pos, layer, d, temp, soft)
            findings.append(_error(f"layer {layer.index} ({layer.layer_type}): {why}"))
    ok = not findings
    if ok:
        findings.append(_note(f"all {len(schedule)} layers match the schedule's attention scale."))
    return AttentionScaleReport(ok, findings, errors)


def _close(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=_SCORE_TOL, atol=_SCORE_TOL * float(np.max(np.abs(b)))))


def _explain(got, ref, q, k, pos, layer, d, temp, soft) -> str:
    if layer.spec is None:
        from ..rotary import apply_rope

        rotated = (apply_rope(q, pos) * temp[:, None]) @ apply_rope(k, pos).T * soft / np.sqrt(d)
        if not _close(got, ref) and np.std(got - ref) > 0:
            if _close(got, rotated):
                return (
                    "a NoPE layer rotates q and k (scores depend on relative position): "
                    "layers without RoPE must pass q and k through unrotated."
                )
    if soft != 1.0 and _close(got * soft, ref):
        return (
            f"the softmax scale factor {soft:.6g} (MLA's mscale**2) is missing: scores are "
            "1/sqrt(d) q.k without it."
        )
    if soft != 1.0 and _close(got, ref * soft):
        return f"the softmax scale factor {soft:.6g} is applied twice."
    if np.any(temp != 1.0) and _close(got * temp[:, None], ref):
        return (
            "the query temperature (" + layer.query_scaling.describe() + ") is missing: "
            "queries beyond its length scale must be multiplied by it."
        )
    if np.any(temp != 1.0) and _close(got, ref * temp[:, None]):
        return "the query temperature is applied twice."
    if _close(got, ref / temp[:, None] / soft) is False and np.all(temp == 1.0) and soft == 1.0:
        ratio = got / np.where(np.abs(ref) > 1e-12, ref, np.nan)
        c = float(np.nanmedian(ratio))
        if _close(got, ref * c):
            return (
                f"the logits are {c:.6g} times the reference (a scale the schedule does not state)."
            )
    return "the logits differ from the reference (RoPE, temperature and softmax scale)."
