"""Stages 1-2: calling the user's function, linearity, and the per-position matrices (from a
callable by the identity probe, from recorded rows by least squares)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

import numpy as np

from .._checks import as_float_array, as_positions
from ..numerics import round_to
from ._base import (
    _ARRAY_NOISE_MAX,
    _ARRAY_NOISE_ULPS,
    _CALL_ELEMENTS,
    _LINEARITY_POSITIONS,
    _LINEARITY_TOL,
    _ROW_TOL,
    MAX_PROBE_POSITION,
    Finding,
    _error,
    _note,
)

# --------------------------------------------------------------------------------------------
# calling the user's function


class _FnFailed(Exception):
    """``fn`` raised (``original``) or returned non-finite values at the positions given."""

    def __init__(self, original: BaseException):
        super().__init__(str(original))
        self.original = original


def _import_peer(name: str):
    """Import a peer library (torch) so that a module of that name in the working directory
    cannot shadow it: the current directory is left out of ``sys.path`` for the import."""
    if name in sys.modules:
        return sys.modules[name]
    cwd = os.path.realpath(os.getcwd())
    saved = list(sys.path)
    sys.path[:] = [p for p in saved if os.path.realpath(p or os.curdir) != cwd]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved


class _Caller:
    """Calls ``fn`` with NumPy arrays, or with torch tensors if NumPy input is refused."""

    def __init__(self, fn: Callable, backend: str):
        if not callable(fn):
            raise TypeError(f"fn must be callable as fn(x, positions), got {type(fn).__name__}")
        if backend not in ("auto", "numpy", "torch"):
            raise ValueError(f"backend must be one of ('auto', 'numpy', 'torch'), got {backend!r}")
        self.fn = fn
        self.backend = backend

    def _torch_call(self, x, pos):
        try:
            torch = _import_peer("torch")
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise TypeError("backend='torch' needs torch installed") from exc
        return self.fn(torch.from_numpy(x), torch.from_numpy(pos.astype(np.int64)))

    def _first_call(self, x, ipos):
        try:
            out = self.fn(x.copy(), ipos.copy())
        except Exception as exc:
            try:
                _import_peer("torch")
            except ImportError:
                raise exc from None
            try:
                out = self._torch_call(x, ipos)
            except Exception:
                raise exc from None  # the NumPy call's error is the informative one
            self.backend = "torch"
        else:
            self.backend = "numpy"
        return out

    def __call__(self, x: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """``fn(x, pos)`` as float64; raises :class:`_FnFailed` when ``fn`` raises later."""
        ipos = pos.astype(np.int64) if np.all(pos == np.round(pos)) else pos
        if self.backend == "auto":
            out = self._first_call(x, ipos)
        else:
            try:
                out = (
                    self._torch_call(x, ipos)
                    if self.backend == "torch"
                    else self.fn(x.copy(), ipos.copy())
                )
            except Exception as exc:
                raise _FnFailed(exc) from exc
        if hasattr(out, "detach"):  # a torch tensor
            out = out.detach().cpu().double().numpy()
        out = np.asarray(out, dtype=np.float64)
        if out.shape != x.shape:
            raise ValueError(
                f"fn must return an array of the input's shape {x.shape} (seq, dim), "
                f"got {out.shape}"
            )
        if not np.all(np.isfinite(out)):
            raise _FnFailed(ValueError("fn returned NaN or inf for finite input"))
        return out


# --------------------------------------------------------------------------------------------
# stage 1: linearity and use of positions (callables)


def _probe_linearity(call: _Caller, d: int) -> list[Finding]:
    """Errors when ``fn`` is not linear in ``x`` or ignores ``positions`` (empty list: fine)."""
    rng = np.random.default_rng(0)
    xa, xb = rng.standard_normal((2, len(_LINEARITY_POSITIONS), d))
    p4 = np.array(_LINEARITY_POSITIONS)
    try:
        fa = call(xa, p4)
        fb, fab = call(xb, p4), call(0.5 * xa - 2.0 * xb, p4)
    except _FnFailed as exc:
        raise exc.original from None  # fn fails at positions 0..3: its own error is the answer
    lin_err = np.max(np.abs(fab - (0.5 * fa - 2.0 * fb))) / (np.max(np.abs(fab)) + 1e-300)
    if lin_err > _LINEARITY_TOL:
        return [
            _error(
                f"fn is not linear in x (relative deviation {lin_err:.2g}): a RoPE multiplies "
                "each pair by a rotation; look for a bias, a normalisation or a nonlinearity."
            )
        ]
    row = np.tile(rng.standard_normal(d), (4, 1))
    same = call(row, np.full(4, 3.0))
    if np.max(np.abs(same - same[0])) > _ROW_TOL * np.max(np.abs(same)):
        return [
            _error(
                "fn ignores the positions it is given: the same vector at the same position "
                "gives different outputs in different rows, so it rotates by the row index "
                "(arange(seq)). Use the positions argument (position_ids) for the angles."
            )
        ]
    return []


# --------------------------------------------------------------------------------------------
# stage 2: per-position matrices


def _matrices(call: _Caller, positions: np.ndarray, dim: int) -> np.ndarray:
    """``R[k]`` is the (dim, dim) map at ``positions[k]``: out row j = R e_j, so R = out.T.

    Positions are probed in calls of at most ``_CALL_ELEMENTS`` input entries each."""
    eye = np.eye(dim)
    per_call = max(1, _CALL_ELEMENTS // (dim * dim))
    R = np.empty((len(positions), dim, dim))
    for start in range(0, len(positions), per_call):
        chunk = positions[start : start + per_call]
        x = np.tile(eye, (len(chunk), 1))  # (P*d, d)
        out = call(x, np.repeat(chunk, dim)).reshape(len(chunk), dim, dim)  # (P, d_in, d_out)
        R[start : start + len(chunk)] = np.transpose(out, (0, 2, 1))  # (P, d_out, d_in)
    return R


def _read_matrices(call: _Caller, pos: np.ndarray, d: int, explicit: bool):
    """Matrices at every position where ``fn`` answers; returns ``(pos, R, findings)``.

    A function that fails at some positions (a cos/sin cache shorter than the probe) is
    probed at the positions where it answers, and the others are named in a finding (an error
    when the caller chose the positions, a note for the default probe)."""
    try:
        return pos, _matrices(call, pos, d), []
    except _FnFailed:
        pass
    answered, failed, first_error = [], [], None
    for m in pos:
        try:
            answered.append(_matrices(call, np.array([m]), d)[0])
        except _FnFailed as exc:
            failed.append(m)
            first_error = first_error or exc.original
    keep = np.array([m not in failed for m in pos])
    if not (np.any(pos[keep] == 0) and np.any(pos[keep] == 1)):
        raise first_error
    lo = min(failed)
    what = f"{type(first_error).__name__}: {first_error}"
    text = (
        f"fn failed at {len(failed)} of the {len(pos)} probed positions, the smallest {lo:g} "
        f"({what}); only positions below {lo:g} were probed"
        if all(m >= lo for m in pos[~keep]) and np.all(pos[keep] < lo)
        else f"fn failed at positions {failed[:5]} ({what}); the others were probed"
    )
    if explicit:
        return pos[keep], np.stack(answered), [_error(text + ". Size its cache for them.")]
    return pos[keep], np.stack(answered), [_note(text + ". Pass positions= to choose them.")]


# Input rows whose QR factor has a diagonal entry below this fraction of the largest do not
# determine the map (float64 leaves ~1e-16; independent random rows give ~1e-2 or more).
_RANK_TOL = 1e-10


def _least_squares(xm: np.ndarray, ym: np.ndarray) -> np.ndarray | None:
    """``S`` with ``ym ~ xm @ S`` by QR (accurate to ~cond(xm) eps), or None when the rows do
    not span the feature space. (An SVD per position, as in ``lstsq``, costs several times
    more.)"""
    q, r = np.linalg.qr(xm)  # xm (n, d) = q (n, d) @ r (d, d)
    diag = np.abs(np.diag(r))
    if np.min(diag) < _RANK_TOL * np.max(diag):
        return None
    return np.linalg.solve(r, q.T @ ym)


# Unit roundoff of each format rounding can leave visible in recorded outputs, coarsest first.
_VISIBLE_EPS = (("bfloat16", 2.0**-7), ("float16", 2.0**-10), ("float32", 2.0**-23))


def _visible_eps(ys: np.ndarray) -> float:
    """Machine epsilon of the coarsest format every output value is exactly representable in:
    the rounding the data show, whatever dtype stores them (float32 results saved as float64
    carry float32's rounding)."""
    finite = ys[np.isfinite(ys)]
    for fmt, eps in _VISIBLE_EPS:
        if np.array_equal(np.asarray(round_to(finite, fmt), dtype=np.float64), finite):
            return eps
    return float(np.finfo(np.float64).eps)


def _matrices_from_arrays(positions, x, y, d: int):
    """Least-squares matrices from rows ``y = R_m x`` grouped by position.

    Returns ``(pos, R, lin_err, noise, findings)``: positions with at least ``d`` rows (0 and 1
    among them), their (d, d) maps, the largest relative residual of the fits (0 for a linear
    map), the relative noise floor of the output dtype, and notes on skipped positions."""
    pos_all = as_positions(positions, maximum=MAX_PROBE_POSITION)
    xs = as_float_array(x, "x", ndim=2)
    ys = as_float_array(y, "y", ndim=2)
    for name, a in (("x", xs), ("y", ys)):
        if a.ndim != 2 or a.shape != (len(pos_all), d):
            raise ValueError(
                f"{name} must have shape (len(positions), dim) = "
                f"({len(pos_all)}, {d}), got {a.shape}"
            )
        if a.dtype.kind not in "fiu" or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite real numbers")
    xs, ys = xs.astype(np.float64), ys.astype(np.float64)
    noise = min(_ARRAY_NOISE_ULPS * _visible_eps(ys), _ARRAY_NOISE_MAX)
    kept, mats, lin_err, short = [], [], 0.0, []
    for m in np.unique(pos_all):
        rows = pos_all == m
        xm, ym = xs[rows], ys[rows]
        sol = _least_squares(xm, ym) if len(xm) >= d else None  # ym = xm @ R^T
        if sol is None:
            short.append(float(m))
            continue
        resid = np.max(np.abs(xm @ sol - ym)) / (np.max(np.abs(ym)) + 1e-300)
        lin_err = max(lin_err, float(resid))
        kept.append(float(m))
        mats.append(sol.T)
    pos = np.array(kept)
    if not (np.any(pos == 0) and np.any(pos == 1)):
        raise ValueError(
            f"positions 0 and 1 must each have at least dim={d} linearly independent rows "
            "(frequencies are read from them)"
        )
    notes = []
    if short:
        notes.append(
            _note(
                f"{len(short)} position(s) with fewer than dim={d} independent "
                f"rows were not used (e.g. {short[:3]})."
            )
        )
    return pos, np.stack(mats), lin_err, noise, notes
