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

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from ._checks import as_inv_freq, as_positions, check_base, check_dim, check_positive, check_real
from .numerics import round_to
from .rotary import reference_rotation
from .scaling import ROPE_SCALINGS

__all__ = [
    "ENGINE_PRECISIONS",
    "EngineReport",
    "engine_differences",
    "frequency_switch_error",
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
# Engine semantics: what each engine computes for a transformers config.

# Positions sampled for the table and score comparisons: every position below this many, then
# a geometric grid up to the model's context (the largest differences sit at the far end).
_DENSE_POSITIONS = 64
_GRID_POSITIONS = 64
# Random unit queries and keys for the score comparison (seeded; the maximum over them).
_SCORE_VECTORS = 8


@dataclasses.dataclass(frozen=True)
class EngineReport:
    """How one engine computes the RoPE of a config, and how far it lands from transformers.

    Attributes
    ----------
    engine : str
    source : str
        The engine code (and version) the semantics were read from.
    attention_factor : float
        What the engine multiplies into cos and sin (transformers' is in ``reference_factor``).
    reference_factor : float
    truncated_ramp : bool or None
        Whether YaRN's correction range is rounded (None for other methods).
    length_policy : str
        When length-dependent frequencies (LongRoPE's set, dynamic NTK's base) change.
    rope_type : str
        The pairing the engine runs (in its own weight layout).
    max_table_error : float
        Largest ``|cos - cos_ref|``, ``|sin - sin_ref|`` over the sampled positions.
    max_score_error : float
        Largest difference of ``q_m . k_n`` for unit ``q``, ``k`` over sampled position pairs.
    positions : int
        Largest sampled position.
    notes : tuple of str
    """

    engine: str
    source: str
    attention_factor: float
    reference_factor: float
    truncated_ramp: bool | None
    length_policy: str
    rope_type: str
    max_table_error: float
    max_score_error: float
    positions: int
    notes: tuple = ()


def _sample_positions(max_position: int) -> np.ndarray:
    top = max(int(max_position) - 1, _DENSE_POSITIONS)
    grid = np.unique(np.round(np.geomspace(_DENSE_POSITIONS, top, _GRID_POSITIONS)))
    return np.concatenate([np.arange(_DENSE_POSITIONS), grid]).astype(np.int64)


def _unit_pairs(h: int, seed: int):
    """Seeded random unit queries and keys, each ``(_SCORE_VECTORS, 2h)``."""
    v = np.random.default_rng(seed).normal(size=(_SCORE_VECTORS, 2, 2 * h))
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    return v[:, 0], v[:, 1]


def _rotated(x: np.ndarray, cos, sin) -> np.ndarray:
    """Every vector of ``x`` (V, d) rotated at every table row: (V, seq, d), half pairing."""
    c, s = np.asarray(cos, np.float64), np.asarray(sin, np.float64)
    xs = np.broadcast_to(x[:, None, :], (x.shape[0], c.shape[0], x.shape[1]))
    return reference_rotation(xs, c, s, pairing="half")


def _scores(cos, sin, seed: int = 0) -> np.ndarray:
    """q_m . k_n of seeded unit vectors rotated with the tables (half pairing)."""
    q, k = _unit_pairs(cos.shape[1], seed)
    return np.einsum("vmd,vnd->vmn", _rotated(q, cos, sin), _rotated(k, cos, sin))


# Model families whose vLLM code renames YaRN to deepseek_yarn (mscale and mscale_all_dim kept).
_VLLM_DEEPSEEK_YARN = frozenset({"deepseek_v2", "deepseek_v3", "kimi_k2"})


def _yarn_engine_params(params: Mapping, engine: str, model_type=None) -> tuple[dict, list]:
    """YaRN parameters as the engine reads them, and notes on what it drops."""
    p, notes = dict(params), []
    if engine == "vllm" and model_type in _VLLM_DEEPSEEK_YARN:
        return p, ["deepseek_yarn: mscale and mscale_all_dim are kept"]
    if engine == "mlx-lm":
        if p.get("attention_factor") is not None:
            notes.append("attention_factor is ignored (A from mscale / mscale_all_dim only)")
        p["attention_factor"] = None
        p.setdefault("mscale", 1.0)
        p.setdefault("mscale_all_dim", 0.0)
    if engine == "vllm" and (p.get("attention_factor") is not None or p.get("mscale")):
        notes.append("attention_factor, mscale and mscale_all_dim are not forwarded by get_rope")
        p.update(attention_factor=None, mscale=None, mscale_all_dim=None)
    if p.get("truncate") is False and engine in ("mlx-lm", "llama.cpp"):
        notes.append("truncate: false is ignored (the correction range is always rounded)")
        p["truncate"] = True
    return p, notes


_SOURCES = {
    "llama.cpp": "llama.cpp convert_hf_to_gguf.py, src/llama-context.cpp and ggml's CPU rope "
    "(kernel tested live with ggml-python 0.0.45)",
    "vllm": "vLLM model_executor/layers/rotary_embedding (get_rope's YaRN key whitelist, "
    "static dynamic-NTK cache, LongRoPE by max_model_len, cache cast to the model dtype)",
    "mlx-lm": "mlx-lm models/rope_utils.py (YarnRoPE, SuScaledRoPE always long) on "
    "mx.fast.rope (tested live with mlx 0.32.4)",
}


def _full_spec(config, seq_len):
    from .gguf import _full_and_local

    return _full_and_local(config, seq_len=seq_len)[0]


def _engine_spec(spec, engine: str, max_position: int, model_type=None):
    """(exact frequencies, attention factor, notes, policy) as the engine reads the config."""
    p, notes, policy = dict(spec.params), [], "frequencies do not depend on the length"
    if spec.rope_type == "yarn":
        p, notes = _yarn_engine_params(p, engine, model_type)
    kw = {"dim": spec.rotary_dim, "base": spec.base, **p}
    if spec.rope_type == "longrope":
        orig = int(p["original_max_position"])
        long = {"vllm": max_position > orig, "mlx-lm": True}.get(engine, max_position > orig)
        kw["seq_len"] = orig + 1 if long else orig
        policy = {
            "vllm": "long factors for every token when max_model_len > original",
            "mlx-lm": "always the long factors",
            "llama.cpp": "factor set chosen by the allocated context",
        }[engine]
    elif spec.rope_type == "dynamic":
        kw["seq_len"] = max_position
        policy = {
            "vllm": "one static base at the served length",
            "mlx-lm": "recomputed per call from max(T + offset, L), no reset",
            "llama.cpp": "not supported: runs the unscaled base",
        }[engine]
    method = ROPE_SCALINGS[spec.rope_type]
    out = method(**{k: v for k, v in kw.items() if k in method.parameters})
    return out.inv_freq, out.attention_scaling, notes, policy


def engine_differences(config, *, dtype: str | None = None) -> list[EngineReport]:
    """How llama.cpp, vLLM and MLX-LM compute a config's RoPE, against transformers.

    Parameters
    ----------
    config : dict, str or os.PathLike
        A model configuration (the full-attention layers' RoPE is compared).
    dtype : {"float32", "bfloat16", "float16"}, optional
        vLLM's model dtype (default: the config's ``torch_dtype``, else bfloat16).

    Returns
    -------
    list of EngineReport
        One per engine. Positions sampled: 0..63, then 64 geometric steps up to
        ``max_position_embeddings - 1``; scores of 8 seeded unit query/key pairs over every pair
        of sampled positions.

    Notes
    -----
    The semantics come from the engines' sources as summarised in each report's ``source``;
    llama.cpp's and MLX's arithmetic is the one tested live in ``tests/engines``. vLLM's is
    emulated (its package pins a CUDA build of torch and does not install here).
    """
    from .config import load_config
    from .gguf import GgufRope, gguf_rope_metadata, llamacpp_rope_parameters

    cfg, _ = load_config(config)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    max_pos = int(text.get("max_position_embeddings") or 4096)
    spec = _full_spec(config, max_pos)
    pos = _sample_positions(max_pos)
    ref_c, ref_s = spec.cos_sin(pos)
    ref_scores = _scores(ref_c, ref_s)
    model_dtype = dtype or _model_dtype(cfg)
    reports = []
    for engine in ("llama.cpp", "vllm", "mlx-lm"):
        inv, factor, notes, policy = _engine_spec(spec, engine, max_pos, text.get("model_type"))
        if engine == "llama.cpp":
            meta = gguf_rope_metadata(config)
            keys = {**meta["keys"], f"{meta['arch']}.attention.key_length": spec.dim}
            rope = GgufRope("<converted>", meta["arch"], keys, meta["tensors"])
            args = llamacpp_rope_parameters(rope, seq_len=max_pos)
            c, s = ggml_cos_sin(pos, **args)
            factor = float(c[0, 0])
            mode = (rope.mode or "unknown").upper()
        elif engine == "vllm":
            c, s = _vllm_tables(pos, inv, factor, model_dtype)
            mode = "NEOX" if spec.pairing == "half" else "GPT-J"
        else:
            c, s = mlx_cos_sin(pos, dims=spec.rotary_dim, freqs=_periods(inv))
            c, s = c * _F32(factor), s * _F32(factor)
            mode = "traditional=False" if spec.pairing == "half" else "traditional=True"
        err = float(max(np.abs(c - ref_c).max(), np.abs(s - ref_s).max()))
        score = float(np.abs(_scores(c, s) - ref_scores).max())
        ramp = bool(spec.params.get("truncate", True)) if spec.rope_type == "yarn" else None
        if ramp is not None and engine != "vllm":
            ramp = True
        reports.append(
            EngineReport(
                engine,
                _SOURCES[engine],
                factor,
                spec.attention_scaling,
                ramp,
                policy,
                mode,
                err,
                score,
                int(pos[-1]),
                tuple(notes),
            )
        )
    return reports


def _periods(inv: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(inv > 0, 1.0 / np.where(inv > 0, inv, 1.0), np.inf)


def _vllm_tables(pos, inv, factor, dtype):
    c, s = vllm_cos_sin(pos, rotary_dim=2 * inv.shape[0], inv_freq=inv.astype(_F32))
    c, s = c * _F32(factor), s * _F32(factor)  # mscale applied in float32, then the cast
    if dtype != "float32":
        c, s = round_to(c, dtype).astype(_F32), round_to(s, dtype).astype(_F32)
    return c, s


def _model_dtype(cfg: Mapping) -> str:
    value = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
    return value if value in ("float32", "bfloat16", "float16") else "bfloat16"


def _tables(pos: np.ndarray, inv: np.ndarray):
    ang = pos[:, None] * inv  # [eq:engines-switch]
    return np.cos(ang), np.sin(ang)


def frequency_switch_error(
    inv_before, inv_after, *, key_positions, query_positions, seed: int = 0
) -> float:
    r"""Score error when cached keys keep one frequency set and new queries use another.

    An engine that switches frequencies mid-sequence (LongRoPE's short-to-long switch, a
    dynamic-NTK base recomputed at a new length) without re-rotating its cache scores
    :math:`q_m^\top R_{\text{after}}(m)^\top R_{\text{before}}(n)\,k_n`, which is no longer a
    function of :math:`n - m`.

    Parameters
    ----------
    inv_before, inv_after : array_like, shape (d/2,)
        Frequencies the keys were rotated with, and the queries are.
    key_positions, query_positions : array_like of int
    seed : int, default 0
        Seed of the 8 random unit query/key pairs.

    Returns
    -------
    float
        Largest ``|mixed score - consistent score|`` (both with the *after* set), over the
        vector pairs and every (query, key) position pair.

    Notes
    -----
    Book equation ``eq:engines-switch``.
    """
    a = as_inv_freq(inv_before, "inv_before", allow_zero=True)
    b = as_inv_freq(inv_after, "inv_after", allow_zero=True)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"inv_before and inv_after must be 1-D of one shape, got {a.shape}, {b.shape}"
        )
    kp = as_positions(key_positions, "key_positions")
    qp = as_positions(query_positions, "query_positions")
    q, k = _unit_pairs(a.shape[0], seed)
    q_after = _rotated(q, *_tables(qp, b))
    mixed = np.einsum("vmd,vnd->vmn", q_after, _rotated(k, *_tables(kp, a)))
    consistent = np.einsum("vmd,vnd->vmn", q_after, _rotated(k, *_tables(kp, b)))
    return float(np.abs(mixed - consistent).max())
