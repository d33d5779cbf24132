"""The checker's report, :class:`RopeReport`."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np


class PrecisionStage(NamedTuple):
    """One rounded stage of a RoPE pipeline, as :attr:`RopeReport.precision_stages` lists it.

    Parameters
    ----------
    stage : {"positions", "frequencies", "angles", "tables"}
        What was rounded: the positions before the product, ``inv_freq``, the product
        ``m * theta_i``, or the cos/sin tables.
    format : {"float64", "float32", "bfloat16", "float16"}
        The format it was rounded to (the pipeline class ``f"{format}-{stage}"``).
    error : float
        The largest output error (for a unit input) this rounding accounts for at the probed
        positions: its share of the error.
    fix : str
        What to change in the implementation.
    """

    stage: str
    format: str
    error: float
    fix: str

    @property
    def pipeline_class(self) -> str:
        """The class name ``f"{format}-{stage}"`` (e.g. ``"bfloat16-angles"``)."""
        return f"{self.format}-{self.stage}"


@dataclasses.dataclass
class RopeReport:
    r"""What :func:`check_rope` found. ``str(report)`` is a readable summary.

    Attributes
    ----------
    ok : bool
        The verdict: the implementation matches the expected configuration (``base``,
        ``pairing``, ``expected``, ``rotary_dim`` when given; otherwise "a correct RoPE of some
        base and pairing over the full width") within ``tolerance``.
    findings : list of Finding
        Plain sentences (``str``), errors first, each with a ``severity`` and a suggested fix.
    pairing : str
        ``"half"``, ``"interleaved"``, ``"neither"`` (described in the findings) or ``"none"``.
    output_permutation : numpy.ndarray of int or None
        ``p`` with ``fn(x)[..., j] == rope(x)[..., p[j]]`` when the outputs come in a fixed
        order other than the inputs' (DeepSeek-V3's ``rope_interleave``: interleaved pairs in,
        half-split order out); None when the order is the same.
    direction : int
        ``+1`` for the reference rotation by :math:`+m\theta`, ``-1`` for the opposite sign,
        ``0`` if undetermined.
    base : float or None
        The base of the frequencies (:math:`\theta_i = b^{-2(i+o)/r}`, fitted continuously and
        snapped to a round value only when that explains the data as well; the expected base
        when the expectation matched); None when no base describes them.
    inv_freq : numpy.ndarray, shape (rotary_dim/2,)
        Measured frequency (rad/token) of each pair (0 for the pass-through pairs of
        proportional RoPE).
    index_origin : int or None
        ``0`` (reference) or ``1`` (pair index counted from 1); None when neither fits.
    scaling : str
        ``"none"``, the scaling family (``"linear"``, ``"ntk"``, ``"yarn"``, ``"llama3"``,
        ``"proportional"``, the expected spec's ``rope_type`` when it matched, ...), or
        ``"unknown"`` for a profile nothing explains.
    scaling_params : dict
        Parameters of the family consistent with the measurement (e.g. ``{"factor": 8.0}``).
    attention_scaling : float
        Measured norm ratio :math:`\|f(x, m)\| / \|x\|` on the rotated features.
    attention_scaling_applied : str
        ``"none"``, ``"once"``, ``"twice"`` or ``"other"`` relative to the expected factor
        (blind: relative to the family's default factor, which is not a failure).
    position_offset : float
        :math:`\delta` such that position ``m`` is rotated as ``m + delta``.
    rotary_dim : int
        Number of features in rotated pairs (pairs of frequency 0 included for proportional).
    rotated_features : numpy.ndarray of int
        Which input features those are.
    precision : str
        One of :data:`PRECISIONS`: the arithmetic the errors suggest (the summary of
        ``precision_stages``).
    precision_stages : tuple of PrecisionStage
        Each rounded stage (positions, frequencies, angles, tables) with its format, its
        share of the error and its fix, largest share first; empty for float64 arithmetic.
    max_error : float
        Largest deviation of a 2x2 pair block from the reference rotation (output error for a
        unit input) at the probed positions.
    relative_position_error : float
        Largest spread of the score :math:`\langle R_m q, R_n k\rangle` over probed pairs
        ``(m, n)`` with the same ``n - m``, relative to :math:`\|q\|\|k\|` (0 for a RoPE).
    deviations : list of tuple
        The largest deviations as ``(position, pair, error)``.
    rotation_error : float
        Largest deviation of the measured map from a scaled rotation of feature pairs,
        relative to the scale (0 for an exact rotation).
    positions : numpy.ndarray
        The positions probed.
    """

    ok: bool
    findings: list
    pairing: str
    direction: int
    base: float | None
    inv_freq: np.ndarray
    index_origin: int | None
    scaling: str
    scaling_params: dict
    attention_scaling: float
    attention_scaling_applied: str
    position_offset: float
    rotary_dim: int
    rotated_features: np.ndarray
    precision: str
    max_error: float
    relative_position_error: float
    deviations: list
    rotation_error: float
    dim: int
    tolerance: float
    output_permutation: np.ndarray | None = None
    positions: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    precision_stages: tuple = ()

    def __str__(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        f = self.inv_freq
        freq = (
            f"{len(f)} pairs, theta_0 = {f[0]:.6g}, theta_last = {f[-1]:.6g} rad/token"
            if len(f)
            else "none"
        )
        direction = {1: "+m*theta (reference)", -1: "-m*theta (flipped)", 0: "undetermined"}
        order = (
            "same as input"
            if self.output_permutation is None
            else "permuted " + _describe_features(self.output_permutation).strip(" ()")
        )
        lines = [
            f"RoPE check: {verdict}",
            f"  pairing            {self.pairing}",
            f"  output order       {order}",
            f"  direction          {direction[self.direction]}",
            (
                f"  rotary_dim         {self.rotary_dim} of {self.dim} features"
                + _describe_features(self.rotated_features)
                if self.rotary_dim
                else "  rotary_dim         n/a (not read)"
            ),
            f"  frequencies        {freq}",
            f"  base               {_fmt(self.base)}",
            f"  index origin       {_fmt(self.index_origin)}",
            f"  scaling            {self.scaling}"
            + (f" {self.scaling_params}" if self.scaling_params else ""),
            f"  attention scaling  {self.attention_scaling:.6g} "
            f"(applied: {self.attention_scaling_applied})",
            f"  position offset    {self.position_offset:.6g}",
            f"  precision          {self.precision}" + _stages_words(self.precision_stages),
            f"  max error          {self.max_error:.3g} "
            f"(tolerance {self.tolerance:.3g} x (1 + |m theta|))",
            f"  rotation error     {self.rotation_error:.3g}",
            f"  rel.-position err  {self.relative_position_error:.3g}",
        ]
        if self.deviations:
            worst = ", ".join(f"m={m:g} pair {i}: {e:.2g}" for m, i, e in self.deviations[:3])
            lines.append(f"  largest deviations {worst}")
        lines.append("Findings:")
        lines += [f"  - [{s.severity}] {s}" for s in self.findings] or ["  - none"]
        return "\n".join(lines)


def _stages_words(stages) -> str:
    if not stages:
        return ""
    return " (" + ", ".join(f"{s.format} {s.stage} {s.error:.2g}" for s in stages) + ")"


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _describe_features(feat: np.ndarray) -> str:
    if len(feat) == 0:
        return ""
    if np.array_equal(feat, np.arange(feat[0], feat[0] + len(feat))):
        return f" (features {feat[0]}..{feat[-1]})"
    return f" (features {', '.join(map(str, feat[:6]))}{', ...' if len(feat) > 6 else ''})"
