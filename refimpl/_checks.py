"""Shared argument validation (floor 1: imports nothing from refimpl).

Every public function validates its arguments here so that the messages are uniform:
each names the argument and states the rule it broke. One vocabulary serves the package:

- flags (``check_flag``) are ``bool`` or ``numpy.bool_``, never "anything truthy";
- integers (``check_int`` and its forms ``check_count``, ``check_positive_int``, ``check_dim``)
  refuse booleans; they refuse floats unless ``integral_float=True`` (configs, where JSON may
  write ``8.0``), and then still refuse ``8.5``, NaN and inf;
- reals (``check_real`` and its forms) refuse booleans, strings and complex numbers, and NaN
  and inf unless the caller says a non-finite value means something;
- arrays (``as_float_array``, ``as_positions``, ``as_inv_freq``) refuse object, complex and
  string dtypes and ragged nested lists with the argument's name; boolean *arrays* are data
  (0/1) by design, a boolean *scalar* position is refused;
- sizes are bounded up front by the limits below, so that a mistyped size fails at once with
  the limit in the message instead of running for hours or filling memory or the disk.

Limits (each named once, with the reason for its value):

- :data:`MAX_DIM` = 2**16 features: the widest hidden size of released models is 16384 and
  head dimensions are at most a few hundred; 65536 leaves a factor of four above that.
- :data:`MAX_POSITION` = 2**31 tokens: the largest position for which the package states
  accuracy guarantees (``method="accurate"``) and the largest row count of a generated table.
  It covers 10M-token contexts with a margin of 200 and matches engines' int32 position ids.
- :data:`EXACT_INTEGER` = 2**53: positions above it in magnitude are refused, because float64
  cannot hold consecutive integers there (an int64 position id would be rounded silently).
- :data:`MAX_DPS` = 1000 decimal digits for the mpmath oracle: float64 verification needs
  about 17 digits plus the digits of the largest angle (16 for 2**53), so 50 is the default and
  1000 is twenty times that; the cost of an entry grows faster than linearly in the digits, so
  a mistyped ``dps=10**6`` would run for hours.
- :data:`MAX_TABLE_ELEMENTS` = 2**31 entries per table: a 2**24-position table with 128 pairs
  (head dimension 256) is exactly 2**31 entries (16 GiB in float64); a 10M-token context of
  head dimension 128 is 6.4e8. Anything larger is a mistyped size.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

PAIRINGS = ("half", "interleaved")

# Largest feature dimension accepted (see the module docstring for the reason).
MAX_DIM = 2**16
# Largest position (and table row count) with stated guarantees: 10M-token contexts x 200.
MAX_POSITION = 2**31
# Largest magnitude of an exactly representable run of integers in float64.
EXACT_INTEGER = 2**53
# Largest mpmath precision (decimal digits) the oracle accepts.
MAX_DPS = 1000
# Largest number of entries in one generated table (2**24 positions x 128 pairs).
MAX_TABLE_ELEMENTS = 2**31

_INT_TYPES = (numbers.Integral,)
_BOOL_TYPES = (bool, np.bool_)


def _describe(value) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def check_flag(value, name: str) -> bool:
    """Return ``value`` as a Python bool; it must be ``True``/``False`` (or ``numpy.bool_``).

    A string such as ``"no"`` or a number such as ``0`` is refused: "truthy" would turn
    ``causal="no"`` into ``causal=True``.
    """
    if not isinstance(value, _BOOL_TYPES):
        raise TypeError(f"{name} must be a boolean (True or False), got {_describe(value)}")
    return bool(value)


def check_int(
    value,
    name: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    integral_float: bool = False,
) -> int:
    """Return ``value`` as a Python int in ``[minimum, maximum]``.

    Booleans are refused (they are flags, not numbers). Floats are refused with TypeError
    unless ``integral_float=True``; then an integral finite float (``8.0``) is accepted and
    ``8.5``, NaN or inf raise ValueError. The bounds are inclusive; ``None`` means unbounded.
    """
    if isinstance(value, _BOOL_TYPES):
        raise TypeError(f"{name} must be an integer, got a boolean {value!r}")
    if isinstance(value, numbers.Real) and not isinstance(value, _INT_TYPES):
        if not integral_float:
            raise TypeError(f"{name} must be an integer, got {_describe(value)}")
        fval = float(value)
        if not np.isfinite(fval) or not fval.is_integer():
            raise ValueError(f"{name} must be an integer, got {fval!r}")
        value = int(fval)
    elif not isinstance(value, _INT_TYPES):
        raise TypeError(f"{name} must be an integer, got {_describe(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        rule = {0: "non-negative", 1: "positive"}.get(minimum, f"at least {minimum}")
        raise ValueError(f"{name} must be {rule}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum} (the package's limit), got {value}")
    return value


def check_dim(
    dim,
    name: str = "dim",
    *,
    even: bool = True,
    maximum: int = MAX_DIM,
    integral_float: bool = False,
) -> int:
    """Return ``dim`` as an int after checking it is a positive (even) integer at most
    ``maximum`` (default :data:`MAX_DIM` = 2**16)."""
    dim = check_int(dim, name, minimum=1, maximum=maximum, integral_float=integral_float)
    if even and dim % 2:
        raise ValueError(f"{name} must be even (features are rotated in pairs), got {dim}")
    return dim


def check_count(n, name: str, *, maximum: int | None = None, integral_float: bool = False) -> int:
    """Return ``n`` as an int after checking it is a non-negative integer (at most
    ``maximum`` when given)."""
    return check_int(n, name, minimum=0, maximum=maximum, integral_float=integral_float)


def check_positive_int(
    n, name: str, *, maximum: int | None = None, integral_float: bool = False
) -> int:
    """Return ``n`` as an int after checking it is a positive integer (at most ``maximum``
    when given)."""
    return check_int(n, name, minimum=1, maximum=maximum, integral_float=integral_float)


def check_real(value, name: str, *, finite: bool = True) -> float:
    """Return ``value`` as a Python float.

    Booleans, strings, complex numbers and arrays are refused (TypeError); NaN is always
    refused and inf too unless ``finite=False`` (ValueError).
    """
    if isinstance(value, _BOOL_TYPES) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_describe(value)}")
    value = float(value)
    if np.isnan(value) or (finite and not np.isfinite(value)):
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


def check_nonnegative(value, name: str) -> float:
    """Return ``value`` as a float; it must be finite and >= 0."""
    value = check_real(value, name)
    if value < 0.0:
        raise ValueError(f"{name} must be non-negative, got {value}")
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


def check_axis(axis, ndim: int, name: str = "axis") -> int:
    """Return ``axis`` normalised to ``0 .. ndim-1``; it must be an integer in
    ``[-ndim, ndim)``."""
    axis = check_int(axis, name)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name} must be in [{-ndim}, {ndim}) for a {ndim}-D array, got {axis}")
    return axis % ndim


def check_dps(dps, name: str = "dps") -> int:
    """Return the mpmath precision (decimal digits) as an int in ``[1, MAX_DPS]``."""
    return check_positive_int(dps, name, maximum=MAX_DPS)


def check_table_size(rows: int, cols: int, name: str = "table") -> int:
    """Return ``rows * cols`` after checking it is at most :data:`MAX_TABLE_ELEMENTS`."""
    total = int(rows) * int(cols)
    if total > MAX_TABLE_ELEMENTS:
        raise ValueError(
            f"{name} would have {rows} x {cols} = {total} entries, above the limit "
            f"MAX_TABLE_ELEMENTS = {MAX_TABLE_ELEMENTS} (2**31 entries per table)"
        )
    return total


def check_no_alias(out, *inputs, name: str = "out") -> None:
    """Raise ValueError if ``out`` shares memory with any of ``inputs`` (arrays or None)."""
    if out is None:
        return
    for arr in inputs:
        if isinstance(arr, np.ndarray) and np.shares_memory(out, arr):
            raise ValueError(f"{name} must not share memory with the inputs")


def _limit(maximum) -> str:
    if maximum == EXACT_INTEGER:
        return "must be below 2**53 in magnitude to be exact in float64"
    return f"must be at most {maximum:g} in magnitude"


def _asarray(x, name: str) -> np.ndarray:
    """``np.asarray(x)`` with NumPy's errors for ragged nested lists and unconvertible
    objects turned into messages that name the argument."""
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"{name} must be a rectangular array of numbers (ragged nested lists and mixed "
            f"objects are refused): {exc}"
        ) from None


def as_real_array(x, name: str) -> np.ndarray:
    """``x`` as an array of a real numeric dtype (bool, int, uint, float), unconverted;
    object, complex, string and ragged input are refused with ``name`` in the message."""
    arr = _asarray(x, name)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    return arr


def as_float_array(
    x, name: str, *, ndim: int | None = None, min_ndim: int | None = None, finite: bool = True
):
    """Convert ``x`` to a floating array, keeping float16/32/64 and turning anything else into
    float64. Rejects complex, non-numeric, ragged and (unless ``finite=False``, for callers
    that check finiteness themselves block by block) non-finite input."""
    arr = as_real_array(x, name)
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


def as_positions(positions, name: str = "positions", *, maximum: float = EXACT_INTEGER):
    """Return positions as a 1-D float64 array (ints and floats accepted; finite only).

    A Python or NumPy number becomes a length-1 array; a boolean *scalar* is refused (it is a
    flag passed by mistake), while boolean arrays are accepted as 0/1 data. Every position
    must be at most ``maximum`` in magnitude (default :data:`EXACT_INTEGER` = 2**53: above it
    float64 cannot hold consecutive integers, so an int64 position id would be rounded
    silently).
    """
    arr = _asarray(positions, name)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be integers or reals, got dtype {arr.dtype}")
    if arr.ndim == 0:
        if arr.dtype.kind == "b":
            raise TypeError(f"{name} must be a number or an array of numbers, got {positions!r}")
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (seq,), got shape {arr.shape}")
    if arr.dtype.kind in "iu" and arr.size:
        # Compare the extremes themselves: np.abs(-2**63) overflows back to -2**63.
        lo, hi = int(arr.min()), int(arr.max())
        if max(-lo, hi) > maximum:
            raise ValueError(f"{name} {_limit(maximum)}, got {lo if -lo > hi else hi}")
    out = arr.astype(np.float64)
    if not all_finite(out):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    if arr.dtype.kind == "f" and out.size:
        big = float(np.max(np.abs(out)))
        if big > maximum:
            raise ValueError(f"{name} {_limit(maximum)}, got {big:g}")
    return out


def as_positions_or_count(
    value, name: str = "positions_or_count", *, max_count: int = MAX_POSITION
) -> tuple[int | None, np.ndarray | None]:
    """Read an argument that is either a count ``n`` (positions ``0 .. n-1``) or positions.

    The rule: a *scalar* (a Python or NumPy integer, or a 0-d integer array) is a count, at
    most ``max_count`` (default :data:`MAX_POSITION`); any sequence or array of at least one
    dimension is explicit positions (:func:`as_positions`). A float or boolean scalar is
    refused: ``4.0`` would be ambiguous (a count of four, or the single position 4), so one
    position is written ``[4.0]``.

    Returns
    -------
    (count, None) or (None, positions)
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        if value.dtype.kind not in "iu":
            raise TypeError(
                f"{name} as a scalar is a count and must be an integer, got a 0-d array of "
                f"dtype {value.dtype} (write one position as a list, [p])"
            )
        value = value[()]
    if isinstance(value, _BOOL_TYPES):
        raise TypeError(f"{name} must be a count or positions, got a boolean {value!r}")
    if isinstance(value, _INT_TYPES):
        n = int(value)
        if n < 0:
            raise ValueError(f"{name} must be a non-negative count, got {n}")
        if n > max_count:
            raise ValueError(
                f"{name} must be a count of at most {max_count} (MAX_POSITION), got {n}"
            )
        return n, None
    if isinstance(value, numbers.Number):
        raise TypeError(
            f"{name} as a scalar is a count and must be an integer, got {_describe(value)} "
            f"(write one position as a list, [p])"
        )
    return None, as_positions(value, name)


def as_inv_freq(inv_freq, name: str = "inv_freq", *, allow_zero: bool = False) -> np.ndarray:
    """Return inverse frequencies as a non-empty 1-D float64 array of finite values, all
    positive (or, with ``allow_zero=True``, non-negative: zero frequencies are the
    pass-through pairs of proportional RoPE)."""
    arr = as_float_array(inv_freq, name, ndim=1).astype(np.float64)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if allow_zero:
        if np.any(arr < 0):
            raise ValueError(f"{name} must be non-negative")
    elif np.any(arr <= 0):
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


def as_exact_integers(values, name: str, *, ndim: tuple[int, ...] | None = None) -> np.ndarray:
    """``values`` (integers of any dtype) as int64, each within ``+-EXACT_INTEGER`` (2**53).

    The range is checked on the values themselves, before any conversion: a uint64 above
    2**63 would wrap to a negative int64, and an int64 beyond 2**53 would be rounded once it
    meets a float64 position."""
    arr = _asarray(values, name)
    if arr.dtype == object or arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers (any integer dtype), got dtype {arr.dtype}")
    if ndim is not None and arr.ndim not in ndim:
        dims = " or ".join(map(str, ndim))
        raise ValueError(f"{name} must have {dims} dimension(s), got shape {arr.shape}")
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < -EXACT_INTEGER or hi > EXACT_INTEGER:
            raise ValueError(
                f"{name} must lie within +-2**53 (exact in float64), got values from {lo} to {hi}"
            )
    return arr.astype(np.int64)


def check_exact_range(low, high, name: str) -> None:
    """Refuse a result whose values would leave ``+-EXACT_INTEGER`` (2**53): ``low`` and
    ``high`` are its exact extremes as Python numbers, computed before any fixed-width sum."""
    if low < -EXACT_INTEGER or high > EXACT_INTEGER:
        worst = low if -low > high else high
        raise ValueError(
            f"{name} must lie within +-2**53 (exact in float64 and int64 arithmetic), got {worst}"
        )


def check_keywords(public_name: str, given, accepted) -> None:
    """Refuse keyword arguments a public function does not take, naming the function (not an
    internal one it forwards to) and the keywords it takes."""
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        word = "argument" if len(unknown) == 1 else "arguments"
        raise TypeError(
            f"{public_name} got unexpected keyword {word} {', '.join(map(repr, unknown))}; "
            f"it takes {', '.join(accepted)}"
        )


def deprecated(old: str, replacement: str, *, removed_in: str, stacklevel: int = 3) -> None:
    """Warn that the public name or keyword ``old`` is deprecated, naming its replacement and
    the version that removes it (the package's deprecation rule: a renamed or removed name
    keeps working for one minor version with this warning)."""
    import warnings

    warnings.warn(
        f"{old} is deprecated and will be removed in refimpl {removed_in}; use {replacement}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
