"""Shared argument validation (floor 1: imports nothing from refimpl).

Every public function validates its arguments here so that the messages are uniform:
each names the argument and states the rule it broke.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

PAIRINGS = ("half", "interleaved")


def check_dim(dim, name: str = "dim", *, even: bool = True) -> int:
    """Return ``dim`` as an int after checking it is a positive (even) integer."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(dim).__name__} {dim!r}")
    dim = int(dim)
    if dim <= 0:
        raise ValueError(f"{name} must be positive, got {dim}")
    if even and dim % 2:
        raise ValueError(f"{name} must be even (features are rotated in pairs), got {dim}")
    return dim


def check_count(n, name: str) -> int:
    """Return ``n`` as an int after checking it is a non-negative integer."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(n).__name__} {n!r}")
    n = int(n)
    if n < 0:
        raise ValueError(f"{name} must be non-negative, got {n}")
    return n


def check_positive_int(n, name: str) -> int:
    """Return ``n`` as an int after checking it is a positive integer."""
    n = check_count(n, name)
    if n == 0:
        raise ValueError(f"{name} must be positive, got 0")
    return n


def check_real(value, name: str) -> float:
    """Return ``value`` as a finite Python float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def check_base(base, name: str = "base") -> float:
    """Return the RoPE/sinusoid base as a float; it must be finite and > 1."""
    base = check_real(base, name)
    if base <= 1.0:
        raise ValueError(
            f"{name} must be greater than 1 (frequencies base**(-2i/d) must decrease), got {base}"
        )
    return base


def check_positive(value, name: str) -> float:
    """Return ``value`` as a float; it must be finite and > 0."""
    value = check_real(value, name)
    if value <= 0.0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def check_pairing(pairing) -> str:
    """Return ``pairing`` after checking it is one of :data:`PAIRINGS`."""
    if not isinstance(pairing, str):
        raise TypeError(f"pairing must be a string, one of {PAIRINGS}, got {pairing!r}")
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
    return pairing


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` after checking it is one of ``choices``."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def as_float_array(
    x, name: str, *, ndim: int | None = None, min_ndim: int | None = None, finite: bool = True
):
    """Convert ``x`` to a floating array, keeping float16/32/64 and turning anything else into
    float64. Rejects complex, non-numeric and (unless ``finite=False``, for callers that check
    finiteness themselves block by block) non-finite input."""
    arr = np.asarray(x)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if min_ndim is not None and arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}"
        )
    if finite and not all_finite(arr):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


# Entries per row of the matrix-vector products that sum blocks for finiteness checks: long
# enough for BLAS to run at full speed, short enough not to start threads for one block.
_SUM_ROW = 4096
_ONES: dict = {}


def _ones_row(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype not in _ONES:
        ones = np.ones(_SUM_ROW, dtype)
        ones.flags.writeable = False
        _ONES[dtype] = ones
    return _ONES[dtype]


def _as_rows(a):
    """``a`` as a 2-D view whose rows are contiguous, or None: a C-contiguous array becomes one
    row; a 3-D block (k, m, r) whose (m, r) parts are contiguous becomes k rows."""
    if a.flags.c_contiguous:
        return a.reshape(1, -1)
    if a.ndim == 3 and a.strides[2] == a.itemsize and a.strides[1] == a.shape[2] * a.itemsize:
        return a.reshape(a.shape[0], -1)
    return None


def sum_is_finite(a) -> bool:
    """True if the sum of the entries of the floating array ``a`` is finite.

    A finite sum proves every entry finite (NaN and inf propagate into any sum they enter, and
    an infinite partial sum never becomes finite again); a non-finite sum, which finite entries
    can also give by overflow, proves nothing, so callers then test entry by entry. float32 and
    float64 arrays made of contiguous rows (see ``_as_rows``) are summed in pieces of
    ``_SUM_ROW`` entries as matrix-vector products with ones (BLAS: about twice as fast as
    ``np.sum`` and several times faster than ``np.isfinite(a).all()``, with no temporary);
    anything else with ``np.sum``."""
    rows = _as_rows(a) if a.dtype in (np.float32, np.float64) else None
    with np.errstate(over="ignore", invalid="ignore"):
        if rows is None:
            acc = np.float32 if a.dtype == np.float16 else None  # float16 sums overflow early
            return bool(np.isfinite(np.sum(a, dtype=acc)))
        k, n = rows.shape
        q = n // _SUM_ROW * _SUM_ROW
        total = np.sum(rows[:, q:])
        if q:
            pieces = rows[:, :q].reshape(k, q // _SUM_ROW, _SUM_ROW)
            total += np.sum(np.matmul(pieces, _ones_row(a.dtype)))
    return bool(np.isfinite(total))


def all_finite(arr) -> bool:
    """True if every entry of the floating array ``arr`` is finite."""
    return sum_is_finite(arr) or bool(np.all(np.isfinite(arr)))


def as_positions(positions, name: str = "positions") -> np.ndarray:
    """Return positions as a 1-D float64 array (ints and floats accepted; finite only).

    A Python or NumPy scalar becomes a length-1 array.
    """
    arr = np.asarray(positions)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be integers or reals, got dtype {arr.dtype}")
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (seq,), got shape {arr.shape}")
    out = arr.astype(np.float64)
    if arr.dtype.kind in "iu" and arr.size and np.max(np.abs(arr)) > 2**53:
        raise ValueError(f"{name} must be below 2**53 in magnitude to be exact in float64")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return out


def as_inv_freq(inv_freq, name: str = "inv_freq") -> np.ndarray:
    """Return inverse frequencies as a 1-D float64 array of finite, positive values."""
    arr = as_float_array(inv_freq, name, ndim=1).astype(np.float64)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be positive")
    return arr


def result_dtype(*arrays) -> np.dtype:
    """The floating dtype a result keeps: float16/32/64 inputs keep theirs (the widest of them);
    anything else gives float64."""
    dts = [np.asarray(a).dtype for a in arrays]
    floats = [d for d in dts if d.kind == "f"]
    if not floats:
        return np.dtype(np.float64)
    return np.result_type(*floats)


def check_out(out, shape, dtype, name: str = "out"):
    """Check a user-supplied output array."""
    if out is None:
        return None
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {out.shape}")
    if out.dtype != dtype:
        raise ValueError(f"{name} must have dtype {dtype}, got {out.dtype}")
    return out
