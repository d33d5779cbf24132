r"""Pipeline classes: the ways a RoPE implementation builds its cos/sin tables, each with the
error it may have against the exact tables, the input dtypes it is accepted for and the fix
for it when it is not.

A class is named by its recipe. Accepted:

* ``"float64-tables"`` -- angles and tables in float64 or better, rounded once to the dtype
  the kernel holds them in (every dtype);
* ``"float32-angles"`` -- float32 angles :math:`\mathrm{fl}(m\,\hat\theta_i)` from correctly
  rounded float32 frequencies (transformers' recipe on a handed-over ``inv_freq``), float32
  cos/sin;
* ``"float32-pow"``, ``"float32-exp-log"``, ``"float32-exp2-log2"``,
  ``"float32-ggml-product"`` -- the same with the frequencies computed in float32 by ``pow``,
  by ``exp`` of a scaled ``log``, by ``exp2`` of a scaled ``log2`` (MLX's Metal and CUDA
  kernels), or by ggml's running product :math:`\theta_{i+1} = \theta_i \cdot s`;
* ``"half-tables"`` -- float32 angles, tables rounded to bfloat16/float16 (accepted only in
  bfloat16/float16 suites, where the inputs carry that rounding anyway);
* ``"float64-recurrence"`` -- float64 tables built by angle addition.

Failing, named ``f"{fmt}-{stage}"`` for ``fmt`` in ``("bfloat16", "float16")`` and ``stage``
in ``("positions", "frequencies", "angles", "tables")`` (:func:`pipeline_class_for_stage`
maps a precision-per-stage reading to its class), and ``"float32-recurrence"``.

Each class bounds the absolute error of every cos and sin entry as a function of the
position :math:`m`, the frequency :math:`\theta_i` and the dtype (:meth:`PipelineClass.bound`);
the derivations are in the book's chapter "Error against position, pipeline by pipeline".
With :math:`a = |m|\theta_i`, :math:`\lambda_i = |\ln\theta_i|`, :math:`u = 2^{-24}`:

.. math::

    e_{32} = a\,(\delta_\theta + \delta_m + u) + \ell_{32}, \qquad
    \delta_m = u\,[|m| \ge 2^{24}],

with the frequency error :math:`\delta_\theta` of the recipe: :math:`u` (correctly rounded),
:math:`u(\lambda_i + 2P + 1 + S)` (``pow``), :math:`u(3\lambda_i + 2E + S)` (``exp``/``log``),
:math:`u(3\lambda_i + 2E_2 + S)` (``exp2``/``log2``), and for ggml's product
:math:`e = a\,(u(\lambda_i + (2P + 1) i + S) + \delta_m) + \ell_{32}`. The half-precision
classes add :math:`a\,u_h` (positions, frequencies or angles in the half format) or
:math:`u_h` (tables) to the largest float32 bound; every bound is capped at 2.

Floor 2 (NumPy only): :mod:`refimpl.numerics` holds a view of this registry and
:mod:`refimpl.pipelines` re-exports it; nothing here imports either.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Mapping

import numpy as np

from ._checks import as_real_array, check_choice

__all__ = [
    "FORMAT_UNITS",
    "HALF_FORMATS",
    "PIPELINE_CLASSES",
    "STAGES",
    "SUITE_DTYPES",
    "PipelineClass",
    "accepted_classes",
    "pipeline_class_for_stage",
]

#: Unit roundoff (half an ulp at 1) of each binary format.
FORMAT_UNITS = {"float64": 2.0**-53, "float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}
#: The half-precision formats whose use at a stage is a named failing class.
HALF_FORMATS = ("bfloat16", "float16")
#: The stages of a table pipeline, in the order they happen.
STAGES = ("positions", "frequencies", "angles", "tables")
#: Input dtypes a conformance suite is written for.
SUITE_DTYPES = ("float32", "bfloat16", "float16")

_U = FORMAT_UNITS["float32"]
_U64 = FORMAT_UNITS["float64"]
# float32 cos/sin of a float32 angle, absolute error: glibc's cosf/sinf are below 1 ulp,
# torch's (Sleef) 1 ulp, CUDA's cosf/sinf 2 ulp (its programming guide); 2 ulp of values
# below 1 is at most 2**-23.
LIBM32 = 2.0**-23
# float32 powf, in ulp: glibc and Sleef are within 1 ulp, CUDA documents 4 ulp for powf.
POW_ULP = 4
# float32 expf, in ulp: glibc is within 1, CUDA documents 2, MLX's CPU exp was measured up
# to 9 ulp on the frequency exponents of common bases (tests/engines/test_live_mlx.py, which
# asserts 16): the bound takes 16.
EXP_ULP = 16
# float32 exp2f, in ulp: CUDA documents 2; twice that for other GPU libraries.
EXP2_ULP = 4
# Roundings a scaling method adds to a frequency a kernel computes itself: Llama 3's
# (1 - s) theta / f + s theta has four (a division, two products, a sum); YaRN's blend three,
# LongRoPE's and linear scaling's division one.
SCALING_ROUNDINGS = 4
# Integers above this are not all float32 numbers: positions held in float32 round.
FLOAT32_EXACT = 2.0**24
# No table entry can be off by more than this (|cos|, |sin| <= 1 on both sides).
_CAP = 2.0


def _angle_terms(m, theta):
    """(a, lambda, delta_m, exact) of positions |m| and frequencies theta (broadcast);
    ``exact`` marks theta = 1, which every recipe computes exactly (b**0, exp(0), the position
    itself in ggml's product)."""
    m = np.abs(np.asarray(m, dtype=np.float64))
    th = np.asarray(theta, dtype=np.float64)
    a = m * th
    with np.errstate(divide="ignore"):
        lam = np.where(th > 0, np.abs(np.log(np.where(th > 0, th, 1.0))), 0.0)
    dm = np.where(m >= FLOAT32_EXACT, _U, 0.0)
    return a, lam, dm, th == 1.0


def _float32_bound(delta_theta: Callable) -> Callable:
    """e = a (delta_theta + delta_m + u) + libm, for a frequency recipe's relative error
    (none for theta = 1)."""

    def bound(m, theta, dtype):
        a, lam, dm, one = _angle_terms(m, theta)
        d = np.where(one, 0.0, delta_theta(lam))
        return a * (d + dm + _U) + LIBM32  # [eq:pipeline-bound-float32]

    return bound


def _delta_correct(lam):
    return np.full_like(lam, _U)


def _delta_pow(lam):
    return _U * (lam + 2 * POW_ULP + 1 + SCALING_ROUNDINGS)  # [eq:pipeline-freq-pow]


def _delta_exp_log(lam):
    return _U * (3 * lam + 2 * EXP_ULP + SCALING_ROUNDINGS)  # [eq:pipeline-freq-exp-log]


def _delta_exp2_log2(lam):
    return _U * (3 * lam + 2 * EXP2_ULP + SCALING_ROUNDINGS)  # [eq:pipeline-freq-exp-log]


def _ggml_bound(m, theta, dtype):
    """ggml's running product: pair i's angle is i float32 products of the position with
    s = powf(b, -2/n), so its relative error is u (lambda_i + (2P + 1) i) (plus the scaling)."""
    a, lam, dm, one = _angle_terms(m, theta)
    i = np.arange(np.shape(theta)[-1], dtype=np.float64)
    chain = np.where(one, 0.0, _U * (lam + (2 * POW_ULP + 1) * i + SCALING_ROUNDINGS))
    return a * (chain + dm) + LIBM32  # [eq:pipeline-freq-ggml]


def _float64_bound(m, theta, dtype):
    """Naive float64 angles of float64 frequencies (the loosest of 'float64 or better'),
    plus one rounding of the table to the dtype it is held in."""
    a, lam, _, _ = _angle_terms(m, theta)
    store = 0.0 if dtype == "float64" else FORMAT_UNITS[dtype]
    return a * _U64 * (lam + 3) + 2.0**-52 + store  # [eq:pipeline-bound-float64]


# ggml's and the exp recipes are the loosest float32 ones: the half classes add their
# rounding to the largest float32 bound, so that a kernel of any float32 recipe that rounds
# one stage to a half format meets that class.
_FLOAT32_BOUNDS = (
    _float32_bound(_delta_pow),
    _float32_bound(_delta_exp_log),
    _ggml_bound,
)


def _float32_envelope(m, theta):
    out = _FLOAT32_BOUNDS[0](m, theta, "float32")
    for b in _FLOAT32_BOUNDS[1:]:
        out = np.maximum(out, b(m, theta, "float32"))
    return out


# Half the spacing of the subnormal numbers: the largest rounding error below the normal
# range (float16's frequencies of the slowest pairs are subnormal).
_SUBNORMAL_HALF_SPACING = {"bfloat16": 2.0**-134, "float16": 2.0**-25}


def _rounding(v, fmt: str):
    """Largest error of rounding |v| to ``fmt``: u |v|, or half a subnormal spacing."""
    return np.maximum(FORMAT_UNITS[fmt] * v, _SUBNORMAL_HALF_SPACING[fmt])


def _half_bound(fmt: str, stage: str) -> Callable:
    """The float32 envelope plus the rounding of one stage to ``fmt`` (``"dtype"``: tables
    rounded to the kernel's own dtype)."""
    uh = FORMAT_UNITS.get(fmt, 0.0)

    def bound(m, theta, dtype):
        env = _float32_envelope(m, theta)
        if stage == "tables":
            return env + (FORMAT_UNITS[dtype] if fmt == "dtype" else uh)
        mm = np.abs(np.asarray(m, dtype=np.float64))
        th = np.asarray(theta, dtype=np.float64)
        if stage == "positions":
            err = th * _rounding(mm, fmt)
        elif stage == "frequencies":
            err = mm * _rounding(th, fmt)
        else:
            err = _rounding(mm * th, fmt)
        return env + err  # [eq:pipeline-bound-half]

    return bound


_CMUL = math.sqrt(2.0) + math.sqrt(5.0)  # rounding of w (sqrt 2 u) + one complex product (sqrt 5 u)


def _recurrence_bound(fmt: str) -> Callable:
    """Angle addition z_{m+1} = z_m w: per step the rounding of w and of one complex product."""
    u = FORMAT_UNITS[fmt]

    def bound(m, theta, dtype):
        mm = np.abs(np.asarray(m, dtype=np.float64))
        th = np.asarray(theta, dtype=np.float64)
        lam = _angle_terms(m, theta)[1]
        delta_theta = (_U * (lam + 3)) if fmt == "float32" else (_U64 * (lam + 2))
        floor = LIBM32 if fmt == "float32" else 2.0**-52
        store = 0.0 if dtype == "float64" or fmt == "float32" else FORMAT_UNITS[dtype]
        return mm * (th * delta_theta + _CMUL * u) + floor + store  # [eq:numerics-bound-recurrence]

    return bound


@dataclasses.dataclass(frozen=True)
class PipelineClass:
    r"""One way of building RoPE tables: its recipe, error bound and verdict.

    Attributes
    ----------
    name : str
    recipe : str
        The recipe in words.
    frequencies, positions, angles, tables : str
        The recipe as steps (what :func:`refimpl.numerics.pipeline_cos_sin` emulates):
        ``frequencies`` in ``{"exact", "float32", "pow", "exp-log", "exp2-log2",
        "ggml-product", "bfloat16", "float16"}``; ``positions`` in ``{"exact", "bfloat16",
        "float16"}``; ``angles`` in ``{"float64", "float32", "bfloat16", "float16",
        "recurrence"}``; ``tables`` in ``{"float64", "float32", "bfloat16", "float16",
        "dtype"}`` (the dtype the kernel holds, given with the bound).
    dtypes : tuple of str
        Input dtypes of suites in which the class is accepted (empty: a failing class).
    fix : str
        What to change when a kernel meets this class and no accepted one.
    bound_fn : callable
        ``bound_fn(positions, inv_freq, dtype)``; use :meth:`bound`.
    """

    name: str
    recipe: str
    frequencies: str
    positions: str
    angles: str
    tables: str
    dtypes: tuple
    fix: str
    bound_fn: Callable = dataclasses.field(repr=False)

    @property
    def accepted(self) -> bool:
        """Whether the class is accepted for some input dtype."""
        return bool(self.dtypes)

    def accepted_for(self, dtype: str) -> bool:
        """Whether the class is accepted in a suite of input ``dtype``."""
        check_choice(dtype, "dtype", SUITE_DTYPES)
        return dtype in self.dtypes

    def bound(self, positions, inv_freq, dtype: str = "float32") -> np.ndarray:
        r"""Bound on :math:`|\hat c - \cos m\theta_i|` and :math:`|\hat s - \sin m\theta_i|`.

        Parameters
        ----------
        positions : array_like
            Positions :math:`m`, broadcastable against ``inv_freq`` along the last axis
            (``(seq, 1)`` for one position per token, ``(seq, n)`` for one per pair).
        inv_freq : array_like, shape (n,)
            The exact frequencies :math:`\theta_i` (non-negative).
        dtype : {"float64", "float32", "bfloat16", "float16"}, default "float32"
            The dtype the kernel holds its tables in where the class stores them in it
            (``"float64-tables"``, ``"half-tables"``); ``"float64"``: not rounded.

        Returns
        -------
        numpy.ndarray
            The broadcast shape of ``positions`` and ``inv_freq``, float64, at most 2.

        Examples
        --------
        >>> b = PIPELINE_CLASSES["float32-angles"].bound([[0], [10**6]], [1.0, 0.01])
        >>> b.shape, bool(b[1, 0] > 0.05 > b[0, 0])
        ((2, 2), True)
        """
        check_choice(dtype, "dtype", tuple(FORMAT_UNITS))
        m = as_real_array(positions, "positions")
        theta = as_real_array(inv_freq, "inv_freq")
        if theta.ndim != 1 or np.any(theta < 0) or not np.all(np.isfinite(theta)):
            raise ValueError("inv_freq must be 1-D, finite and non-negative")
        if not np.all(np.isfinite(m)):
            raise ValueError("positions must be finite")
        return np.minimum(self.bound_fn(m, theta, dtype), _CAP)


_FIX_STAGE = {
    "positions": "positions held in {fmt} (positions above {exact} are not {fmt} integers): keep "
    "positions as int32/int64 and convert them to float32 or wider only to multiply",
    "frequencies": "frequencies (inv_freq) rounded to {fmt}, e.g. by casting the model with "
    "its inv_freq buffer: keep inv_freq in float32 or wider",
    "angles": "angles m * theta formed in {fmt} (e.g. the product under autocast): form them "
    "in float32 or wider",
    "tables": "cos/sin tables stored in {fmt} while the kernel's inputs are wider: keep the "
    "tables in float32 (or in the kernel's own dtype)",
}
# The largest integer n with every integer up to n exact in the format: 2**(p).
_EXACT = {"bfloat16": 256, "float16": 2048}


def _records() -> dict:
    every = SUITE_DTYPES
    rows = [
        ("float64-tables", "angles m theta_i and cos/sin in float64 or better, each table entry "
         "rounded once to the dtype the kernel holds it in", "exact", "exact", "float64",
         "dtype", every, "", _float64_bound),
        ("float32-angles", "float32 frequencies correctly rounded (the suite's inv_freq rounded "
         "once), one float32 product m * theta_i, float32 cos/sin (transformers' recipe)",
         "float32", "exact", "float32", "float32", every, "",
         _float32_bound(_delta_correct)),
        ("float32-pow", "float32 frequencies from powf, 1 / b**(2i/d) (transformers' inv_freq, "
         "vLLM's cache), float32 angles and cos/sin", "pow", "exact", "float32", "float32",
         every, "", _float32_bound(_delta_pow)),
        ("float32-exp2-log2", "float32 frequencies exp2(-(i / (d/2)) log2 b) (MLX's Metal and "
         "CUDA kernels), float32 angles and cos/sin", "exp2-log2", "exact", "float32",
         "float32", every, "", _float32_bound(_delta_exp2_log2)),
        ("float32-exp-log", "float32 frequencies exp(-i ln(b) / (d/2)) (MLX's CPU kernel), "
         "float32 angles and cos/sin", "exp-log", "exact", "float32", "float32", every, "",
         _float32_bound(_delta_exp_log)),
        ("float32-ggml-product", "float32 running product: the angle of pair i + 1 is the angle "
         "of pair i times s = powf(b, -2/d) (ggml's CPU kernel), float32 cos/sin",
         "ggml-product", "exact", "float32", "float32", every, "", _ggml_bound),
        ("float64-recurrence", "float64 tables built by angle addition z_{m+1} = z_m w",
         "exact", "exact", "recurrence", "dtype", every, "", _recurrence_bound("float64")),
        ("half-tables", "float32 angles, cos/sin tables rounded to the kernel's bfloat16/float16 "
         "dtype (transformers' cos.to(x.dtype), vLLM's cache in the model dtype)", "pow",
         "exact", "float32", "dtype", ("bfloat16", "float16"),
         "tables in bfloat16/float16 are accepted only for bfloat16/float16 inputs: keep them "
         "in float32 for float32 inputs", _half_bound("dtype", "tables")),
    ]  # fmt: skip
    for fmt in HALF_FORMATS:
        for stage in STAGES:
            steps = {
                "positions": ("pow", fmt, "float32", "float32"),
                "frequencies": (fmt, "exact", "float32", "float32"),
                "angles": ("pow", "exact", fmt, "float32"),
                "tables": ("pow", "exact", "float32", fmt),
            }[stage]
            fix = _FIX_STAGE[stage].format(fmt=fmt, exact=_EXACT[fmt])
            rows.append(
                (
                    f"{fmt}-{stage}",
                    f"float32 pipeline with the {stage} rounded to {fmt}",
                    *steps,
                    (),
                    fix,
                    _half_bound(fmt, stage),
                )
            )
    rows.append(
        ("float32-recurrence", "float32 tables built by angle addition z_{m+1} = z_m w (errors "
         "and an amplitude drift that grow with the position)", "pow", "exact", "recurrence",
         "float32", (), "build each row from its own angle m * theta_i instead of by angle "
         "addition (or add in float64)", _recurrence_bound("float32"))
    )  # fmt: skip
    return {r[0]: PipelineClass(*r) for r in rows}


#: The one registry of pipeline classes, ``name -> PipelineClass``, from the tightest to the
#: loosest accepted class, then the failing ones.
PIPELINE_CLASSES: Mapping[str, PipelineClass] = types.MappingProxyType(_records())


def accepted_classes(dtype: str) -> tuple[str, ...]:
    """Names of the classes accepted in a suite of input ``dtype``, in registry order.

    Examples
    --------
    >>> "half-tables" in accepted_classes("bfloat16"), "half-tables" in accepted_classes("float32")
    (True, False)
    """
    check_choice(dtype, "dtype", SUITE_DTYPES)
    return tuple(n for n, c in PIPELINE_CLASSES.items() if dtype in c.dtypes)


def pipeline_class_for_stage(
    stage: str, fmt: str, dtype: str | None = None
) -> PipelineClass | None:
    """The class of a pipeline whose ``stage`` is held in format ``fmt``.

    The rule: a half-precision stage ``(stage, fmt)`` is class ``f"{fmt}-{stage}"``, except
    tables rounded to the suite's own half ``dtype``, which are ``"half-tables"``; a stage in
    float32 or wider names no class of its own (None).

    Parameters
    ----------
    stage : {"positions", "frequencies", "angles", "tables"}
    fmt : {"float64", "float32", "bfloat16", "float16"}
    dtype : {"float32", "bfloat16", "float16"}, optional
        Input dtype of the suite (None: a float32 kernel).

    Returns
    -------
    PipelineClass or None

    Examples
    --------
    >>> pipeline_class_for_stage("angles", "bfloat16").name
    'bfloat16-angles'
    >>> pipeline_class_for_stage("tables", "bfloat16", "bfloat16").name
    'half-tables'
    >>> pipeline_class_for_stage("tables", "bfloat16", "float32").name
    'bfloat16-tables'
    """
    check_choice(stage, "stage", STAGES)
    check_choice(fmt, "fmt", tuple(FORMAT_UNITS))
    if dtype is not None:
        check_choice(dtype, "dtype", SUITE_DTYPES)
    if fmt not in HALF_FORMATS:
        return None
    if stage == "tables" and dtype == fmt:
        return PIPELINE_CLASSES["half-tables"]
    return PIPELINE_CLASSES[f"{fmt}-{stage}"]
