r"""Table pipelines: the cos/sin arithmetic of each precision a :class:`~refimpl.RopeSpec` can
be evaluated in, and the one registry of their names (:data:`PRECISIONS`); and the pipeline
classes (:data:`PIPELINE_CLASSES`): the recipes by which any implementation may build its
tables, each with its error bound, the input dtypes it is accepted for and the fix to
suggest, which the conformance suite, the verifier and the numerics pages name
(:func:`pipeline_class_for_stage` maps a per-stage precision reading to its class).

A precision name says whose arithmetic builds the half-width ``(len(positions), n/2)`` tables:

* ``"float64"`` — the exact reference (float64 angles of the spec's exact frequencies);
* ``"transformers-float32"`` — transformers' rotary module (float32 frequencies and product);
* ``"ggml-float32"`` — ggml's CPU kernel (``ggml_rope_ext``) with the arguments llama.cpp
  derives for the spec's config: ``theta_scale = powf(freq_base, -2/n_dims)``, frequencies by
  *repeated float32 multiplication* :math:`\theta_{i+1} = \theta_i \cdot \text{theta\_scale}`
  starting from the position, per-pair divisors (``rope_freqs``), ``freq_scale = 1/factor``
  and YaRN as ``ext_factor`` / ``attn_factor`` with always-truncated correction dimensions;
* ``"mlx-float32"`` — ``mx.fast.rope`` as mlx-lm's ``initialize_rope`` calls it: default
  frequencies :math:`\exp(-i \ln b / (d/2))` in float32, or explicit periods, and positions
  ``(arange + offset) * scale``;
* ``"vllm-float32"``, ``"vllm-bfloat16"``, ``"vllm-float16"`` — vLLM's ``RotaryEmbedding``
  cache: ``inv = 1 / b ** (arange(0, d, 2) / d)`` in float32, ``t * inv`` in float32, cos/sin
  in float32, times the magnitude, then cast to the model dtype before any multiply.

What is determined bit for bit: every product, quotient and power that an engine computes in
float32 is reproduced with IEEE float32 arithmetic here (NumPy float32 scalars and arrays
round to nearest even after each operation). What is not: the C library's ``cosf``/``sinf``
and ``powf`` (glibc's are faithful, not always correctly rounded), MLX's float32 ``exp`` and
``pow``, torch's float32 ``pow``, and fused multiply-adds the compiler may contract. Those
steps are computed here correctly rounded (float64 then one rounding), so each table entry is
within 1 float32 ulp of the engine's, times the magnitude factor, plus the angle drift of a
frequency that differs by a few ulp; ``tests/engines`` measures the live engines.

Where an engine cannot run a spec — it has no such scaling method, or its length policy picks
another frequency set than the spec's length does (MLX's LongRoPE always uses the long
factors, vLLM's its ``max_position``-based choice, vLLM's dynamic NTK is built once) — the
precision raises ValueError naming itself and the reason, rather than return another RoPE.
M-RoPE specs are accepted: on 1-D (text) positions every axis sees the same position, so
ggml's sectioned frequencies, vLLM's ``MRotaryEmbedding`` and mlx-lm (which runs ``mrope`` as
plain RoPE) all reduce to these tables.

The pipeline classes are defined in ``refimpl._pipeline_classes`` (floor 2, so that
:mod:`refimpl.numerics` can hold a view of them) and re-exported here.

Floor 3: imports only the definitions, ``scaling`` and ``numerics``. A spec is read through
its attributes (``rotary_dim``, ``base``, ``rope_type``, ``params``, ``inv_freq``,
``inv_freq_float32``, ``attention_scaling``, ``seq_len``, ``max_position``,
``method_params()``), so :class:`refimpl.config.RopeSpec` (floor 4) is not imported.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Mapping

import numpy as np

from ._checks import as_positions, check_base, check_dim, check_positive, check_real
from ._pipeline_classes import (
    PIPELINE_CLASSES,
    PipelineClass,
    accepted_classes,
    pipeline_class_for_stage,
)
from .multiaxis import mrope_axis_of_pair
from .numerics import round_to, transformers_float32_forward
from .rotary import cos_sin as _exact_cos_sin
from .scaling import ROPE_SCALINGS

__all__ = [
    "PIPELINE_CLASSES",
    "PRECISIONS",
    "PipelineClass",
    "Precision",
    "accepted_classes",
    "ggml_cos_sin",
    "ggml_yarn_corr_dims",
    "llamacpp_llama3_factors",
    "mlx_cos_sin",
    "pipeline_class_for_stage",
    "spec_ggml_arguments",
    "spec_mlx_arguments",
    "spec_vllm_arguments",
    "vllm_cos_sin",
]

_F32 = np.float32
# ggml clamps the ramp's denominator (high - low) at this value (rope_yarn_ramp in ops.cpp).
_GGML_RAMP_MIN_SPAN = _F32(0.001)


def _f32_log(x) -> np.float32:
    """logf: the float32 natural log, correctly rounded."""
    return _F32(math.log(float(x)))


def _f32_pow(base, exponent) -> np.float32:
    """powf on float32 arguments, correctly rounded (glibc's powf is within 1 ulp of it)."""
    return _F32(float(_F32(base)) ** float(_F32(exponent)))


def ggml_yarn_corr_dims(
    n_dims: int, n_ctx_orig: int, freq_base: float, beta_fast: float, beta_slow: float
) -> tuple[np.float32, np.float32]:
    r"""ggml's YaRN correction range ``(low, high)`` in pairs, always truncated.

    Parameters
    ----------
    n_dims : int
        Rotated features.
    n_ctx_orig : int
        Original context (``rope.scaling.original_context_length``).
    freq_base, beta_fast, beta_slow : float
        Base and the YaRN betas.

    Returns
    -------
    (numpy.float32, numpy.float32)
        :math:`\max(0, \lfloor c(\beta_f) \rfloor)`, :math:`\min(n - 1, \lceil c(\beta_s) \rceil)`
        with :math:`c(\beta) = n \ln(L / (2\pi\beta)) / (2 \ln b)` evaluated in float32.

    Notes
    -----
    Book equation ``eq:engines-ggml-corr``.
    """
    n = check_dim(n_dims, "n_dims")
    base = _F32(check_base(freq_base, "freq_base"))
    two_pi = _F32(2) * _F32(math.pi)

    def corr(beta):
        ratio = _F32(n_ctx_orig) / (_F32(beta) * two_pi)
        return _F32(n) * _f32_log(ratio) / (_F32(2) * _f32_log(base))  # [eq:engines-ggml-corr]

    low = _F32(max(0.0, math.floor(corr(beta_fast))))
    high = _F32(min(n - 1.0, math.ceil(corr(beta_slow))))
    return low, high


def _fma32(a, b, c) -> np.ndarray:
    """float32 ``fmaf(a, b, c)``: ``a * b + c`` with a single rounding.

    ``a * b`` of float32 values is exact in float64; the float64 sum is made round-to-odd
    with its exact error (TwoSum), and rounding a round-to-odd float64 to float32 is correct
    rounding (53 >= 24 + 2 bits), so no double-rounding error can occur.
    """
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = np.broadcast_to(np.asarray(c, np.float64), p.shape)
    t = p + c64
    bp = t - c64
    err = (p - bp) + (c64 - (t - bp))  # TwoSum: t + err == p + c exactly
    even = (t.view(np.int64) & 1) == 0
    odd = np.where((err != 0) & even, np.nextafter(t, t + err), t)
    return odd.astype(_F32)


def _blend(a, b, c, fused: bool) -> np.ndarray:
    """float32 ``a * b + c``: one rounding (fused multiply-add) or two."""
    return _fma32(a, b, c) if fused else a * b + c


def _ggml_angles(pos, n, freq_base, freq_factors):
    """theta_extrap per position and pair: cumulative float32 products, then ``/ ff``."""
    theta_scale = _f32_pow(freq_base, _F32(-2.0) / _F32(n))
    theta = pos.astype(_F32)  # ggml passes the int32 position as a float argument
    out = np.empty((pos.shape[0], n // 2), dtype=_F32)
    for i in range(n // 2):
        out[:, i] = theta / _F32(freq_factors[i]) if freq_factors is not None else theta
        theta = theta * theta_scale  # [eq:engines-ggml-theta]
    return out


def ggml_cos_sin(
    positions,
    *,
    n_dims: int,
    freq_base: float = 10000.0,
    freq_scale: float = 1.0,
    ext_factor: float = 0.0,
    attn_factor: float = 1.0,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    n_ctx_orig: int = 0,
    freq_factors=None,
    fused: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    r"""cos/sin tables of ggml's CPU ``rope`` kernel, in its float32 arithmetic.

    Parameters
    ----------
    positions : array_like of int, shape (seq,)
        Token positions (ggml takes int32).
    n_dims : int
        Rotated features (``rope.dimension_count``).
    freq_base : float, default 10000.0
        ``rope.freq_base``.
    freq_scale : float, default 1.0
        ``1 / rope.scaling.factor`` for linear and YaRN scaling.
    ext_factor : float, default 0.0
        YaRN extrapolation mix (1 for YaRN models); 0 disables the ramp and its magnitude.
    attn_factor : float, default 1.0
        Magnitude multiplied into cos and sin (llama.cpp passes its recomputed YaRN factor).
    beta_fast, beta_slow : float
        YaRN betas (defaults 32 and 1).
    n_ctx_orig : int, default 0
        Original context for the correction range (needed when ``ext_factor != 0``).
    freq_factors : array_like, shape (n_dims/2,), optional
        Per-pair divisors (the ``rope_freqs`` or LongRoPE factor tensor).
    fused : bool, default True
        The YaRN blend ``theta_interp * (1 - mix) + theta_extrap * mix`` as the compiler
        contracts it when ggml is built for a CPU with FMA (its default native build on
        x86-64): ``fmaf(theta_interp, 1 - mix, theta_extrap * mix)``. ``False``: two rounded
        products and a rounded sum, as the C source reads without contraction.

    Returns
    -------
    (cos, sin) : numpy.ndarray, shape (seq, n_dims/2), float32

    Notes
    -----
    Book equations ``eq:engines-ggml-theta`` and ``eq:engines-ggml-yarn``. Positions beyond
    :math:`2^{24}` are rounded to float32 first, as ggml's float argument rounds them.

    Examples
    --------
    >>> c, s = ggml_cos_sin([0, 1], n_dims=4)
    >>> c.dtype, c.shape
    (dtype('float32'), (2, 2))
    """
    n = check_dim(n_dims, "n_dims")
    check_base(freq_base, "freq_base")
    if not isinstance(fused, bool):
        raise TypeError(f"fused must be a bool, got {type(fused).__name__}")
    pos = as_positions(positions)
    if np.any(pos != np.round(pos)):
        raise ValueError("positions must be integers (ggml takes int32 positions)")
    fs = _F32(check_positive(freq_scale, "freq_scale"))
    ext = _F32(check_real(ext_factor, "ext_factor"))
    mscale = _F32(check_positive(attn_factor, "attn_factor"))
    ff = None
    if freq_factors is not None:
        ff = np.asarray(freq_factors, dtype=_F32)
        if ff.shape != (n // 2,) or not np.all(np.isfinite(ff)) or np.any(ff <= 0):
            raise ValueError(f"freq_factors must be {n // 2} positive finite values")
    theta_extrap = _ggml_angles(pos, n, freq_base, ff)
    theta = fs * theta_extrap
    if ext != 0:
        low, high = ggml_yarn_corr_dims(n, int(n_ctx_orig), freq_base, beta_fast, beta_slow)
        i = np.arange(n // 2, dtype=_F32)
        y = (i - low) / max(_GGML_RAMP_MIN_SPAN, _F32(high - low))
        mix = (
            _F32(1) - np.minimum(_F32(1), np.maximum(_F32(0), y))
        ) * ext  # [eq:engines-ggml-yarn]
        theta = _blend(theta, _F32(1) - mix, theta_extrap * mix, fused)
        mscale = mscale * (_F32(1) + _F32(0.1) * _f32_log(_F32(1) / fs))
    t64 = theta.astype(np.float64)
    cos = np.cos(t64).astype(_F32) * mscale  # cosf, then the magnitude in float32
    sin = np.sin(t64).astype(_F32) * mscale
    return cos, sin


def mlx_cos_sin(
    positions, *, dims: int, base: float = 10000.0, scale: float = 1.0, freqs=None
) -> tuple[np.ndarray, np.ndarray]:
    r"""cos/sin tables of MLX's ``mx.fast.rope`` (float32).

    Parameters
    ----------
    positions : array_like, shape (seq,)
        Positions before scaling (MLX uses ``arange(T) + offset``).
    dims : int
        Rotated features.
    base : float, default 10000.0
        Used when ``freqs`` is not given: :math:`\theta_i = \exp(-i \ln b/(\text{dims}/2))`.
    scale : float, default 1.0
        Multiplies the positions (``1/factor`` for linear scaling).
    freqs : array_like, shape (dims/2,), optional
        *Periods* (MLX's convention): the frequencies are ``1 / freqs``.

    Returns
    -------
    (cos, sin) : numpy.ndarray, shape (seq, dims/2), float32

    Notes
    -----
    Book equation ``eq:engines-mlx``. The angle is the float32 product of the scaled position
    and the float32 frequency. MLX's own float32 ``exp`` is not correctly rounded (up to 9 ulp
    from it on the frequencies of common bases, measured in tests/engines): with ``base`` the
    frequencies here are the correctly rounded ones, so angles differ from MLX's by up to
    ``position * 9 ulp(theta_i)``; with ``freqs`` (one float32 division) they are MLX's.
    """
    n = check_dim(dims, "dims")
    pos = as_positions(positions).astype(_F32) * _F32(check_positive(scale, "scale"))
    if freqs is None:
        b = check_base(base)
        step = _F32(math.log(b) / (n // 2))  # ln(b) / (dims/2) in double, then float32
        exponent = -np.arange(n // 2, dtype=_F32) * step
        inv = np.exp(exponent.astype(np.float64)).astype(_F32)  # [eq:engines-mlx]
    else:
        periods = np.asarray(freqs, dtype=_F32)
        if periods.shape != (n // 2,) or np.any(~(periods > 0)):
            raise ValueError(f"freqs must be {n // 2} positive periods")
        inv = _F32(1) / periods
    theta = (pos[:, None] * inv[None, :]).astype(np.float64)
    return np.cos(theta).astype(_F32), np.sin(theta).astype(_F32)


def vllm_cos_sin(
    positions, *, rotary_dim: int, base: float = 10000.0, dtype: str = "float32", inv_freq=None
) -> tuple[np.ndarray, np.ndarray]:
    r"""cos/sin rows of vLLM's ``RotaryEmbedding`` cache, cast to the model dtype.

    Parameters
    ----------
    positions : array_like of int, shape (seq,)
        Rows of the cache (token positions, ``+ offsets``).
    rotary_dim : int
        Rotated features.
    base : float, default 10000.0
    dtype : {"float32", "bfloat16", "float16"}, default "float32"
        The model dtype the cache is cast to (``cache.to(dtype)``).
    inv_freq : array_like, shape (rotary_dim/2,), optional
        float32 frequencies of a scaled variant; default the base's
        ``1 / base ** (arange(0, rotary_dim, 2) / rotary_dim)`` in float32.

    Returns
    -------
    (cos, sin) : numpy.ndarray, shape (seq, rotary_dim/2), float32 holding ``dtype`` values

    Notes
    -----
    Book equation ``eq:engines-vllm``. vLLM builds the whole cache in float32 (``t =
    arange(max_position)``, ``freqs = t * inv_freq``) and rounds it to the model dtype once,
    before any multiply: in bfloat16 each entry carries up to :math:`2^{-9}` relative error.
    """
    r = check_dim(rotary_dim, "rotary_dim")
    if dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"dtype must be 'float32', 'bfloat16' or 'float16', got {dtype!r}")
    pos = as_positions(positions)
    if inv_freq is None:
        check_base(base)
        ex = np.arange(0, r, 2, dtype=_F32) / _F32(r)
        inv = _F32(1) / np.array([_f32_pow(base, e) for e in ex], dtype=_F32)  # [eq:engines-vllm]
    else:
        inv = np.asarray(inv_freq, dtype=_F32)
        if inv.shape != (r // 2,):
            raise ValueError(f"inv_freq must have rotary_dim/2 = {r // 2} entries")
    theta = (pos.astype(_F32)[:, None] * inv[None, :]).astype(np.float64)
    cos, sin = np.cos(theta).astype(_F32), np.sin(theta).astype(_F32)
    if dtype != "float32":
        cos, sin = round_to(cos, dtype).astype(_F32), round_to(sin, dtype).astype(_F32)
    return cos, sin


# ---------------------------------------------------------------------------------------------
# A spec's facts as each engine's arguments.

# llama.cpp's YaRN betas when the GGUF has none (llama-context.cpp).
_LLAMACPP_BETAS = (32.0, 1.0)
# Scaling methods each engine's loader maps (others raise ValueError naming the precision).
_GGML_METHODS = ("default", "linear", "yarn", "llama3", "longrope", "freq_factors")
_MLX_METHODS = ("default", "linear", "dynamic", "llama3", "yarn", "longrope", "proportional")
_VLLM_METHODS = (
    "default",
    "linear",
    "ntk",
    "dynamic",
    "yarn",
    "llama3",
    "longrope",
    "proportional",
    "ntk_alpha",
)


def _refuse(precision: str, spec, why: str) -> ValueError:
    return ValueError(f"precision {precision!r} cannot compute this {spec.rope_type!r} spec: {why}")


def _check_method(precision: str, spec, methods: tuple) -> None:
    if spec.rope_type not in methods:
        raise _refuse(
            precision,
            spec,
            f"the engine has no {spec.rope_type!r} scaling (it maps {', '.join(methods)})",
        )


def _get_mscale(s: float, m: float) -> float:
    """YaRN's magnitude ``1 + 0.1 m ln s`` (1 for ``s <= 1``), as the engines compute it."""
    return 1.0 if s <= 1.0 else 1.0 + 0.1 * m * math.log(s)


def _optional(params: Mapping, key: str, default):
    value = params.get(key)
    return default if value is None else value


def _uses_long(spec) -> bool:
    """Whether a LongRoPE spec's length selects the long factors (transformers' rule)."""
    return spec.seq_len is not None and spec.seq_len > int(spec.params["original_max_position"])


def _max_position(spec) -> int | None:
    value = spec.params.get("max_position", spec.max_position)
    return None if value is None else int(value)


def llamacpp_llama3_factors(
    rotary_dim: int,
    base: float,
    factor: float,
    low_freq_factor: float,
    high_freq_factor: float,
    original_max_position: int,
) -> np.ndarray:
    r"""The ``rope_freqs`` divisors llama.cpp's converter writes for Llama 3 band scaling.

    Parameters
    ----------
    rotary_dim : int
    base, factor, low_freq_factor, high_freq_factor : float
    original_max_position : int
        :math:`L` (the converter reads the *top-level* ``original_max_position_embeddings``,
        8192 when absent).

    Returns
    -------
    numpy.ndarray, shape (rotary_dim/2,), float32
        1 for wavelengths below :math:`L/h`, ``factor`` above :math:`L/l`, and
        :math:`1 / ((1 - s)/\text{factor} + s)` with :math:`s = (L/\lambda - l)/(h - l)` between
        (computed in float64, stored as float32).

    Notes
    -----
    Book equation ``eq:engines-llama3-factors``.
    """
    n = check_dim(rotary_dim, "rotary_dim")
    L = float(original_max_position)
    low, high, factor = float(low_freq_factor), float(high_freq_factor), float(factor)
    wavelength = 2.0 * np.pi * np.asarray(float(base)) ** (np.arange(0, n, 2) / n)
    out = np.empty_like(wavelength)
    for i, lam in enumerate(wavelength):
        if lam < L / high:
            out[i] = 1.0
        elif lam > L / low:
            out[i] = factor
        else:  # [eq:engines-llama3-factors]
            smooth = (L / lam - low) / (high - low)
            out[i] = 1.0 / ((1.0 - smooth) / factor + smooth)
    return out.astype(_F32)


def _ggml_yarn_arguments(spec) -> dict:
    """llama.cpp's YaRN: ``freq_scale``, ``ext_factor = 1`` and the magnitude llama-context
    recomputes (the GGUF's attention factor is not used; DeepSeek's ``mscale_all_dim`` becomes
    ``yarn_log_multiplier = 0.1 * mscale_all_dim``, whose ratio is 1)."""
    p = spec.params
    freq_scale = 1.0 / float(p["factor"])
    f = 1.0 / freq_scale
    log_mul = 0.1 * float(p["mscale_all_dim"]) if p.get("mscale_all_dim") else 0.0
    # DeepSeek: get_mscale(f, m) / get_mscale(f, log_mul) with m = log_mul, which is 1
    yarn = 1.0 if log_mul else _get_mscale(f, 1.0)
    return {
        "freq_scale": freq_scale,
        "ext_factor": 1.0,
        "attn_factor": yarn / (1.0 + 0.1 * math.log(f)),  # [eq:engines-llamacpp-attn]
        "beta_fast": float(_optional(p, "beta_fast", _LLAMACPP_BETAS[0])),
        "beta_slow": float(_optional(p, "beta_slow", _LLAMACPP_BETAS[1])),
        "n_ctx_orig": int(p["original_max_position"]),
    }


def spec_ggml_arguments(spec) -> dict:
    """The :func:`ggml_cos_sin` keywords llama.cpp runs for a spec's config.

    Parameters
    ----------
    spec : RopeSpec

    Returns
    -------
    dict
        ``n_dims``, ``freq_base``, ``freq_scale``, ``ext_factor``, ``attn_factor``,
        ``beta_fast``, ``beta_slow``, ``n_ctx_orig``, ``freq_factors``: the mapping of
        llama.cpp's converter and loader (``gguf.llamacpp_rope_parameters`` of the converted
        file): linear as ``freq_scale = 1/factor``; YaRN with the recomputed magnitude and
        always-truncated ramp (``truncate`` and ``attention_factor`` are not read); Llama 3 as
        the converter's ``rope_freqs`` divisors (with the spec's
        ``original_max_position``); LongRoPE's factor tensor chosen by the length the spec is
        for (llama.cpp's allocated context) with ``attn_factor`` the spec's magnitude.

    Raises
    ------
    ValueError
        Methods llama.cpp has no mapping for (dynamic NTK, NTK-aware, ...), naming them.
    """
    _check_method("ggml-float32", spec, _GGML_METHODS)
    p = spec.params
    args = {
        "n_dims": spec.rotary_dim,
        "freq_base": float(spec.base),
        "freq_scale": 1.0,
        "ext_factor": 0.0,
        "attn_factor": 1.0,
        "beta_fast": _LLAMACPP_BETAS[0],
        "beta_slow": _LLAMACPP_BETAS[1],
        "n_ctx_orig": 0,
        "freq_factors": None,
    }
    if spec.rope_type == "linear":
        args["freq_scale"] = 1.0 / float(p["factor"])
    elif spec.rope_type == "yarn":
        args.update(_ggml_yarn_arguments(spec))
    elif spec.rope_type == "llama3":
        args["freq_factors"] = llamacpp_llama3_factors(
            spec.rotary_dim,
            spec.base,
            p["factor"],
            p["low_freq_factor"],
            p["high_freq_factor"],
            p["original_max_position"],
        )
    elif spec.rope_type == "longrope":
        which = "long_factor" if _uses_long(spec) else "short_factor"
        args["freq_factors"] = np.asarray(p[which], _F32)
        args["attn_factor"] = float(spec.attention_scaling)
        args["n_ctx_orig"] = int(p["original_max_position"])
    elif spec.rope_type == "freq_factors":
        args["freq_factors"] = np.asarray(p["factors"], _F32)
        args["attn_factor"] = float(_optional(p, "attention_factor", 1.0))
    return args


def _periods(inv: np.ndarray) -> np.ndarray:
    """MLX's periods ``1 / inv_freq`` (infinite for zero-frequency pairs), float32."""
    with np.errstate(divide="ignore"):
        return np.where(inv > 0, 1.0 / np.where(inv > 0, inv, 1.0), np.inf).astype(_F32)


def _mlx_yarn(spec) -> tuple[dict, float]:
    """mlx-lm's YarnRoPE: the truncated ramp, magnitude from mscale / mscale_all_dim only."""
    p = spec.params
    f = float(p["factor"])
    kw = {
        "dim": spec.rotary_dim,
        "base": spec.base,
        "factor": f,
        "original_max_position": p["original_max_position"],
        "beta_fast": _optional(p, "beta_fast", 32.0),
        "beta_slow": _optional(p, "beta_slow", 1.0),
        "truncate": True,
    }
    inv = ROPE_SCALINGS["yarn"](**kw).inv_freq
    m, m_all = _optional(p, "mscale", 1.0), _optional(p, "mscale_all_dim", 0.0)
    return {"freqs": _periods(inv)}, _get_mscale(f, m) / _get_mscale(f, m_all)


def _mlx_longrope(spec) -> tuple[dict, float]:
    """mlx-lm's SuScaledRoPE: always the long factors, times ``base ** (2i/d)`` in float32."""
    p, n = spec.params, spec.rotary_dim
    if not _uses_long(spec):
        raise _refuse(
            "mlx-float32",
            spec,
            "mlx-lm's SuScaledRoPE always uses the long factors, and this spec is for a length "
            "<= original_max_position (short factors); build it with seq_len > "
            f"{int(p['original_max_position'])}",
        )
    ex = np.arange(0, n, 2, dtype=_F32) / _F32(n)
    powers = np.array([_f32_pow(spec.base, e) for e in ex], dtype=_F32)
    periods = np.asarray(p["long_factor"], _F32) * powers
    orig = int(p["original_max_position"])
    top = _max_position(spec) or orig
    ratio = top / orig
    scale = 1.0 if ratio <= 1.0 else math.sqrt(1 + math.log(ratio) / math.log(orig))
    return {"freqs": periods}, scale


def spec_mlx_arguments(spec) -> tuple[dict, float]:
    """The :func:`mlx_cos_sin` keywords (without positions) and the magnitude mlx-lm's
    ``initialize_rope`` runs for a spec's config.

    Parameters
    ----------
    spec : RopeSpec

    Returns
    -------
    (dict, float)
        ``dims`` with ``base`` and ``scale`` (default, linear, dynamic NTK recomputed from
        ``max(seq_len, max_position)``) or ``freqs`` (periods: Llama 3, YaRN with the truncated
        ramp, LongRoPE's long factors, proportional RoPE's infinite periods), and the magnitude
        mlx-lm multiplies into the rotated features (YaRN: ``mscale / mscale_all_dim`` only,
        ``attention_factor`` ignored; LongRoPE: from ``max_position / original``).

    Raises
    ------
    ValueError
        Methods mlx-lm has no class for, and LongRoPE specs for the short factors.
    """
    _check_method("mlx-float32", spec, _MLX_METHODS)
    p, n, t = spec.params, spec.rotary_dim, spec.rope_type
    if t in ("default", "linear"):
        scale = 1.0 / float(p["factor"]) if t == "linear" else 1.0
        return {"dims": n, "base": float(spec.base), "scale": scale}, 1.0
    if t == "dynamic":
        top = int(p["max_position"])
        length = max(int(spec.seq_len or top), top)
        f = float(p["factor"])
        base = spec.base * ((f * length / top) - (f - 1)) ** (n / (n - 2))
        return {"dims": n, "base": base}, 1.0
    if t == "yarn":
        kw, scale = _mlx_yarn(spec)
    elif t == "longrope":
        kw, scale = _mlx_longrope(spec)
    else:  # llama3 and proportional: the spec's periods, rounded to float32 once
        kw, scale = {"freqs": _periods(spec.inv_freq)}, 1.0
    return {"dims": n, **kw}, scale


def _vllm_yarn_magnitude(params: Mapping) -> float:
    """vLLM's YaRNScalingRotaryEmbedding.mscale (attention_factor, else the mscale ratio)."""
    f = float(params["factor"])
    if params.get("attention_factor") is not None:
        return float(params["attention_factor"])
    m, m_all = params.get("mscale"), params.get("mscale_all_dim")
    if m and m_all:
        return _get_mscale(f, m) / _get_mscale(f, m_all)
    return _get_mscale(f, 1.0)


def _vllm_longrope_magnitude(spec) -> float:
    p = spec.params
    orig = int(p["original_max_position"])
    top = _max_position(spec) or orig
    use_long = top > orig  # vLLM: long factors for every token when max_model_len > original
    if use_long != _uses_long(spec):
        chosen = "long" if use_long else "short"
        raise _refuse(
            "vllm-float32",
            spec,
            f"vLLM chooses the {chosen} factors from max_model_len = {top} for every token, "
            f"and this spec's length selects the other set",
        )
    ratio = top / orig
    return 1.0 if ratio <= 1.0 else math.sqrt(1 + math.log(ratio) / math.log(orig))


def spec_vllm_arguments(spec) -> tuple[dict, float]:
    """The :func:`vllm_cos_sin` keywords (without positions and dtype) and the magnitude vLLM's
    ``get_rope`` class multiplies into its cache for a spec's config.

    Parameters
    ----------
    spec : RopeSpec

    Returns
    -------
    (dict, float)
        ``rotary_dim`` with ``base`` (default, M-RoPE on text positions, dynamic NTK within
        ``max_position``, whose static cache keeps the base) or ``inv_freq`` (the spec's
        frequencies rounded to float32 once), and the magnitude (YaRN: ``attention_factor``,
        else ``mscale / mscale_all_dim``, else :math:`1 + 0.1 \\ln s`; LongRoPE: from
        ``max_model_len / original``).

    Raises
    ------
    ValueError
        Methods vLLM has no class for; dynamic NTK specs beyond ``max_position`` (vLLM's
        cache is built once); LongRoPE specs whose length selects the other factor set than
        vLLM's ``max_model_len`` does; LongRoPE with interleaved pairs.
    """
    _check_method("vllm-float32", spec, _VLLM_METHODS)
    p, n, t = spec.params, spec.rotary_dim, spec.rope_type
    if t == "dynamic":
        top = int(p["max_position"])
        if spec.seq_len is not None and spec.seq_len > top:
            raise _refuse(
                "vllm-float32",
                spec,
                f"vLLM builds one static cache at max_position = {top} with the unscaled base; "
                f"this spec is for seq_len = {spec.seq_len}",
            )
        return {"rotary_dim": n, "base": float(spec.base)}, 1.0
    if t == "default":
        return {"rotary_dim": n, "base": float(spec.base)}, 1.0
    magnitude = 1.0
    if t == "yarn":
        magnitude = _vllm_yarn_magnitude(p)
    elif t == "longrope":
        if spec.pairing != "half":
            raise _refuse("vllm-float32", spec, "vLLM's LongRoPE supports only NEOX (half) pairs")
        magnitude = _vllm_longrope_magnitude(spec)
    return {"rotary_dim": n, "inv_freq": np.asarray(spec.inv_freq).astype(_F32)}, magnitude


# ---------------------------------------------------------------------------------------------
# The registry of precision names.


def _float64_tables(spec, pos: np.ndarray):
    """The exact reference: float64 angles of the exact frequencies, times the factor."""
    live = spec.inv_freq > 0.0
    if live.all():
        return _exact_cos_sin(pos, spec.inv_freq, attention_scaling=spec.attention_scaling)
    c = np.full((pos.shape[0], live.shape[0]), spec.attention_scaling)
    s = np.zeros((pos.shape[0], live.shape[0]))
    if live.any():
        c[:, live], s[:, live] = _exact_cos_sin(
            pos, spec.inv_freq[live], attention_scaling=spec.attention_scaling
        )
    return c, s


def _transformers_tables(spec, pos: np.ndarray):
    return transformers_float32_forward(  # [eq:config-float32-forward]
        pos, spec.inv_freq_float32, spec.attention_scaling
    )


def _ggml_tables(spec, pos: np.ndarray):
    return ggml_cos_sin(pos, **spec_ggml_arguments(spec))


def _mlx_tables(spec, pos: np.ndarray):
    kw, scale = spec_mlx_arguments(spec)
    c, s = mlx_cos_sin(pos, **kw)
    if scale != 1.0:
        c, s = c * _F32(scale), s * _F32(scale)
    return c, s


def _vllm_tables(dtype: str):
    def tables(spec, pos: np.ndarray):
        kw, magnitude = spec_vllm_arguments(spec)
        c, s = vllm_cos_sin(pos, **kw)
        c, s = c * _F32(magnitude), s * _F32(magnitude)  # in float32, then the cast
        if dtype != "float32":
            c, s = round_to(c, dtype).astype(_F32), round_to(s, dtype).astype(_F32)
        return c, s

    return tables


@dataclasses.dataclass(frozen=True)
class Precision:
    """One precision name: whose arithmetic builds a spec's tables, and in which format.

    Attributes
    ----------
    name : str
    dtype : {"float64", "float32", "bfloat16", "float16"}
        The format the table values are held in (bfloat16 and float16 values in float32
        arrays) and the one :meth:`refimpl.config.RopeSpec.apply` rotates in.
    engine : str
        Whose arithmetic: ``"refimpl"``, ``"transformers"``, ``"ggml"``, ``"mlx"``, ``"vllm"``.
    description : str
    tables : callable
        ``tables(spec, positions) -> (cos, sin)``, each ``(seq, rotary_dim // 2)``.
    """

    name: str
    dtype: str
    engine: str
    description: str
    tables: Callable = dataclasses.field(repr=False)

    def __call__(self, spec, positions) -> tuple[np.ndarray, np.ndarray]:
        for attribute in ("inv_freq", "rotary_dim", "mrope_layout"):
            if not hasattr(spec, attribute):
                raise TypeError(f"spec must be a RopeSpec (it has no {attribute}), got {spec!r}")
        cos, sin = self.tables(spec, as_positions(positions))
        if spec.mrope_layout == "imrope":
            cos, sin = self._imrope_text_rows(spec, cos, sin)
        return cos, sin

    def _imrope_text_rows(self, spec, cos, sin):
        """ggml's IMROPE (llama.cpp's Qwen3-VL) gives a text token the position rows
        ``(p, p, p, 0)``: the pairs its sector rule assigns to the fourth row stay at position
        0 (:eq:`eq:mrope-imrope`), where transformers' interleaved layout rotates them."""
        fourth = mrope_axis_of_pair(spec.mrope_section, "imrope") == 3
        if not fourth.any():
            return cos, sin
        c0, s0 = self.tables(spec, np.zeros(1, dtype=np.int64))
        cos, sin = cos.copy(), sin.copy()
        cos[:, fourth], sin[:, fourth] = c0[0, fourth], s0[0, fourth]
        return cos, sin


def _records() -> dict:
    vllm = "vLLM's RotaryEmbedding cache in float32 (its get_rope class's frequencies and "
    rows = [
        ("float64", "float64", "refimpl", "the exact reference: float64 angles of the exact "
         "frequencies", _float64_tables),
        ("transformers-float32", "float32", "transformers", "transformers' rotary module: "
         "float32 frequencies, one float32 product, float32 cos/sin", _transformers_tables),
        ("ggml-float32", "float32", "ggml", "ggml's CPU rope kernel with llama.cpp's arguments "
         "for the config (cumulative float32 frequency products)", _ggml_tables),
        ("mlx-float32", "float32", "mlx", "mx.fast.rope as mlx-lm's initialize_rope calls it "
         "(float32 frequencies or periods)", _mlx_tables),
        ("vllm-float32", "float32", "vllm", vllm + "magnitude)", _vllm_tables("float32")),
        ("vllm-bfloat16", "bfloat16", "vllm", vllm + "magnitude), cast to bfloat16",
         _vllm_tables("bfloat16")),
        ("vllm-float16", "float16", "vllm", vllm + "magnitude), cast to float16",
         _vllm_tables("float16")),
    ]  # fmt: skip
    return {r[0]: Precision(*r) for r in rows}


#: The one registry of precision names: ``name -> Precision``.
PRECISIONS: Mapping[str, Precision] = types.MappingProxyType(_records())
