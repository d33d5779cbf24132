"""Stage 4: angles, magnitudes, direction, frequencies, offset."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ._base import (
    _MAG_TREND,
    _OFFSET_SNAP,
    _REFLECTION_TOL,
    _ROTATION_TOL,
    _TWO_PI,
    _ZERO_FREQ,
    _error,
)

# A pair magnitude that changes with position by more than this fraction is no rounding
# (bfloat16 tables move it by at most ~2**-8 sqrt 2 ~ 6e-3): the map is not a rotation.
_NOT_ROTATION = 2e-2
# Angles at position 0 that an offset leaves unexplained beyond this (rad) are a constant phase
# per pair: float32 tables leave 1e-7, bfloat16 tables 4e-3, a fixed extra rotation O(1).
_PHASE_TOL = 5e-2
# Turns of the slowest pair tried when reading a position from its angles (positions up to
# 2**31 with the slowest frequency of base 1e7 need a handful; the cap bounds the work).
_MAX_TURNS = 64

# --------------------------------------------------------------------------------------------
# stage 4: angles, magnitudes, direction, frequencies, offset


@dataclasses.dataclass
class _Angles:
    """Per-pair measurements over the probed positions (``P`` positions, ``h`` frame pairs)."""

    blocks: tuple  # (raa, rba, rab, rbb), each (P, h)
    phi: np.ndarray  # (P, h) angle, sign-corrected so that direction +1 grows with m
    mag: np.ndarray  # (P, h) magnitude with any per-position trend (xPos) divided out
    trend: np.ndarray | None  # (h,) d log(magnitude) / d position, or None when constant
    scale: float  # median magnitude of the rotating pairs
    direction: int
    theta: np.ndarray  # (h,) frequencies (rad/token), 0 for pass-through pairs
    delta: float  # position offset
    struct_err: float
    effective: np.ndarray | None = None  # (P,) position each probe is rotated as (minus delta)
    phase: np.ndarray | None = None  # (h,) angle at position 0 that no offset explains


def _wrap(phi):
    return (np.asarray(phi) + np.pi) % _TWO_PI - np.pi


def _blocks(R: np.ndarray, pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    return R[:, a, a], R[:, b, a], R[:, a, b], R[:, b, b]  # each (P, h)


def _structure_error(R, pairs, passthrough, blocks, scale) -> float:
    """Largest deviation from a rotation of the pairs, relative to the scale."""
    raa, rba, rab, rbb = blocks
    d = R.shape[-1]
    a_idx = np.array([p[0] for p in pairs])
    b_idx = np.array([p[1] for p in pairs])
    allowed = np.zeros((d, d), dtype=bool)
    for u, v in ((a_idx, a_idx), (a_idx, b_idx), (b_idx, a_idx), (b_idx, b_idx)):
        allowed[u, v] = True
    allowed[passthrough, passthrough] = True
    leak = float(np.max(np.abs(R[:, ~allowed]))) if np.any(~allowed) else 0.0
    resid = np.maximum(np.abs(raa - rbb), np.abs(rab + rba))
    return max(float(np.max(resid)), leak) / max(scale, 1e-300)


def _magnitude_trend(pos, mag):
    """Per-pair slope of log magnitude in position when the magnitudes change with position
    along a line (xPos: log s_i(m) = m log(zeta_i) / scale_base), else None."""
    logm = np.log(np.maximum(mag, 1e-300))
    change = logm - logm[np.argmin(np.abs(pos))]
    if np.max(np.abs(change)) <= _MAG_TREND:
        return None
    m = pos - pos[np.argmin(np.abs(pos))]
    slope = (m @ change) / max(float(m @ m), 1e-300)  # (h,)
    resid = np.max(np.abs(change - np.outer(m, slope)))
    return slope if resid < 0.1 * np.max(np.abs(change)) else None


def _read_angles(pos, R, frame, passthrough):
    """Stage 4: ``(_Angles, findings)``; findings that stop the check (reflection, no
    rotation) come back with ``None`` for the angles."""
    blocks = _blocks(R, frame)
    raa, rba, rab, rbb = blocks
    mag = np.hypot(raa, rba)  # (P, h)
    scale0 = float(np.median(mag))
    pt = [f for f in passthrough if not any(f in p for p in frame)]
    struct_err = _structure_error(R, frame, pt, blocks, scale0)
    if (
        np.max(np.abs(raa + rbb)) < _REFLECTION_TOL * scale0
        and np.max(np.abs(rab - rba)) < _REFLECTION_TOL * scale0
    ):
        text = (
            "each pair is reflected, not rotated (blocks [[c, s], [s, -c]]): the sign of one "
            "output member is flipped."
        )
        return None, [_error(text)], struct_err
    if struct_err > _ROTATION_TOL:
        text = (
            f"the pair blocks are not rotations (deviation {struct_err:.2g} of the scale): "
            "the two members of a pair do not see the same angle. Check that cos/sin are "
            "laid out with the same pairing as rotate_half."
        )
        return None, [_error(text)], struct_err
    blend = _not_a_rotation(raa, rba, mag, pos)
    if blend is not None:
        return None, [_error(blend)], struct_err
    phi = np.arctan2(rba, raa)  # [eq:check-angle]
    k0 = int(np.flatnonzero(pos == 0)[0])
    k1 = int(np.flatnonzero(pos == 1)[0])
    dphi = _wrap(phi - phi[k0])
    sig = dphi[k1][np.abs(dphi[k1]) > 1e-9]
    direction = int(np.sign(np.sum(np.sign(sig)))) if sig.size else 0
    if direction == -1:
        phi, dphi = -phi, -dphi
    theta = _unwrap_frequencies(pos, dphi)
    theta = np.where(np.abs(theta) < _ZERO_FREQ, 0.0, theta)
    rotating = theta > 0
    scale = float(np.median(mag[:, rotating])) if np.any(rotating) else scale0
    trend = _magnitude_trend(pos, mag[:, rotating]) if np.any(rotating) else None
    if trend is not None:
        full = np.zeros(len(frame))
        full[rotating] = trend
        trend = full
        mag = mag / np.exp(np.outer(pos - pos[k0], trend))
        # Each pair's own factor where the trend starts: xPos centred on c (x-transformers,
        # flash-attention: zeta_i ** ((m - c) / scale_base)) gives every pair a different
        # factor at position 0, which belongs to the same xPos finding, not to the precision.
        own = np.median(mag, axis=0)  # (h,)
        scale = float(np.median(own[rotating]))
        mag = mag / np.where(own > 0, own, 1.0) * scale
    delta, phase = _offset_and_phase(theta, phi[k0])
    effective = _position_map(pos, _wrap(phi - phi[k0]), theta)
    ang = _Angles(blocks, phi, mag, trend, scale, direction, theta, delta, struct_err)
    ang.effective, ang.phase = effective, phase
    return ang, [], None


def _not_a_rotation(raa, rba, mag, pos) -> str | None:
    """Words for pair maps whose magnitude changes with position in no monotone way (xPos's
    trend is read later): not a rounding (bfloat16 tables move it by at most ~6e-3) but a
    map that is not a rotation. A blend ``(1 - a) x + a R x`` puts the block's first column
    on a circle of radius ``a`` centred at ``(1 - a, 0)``; its ``a`` is named when it fits."""
    live = np.ptp(mag, axis=0) > 0
    ref = np.median(mag)
    if not np.any(live) or np.max(np.abs(mag - ref)) <= _NOT_ROTATION * ref:
        return None
    logm = np.log(np.maximum(mag, 1e-300))
    m = pos - pos[np.argmin(np.abs(pos))]
    if np.all(np.diff(logm[np.argsort(m)], axis=0) * np.sign(logm[-1] - logm[0]) >= -1e-12):
        return None  # monotone in position: an xPos-like trend, judged later
    # |c|^2 = 2 c0 raa + (a^2 - c0^2) for a circle of radius a centred at (c0, 0)
    slope, icpt = np.polyfit(raa.ravel(), (mag**2).ravel(), 1)
    c0 = slope / 2.0
    a2 = icpt + c0 * c0
    words = ""
    if a2 > 0:
        a = float(np.sqrt(a2))
        fit = np.max(np.abs((raa - c0) ** 2 + rba**2 - a2))
        if fit < 1e-6 * max(a2, 1e-300):
            words = (
                f"; it is (1 - a) x + a RoPE(x) with a = {a:.4g} (an identity and a rotation "
                "mixed, e.g. a residual or gate around the rotation)"
            )
    return (
        f"fn is not a rotation: the norm of each pair changes with its angle (magnitudes from "
        f"{float(np.min(mag)):.4g} to {float(np.max(mag)):.4g}), which no rounding of the tables "
        f"does{words}."
    )


def _offset_and_phase(theta, phi0):
    """``(delta, phase)``: the position offset read from the angles at position 0, and the
    per-pair angle at 0 that it leaves unexplained (None when an offset explains them all: a
    RoPE at ``m + delta`` has ``phi_i(0) = delta theta_i`` exactly)."""
    delta, resid = _best_position(theta, phi0)
    if resid <= _PHASE_TOL:
        if abs(delta - round(delta)) < _OFFSET_SNAP:
            delta = float(round(delta))
        return delta, None
    return 0.0, _wrap(phi0)


def _best_position(theta, psi, near: float = 0.0, span: float = 0.0):
    """``(m, residual)``: the position whose angles ``m theta_i`` best explain ``psi``
    (modulo 2 pi), searched from every turn of the slowest pair within ``near +- span``
    (and within its half wavelength when ``span`` is 0), each start refined through faster
    pairs; ``residual`` is the largest wrapped angle left. Of several explanations (commensurate
    frequencies alias) the one nearest ``near`` is taken."""
    live = theta > 0
    if not np.any(live):
        return 0.0, 0.0
    order = np.argsort(theta[live])
    th, ph = theta[live][order], np.asarray(psi)[live][order]
    turns = np.arange(
        math.floor((near - span) * th[0] / _TWO_PI) - 1,
        math.ceil((near + span) * th[0] / _TWO_PI) + 2,
    )
    cands = []
    for k in turns[:_MAX_TURNS]:
        m = _position_offset(th, ph + _TWO_PI * k)
        cands.append((m, float(np.max(np.abs(_wrap(ph - m * th))))))
    fits = [c for c in cands if c[1] <= _PHASE_TOL]
    if fits:  # commensurate frequencies alias: the explanation nearest the given position
        return min(fits, key=lambda c: abs(c[0] - near))
    return min(cands, key=lambda c: c[1])


def _position_map(pos, dphi, theta) -> np.ndarray:
    """Per probed position, the position (relative to 0) its angles ``dphi`` are a rotation
    by (``m`` itself for a RoPE; ``nan`` where no single position explains them to
    :data:`_PHASE_TOL`, as with rounded angles)."""
    out = np.full(len(pos), np.nan)
    for k, m in enumerate(pos):
        est, resid = _best_position(theta, dphi[k], near=float(m), span=abs(float(m)) + 1.0)
        if resid <= _PHASE_TOL:
            out[k] = est
    return out


def _position_offset(theta, phi0) -> float:
    """``delta`` with ``phi_i(0) = delta * theta_i``: read from the slowest pair (unambiguous
    for ``|delta| < pi / theta_min``), then refined over faster pairs, each unwrapped with the
    estimate so far (least squares in ``theta``)."""
    live = theta > 0
    if not np.any(live):
        return 0.0
    order = np.argsort(theta[live])
    th, ph = theta[live][order], phi0[live][order]
    delta, num, den = float(ph[0] / th[0]), 0.0, 0.0
    for t, p in zip(th, ph, strict=True):
        p = p + _TWO_PI * round((delta * t - p) / _TWO_PI)  # [eq:check-unwrap]
        num, den = num + t * p, den + t * t
        delta = num / den
    return float(delta)


def _unwrap_frequencies(positions, dphi):
    """Per-pair frequency from angles relative to position 0, refined over growing positions.

    ``dphi[k, i]`` is the measured angle at ``positions[k]`` minus the one at 0 (wrapped). The
    estimate starts from position 1 (frequencies below pi rad/token are unambiguous there) and
    is refined at each larger power of two whose angle agrees with the prediction to pi/4, and
    skipped at a power of two whose angles are those of another position (a clamped or
    remapped position must not pull the frequencies).
    """
    order = np.argsort(positions)
    pos, dphi = positions[order], dphi[order]
    k1 = np.flatnonzero(pos == 1.0)
    theta = dphi[k1[0]].copy()
    alive = np.ones_like(theta, dtype=bool)
    for k in range(len(pos)):
        m = pos[k]
        if m <= 1.0 or not _is_power_of_two(m):
            continue  # powers of two are exact in every format, so rounded positions cannot bias
        if _moved(theta, dphi[k], m):
            continue
        pred = m * theta
        miss = np.abs(_wrap(dphi[k] - pred))
        alive &= miss < np.pi / 4
        turns = np.round((pred - dphi[k]) / _TWO_PI)
        cand = (dphi[k] + _TWO_PI * turns) / m  # [eq:check-unwrap]
        theta = np.where(alive, cand, theta)
    return theta


def _moved(theta, dphi_m, m: float) -> bool:
    """True when the angles at probed position ``m`` are exactly those of another position."""
    est, resid = _best_position(np.where(theta > 0, theta, 0.0), dphi_m, near=m, span=m)
    return resid <= _PHASE_TOL and abs(est - m) > 0.5


def _is_power_of_two(m: float) -> bool:
    mant, _ = math.frexp(m)
    return mant == 0.5
