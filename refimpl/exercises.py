"""Graders for the book's numerical exercises: each compares a reader's answer with the
reference and returns a :class:`Grade` that passes, or says what the answer most likely did
wrong (the hint is chosen by recomputing the answer under each typical mistake).

Which grader to call from a page:

* sinusoidal table -> :func:`grade_sinusoidal`
* RoPE frequencies -> :func:`grade_inv_freq`
* a RoPE function ``fn(x, positions)`` -> :func:`grade_apply_rope` (runs :func:`refimpl.check_rope`)
* rotated queries/keys as an array -> :func:`grade_rotated`
* YaRN frequencies -> :func:`grade_yarn_inv_freq`
* frequencies of any scaling method (linear, ntk, llama3, longrope, ...) ->
  :func:`grade_scaled_inv_freq`
* ALiBi slopes -> :func:`grade_alibi_slopes` (needs :mod:`refimpl.bias`)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ._checks import check_base, check_dim, check_pairing, check_positive, check_positive_int
from .absolute import sinusoidal
from .check import check_rope
from .numerics import round_to
from .rotary import apply_rope
from .rotary import inv_freq as _inv_freq

__all__ = [
    "Grade",
    "grade_alibi_slopes",
    "grade_apply_rope",
    "grade_inv_freq",
    "grade_rotated",
    "grade_scaled_inv_freq",
    "grade_sinusoidal",
    "grade_yarn_inv_freq",
]

#: Relative tolerance of the array graders: float32 answers (unit roundoff 6e-8) pass.
DEFAULT_RTOL = 1e-6


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


def _as_answer(answer, name: str = "answer") -> np.ndarray:
    arr = np.asarray(answer)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _close(a, b, rtol, atol) -> bool:
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def _grade(answer, reference, mistakes, *, rtol, atol, what: str) -> Grade:
    """Pass if answer ~ reference; else the hint of the first mistake that reproduces it."""
    a = _as_answer(answer)
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
    return Grade(
        False,
        f"{what} differs from the reference first at index {idx}: got {a[idx]:.8g}, expected "
        f"{reference[idx]:.8g} (max error {err:.2g}).",
        err,
    )


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
    rtol = check_positive(rtol, "rtol")
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
    ]
    grade = _grade(answer, ref, mistakes, rtol=rtol, atol=0.0, what="inv_freq")
    if not grade.passed and grade.hint.startswith("inv_freq differs"):
        a = _as_answer(answer)
        if a.shape == ref.shape and a.size > 1 and a[1] > 0 and a[0] == 1.0:
            b_fit = a[1] ** (-d / 2.0)
            if b_fit <= 1.0 or not _close(a, _inv_freq(d, b_fit), 1e-6, 0.0):
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
        interleaved, exponent ``i/d``, positions from 1, transposed, or wrong base.

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
    rtol = check_positive(rtol, "rtol")
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
    mistakes = [
        (swapped, "sin and cos are swapped: PE[p, 2i] = sin(p w_i) and PE[p, 2i+1] = cos(p w_i)."),
        (
            halves,
            "The table puts all sines first and all cosines second; this convention interleaves "
            "them (sin in even columns, cos in odd columns).",
        ),
        (over_d, "The exponent is i/d instead of 2i/d (w_i = base**(-2i/d))."),
        (
            sinusoidal(np.arange(1, n + 1), d, base=b),
            "Positions start at 1; the first row is position 0 (all sines 0, all cosines 1).",
        ),
        (ref.T, "The table is transposed: rows are positions, columns are features."),
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
    rtol = check_positive(rtol, "rtol")
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
        Passes when the checker's verdict does; otherwise the hint is the checker's first
        finding. ``max_error`` is the report's.

    Examples
    --------
    >>> import refimpl
    >>> bool(grade_apply_rope(refimpl.apply_rope, dim=8))
    True
    >>> print(grade_apply_rope(lambda x, p: refimpl.apply_rope(x, -p), dim=8))  # doctest: +ELLIPSIS
    the rotation goes the wrong way (by -m*theta): ...
    """
    rep = check_rope(fn, dim=dim, base=base, pairing=pairing, rotary_dim=rotary_dim)
    if rep.ok:
        return Grade(True, "Correct: " + rep.findings[0], rep.max_error)
    return Grade(False, rep.findings[0], rep.max_error)


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
        untruncated bounds.

    Notes
    -----
    Reference: :mod:`refimpl.scaling` (book part on context extension).
    """
    try:
        from .scaling import ROPE_SCALINGS
    except ImportError as exc:  # pragma: no cover - until the scaling module is present
        raise ImportError("grade_yarn_inv_freq needs refimpl.scaling") from exc
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
    return _grade(answer, ref, mistakes, rtol=rtol, atol=0.0, what="the YaRN inv_freq")


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
        multiplied) by the factor, or the frequencies of another scaling method with the same
        parameters.

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

    fn = ROPE_SCALINGS[rope_type]  # an unknown type raises, listing the known ones
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
    return _grade(answer, ref, mistakes, rtol=rtol, atol=0.0, what="the ALiBi slopes")


def _bf16(x: np.ndarray) -> np.ndarray:
    """Round to bfloat16 (nearest even), back to float64."""
    return np.asarray(round_to(x, "bfloat16"), dtype=np.float64)
