"""Context extension of RoPE: one record per scaling method, and the registry of records.

:data:`ROPE_SCALINGS` maps a rope type to a :class:`ScalingMethod`. Calling the record computes
the method's exact float64 frequencies, ``ROPE_SCALINGS[name](dim=..., base=..., **params) ->
ScaledFrequencies``; the record also holds what a config reader, the checker and the CLI need
to know about the method: its config keys, defaults and required parameters, the float32
arithmetic of transformers 5.24 (:meth:`ScalingMethod.float32`), its attention factor, the
line ``describe`` prints, the family the checker reports and a fit of its parameters to
measured frequencies. A new method is one block in this file.

The parameter names are shared across methods:

* ``dim``: rotary width :math:`d` (even); the frequencies have ``dim // 2`` entries
  (``proportional``: the whole head :math:`D`, every pair listed, the unrotated ones as 0).
* ``base``: base :math:`b` of the unscaled frequencies :math:`\\theta_i = b^{-2i/d}`.
* ``factor``: scale :math:`s \\ge 1` (context ratio; for ``llama3`` the low-band divisor).
* ``original_max_position``: pre-training context :math:`L` (transformers:
  ``original_max_position_embeddings``).
* ``max_position``: ``max_position_embeddings`` (dynamic NTK's :math:`L`; LongRoPE's default
  factor ``max_position / original_max_position``).
* ``seq_len``: sequence length the frequencies are computed for (dynamic, longrope).
* ``beta_fast``, ``beta_slow``: YaRN's rotation counts (the paper's :math:`\\beta` and
  :math:`\\alpha`); ``mscale``, ``mscale_all_dim``, ``attention_factor``, ``truncate``: YaRN's
  magnitude and ramp.
* ``low_freq_factor``, ``high_freq_factor``: Llama 3's band edges (equal: a hard step).
* ``short_factor``, ``long_factor``: LongRoPE's per-pair factors (length ``dim // 2``).
* ``partial_rotary_factor``: ``proportional``'s rotated fraction :math:`p` of the head.
* ``alpha``: HunYuan's NTK scale (``ntk_alpha``: the static base :math:`b\\,\\alpha^{d/(d-2)}`).

Frequencies are computed in float64 from the method's formula (the exact reference).
:func:`transformers_float32_frequencies` and :meth:`ScalingMethod.float32` repeat the float32
arithmetic of transformers 5.24 operation by operation; the only step they cannot reproduce
bit for bit is torch's float32 ``pow``, which is not correctly rounded (see Notes there).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from ._checks import (
    MAX_POSITION,
    check_base,
    check_choice,
    check_dim,
    check_keywords,
    check_positive,
    check_positive_int,
    check_real,
)
from ._exact import ExactFrequencies, _Blend, _pi_fraction, _Power, _Turns, _Zero
from .rotary import inv_freq as _default_inv_freq

__all__ = [
    "ROPE_SCALINGS",
    "ScaledFrequencies",
    "ScalingMethod",
    "UnknownRopeTypeError",
    "default_frequencies",
    "dynamic_frequencies",
    "dynamic_ntk_base",
    "freq_factors_frequencies",
    "linear_frequencies",
    "llama3_frequencies",
    "longrope_attention_scaling",
    "longrope_frequencies",
    "ntk_alpha_base",
    "ntk_alpha_frequencies",
    "ntk_base",
    "ntk_frequencies",
    "proportional_frequencies",
    "resonance_frequencies",
    "scale_frequencies",
    "transformers_float32_frequencies",
    "yarn_attention_scaling",
    "yarn_correction_range",
    "yarn_frequencies",
    "yarn_ramp",
]

YARN_RAMPS = ("transformers", "paper")


class ScaledFrequencies(NamedTuple):
    """Frequencies of a scaled RoPE and the factor transformers multiplies into cos and sin.

    Parameters
    ----------
    inv_freq : numpy.ndarray, shape (dim // 2,)
        Scaled inverse frequencies :math:`\\theta'_i` (float64 from the methods; float32 from
        :func:`transformers_float32_frequencies`).
    attention_scaling : float
        Multiplies both cos and sin, so attention logits are multiplied by its square.
    """

    inv_freq: np.ndarray
    attention_scaling: float


class UnknownRopeTypeError(KeyError, ValueError):
    """An unknown rope type was looked up (a ``KeyError`` for dict semantics, and a
    ``ValueError`` like every other bad argument)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _Registry(dict):
    """The rope-type registry: a dict whose failed lookups list the known names."""

    def __missing__(self, key):
        raise UnknownRopeTypeError(
            f"unknown rope type {key!r}; known rope types: {', '.join(sorted(self))}"
        )


# --------------------------------------------------------------------------- validation


def _check_factor(factor, name: str = "factor") -> float:
    s = check_real(factor, name)
    if s < 1.0:
        raise ValueError(f"{name} must be >= 1 (a scaling never shortens the context), got {s}")
    return s


def _check_length(value, name: str) -> int:
    """A context or sequence length: a positive integer up to ``_checks.MAX_POSITION``."""
    return check_positive_int(value, name, maximum=MAX_POSITION)


def _check_factor_list(values, name: str, n: int) -> np.ndarray:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a list of {n} numbers, got {type(values).__name__}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must contain only numbers, found {type(v).__name__} {v!r}")
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(
            f"{name} must have dim // 2 = {n} entries (one per pair), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must contain finite positive numbers")
    return arr


def _finite_base(compute: Callable[[], float], name: str, value) -> float:
    """The base ``compute()`` returns, or a ValueError naming ``name`` when it overflows."""
    try:
        b = compute()
    except OverflowError:
        b = math.inf
    if not math.isfinite(b):
        raise ValueError(
            f"{name}={value!r} is too large: the scaled base b * s**(d/(d-2)) overflows float64"
        )
    return float(b)


def _check_ntk_dim(dim) -> int:
    d = check_dim(dim)
    if d < 4:
        raise ValueError(f"dim must be at least 4 for NTK-aware scaling (d/(d-2)), got {d}")
    return d


# --------------------------------------------------------------------------- methods


def default_frequencies(*, dim: int, base: float = 10000.0) -> ScaledFrequencies:
    r"""Unscaled RoPE frequencies (transformers' ``"default"``).

    Parameters
    ----------
    dim : int
        Rotary width :math:`d`.
    base : float, default 10000.0
        Base :math:`b`.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` (shape ``(dim // 2,)``, float64) :math:`\theta_i = b^{-2i/d}` and
        ``attention_scaling`` 1.0.

    Notes
    -----
    Book equation ``eq:rope-inv-freq``.

    Examples
    --------
    >>> default_frequencies(dim=4, base=100.0)
    ScaledFrequencies(inv_freq=array([1. , 0.1]), attention_scaling=1.0)
    """
    return ScaledFrequencies(_default_inv_freq(check_dim(dim), base), 1.0)


def linear_frequencies(*, dim: int, base: float = 10000.0, factor: float) -> ScaledFrequencies:
    r"""Position interpolation (transformers' ``"linear"``): every frequency divided by ``factor``.

    Parameters
    ----------
    dim : int
        Rotary width :math:`d`.
    base : float, default 10000.0
        Base :math:`b`.
    factor : float
        Scale :math:`s \ge 1`; position :math:`m` is rotated as :math:`m/s` was.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` :math:`\theta_i / s` (float64, ``(dim // 2,)``), ``attention_scaling`` 1.0.

    Notes
    -----
    Book equation ``eq:scaling-linear``. Identical to feeding positions :math:`m/s` in exact
    arithmetic; float32 implementations that divide the positions instead round differently.

    References
    ----------
    Chen et al., "Extending context window of large language models via positional
    interpolation", 2023.

    Examples
    --------
    >>> linear_frequencies(dim=4, base=100.0, factor=4.0).inv_freq
    array([0.25 , 0.025])
    """
    s = _check_factor(factor)
    theta = _default_inv_freq(check_dim(dim), base)
    return ScaledFrequencies(theta / s, 1.0)  # [eq:scaling-linear]


def ntk_base(*, dim: int, base: float = 10000.0, factor: float) -> float:
    r"""The NTK-aware base :math:`b' = b\,s^{d/(d-2)}`.

    Chosen so that the lowest frequency :math:`b'^{-(d-2)/d}` equals :math:`b^{-(d-2)/d}/s`
    (interpolated exactly as position interpolation would) while :math:`\theta_0 = 1` is kept.

    Parameters
    ----------
    dim : int
        Rotary width :math:`d \ge 4`.
    base : float, default 10000.0
    factor : float
        :math:`s \ge 1`.

    Returns
    -------
    float

    Notes
    -----
    Book equation ``eq:ntk-base``.

    Examples
    --------
    >>> round(ntk_base(dim=4, base=100.0, factor=4.0), 6)  # 100 * 4**2
    1600.0
    """
    d = _check_ntk_dim(dim)
    b = check_base(base)
    s = _check_factor(factor)
    return _finite_base(lambda: b * s ** (d / (d - 2)), "factor", s)  # [eq:ntk-base]


def ntk_frequencies(*, dim: int, base: float = 10000.0, factor: float) -> ScaledFrequencies:
    r"""NTK-aware scaling: RoPE with the base changed to :math:`b\,s^{d/(d-2)}`.

    Parameters
    ----------
    dim : int
        Rotary width :math:`d \ge 4`.
    base : float, default 10000.0
    factor : float
        :math:`s \ge 1`.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` :math:`b'^{-2i/d}` (float64), ``attention_scaling`` 1.0. Pair 0 keeps
        :math:`\theta_0 = 1`; the last pair is divided by exactly :math:`s`; pair :math:`i` is
        divided by :math:`s^{2i/(d-2)}`.

    Notes
    -----
    Book equations ``eq:ntk-base`` and ``eq:ntk-per-pair``. transformers has no static NTK type
    (models write ``rope_theta = b'`` directly).

    References
    ----------
    bloc97, "NTK-aware scaled RoPE", 2023; restated in Peng et al. (YaRN), 2023, Definition 1.

    Examples
    --------
    >>> ntk_frequencies(dim=4, base=100.0, factor=4.0).inv_freq  # lowest: 0.1 / 4
    array([1.   , 0.025])
    """
    d = _check_ntk_dim(dim)
    b_new = ntk_base(dim=d, base=base, factor=factor)
    return ScaledFrequencies(_default_inv_freq(d, b_new), 1.0)  # [eq:ntk-per-pair]


def dynamic_ntk_base(
    *, dim: int, base: float = 10000.0, factor: float, max_position: int, seq_len: int | None = None
) -> float:
    r"""Dynamic NTK's base for a sequence of length ``seq_len``, as transformers computes it.

    :math:`b' = b\,(s\,l/L - (s - 1))^{d/(d-2)}` with :math:`l = \max(\text{seq\_len}, L)` and
    :math:`L` = ``max_position`` (``max_position_embeddings``, not the original context).

    Parameters
    ----------
    dim : int
        Rotary width :math:`d \ge 4`.
    base : float, default 10000.0
    factor : float
        Configured :math:`s \ge 1`.
    max_position : int
        :math:`L`.
    seq_len : int, optional
        Current sequence length :math:`l`; ``None`` means :math:`L` (no scaling).

    Returns
    -------
    float

    Notes
    -----
    Book equation ``eq:dynamic-ntk-base``. The effective NTK scale is :math:`s l/L - (s-1)`,
    not the YaRN paper's :math:`\max(1, l/L)`; they agree only for :math:`s = 1` and at
    :math:`l = L`.

    Examples
    --------
    >>> dynamic_ntk_base(dim=4, base=100.0, factor=2.0, max_position=10, seq_len=5)
    100.0
    >>> dynamic_ntk_base(dim=4, base=100.0, factor=2.0, max_position=10, seq_len=20)  # 100*3**2
    900.0
    """
    d = _check_ntk_dim(dim)
    b = check_base(base)
    s = _check_factor(factor)
    L = _check_length(max_position, "max_position")
    l_ = L if seq_len is None else max(_check_length(seq_len, "seq_len"), L)
    return _finite_base(
        lambda: b * ((s * l_ / L) - (s - 1)) ** (d / (d - 2)),  # [eq:dynamic-ntk-base]
        "seq_len" if l_ > L else "factor",
        l_ if l_ > L else s,
    )


def dynamic_frequencies(
    *, dim: int, base: float = 10000.0, factor: float, max_position: int, seq_len: int | None = None
) -> ScaledFrequencies:
    r"""Dynamic NTK scaling as a pure function of ``seq_len`` (transformers' ``"dynamic"``).

    Parameters
    ----------
    dim, base, factor, max_position, seq_len
        As in :func:`dynamic_ntk_base`.

    Returns
    -------
    ScaledFrequencies
        NTK-aware frequencies of the base :func:`dynamic_ntk_base` (float64), scaling 1.0.

    Notes
    -----
    Book equation ``eq:dynamic-ntk-base``. transformers' rotary module recomputes these on
    growth of the sequence and resets them only below ``max_position``, so the frequencies it
    uses depend on the history of calls; here the length is an explicit argument.

    Examples
    --------
    >>> dynamic_frequencies(dim=4, base=100.0, factor=2.0, max_position=10, seq_len=20).inv_freq
    array([1.        , 0.03333333])
    """
    b_new = dynamic_ntk_base(
        dim=dim, base=base, factor=factor, max_position=max_position, seq_len=seq_len
    )
    return ScaledFrequencies(_default_inv_freq(dim, b_new), 1.0)


def _yarn_mscale(s: float, c: float = 1.0) -> float:
    if s <= 1.0:
        return 1.0
    return 0.1 * c * math.log(s) + 1.0  # [eq:yarn-mscale]


def yarn_attention_scaling(
    *,
    factor: float,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    attention_factor: float | None = None,
) -> float:
    r"""YaRN's attention factor, resolved with transformers' precedence.

    1. ``attention_factor`` if given;
    2. else :math:`M(s, \text{mscale}) / M(s, \text{mscale\_all\_dim})` if **both** are given
       and non-zero;
    3. else :math:`M(s, 1) = 0.1 \ln s + 1`,

    with :math:`M(s, c) = 0.1\,c \ln s + 1` for :math:`s > 1` and 1 otherwise. The factor
    multiplies cos and sin, so the logits get its square, :math:`1/t`.

    Parameters
    ----------
    factor : float
        :math:`s \ge 1`.
    mscale, mscale_all_dim : float, optional
        DeepSeek's pair (each >= 0); one without the other, or a zero, is ignored, as in
        transformers.
    attention_factor : float, optional
        Explicit factor (> 0); overrides everything.

    Returns
    -------
    float

    Notes
    -----
    Book equations ``eq:yarn-mscale`` and ``eq:yarn-temperature``.

    References
    ----------
    Peng et al., "YaRN: Efficient context window extension of large language models", 2023.

    Examples
    --------
    >>> round(yarn_attention_scaling(factor=4.0), 12)
    1.138629436112
    >>> yarn_attention_scaling(factor=40.0, mscale=1.0, mscale_all_dim=1.0)
    1.0
    """
    s = _check_factor(factor)
    for value, name in ((mscale, "mscale"), (mscale_all_dim, "mscale_all_dim")):
        if value is not None and check_real(value, name) < 0:
            raise ValueError(
                f"{name} must be >= 0 (M(s, c) = 0.1 c ln s + 1 is a magnitude; a negative c "
                f"can make the attention factor negative or divide by zero), got {value}"
            )
    if attention_factor is not None:  # checked even when an explicit factor wins
        return check_positive(attention_factor, "attention_factor")
    if mscale and mscale_all_dim:
        return float(_yarn_mscale(s, mscale) / _yarn_mscale(s, mscale_all_dim))
    return _yarn_mscale(s)


def yarn_correction_range(
    *,
    dim: int,
    base: float = 10000.0,
    original_max_position: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
) -> tuple[float, float]:
    r"""Pair indices where YaRN's ramp (transformers form) starts and ends.

    :math:`C(r) = d \ln(L / (2\pi r)) / (2 \ln b)` is the (fractional) pair index that makes
    :math:`r` rotations over the original context :math:`L`. The range is
    :math:`(C(\beta_\text{fast}), C(\beta_\text{slow}))`, floored/ceiled when ``truncate``,
    clamped to :math:`[0, d - 1]`.

    Parameters
    ----------
    dim : int
    base : float, default 10000.0
    original_max_position : int
        :math:`L`.
    beta_fast, beta_slow : float, default 32, 1
        Rotation counts bounding the ramp (``beta_fast >= beta_slow > 0``).
    truncate : bool, default True

    Returns
    -------
    (low, high) : tuple of float

    Notes
    -----
    Book equation ``eq:yarn-correction-dim``. The clamp is at :math:`d - 1` (as in the
    reference code), not :math:`d/2 - 1`.

    Examples
    --------
    >>> yarn_correction_range(dim=128, base=1e4, original_max_position=2048)
    (16.0, 41.0)
    """
    d = check_dim(dim)
    b = check_base(base)
    L = _check_length(original_max_position, "original_max_position")
    bf, bs = _check_betas(beta_fast, beta_slow)
    if not isinstance(truncate, (bool, np.bool_)):
        raise TypeError(f"truncate must be a bool, got {truncate!r}")

    def corr(r):
        return (d * math.log(L / (r * 2 * math.pi))) / (2 * math.log(b))  # [eq:yarn-correction-dim]

    low, high = corr(bf), corr(bs)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return float(max(low, 0)), float(min(high, d - 1))


def _check_betas(beta_fast, beta_slow, *, strict: bool = False) -> tuple[float, float]:
    """Validate YaRN's rotation counts.

    transformers' ramp accepts ``beta_fast == beta_slow`` (a ramp of zero width, i.e. a step,
    which it widens by 0.001 to avoid dividing by zero; Kimi-K2 ships betas 1 and 1); the
    paper's ramp divides by ``beta_fast - beta_slow`` and needs them apart (``strict``).
    """
    bf = check_positive(beta_fast, "beta_fast")
    bs = check_positive(beta_slow, "beta_slow")
    if bf < bs or (strict and bf == bs):
        relation = "greater than" if strict else "at least"
        raise ValueError(
            f"beta_fast must be {relation} beta_slow (beta_fast bounds the high-frequency "
            f"end, paper's beta; beta_slow the low-frequency end, paper's alpha), "
            f"got beta_fast={bf}, beta_slow={bs}"
        )
    return bf, bs


def _ramp_bounds(dim, base, original_max_position, beta_fast, beta_slow, truncate):
    """transformers' ramp bounds ``(low, high)``: the correction range, with ``high`` moved by
    0.001 when the two meet (the reference code's guard against a division by zero)."""
    low, high = yarn_correction_range(
        dim=dim,
        base=base,
        original_max_position=original_max_position,
        beta_fast=beta_fast,
        beta_slow=beta_slow,
        truncate=True if truncate is None else truncate,
    )
    if low == high:
        high += 0.001
    return low, high


def yarn_ramp(
    *,
    dim: int,
    base: float = 10000.0,
    original_max_position: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool | None = None,
    ramp: str = "transformers",
) -> np.ndarray:
    r"""YaRN's interpolation weight per pair: 0 keeps :math:`\theta_i`, 1 divides it by :math:`s`.

    ``ramp="transformers"``: linear in the pair index between the bounds of
    :func:`yarn_correction_range` (``truncate`` defaults to True).
    ``ramp="paper"``: :math:`1 - \gamma(r_i)` with :math:`r_i = L/\lambda_i` and
    :math:`\gamma` linear in :math:`r` between :math:`\alpha` = ``beta_slow`` and
    :math:`\beta` = ``beta_fast`` (no truncation; ``truncate`` must be left ``None``).

    Parameters
    ----------
    dim, base, original_max_position, beta_fast, beta_slow
        As in :func:`yarn_correction_range`.
    truncate : bool, optional
    ramp : {"transformers", "paper"}, default "transformers"

    Returns
    -------
    numpy.ndarray, shape (dim // 2,), float64, values in [0, 1]

    Notes
    -----
    Book equations ``eq:yarn-ramp-transformers`` and ``eq:yarn-ramp-paper``.

    Examples
    --------
    >>> yarn_ramp(dim=16, base=1e4, original_max_position=512)
    array([0.  , 0.25, 0.5 , 0.75, 1.  , 1.  , 1.  , 1.  ])
    """
    check_choice(ramp, "ramp", YARN_RAMPS)
    d = check_dim(dim)
    j = np.arange(d // 2, dtype=np.float64)
    if ramp == "paper":
        if truncate is not None:
            raise ValueError("truncate applies only to ramp='transformers' (the paper's ramp)")
        b = check_base(base)
        L = _check_length(original_max_position, "original_max_position")
        beta_r, alpha_r = _check_betas(beta_fast, beta_slow, strict=True)
        r = L / (2 * np.pi * b ** (2 * j / d))  # [eq:yarn-ratio]
        gamma = np.clip((r - alpha_r) / (beta_r - alpha_r), 0.0, 1.0)  # [eq:yarn-ramp-paper]
        return 1.0 - gamma
    low, high = _ramp_bounds(d, base, original_max_position, beta_fast, beta_slow, truncate)
    return np.clip((j - low) / (high - low), 0.0, 1.0)  # [eq:yarn-ramp-transformers]


def yarn_frequencies(
    *,
    dim: int,
    base: float = 10000.0,
    factor: float,
    original_max_position: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    mscale: float | None = None,
    mscale_all_dim: float | None = None,
    attention_factor: float | None = None,
    truncate: bool | None = None,
    ramp: str = "transformers",
) -> ScaledFrequencies:
    r"""YaRN: NTK-by-parts frequencies and the attention temperature.

    :math:`\theta'_i = (1 - w_i)\,\theta_i + w_i\,\theta_i / s` with :math:`w_i` from
    :func:`yarn_ramp`, and the attention factor of :func:`yarn_attention_scaling`.

    Parameters
    ----------
    dim : int
    base : float, default 10000.0
    factor : float
        :math:`s = L'/L \ge 1`.
    original_max_position : int
        :math:`L`.
    beta_fast, beta_slow : float, default 32, 1
    mscale, mscale_all_dim, attention_factor : float, optional
        See :func:`yarn_attention_scaling`.
    truncate : bool, optional
        Floor/ceil the correction range (transformers ramp only; default True).
    ramp : {"transformers", "paper"}, default "transformers"

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` (float64, ``(dim // 2,)``) between :math:`\theta_i/s` and
        :math:`\theta_i`, and the attention factor.

    Notes
    -----
    Book equation ``eq:yarn-inv-freq``.

    References
    ----------
    Peng et al., "YaRN: Efficient context window extension of large language models", 2023.

    Examples
    --------
    >>> f = yarn_frequencies(dim=16, base=1e4, factor=4.0, original_max_position=512)
    >>> f.inv_freq[[0, 2, 7]]
    array([1.0000e+00, 6.2500e-02, 7.9057e-05])
    """
    s = _check_factor(factor)
    w = yarn_ramp(
        dim=dim,
        base=base,
        original_max_position=original_max_position,
        beta_fast=beta_fast,
        beta_slow=beta_slow,
        truncate=truncate,
        ramp=ramp,
    )
    theta = _default_inv_freq(dim, base)
    new = theta / s * w + theta * (1.0 - w)  # [eq:yarn-inv-freq]
    scale = yarn_attention_scaling(
        factor=s, mscale=mscale, mscale_all_dim=mscale_all_dim, attention_factor=attention_factor
    )
    return ScaledFrequencies(new, scale)


def llama3_frequencies(
    *,
    dim: int,
    base: float = 10000.0,
    factor: float,
    original_max_position: int,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
) -> ScaledFrequencies:
    r"""Llama 3.1 scaling: keep high frequencies, divide low ones by ``factor``, blend between.

    With :math:`\lambda_i = 2\pi/\theta_i` and :math:`r_i = L/\lambda_i`:
    :math:`\theta'_i = \theta_i` when :math:`r_i > \beta` (= ``high_freq_factor``),
    :math:`\theta_i/s` when :math:`r_i < \alpha` (= ``low_freq_factor``), and
    :math:`(1-g)\theta_i/s + g\theta_i` with :math:`g = (r_i - \alpha)/(\beta - \alpha)` between
    (bounds inclusive). This is the YaRN paper's NTK-by-parts with :math:`\alpha = 1`,
    :math:`\beta = 4` and no temperature. With :math:`\alpha = \beta` (Llama 4 Scout) the
    blend is a step: :math:`\theta_i` when :math:`r_i > \alpha`, :math:`\theta_i/s` otherwise
    (the limit of the blend at :math:`r_i = \alpha`).

    Parameters
    ----------
    dim : int
    base : float, default 10000.0
    factor : float
        Divisor of the low band, :math:`s \ge 1` (8 for Llama 3.1, 32 for Llama 3.2 1B/3B).
    original_max_position : int
        :math:`L` (8192 for Llama 3.x).
    low_freq_factor, high_freq_factor : float, default 1, 4
        :math:`\alpha \le \beta`.

    Returns
    -------
    ScaledFrequencies
        float64 ``inv_freq``, ``attention_scaling`` 1.0.

    Notes
    -----
    Book equations ``eq:llama3-bands`` and ``eq:llama3-smooth``.

    Examples
    --------
    >>> f = llama3_frequencies(dim=16, base=1e4, factor=8.0, original_max_position=256)
    >>> f.inv_freq[:3]  # pairs 0-2 make more than 4 rotations over 256 tokens: kept
    array([1.        , 0.31622777, 0.1       ])
    """
    s = _check_factor(factor)
    L = _check_length(original_max_position, "original_max_position")
    lf, hf = _check_bands(low_freq_factor, high_freq_factor)
    theta = _default_inv_freq(check_dim(dim), base)
    r = L * theta / (2 * np.pi)  # rotations over L: L / wavelength
    if hf == lf:  # the step: kept above lf rotations, divided at and below
        g = (r > lf).astype(np.float64)  # [eq:llama3-bands]
    else:
        g = np.clip((r - lf) / (hf - lf), 0.0, 1.0)  # [eq:llama3-bands]
    new = (1.0 - g) * theta / s + g * theta  # [eq:llama3-smooth]
    return ScaledFrequencies(new, 1.0)


def _check_bands(low_freq_factor, high_freq_factor) -> tuple[float, float]:
    lf = check_positive(low_freq_factor, "low_freq_factor")
    hf = check_positive(high_freq_factor, "high_freq_factor")
    if hf < lf:
        raise ValueError(
            f"high_freq_factor must be >= low_freq_factor (equal: a hard step), got "
            f"low_freq_factor={lf}, high_freq_factor={hf}"
        )
    return lf, hf


def longrope_attention_scaling(*, factor: float, original_max_position: int) -> float:
    r"""LongRoPE's attention factor :math:`\sqrt{1 + \ln s / \ln L}` (1 when :math:`s \le 1`).

    Parameters
    ----------
    factor : float
        :math:`s` (transformers: the ``factor`` key, else ``max_position / original``).
    original_max_position : int
        :math:`L`.

    Returns
    -------
    float

    Notes
    -----
    Book equation ``eq:longrope-attention``.

    Examples
    --------
    >>> round(longrope_attention_scaling(factor=32.0, original_max_position=4096), 13)
    1.1902380714238
    """
    s = _check_factor(factor)
    L = _check_length(original_max_position, "original_max_position")
    if s <= 1.0:
        return 1.0
    if L < 2:
        raise ValueError(
            f"original_max_position must be at least 2 for LongRoPE's attention factor "
            f"sqrt(1 + ln s / ln L) (ln 1 = 0), got {L}"
        )
    return math.sqrt(1.0 + math.log(s) / math.log(L))  # [eq:longrope-attention]


def longrope_frequencies(
    *,
    dim: int,
    base: float = 10000.0,
    short_factor,
    long_factor,
    original_max_position: int,
    factor: float | None = None,
    max_position: int | None = None,
    seq_len: int | None = None,
    attention_factor: float | None = None,
) -> ScaledFrequencies:
    r"""LongRoPE (Phi-3): per-pair factors, short ones up to the original context, long beyond.

    :math:`\theta'_i = \theta_i / \lambda_i` with :math:`\lambda` = ``long_factor`` when
    ``seq_len > original_max_position`` and ``short_factor`` otherwise (also when ``seq_len``
    is None).

    Parameters
    ----------
    dim : int
    base : float, default 10000.0
    short_factor, long_factor : sequence of float, length dim // 2
    original_max_position : int
        :math:`L`, where the factor set switches.
    factor : float, optional
        :math:`s` for the attention factor; default ``max_position / original_max_position``.
    max_position : int, optional
        Needed when neither ``factor`` nor ``attention_factor`` is given.
    seq_len : int, optional
        Sequence length (max position + 1).
    attention_factor : float, optional
        Explicit attention factor (> 0); overrides :func:`longrope_attention_scaling`.

    Returns
    -------
    ScaledFrequencies
        float64 ``inv_freq`` and the attention factor, which does not switch with ``seq_len``.

    Notes
    -----
    Book equations ``eq:longrope-inv-freq`` and ``eq:longrope-attention``.

    References
    ----------
    Ding et al., "LongRoPE: Extending LLM context window beyond 2 million tokens", 2024.

    Examples
    --------
    >>> f = longrope_frequencies(dim=4, base=100.0, short_factor=[1, 2], long_factor=[1, 4],
    ...                          original_max_position=8, factor=4.0, seq_len=9)
    >>> f.inv_freq
    array([1.   , 0.025])
    """
    d = check_dim(dim)
    L = _check_length(original_max_position, "original_max_position")
    short = _check_factor_list(short_factor, "short_factor", d // 2)
    long = _check_factor_list(long_factor, "long_factor", d // 2)
    use_long = seq_len is not None and _check_length(seq_len, "seq_len") > L
    lam = long if use_long else short
    theta = _default_inv_freq(d, base)
    new = theta / lam  # [eq:longrope-inv-freq]
    scale = _longrope_attention(
        original_max_position=L,
        factor=factor,
        max_position=max_position,
        attention_factor=attention_factor,
    )
    return ScaledFrequencies(new, scale)


def freq_factors_frequencies(
    *, dim: int, base: float = 10000.0, factors, attention_factor: float = 1.0
) -> ScaledFrequencies:
    r"""Frequencies divided by one factor per pair (GGUF's ``rope_freqs`` tensor).

    :math:`\theta'_i = b^{-2i/d} / f_i`. This is how llama.cpp stores Llama 3's band scaling
    (the converter precomputes the factors) and how it applies LongRoPE's factor sets; a GGUF
    file carries only the factors, not the method that made them.

    Parameters
    ----------
    dim : int
    base : float, default 10000.0
    factors : sequence of float, length dim // 2
        The divisors :math:`f_i > 0`.
    attention_factor : float, default 1.0
        Magnitude multiplied into cos and sin (> 0).

    Returns
    -------
    ScaledFrequencies

    Notes
    -----
    Book equation ``eq:engines-freq-factors``.

    Examples
    --------
    >>> freq_factors_frequencies(dim=4, base=100.0, factors=[1.0, 8.0]).inv_freq
    array([1.    , 0.0125])
    """
    d = check_dim(dim)
    f = _check_factor_list(factors, "factors", d // 2)
    scale = check_positive(attention_factor, "attention_factor")
    return ScaledFrequencies(_default_inv_freq(d, base) / f, scale)  # [eq:engines-freq-factors]


def resonance_frequencies(
    *, dim: int, base: float = 10000.0, original_max_position: int
) -> ScaledFrequencies:
    r"""Resonance RoPE: wavelengths shorter than the training length rounded to integers.

    :math:`\lambda_i = 2\pi/\theta_i`; for :math:`\lambda_i < L`,
    :math:`\theta'_i = 2\pi / \operatorname{round}(\lambda_i)`, otherwise
    :math:`\theta'_i = \theta_i`. A pair with an integer wavelength repeats its angles exactly
    every :math:`\lambda_i` tokens, so every angle it takes beyond the training length was
    already seen in training.

    Parameters
    ----------
    dim : int
    base : float, default 10000.0
    original_max_position : int
        :math:`L`, the training length.

    Returns
    -------
    ScaledFrequencies
        Attention factor 1.

    Notes
    -----
    Book equation ``eq:resonance``. Ties (a wavelength exactly half-way) round to even, as
    ``numpy.round`` does.

    References
    ----------
    Wang et al., "Resonance RoPE: Improving context length generalization of large language
    models", 2024.

    Examples
    --------
    >>> resonance_frequencies(dim=4, base=100.0, original_max_position=32).inv_freq.round(6)
    array([1.047198, 0.1     ])
    """
    d = check_dim(dim)
    L = _check_length(original_max_position, "original_max_position")
    theta = _default_inv_freq(d, base)
    wavelength = 2.0 * np.pi / theta
    short = wavelength < L
    rounded = np.maximum(np.round(wavelength), 1.0)
    out = np.where(short, 2.0 * np.pi / rounded, theta)  # [eq:resonance]
    return ScaledFrequencies(out, 1.0)


def proportional_frequencies(
    *,
    dim: int,
    base: float = 10000.0,
    partial_rotary_factor: float = 1.0,
    factor: float = 1.0,
) -> ScaledFrequencies:
    r"""Proportional RoPE (Gemma 4's global layers): a rotated fraction of the whole head.

    With :math:`D` = ``dim`` (the whole head) and :math:`k = \lfloor p D / 2 \rfloor`:
    :math:`\theta_i = b^{-2i/D} / s` for :math:`i < k` and :math:`\theta_i = 0` for
    :math:`k \le i < D/2`. The exponent is over the whole head :math:`D`, not over the rotated
    width :math:`2k` as in ordinary partial rotary; every pair is listed, so the rotation spans
    the whole head and the pairs with :math:`\theta_i = 0` pass through (cos 1, sin 0 exactly).

    Parameters
    ----------
    dim : int
        Head width :math:`D` (even).
    base : float, default 10000.0
    partial_rotary_factor : float, default 1.0
        :math:`p \in [0, 1]` (transformers' ``partial_rotary_factor``, Gemma's
        ``rope_proportion``).
    factor : float, default 1.0
        :math:`s \ge 1`, divides the rotated frequencies.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` (float64, ``(dim // 2,)``, the last ``dim // 2 - k`` entries 0) and
        ``attention_scaling`` 1.0.

    Notes
    -----
    Book equation ``eq:models-proportional``. :math:`k` is computed as transformers does,
    ``int(p * D // 2)``. For :math:`p = 1` this is linear scaling.

    Examples
    --------
    >>> proportional_frequencies(dim=8, base=1e4, partial_rotary_factor=0.5).inv_freq
    array([1. , 0.1, 0. , 0. ])
    """
    d = check_dim(dim)
    p = check_real(partial_rotary_factor, "partial_rotary_factor")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"partial_rotary_factor must be in [0, 1], got {p}")
    s = _check_factor(factor)
    k = int(p * d // 2)  # rotated pairs
    new = np.zeros(d // 2)
    new[:k] = _default_inv_freq(d, base)[:k] / s  # [eq:models-proportional]
    return ScaledFrequencies(new, 1.0)


def ntk_alpha_base(*, dim: int, base: float = 10000.0, alpha: float) -> float:
    r"""HunYuan's NTK-alpha base :math:`b' = b\,\alpha^{d/(d-2)}` (the NTK base with
    :math:`s = \alpha`).

    Parameters
    ----------
    dim : int
        Rotary width :math:`d \ge 4`.
    base : float, default 10000.0
    alpha : float
        :math:`\alpha \ge 1`.

    Returns
    -------
    float

    Notes
    -----
    Book equation ``eq:ntk-base`` with :math:`s = \alpha`. HunYuan's configs write
    ``{"type": "dynamic", "alpha": ...}``, but a fixed ``alpha`` makes the base static:
    transformers gives it its own type, ``ntk_alpha``.

    Examples
    --------
    >>> ntk_alpha_base(dim=4, base=100.0, alpha=3.0)  # 100 * 3**2
    900.0
    """
    d = _check_ntk_dim(dim)
    b = check_base(base)
    a = _check_factor(alpha, "alpha")
    return _finite_base(lambda: b * a ** (d / (d - 2)), "alpha", a)  # [eq:ntk-base]


def ntk_alpha_frequencies(*, dim: int, base: float = 10000.0, alpha: float) -> ScaledFrequencies:
    r"""HunYuan's NTK-alpha scaling: RoPE of the base :func:`ntk_alpha_base`.

    Parameters
    ----------
    dim : int
        Rotary width :math:`d \ge 4`.
    base : float, default 10000.0
    alpha : float
        :math:`\alpha \ge 1`.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` :math:`b'^{-2i/d}` (float64), ``attention_scaling`` 1.0; equal to
        ``ntk_frequencies(factor=alpha)``.

    Examples
    --------
    >>> ntk_alpha_frequencies(dim=4, base=100.0, alpha=3.0).inv_freq
    array([1.        , 0.03333333])
    """
    b_new = ntk_alpha_base(dim=dim, base=base, alpha=alpha)
    return ScaledFrequencies(_default_inv_freq(dim, b_new), 1.0)  # [eq:ntk-per-pair]


# --------------------------------------------------------------------------- float32 emulation
# transformers 5.24 computes every method in float32 (peer-formulas.md §1, §8). These functions
# repeat its operations in the same order, one per method; Python scalars are rounded to
# float32 where torch rounds them. They take the same keyword arguments as the float64 method
# and run after it has validated them.

_F32 = np.float32
_F32_MAX = float(np.finfo(np.float32).max)


def _f32_pow(base, exponent: np.ndarray) -> np.ndarray:
    """float32 ``base ** exponent`` correctly rounded (torch's powf is within 1 ulp of it)."""
    if not abs(float(base)) <= _F32_MAX:
        raise ValueError(
            f"base={base!r} exceeds float32's range ({_F32_MAX:.4g}); transformers computes its "
            "frequencies in float32, so this config has no float32 tables"
        )
    b = np.float64(_F32(base))
    return (b ** exponent.astype(np.float64)).astype(_F32)


def _f32_scalar_over(scalar, tensor: np.ndarray) -> np.ndarray:
    """torch's ``scalar / tensor`` on a float32 tensor: ``tensor.reciprocal() * scalar``, two
    float32 roundings (the reciprocal, then the product with the scalar rounded to float32),
    not one correctly rounded quotient. ``1.0 / tensor`` is the reciprocal alone."""
    inverse = (_F32(1.0) / tensor).astype(_F32)
    return (inverse * _F32(scalar)).astype(_F32)


def _f32_exponents(d: int, n: int | None = None) -> np.ndarray:
    """float32(2i) / float32(d) rounded to float32, for the first ``n`` (default d/2) pairs."""
    top = d if n is None else 2 * n
    return (np.arange(0, top, 2, dtype=np.int64).astype(_F32) / _F32(d)).astype(_F32)


def _f32_default(d: int, base) -> np.ndarray:
    return (_F32(1.0) / _f32_pow(base, _f32_exponents(d))).astype(_F32)


def _f32_default_method(*, dim, base=10000.0, **_) -> np.ndarray:
    return _f32_default(dim, base)


def _f32_linear(*, dim, base=10000.0, factor, **_) -> np.ndarray:
    return (_f32_default(dim, base) / _F32(factor)).astype(_F32)


def _f32_ntk(*, dim, base=10000.0, factor, **_) -> np.ndarray:
    return _f32_default(dim, ntk_base(dim=dim, base=base, factor=factor))


def _f32_ntk_alpha(*, dim, base=10000.0, alpha, **_) -> np.ndarray:
    return _f32_default(dim, ntk_alpha_base(dim=dim, base=base, alpha=alpha))


def _f32_dynamic(*, dim, base=10000.0, factor, max_position, seq_len=None) -> np.ndarray:
    """Up to ``max_position`` the initial buffer (the default frequencies); beyond it the
    runtime path of the module's forward, where ``seq_len`` is an int64 tensor and the new
    base a float32 scalar."""
    if seq_len is None or seq_len <= max_position:
        return _f32_default(dim, base)
    s, L = factor, max_position
    x = _F32(_F32(_F32(s) * _F32(seq_len)) / _F32(L))
    x = _F32(x - _F32(s - 1))
    p = _F32(np.float64(x) ** (dim / (dim - 2)))  # the Python-float exponent is not rounded
    return _f32_default(dim, _F32(_F32(base) * p))


def _f32_yarn(
    *,
    dim,
    base=10000.0,
    factor,
    original_max_position,
    beta_fast=32.0,
    beta_slow=1.0,
    truncate=None,
    ramp="transformers",
    **_,
) -> np.ndarray:
    if ramp != "transformers":
        raise ValueError("transformers computes YaRN with ramp='transformers' only")
    pos = _f32_pow(base, _f32_exponents(dim))
    extra = (_F32(1.0) / pos).astype(_F32)
    inter = (_F32(1.0) / (_F32(factor) * pos).astype(_F32)).astype(_F32)
    low, high = _ramp_bounds(dim, base, original_max_position, beta_fast, beta_slow, truncate)
    j = np.arange(dim // 2, dtype=_F32)
    ramp32 = ((j - _F32(low)).astype(_F32) / _F32(high - low)).astype(_F32)
    ramp32 = np.clip(ramp32, _F32(0), _F32(1))
    w = (_F32(1) - ramp32).astype(_F32)  # extrapolation weight
    a = (inter * (_F32(1) - w)).astype(_F32)
    b = (extra * w).astype(_F32)
    return (a + b).astype(_F32)


def _f32_llama3(
    *,
    dim,
    base=10000.0,
    factor,
    original_max_position,
    low_freq_factor=1.0,
    high_freq_factor=4.0,
) -> np.ndarray:
    s, L = _F32(factor), original_max_position
    lf, hf = low_freq_factor, high_freq_factor
    t = _f32_default(dim, base)
    w_low, w_high = L / lf, L / hf
    wave = _f32_scalar_over(2 * math.pi, t)
    u = np.where(wave > w_low, (t / s).astype(_F32), t).astype(_F32)
    medium = ~(wave < w_high) & ~(wave > w_low)
    if hf == lf:
        if np.any(medium):
            raise ValueError(
                "llama3 with low_freq_factor == high_freq_factor: a float32 wavelength falls "
                "exactly on the step, where transformers divides by high - low = 0"
            )
        return u
    g = ((_f32_scalar_over(L, wave) - _F32(lf)).astype(_F32) / _F32(hf - lf)).astype(_F32)
    v = (((_F32(1) - g).astype(_F32) * u).astype(_F32) / s).astype(_F32)
    v = (v + (g * u).astype(_F32)).astype(_F32)
    return np.where(medium, v, u).astype(_F32)


def _f32_longrope(
    *, dim, base=10000.0, short_factor, long_factor, original_max_position, seq_len=None, **_
) -> np.ndarray:
    use_long = seq_len is not None and seq_len > original_max_position
    return _f32_freq_factors(dim=dim, base=base, factors=long_factor if use_long else short_factor)


def _f32_freq_factors(*, dim, base=10000.0, factors, **_) -> np.ndarray:
    """transformers' float32 recipe for per-pair factors (LongRoPE's): 1 / (f * b**(2i/d))."""
    f32 = np.asarray(factors, np.float64).astype(_F32)
    return (_F32(1.0) / (f32 * _f32_pow(base, _f32_exponents(dim))).astype(_F32)).astype(_F32)


def _f32_resonance(*, dim, base=10000.0, original_max_position, **_) -> np.ndarray:
    """The float64 frequencies rounded once to float32 (no peer computes it in float32)."""
    exact = resonance_frequencies(dim=dim, base=base, original_max_position=original_max_position)
    return exact.inv_freq.astype(_F32)


def _freq_factors_attention(*, attention_factor=1.0, **_) -> float:
    return check_positive(attention_factor, "attention_factor")


def _f32_proportional(*, dim, base=10000.0, partial_rotary_factor=1.0, factor=1.0) -> np.ndarray:
    k = int(partial_rotary_factor * dim // 2)
    rotated = (_F32(1.0) / _f32_pow(base, _f32_exponents(dim, k))).astype(_F32)
    inv = np.concatenate([rotated, np.zeros(dim // 2 - k, _F32)])
    return (inv / _F32(factor)).astype(_F32)


# --------------------------------------------------------------------------- fits


def _fit_check(name, theta, *, dim, base, tol, params) -> dict | None:
    """``params`` (with ``base``) when method ``name`` reproduces ``theta`` within relative
    ``tol`` (zeros exactly), else None."""
    try:
        ref = ROPE_SCALINGS[name](dim=dim, base=base, **params).inv_freq
    except (TypeError, ValueError):
        return None
    if ref.shape != theta.shape or not np.array_equal(ref == 0, theta == 0):
        return None
    nz = ref != 0
    if nz.any() and not np.max(np.abs(theta[nz] / ref[nz] - 1.0)) <= tol:
        return None
    return {"base": float(base), **params}


def _geometric_base(theta: np.ndarray, d: int) -> float | None:
    """Base b with theta[i] = theta[0] * b**(-2i/d), from the last entry (None if unfit)."""
    k = theta.shape[0]
    if k < 2 or not np.all(np.isfinite(theta)) or not np.all(theta > 0):
        return None
    with np.errstate(all="ignore"):
        b = float((theta[k - 1] / theta[0]) ** (-d / (2.0 * (k - 1))))
    return b if math.isfinite(b) and b > 1.0 else None


def _as_profile(inv_freq, dim) -> tuple[np.ndarray, int] | None:
    theta = np.asarray(inv_freq, dtype=np.float64)
    d = check_dim(dim)
    if theta.shape != (d // 2,):
        return None
    return theta, d


def _fit_default(inv_freq, *, dim, base=None, tol=1e-6) -> dict | None:
    """The base of unscaled frequencies (``base`` is not needed)."""
    got = _as_profile(inv_freq, dim)
    b = None if got is None else _geometric_base(*got)
    if b is None:
        return None
    return _fit_check("default", got[0], dim=got[1], base=b, tol=tol, params={})


def _fit_linear(inv_freq, *, dim, base=None, tol=1e-6) -> dict | None:
    """factor = 1 / theta_0 (and the base, fitted when not given)."""
    got = _as_profile(inv_freq, dim)
    if got is None or not got[0][0] > 0:
        return None
    theta, d = got
    b = _geometric_base(theta, d) if base is None else base
    if b is None:
        return None
    return _fit_check("linear", theta, dim=d, base=b, tol=tol, params={"factor": 1.0 / theta[0]})


def _fit_ntk(inv_freq, *, dim, base=None, tol=1e-6) -> dict | None:
    """factor = (b'/b)**((d-2)/d) of the fitted base b' (needs the original ``base``)."""
    got = _as_profile(inv_freq, dim)
    if got is None or base is None:
        return None
    theta, d = got
    b_new = _geometric_base(theta, d)
    if b_new is None or d < 4:
        return None
    s = (b_new / base) ** ((d - 2) / d)
    if 1.0 - tol <= s < 1.0:  # unscaled frequencies, the fitted base rounded below b
        s = 1.0
    return _fit_check("ntk", theta, dim=d, base=base, tol=tol, params={"factor": s})


def _fit_proportional(inv_freq, *, dim, base=None, tol=1e-6) -> dict | None:
    """partial_rotary_factor = 2k/D from the k leading non-zero pairs, factor = 1/theta_0, and
    the base (fitted when not given)."""
    got = _as_profile(inv_freq, dim)
    if got is None:
        return None
    theta, d = got
    k = int(np.count_nonzero(theta))
    if k == 0 or np.any(theta[k:] != 0) or not theta[0] > 0:
        return None
    if base is None:
        base = _geometric_base(theta[:k], d) if k >= 2 else None
        if base is None:
            return None
    params = {"partial_rotary_factor": 2.0 * k / d, "factor": 1.0 / theta[0]}
    return _fit_check("proportional", theta, dim=d, base=base, tol=tol, params=params)


# --------------------------------------------------------------------------- exact frequencies
# What each method's frequencies are as real numbers (ScalingMethod.exact). They run after the
# float64 method has validated the same keyword arguments.


def _x_powers(d, base, *, scale_base=None, divisors=None, n=None):
    """``b^(-2i/d) * q^(-2i/(d-2)) / f_i`` for the first ``n`` pairs (``q``: a scaled base's
    extra factor, as in NTK's ``b' = b q^(d/(d-2))``)."""
    b = Fraction(base)
    half = d // 2 if n is None else n
    cols = []
    for i in range(half):
        terms = []
        if i:
            terms.append((b, Fraction(-2 * i, d)))
            if scale_base is not None and scale_base != 1:
                terms.append((Fraction(scale_base), Fraction(-2 * i, d - 2)))
        factor = 1 / Fraction(divisors[i]) if divisors is not None else Fraction(1)
        cols.append(_Power(tuple(terms), factor))
    return cols


def _exact_default(*, dim, base=10000.0):
    return ExactFrequencies(tuple(_x_powers(dim, base)), f"default, d={dim}, b={base!r}")


def _exact_linear(*, dim, base=10000.0, factor):
    cols = _x_powers(dim, base, divisors=[factor] * (dim // 2))
    return ExactFrequencies(tuple(cols), f"linear, factor={factor!r}")


def _exact_ntk(*, dim, base=10000.0, factor):
    cols = _x_powers(dim, base, scale_base=factor)
    return ExactFrequencies(tuple(cols), f"ntk, b * factor**(d/(d-2)), factor={factor!r}")


def _exact_ntk_alpha(*, dim, base=10000.0, alpha):
    cols = _x_powers(dim, base, scale_base=alpha)
    return ExactFrequencies(tuple(cols), f"ntk_alpha, alpha={alpha!r}")


def _exact_dynamic(*, dim, base=10000.0, factor, max_position, seq_len=None):
    s, L = Fraction(factor), int(max_position)
    l_ = L if seq_len is None else max(int(seq_len), L)
    q = s * l_ / L - (s - 1)  # [eq:dynamic-ntk-base]
    cols = _x_powers(dim, base, scale_base=q)
    return ExactFrequencies(tuple(cols), f"dynamic, scale {float(q)!r} at seq_len {l_}")


def _exact_yarn(
    *,
    dim,
    base=10000.0,
    factor,
    original_max_position,
    beta_fast=32.0,
    beta_slow=1.0,
    truncate=None,
    ramp="transformers",
    **_,
):
    s = Fraction(factor)
    powers = _x_powers(dim, base)
    if ramp == "paper":  # 1 - w = clip((r - beta_slow)/(beta_fast - beta_slow)), r = L theta / 2 pi
        cols = [
            _Blend(p, int(original_max_position), Fraction(beta_slow), Fraction(beta_fast), s)
            for p in powers
        ]
        return ExactFrequencies(tuple(cols), f"yarn (paper ramp), factor={factor!r}")
    low, high = _ramp_bounds(dim, base, original_max_position, beta_fast, beta_slow, truncate)
    # (the float64 bounds the record uses, taken exactly)
    lo, span = Fraction(low), Fraction(high) - Fraction(low)
    cols = []
    for j, p in enumerate(powers):
        w = min(max((j - lo) / span, Fraction(0)), Fraction(1))  # [eq:yarn-ramp-transformers]
        cols.append(_Power(p.terms, p.factor * (w / s + (1 - w))))  # [eq:yarn-inv-freq]
    return ExactFrequencies(tuple(cols), f"yarn, factor={factor!r}, ramp [{low}, {high}]")


def _exact_llama3(
    *, dim, base=10000.0, factor, original_max_position, low_freq_factor=1.0, high_freq_factor=4.0
):
    cols = [
        _Blend(
            p,
            int(original_max_position),
            Fraction(low_freq_factor),
            Fraction(high_freq_factor),
            Fraction(factor),
        )  # [eq:llama3-smooth]
        for p in _x_powers(dim, base)
    ]
    return ExactFrequencies(tuple(cols), f"llama3, factor={factor!r}")


def _exact_longrope(
    *, dim, base=10000.0, short_factor, long_factor, original_max_position, seq_len=None, **_
):
    use_long = seq_len is not None and seq_len > original_max_position
    lam = [float(v) for v in (long_factor if use_long else short_factor)]
    cols = _x_powers(dim, base, divisors=lam)  # [eq:longrope-inv-freq]
    return ExactFrequencies(tuple(cols), f"longrope, {'long' if use_long else 'short'} factors")


def _exact_freq_factors(*, dim, base=10000.0, factors, **_):
    cols = _x_powers(dim, base, divisors=[float(v) for v in factors])
    return ExactFrequencies(tuple(cols), "freq_factors")


def _exact_proportional(*, dim, base=10000.0, partial_rotary_factor=1.0, factor=1.0):
    k = int(partial_rotary_factor * dim // 2)  # as the record counts the rotated pairs
    cols = _x_powers(dim, base, divisors=[factor] * k, n=k) + [_Zero()] * (dim // 2 - k)
    return ExactFrequencies(tuple(cols), f"proportional, {k} rotated pairs")


def _exact_resonance(*, dim, base=10000.0, original_max_position):
    L = int(original_max_position)
    cols = []
    for p in _x_powers(dim, base):
        bits = 128
        while True:  # wavelength 2 pi / theta, never an integer nor a half-integer
            t = p.approx(bits)
            wave = 2 * _pi_fraction(bits) / t
            err = wave * Fraction(1, 1 << (bits - 4))
            near = abs(wave - L) <= err or abs((wave % 1) - Fraction(1, 2)) <= err
            if not near:
                break
            bits *= 2
        if wave < L:
            cols.append(_Turns(max(round(wave), 1)))  # [eq:resonance]
        else:
            cols.append(p)
    return ExactFrequencies(tuple(cols), f"resonance, L={L}")


# --------------------------------------------------------------------------- records


def _one(**_) -> float:
    return 1.0


def _yarn_attention(
    *, factor, mscale=None, mscale_all_dim=None, attention_factor=None, **_
) -> float:
    return yarn_attention_scaling(
        factor=factor,
        mscale=mscale,
        mscale_all_dim=mscale_all_dim,
        attention_factor=attention_factor,
    )


def _longrope_attention(
    *, original_max_position, factor=None, max_position=None, attention_factor=None, **_
) -> float:
    L = _check_length(original_max_position, "original_max_position")
    if factor is not None:  # checked even when an explicit attention factor wins
        _check_factor(factor)
    if max_position is not None:
        _check_length(max_position, "max_position")
    if attention_factor is not None:
        return check_positive(attention_factor, "attention_factor")
    if factor is None:
        if max_position is None:
            raise ValueError(
                "longrope needs factor, max_position or attention_factor to set the "
                "attention factor"
            )
        factor = _check_length(max_position, "max_position") / L
    return longrope_attention_scaling(factor=factor, original_max_position=L)


def _show(value) -> str:
    if isinstance(value, (list, tuple, np.ndarray)):
        return f"[{len(value)} values]"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)


@dataclasses.dataclass(frozen=True)
class ScalingMethod:
    """One scaling method: its frequencies and everything a config, the checker and the CLI
    need to know about it. Calling the record computes the exact float64 frequencies.

    Attributes
    ----------
    name : str
        The rope type (key of :data:`ROPE_SCALINGS`).
    frequencies : callable
        ``frequencies(*, dim, base, **params) -> ScaledFrequencies``, exact float64.
    keys : Mapping[str, str]
        Config key (in ``rope_parameters`` / ``rope_scaling``) -> parameter name.
    defaults : Mapping[str, object]
        Parameter -> value used when the config omits it.
    required : tuple of str
        Parameters that must be given (besides ``dim``; ``base`` has a default).
    family : str
        The scaling family the checker reports for these frequencies.
    title : str
        What the method does, in a few words (the start of :meth:`describe`).
    emulation : callable
        transformers 5.24's float32 arithmetic for the method, same keywords as
        ``frequencies``; use :meth:`float32`, which validates first.
    attention : callable
        ``attention(**params) -> float``: the factor on cos and sin; use
        :meth:`attention_factor`.
    fit : callable or None
        ``fit(inv_freq, *, dim, base, tol) -> dict | None``: the method's parameters (with
        ``base``) that reproduce measured float64 frequencies within relative ``tol``, or
        None; ``base`` may be None where the method can fit it.
    exact : callable
        ``exact(**params) -> ExactFrequencies``: the method's frequencies as exact real
        numbers (what ``cos_sin(..., method="correct")`` rounds); use
        :meth:`exact_frequencies`, which validates first.
    """

    name: str
    frequencies: Callable[..., ScaledFrequencies] = dataclasses.field(repr=False)
    keys: Mapping[str, str]
    defaults: Mapping[str, object]
    required: tuple[str, ...]
    family: str
    title: str
    emulation: Callable[..., np.ndarray] = dataclasses.field(repr=False)
    attention: Callable[..., float] = dataclasses.field(default=_one, repr=False)
    fit: Callable[..., dict | None] | None = dataclasses.field(default=None, repr=False)
    exact: Callable[..., ExactFrequencies] | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self):
        # inspect.signature(record) shows the method's own keywords
        object.__setattr__(self, "__signature__", inspect.signature(self.frequencies))

    @property
    def parameters(self) -> tuple[str, ...]:
        """Every keyword the method takes (``dim`` and ``base`` included)."""
        return tuple(inspect.signature(self.frequencies).parameters)

    def __call__(self, **params) -> ScaledFrequencies:
        self._check_names(params)
        return self.frequencies(**params)

    def _check_names(self, params: Mapping) -> None:
        check_keywords(f"ROPE_SCALINGS[{self.name!r}]", params, self.parameters)

    def float32(self, *, dim: int, base: float = 10000.0, seq_len=None, **params) -> np.ndarray:
        """transformers 5.24's float32 ``inv_freq`` for these parameters, shape (dim // 2,).

        ``seq_len`` is the runtime length for methods that depend on it (dynamic: the base
        the module's forward computes; longrope: the factor set) and ignored by the others.
        """
        if "seq_len" in self.parameters:
            params["seq_len"] = seq_len
        self(dim=dim, base=base, **params)  # validates every argument
        return self.emulation(dim=dim, base=base, **params).astype(_F32)

    def exact_frequencies(self, **params) -> ExactFrequencies:
        r"""The method's frequencies as exact real numbers, for these parameters.

        Each record states what is exact: bases, factors and divisors are the given float64
        numbers taken exactly, powers and :math:`\pi` are the real ones; where the method
        defines a quantity only by float64 arithmetic (YaRN's transformers ramp bounds, from
        float64 logarithms), that float64 value is taken exactly. The result is what
        ``cos_sin(positions, freqs, method="correct")`` rounds.

        Examples
        --------
        >>> f = ROPE_SCALINGS["linear"].exact_frequencies(dim=4, base=100.0, factor=4.0)
        >>> f.float64()
        array([0.25 , 0.025])
        """
        self(**params)  # validates every argument
        return self.exact(**params)

    def attention_factor(self, **params) -> float:
        """The factor transformers multiplies into cos and sin for these parameters (any of
        the method's keywords may be passed; those it does not need are ignored)."""
        self._check_names(params)
        return float(self.attention(**params))

    def describe(self, params: Mapping) -> str:
        """One line: the method, what it does and its parameters (lists as their length)."""
        shown = [f"{k}={_show(params[k])}" for k in self.parameters if k in params]
        return f"{self.name} ({self.title})" + (": " + ", ".join(shown) if shown else "")


_YARN_KEYS = {
    "factor": "factor",
    "original_max_position_embeddings": "original_max_position",
    "attention_factor": "attention_factor",
    "beta_fast": "beta_fast",
    "beta_slow": "beta_slow",
    "mscale": "mscale",
    "mscale_all_dim": "mscale_all_dim",
    "truncate": "truncate",
}
_LLAMA3_KEYS = {
    "factor": "factor",
    "original_max_position_embeddings": "original_max_position",
    "low_freq_factor": "low_freq_factor",
    "high_freq_factor": "high_freq_factor",
}
_LONGROPE_KEYS = {
    "short_factor": "short_factor",
    "long_factor": "long_factor",
    "original_max_position_embeddings": "original_max_position",
    "factor": "factor",
    "attention_factor": "attention_factor",
}

_RECORDS = (
    ScalingMethod(
        "default",
        default_frequencies,
        {},
        {},
        (),
        "none",
        "unscaled, theta_i = b**(-2i/d)",
        _f32_default_method,
        fit=_fit_default,
        exact=_exact_default,
    ),
    ScalingMethod(
        "linear",
        linear_frequencies,
        {"factor": "factor"},
        {},
        ("factor",),
        "linear",
        "position interpolation, theta_i / factor",
        _f32_linear,
        fit=_fit_linear,
        exact=_exact_linear,
    ),
    ScalingMethod(
        "ntk",
        ntk_frequencies,
        {"factor": "factor"},
        {},
        ("factor",),
        "ntk",
        "NTK-aware, base b * factor**(d/(d-2))",
        _f32_ntk,
        fit=_fit_ntk,
        exact=_exact_ntk,
    ),
    ScalingMethod(
        "dynamic",
        dynamic_frequencies,
        {"factor": "factor"},
        {},
        ("factor", "max_position"),
        "ntk",
        "dynamic NTK, base grows with seq_len beyond max_position",
        _f32_dynamic,
        exact=_exact_dynamic,
    ),
    ScalingMethod(
        "yarn",
        yarn_frequencies,
        _YARN_KEYS,
        {"beta_fast": 32.0, "beta_slow": 1.0, "truncate": True},
        ("factor", "original_max_position"),
        "yarn",
        "NTK-by-parts ramp and attention temperature",
        _f32_yarn,
        _yarn_attention,
        exact=_exact_yarn,
    ),
    ScalingMethod(
        "llama3",
        llama3_frequencies,
        _LLAMA3_KEYS,
        {},
        ("factor", "original_max_position", "low_freq_factor", "high_freq_factor"),
        "llama3",
        "low band divided by factor, high band kept, blended between",
        _f32_llama3,
        exact=_exact_llama3,
    ),
    ScalingMethod(
        "longrope",
        longrope_frequencies,
        _LONGROPE_KEYS,
        {},
        ("short_factor", "long_factor", "original_max_position"),
        "longrope",
        "per-pair factors, long set beyond original_max_position",
        _f32_longrope,
        _longrope_attention,
        exact=_exact_longrope,
    ),
    ScalingMethod(
        "proportional",
        proportional_frequencies,
        {"partial_rotary_factor": "partial_rotary_factor", "factor": "factor"},
        {"partial_rotary_factor": 1.0, "factor": 1.0},
        (),
        "proportional",
        "leading pairs b**(-2i/D) / factor over the whole head D, the rest 0",
        _f32_proportional,
        fit=_fit_proportional,
        exact=_exact_proportional,
    ),
    ScalingMethod(
        "ntk_alpha",
        ntk_alpha_frequencies,
        {"alpha": "alpha"},
        {},
        ("alpha",),
        "ntk",
        "static NTK-aware base b * alpha**(d/(d-2))",
        _f32_ntk_alpha,
        exact=_exact_ntk_alpha,
    ),
    ScalingMethod(
        "freq_factors",
        freq_factors_frequencies,
        {"factors": "factors", "attention_factor": "attention_factor"},
        {"attention_factor": 1.0},
        ("factors",),
        "freq_factors",
        "one divisor per pair (GGUF rope_freqs), theta_i / f_i",
        _f32_freq_factors,
        _freq_factors_attention,
        exact=_exact_freq_factors,
    ),
    ScalingMethod(
        "resonance",
        resonance_frequencies,
        {"original_max_position_embeddings": "original_max_position"},
        {},
        ("original_max_position",),
        "resonance",
        "wavelengths below the training length rounded to integers",
        _f32_resonance,
        exact=_exact_resonance,
    ),
)

ROPE_SCALINGS: dict = _Registry({r.name: r for r in _RECORDS})
"""Registry of scaling methods: rope type -> :class:`ScalingMethod` (callable:
``ROPE_SCALINGS[name](dim=..., base=..., **params) -> ScaledFrequencies``).

Looking up an unknown name raises :class:`UnknownRopeTypeError` (a ``KeyError`` and a
``ValueError``) listing the known names."""


def scale_frequencies(rope_type: str, /, **params) -> ScaledFrequencies:
    """Call the registered method ``rope_type`` with keyword ``params``.

    Parameters
    ----------
    rope_type : str
        A key of :data:`ROPE_SCALINGS`.
    **params
        The method's keyword arguments (``dim``, ``base``, ``factor``, ...).

    Returns
    -------
    ScaledFrequencies

    Examples
    --------
    >>> scale_frequencies("linear", dim=4, base=100.0, factor=2.0).inv_freq
    array([0.5 , 0.05])
    >>> try:
    ...     scale_frequencies("rope")
    ... except ValueError as err:
    ...     print(err)  # doctest: +ELLIPSIS
    unknown rope type 'rope'; known rope types: default, dynamic, freq_factors, linear, ...
    """
    method = _method(rope_type)
    check_keywords(f"scale_frequencies({rope_type!r}, ...)", params, method.parameters)
    return method(**params)


def _method(rope_type) -> ScalingMethod:
    if not isinstance(rope_type, str):
        raise TypeError(f"rope_type must be a string, got {type(rope_type).__name__}")
    return ROPE_SCALINGS[rope_type]


def transformers_float32_frequencies(rope_type: str, /, **params) -> ScaledFrequencies:
    """The float32 frequencies transformers 5.24's rotary module uses for ``rope_type``.

    Parameters
    ----------
    rope_type : str
        A key of :data:`ROPE_SCALINGS` (``"ntk"`` is the default computation with the NTK
        base, as models that write ``rope_theta = b'`` get).
    **params
        The same keyword arguments as the float64 method. For ``dynamic``, ``seq_len`` above
        ``max_position`` selects the runtime path of the module's forward (the base is a
        float32 tensor); otherwise the frequencies of initialisation.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` as float32 (the module's buffer) and the attention factor (a Python float).

    Notes
    -----
    Follows peer-formulas §1.3-1.9: exponents ``float32(2i) / d`` rounded to float32, a float32
    power, float32 reciprocal, and each method's operations in transformers' order. Every
    step is bit-identical to torch's except the power: torch's CPU ``powf`` is within 1 ulp of
    the correctly rounded value used here but not always equal to it, and the reciprocal and
    the YaRN/Llama 3 blends carry that ulp on. ``scalar / tensor`` is torch's
    ``tensor.reciprocal() * scalar`` (two roundings), as Llama 3's wavelengths are computed;
    with torch's own powers substituted, Llama 3 over 96 configurations (bases 1e4 to 1.2e7)
    is bit-identical, and with the correctly rounded power within 1 ulp
    (``tests/parity/test_model_families.py``).
    With torch's own powers substituted, YaRN at d = 256 over 1 296 configurations (165 888
    frequencies) is bit-identical (``tests/parity/test_transformers_rope.py``).

    Examples
    --------
    >>> transformers_float32_frequencies("default", dim=8, base=1e4).inv_freq
    array([1.   , 0.1  , 0.01 , 0.001], dtype=float32)
    """
    method = _method(rope_type)
    if "runtime" in params:
        return _float32_with_runtime(method, params)
    unknown = sorted(set(params) - set(method.parameters))
    if unknown:
        raise TypeError(
            f"transformers_float32_frequencies() got unexpected keyword argument(s) {unknown}; "
            f"rope_type {method.name!r} takes {list(method.parameters)}"
        )
    exact = method(**params)  # validates every argument
    inv = method.emulation(**params).astype(_F32)
    return ScaledFrequencies(inv, float(exact.attention_scaling))


def _float32_with_runtime(method: ScalingMethod, params: dict) -> ScaledFrequencies:
    """The removed keyword ``runtime`` (refimpl 0.1.0), kept for one minor version.

    ``runtime=True`` was the default and is what the function computes without it;
    ``runtime=False`` gave dynamic NTK's frequencies of transformers' init function (the new
    base in float64, then the default float32 recipe), which
    ``transformers_float32_frequencies("default", dim=d, base=dynamic_ntk_base(...))`` gives.
    """
    params = dict(params)
    runtime = params.pop("runtime")
    if not isinstance(runtime, bool):
        raise TypeError(f"runtime must be True or False, got {runtime!r}")
    warnings.warn(
        "transformers_float32_frequencies(runtime=...) is deprecated and will be removed in "
        "refimpl 0.3.0: runtime=True is what it computes (drop the keyword); for runtime=False "
        "use transformers_float32_frequencies('default', dim=d, base=dynamic_ntk_base(dim=d, "
        "base=b, factor=s, max_position=L, seq_len=l))",
        DeprecationWarning,
        stacklevel=3,
    )
    if runtime or method.name != "dynamic":
        return transformers_float32_frequencies(method.name, **params)
    method(**params)  # validates every argument
    keep = ("dim", "base", "factor", "max_position", "seq_len")
    new_base = dynamic_ntk_base(**{k: params[k] for k in keep if k in params})
    return transformers_float32_frequencies("default", dim=params["dim"], base=new_base)
