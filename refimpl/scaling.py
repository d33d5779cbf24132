"""Context extension of RoPE: the scaling methods as pure functions, and their registry.

Every method is a keyword-only function ``fn(*, dim, base, ...) -> ScaledFrequencies``. The
parameter names are shared across methods:

* ``dim``: rotary width :math:`d` (even); the frequencies have ``dim // 2`` entries.
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
* ``low_freq_factor``, ``high_freq_factor``: Llama 3's band edges.
* ``short_factor``, ``long_factor``: LongRoPE's per-pair factors (length ``dim // 2``).

Frequencies are computed in float64 from the method's formula (the exact reference).
:func:`transformers_float32_frequencies` reproduces the float32 arithmetic of transformers
5.24 step by step, for parity with its rotary modules.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from ._checks import check_base, check_choice, check_dim, check_positive, check_real
from .rotary import inv_freq as _default_inv_freq

__all__ = [
    "ROPE_SCALINGS",
    "ScaledFrequencies",
    "UnknownRopeTypeError",
    "default_frequencies",
    "dynamic_frequencies",
    "dynamic_ntk_base",
    "linear_frequencies",
    "llama3_frequencies",
    "longrope_attention_scaling",
    "longrope_frequencies",
    "ntk_base",
    "ntk_frequencies",
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


def _check_position(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer() and value > 0:
            return int(value)
        raise TypeError(f"{name} must be a positive integer, got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return int(value)


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
    return ScaledFrequencies(_default_inv_freq(dim, base), 1.0)


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
    theta = _default_inv_freq(dim, base)
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
    return b * s ** (d / (d - 2))  # [eq:ntk-base]


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
    L = _check_position(max_position, "max_position")
    l_ = L if seq_len is None else max(_check_position(seq_len, "seq_len"), L)
    return b * ((s * l_ / L) - (s - 1)) ** (d / (d - 2))  # [eq:dynamic-ntk-base]


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
        DeepSeek's pair; one without the other is ignored, as in transformers.
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
    if attention_factor is not None:
        return check_positive(attention_factor, "attention_factor")
    if mscale is not None:
        check_real(mscale, "mscale")
    if mscale_all_dim is not None:
        check_real(mscale_all_dim, "mscale_all_dim")
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
        Rotation counts bounding the ramp (``beta_fast > beta_slow > 0``).
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
    L = _check_position(original_max_position, "original_max_position")
    bf, bs = _check_betas(beta_fast, beta_slow)
    if not isinstance(truncate, (bool, np.bool_)):
        raise TypeError(f"truncate must be a bool, got {truncate!r}")

    def corr(r):
        return (d * math.log(L / (r * 2 * math.pi))) / (2 * math.log(b))  # [eq:yarn-correction-dim]

    low, high = corr(bf), corr(bs)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return float(max(low, 0)), float(min(high, d - 1))


def _check_betas(beta_fast, beta_slow) -> tuple[float, float]:
    bf = check_positive(beta_fast, "beta_fast")
    bs = check_positive(beta_slow, "beta_slow")
    if not bf > bs:
        raise ValueError(
            f"beta_fast must be greater than beta_slow (beta_fast bounds the high-frequency "
            f"end, paper's beta; beta_slow the low-frequency end, paper's alpha), "
            f"got beta_fast={bf}, beta_slow={bs}"
        )
    return bf, bs


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
        L = _check_position(original_max_position, "original_max_position")
        alpha_r = check_positive(beta_slow, "beta_slow")
        beta_r = check_positive(beta_fast, "beta_fast")
        _check_betas(beta_fast, beta_slow)
        r = L / (2 * np.pi * b ** (2 * j / d))  # [eq:yarn-ratio]
        gamma = np.clip((r - alpha_r) / (beta_r - alpha_r), 0.0, 1.0)  # [eq:yarn-ramp-paper]
        return 1.0 - gamma
    low, high = yarn_correction_range(
        dim=d,
        base=base,
        original_max_position=original_max_position,
        beta_fast=beta_fast,
        beta_slow=beta_slow,
        truncate=True if truncate is None else truncate,
    )
    if low == high:
        high += 0.001  # avoid a division by zero, as the reference code does
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
    :math:`\beta = 4` and no temperature.

    Parameters
    ----------
    dim : int
    base : float, default 10000.0
    factor : float
        Divisor of the low band, :math:`s \ge 1` (8 for Llama 3.1, 32 for Llama 3.2 1B/3B).
    original_max_position : int
        :math:`L` (8192 for Llama 3.x).
    low_freq_factor, high_freq_factor : float, default 1, 4
        :math:`\alpha < \beta`.

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
    L = _check_position(original_max_position, "original_max_position")
    lf = check_positive(low_freq_factor, "low_freq_factor")
    hf = check_positive(high_freq_factor, "high_freq_factor")
    if not hf > lf:
        raise ValueError(
            f"high_freq_factor must be greater than low_freq_factor, got "
            f"low_freq_factor={lf}, high_freq_factor={hf}"
        )
    theta = _default_inv_freq(dim, base)
    r = L * theta / (2 * np.pi)  # rotations over L: L / wavelength
    g = np.clip((r - lf) / (hf - lf), 0.0, 1.0)  # [eq:llama3-bands]
    new = (1.0 - g) * theta / s + g * theta  # [eq:llama3-smooth]
    return ScaledFrequencies(new, 1.0)


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
    L = _check_position(original_max_position, "original_max_position")
    if s <= 1.0:
        return 1.0
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
        Explicit attention factor (>= 0); overrides :func:`longrope_attention_scaling`.

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
    L = _check_position(original_max_position, "original_max_position")
    short = _check_factor_list(short_factor, "short_factor", d // 2)
    long = _check_factor_list(long_factor, "long_factor", d // 2)
    use_long = seq_len is not None and _check_position(seq_len, "seq_len") > L
    lam = long if use_long else short
    theta = _default_inv_freq(d, base)
    new = theta / lam  # [eq:longrope-inv-freq]
    if attention_factor is not None:
        scale = check_real(attention_factor, "attention_factor")
        if scale < 0:
            raise ValueError(f"attention_factor must be >= 0, got {scale}")
    else:
        if factor is None:
            if max_position is None:
                raise ValueError(
                    "longrope needs factor, max_position or attention_factor to set the "
                    "attention factor"
                )
            factor = _check_position(max_position, "max_position") / L
        scale = longrope_attention_scaling(factor=factor, original_max_position=L)
    return ScaledFrequencies(new, scale)


ROPE_SCALINGS: dict = _Registry(
    default=default_frequencies,
    linear=linear_frequencies,
    ntk=ntk_frequencies,
    dynamic=dynamic_frequencies,
    yarn=yarn_frequencies,
    llama3=llama3_frequencies,
    longrope=longrope_frequencies,
)
"""Registry of scaling methods: rope type -> ``fn(*, dim, base, ...) -> ScaledFrequencies``.

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
    unknown rope type 'rope'; known rope types: default, dynamic, linear, llama3, ...
    """
    if not isinstance(rope_type, str):
        raise TypeError(f"rope_type must be a string, got {type(rope_type).__name__}")
    return ROPE_SCALINGS[rope_type](**params)


# --------------------------------------------------------------------------- float32 emulation
# transformers 5.24 computes every method in float32 (peer-formulas.md §1, §8). These helpers
# repeat its operations in the same order; Python scalars are rounded to float32 where torch
# rounds them. float32 pow is emulated by rounding the float64 power (torch's CPU powf is close
# to correctly rounded but not exactly: see the known limit in the parity tests).

_F32 = np.float32


def _f32_pow(base, exponent: np.ndarray) -> np.ndarray:
    b = np.float64(_F32(base))
    return (b ** exponent.astype(np.float64)).astype(_F32)


def _f32_exponents(d: int) -> np.ndarray:
    return (np.arange(0, d, 2, dtype=np.int64).astype(_F32) / _F32(d)).astype(_F32)


def _f32_default(d: int, base) -> np.ndarray:
    return (_F32(1.0) / _f32_pow(base, _f32_exponents(d))).astype(_F32)


def _f32_dynamic_base(d, base, s, L, seq_len) -> np.float32:
    """transformers' runtime path: seq_len is an int64 tensor, so b' is a float32 scalar."""
    l_ = _F32(max(seq_len, L))
    x = _F32(_F32(_F32(s) * l_) / _F32(L))
    x = _F32(x - _F32(s - 1))
    p = _F32(np.float64(x) ** (d / (d - 2)))  # the Python-float exponent is not rounded
    return _F32(_F32(base) * p)


def transformers_float32_frequencies(
    rope_type: str, /, *, runtime: bool = True, **params
) -> ScaledFrequencies:
    """The float32 frequencies transformers 5.24's rotary module uses for ``rope_type``.

    Parameters
    ----------
    rope_type : str
        ``"default"``, ``"linear"``, ``"dynamic"``, ``"yarn"``, ``"llama3"`` or ``"longrope"``
        (``"ntk"`` is the default computation with the NTK base).
    runtime : bool, default True
        For ``dynamic``: with ``seq_len > max_position`` use the runtime path of the module's
        forward (the base is a float32 tensor); otherwise the frequencies of initialisation.
    **params
        The same keyword arguments as the float64 method in :data:`ROPE_SCALINGS`.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` as float32 (the module's buffer) and the attention factor (a Python float).

    Notes
    -----
    Follows peer-formulas §1.3-1.9: exponents ``float32(2i) / d`` rounded to float32, a float32
    power, float32 reciprocal, and each method's operations in transformers' order.

    Examples
    --------
    >>> transformers_float32_frequencies("default", dim=8, base=1e4).inv_freq
    array([1.   , 0.1  , 0.01 , 0.001], dtype=float32)
    """
    exact = scale_frequencies(rope_type, **params)  # validates every argument
    d = check_dim(params["dim"])
    base = params.get("base", 10000.0)
    if rope_type == "default":
        inv = _f32_default(d, base)
    elif rope_type == "ntk":
        inv = _f32_default(d, ntk_base(dim=d, base=base, factor=params["factor"]))
    elif rope_type == "linear":
        inv = (_f32_default(d, base) / _F32(params["factor"])).astype(_F32)
    elif rope_type == "dynamic":
        L = params["max_position"]
        seq_len = params.get("seq_len")
        if runtime and seq_len is not None and seq_len > L:
            inv = (
                _F32(1.0)
                / _f32_pow(
                    _f32_dynamic_base(d, base, params["factor"], L, seq_len), _f32_exponents(d)
                )
            ).astype(_F32)
        else:
            b_new = dynamic_ntk_base(
                dim=d, base=base, factor=params["factor"], max_position=L, seq_len=seq_len
            )
            inv = _f32_default(d, b_new)
    elif rope_type == "yarn":
        inv = _f32_yarn(d, base, params)
    elif rope_type == "llama3":
        inv = _f32_llama3(d, base, params)
    elif rope_type == "longrope":
        L = params["original_max_position"]
        seq_len = params.get("seq_len")
        lam = (
            params["long_factor"] if seq_len is not None and seq_len > L else params["short_factor"]
        )
        lam32 = np.asarray(lam, dtype=np.float64).astype(_F32)
        pw = _f32_pow(base, _f32_exponents(d))
        inv = (_F32(1.0) / (lam32 * pw).astype(_F32)).astype(_F32)
    else:  # pragma: no cover - scale_frequencies has rejected it
        raise AssertionError(rope_type)
    return ScaledFrequencies(inv.astype(_F32), float(exact.attention_scaling))


def _f32_yarn(d: int, base, params) -> np.ndarray:
    s = params["factor"]
    if params.get("ramp", "transformers") != "transformers":
        raise ValueError("transformers computes YaRN with ramp='transformers' only")
    pos = _f32_pow(base, _f32_exponents(d))
    extra = (_F32(1.0) / pos).astype(_F32)
    inter = (_F32(1.0) / (_F32(s) * pos).astype(_F32)).astype(_F32)
    truncate = params.get("truncate")
    low, high = yarn_correction_range(
        dim=d,
        base=base,
        original_max_position=params["original_max_position"],
        beta_fast=params.get("beta_fast", 32.0),
        beta_slow=params.get("beta_slow", 1.0),
        truncate=True if truncate is None else truncate,
    )
    if low == high:
        high += 0.001
    j = np.arange(d // 2, dtype=_F32)
    ramp = ((j - _F32(low)).astype(_F32) / _F32(high - low)).astype(_F32)
    ramp = np.clip(ramp, _F32(0), _F32(1))
    w = (_F32(1) - ramp).astype(_F32)  # extrapolation weight
    a = (inter * (_F32(1) - w)).astype(_F32)
    b = (extra * w).astype(_F32)
    return (a + b).astype(_F32)


def _f32_llama3(d: int, base, params) -> np.ndarray:
    s = _F32(params["factor"])
    L = params["original_max_position"]
    lf = params.get("low_freq_factor", 1.0)
    hf = params.get("high_freq_factor", 4.0)
    t = _f32_default(d, base)
    w_low, w_high = L / lf, L / hf
    wave = (_F32(2 * math.pi) / t).astype(_F32)
    u = np.where(wave > w_low, (t / s).astype(_F32), t).astype(_F32)
    g = (((_F32(L) / wave).astype(_F32) - _F32(lf)).astype(_F32) / _F32(hf - lf)).astype(_F32)
    v = (((_F32(1) - g).astype(_F32) * u).astype(_F32) / s).astype(_F32)
    v = (v + (g * u).astype(_F32)).astype(_F32)
    medium = ~(wave < w_high) & ~(wave > w_low)
    return np.where(medium, v, u).astype(_F32)
