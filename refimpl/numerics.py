"""Numerics of RoPE tables: a high-precision oracle, ulp errors, rounding to the low-precision
formats, emulations of the tables real implementations build, an error model for each, and
the drift of the relative-position property.

Every pipeline function returns the ``(cos, sin)`` tables, each ``(len(positions), dim/2)``,
that a given implementation would produce, in the dtype that implementation holds them
(float32 for bfloat16 values, which NumPy has no dtype for). Compare them with
``cos_sin(..., method="accurate")`` or :func:`oracle_cos_sin`.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from ._checks import (
    EXACT_INTEGER,
    MAX_TABLE_ELEMENTS,
    as_float_array,
    as_inv_freq,
    as_positions,
    as_real_array,
    check_base,
    check_choice,
    check_dim,
    check_dps,
    check_positive,
    check_real,
    check_table_size,
)
from ._pipeline_classes import PIPELINE_CLASSES
from .rotary import cos_sin
from .scaling import transformers_float32_frequencies

__all__ = [
    "FORMATS",
    "PIPELINES",
    "RENAMED_PIPELINES",
    "cos_sin_bf16_angles",
    "cos_sin_bf16_inv_freq",
    "cos_sin_float64_naive",
    "cos_sin_recurrence",
    "cos_sin_transformers_float32",
    "error_bound",
    "oracle_cos_sin",
    "pipeline_cos_sin",
    "relative_drift",
    "round_to",
    "transformers_float32_forward",
    "transformers_inv_freq_float32",
    "ulp_error",
]

#: Binary formats known to :func:`round_to`: (significand bits p incl. the hidden bit,
#: smallest normal exponent, largest exponent).
FORMATS = {
    "float32": (24, -126, 127),
    "float16": (11, -14, 15),
    "bfloat16": (8, -126, 127),
}
_STORAGE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.float32}
# Smallest mpmath precision (decimal digits) the oracle accepts: a float64 needs 17
# significant digits; 20 leaves three guard digits for mpmath's own rounding of the angle.
MIN_DPS = 20


# ----------------------------------------------------------------------------- oracle and ulps
def _mpf_to_float(x) -> float:
    """Correctly rounded float of an mpmath number (exact rational, then Python's rounding)."""
    if not x:
        return 0.0
    v = float(Fraction(int(x.man)) * Fraction(2) ** int(x.exp))
    return -v if x < 0 else v


def oracle_cos_sin(
    positions,
    inv_freq=None,
    *,
    dim: int | None = None,
    base: float = 10000.0,
    dps: int = 50,
    pairs=None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""cos and sin of the exact angles with mpmath, correctly rounded to float64 (slow).

    Parameters
    ----------
    positions : array_like, shape (seq,)
        Positions :math:`m` (integers or reals), taken as exact binary values.
    inv_freq : array_like, shape (d/2,), optional
        Frequencies, taken as exact binary values.
    dim : int, optional
        With ``base``: :math:`\theta_i = b^{-2i/d}` as the exact real numbers (used when
        ``inv_freq`` is None).
    base : float, default 10000.0
    dps : int, default 50
        Decimal digits of the mpmath working precision, from 20 to
        :data:`refimpl._checks.MAX_DPS` (1000; the cost of one entry grows with it).
    pairs : array_like of int, shape (p,), optional
        Compute only these pair indices (columns); default all ``d/2``.

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, d/2) or (seq, p), float64
        The float64 nearest to :math:`\cos(m\theta_i)` and :math:`\sin(m\theta_i)`.

    Notes
    -----
    Book equation ``eq:numerics-oracle``. ``cos_sin(..., method="correct")`` (and
    ``"accurate"``) returns the same tables bit for bit, in NumPy alone and much faster; this
    oracle is the independent check of it. mpmath (shipped with SymPy, installed by the test
    extra) is imported here, not by ``import refimpl``. The value computed at ``dps`` digits
    is rounded once through an exact rational, so the result is the correctly rounded float64
    unless the true value lies within about :math:`10^{-dps}` of a rounding boundary. Cost:
    about 60 to 300 microseconds per entry in the runs recorded in ``benchmarks/README.md``
    (``benchmarks/bench_tables.py`` measures it), so 2^20 x 64 entries would take one to
    several hours.

    References
    ----------
    F. Johansson et al., mpmath: a Python library for arbitrary-precision floating-point
    arithmetic, https://mpmath.org.

    Examples
    --------
    >>> c, s = oracle_cos_sin([3], dim=2)
    >>> float(c[0, 0]), float(s[0, 0])
    (-0.9899924966004454, 0.1411200080598672)
    """
    import mpmath

    pos = as_positions(positions)
    ndps = check_dps(dps)
    if ndps < MIN_DPS:
        raise ValueError(
            f"dps must be at least {MIN_DPS} (the oracle must beat float64), got {ndps}"
        )
    if inv_freq is None:
        if dim is None:
            raise TypeError("oracle_cos_sin needs either inv_freq or dim (with base)")
        d = check_dim(dim)
        b = check_base(base)
        freqs = None
    else:
        freqs = as_inv_freq(inv_freq)
        d = 2 * freqs.shape[0]
        if dim is not None and check_dim(dim) != d:
            raise ValueError(f"inv_freq has {d // 2} entries but dim={dim} needs {dim // 2}")
    if pairs is None:
        cols = list(range(d // 2))
    else:
        idx = np.asarray(pairs)
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise TypeError("pairs must be a 1-D array of integer pair indices")
        if idx.size and (idx.min() < 0 or idx.max() >= d // 2):
            raise ValueError(f"pairs must lie in [0, {d // 2 - 1}] (dim={d})")
        cols = [int(i) for i in idx]
    check_table_size(pos.shape[0], len(cols), "the oracle's table")
    cos = np.empty((pos.shape[0], len(cols)))
    sin = np.empty_like(cos)
    with mpmath.mp.workdps(ndps):
        if freqs is None:
            mb = mpmath.mpf(b)
            theta = [mb ** (-mpmath.mpf(2 * i) / d) for i in cols]  # [eq:rope-inv-freq]
        else:
            theta = [mpmath.mpf(float(freqs[i])) for i in cols]
        for r, m in enumerate(pos):
            mm = mpmath.mpf(float(m))
            for i, t in enumerate(theta):
                c, s = mpmath.cos_sin(mm * t)  # [eq:numerics-oracle]
                cos[r, i] = _mpf_to_float(c)
                sin[r, i] = _mpf_to_float(s)
    return cos, sin


def ulp_error(approx, exact) -> np.ndarray:
    r"""Error of ``approx`` in units in the last place of ``exact``.

    Parameters
    ----------
    approx : array_like
        Computed values (any float dtype; compared in float64).
    exact : array_like, same shape
        Reference values; the ulp is taken in ``exact``'s dtype (float64 for integers).

    Returns
    -------
    numpy.ndarray, same shape, float64
        :math:`|\hat v - v| / \mathrm{ulp}(v)` with :math:`\mathrm{ulp}(v)` the gap from
        :math:`|v|` to the next larger float of that dtype.

    Notes
    -----
    Book equation ``eq:numerics-ulp``. Against a correctly rounded ``exact`` (the oracle),
    a faithfully rounded result has ulp error 0 or 1. Near a zero of cos or sin the ulp is
    tiny, so naive tables show huge ulp errors there; absolute errors are the honest measure
    for them.

    Examples
    --------
    >>> ulp_error([1.0 + 2**-52, 1.0], [1.0, 1.0])
    array([1., 0.])
    """
    a = as_float_array(approx, "approx")
    e = as_float_array(exact, "exact")
    if a.shape != e.shape:
        raise ValueError(f"approx and exact must have the same shape, got {a.shape} and {e.shape}")
    unit = np.spacing(np.abs(e)).astype(np.float64)
    return np.abs(a.astype(np.float64) - e.astype(np.float64)) / unit  # [eq:numerics-ulp]


# ----------------------------------------------------------------------------------- rounding
def _round_quantum(x64: np.ndarray, fmt: str) -> np.ndarray:
    """Round float64 values once, to nearest even, onto ``fmt``'s grid (float64 result)."""
    p, emin, emax = FORMATS[fmt]
    big = 2.0**emax * (2.0 - 2.0 ** (1 - p))  # largest finite value
    a = np.abs(x64)
    ok = np.isfinite(x64) & (a < 2.0 ** (emax + 1))
    xs = np.where(ok, x64, 0.0)
    _, ex = np.frexp(np.abs(xs))  # |x| = f 2^ex, f in [0.5, 1)
    qexp = np.maximum(ex - 1, emin) - (p - 1)  # exponent of the grid step (ulp) at x
    y = np.ldexp(np.rint(np.ldexp(xs, -qexp)), qexp)  # [eq:numerics-round-to]
    y = np.where(np.abs(y) > big, np.copysign(np.inf, xs), y)  # overflow to +-inf
    return np.where(ok, y, np.where(np.isnan(x64), np.nan, np.copysign(np.inf, x64)))


def _round_bf16_bits(x32: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 by integer arithmetic on the bits (round to nearest even)."""
    u = x32.view(np.uint32)
    lsb = (u >> np.uint32(16)) & np.uint32(1)
    r = (u + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)  # [eq:numerics-round-to]
    out = r.view(np.float32)
    return np.where(np.isnan(x32), np.float32(np.nan), out)


def _round_int_exact(v: int, fmt: str) -> float:
    """The integer ``v`` rounded once, to nearest even, to ``fmt``'s ``p`` significant bits
    (as a float64, exact: ``p <= 24``); beyond the format's range it becomes an infinity."""
    p, _, emax = FORMATS[fmt]
    a = abs(v)
    shift = a.bit_length() - p
    if shift > 0:
        q, rem = a >> shift, a & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and q & 1):  # [eq:numerics-round-to]
            q += 1
        a = q << shift
    if a > 2**emax * (2 - 2 ** (1 - p)):
        return math.copysign(math.inf, v)
    return math.copysign(float(a), v)


def _as_float64_once(arr: np.ndarray, fmt: str) -> np.ndarray:
    """``arr`` as float64 without a first rounding: integers beyond 2^53 (which float64 would
    round before ``fmt`` rounds again) are rounded straight to ``fmt`` from their exact value."""
    out = arr.astype(np.float64)
    if arr.dtype.kind in "iu" and arr.size:
        big = (arr > EXACT_INTEGER) | (arr < -EXACT_INTEGER)
        if np.any(big):
            out[big] = [_round_int_exact(int(v), fmt) for v in arr[big]]
    return out


def round_to(x, fmt: str) -> np.ndarray:
    r"""Round to ``"float32"``, ``"float16"`` or ``"bfloat16"``, to nearest, ties to even.

    Parameters
    ----------
    x : array_like
        Real values (float16/32/64 or integers); NaN and infinities are allowed.
    fmt : {"float32", "float16", "bfloat16"}

    Returns
    -------
    numpy.ndarray, same shape
        float32 for ``"float32"`` and ``"bfloat16"`` (NumPy has no bfloat16; every value is
        exactly a bfloat16 number), float16 for ``"float16"``. Values beyond the largest finite
        number (after rounding) become infinities, NaN stays NaN, subnormals are kept.

    Notes
    -----
    Book equation ``eq:numerics-round-to``: :math:`\mathrm{rn}(x) = q\,\mathrm{rint}(x/q)`
    with :math:`q = 2^{\max(e, e_{\min}) - p + 1}` the grid step at :math:`x`. The input is
    rounded once, directly (float64 to bfloat16 does not go through float32, which would
    round twice), and integers beyond 2^53 are rounded from their exact value (not through
    float64, which would round them first). float32 input to bfloat16 uses the bit trick
    frameworks use: add ``0x7FFF`` plus the lowest kept bit, clear the low 16 bits.

    Examples
    --------
    >>> round_to([1.0 + 2**-8, 1.0 + 3 * 2**-8, 3.5e38], "bfloat16")
    array([1.      , 1.015625,      inf], dtype=float32)
    >>> round_to([65519.0, 65520.0], "float16").tolist()  # 65504 is the largest float16
    [65504.0, inf]
    """
    check_choice(fmt, "fmt", tuple(FORMATS))
    arr = as_real_array(x, "x")
    if fmt == "bfloat16" and arr.dtype == np.float32:
        return _round_bf16_bits(arr)
    return _round_quantum(_as_float64_once(arr, fmt), fmt).astype(_STORAGE[fmt])


# ---------------------------------------------------------------------------------- pipelines
def transformers_inv_freq_float32(dim: int, base: float = 10000.0) -> np.ndarray:
    r"""Frequencies as transformers builds them, in float32.

    The exponent ``2i/d`` is rounded to float32, the power is rounded to float32 (torch's
    float32 ``pow`` is close to correctly rounded), then the float32 reciprocal: the
    ``"default"`` case of :func:`refimpl.scaling.transformers_float32_frequencies`, which is
    parity-tested against transformers.

    Parameters
    ----------
    dim : int
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray, shape (dim/2,), float32

    Notes
    -----
    Book equation ``eq:numerics-hf-float32``.

    Examples
    --------
    >>> transformers_inv_freq_float32(4, 100.0)
    array([1. , 0.1], dtype=float32)
    """
    inv = transformers_float32_frequencies("default", dim=dim, base=base).inv_freq
    return inv  # [eq:numerics-hf-float32]


def _pipeline_args(positions, dim, base):
    return as_positions(positions), check_dim(dim), check_base(base)


def cos_sin_float64_naive(positions, *, dim: int, base: float = 10000.0):
    r"""The plain float64 table: ``theta = base**(-2i/d)``, ``m * theta`` and ``np.cos`` in
    float64 (``cos_sin(..., method="fast")``).

    Parameters
    ----------
    positions : array_like, shape (seq,)
        Token positions.
    dim : int
        Rotary width (even).
    base : float, default 10000.0

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, dim/2), float64

    Examples
    --------
    >>> c, s = cos_sin_float64_naive([1], dim=2)
    >>> float(c[0, 0])
    0.5403023058681398
    """
    pos, d, b = _pipeline_args(positions, dim, base)
    return cos_sin(pos, dim=d, base=b)


def _cos_sin_float32(ang32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin of float32 angles rounded once to float32 (computed in float64), standing in for
    a float32 cos/sin that is within 1 float32 ulp (torch's)."""
    a = ang32.astype(np.float64)
    return np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)


def transformers_float32_forward(
    positions, inv_freq32, attention_scaling: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""cos/sin tables with the float32 arithmetic of transformers' rotary module.

    One float32 product ``float32(m) * inv_freq`` per entry, cos and sin of that float32 angle
    rounded to float32 (computed in float64 and rounded once, which is within 1 float32 ulp of
    torch's float32 cos/sin), then multiplied by the attention factor in float32.

    Parameters
    ----------
    positions : array_like, shape (seq,)
    inv_freq32 : array_like, shape (d/2,)
        The float32 frequencies the module holds (e.g. from
        :func:`refimpl.scaling.transformers_float32_frequencies`): non-empty, finite after
        the cast to float32, and non-negative (zero is legal: proportional RoPE's
        pass-through pairs, whose rows are cos = 1, sin = 0).
    attention_scaling : float, default 1.0
        Positive and finite.

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, d/2), float32

    Raises
    ------
    ValueError
        ``inv_freq32`` is not 1-D, is empty, or has a NaN, an infinity (also after the cast
        to float32) or a negative entry; ``attention_scaling`` is not positive.

    Notes
    -----
    Book equation ``eq:numerics-hf-float32``.

    Examples
    --------
    >>> c, s = transformers_float32_forward([3], np.float32([1.0, 0.1]))
    >>> c.dtype, float(s[0, 0]) == float(np.float32(np.sin(3.0)))
    (dtype('float32'), True)
    """
    f32 = np.float32
    pos = as_positions(positions)
    inv64 = as_inv_freq(inv_freq32, "inv_freq32", allow_zero=True)
    with np.errstate(over="ignore"):  # an overflow to inf is refused just below
        inv = inv64.astype(f32)
    if not np.all(np.isfinite(inv)):
        raise ValueError("inv_freq32 must be finite in float32 (an entry overflows the cast)")
    scale = f32(check_positive(attention_scaling, "attention_scaling"))
    ang = (pos.astype(f32)[:, None] * inv[None, :]).astype(f32)  # [eq:numerics-hf-float32]
    c, s = _cos_sin_float32(ang)
    if scale != 1:
        c = (c * scale).astype(f32)
        s = (s * scale).astype(f32)
    return c, s


def cos_sin_transformers_float32(
    positions, *, dim: int, base: float = 10000.0, table_dtype: str = "float32"
):
    r"""Tables as transformers' rotary module computes them: float32 frequencies, one float32
    rounding of ``m * theta``, float32 cos/sin, then a cast to the model dtype.

    Parameters
    ----------
    positions : array_like, shape (seq,)
    dim : int
    base : float, default 10000.0
    table_dtype : {"float32", "bfloat16", "float16"}, default "float32"
        The dtype the tables are cast to (``x.dtype`` in transformers).

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, dim/2)
        float32 (also for bfloat16 values) or float16.

    Notes
    -----
    Book equations ``eq:numerics-hf-float32`` and ``eq:numerics-table-cast``. cos/sin are
    rounded once from float64, standing in for torch's float32 cos/sin (about 0.6 ulp): the
    tables agree with torch's to 1 float32 ulp, not bit for bit.

    Examples
    --------
    >>> c, s = cos_sin_transformers_float32([1, 2], dim=4, table_dtype="bfloat16")
    >>> c.dtype, float(c[1, 0])
    (dtype('float32'), -0.416015625)
    """
    pos, d, b = _pipeline_args(positions, dim, base)
    check_choice(table_dtype, "table_dtype", tuple(FORMATS))
    c, s = transformers_float32_forward(pos, transformers_inv_freq_float32(d, b))
    if table_dtype == "float32":
        return c, s
    return round_to(c, table_dtype), round_to(s, table_dtype)  # [eq:numerics-table-cast]


def cos_sin_bf16_angles(positions, *, dim: int, base: float = 10000.0):
    r"""Angles rounded to bfloat16 before float32 cos/sin (the product run under bf16
    autocast, or an angle buffer kept in the model dtype).

    Parameters
    ----------
    positions : array_like, shape (seq,)
        Token positions.
    dim : int
        Rotary width (even).
    base : float, default 10000.0

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, dim/2), float32

    Notes
    -----
    Book equation ``eq:numerics-bf16-angles``.

    Examples
    --------
    >>> c, s = cos_sin_bf16_angles([257], dim=2)  # 257 is not a bfloat16 number: angle 256
    >>> bool(c[0, 0] == np.float32(np.cos(256.0)))
    True
    """
    pos, d, b = _pipeline_args(positions, dim, base)
    inv = transformers_inv_freq_float32(d, b)
    ang = round_to(pos.astype(np.float32)[:, None] * inv[None, :], "bfloat16")
    return _cos_sin_float32(ang)  # [eq:numerics-bf16-angles]


def cos_sin_bf16_inv_freq(positions, *, dim: int, base: float = 10000.0):
    r"""float32 tables built from frequencies that were cast to bfloat16 (``model.to(bf16)``
    casting the ``inv_freq`` buffer).

    Parameters
    ----------
    positions : array_like, shape (seq,)
        Token positions.
    dim : int
        Rotary width (even).
    base : float, default 10000.0

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, dim/2), float32

    Notes
    -----
    Book equation ``eq:numerics-bf16-inv-freq``.

    Examples
    --------
    >>> c, s = cos_sin_bf16_inv_freq([1], dim=4, base=100.0)  # 0.1 becomes 0.10009765625
    >>> round(float(s[0, 1]), 6)
    0.099931
    """
    pos, d, b = _pipeline_args(positions, dim, base)
    inv = round_to(transformers_inv_freq_float32(d, b), "bfloat16")
    ang = pos.astype(np.float32)[:, None] * inv[None, :]  # [eq:numerics-bf16-inv-freq]
    return _cos_sin_float32(ang)


_RECURRENCE_BLOCK = 4096


def cos_sin_recurrence(
    positions, *, dim: int, base: float = 10000.0, dtype: str = "float32"
) -> tuple[np.ndarray, np.ndarray]:
    r"""Tables built incrementally by angle addition: :math:`z_0 = 1`,
    :math:`z_{m+1} = z_m w` with :math:`w = \cos\theta + i\sin\theta` rounded to ``dtype``
    and every complex product rounded to ``dtype``.

    Parameters
    ----------
    positions : array_like of non-negative integers, shape (seq,)
        The recurrence runs from 0 to ``max(positions)``; cost is linear in that maximum, and
        ``(max(positions) + 1) * dim/2`` may not exceed
        :data:`refimpl._checks.MAX_TABLE_ELEMENTS` (2**31).
    dim : int
    base : float, default 10000.0
    dtype : {"float32", "float64"}, default "float32"
        float32 starts from transformers' float32 frequencies, float64 from
        ``base**(-2i/d)`` in float64.

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, dim/2), of ``dtype``

    Notes
    -----
    Book equation ``eq:numerics-recurrence``. The error of :math:`z_m` grows linearly in
    :math:`m` (the rounding of :math:`w` repeats every step), and :math:`|z_m|` drifts from 1.

    Examples
    --------
    >>> c, s = cos_sin_recurrence([0, 1, 2], dim=2, dtype="float64")
    >>> bool(np.allclose(c[:, 0], np.cos([0, 1, 2]), atol=1e-15))
    True
    """
    pos, d, b = _pipeline_args(positions, dim, base)
    check_choice(dtype, "dtype", ("float32", "float64"))
    if np.any(pos < 0) or np.any(pos != np.rint(pos)):
        raise ValueError("positions must be non-negative integers for the recurrence")
    if dtype == "float32":
        theta = transformers_inv_freq_float32(d, b).astype(np.float64)
        ctype = np.complex64
    else:
        theta = b ** (-(2.0 * np.arange(d // 2)) / d)
        ctype = np.complex128
    w = (np.cos(theta) + 1j * np.sin(theta)).astype(ctype)  # w rounded to dtype
    top = int(pos.max()) if pos.size else 0
    if (top + 1) * (d // 2) > MAX_TABLE_ELEMENTS:
        raise ValueError(
            f"positions: the recurrence computes every row from 0 to max(positions) = {top}, "
            f"{top + 1} x {d // 2} entries, above MAX_TABLE_ELEMENTS = {MAX_TABLE_ELEMENTS}"
        )
    want = pos.astype(np.int64)
    order = np.argsort(want, kind="stable")
    cos = np.empty((pos.shape[0], d // 2), dtype=dtype)
    sin = np.empty_like(cos)
    z = np.ones(d // 2, dtype=ctype)
    j = 0
    for start in range(0, top + 1, _RECURRENCE_BLOCK):
        n = min(_RECURRENCE_BLOCK, top + 1 - start)
        blk = np.empty((n, d // 2), dtype=ctype)
        blk[0] = z
        blk[1:] = w
        np.multiply.accumulate(blk, axis=0, out=blk)  # [eq:numerics-recurrence]
        z = blk[-1] * w
        while j < order.size and want[order[j]] < start + n:
            row = blk[want[order[j]] - start]
            cos[order[j]], sin[order[j]] = row.real, row.imag
            j += 1
    return cos, sin


def _accurate(positions, *, dim, base):
    return cos_sin(positions, dim=dim, base=base, method="accurate")


def _recipe_frequencies(step: str, d: int, b: float) -> np.ndarray:
    """float32 frequencies of a class's frequency step (see :class:`PipelineClass`)."""
    f32 = np.float32
    h = d // 2
    if step == "float32":  # correctly rounded: the exact value rounded once
        return (b ** (-(2.0 * np.arange(h)) / d)).astype(f32)
    if step == "exp-log":  # MLX CPU: exp(i * -fl(fl(ln b) / h)), exp correctly rounded
        x = np.arange(h, dtype=f32) * (f32(math.log(b)) / f32(h))
        return np.exp(-x.astype(np.float64)).astype(f32)  # [eq:pipeline-freq-exp-log]
    if step == "exp2-log2":  # MLX Metal/CUDA: exp2(-fl(i / h) * fl(log2 b))
        x = (np.arange(h, dtype=f32) / f32(h)) * f32(math.log2(b))
        return np.exp2(-x.astype(np.float64)).astype(f32)
    inv = transformers_inv_freq_float32(d, b)  # "pow" (and the half formats after it)
    return inv if step == "pow" else round_to(inv, step).astype(f32)


def _ggml_product_angles(pos32: np.ndarray, d: int, b: float) -> np.ndarray:
    """ggml's running product: theta = m, then theta *= s per pair, s = powf(b, -2/d)."""
    f32 = np.float32
    s = f32(float(f32(b)) ** float(f32(-2.0) / f32(d)))  # powf, correctly rounded
    out = np.empty((pos32.shape[0], d // 2), dtype=f32)
    theta = pos32.copy()
    for i in range(d // 2):
        out[:, i] = theta
        theta = theta * s  # [eq:pipeline-freq-ggml]
    return out


def _recipe_cos_sin(cls, positions, *, dim: int, base: float = 10000.0):
    """The tables of a pipeline class's recipe (frequencies, positions, angles, tables)."""
    pos, d, b = _pipeline_args(positions, dim, base)
    if cls.angles == "float64":  # the loosest of "float64 or better": the plain float64 table
        return cos_sin(pos, dim=d, base=b)
    if cls.angles == "recurrence":
        return cos_sin_recurrence(
            pos, dim=d, base=b, dtype="float64" if cls.frequencies == "exact" else "float32"
        )
    p32 = pos.astype(np.float32)
    if cls.positions != "exact":
        with np.errstate(over="ignore"):  # float16 positions above 65504 become infinite
            p32 = round_to(p32, cls.positions).astype(np.float32)
    if cls.frequencies == "ggml-product":
        ang = _ggml_product_angles(p32, d, b)
    else:
        ang = p32[:, None] * _recipe_frequencies(cls.frequencies, d, b)[None, :]
    if cls.angles != "float32":
        with np.errstate(over="ignore"):
            ang = round_to(ang, cls.angles).astype(np.float32)
    with np.errstate(invalid="ignore"):  # an infinite angle has no cosine: NaN, as in float32
        c, s = _cos_sin_float32(ang)
    if cls.tables in FORMATS and cls.tables != "float32":
        return round_to(c, cls.tables), round_to(s, cls.tables)  # [eq:numerics-table-cast]
    return c, s


#: Names of the numerics pipelines before the registry of pipeline classes, and the class
#: each now is (``PIPELINES[old]`` still works for one minor version, with a
#: DeprecationWarning).
RENAMED_PIPELINES = {
    "float64": "float64-tables",
    "transformers-float32": "float32-pow",
    "float32-table-bf16": "bfloat16-tables",
    "float32-table-fp16": "float16-tables",
    "bf16-angles": "bfloat16-angles",
    "bf16-inv-freq": "bfloat16-frequencies",
    "recurrence-float32": "float32-recurrence",
    "recurrence-float64": "float64-recurrence",
}


def _pipeline_name(name) -> str:
    """A current name of :data:`PIPELINES` for ``name`` (a renamed one warns)."""
    if isinstance(name, str) and name in RENAMED_PIPELINES:
        new = RENAMED_PIPELINES[name]
        warnings.warn(
            f"pipeline name {name!r} is deprecated; use {new!r} (refimpl.pipelines."
            "PIPELINE_CLASSES)",
            DeprecationWarning,
            stacklevel=3,
        )
        return new
    return check_choice(name, "name", tuple(PIPELINES))


class _PipelineView(Mapping):
    """``name -> fn(positions, *, dim, base)``: ``"accurate"`` (the reference the classes are
    measured against) and the emulated recipe of every pipeline class of
    :data:`refimpl.pipelines.PIPELINE_CLASSES` except ``"half-tables"`` (whose tables are
    rounded to a suite's dtype, which these functions do not take; ``"bfloat16-tables"`` and
    ``"float16-tables"`` are its recipe for one format each)."""

    def _names(self) -> tuple:
        return (
            "accurate",
            *(
                n
                for n, c in PIPELINE_CLASSES.items()
                if c.tables != "dtype" or c.angles in ("float64", "recurrence")
            ),
        )

    def __getitem__(self, name):
        if name in RENAMED_PIPELINES:
            name = _pipeline_name(name)
        if name == "accurate":
            return _accurate
        if name not in self._names():
            raise KeyError(name)
        return functools.partial(_recipe_cos_sin, PIPELINE_CLASSES[name])

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


#: Named pipelines, a view of the pipeline classes (:data:`refimpl.pipelines.PIPELINE_CLASSES`):
#: ``name -> fn(positions, *, dim, base)`` returning ``(cos, sin)`` of the class's recipe,
#: plus ``"accurate"``, the reference. The float32 recipes' libm steps (cos/sin, pow, exp) are
#: computed correctly rounded, the best case of the class; :func:`error_bound` is the class's
#: bound, which covers the libraries' documented errors.
PIPELINES = _PipelineView()


def pipeline_cos_sin(name: str, positions, *, dim: int, base: float = 10000.0):
    """The tables of pipeline ``name`` (one of :data:`PIPELINES`).

    Parameters
    ----------
    name : str
        A key of :data:`PIPELINES` (e.g. ``"float32-pow"``, ``"bfloat16-angles"``).
    positions : array_like, shape (seq,)
    dim : int
    base : float, default 10000.0

    Returns
    -------
    cos, sin : numpy.ndarray, each shape (seq, dim/2)
        In the dtype the emulated implementation would hold them.

    Examples
    --------
    >>> sorted(PIPELINES)[:3]
    ['accurate', 'bfloat16-angles', 'bfloat16-frequencies']
    >>> c, s = pipeline_cos_sin("float32-pow", [0, 1], dim=4)
    >>> c.shape, c.dtype
    ((2, 2), dtype('float32'))
    """
    return PIPELINES[_pipeline_name(name)](positions, dim=dim, base=base)


# -------------------------------------------------------------------------------- error model
def error_bound(name: str, positions, *, dim: int, base: float = 10000.0) -> np.ndarray:
    r"""Predicted bound on the absolute error of pipeline ``name``'s cos and sin entries.

    Parameters
    ----------
    name : str
        One of :data:`PIPELINES`.
    positions : array_like, shape (seq,)
    dim : int
    base : float, default 10000.0

    Returns
    -------
    numpy.ndarray, shape (seq, dim/2), float64
        A bound on :math:`|\hat c - \cos m\theta_i|` and :math:`|\hat s - \sin m\theta_i|`
        (capped at 2, which no cosine error can exceed).

    Notes
    -----
    The bound of the pipeline class (:meth:`refimpl.pipelines.PipelineClass.bound`, tables
    kept in the recipe's own format; book equations ``eq:pipeline-bound-float32`` and
    ``eq:numerics-bound-recurrence``); ``"accurate"``: :math:`2^{-52}`. With :math:`u` the
    unit roundoff and :math:`a = |m|\theta_i` the angle, a float32 recipe's frequency has
    relative error :math:`\delta_\theta` (one rounding when correctly rounded; the exponent's
    rounding times :math:`|\ln\theta_i|` plus the library's error for ``pow`` and ``exp``),
    the position :math:`\delta_m \le u` above :math:`2^{24}`, the product one more :math:`u`,
    and float32 cos/sin add :math:`2^{-23}`: :math:`a(\delta_\theta + \delta_m + u) + 2^{-23}`.
    ``tests/test_numerics.py`` checks that measured errors stay below these bounds and within
    a stated factor of them.

    Examples
    --------
    >>> b = error_bound("float32-pow", [0, 10**6], dim=128)
    >>> b.shape, bool(b[1, 1] > 1e-3)
    ((2, 64), True)
    """
    name = _pipeline_name(name)
    pos, d, b = _pipeline_args(positions, dim, base)
    theta = b ** (-(2.0 * np.arange(d // 2)) / d)
    if name == "accurate":
        return np.full((pos.shape[0], d // 2), 2.0**-52)
    return PIPELINE_CLASSES[name].bound(pos[:, None], theta, "float64")


# ------------------------------------------------------------------------ relative property
def _scores(c_q, s_q, c_k, s_k, q, k, rotated_dtype):
    """<R_m q, R_n k> for rows of tables at m (c_q, s_q) and n (c_k, s_k), pairs (i, i+d/2)."""
    h = q.shape[0] // 2
    q1, q2, k1, k2 = q[:h], q[h:], k[:h], k[h:]
    rq1, rq2 = q1 * c_q - q2 * s_q, q1 * s_q + q2 * c_q
    rk1, rk2 = k1 * c_k - k2 * s_k, k1 * s_k + k2 * c_k
    if rotated_dtype != "float64":
        rq1, rq2, rk1, rk2 = (
            round_to(v, rotated_dtype).astype(np.float64) for v in (rq1, rq2, rk1, rk2)
        )
    return np.sum(rq1 * rk1 + rq2 * rk2, axis=-1)


def relative_drift(
    name: str,
    positions,
    offset: int,
    q,
    k,
    *,
    dim: int | None = None,
    base: float = 10000.0,
    against: str = "shift",
    rotated_dtype: str = "float64",
) -> np.ndarray:
    r"""How far pipeline ``name`` breaks the relative-position property of RoPE.

    Parameters
    ----------
    name : str
        One of :data:`PIPELINES`.
    positions : array_like, shape (n,)
        Query positions :math:`m` (non-negative integers for the recurrences).
    offset : int
        Relative position :math:`r` (key minus query), ``m + r >= 0``.
    q, k : array_like, shape (d,)
        Query and key (half pairing: feature ``i`` with ``i + d/2``).
    dim : int, optional
        Defaults to ``len(q)``.
    base : float, default 10000.0
    against : {"shift", "exact"}, default "shift"
        ``"shift"``: :math:`|S(m, m+r) - S(0, r)|` with both scores from the pipeline's
        tables (the property itself); ``"exact"``: :math:`|S(m, m+r) - S^*(0, r)|` against
        exact RoPE, which also sees errors that are the same at every position.
    rotated_dtype : {"float64", "float32", "bfloat16", "float16"}, default "float64"
        Format the rotated q and k are rounded to before the float64 dot product.

    Returns
    -------
    numpy.ndarray, shape (n,), float64

    Notes
    -----
    Book equation ``eq:numerics-drift``:
    :math:`S(m, n) = \langle R_m q, R_n k\rangle`, exactly :math:`S(0, n - m)` for exact
    tables.

    Examples
    --------
    >>> q = k = np.ones(8) / np.sqrt(8)
    >>> bool(relative_drift("accurate", [0, 1000], 5, q, k).max() < 1e-15)
    True
    """
    name = _pipeline_name(name)
    check_choice(against, "against", ("shift", "exact"))
    check_choice(rotated_dtype, "rotated_dtype", ("float64", *FORMATS))
    qa = as_float_array(q, "q", ndim=1).astype(np.float64)
    ka = as_float_array(k, "k", ndim=1).astype(np.float64)
    if qa.shape != ka.shape:
        raise ValueError(f"q and k must have the same shape, got {qa.shape} and {ka.shape}")
    d = check_dim(qa.shape[0] if dim is None else dim)
    if qa.shape[0] != d:
        raise ValueError(f"q and k must have dim={d} entries, got {qa.shape[0]}")
    pos = as_positions(positions)
    r = check_real(offset, "offset")
    if pos.size and np.min(pos + r) < 0:
        raise ValueError("positions + offset must be non-negative")
    fn = PIPELINES[name]
    cm, sm = (v.astype(np.float64) for v in fn(pos, dim=d, base=base))
    cn, sn = (v.astype(np.float64) for v in fn(pos + r, dim=d, base=base))
    ref = PIPELINES["accurate" if against == "exact" else name]
    c0, s0 = (v.astype(np.float64) for v in ref(np.array([0.0, r]), dim=d, base=base))
    s_mn = _scores(cm, sm, cn, sn, qa, ka, rotated_dtype)  # [eq:numerics-drift]
    s_0r = _scores(c0[:1], s0[:1], c0[1:], s0[1:], qa, ka, rotated_dtype)
    return np.abs(s_mn - s_0r)
