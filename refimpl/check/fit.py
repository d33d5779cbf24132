"""Stage 5: the frequency profile -- continuous fit and scaling families."""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
from collections.abc import Callable

import numpy as np

from ._base import (
    _COMMON_BASES,
    _FAMILY_GRID,
    _FAMILY_TOL,
    _GEOMETRIC_RESID,
    _HEAD_RATIO_TOL,
    _NOT_FITTED,
    _ORIGIN_TOL,
    _PER_PAIR_SLACK,
    _SCALING_FACTORS,
    _SNAP_REL,
    _SNAP_TAIL,
)

# --------------------------------------------------------------------------------------------
# stage 5: the frequency profile -- continuous fit and scaling families


@dataclasses.dataclass
class _Profile:
    """What the frequencies are: a geometric profile (base, origin, linear factor) or a
    scaling family, with the identified frequencies (bugs included)."""

    geometric: bool
    base: float | None  # reported base (round when a round value fits as well)
    base_fit: float | None  # continuous fit
    origin_fit: float | None
    index_origin: int | None
    scaling: str
    params: dict
    theta: np.ndarray | None  # (h,) the identified profile
    family_scale: float | None  # the family's default attention factor
    resid: float
    notes: list


def _fit_geometric(theta, r, index=None):
    """Least-squares fit of log theta_i = -(2 (i + o) / r) log b; returns (b, o, max residual).

    ``index`` are the pair indices of ``theta`` (default 0..h-1)."""
    i = np.arange(len(theta), dtype=np.float64) if index is None else np.asarray(index, float)
    if len(theta) < 2 or np.any(theta <= 0):
        return None, None, np.inf
    y = np.log(theta)
    beta, alpha = np.polyfit(i, y, 1)
    if beta >= 0:
        return None, None, np.inf
    b = math.exp(-beta * r / 2.0)
    o = alpha / beta
    resid = float(np.max(np.abs(y - (alpha + beta * i))))  # [eq:check-fit]
    return b, o, resid


def _misfit(theta, model) -> float:
    return float(np.max(np.abs(theta / model - 1.0)))


def _round_candidates(value: float, common=()) -> list:
    return list(common) + [float(f"{value:.{k}g}") for k in range(1, 8)]


def _snap(value: float, misfit: Callable, common=()) -> float:
    """A round value (``common`` first, then ``value`` to 1..7 digits) that explains the data as
    well as ``value`` itself, else ``value``."""
    allowed = max(_SNAP_REL, 3.0 * misfit(value))
    for c in _round_candidates(value, common):
        if c > 0 and misfit(c) <= allowed:
            return c
    return value


def _geometric(r, base, index, origin=0.0, factor=1.0):
    return base ** (-2.0 * (np.asarray(index, float) + origin) / r) / factor  # [eq:check-fit]


def _fit_profile(theta, r, exp_base) -> _Profile:
    """Stage 5: the frequency profile of the rotating pairs (``theta > 0``) of the frame."""
    nz = theta > 0
    idx = np.flatnonzero(nz)
    tf = theta[nz]
    notes: list = []
    empty = _Profile(False, None, None, None, None, "unknown", {}, None, None, np.inf, notes)
    if len(tf) == 0 or np.any(theta < 0):
        return empty
    if len(tf) == 1:
        return _Profile(False, None, None, None, None, "unknown", {}, theta.copy(), None, 0.0, [])
    b_fit, o_fit, resid = _fit_geometric(tf, r, idx)
    zeros = "proportional" if len(idx) < len(theta) else "none"
    if b_fit is not None and resid < _GEOMETRIC_RESID:
        return _geometric_profile(theta, idx, r, b_fit, o_fit, resid, exp_base, zeros)
    fam = _match_family(theta, r, exp_base) or _per_pair_factors(theta, r, exp_base)
    if fam is not None:
        return fam
    return dataclasses.replace(empty, base_fit=b_fit, origin_fit=o_fit, resid=resid)


def _per_pair_factors(theta, r, exp_base) -> _Profile | None:
    """Per-pair divisors ``lambda_i = b^(-2i/r) / theta_i`` of a round base (LongRoPE's
    factors, GGUF's ``rope_freqs``), when they are at least 1 and never decrease with the pair
    index (interpolation grows toward the slow pairs); else None. Random frequencies fail it."""
    if np.any(theta <= 0):
        return None
    i = np.arange(len(theta))
    for c in (exp_base,) if exp_base else _COMMON_BASES:
        lam = _geometric(r, c, i) / theta
        rising = np.all(lam[1:] >= lam[:-1] * (1.0 - _PER_PAIR_SLACK))
        if np.all(lam >= 1.0 - _PER_PAIR_SLACK) and rising:
            params = {"factors": lam}
            return _Profile(False, c, None, 0.0, 0, "freq_factors", params, theta.copy(), None,
                            0.0, [])  # fmt: skip
    return None


def _geometric_profile(theta, idx, r, b_fit, o_fit, resid, exp_base, zeros) -> _Profile:
    """Base and index origin, or base and linear factor, of a geometric profile."""
    tf = theta[idx]
    common = ((exp_base,) if exp_base else ()) + _COMMON_BASES
    o_round = round(o_fit)
    full = np.zeros_like(theta)
    if abs(o_fit - o_round) < _ORIGIN_TOL and o_round in (0, 1):
        base = _snap(b_fit, lambda c: _misfit(tf, _geometric(r, c, idx, o_round)), common)
        full[idx] = _geometric(r, base, idx, o_round)
        prof = _Profile(True, base, b_fit, o_fit, int(o_round), zeros, {}, full, None, resid, [])
        if o_round == 0 and zeros == "none":
            ntk = _match_ntk(base, r, exp_base)
            if ntk is not None:
                prof.scaling, prof.params = "ntk", ntk
        return prof
    # theta_i = b^(-2i/r) / s: position interpolation by the factor s, fitted continuously
    s_fit = math.exp(float(np.mean(np.log(_geometric(r, b_fit, idx) / tf))))
    base = _snap(b_fit, lambda c: _misfit(tf, _geometric(r, c, idx, 0.0, s_fit)), common)
    factor = _snap(s_fit, lambda s: _misfit(tf, _geometric(r, base, idx, 0.0, s)), _SCALING_FACTORS)
    full[idx] = _geometric(r, base, idx, 0.0, factor)
    name = "linear" if zeros == "none" else "proportional"
    return _Profile(True, base, b_fit, o_fit, 0, name, {"factor": factor}, full, None, resid, [])


def _match_ntk(b, r, base):
    """NTK-aware scaling is geometric with base ``base * factor**(r / (r - 2))``: the factor
    and original base that explain ``b``, or None. Without an expected base, only a fitted base
    that is not itself a common one is explained this way."""
    if base is not None:
        cands = (base,)
    elif b in _COMMON_BASES:
        return None
    else:
        cands = _COMMON_BASES
    for c in cands:
        if b <= c or r <= 2:
            continue
        s = (b / c) ** ((r - 2) / r)  # inverse of the NTK base change
        for f in _SCALING_FACTORS:
            if abs(s / f - 1.0) < _FAMILY_TOL:
                return {"factor": f, "original_base": c}
    return None


def _unscaled_head(tf) -> int:
    """Number of leading pairs whose consecutive frequency ratios agree (the unscaled band)."""
    q = tf[1:] / tf[:-1]
    same = np.abs(q / q[0] - 1.0) < _HEAD_RATIO_TOL
    return 1 + (len(q) if np.all(same) else int(np.argmin(same)))


def _family_methods():
    from ..scaling import ROPE_SCALINGS

    return [(n, m) for n, m in ROPE_SCALINGS.items() if n not in _NOT_FITTED]


def _grid(method) -> list[dict]:
    """Parameter combinations of ``_FAMILY_GRID`` that ``method`` accepts (the parameter
    names of a scaling record's ``keys`` and ``defaults``, else its signature)."""
    keys = getattr(method, "keys", None)
    if isinstance(keys, dict) or hasattr(keys, "values"):
        accepted = set(keys.values()) | set(getattr(method, "defaults", {}) or {})
    else:
        try:
            accepted = set(inspect.signature(method).parameters)
        except (TypeError, ValueError):
            return []
    axes = []
    for keys, values in _FAMILY_GRID.items():
        names = keys if isinstance(keys, tuple) else (keys,)
        if all(n in accepted for n in names):
            axes.append(
                [dict(zip(names, v if isinstance(v, tuple) else (v,), strict=True)) for v in values]
            )
    return [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*axes)]


def _family_candidates(method, r, base, factor):
    """``(params, ScaledFrequencies)`` over the grid around a fitted base and factor."""
    for params in _grid(method):
        params = dict(params, factor=factor)
        try:
            yield params, method(dim=r, base=base, **params)
        except (TypeError, ValueError):
            continue


def _match_family(theta, r, exp_base) -> _Profile | None:
    """A scaling family of the registry that reproduces a non-geometric profile: base from the
    unscaled head, factor from the fully interpolated tail, the rest from the grid."""
    if np.any(theta <= 0) or len(theta) < 4 or abs(theta[0] - 1.0) > _HEAD_RATIO_TOL:
        return None  # the families keep pair 0 at 1 rad/token
    head = _unscaled_head(theta)
    if head < 2:
        return None
    b_head = float(theta[1] ** (-r / 2.0))
    i = np.arange(len(theta))
    base = exp_base or _snap(
        b_head, lambda c: _misfit(theta[:head], _geometric(r, c, i[:head])), _COMMON_BASES
    )
    s_tail = float(_geometric(r, base, i[-1:])[0] / theta[-1])
    factor = next(
        (
            c
            for c in _round_candidates(s_tail, _SCALING_FACTORS)
            if abs(c / s_tail - 1) < _SNAP_TAIL
        ),
        s_tail,
    )
    best = None
    for key, method in _family_methods():
        name = getattr(method, "family", None) or key
        fit = getattr(method, "fit", None)
        found = fit(theta, dim=r, base=base, tol=_FAMILY_TOL) if fit is not None else None
        cands = (
            [(found, method(dim=r, base=base, **found))]
            if found
            else _family_candidates(method, r, base, factor)
        )
        for params, res in cands:
            inv = np.asarray(res.inv_freq, float)
            if inv.shape != theta.shape:
                continue
            err = _misfit(theta, inv)
            if best is None or err < best[0]:
                best = (err, name, params, inv, float(res.attention_scaling))
    if best is None or best[0] > _FAMILY_TOL:
        return None
    err, name, params, inv, scale = best
    return _Profile(False, base, b_head, 0.0, 0, name, params, inv, scale, err, [])
