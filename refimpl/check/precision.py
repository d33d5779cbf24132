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


def _precision(pos, ang: _Angles, ref_theta):
    """Precision class from the angle and magnitude errors (see the checker page)."""
    tf = ang.theta
    if ref_theta is None or np.any(tf < 0):
        return "undetermined", "frequencies could not be read"
    exact = np.multiply.outer(pos + ang.delta, ref_theta)  # (P, h) exact angles
    e_ang = np.abs(_wrap(ang.phi - exact))
    e_mag = float(np.max(np.abs(ang.mag - ang.scale))) / max(ang.scale, 1e-300)
    big = np.abs(exact) >= _LARGE_ANGLE
    if not np.any(big):
        big = np.abs(exact) >= 1.0
    g = float(np.max(e_ang[big] / np.abs(exact[big]))) if np.any(big) else 0.0
    small = np.abs(exact) < 1.0
    floor = float(np.max(e_ang[small])) if np.any(small) else 0.0
    detail = (
        f"angle error up to {g:.2g} per radian of angle, magnitude error {e_mag:.2g}, "
        f"angle error at small angles {floor:.2g}"
    )
    # frequencies rounded to a low-precision format before the product: the measured
    # frequencies equal the roundings and the angles are exact multiples of them
    e_tf = np.abs(_wrap(ang.phi - np.multiply.outer(pos + ang.delta, tf)))
    g_tf = float(np.max(e_tf[big] / np.abs(exact[big]))) if np.any(big) else 0.0
    nz = ref_theta > 0
    for fmt in ("bfloat16", "float16"):
        if g_tf > 1e-6 or not np.any(nz):
            break
        rounded = _round_to(ref_theta[nz], fmt)
        moved = np.abs(rounded / ref_theta[nz] - 1.0) > _ROUNDED_FREQ
        if np.sum(moved) >= max(1, np.sum(nz) // 4):
            hit = np.abs(tf[nz][moved] / rounded[moved] - 1.0) < _ROUNDED_FREQ
            if np.mean(hit) > 0.8:
                return f"{fmt} inv_freq", detail + f"; frequencies equal their {fmt} roundings"
    if e_mag > _BF16_LEVEL:
        return "bfloat16 tables", detail
    if g > _BF16_LEVEL:
        return "bfloat16 angles", detail
    if e_mag > _FP16_LEVEL:
        return "float16 tables", detail
    if g > _FP16_LEVEL:
        return "float16 angles", detail
    if g > _FLOAT64_GROWTH or e_mag > _FLOAT64_FLOOR or floor > _FLOAT64_FLOOR:
        return ("worse than bfloat16" if g > _WORSE_LEVEL else "float32"), detail
    return "float64", detail


def _precision_fix(precision: str) -> str:
    return {
        "bfloat16 inv_freq": "Keep inv_freq in float32 (build it in float32 and do not cast the "
        "module to bfloat16 before computing it).",
        "float16 inv_freq": "Keep inv_freq in float32.",
        "bfloat16 tables": "Compute cos/sin in float32 and cast only the rotated output.",
        "float16 tables": "Compute cos/sin in float32 and cast only the rotated output.",
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
