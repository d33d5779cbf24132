"""Graders for the book's numerical exercises: each compares a reader's answer with the
reference and returns a :class:`Grade` that passes, or says what the answer most likely did
wrong (the hint is chosen by recomputing the answer under each typical mistake). A failing
hint never states the reference value: where no typical mistake fits, it says where the answer
first differs, what it got there and how it misses (its sign, or too large or too small by a
rounded factor or percentage).

Which grader to call from a page:

* sinusoidal table -> :func:`grade_sinusoidal`
* RoPE frequencies -> :func:`grade_inv_freq`
* a RoPE function ``fn(x, positions)`` -> :func:`grade_apply_rope` (runs :func:`refimpl.check_rope`)
* rotated queries/keys as an array -> :func:`grade_rotated`
* YaRN frequencies -> :func:`grade_yarn_inv_freq`
* frequencies of any scaling method (linear, ntk, llama3, longrope, ...) ->
  :func:`grade_scaled_inv_freq`
* ALiBi slopes -> :func:`grade_alibi_slopes` (needs :mod:`refimpl.bias`)
* any number or array with a tolerance -> :func:`grade_value`
* a SymPy expression, compared symbolically -> :func:`grade_expression`
* any function run on hidden inputs -> :func:`grade_function`

A grader never raises because of the reader's answer: a function that raises, calls
``sys.exit``, hangs, returns None, NaN, a ragged list or the wrong type, an answer of the wrong
type or shape, or one with NaN is a failing :class:`Grade` whose hint says so. It raises only
for bad grader arguments (``dim``, ``base``, ``rtol``, ...), naming the argument.

The grader contract: an answer that is a function runs in a forked child process
(:mod:`refimpl._sandbox`) with a time limit of ``ANSWER_TIME_LIMIT`` seconds per grading
(0.75 s: on an idle machine a check stays under one second; on a loaded one an answer that is
waiting for a CPU is charged its CPU time, up to 10 s of wall time) and an address-space
limit; what it prints is shown after the grade. The reference is computed in the grader's own
process, which the answer never runs in, and only after checking that no function of refimpl
(or NumPy) has been replaced since the graders were imported; a replaced one fails the grade
and names it. An answer value built from a class the reader wrote is converted to an array in
a child process too.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable

import numpy as np

from . import _sandbox
from ._checks import (
    check_base,
    check_dim,
    check_keywords,
    check_nonnegative,
    check_pairing,
    check_positive,
    check_positive_int,
)
from .absolute import sinusoidal
from .check import check_rope
from .numerics import round_to
from .rotary import apply_rope, cos_sin
from .rotary import inv_freq as _inv_freq

__all__ = [
    "Grade",
    "grade_alibi_slopes",
    "grade_apply_rope",
    "grade_expression",
    "grade_function",
    "grade_inv_freq",
    "grade_rotated",
    "grade_scaled_inv_freq",
    "grade_sinusoidal",
    "grade_value",
    "grade_yarn_inv_freq",
]

#: Relative tolerance of the array graders: float32 answers (unit roundoff 6e-8) pass.
DEFAULT_RTOL = 1e-6
#: Time an answer may take in one grading, in seconds (see :mod:`refimpl._sandbox`).
ANSWER_TIME_LIMIT = _sandbox.ANSWER_TIME_LIMIT
#: A tolerance of 1 or more would accept any answer of the right sign and magnitude.
MAX_RTOL = 1.0


@dataclasses.dataclass(frozen=True)
class Grade:
    """Result of a grader: ``bool(grade)`` is whether it passed, ``str(grade)`` the hint.

    Attributes
    ----------
    passed : bool
    hint : str
        "Correct ..." when passed; otherwise the most likely mistake and how to fix it.
    max_error : float
        Largest absolute difference from the reference (inf when the shape is wrong).
    """

    passed: bool
    hint: str
    max_error: float

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.hint


def _check_rtol(rtol) -> float:
    """Return a grader's relative tolerance: a real number with 0 < rtol < MAX_RTOL."""
    rtol = check_positive(rtol, "rtol")
    if rtol >= MAX_RTOL:
        raise ValueError(f"rtol must be below {MAX_RTOL:g} (a relative tolerance), got {rtol}")
    return rtol


class _NotNumeric(Exception):
    """The reader's answer is not a real numeric array (becomes a failing Grade)."""


def _as_answer(answer, name: str = "answer") -> np.ndarray:
    if not _sandbox.plain_value(answer):  # the reader's own class: convert it in a child
        with _sandbox.Sandbox(answer) as box:
            try:
                arr = box.value()
            except _sandbox.AnswerFailed as exc:
                if exc.kind == "result":
                    text = f"{name} must be a real numeric array: it is {exc.message}"
                else:
                    text = f"converting {name} to an array {_failure(exc).rstrip('.')}"
                raise _NotNumeric(text) from None
        _show_output(box)
        return arr
    try:
        arr = np.asarray(answer)
    except (TypeError, ValueError) as exc:  # ragged lists and the like
        raise _NotNumeric(f"{name} must be a real numeric array: {exc}") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        kind = type(answer).__name__ if arr.dtype == object else f"dtype {arr.dtype}"
        raise _NotNumeric(f"{name} must be a real numeric array, got {kind}")
    return arr.astype(np.float64)


def _close(a, b, rtol, atol) -> bool:
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def _grade(answer, reference, mistakes, *, rtol, atol, what: str) -> Grade:
    """Pass if answer ~ reference; else the hint of the first mistake that reproduces it."""
    tampered = _tampered_grade()
    if tampered is not None:
        return tampered
    try:
        a = _as_answer(answer)
    except _NotNumeric as exc:
        return Grade(False, f"{exc}.", float("inf"))
    if a.shape != reference.shape:
        for cand, hint in mistakes:
            if a.shape == np.shape(cand) and _close(a, np.asarray(cand, float), rtol, atol):
                return Grade(False, hint, float("inf"))
        return Grade(
            False,
            f"{what} should have shape {reference.shape}, got {a.shape}.",
            float("inf"),
        )
    err = float(np.max(np.abs(a - reference))) if a.size else 0.0
    if not np.all(np.isfinite(a)):
        return Grade(False, f"{what} contains NaN or inf.", float("inf"))
    if _close(a, reference, rtol, atol):
        return Grade(True, f"Correct: {what} matches the reference (max error {err:.2g}).", err)
    for cand, hint in mistakes:
        cand = np.asarray(cand, dtype=np.float64)
        if cand.shape == a.shape and _close(a, cand, max(rtol, 1e-9), atol):
            return Grade(False, hint, err)
    bad = np.argwhere(np.abs(a - reference) > atol + rtol * np.abs(reference))[0]
    idx = tuple(int(i) for i in bad)
    off = _how_far(a[idx], reference[idx])
    if not idx:
        return Grade(False, f"{what} is {a[()]:.8g}: {off}.", err)
    return Grade(
        False,
        f"{what} differs from the reference first at index {idx}: got {a[idx]:.8g} ({off}).",
        err,
    )


def _how_far(got: float, want: float) -> str:
    """How a wrong number misses the reference, in words that do not give the reference away:
    its sign, or the direction and a rounded ratio ("too small by a factor of about 8")."""
    if want == 0.0:
        return "too large" if got > 0 else "too small"
    if got == 0.0:
        return "it should not be 0"
    if (got > 0) != (want > 0):
        return "its sign is wrong"
    ratio = got / want
    word = "too large" if ratio > 1 else "too small"
    ratio = max(ratio, 1.0 / ratio)
    if ratio >= _RATIO_IN_WORDS:
        return f"{word} by a factor of about {ratio:.2g}"
    return f"{word} by about {_relative(ratio - 1.0)}"


#: From this ratio on, a miss is said as a factor ("about 8"), below it as a percentage.
_RATIO_IN_WORDS = 1.5


def _relative(rel: float) -> str:
    """A relative miss rounded to one significant digit: a percentage ("0.3%") down to 0.01%,
    a power of ten below ("1 part in 1e+07")."""
    if rel >= 1e-4:
        return f"{float(f'{100 * rel:.1g}'):g}%"
    return f"1 part in {float(f'{1 / rel:.0e}'):.0e}"


def grade_inv_freq(answer, *, dim: int, base: float = 10000.0, rtol: float = DEFAULT_RTOL):
    r"""Grade a reader's RoPE frequencies :math:`\theta_i = b^{-2i/d}`, ``i = 0 .. d/2-1``.

    Parameters
    ----------
    answer : array_like, shape (dim/2,)
    dim : int
        Rotary width :math:`d`.
    base : float, default 10000.0
    rtol : float, default 1e-6

    Returns
    -------
    Grade
        Passes, or names the mistake: pair index from 1, exponent ``i/d``, reciprocal
        (:math:`b^{2i/d}`), wavelengths (:math:`2\pi b^{2i/d}`), all ``d`` exponents, reversed
        order, wrong base, or bfloat16 rounding.

    Notes
    -----
    Reference: book equation ``eq:rope-inv-freq`` (:func:`refimpl.inv_freq`).

    Examples
    --------
    >>> str(grade_inv_freq([1.0, 0.1, 0.01, 0.001], dim=8))
    'Correct: inv_freq matches the reference (max error 0).'
    >>> print(grade_inv_freq([0.1, 0.01, 0.001, 0.0001], dim=8))  # doctest: +ELLIPSIS
    The pair index starts at 1: theta_i = base**(-2i/d) uses i = 0 .. d/2-1, so theta_0 = ...
    """
    d = check_dim(dim)
    b = check_base(base)
    rtol = _check_rtol(rtol)
    ref = _inv_freq(d, b)
    i = np.arange(d // 2, dtype=np.float64)
    mistakes = [
        (
            b ** (-2.0 * (i + 1) / d),
            "The pair index starts at 1: theta_i = base**(-2i/d) uses i = 0 .. d/2-1, so "
            "theta_0 = 1 rad/token. Use np.arange(0, d, 2) / d in the exponent.",
        ),
        (
            b ** (-i / d),
            "The exponent is i/d: the frequencies are spread over d features instead of d/2 "
            "pairs. Use 2i/d (np.arange(0, d, 2) / d).",
        ),
        (
            1.0 / ref,
            "These are base**(+2i/d), the reciprocals: inv_freq is the angular rate in "
            "rad/token, base**(-2i/d), which decreases with i.",
        ),
        (
            2 * np.pi / ref,
            "These are wavelengths 2*pi*base**(2i/d) (tokens per turn); the question asks for "
            "the angular rates theta_i = base**(-2i/d).",
        ),
        (
            b ** (-np.arange(d) / d),
            f"There should be one frequency per pair (d/2 = {d // 2} of them), not one per "
            "feature: take i = 0 .. d/2-1 with exponent 2i/d.",
        ),
        (
            ref[::-1],
            "The order is reversed: pair 0 has the highest frequency (1 rad/token) and the last "
            "pair the lowest.",
        ),
        (
            _bf16(ref),
            "The values are rounded to bfloat16: compute inv_freq in float32 or float64.",
        ),
        (
            _rounded(ref, "float16"),
            "The values are rounded to float16 (11-bit significand, relative error up to "
            "5e-4): compute inv_freq in float32 or float64.",
        ),
    ]
    if d > 2:
        mistakes.insert(2, (b ** (-i / (d / 2 - 1)), _LINSPACE_HINT))
    grade = _grade(answer, ref, mistakes, rtol=rtol, atol=0.0, what="inv_freq")
    if not grade.passed and grade.hint.startswith("inv_freq differs"):
        a = _as_answer(answer)
        if a.shape == ref.shape and a.size > 1 and a[1] > 0 and a[0] == 1.0:
            with np.errstate(over="ignore"):
                b_fit = float(a[1] ** (-d / 2.0))
            if not (np.isfinite(b_fit) and b_fit > 1.0):
                return grade  # no base reproduces it; the generic hint stands
            if not _close(a, _inv_freq(d, b_fit), 1e-6, 0.0):
                return grade
            hint = (
                f"Your frequencies fit base {b_fit:.6g} instead of {b:g}: check the base "
                "(rope_theta) you used."
            )
            return Grade(False, hint, grade.max_error)
    return grade


def grade_sinusoidal(
    answer, *, num_positions: int, dim: int, base: float = 10000.0, rtol: float = DEFAULT_RTOL
):
    r"""Grade a reader's sinusoidal table :math:`PE[p, 2i] = \sin(p w_i)`,
    :math:`PE[p, 2i+1] = \cos(p w_i)`, :math:`w_i = b^{-2i/d}`, positions ``0 .. N-1``.

    Parameters
    ----------
    answer : array_like, shape (num_positions, dim)
    num_positions : int
    dim : int
    base : float, default 10000.0
    rtol : float, default 1e-6 (also used as an absolute tolerance)

    Returns
    -------
    Grade
        Passes, or names the mistake: sin and cos swapped, halves concatenated instead of
        interleaved, exponent ``i/d`` or ``2i/(d/2)``, positions from 1, transposed, the
        tensor2tensor timing signal.

    Notes
    -----
    Reference: book equation ``eq:pe-sinusoidal`` (:func:`refimpl.sinusoidal`).

    Examples
    --------
    >>> import refimpl
    >>> bool(grade_sinusoidal(refimpl.sinusoidal(5, 8), num_positions=5, dim=8))
    True
    """
    n = check_positive_int(num_positions, "num_positions")
    d = check_dim(dim)
    b = check_base(base)
    rtol = _check_rtol(rtol)
    ref = sinusoidal(n, d, base=b)
    p = np.arange(n, dtype=np.float64)[:, None]
    w = _inv_freq(d, b)
    ang = p * w  # (n, d/2)
    swapped = np.empty_like(ref)
    swapped[:, 0::2], swapped[:, 1::2] = np.cos(ang), np.sin(ang)
    halves = np.concatenate([np.sin(ang), np.cos(ang)], axis=1)
    w_d = b ** (-np.arange(d // 2) / d)
    over_d = np.empty_like(ref)
    over_d[:, 0::2], over_d[:, 1::2] = np.sin(p * w_d), np.cos(p * w_d)
    w_half = b ** (-2.0 * np.arange(d // 2) / (d / 2))  # d/2 pairs taken for the width d
    over_half = np.empty_like(ref)
    over_half[:, 0::2], over_half[:, 1::2] = np.sin(p * w_half), np.cos(p * w_half)
    mistakes = [
        (swapped, "sin and cos are swapped: PE[p, 2i] = sin(p w_i) and PE[p, 2i+1] = cos(p w_i)."),
        (
            halves,
            "The table puts all sines first and all cosines second; this convention interleaves "
            "them (sin in even columns, cos in odd columns).",
        ),
        (over_d, "The exponent is i/d instead of 2i/d (w_i = base**(-2i/d))."),
        (
            over_half,
            "The exponent is 2i/(d/2) = 4i/d: d in w_i = base**(-2i/d) is the width of the "
            f"table (d = {d} columns), not the number of pairs (d/2 = {d // 2}), so your "
            "frequencies fall twice as fast as they should. Use np.arange(0, d, 2) / d.",
        ),
        (
            sinusoidal(np.arange(1, n + 1), d, base=b),
            "Positions start at 1; the first row is position 0 (all sines 0, all cosines 1).",
        ),
        (ref.T, "The table is transposed: rows are positions, columns are features."),
    ]
    if d > 2:  # the timing signal's frequencies base**(-i/(d/2 - 1)), i = 0 .. d/2-1
        ang_t2t = p * b ** (-np.arange(d // 2) / (d / 2 - 1))
        inter_t2t = np.empty_like(ref)
        inter_t2t[:, 0::2], inter_t2t[:, 1::2] = np.sin(ang_t2t), np.cos(ang_t2t)
        mistakes += [
            (
                np.concatenate([np.sin(ang_t2t), np.cos(ang_t2t)], axis=1),
                "This is the tensor2tensor/fairseq timing signal, which differs from this "
                "table twice: it puts all sines first and all cosines second (this convention "
                "interleaves them: sin in even columns, cos in odd ones), and its frequencies "
                "are base**(-i/(d/2 - 1)) (log(base)/(d/2 - 1) increments) instead of "
                "w_i = base**(-2i/d). Use np.arange(0, d, 2) / d in the exponent.",
            ),
            (
                inter_t2t,
                "The exponent's denominator is d/2 - 1 instead of d/2 (w_i = base**(-i/(d/2-1)),"
                " as in the tensor2tensor/fairseq timing signal or np.linspace(0, 1, d//2)); "
                "the layout is right. Use w_i = base**(-2i/d): np.arange(0, d, 2) / d.",
            ),
        ]
    return _grade(answer, ref, mistakes, rtol=rtol, atol=rtol, what="the sinusoidal table")


def grade_rotated(
    answer,
    x,
    positions,
    *,
    base: float = 10000.0,
    pairing: str = "half",
    rtol: float = DEFAULT_RTOL,
):
    """Grade rotated queries/keys given as an array (the reader's RoPE applied to ``x``).

    Parameters
    ----------
    answer : array_like, shape (seq, dim)
    x : array_like, shape (seq, dim)
        The input the reader rotated.
    positions : array_like, shape (seq,)
    base : float, default 10000.0
    pairing : {"half", "interleaved"}, default "half"
    rtol : float, default 1e-6 (also the absolute tolerance)

    Returns
    -------
    Grade
        Passes, or names the mistake: other pairing, rotation sign, positions from 1.

    Examples
    --------
    >>> import refimpl
    >>> x = np.eye(4)
    >>> g = grade_rotated(refimpl.apply_rope(x, np.arange(4) + 1), x, np.arange(4))
    >>> print(g)  # doctest: +ELLIPSIS
    Positions are shifted by one (counted from 1): the first token has position 0 ...
    """
    check_pairing(pairing)
    b = check_base(base)
    rtol = _check_rtol(rtol)
    pos = np.asarray(positions, dtype=np.float64)
    ref = apply_rope(x, pos, base=b, pairing=pairing)
    other = "interleaved" if pairing == "half" else "half"
    mistakes = [
        (
            apply_rope(x, pos, base=b, pairing=other),
            f"You paired features {other} ({_PAIR_WORDS[other]}); the exercise uses "
            f"pairing='{pairing}' ({_PAIR_WORDS[pairing]}).",
        ),
        (
            apply_rope(x, -pos, base=b, pairing=pairing),
            "The rotation goes the wrong way (by -m*theta): use x1*cos - x2*sin for the first "
            "member and x2*cos + x1*sin for the second.",
        ),
        (
            apply_rope(x, pos + 1, base=b, pairing=pairing),
            "Positions are shifted by one (counted from 1): the first token has position 0 and "
            "is not rotated.",
        ),
    ]
    return _grade(answer, ref, mistakes, rtol=rtol, atol=rtol, what="the rotated array")


_PAIR_WORDS = {"half": "i with i + d/2", "interleaved": "2i with 2i + 1"}


def grade_apply_rope(
    fn: Callable,
    *,
    dim: int,
    base: float = 10000.0,
    pairing: str = "half",
    rotary_dim: int | None = None,
) -> Grade:
    """Grade a reader's RoPE function ``fn(x, positions)`` with :func:`refimpl.check_rope`.

    Parameters
    ----------
    fn : callable
        ``fn(x, positions)`` with ``x`` of shape ``(seq, dim)``.
    dim : int
    base : float, default 10000.0
    pairing : {"half", "interleaved"}, default "half"
    rotary_dim : int, optional

    Returns
    -------
    Grade
        Passes when the checker's verdict does; otherwise the hint names rotate_half without
        its minus sign (``x * C + swap(x) * S``, found on a probe) or is the checker's first
        finding. ``max_error`` is the report's. A ``fn`` that raises fails with its
        exception's message; one that overwrites its input ``x`` in place fails with that
        finding (callers keep using their q and k after RoPE).

    Raises
    ------
    TypeError, ValueError
        For bad grader arguments (``dim``, ``base``, ``pairing``, ``rotary_dim``): the
        expectation must be stated, never guessed.

    Examples
    --------
    >>> import refimpl
    >>> bool(grade_apply_rope(refimpl.apply_rope, dim=8))
    True
    >>> print(grade_apply_rope(lambda x, p: refimpl.apply_rope(x, -p), dim=8))  # doctest: +ELLIPSIS
    the rotation goes the wrong way (by -m*theta): ...
    """
    if not callable(fn):
        return Grade(False, f"fn must be a function fn(x, positions), got {_kind(fn)}.", _INF)
    d = check_dim(dim)
    b = check_base(base)
    check_pairing(pairing)
    tampered = _tampered_grade()
    if tampered is not None:
        return tampered
    with _sandbox.Sandbox(fn) as box:
        try:
            rep = check_rope(
                _Proxy(box),
                dim=d,
                base=b,
                pairing=pairing,
                rotary_dim=rotary_dim,
                # torch tensors only for an answer whose session has torch (never an import
                # of torch while grading, which alone would take seconds)
                backend="auto" if "torch" in sys.modules else "numpy",
            )
        except Exception:
            if box.error is None:
                raise  # the grader's own arguments, not the reader's function
            rep = None
        failure = box.fatal or (box.error if rep is None else None)
        form = None
        if failure is None and not box.mutated and not rep.ok:
            form = _unsigned_swap_hint(_Proxy(box), d, b, pairing, rotary_dim)
    _show_output(box)
    if failure is not None:
        return Grade(False, _answer_hint("fn(x, positions)", failure, _CALL_NOTE), _INF)
    if box.mutated:
        return Grade(False, _MUTATION_HINT, rep.max_error)
    if rep.ok:
        return Grade(True, "Correct: " + rep.findings[0], rep.max_error)
    return Grade(False, form or rep.findings[0], rep.max_error)


def _unsigned_swap_hint(fn, d: int, base: float, pairing: str, rotary_dim) -> str | None:
    """The hint for ``x * C + swap(x) * S`` (rotate_half without its minus sign), when ``fn``
    computes that on a probe; None when it does not, or fails on the probe.

    Each pair then gets the symmetric matrix [[cos, sin], [sin, cos]], which is no rotation
    (it does not keep norms), so the checker can only say that the pair blocks are not
    rotations; the minus sign is the usual cause.
    """
    r = d if rotary_dim is None else rotary_dim
    x = np.random.default_rng(_PROBE_SEED).standard_normal((_PROBE_LEN, d))
    pos = np.arange(_PROBE_LEN, dtype=np.float64) * 3.0 + 1.0
    cos, sin = cos_sin(pos, dim=r, base=base)
    if pairing == "half":
        first, second = slice(0, r // 2), slice(r // 2, r)
    else:
        first, second = slice(0, r, 2), slice(1, r, 2)
    want = x.copy()
    want[:, first] = x[:, first] * cos + x[:, second] * sin
    want[:, second] = x[:, second] * cos + x[:, first] * sin
    try:
        got = fn(x.copy(), pos)
    except _sandbox.AnswerFailed:
        return None
    if not np.allclose(got, want, rtol=DEFAULT_RTOL, atol=DEFAULT_RTOL):
        return None
    if pairing == "half":  # x1, x2: the two halves
        swap = "rotate_half(x) = cat(x2, x1) instead of cat(-x2, x1)"
    else:  # x1, x2: the even and the odd features
        swap = "each pair swapped as (x2, x1) instead of (-x2, x1)"
    return (
        f"The minus sign is missing: {swap}, so the first member of each pair gets "
        "x1*cos + x2*sin. That is the matrix [[cos, sin], [sin, cos]], not a rotation (it "
        "changes norms). Put the minus back: y1 = x1*cos - x2*sin, y2 = x2*cos + x1*sin."
    )


#: The probe of :func:`_unsigned_swap_hint`: positions 1, 4, 7, ... on seeded random features.
_PROBE_SEED, _PROBE_LEN = 29, 6


_INF = float("inf")
_MUTATION_HINT = (
    "fn overwrites its input x in place (for example x[..., :d//2] = ...): the caller's "
    "queries and keys change under it. Compute into a new array (np.empty_like(x), "
    "np.concatenate) and return it."
)
_CALL_NOTE = (
    " The grader calls it with a NumPy array x of shape (seq, dim) and positions of shape "
    "(seq,); make it run on those."
)


class _Proxy:
    """``fn(x, positions)`` for the checker, run in the sandbox's child: the result comes back
    as a float64 array of x's shape with finite values, or the failure is recorded in the
    sandbox and raised (the checker then probes the positions where the answer works, as it
    does for a short cos/sin cache)."""

    def __init__(self, box):
        self.box = box
        self.torch_ready = "torch" in sys.modules  # the child has what the parent had

    def __call__(self, x, positions):
        torch_args = hasattr(x, "detach")
        if torch_args:
            if not self.torch_ready:
                raise _sandbox.AnswerFailed("raised", "torch was not imported", "ImportError")
            x, positions = x.numpy(), positions.numpy()
        out = self.box.call(x, positions, torch_args=torch_args)
        if out.shape != x.shape:
            raise self.box._fail(
                _sandbox.AnswerFailed(
                    "result", f"an array of shape {out.shape}; it must have x's shape {x.shape}"
                )
            )
        if not _sandbox.finite(out):
            raise self.box._fail(_sandbox.AnswerFailed("result", "NaN or inf for finite input x"))
        return out


def _failure(exc) -> str:
    """What an answer did, as the end of a sentence that starts with its call."""
    if exc.kind == "raised":
        return f"raised {exc.type_name}: {exc.message or '(no message)'}."
    if exc.kind == "exit":
        return f"{exc.message}: an answer returns its result, it does not end the program."
    if exc.kind == "result":
        return f"returned {exc.message}."
    return f"{exc.message}."


def _answer_hint(call: str, exc, note: str = "") -> str:
    hint = f"{call} {_failure(exc)}"
    return hint + note if exc.kind == "raised" else hint


def _show_output(box) -> None:
    """Print what the answer printed in its process (bounded), after the grade is made."""
    if box.output:
        sys.stdout.write("".join(box.output))


def _tampered_grade():
    """A failing Grade when a function refimpl (or NumPy) loaded has been replaced since the
    graders were imported: the reference cannot be trusted then."""
    name = _sandbox.tampered(_SNAPSHOT)
    if name is None:
        return None
    return Grade(
        False,
        f"{name} is not the function that was loaded: it has been replaced in this session, "
        "so the grader cannot trust its reference. Restart the kernel and run the cells again "
        "without replacing it.",
        _INF,
    )


def _kind(value) -> str:
    return "..." if value is Ellipsis else type(value).__name__


def grade_yarn_inv_freq(
    answer,
    *,
    dim: int,
    base: float,
    factor: float,
    original_max_position: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    rtol: float = DEFAULT_RTOL,
) -> Grade:
    """Grade a reader's YaRN frequencies (transformers' ramp, truncated bounds).

    Parameters
    ----------
    answer : array_like, shape (dim/2,)
    dim, base, factor, original_max_position, beta_fast, beta_slow
        As in ``refimpl.ROPE_SCALINGS["yarn"]``.
    rtol : float, default 1e-6

    Returns
    -------
    Grade
        Passes, or names the mistake: no scaling, plain interpolation (all divided by the
        factor), multiplied by the factor, beta_fast and beta_slow swapped, the paper's ramp,
        untruncated bounds, the ramp reversed (the fast pairs divided), a bound one pair off.

    Notes
    -----
    Reference: :mod:`refimpl.scaling` (book part on context extension).
    """
    try:
        from .scaling import ROPE_SCALINGS
    except ImportError as exc:  # pragma: no cover - until the scaling module is present
        raise ImportError("grade_yarn_inv_freq needs refimpl.scaling") from exc
    rtol = _check_rtol(rtol)
    yarn = ROPE_SCALINGS["yarn"]
    common = dict(dim=dim, base=base, factor=factor, original_max_position=original_max_position)
    ref = np.asarray(yarn(**common, beta_fast=beta_fast, beta_slow=beta_slow).inv_freq)
    plain = _inv_freq(check_dim(dim), check_base(base))
    mistakes = [
        (
            plain,
            "These are the unscaled frequencies: YaRN divides the low frequencies by the "
            "factor and blends them with a ramp.",
        ),
        (
            plain / factor,
            "Every frequency is divided by the factor (plain position interpolation); YaRN "
            "keeps the high frequencies (r > beta_fast) unchanged.",
        ),
        (
            plain * factor,
            "The low frequencies are multiplied by the factor; they must be divided by it "
            "(interpolation slows them down).",
        ),
    ]
    variants = (
        (
            {"beta_fast": beta_slow, "beta_slow": beta_fast},
            "beta_fast and beta_slow are swapped: beta_fast (32) bounds the high-frequency end.",
        ),
        (
            {"beta_fast": beta_fast, "beta_slow": beta_slow, "ramp": "paper"},
            "You used the paper's ramp (linear in r = L/lambda); the exercise uses "
            "transformers' ramp, linear in the pair index between the rounded bounds.",
        ),
        (
            {"beta_fast": beta_fast, "beta_slow": beta_slow, "truncate": False},
            "The correction range is not rounded (truncate=False): transformers floors the "
            "low bound and ceils the high one.",
        ),
    )
    for kw, hint in variants:
        try:
            alt = yarn(**common, **kw).inv_freq
        except (TypeError, ValueError):
            continue  # a variant this version of the scaling module does not compute
        mistakes.append((np.asarray(alt), hint))
    mistakes += _yarn_ramp_mistakes(
        dim=dim,
        base=base,
        factor=factor,
        original_max_position=original_max_position,
        beta_fast=beta_fast,
        beta_slow=beta_slow,
    )
    return _grade(answer, ref, mistakes, rtol=rtol, atol=0.0, what="the YaRN inv_freq")


def _yarn_ramp_mistakes(
    *,
    dim,
    base,
    factor,
    original_max_position,
    beta_fast=32.0,
    beta_slow=1.0,
    truncate=None,
    ramp="transformers",
    **_,
) -> list:
    """(frequencies, hint) of YaRN's ramp gone wrong: reversed (the fast pairs divided), or
    its truncated bounds one pair off (either bound, or both, by one either way). None for
    the paper's ramp or untruncated bounds, whose ramps have no whole-pair bounds."""
    from .scaling import yarn_correction_range

    if ramp != "transformers" or truncate is False:
        return []

    d, b = check_dim(dim), check_base(base)
    low, high = yarn_correction_range(
        dim=d,
        base=b,
        original_max_position=original_max_position,
        beta_fast=beta_fast,
        beta_slow=beta_slow,
    )
    theta = _inv_freq(d, b)
    j = np.arange(d // 2, dtype=np.float64)

    def blend(w):  # [eq:yarn-inv-freq] with the ramp w
        return theta / factor * w + theta * (1.0 - w)

    def ramp(lo, hi):  # [eq:yarn-ramp-transformers]
        return np.clip((j - lo) / (hi - lo), 0.0, 1.0)

    mistakes = []
    if high > low:
        mistakes.append(
            (
                blend(1.0 - ramp(low, high)),
                "The ramp is reversed: your fast pairs (low index, more than beta_fast turns "
                "over the original context) are divided by the factor and your slow pairs are "
                "kept. YaRN keeps the fast pairs and divides the slow ones: the weight of "
                "theta_i / s, (j - low) / (high - low) clipped to [0, 1], grows with the pair "
                "index j.",
            )
        )
    for d_lo, d_hi in ((1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1), (1, -1), (-1, 1)):
        lo, hi = low + d_lo, high + d_hi
        if hi <= lo or lo < 0 or hi > d - 1:
            continue
        if d_lo == d_hi:
            which = f"both bounds are one pair too {_HIGH_LOW[d_lo]}"
        else:
            which = " and ".join(
                f"the {name} bound is one pair too {_HIGH_LOW[delta]}"
                for name, delta in (("low", d_lo), ("high", d_hi))
                if delta
            )
        mistakes.append(
            (
                blend(ramp(lo, hi)),
                f"The ramp's bounds are off by one: {which}. The ramp runs over the pair index "
                "j = 0 .. d/2-1 (from 0) between floor(low) and ceil(high) of the correction "
                "range, yarn_correction_range(...) with truncate=True.",
            )
        )
    return mistakes


_HIGH_LOW = {1: "high", -1: "low"}


def _llama3_mistakes(
    *, dim, base, factor, original_max_position, low_freq_factor=1.0, high_freq_factor=4.0, **_
) -> list:
    """(frequencies, hint) of Llama 3's bands gone wrong: the two factors swapped (the blend
    runs the wrong way, the fast pairs divided) and the turns taken as L*theta, without the
    2 pi of the wavelength."""
    d, b = check_dim(dim), check_base(base)
    lf, hf = float(low_freq_factor), float(high_freq_factor)
    theta = _inv_freq(d, b)
    L = float(original_max_position)

    def bands(r):  # [eq:llama3-bands], [eq:llama3-smooth] with the turns r
        g = (r > lf).astype(np.float64) if hf == lf else np.clip((r - lf) / (hf - lf), 0, 1)
        return (1.0 - g) * theta / factor + g * theta

    mistakes = [
        (
            bands(L * theta),
            "The turns are L*theta, without the 2 pi: a pair turns L / lambda = L*theta / (2 pi) "
            "times over L tokens (wavelength lambda = 2 pi / theta). Without the 2 pi every "
            "pair looks 2 pi times faster, so too few pairs are divided by the factor.",
        )
    ]
    if hf != lf:
        g = np.clip((hf - L * theta / (2 * np.pi)) / (hf - lf), 0.0, 1.0)
        mistakes.append(
            (
                (1.0 - g) * theta / factor + g * theta,
                "low_freq_factor and high_freq_factor are swapped: your fast pairs are divided by "
                "the factor and your slow ones kept. Llama 3 keeps the pairs that turn more than "
                "high_freq_factor times over L tokens, divides those that turn fewer than "
                "low_freq_factor times, and blends between with a weight of theta_i that grows "
                "with the turns.",
            )
        )
    return mistakes


#: Mistakes particular to a scaling method, for :func:`grade_scaled_inv_freq`.
_METHOD_MISTAKES = {"llama3": _llama3_mistakes, "yarn": _yarn_ramp_mistakes}


def grade_scaled_inv_freq(
    answer, *, rope_type: str, dim: int, base: float = 10000.0, rtol: float = DEFAULT_RTOL, **params
) -> Grade:
    """Grade a reader's frequencies for any method of ``refimpl.ROPE_SCALINGS``.

    Parameters
    ----------
    answer : array_like, shape (dim/2,)
    rope_type : str
        A key of ``refimpl.ROPE_SCALINGS`` (``"linear"``, ``"ntk"``, ``"llama3"``, ...).
    dim, base
        Rotary width and base.
    rtol : float, default 1e-6
    **params
        The method's parameters (``factor``, ``original_max_position``, ...).

    Returns
    -------
    Grade
        Passes, or names the mistake: unscaled frequencies, every frequency divided (or
        multiplied) by the factor, the frequencies of another scaling method with the same
        parameters; for ``"llama3"`` also the two band factors swapped and the turns taken
        as ``L * theta`` (the 2 pi forgotten), for ``"yarn"`` the mistakes of the ramp that
        :func:`grade_yarn_inv_freq` names.

    Examples
    --------
    >>> import refimpl
    >>> ans = refimpl.inv_freq(8) / 4
    >>> bool(grade_scaled_inv_freq(ans, rope_type="linear", dim=8, factor=4.0))
    True
    >>> print(grade_scaled_inv_freq(refimpl.inv_freq(8), rope_type="linear", dim=8, factor=4.0))
    These are the unscaled frequencies: the 'linear' method changes them.
    """
    from .scaling import ROPE_SCALINGS

    rtol = _check_rtol(rtol)
    fn = ROPE_SCALINGS[rope_type]  # an unknown type raises, listing the known ones
    check_keywords(
        f"grade_scaled_inv_freq(rope_type={rope_type!r})",
        params,
        ["answer", "rope_type", "dim", "base", "rtol", *fn.parameters[2:]],
    )
    ref = np.asarray(fn(dim=dim, base=base, **params).inv_freq, dtype=np.float64)
    plain = _inv_freq(check_dim(dim), check_base(base))
    mistakes = [
        (plain, f"These are the unscaled frequencies: the {rope_type!r} method changes them.")
    ]
    factor = params.get("factor")
    if factor is not None:
        mistakes += [
            (
                plain / factor,
                "Every frequency is divided by the factor (plain position interpolation); "
                f"the {rope_type!r} method treats pairs differently.",
            ),
            (plain * factor, "The frequencies are multiplied by the factor; scaling divides them."),
        ]
    for other, other_fn in ROPE_SCALINGS.items():
        if other in (rope_type, "default"):
            continue
        try:
            alt = other_fn(dim=dim, base=base, **params).inv_freq
        except (TypeError, ValueError):
            continue
        mistakes.append(
            (np.asarray(alt), f"These are the {other!r} frequencies, not the {rope_type!r} ones.")
        )
    if rope_type in _METHOD_MISTAKES:
        defaults = {
            k: v.default
            for k, v in inspect.signature(fn.frequencies).parameters.items()
            if v.default is not inspect.Parameter.empty
        }
        mistakes += _METHOD_MISTAKES[rope_type](**{**defaults, "dim": dim, "base": base, **params})
    return _grade(answer, ref, mistakes, rtol=rtol, atol=0.0, what=f"the {rope_type} inv_freq")


def grade_alibi_slopes(answer, *, n_heads: int, rtol: float = DEFAULT_RTOL) -> Grade:
    """Grade a reader's ALiBi slopes (ofirpress/BLOOM order for any number of heads).

    Parameters
    ----------
    answer : array_like, shape (n_heads,)
    n_heads : int
    rtol : float, default 1e-6

    Returns
    -------
    Grade
        Passes, or names the mistake: head index from 0, reversed order, negative slopes,
        the power-of-two list truncated for a non-power-of-two head count.

    Notes
    -----
    Reference: ``refimpl.alibi_slopes`` (book page on ALiBi).
    """
    try:
        from .bias import alibi_slopes
    except ImportError as exc:  # pragma: no cover - until the bias module is present
        raise ImportError("grade_alibi_slopes needs refimpl.bias") from exc
    n = check_positive_int(n_heads, "n_heads")
    rtol = _check_rtol(rtol)
    ref = np.asarray(alibi_slopes(n), dtype=np.float64)
    p2 = 2 ** int(np.ceil(np.log2(n)))
    h = np.arange(n, dtype=np.float64)
    mistakes = [
        (
            2.0 ** (-8.0 * h / n),
            "The head index starts at 0: slopes are 2**(-8h/n) for "
            "h = 1 .. n (the first slope is 2**(-8/n), not 1).",
        ),
        (ref[::-1], "The order is reversed: the first head has the largest slope."),
        (-ref, "Slopes are positive; the bias is -slope * distance."),
        (
            np.asarray(alibi_slopes(p2))[:n],
            "For a head count that is not a power of two, take "
            "the 2**floor(log2 n) geometric slopes, then every other slope of the list for twice "
            "as many heads; truncating the next power of two's list gives different slopes.",
        ),
    ]
    if n != p2:
        mistakes.append(
            (
                2.0 ** (-8.0 * (h + 1) / n),
                f"You applied the power-of-two formula 2**(-8h/n) to n = {n} heads. It holds "
                f"only when n is a power of two; for n = {n}, take the "
                f"{p2 // 2} slopes 2**(-8h/{p2 // 2}) of the nearest lower power of two, then "
                f"every other slope of the {p2}-head list (the odd ones) for the remaining "
                f"{n - p2 // 2} heads.",
            )
        )
    return _grade(answer, ref, mistakes, rtol=rtol, atol=0.0, what="the ALiBi slopes")


def _bf16(x: np.ndarray) -> np.ndarray:
    """Round to bfloat16 (nearest even), back to float64."""
    return _rounded(x, "bfloat16")


def _rounded(x: np.ndarray, fmt: str) -> np.ndarray:
    """Round to ``fmt`` (nearest even), back to float64."""
    return np.asarray(round_to(x, fmt), dtype=np.float64)


#: The exponent denominator d/2 - 1 (np.linspace(0, 1, d/2) includes its endpoint).
_LINSPACE_HINT = (
    "The exponent's denominator is d/2 - 1 instead of d/2: theta_i = base**(-i/(d/2 - 1)) "
    "reaches base**-1 at the last pair (np.linspace(0, 1, d//2) includes its endpoint, as the "
    "tensor2tensor/fairseq timing signal does). The base is right; RoPE's last exponent is "
    "(d-2)/d: use np.arange(0, d, 2) / d."
)


def grade_value(
    answer,
    expected,
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = 0.0,
    what: str = "the answer",
    mistakes=(),
) -> Grade:
    """Grade a number or an array against the expected value, with a tolerance and hints.

    Parameters
    ----------
    answer : array_like
        The reader's value (a number, a list, an array).
    expected : array_like
        The reference value, of the shape the answer must have.
    rtol : float, default 1e-6
        Relative tolerance, ``0 < rtol < 1``.
    atol : float, default 0.0
        Absolute tolerance, ``>= 0`` (for answers that may be 0).
    what : str
        How the hint names the value ("the longest wavelength").
    mistakes : sequence of (value, hint)
        Values that typical mistakes give; an answer matching one gets its hint.

    Returns
    -------
    Grade
        Passes when ``|answer - expected| <= atol + rtol |expected|`` elementwise. A failing
        hint without a matching mistake says where the answer differs, what it got and how
        it misses (sign, direction, a rounded ratio), never the expected value.

    Examples
    --------
    >>> print(grade_value(3.0, 3.0 + 1e-9, what="the count"))  # doctest: +ELLIPSIS
    Correct: the count matches the reference ...
    >>> print(grade_value(4, 3, what="the count", mistakes=[(4, "Off by one.")]))
    Off by one.
    >>> print(grade_value(2 * np.pi, 16 * np.pi, what="the turn"))
    the turn is 6.2831853: too small by a factor of about 8.
    """
    rtol = _check_rtol(rtol)
    atol = check_nonnegative(atol, "atol")
    ref = _as_answer(expected, "expected")
    return _grade(answer, ref, list(mistakes), rtol=rtol, atol=atol, what=what)


def grade_expression(answer, expected, *, what: str = "the expression", mistakes=()) -> Grade:
    """Grade a SymPy expression (or matrix) by comparing it symbolically with the expected one.

    Parameters
    ----------
    answer : sympy.Expr or sympy.Matrix
        The reader's expression, in the symbols the exercise names.
    expected : sympy.Expr or sympy.Matrix
    what : str
        How the hint names the expression.
    mistakes : sequence of (expression, hint)
        Expressions that typical mistakes give.

    Returns
    -------
    Grade
        Passes when ``answer - expected`` simplifies to zero (after expanding trigonometric
        sums); ``max_error`` is 0 or inf. Strings are refused (they would be evaluated).

    Examples
    --------
    >>> import sympy as sp
    >>> a, b = sp.symbols("a b")
    >>> bool(grade_expression(sp.cos(a - b), sp.cos(a) * sp.cos(b) + sp.sin(a) * sp.sin(b)))
    True
    """
    import sympy as sp

    if isinstance(answer, str) or not isinstance(answer, (sp.Basic, sp.MatrixBase, int, float)):
        return Grade(
            False,
            f"{what} must be a SymPy expression (built from the symbols), got {_kind(answer)}.",
            _INF,
        )
    if _sym_equal(sp, answer, expected):
        return Grade(True, f"Correct: {what} equals the reference symbolically.", 0.0)
    for cand, hint in mistakes:
        if _sym_equal(sp, answer, cand):
            return Grade(False, hint, _INF)
    return Grade(False, f"{what} is not equal to the reference: {answer} (simplified).", _INF)


def _sym_equal(sp, a, b) -> bool:
    """Whether a - b simplifies to zero (elementwise for matrices)."""
    if isinstance(a, sp.MatrixBase) or isinstance(b, sp.MatrixBase):
        a, b = sp.Matrix(a), sp.Matrix(b)
        return a.shape == b.shape and all(_sym_equal(sp, x, y) for x, y in zip(a, b, strict=True))
    diff = sp.sympify(a) - sp.sympify(b)
    return sp.simplify(sp.expand_trig(sp.expand(diff))) == 0


def grade_function(
    fn,
    reference: Callable,
    inputs,
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = 0.0,
    what: str = "fn",
    mistakes=(),
) -> Grade:
    """Grade a reader's function by running it and the reference on inputs the reader has not
    seen.

    Parameters
    ----------
    fn : callable
        The reader's function.
    reference : callable
        The correct function, same signature.
    inputs : sequence of tuple
        Argument tuples; each call gets fresh copies of the arrays.
    rtol, atol : float
        Tolerances of the comparison (as :func:`grade_value`).
    what : str
        How the hint names the function ("my_rope").
    mistakes : sequence of (callable, hint)
        Functions that make a typical mistake; an answer that agrees with one on an input gets
        its hint.

    Returns
    -------
    Grade
        Passes when every output matches. Fails, with the message, when ``fn`` raises; fails
        when ``fn`` writes into an input array; otherwise names the first input that differs.

    Examples
    --------
    >>> bool(grade_function(lambda v: 2 * v, lambda v: v + v, [(np.arange(3.0),)]))
    True
    >>> g = grade_function(lambda v: v.__imul__(2), lambda v: 2 * v, [(np.ones(2),)], what="f")
    >>> print(g)  # doctest: +ELLIPSIS
    f overwrites its input in place: ...
    """
    if not callable(fn):
        return Grade(False, f"{what} must be a function, got {_kind(fn)}.", _INF)
    rtol = _check_rtol(rtol)
    atol = check_nonnegative(atol, "atol")
    inputs = list(inputs)
    worst = 0.0
    with _sandbox.Sandbox(fn, inputs) as box:
        for k, args in enumerate(inputs):
            try:
                got = box.call_input(k)
            except _sandbox.AnswerFailed as exc:
                _show_output(box)
                return Grade(False, _answer_hint(what, exc), _INF)
            if box.mutated:
                _show_output(box)
                return Grade(
                    False,
                    f"{what} overwrites its input in place: the caller's array changes under "
                    "it. Compute into a new array and return it.",
                    _INF,
                )
            ref = _as_answer(reference(*_copies(args)), "expected")
            cands = [(_as_answer(m(*_copies(args)), "mistake"), hint) for m, hint in mistakes]
            g = _grade(got, ref, cands, rtol=rtol, atol=atol, what=f"{what}'s output")
            if not g:
                _show_output(box)
                shown = ", ".join(_describe_arg(a) for a in args)
                return Grade(False, f"On the hidden input #{k} ({shown}): {g.hint}", g.max_error)
            worst = max(worst, g.max_error)
    _show_output(box)
    return Grade(
        True,
        f"Correct: {what} matches the reference on every hidden input (max error {worst:.2g}).",
        worst,
    )


def _copies(args) -> tuple:
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def _describe_arg(a) -> str:
    return f"array of shape {a.shape}" if isinstance(a, np.ndarray) else repr(a)


# Every function and class of refimpl and NumPy as the graders were imported (checked before a
# reference is trusted).
_SNAPSHOT = _sandbox.snapshot()
