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
        scale = float(np.median(mag[:, rotating]))
    delta = _position_offset(theta, phi[k0])
    if abs(delta - round(delta)) < _OFFSET_SNAP:
        delta = float(round(delta))
    return _Angles(blocks, phi, mag, trend, scale, direction, theta, delta, struct_err), [], None


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
    is refined at each larger power of two whose angle agrees with the prediction to pi/4.
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
        pred = m * theta
        miss = np.abs(_wrap(dphi[k] - pred))
        alive &= miss < np.pi / 4
        turns = np.round((pred - dphi[k]) / _TWO_PI)
        cand = (dphi[k] + _TWO_PI * turns) / m  # [eq:check-unwrap]
        theta = np.where(alive, cand, theta)
    return theta


def _is_power_of_two(m: float) -> bool:
    mant, _ = math.frexp(m)
    return mant == 0.5
