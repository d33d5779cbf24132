"""Stage 7: judging the readings against the expectations; each verdict a :class:`Finding`."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import composite
from ._base import (
    _COMMON_BASES,
    _FREQ_MISMATCH,
    _ORIGIN_TOL,
    _SAME_FREQ,
    _SCALE_CLOSE,
    _SCALING_FACTORS,
    _ZERO_FREQ,
    Finding,
    _error,
    _note,
)
from .angles import _Angles
from .expected import _Expected
from .fit import _fit_profile, _geometric, _Profile
from .precision import (
    _deviations,
    _precision,
    _precision_fix,
    _precision_stages,
    _round_to,
)
from .structure import _Structure

# --------------------------------------------------------------------------------------------
# stage 7: judging against the expectations


@dataclasses.dataclass
class _Reading:
    """Everything measured, for the judges: structure, angles and the frequency profile."""

    pos: np.ndarray
    structure: _Structure
    pairing: str
    proportional: bool
    frame: list
    angles: _Angles
    profile: _Profile
    dim: int

    @property
    def width(self) -> int:
        return 2 * len(self.frame)

    @property
    def features(self) -> np.ndarray:
        return np.sort(np.array([f for p in self.frame for f in p]))


def _pair_words(p: str) -> str:
    return {
        "half": "i with i + r/2",
        "interleaved": "2i with 2i + 1",
        "neither": "non-standard",
        "none": "none",
    }[p]


def _half_order(d: int) -> np.ndarray:
    """Output order of interleaved pairs written half-split (DeepSeek-V3 ``rope_interleave``)."""
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def _judge_structure(rd: _Reading, exp: _Expected, pairing_note: str) -> list[Finding]:
    out: list[Finding] = []
    d, r, feats = rd.dim, rd.width, rd.features
    if rd.angles.direction == -1:
        out.append(
            _error(
                "the rotation goes the wrong way (by -m*theta): scores depend on query minus key "
                "position instead of key minus query, which does not match pretrained weights. "
                "Flip the sign of sin (x1*cos - x2*sin, x2*cos + x1*sin), or use "
                "rotate_half(x) = cat(-x2, x1) rather than cat(x2, -x1)."
            )
        )
    if rd.pairing == "neither":
        out.append(
            _error(
                f"features are paired in no standard way ({pairing_note}); half-split pairs i with "
                "i + r/2, interleaved pairs 2i with 2i + 1."
            )
        )
    elif exp.pairing is not None and rd.pairing != exp.pairing:
        fix = (
            "interleaved_to_half_weights"
            if exp.pairing == "half"
            else "half_to_interleaved_weights"
        )
        out.append(
            _error(
                f"fn pairs features {rd.pairing} ({_pair_words(rd.pairing)}) but "
                f"pairing='{exp.pairing}' was expected ({_pair_words(exp.pairing)}). Switch the "
                f"implementation to pairing='{exp.pairing}', or permute the q/k projection rows "
                f"with refimpl.{fix}."
            )
        )
    start = exp.rotary_offset  # an expected spec may rotate the slice [o, o + rotary_dim)
    if feats[0] != start and rd.pairing != "neither":
        where = "the first" if start == 0 else f"features {start}.."
        out.append(
            _error(
                f"the rotated features are {feats[0]}..{feats[-1]}, not {where} {r}: partial "
                "rotary rotates the FIRST rotary_dim features and passes the rest through "
                "(x[..., :rotary_dim] rotated, x[..., rotary_dim:] unchanged)"
                + (f", here from rotary_offset={start}." if start else ".")
            )
        )
    if exp.rotary_dim is not None and r != exp.rotary_dim:
        out.append(
            _error(
                f"fn rotates {r} features but rotary_dim={exp.rotary_dim} was expected: check "
                "partial_rotary_factor / rotary_dim (rotary_dim = int(head_dim * "
                "partial_rotary_factor))."
            )
        )
    elif exp.rotary_dim is None and r < d:
        out.append(
            _error(
                f"fn rotates only {r} of the {d} features (partial rotary) and passes the rest "
                f"through; the full width was expected. If that is intended, pass rotary_dim={r} "
                "(or an expected spec with it)."
            )
        )
    return out + _judge_output_order(rd, exp) + _judge_positions(rd, exp)


def _judge_positions(rd: _Reading, exp: _Expected) -> list[Finding]:
    """Findings on how positions enter: an offset (against the declared one), a constant
    phase per pair, positions not used as given (clamped, remapped), a magnitude that changes
    with position."""
    out: list[Finding] = []
    delta, declared = rd.angles.delta, exp.offset
    if rd.angles.phase is not None:
        ph = rd.angles.phase
        out.append(
            _error(
                "at position 0 the pairs are already rotated, by angles that no position offset "
                f"explains (a constant phase per pair, from {np.min(ph):.3g} to {np.max(ph):.3g} "
                "rad): fn composes RoPE with a fixed rotation (a learned phase such as PoPE's "
                "key bias, or cos/sin tables built from shifted angles). Position 0 must be "
                "the identity."
            )
        )
    elif declared is not None and delta != declared:
        out.append(
            _error(
                f"position m is rotated as m + {delta:g}, but the declared offset is "
                f"{declared:g} (offsets=): the cache offset is missing, added twice, or "
                "added on one path only."
            )
        )
    elif declared is None and delta != 0.0:
        what = (
            "positions are counted from 1"
            if delta == 1.0
            else f"every position is shifted by {delta:g}"
        )
        out.append(
            _error(
                f"position m is rotated as m + {delta:g} ({what}); the token at position 0 must be "
                "left unrotated. Pass position_ids starting at 0 (arange(seq) + cache offset), "
                "or declare the offset with offsets=."
            )
        )
    out += _judge_position_map(rd)
    if rd.angles.trend is not None:
        t = rd.angles.trend
        out.append(
            _error(
                "the magnitude of each pair changes with position (xPos-like scaling: per-pair "
                f"factor exp({np.min(t):.3g}..{np.max(t):.3g} x m)), so fn is not a rotation: "
                "scores of one function applied to q and k then depend on m + n. xPos scales q by "
                "zeta^(m/scale_base) and k by its inverse (refimpl.apply_xpos)."
            )
        )
    return out


def _moved_positions(rd: _Reading):
    """``(positions, effective)`` where the angles are those of another position (more than
    half a position away), ignoring rounded positions (a precision stage, not a cause)."""
    eff = rd.angles.effective
    if eff is None:
        return np.zeros(0), np.zeros(0)
    pos = rd.pos - rd.pos[np.argmin(np.abs(rd.pos))]
    moved = np.isfinite(eff) & (np.abs(eff - pos) > 0.5)
    for fmt in ("bfloat16", "float16"):
        rounded = _round_to(pos, fmt)
        if np.any(moved) and np.all(np.abs(eff[moved] - rounded[moved]) < 0.5):
            return np.zeros(0), np.zeros(0)
    return pos[moved], eff[moved]


def _judge_position_map(rd: _Reading) -> list[Finding]:
    """Clamped or remapped positions, read from the position each probe is rotated as."""
    moved, eff = _moved_positions(rd)
    if len(moved) == 0:
        return []
    c = float(np.median(eff))
    above = rd.pos[rd.pos > c]
    if np.all(np.abs(eff - c) < 0.5) and np.array_equal(np.sort(moved), np.sort(above)):
        return [
            _error(
                f"the angles stop growing beyond position {c:g}: every probed position above "
                f"it is rotated as {c:g} (positions clamped to a table of {c + 1:g} rows, as a "
                "clamping gather does; or capped at the original context). Size the cos/sin "
                "table for the whole context, or compute the angles from the positions."
            )
        ]
    shown = ", ".join(f"{m:g} -> {e:g}" for m, e in list(zip(moved, eff, strict=True))[:4])
    return [
        _error(
            f"positions are not used as given: probed positions are rotated as others ({shown}"
            f"{', ...' if len(moved) > 4 else ''}); check how positions reach the rotation."
        )
    ]


def _judge_output_order(rd: _Reading, exp: _Expected) -> list[Finding]:
    perm = rd.structure.permutation
    d = rd.dim
    is_half = perm is not None and np.array_equal(perm, _half_order(d))
    if exp.output_order == "half" and not is_half:
        return [
            _error(
                "the expected spec writes the rotated interleaved pairs in half-split order "
                "(output_order='half', DeepSeek-V3 rope_interleave) but fn "
                + ("keeps the input order" if perm is None else "uses another output order")
                + "."
            )
        ]
    if perm is None or (exp.output_order == "half" and is_half):
        return []
    words = (
        "interleaved pairs in, half-split order out (DeepSeek-V3 rope_interleave, MLA)"
        if is_half
        else f"output j holds feature {list(perm[:6])}{', ...' if d > 6 else ''}"
    )
    text = (
        f"the outputs are a fixed permutation of a correct RoPE's ({words}); "
        "report.output_permutation p gives fn(x)[..., j] = rope(x)[..., p[j]]. Scores are "
        "unchanged when q and k get the same permutation."
    )
    if exp.output_order == "same":
        return [_error(text + " The expected spec keeps the input order.")]
    if not exp.blind:
        return [_error(text + " Declare output_order='half' if this order is intended.")]
    return [_note(text)]


def _expected_theta(exp: _Expected, rd: _Reading) -> np.ndarray | None:
    """The frequencies the verdict requires, from the expectation (None when blind)."""
    if exp.inv_freq is not None:
        return exp.inv_freq
    if exp.base is None:
        return None
    r = exp.rotary_dim or rd.width
    if rd.proportional:
        live = rd.angles.theta > 0
        return np.where(live, _geometric(rd.dim, exp.base, np.arange(len(live))), 0.0)
    return _geometric(r, exp.base, np.arange(r // 2))


def _judge_frequencies(rd: _Reading, exp: _Expected, ref) -> tuple[list, bool]:
    """Frequency findings and whether the expectation's frequencies matched."""
    out: list[Finding] = []
    prof, theta, r = rd.profile, rd.angles.theta, rd.width
    matched = False
    if ref is not None and len(ref) == len(theta) and np.all(theta >= 0):
        rel = np.abs(theta - ref) / np.maximum(np.abs(ref), _ZERO_FREQ)
        matched = bool(np.max(rel) <= _FREQ_MISMATCH)
        if not matched:
            out.append(
                _error(
                    _explain_frequencies(rd, exp)
                    + f" (largest relative frequency error {np.max(rel):.2g}, "
                    f"pair {np.argmax(rel)})."
                )
            )
    elif ref is not None and np.all(theta >= 0):
        out.append(
            _note(
                f"the expected configuration has {len(ref)} frequencies but fn rotates "
                f"{len(theta)} pairs; frequencies were not compared pair by pair."
            )
        )
    if np.any(theta < 0):
        out.append(
            _error(
                "some pairs rotate in the opposite direction to others, or faster than pi "
                "rad/token (their angles alias): RoPE frequencies are base**(-2i/d), at most "
                "1 rad/token and decreasing with i. A positive exponent base**(+2i/d) gives the "
                "reciprocals."
            )
        )
    elif len(theta) > 1 and np.ptp(theta) <= _SAME_FREQ * np.max(theta):
        out.append(
            _error(
                f"every pair has the same frequency {theta[0]:.6g} rad/token, so positions are "
                "only seen modulo one wavelength: the exponent 2i/d is the same for all pairs (an "
                "integer division such as arange(0, d, 2) // d?). Use a float division."
            )
        )
    elif prof.scaling == "unknown" and not matched:
        words = (
            "the frequencies do not decrease geometrically with the pair index"
            + (f" (largest log-residual {prof.resid:.2g})" if np.isfinite(prof.resid) else "")
            + " and match no known scaling family"
        )
        if ref is None:
            out.append(
                _error(
                    words + _per_pair_words(theta, r) + ": this is not a RoPE of any "
                    "base. If these frequencies are intended (learned, LongRoPE "
                    "factors), pass them with expected= to check the rest."
                )
            )
    out += _blind_frequency_notes(rd, exp, ref)
    return out, matched


def _per_pair_words(theta, r) -> str:
    """Per-pair deviations from the geometric profile through the first two pairs."""
    if len(theta) < 3 or theta[0] <= 0 or theta[1] <= 0:
        return ""
    b = float((theta[1] / theta[0]) ** (-r / 2.0))
    if not np.isfinite(b) or b <= 1.0:
        return ""
    lam = _geometric(r, b, np.arange(len(theta)), 0.0, theta[0] ** -1) / theta
    return (
        f"; against base {b:.6g} through the first two pairs, the per-pair factors run "
        f"from {np.min(lam):.4g} to {np.max(lam):.4g}"
    )


def _blind_frequency_notes(rd: _Reading, exp: _Expected, ref) -> list[Finding]:
    out: list[Finding] = []
    prof = rd.profile
    blind = exp.inv_freq is None and exp.base is None
    if prof.geometric and prof.index_origin == 1 and blind:
        out.append(
            _error(
                "the pair index is counted from 1 (theta_i = b^(-2(i+1)/d)): the 1 rad/token pair "
                "is missing. Use i = 0 .. d/2-1, i.e. arange(0, d, 2) / d in the exponent."
            )
        )
    if prof.geometric and blind and prof.base is not None:
        for c in _COMMON_BASES:
            if c != prof.base and abs(prof.base**2 / c - 1.0) < 1e-3:
                out.append(
                    _note(
                        f"the base {prof.base:g} is sqrt({c:g}); if {c:g} was meant, the exponent "
                        "uses i/d instead of 2i/d (pass base= to make this a failure)."
                    )
                )
                break
    if prof.scaling == "freq_factors" and blind:
        lam = prof.params["factors"]
        out.append(_note(
            f"the frequencies are those of base {prof.base:g} divided by per-pair factors from "
            f"{np.min(lam):.4g} to {np.max(lam):.4g}, never decreasing with the pair index "
            "(LongRoPE's short/long factors, GGUF's rope_freqs): a consistent profile, but only "
            "the factors themselves can judge it (pass expected=)."))  # fmt: skip
    zeros = int(np.sum(rd.angles.theta == 0))
    if rd.proportional:
        out.append(
            _note(
                f"proportional RoPE: rotate_half across all {rd.dim} features with "
                f"{len(rd.frame) - zeros} pairs rotating at b^(-2i/{rd.dim}) and {zeros} pairs at "
                "frequency 0 (Gemma 4's partial rotary; not a rotation of the first features)."
            )
        )
    elif zeros:
        out.append(_note(f"{zeros} pair(s) have frequency 0 (never rotate)."))
    return out


def _explain_frequencies(rd: _Reading, exp: _Expected) -> str:
    """Plain words for a frequency mismatch."""
    prof, b0, r, d = rd.profile, exp.base, rd.width, rd.dim
    b_fit, o_fit = prof.base_fit, prof.origin_fit
    if prof.geometric and b0 is not None and exp.inv_freq is not None:
        if abs(b_fit / b0 - 1.0) < 2e-3 and abs(o_fit) < _ORIGIN_TOL and prof.scaling == "none":
            return (
                f"the frequencies are the unscaled ones of base {b0:g}, but the expected "
                f"configuration (rope_type {exp.rope_type!r}) scales them: the scaling method "
                "was not applied. Use its frequencies (refimpl.ROPE_SCALINGS or "
                "refimpl.rope_from_config(config).inv_freq)"
            )
    ref = _expected_theta(exp, rd)
    if ref is not None and len(ref) == len(rd.angles.theta):
        words = composite.constant_ratio(rd.angles.theta, ref, dict(exp.params))
        words = words or composite.changed_parameter(rd.angles.theta, exp, r, _blind_base(rd))
        if words:
            return words
    if prof.geometric and b0 is not None:
        if prof.index_origin == 1 and abs(b_fit / b0 - 1.0) < 2e-3:
            return (
                "the pair index is counted from 1 (theta_i = b^(-2(i+1)/d)): the 1 rad/token pair "
                "is missing and 1/b is added. Use i = 0 .. d/2-1 (arange(0, d, 2) / d)"
            )
        if prof.scaling in ("linear", "proportional") and prof.params:
            f = prof.params["factor"]
            return (
                f"the frequencies are those of base {prof.base:.6g} divided by {f:.6g} "
                "(position interpolation by that factor)"
            )
        if prof.index_origin == 0:
            return _explain_base(prof.base, b0, r, d)
    ratio = rd.angles.theta / np.where(exp_theta := _expected_theta(exp, rd), exp_theta, 1.0)
    return (
        f"the frequencies differ from the expected ones (ratio measured/expected from "
        f"{np.min(ratio):.4g} to {np.max(ratio):.4g}); check the scaling method and its "
        "parameters (factor, original_max_position, beta_fast/beta_slow, low/high_freq_factor)"
    )


def _explain_base(b_fit: float, b0: float, r: int, d: int) -> str:
    if r != d and abs(math.log(b_fit) / math.log(b0) - r / d) < 2e-3:
        return (
            f"the exponent's denominator is the head dim {d}, not the rotary width {r} "
            f"(fitted base {b_fit:.6g} = {b0:g}^({r}/{d})). Use 2i/rotary_dim"
        )
    if abs(b_fit / math.sqrt(b0) - 1.0) < 2e-3:
        return (
            f"the frequencies fit base {b_fit:.6g} = sqrt({b0:g}): the exponent uses "
            "i/d (frequencies spread over d features instead of d/2 pairs). Use 2i/d, "
            "i.e. arange(0, d, 2) / d"
        )
    s = (b_fit / b0) ** ((r - 2) / r)
    if any(abs(s / f - 1.0) < 1e-2 for f in _SCALING_FACTORS):
        return (
            f"the frequencies fit base {b_fit:.6g}, not {b0:g}: an NTK base change "
            f"by factor {s:.4g} (base * factor^(r/(r-2))). If NTK scaling is not "
            "intended, check rope_theta / base"
        )
    return (
        f"the frequencies fit base {b_fit:.6g}, not {b0:g}: check rope_theta / base (a "
        "hard-coded default, or another layer's base: a K-shift or a rotary module shared "
        "between layers with different rope_theta)"
    )


def _blind_base(rd: _Reading) -> float | None:
    """The base a blind fit reads from the measured profile (for the variants tried)."""
    prof = _fit_profile(rd.angles.theta, rd.width, None)
    return prof.base


def _attention_applied(scale: float, ref: float) -> str:
    def close(a, b):
        return abs(a - b) <= _SCALE_CLOSE * max(abs(b), 1.0)

    if ref == 1.0:
        return "none" if close(scale, 1.0) else "other"
    if close(scale, ref):
        return "once"
    if close(scale, 1.0):
        return "none"
    if close(scale, ref * ref):
        return "twice"
    return "other"


def _judge_attention(rd: _Reading, exp: _Expected, matched_family: bool):
    """``(applied, reference scale, findings)``. With a declared factor, or with anything else
    expected (then the factor must be 1 unless declared), the verdict is exact; blind, the
    measured factor is reported with the family parameters consistent with it."""
    scale = rd.angles.scale
    ref = exp.scale
    if ref is not None:
        applied = _attention_applied(scale, ref)
        if applied in ("once",) or (applied == "none" and ref == 1.0):
            return applied, ref, []
        factor = exp.params.get("factor") if exp.rope_type == "yarn" else None
        if factor is None and rd.profile.scaling == "yarn":
            factor = rd.profile.params.get("factor")
        words = composite.attention_composite(scale, ref, factor)
        texts = {
            "none": f"the attention scaling {ref:.6g} is missing (norms are kept): multiply cos "
            "and sin by it (transformers folds YaRN's 0.1 ln(s) + 1 into the tables).",
            "twice": f"the attention scaling is applied twice: norms grow by {scale:.6g} = "
            f"{ref:.6g}^2. Apply it once, on cos/sin (scores then scale by its square), not "
            "also on q/k or on the softmax scale.",
            "other": f"fn multiplies the rotated features by {scale:.6g}, expected {ref:.6g}"
            + (
                " (no attention scaling was declared: pass attention_scaling= if it is intended)."
                if exp.attention_scaling is None
                else "."
            ),
        }
        text = words + "." if (words and applied != "twice") else texts[applied]
        return applied, ref, [_error(text)]
    fam = rd.profile.family_scale
    ref = fam if (matched_family and fam is not None) else 1.0
    applied = _attention_applied(scale, ref)
    notes = []
    if applied != ("once" if ref != 1.0 else "none"):
        notes.append(_note(_consistent_scaling(rd.profile, scale, ref)))
    return applied, scale, notes


def _consistent_scaling(prof: _Profile, scale: float, default: float) -> str:
    text = f"fn multiplies the rotated features by {scale:.6g} (measured)"
    if prof.scaling == "yarn":
        s = prof.params.get("factor", 1.0)
        if abs(scale - 1.0) <= _SCALE_CLOSE:
            return (
                text + f"; for YaRN factor {s:g} this is consistent with mscale == "
                f"mscale_all_dim (DeepSeek) or attention_factor = 1, not with the default "
                f"0.1 ln(s) + 1 = {default:.6g}. Pass expected= to judge it."
            )
        return (
            text + f"; the YaRN default for factor {s:g} is {default:.6g}: consistent with "
            f"attention_factor = {scale:.6g}. Pass expected= to judge it."
        )
    return (
        text
        + (f"; the family's default is {default:.6g}" if default != 1.0 else "")
        + (". Pass attention_scaling= or expected= to judge it.")
    )


def _model_positions(rd: _Reading) -> np.ndarray:
    """The positions the structural findings say each probe is rotated as (the probed ones
    where nothing moved them), for judging precision on what the structure leaves."""
    pos = rd.pos.astype(float).copy()
    moved, eff = _moved_positions(rd)
    origin = rd.pos[np.argmin(np.abs(rd.pos))]
    for m, e in zip(moved, eff, strict=True):
        pos[np.flatnonzero(rd.pos - origin == m)] = e + origin
    return pos


def _judge_precision(rd, exp_ref_theta, ref_scale, tol, have_errors, offset=0.0):
    """``(precision, stages, max_error, deviations, findings)``. The verdict's deviations are
    against the expected frequencies; the precision class and stages against what the
    structure explains (the identified frequencies, moved positions, a constant phase), so
    that no precision finding is made for an error a structural finding accounts for."""
    ang = rd.angles
    ident = rd.profile.theta if rd.profile.theta is not None else None
    model_theta = ident if ident is not None else exp_ref_theta
    model_pos, phase = _model_positions(rd), ang.phase
    precision, detail = _precision(model_pos, ang, model_theta, phase)
    stages = tuple(_precision_stages(model_pos, ang, model_theta, phase))
    verdict_theta = exp_ref_theta if exp_ref_theta is not None else ident
    if verdict_theta is None or len(verdict_theta) != len(ang.theta):
        verdict_theta = np.maximum(ang.theta, 0.0)
    blocks = ang.blocks
    if ang.trend is not None:  # judge the rotation, the trend is its own finding
        damp = np.exp(np.outer(rd.pos, ang.trend))
        blocks = tuple(b / damp for b in blocks)
    max_error, worst, devs = _deviations(rd.pos + offset, blocks, verdict_theta, ref_scale, tol)
    out = []
    half = [st for st in stages if st.format in ("bfloat16", "float16")]
    words = "; ".join(
        f"{st.format} {st.stage} (error up to {st.error:.2g}): {st.fix}" for st in half
    )
    if worst > 1.0 and not have_errors:
        out.append(
            _error(
                f"the outputs deviate from the reference by up to {max_error:.2g} ({detail}); the "
                f"errors suggest {precision} arithmetic"
                + (f", by stage: {words}" if words else ". " + _precision_fix(precision))
            )
        )
    elif worst > 1.0 and half:
        out.append(
            _error(
                f"precision: besides the findings above, the errors suggest {precision} "
                f"arithmetic ({detail}); by stage: {words}"
            )
        )
    return precision, stages, max_error, devs, out
