r"""RoPE as inference engines compute it: ggml (llama.cpp), MLX and vLLM, in their own arithmetic.

Each engine parameterises RoPE its own way and builds its tables in its own precision. This
module states each engine's recipe as a pipeline that returns the same half-width
``(len(positions), n_dims/2)`` cos/sin tables as :func:`refimpl.cos_sin`, so they can be
compared with the exact tables and with each other:

* :func:`ggml_cos_sin` — ggml's CPU kernel (``ggml_rope_ext``): ``theta_scale =
  powf(freq_base, -2/n_dims)``, frequencies by *repeated float32 multiplication*
  :math:`\theta_{i+1} = \theta_i \cdot \text{theta\_scale}` starting from the position, per-pair
  divisors (``rope_freqs``), ``freq_scale = 1/factor`` and YaRN as ``ext_factor`` /
  ``attn_factor`` with always-truncated correction dimensions.
* :func:`mlx_cos_sin` — ``mx.fast.rope``'s default frequencies
  :math:`\exp(-i \ln b / (d/2))` in float32 and positions ``(arange + offset) * scale``.
* :func:`vllm_cos_sin` — vLLM's ``RotaryEmbedding`` cache: ``inv = 1 / b ** (arange(0, d, 2) /
  d)`` in float32, ``t * inv`` in float32, cos/sin in float32, then cast to the model dtype
  (bfloat16 or float16) before the multiply.

What is determined bit for bit: every product, quotient and power that the engine computes in
float32 is reproduced with IEEE float32 arithmetic here (NumPy float32 scalars and arrays
round to nearest even after each operation). What is not: the C library's ``cosf``/``sinf``
and ``powf`` (glibc's are faithful, not always correctly rounded) and fused multiply-adds the
compiler may contract. Those steps are computed here correctly rounded (float64 then one
rounding), so each table entry is within 1 float32 ulp of the engine's, times the magnitude
factor; the tests measure the live engines where they run.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import as_positions, check_dim, check_positive, check_real
from .numerics import round_to

__all__ = [
    "ENGINE_PRECISIONS",
    "ggml_cos_sin",
    "ggml_yarn_corr_dims",
    "mlx_cos_sin",
    "vllm_cos_sin",
]

ENGINE_PRECISIONS = ("ggml-float32", "mlx-float32", "vllm-float32", "vllm-bfloat16", "vllm-float16")
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
    base = _F32(check_positive(freq_base, "freq_base"))
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
        b = check_positive(base, "base")
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
