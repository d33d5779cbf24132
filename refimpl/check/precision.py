"""Stage 6: the precision class."""

from __future__ import annotations

import numpy as np

from ..numerics import round_to
from .angles import _Angles, _wrap

# --------------------------------------------------------------------------------------------
# stage 6: precision class


def _round_to(x, fmt: str) -> np.ndarray:
    """Round to float32/float16/bfloat16 (nearest even, refimpl.numerics) and back to float64."""
    return np.asarray(round_to(x, fmt), dtype=np.float64)


# Angle-error growth per radian and magnitude errors that separate the classes: bfloat16 has
# 8 significand bits (unit roundoff 2**-8 ~ 4e-3), float16 11 (2**-11 ~ 5e-4); the class
# boundaries sit a factor of ~4 below each unit roundoff.
_BF16_LEVEL = 1e-3
_FP16_LEVEL = 1e-4
_WORSE_LEVEL = 1e-2
# Above these the errors are not float64 rounding (float64 tables are exact to ~1e-16 per
# radian; float32 arithmetic leaves ~1e-8 or more).
_FLOAT64_GROWTH = 1e-11
_FLOAT64_FLOOR = 1e-12
# Frequencies equal to their low-precision roundings to this relative accuracy were rounded.
_ROUNDED_FREQ = 1e-5
# Angles at least this large (rad) show the growth of the angle error with position.
_LARGE_ANGLE = 100.0


# A magnitude that changes by more than this fraction is no rounding of the tables (bfloat16
# tables move a pair's magnitude by at most ~2**-8 sqrt 2 ~ 6e-3): the map is not a rotation.
_NOT_ROTATION_MAG = 2e-2
# Formats a stage can be rounded to, from the coarsest.
_HALF_FORMATS = ("bfloat16", "float16")
# A rounding hypothesis is taken when it leaves at most this fraction of the squared angle
# error the model without it leaves (the rest is the other stages' rounding).
_EXPLAINED = 0.5
# Angles below this (rad) are compared unwrapped: a bfloat16 rounding moves them by at most
# 2**-9 of it, under 1 rad, so their errors do not wrap.
_UNWRAPPED = 400.0


def _exact_angles(pos, ang: _Angles, theta, phase=None):
    """Model angles ``(pos + delta) theta_i`` (plus a constant phase per pair), (P, h)."""
    out = np.multiply.outer(np.asarray(pos, float) + ang.delta, theta)
    return out if phase is None else out + phase


def _errors(ang: _Angles, exact):
    """``(growth per radian, magnitude error, error at small angles, wrapped errors)``."""
    e_ang = np.abs(_wrap(ang.phi - exact))
    e_mag = float(np.max(np.abs(ang.mag - ang.scale))) / max(ang.scale, 1e-300)
    big = np.abs(exact) >= _LARGE_ANGLE
    if not np.any(big):
        big = np.abs(exact) >= 1.0
    g = float(np.max(e_ang[big] / np.abs(exact[big]))) if np.any(big) else 0.0
    small = np.abs(exact) < 1.0
    floor = float(np.max(e_ang[small])) if np.any(small) else 0.0
    return g, e_mag, floor, e_ang


def _precision(pos, ang: _Angles, ref_theta, phase=None):
    """Precision class (the summary of :func:`_precision_stages`) and its evidence."""
    tf = ang.theta
    if ref_theta is None or np.any(tf < 0):
        return "undetermined", "frequencies could not be read"
    exact = _exact_angles(pos, ang, ref_theta, phase)
    g, e_mag, floor, _ = _errors(ang, exact)
    detail = (
        f"angle error up to {g:.2g} per radian of angle, magnitude error {e_mag:.2g}, "
        f"angle error at small angles {floor:.2g}"
    )
    if e_mag > _NOT_ROTATION_MAG and ang.trend is None:
        return "undetermined", detail + "; the map is not a rotation"
    fmt = _rounded_frequencies(pos, ang, ref_theta, exact, phase)
    e_tf = np.abs(_wrap(ang.phi - _exact_angles(pos, ang, tf, phase)))
    big = np.abs(exact) >= 1.0
    exact_multiples = not np.any(big) or float(np.max(e_tf[big] / np.abs(exact[big]))) <= 1e-6
    if fmt is not None and exact_multiples:
        return f"{fmt} inv_freq", detail + f"; frequencies equal their {fmt} roundings"
    if g > _BF16_LEVEL:
        return ("worse than bfloat16" if g > _WORSE_LEVEL else "bfloat16 angles"), detail
    if e_mag > _BF16_LEVEL:
        return "bfloat16 tables", detail
    if g > _FP16_LEVEL:
        return "float16 angles", detail
    if e_mag > _FP16_LEVEL:
        return "float16 tables", detail
    if g > _FLOAT64_GROWTH or e_mag > _FLOAT64_FLOOR or floor > _FLOAT64_FLOOR:
        return "float32", detail
    return "float64", detail


def _rounded_frequencies(pos, ang: _Angles, ref_theta, exact, phase=None) -> str | None:
    """The format the frequencies were rounded to before the product, or None: the measured
    frequencies (read at powers of two, exact in every format, where even a rounded product
    of a rounded frequency is exact) sit on the roundings rather than on the exact values,
    for the pairs where the two are farther apart than the measurement's resolution."""
    tf = ang.theta
    nz = ref_theta > 0
    if not np.any(nz) or tf.shape != ref_theta.shape:
        return None
    resolution = (2.0**-8 + ang.struct_err) / max(float(np.max(np.abs(pos))), 1.0)
    for fmt in _HALF_FORMATS:
        rounded = _round_to(ref_theta, fmt)
        gap = np.abs(rounded - ref_theta)
        visible = nz & (gap > 4.0 * resolution) & (gap > _ROUNDED_FREQ * ref_theta)
        if np.sum(visible) >= max(2, np.sum(nz) // 8):
            hit = np.abs(tf[visible] - rounded[visible]) < 0.25 * gap[visible]
            if np.mean(hit) > 0.8:
                return fmt
    return None


def _explains(phi, base_model, alt_model, where) -> bool:
    """True when ``alt_model`` leaves at most :data:`_EXPLAINED` of the squared angle error
    ``base_model`` leaves at the entries ``where`` (angles small enough not to wrap)."""
    if not np.any(where):
        return False
    e0 = _wrap((phi - base_model)[where])
    e1 = _wrap((phi - alt_model)[where])  # a float16 rounding beyond 65504 is inf: not compared
    return float(np.sum(e1 * e1)) <= _EXPLAINED * float(np.sum(e0 * e0)) and np.any(e0 != 0)


_STAGE_FIXES = {
    "positions": "Build the positions in float32 or int (arange in the activations' dtype "
    "rounds them: bfloat16 keeps integers exact only up to 256).",
    "frequencies": "Keep inv_freq in float32 (build it in float32 and do not cast the module "
    "to the model dtype before computing it).",
    "angles": "Form positions * inv_freq in float32, then cos/sin.",
    "tables": "Keep the cos/sin tables in float32 and cast only the rotated output.",
}


def _precision_stages(pos, ang: _Angles, ref_theta, phase=None) -> list:
    """Which stages of the pipeline were rounded, and to which format, ordered by their share
    of the error: ``[PrecisionStage(stage, format, error, fix), ...]`` (empty for float64).

    The stages are separated by what each rounding does to the measured maps: rounded
    *frequencies* make the measured frequencies equal their roundings; rounded *positions*
    move every pair of a position by the same position error (the angles are those of
    ``round(m)``); rounded *angles* move each pair by up to ``u |m theta_i|`` independently;
    rounded *tables* move each entry by up to ``u`` whatever the angle, and the magnitude too.
    """
    from .report import PrecisionStage

    if ref_theta is None or np.any(ang.theta < 0) or not np.any(ref_theta > 0):
        return []
    pos = np.asarray(pos, float)
    exact = _exact_angles(pos, ang, ref_theta, phase)
    g, e_mag, floor, e0 = _errors(ang, exact)
    if e_mag > _NOT_ROTATION_MAG and ang.trend is None:
        return []
    f_fmt = _rounded_frequencies(pos, ang, ref_theta, exact, phase)
    options = [_angle_stages(pos, ang, ref_theta, exact, phase, e_mag, None)]
    if f_fmt is not None:  # rounded angles at powers of two look like rounded frequencies
        options.append(_angle_stages(pos, ang, ref_theta, exact, phase, e_mag, f_fmt))
    found = min(options, key=lambda o: o[1])[0]
    table_fmt = _table_format(ang, e_mag)
    if table_fmt is not None:
        found.append(("tables", table_fmt, e_mag))
    if not found and (g > _FLOAT64_GROWTH or e_mag > _FLOAT64_FLOOR or floor > _FLOAT64_FLOOR):
        stage = "angles" if g > _FLOAT64_GROWTH else "tables"
        found.append((stage, "float32", max(float(np.max(e0)), e_mag)))
    found.sort(key=lambda t: -t[2])
    return [PrecisionStage(st, fmt, err, _STAGE_FIXES[st]) for st, fmt, err in found]


def _angle_stages(pos, ang: _Angles, ref_theta, exact, phase, e_mag, f_fmt):
    """``(stages, residual)`` of the frequency, position and angle stages under one
    hypothesis about the frequencies (exact, or rounded to ``f_fmt``); ``residual`` is the
    squared angle error the hypothesis leaves (the smaller one is the explanation)."""
    found = []
    theta = ref_theta
    if f_fmt is not None:
        theta = _round_to(ref_theta, f_fmt)
        moved = _exact_angles(pos, ang, theta, phase)
        found.append(("frequencies", f_fmt, float(np.max(np.abs(moved - exact)))))
    model_pos = pos
    unwrapped = np.abs(exact) < _UNWRAPPED
    base_model = _exact_angles(pos, ang, theta, phase)
    for fmt in _HALF_FORMATS:
        rounded = _round_to(pos, fmt)
        changed = ((rounded != pos) & np.isfinite(rounded))[:, None] & unwrapped  # fp16 ends
        alt = _exact_angles(rounded, ang, theta, phase)
        if _explains(ang.phi, base_model, alt, changed):
            model_pos = rounded
            found.append(("positions", fmt, float(np.max(np.abs(_wrap(alt - base_model))))))
            break
    model = _exact_angles(model_pos, ang, theta, phase)
    for fmt in _HALF_FORMATS:
        rounded = _round_to(model, fmt)
        moved = (rounded != model) & (np.abs(model) < _UNWRAPPED) & (np.abs(model) >= 1.0)
        if _explains(ang.phi, model, rounded, moved) and (
            float(np.max(np.abs(_wrap(ang.phi - model))[moved])) > 2.0 * e_mag
        ):
            found.append(("angles", fmt, float(np.max(np.abs(_wrap(rounded - model))))))
            model = rounded
            break
    e = _wrap(ang.phi - model)[unwrapped]
    return found, float(np.sum(e * e))


def _table_format(ang: _Angles, e_mag: float) -> str | None:
    """The half format the cos/sin tables were rounded to, from the magnitude error."""
    if e_mag > _BF16_LEVEL:
        return "bfloat16"
    if e_mag > _FP16_LEVEL:
        return "float16"
    return None


def _precision_fix(precision: str) -> str:
    return {
        "bfloat16 inv_freq": _STAGE_FIXES["frequencies"],
        "float16 inv_freq": _STAGE_FIXES["frequencies"],
        "bfloat16 tables": _STAGE_FIXES["tables"],
        "float16 tables": _STAGE_FIXES["tables"],
        "bfloat16 angles": "Compute positions * inv_freq in float32 (positions as float32, not "
        "the activations' dtype), then cos/sin, and cast at the end.",
        "float16 angles": "Compute positions * inv_freq in float32, then cos/sin.",
    }.get(precision, "Compute the angles in float32 or better.")


def _deviations(pos, blocks, theta, s, tol):
    raa, rba, rab, rbb = blocks
    ang = np.multiply.outer(pos, theta)
    c, sn = s * np.cos(ang), s * np.sin(ang)
    err = np.sqrt(((raa - c) ** 2 + (rba - sn) ** 2 + (rab + sn) ** 2 + (rbb - c) ** 2) / 2.0)
    scaled = err / (tol * (1.0 + np.abs(ang)))
    order = np.argsort(scaled, axis=None)[::-1][:5]
    devs = []
    for flat in order:
        k, i = np.unravel_index(flat, err.shape)
        if scaled[k, i] > 1.0:
            devs.append((float(pos[k]), int(i), float(err[k, i])))
    return float(np.max(err)), float(np.max(scaled)), devs


def _relative_position_error(pos, R) -> float:
    """Largest spread of <R_m q, R_n k> over probed (m, n) with equal n - m, over |q||k|."""
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, R.shape[-1]))
    scores = (R @ q) @ (R @ k).T  # (P, P): row m, column n
    diff = np.subtract.outer(pos, pos).ravel()
    order = np.argsort(diff, kind="stable")
    diff, flat = diff[order], scores.ravel()[order]
    starts = np.flatnonzero(np.r_[True, diff[1:] != diff[:-1]])
    spread = np.maximum.reduceat(flat, starts) - np.minimum.reduceat(flat, starts)
    return float(np.max(spread)) / (np.linalg.norm(q) * np.linalg.norm(k))
